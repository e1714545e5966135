"""A small, known memory for the retrieval tests: two projects, observations, summaries and
prompts at fixed times. Used in-process (pytest-django DB) and, through `cmem shell -c`,
inside a live worker's database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory.models import Observation, ObservationFile, Prompt, Session, Summary

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

OBSERVATIONS = [
    # (minutes after T0, project, type, title, narrative, concepts, files_modified)
    (
        0,
        "shop",
        "discovery",
        "Connection pool exhausted under load",
        "The pg pool of 10 connections ran dry when the checkout worker retried.",
        ["database", "performance"],
        [],
    ),
    (
        10,
        "shop",
        "bugfix",
        "Fixed connection pool leak in checkout",
        "Connections were not returned after a timeout; wrapped the query in a context manager.",
        ["database", "how-it-works"],
        ["shop/checkout.py"],
    ),
    (
        20,
        "shop",
        "feature",
        "Added retry with backoff to payment client",
        "Payment calls retry three times with exponential backoff.",
        ["resilience"],
        ["shop/payments/client.py"],
    ),
    (
        30,
        "shop",
        "decision",
        "Chose Redis for the session cache",
        "Redis over memcached because of persistence; see ADR-7.",
        ["architecture"],
        ["docs/adr/007-cache.md"],
    ),
    (
        40,
        "shop",
        "refactor",
        "Split models.py into orders and users",
        "models.py grew past 900 lines; orders and users now live apart.",
        ["structure"],
        ["shop/orders/models.py", "shop/users/models.py"],
    ),
    (
        50,
        "blog",
        "bugfix",
        "Fixed RSS feed date format",
        "The feed used local time; RFC 822 dates need UTC.",
        ["dates"],
        ["blog/feeds.py"],
    ),
    (
        60,
        "blog",
        "discovery",
        "Template cache hides stale connection pool settings",
        "The template cache kept the old pool size in the settings page.",
        ["caching"],
        ["blog/templates/settings.html"],
    ),
]


def seed(*, session_suffix: str = "") -> dict[str, list[int]]:
    """Create the known memory; returns the ids by kind, in creation order."""
    sessions = {
        project: Session.objects.create(
            session_id=f"{project}-session{session_suffix}",
            project=project,
            project_root=f"/work/{project}",
            started=T0,
        )
        for project in ("shop", "blog")
    }
    ids: dict[str, list[int]] = {"observation": [], "summary": [], "prompt": []}
    prompts = [
        (-1, "shop", 1, "why does checkout run out of database connections?"),
        (35, "shop", 2, "split the models module and keep migrations working"),
        (45, "blog", 1, "the RSS dates look wrong in Feedly"),
    ]
    for minutes, project, number, text in prompts:
        prompt = Prompt.objects.create(
            session=sessions[project],
            number=number,
            text=text,
            created=T0 + timedelta(minutes=minutes),
        )
        ids["prompt"].append(prompt.pk)
    for minutes, project, type_, title, narrative, concepts, files in OBSERVATIONS:
        obs = Observation.objects.create(
            session=sessions[project],
            project=project,
            type=type_,
            title=title,
            subtitle=f"{type_} in {project}",
            narrative=narrative,
            facts=[f"{title} (fact)"],
            concepts=concepts,
            files_modified=files,
            created=T0 + timedelta(minutes=minutes),
        )
        for path in files:
            ObservationFile.objects.create(
                observation=obs, project=project, path=path, role="modified", created=obs.created
            )
        ids["observation"].append(obs.pk)
    summaries = [
        (
            15,
            "shop",
            "Fix checkout connection exhaustion",
            "The pool leak is fixed; retries no longer exhaust it.",
        ),
        (55, "blog", "Fix feed dates", "Feed dates are UTC now."),
    ]
    for minutes, project, request, completed in summaries:
        summary = Summary.objects.create(
            session=sessions[project],
            project=project,
            request=request,
            completed=completed,
            learned="",
            created=T0 + timedelta(minutes=minutes),
        )
        ids["summary"].append(summary.pk)
    return ids
