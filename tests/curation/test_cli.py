"""The curation verbs through cmem's own front end (`frontend.run`, the parser `cmem` uses),
in process on the test database: outcomes, exit codes (2 usage, 1 refused) and the agent's
shell, where the CLI acts as the agent."""

from __future__ import annotations

import io
import stat
from pathlib import Path
from typing import Any

import pytest

from cmem_site import frontend
from memory.curation.remember import RememberRequest, remember
from memory.models import Observation, ObservationRevision
from tests.factories import SessionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _a_persons_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """As run from the user's own terminal, whatever shell runs the tests."""
    for name in ("CLAUDECODE", "GEMINI_CLI", "VISUAL", "EDITOR"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def agent_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDECODE", "1")


def cmem(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = frontend.run(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def observed(title: str = "Found the pool leak", **fields: Any) -> Observation:
    fields.setdefault("narrative", "The pool kept connections.")
    return Observation.objects.create(
        session=SessionFactory(project="shop"), project="shop", title=title, **fields
    )


def persons(title: str = "Never deploy on Fridays") -> Observation:
    return remember(RememberRequest(project="shop", title=title)).observation


def state() -> tuple[list[tuple[Any, ...]], int]:
    rows = list(
        Observation.objects.order_by("pk").values_list(
            "pk", "title", "narrative", "facts", "type", "status", "superseded_by", "pinned",
            "scope", "person_edited",
        )
    )  # fmt: skip
    return rows, ObservationRevision.objects.count()


# --- remember ----------------------------------------------------------------------------


def test_remember_in_the_current_folders_project(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "shop"
    root.mkdir()
    monkeypatch.chdir(root)
    code, out, err = cmem(
        capsys, "remember", "Prices are stored in cents", "Floats broke refunds.",
        "--kind", "decision", "--topic", "money", "--file", str(root / "money.py"), "--file", "tax.py",
    )  # fmt: skip
    assert (code, err) == (0, "")
    row = Observation.objects.get(topic="money")
    assert (
        out
        == f"Remembered #{row.pk} [decision] Prices are stored in cents (written by you) in shop.\n"
    )
    assert (row.project, row.narrative, row.files_read) == (
        "shop", "Floats broke refunds.", ["money.py", "tax.py"],
    )  # fmt: skip
    assert row.origin == "user" and row.person_edited
    code, out, _ = cmem(capsys, "remember", "Prices are integers", "--topic", "money")
    newer = Observation.objects.get(topic="money", status="current")
    assert code == 0 and f"It replaces #{row.pk} (topic 'money')." in out
    assert newer.pk != row.pk
    code, out, _ = cmem(capsys, "remember", "Prices are integers", "--topic", "money")
    assert code == 0 and "Already remembered" in out


def test_remember_for_all_projects_reads_text_from_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("Because the team agreed.\n"))
    code, out, _ = cmem(capsys, "remember", "Prefer ruff", "-", "--kind", "preference",
                        "--all-projects", "--project", "shop")  # fmt: skip
    row = Observation.objects.get(title="Prefer ruff")
    assert code == 0 and row.scope == "all" and row.narrative == "Because the team agreed."


def test_the_agents_shell_remembers_as_the_agent_and_only_proposes_all_projects(
    capsys: pytest.CaptureFixture[str], agent_shell: None
) -> None:
    code, out, err = cmem(capsys, "remember", "Use uv", "--all-projects", "--project", "shop")
    row = Observation.objects.get(title="Use uv")
    assert code == 0
    assert "acting as the agent" in err and "CLAUDECODE=1" in err
    assert row.origin == "agent" and row.scope == "project" and "agent-written" in out
    assert "proposed to the user" in out
    assert list(row.revisions.values_list("action", flat=True)) == [
        "remember", "propose_scope_all",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "args",
    [
        ["remember"],
        ["remember", "x", "--kind", "gossip"],
        ["remember", "x", "y", "z"],
    ],
)
def test_remember_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    before = state()
    code, _, err = cmem(capsys, *args)
    assert code == 2 and "see `cmem remember --help`" in err
    assert state() == before


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["remember", "x" * 301, "--project", "shop"], "at most 300"),
        (
            ["remember", "ok", "--topic", "semi;colon", "--project", "shop"],
            "a topic is a short key",
        ),
        (["remember", "ok", "--project", " "], "--project is empty"),
        (["remember", "<private>all</private>", "--project", "shop"], "needs a title"),
    ],
)
def test_remember_refusals_exit_1_and_store_nothing(
    capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    before = state()
    code, out, err = cmem(capsys, *args)
    assert code == 1 and out == ""
    assert err.startswith("cmem remember: ") and says in err
    assert state() == before


def test_remember_refuses_a_topic_whose_memory_was_retired(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cmem(capsys, "remember", "Deploy Fridays", "--topic", "deploys", "--project", "shop")
    row = Observation.objects.get(topic="deploys")
    assert cmem(capsys, "retire", str(row.pk))[0] == 0
    before = state()
    code, _, err = cmem(
        capsys, "remember", "Deploy Thursdays", "--topic", "deploys", "--project", "shop"
    )
    assert code == 1 and "retired" in err and "restore" in err
    assert state() == before


# --- pin, unpin, retire, restore, correct, undo --------------------------------------------


def test_pin_retire_restore_and_their_messages(capsys: pytest.CaptureFixture[str]) -> None:
    row = observed()
    assert (
        cmem(capsys, "pin", str(row.pk))[1]
        == f"Pinned #{row.pk} [discovery] Found the pool leak.\n"
    )
    assert (
        cmem(capsys, "pin", f"#{row.pk}")[1]
        == f"#{row.pk} is already current, pinned; nothing changed.\n"
    )
    assert cmem(capsys, "unpin", str(row.pk))[0] == 0
    code, out, _ = cmem(capsys, "retire", str(row.pk), "--reason", "the pool is gone")
    row.refresh_from_db()
    assert code == 0 and out.startswith("Retired") and (row.status, row.status_reason) == (
        "retired", "the pool is gone",
    )  # fmt: skip
    assert cmem(capsys, "restore", str(row.pk))[0] == 0
    row.refresh_from_db()
    assert row.status == "current" and not row.pinned


def test_correct_wrong_outdated_superseded(capsys: pytest.CaptureFixture[str]) -> None:
    old, new = observed("Chose Postgres"), observed("Chose Redis")
    code, out, _ = cmem(capsys, "correct", str(old.pk), "--wrong", "we never used Postgres")
    old.refresh_from_db()
    assert (
        code == 0
        and out.startswith("Marked wrong")
        and old.status_reason == "we never used Postgres"
    )
    assert cmem(capsys, "correct", str(old.pk), "--outdated")[0] == 0
    old.refresh_from_db()
    assert old.status == "outdated"
    code, out, _ = cmem(
        capsys, "correct", str(old.pk), "--superseded-by", str(new.pk), "--reason", "reversed"
    )
    old.refresh_from_db()
    assert code == 0 and old.superseded_by_id == new.pk and f"superseded by #{new.pk}" in out


@pytest.mark.parametrize(
    "args",
    [
        ["correct", "12"],
        ["correct", "12", "--wrong", "x", "--outdated"],
        ["correct", "abc", "--outdated"],
        ["correct", "0", "--outdated"],
        ["correct", str(2**63), "--outdated"],
        ["pin"],
        ["pin", "-4"],
        ["retire", "1", "2"],
        ["undo", "x"],
        ["history", "#"],
    ],
)
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    before = state()
    code, _, err = cmem(capsys, *args)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert state() == before


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["pin", "999999"], "no observation #999999"),
        (["correct", "999999", "--outdated"], "no observation #999999"),
        (["correct", "SELF", "--wrong", ""], "say why"),
        (["correct", "SELF", "--superseded-by", "SELF"], "cannot supersede itself"),
        (["correct", "SELF", "--superseded-by", "999999"], "no observation #999999"),
        (["history", "999999"], "no observation #999999"),
        (["edit", "999999"], "no observation #999999"),
        (["undo", "999999"], "no revision #999999"),
    ],
)
def test_refusals_exit_1_with_the_reason_and_change_nothing(
    capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    row = observed()
    args = [str(row.pk) if a == "SELF" else a for a in args]
    before = state()
    code, _, err = cmem(capsys, *args)
    assert code == 1 and err.startswith(f"cmem {args[0]}: ") and says in err, err
    assert state() == before


def test_the_agents_shell_cannot_pin_or_overrule_a_person(
    capsys: pytest.CaptureFixture[str], agent_shell: None
) -> None:
    mine = persons()
    before = state()
    for args in (
        ["retire", str(mine.pk)],
        ["correct", str(mine.pk), "--wrong", "a README said so"],
        ["restore", str(mine.pk)],
        ["edit", str(mine.pk)],
    ):
        code, _, err = cmem(capsys, *args)
        assert code == 1 and "written or corrected by a person" in err, args
    code, out, err = cmem(capsys, "pin", str(mine.pk))
    assert (
        code == 0 and out.startswith("Proposed to the user: pin") and "acting as the agent" in err
    )
    rows, revisions = state()
    assert rows == before[0] and revisions == before[1] + 1  # the proposal, nothing else
    assert mine.revisions.last().action == "propose_pin"  # type: ignore[union-attr]


def test_undo_from_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    row = observed()
    cmem(capsys, "retire", str(row.pk))
    revision = row.revisions.get()
    code, out, _ = cmem(capsys, "undo", str(revision.pk))
    row.refresh_from_db()
    assert code == 0 and out.startswith(f"Undid revision {revision.pk}") and row.status == "current"
    code, _, err = cmem(capsys, "undo", str(revision.pk))
    assert code == 1 and "already undone" in err


# --- history -------------------------------------------------------------------------------


def test_history_says_what_who_and_why(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    row = observed()
    monkeypatch.setenv("CLAUDECODE", "1")
    cmem(capsys, "correct", str(row.pk), "--outdated", "pgbouncer replaced it")
    cmem(capsys, "pin", str(row.pk))
    monkeypatch.delenv("CLAUDECODE")
    cmem(capsys, "restore", str(row.pk))
    code, out, _ = cmem(capsys, "history", str(row.pk))
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"#{row.pk} [discovery] Found the pool leak (corrected) · shop"
    assert "outdated" in lines[1] and "the agent: pgbouncer replaced it" in lines[1]
    assert "status: current → outdated" in out
    assert any("propose_pin" in line and "[a proposal for you]" in line for line in lines)
    assert any("restore" in line and "a person" in line for line in lines)
    assert lines[-1] == "Undo a change with `cmem undo REVISION`."


def test_history_of_an_untouched_memory(capsys: pytest.CaptureFixture[str]) -> None:
    row = observed()
    assert "No changes since it was recorded." in cmem(capsys, "history", str(row.pk))[1]


# --- edit ----------------------------------------------------------------------------------


def editor(tmp_path: Path, body: str, name: str = "editor.sh") -> str:
    """A stand-in for $EDITOR: a shell script run with the form's path as $1."""
    script = tmp_path / name
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_edit_changes_what_the_form_changes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    row = observed(facts=["pool of 10"], subtitle="under load")
    monkeypatch.setenv(
        "EDITOR",
        editor(tmp_path, "sed -i -e 's/^title: .*/title: The client leaked connections/' "
               "-e 's/^- pool of 10$/- pool of 10\\n- client retried/' \"$1\""),
    )  # fmt: skip
    code, out, _ = cmem(capsys, "edit", str(row.pk), "--reason", "clearer")
    row.refresh_from_db()
    assert code == 0 and out.startswith("Edited") and "(facts, title)" in out
    assert row.title == "The client leaked connections"
    assert row.facts == ["pool of 10", "client retried"]
    assert (row.subtitle, row.narrative) == ("under load", "The pool kept connections.")
    assert row.person_edited
    assert row.revisions.get().reason == "clearer"


def test_an_unchanged_form_changes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    row = observed(facts=["one\nspanning lines"])  # the form shows it on one line
    before = state()
    monkeypatch.setenv("EDITOR", "true")
    assert cmem(capsys, "edit", str(row.pk))[1] == f"No change to #{row.pk}.\n"
    # Re-saved with only whitespace moved: still nothing, and the fact keeps its lines.
    monkeypatch.setenv("EDITOR", editor(tmp_path, "printf '\\n\\n' >> \"$1\""))
    assert cmem(capsys, "edit", str(row.pk))[1] == f"No change to #{row.pk}.\n"
    assert state() == before


def test_the_form_is_what_the_editor_gets_and_visual_comes_first(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    row = observed(facts=["a fact"])
    copy = tmp_path / "seen.txt"
    monkeypatch.setenv("VISUAL", editor(tmp_path, f'cp "$1" {copy}', "visual.sh"))
    monkeypatch.setenv("EDITOR", editor(tmp_path, "exit 9"))
    assert cmem(capsys, "edit", str(row.pk))[0] == 0
    form = copy.read_text()
    assert (
        "title: Found the pool leak\ntype: discovery\nsubtitle: \nfacts:\n- a fact\nnarrative:\nThe pool kept connections.\n"
        in form
    )
    assert form.startswith(f"# Memory #{row.pk} in shop.")


@pytest.mark.parametrize(
    ("script", "says"),
    [
        ("printf 'garbage\\n' > \"$1\"", "line 1: expected `title:`"),
        ("sed -i 's/^title: .*//' \"$1\"", "no `title:` line"),
        ("sed -i 's/^narrative:$/story:/' \"$1\"", "line "),
        ("sed -i 's/^type: .*/type: gossip/' \"$1\"", "type must be one of"),
        ("sed -i 's/^title: .*/title: /' \"$1\"", "the title is empty"),
        ("sed -i 's/^facts:$/- stray/' \"$1\"", "outside `facts:`"),
        ("printf 'title: a\\ntitle: b\\n' > \"$1\"", "line 2: `title:` is given twice"),
        ("exit 3", "the editor exited with 3"),
    ],
)
def test_a_malformed_form_or_failed_editor_changes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    script: str, says: str,
) -> None:  # fmt: skip
    row = observed(facts=["a fact"])
    monkeypatch.setenv("EDITOR", editor(tmp_path, script))
    before = state()
    code, out, err = cmem(capsys, "edit", str(row.pk))
    assert code == 1 and out == "" and says in err, err
    assert state() == before


def test_a_missing_editor_is_named(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    row = observed()
    monkeypatch.setenv("EDITOR", "/nonexistent/editor --wait")
    code, _, err = cmem(capsys, "edit", str(row.pk))
    assert code == 1 and "cannot run the editor '/nonexistent/editor --wait'" in err


def test_edit_redact_purges_the_old_text(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    row = observed(narrative="the staging login is tangerine-42")
    monkeypatch.setenv("EDITOR", editor(tmp_path, "sed -i 's/tangerine-42/in the vault/' \"$1\""))
    cmem(capsys, "edit", str(row.pk))
    monkeypatch.setenv(
        "EDITOR", editor(tmp_path, "sed -i 's/in the vault/kept in the vault/' \"$1\"", "e2.sh")
    )
    code, out, _ = cmem(capsys, "edit", str(row.pk), "--redact")
    assert code == 0 and out.startswith("Edited and redacted")
    code, out, _ = cmem(capsys, "history", str(row.pk))
    assert "tangerine-42" not in out and "[removed by a redacting edit]" in out
    assert all("tangerine" not in str(r.before) + str(r.after) for r in row.revisions.all())


def test_the_agents_shell_cannot_open_an_editor_on_a_persons_memory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    agent_shell: None,
) -> None:  # fmt: skip
    mine = persons()
    opened = tmp_path / "opened"
    monkeypatch.setenv("EDITOR", editor(tmp_path, f"touch {opened}"))
    code, _, err = cmem(capsys, "edit", str(mine.pk))
    assert code == 1 and "written or corrected by a person" in err
    assert not opened.exists()


def test_gemini_clis_shell_acts_as_the_agent_too(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    row = observed()
    monkeypatch.setenv("GEMINI_CLI", "1")
    code, _, err = cmem(capsys, "pin", str(row.pk))
    row.refresh_from_db()
    assert code == 0 and "GEMINI_CLI=1" in err and not row.pinned
    assert row.revisions.filter(action="propose_pin").exists()
