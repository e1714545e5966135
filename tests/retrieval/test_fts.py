"""The FTS5 triggers of migration 0002 keep the three search tables in step with their rows."""

from __future__ import annotations

import pytest
from django.db import connection

from memory.models import Observation, Prompt, Session, Summary

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "sqlite", reason="FTS5 triggers exist on SQLite only"),
]


def matches(table: str, query: str) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH %s ORDER BY rowid", [query])
        return [row[0] for row in cursor.fetchall()]


@pytest.fixture
def session() -> Session:
    return Session.objects.create(session_id="fts", project="alpha")


def test_observation_fts_follows_insert_update_delete(session: Session) -> None:
    obs = Observation.objects.create(
        session=session,
        project="alpha",
        title="Tokenizer crash",
        narrative="the lexer overflowed",
        facts=["stack depth 900"],
        files_read=["src/lexer.py"],
    )
    assert matches("memory_observation_fts", "tokenizer") == [obs.pk]
    assert matches("memory_observation_fts", "overflow") == [obs.pk]  # porter stemming
    assert matches("memory_observation_fts", "facts:depth") == [obs.pk]
    assert matches("memory_observation_fts", "files_read:lexer") == [obs.pk]

    obs.title = "Parser fix"
    obs.narrative = "the grammar had a cycle"
    obs.save()
    assert matches("memory_observation_fts", "tokenizer") == []
    assert matches("memory_observation_fts", "grammar") == [obs.pk]

    Observation.objects.filter(pk=obs.pk).update(
        subtitle="bulk updated"
    )  # triggers fire on raw UPDATE too
    assert matches("memory_observation_fts", "bulk") == [obs.pk]

    obs.delete()
    assert matches("memory_observation_fts", "grammar") == []
    assert matches("memory_observation_fts", "bulk") == []


def test_summary_fts_follows_insert_update_delete(session: Session) -> None:
    summary = Summary.objects.create(
        session=session, project="alpha", request="speed up imports", learned="lazy loading"
    )
    other = Summary.objects.create(session=session, project="alpha", request="write docs")
    assert matches("memory_summary_fts", "imports") == [summary.pk]
    assert matches("memory_summary_fts", "learned:lazy") == [summary.pk]

    summary.next_steps = "profile the cold start"
    summary.save()
    assert matches("memory_summary_fts", "cold") == [summary.pk]

    Summary.objects.filter(pk=summary.pk).delete()
    assert matches("memory_summary_fts", "imports") == []
    assert matches("memory_summary_fts", "docs") == [other.pk]


def test_prompt_fts_follows_insert_update_delete(session: Session) -> None:
    prompt = Prompt.objects.create(
        session=session, number=1, text="refactor the websocket reconnect"
    )
    assert matches("memory_prompt_fts", "websocket") == [prompt.pk]

    prompt.text = "add retries"
    prompt.save()
    assert matches("memory_prompt_fts", "websocket") == []
    assert matches("memory_prompt_fts", "retries") == [prompt.pk]

    session.delete()  # cascades to the prompt: the index row goes with it
    assert matches("memory_prompt_fts", "retries") == []


def test_the_index_stays_consistent_after_many_changes(session: Session) -> None:
    """FTS5's integrity-check compares the index with the content table."""
    for i in range(30):
        Observation.objects.create(
            session=session, project="alpha", title=f"item {i}", narrative=f"word{i % 3}"
        )
    Observation.objects.filter(narrative="word1").update(narrative="changed")
    Observation.objects.filter(narrative="word2").delete()
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO memory_observation_fts(memory_observation_fts, rank) VALUES ('integrity-check', 1)"
        )
    assert len(matches("memory_observation_fts", "changed")) == 10
    assert matches("memory_observation_fts", "word2") == []
