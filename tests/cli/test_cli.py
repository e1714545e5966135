"""cmem's own command line: help, examples, errors and exit codes, the memory verbs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from cmem_site import frontend
from cmem_site.verbs import GROUPS, VERBS
from tests.factories import SessionFactory
from tests.support import free_port
from tests.support.paths import CMEM

DJANGO_ONLY = ("flush", "dbshell", "startproject", "runserver", "squashmigrations", "run_huey")


def _cmem(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run(
        [CMEM, *args], input=stdin, capture_output=True, text=True, timeout=120,
        env=env or os.environ.copy(),
    )  # fmt: skip


def test_help_lists_cmems_verbs_by_group_and_none_of_djangos() -> None:
    done = _cmem("--help")
    assert done.returncode == 0
    for group in GROUPS:
        assert f"\n{group}:\n" in done.stdout
    for verb in VERBS:
        assert f"\n  {verb.name} " in done.stdout
    for name in DJANGO_ONLY:
        assert name not in done.stdout
    assert "exit codes: 0 ok, 1 failure, 2 usage" in done.stdout


@pytest.mark.django_db
def test_every_verbs_help_has_an_example_and_no_django_flags(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for verb in VERBS:
        if verb.name == "hook":
            continue  # its help never boots Django: tested below through the real script
        assert frontend.run([verb.name, "--help"]) == 0, verb.name
        out = capsys.readouterr().out
        assert f"usage: cmem {verb.name}" in out and "examples:\n  cmem " in out, verb.name
        for flag in ("--pythonpath", "--traceback", "--no-color", "--skip-checks"):
            assert flag not in out, (verb.name, flag)
    assert frontend.run(["install", "--help"]) == 0
    assert "--settings-file" in capsys.readouterr().out


def test_hook_help_and_version() -> None:
    hook = _cmem("hook", "--help")
    assert hook.returncode == 0 and "usage: cmem hook <platform> <event>" in hook.stdout
    version = _cmem("--version")
    assert version.returncode == 0 and version.stdout.startswith("cmem 0.")


@pytest.mark.parametrize(
    "args",
    [["bogus-event"], ["--bogus"], ["claude-code", "no-such-event"], ["nope", "context"], []],
)
def test_hook_always_exits_0_and_prints_nothing_on_stdout(args: list[str], tmp_path: Path) -> None:
    env = {**os.environ, "CLAUDE_MEM_DATA_DIR": str(tmp_path / "data")}
    done = _cmem("hook", *args, stdin="{not json", env=env)
    assert done.returncode == 0 and done.stdout == ""


def test_user_mistakes_are_one_line_and_exit_2() -> None:
    for args in (["bogus"], ["search", "--limit", "x"], ["token"], ["bench", "nope"]):
        done = _cmem(*args)
        assert done.returncode == 2, args
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in done.stderr, (args, done.stderr)
        assert "see `cmem" in lines[0]


def test_a_command_that_fails_says_so_in_one_plain_line(tmp_path: Path) -> None:
    env = {**os.environ, "CLAUDE_MEM_DATA_DIR": str(tmp_path / "data")}
    assert _cmem("migrate", "-v", "0", env=env).returncode == 0
    done = _cmem("show", "424242", env=env)
    assert done.returncode == 1
    assert done.stderr.strip() == "cmem show: no observation with id 424242"
    assert "CommandError" not in done.stderr


def _observations(tmp_path: Path) -> list[int]:
    from memory.models import Observation

    session = SessionFactory(root=tmp_path, project="demo")
    rows = [
        Observation.objects.create(
            session=session,
            project="demo",
            type="bugfix",
            title=f"Fixed the checkout rounding bug number {i} " + "x" * 80,
            narrative=f"Narrative {i}: totals were rounded twice.",
            facts=[f"fact {i}"],
            files_read=["shop/cart.py"],
        )  # fmt: skip
        for i in range(3)
    ]
    return [row.pk for row in rows]


@pytest.mark.django_db
def test_search_prints_columns_that_fit_the_terminal_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = _observations(tmp_path)
    monkeypatch.setenv("COLUMNS", "70")
    assert frontend.run(["search", "checkout", "rounding"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["id", "when", "type", "project", "tokens", "title"]
    assert all(len(line) <= 70 for line in lines[:-1]) and lines[-1].startswith("3 result(s).")
    # The title column starts at the same place on every row.
    starts = {
        line.index("title") if i == 0 else line.index("Fixed") for i, line in enumerate(lines[:-1])
    }
    assert len(starts) == 1 and lines[1].rstrip().endswith("…")
    assert frontend.run(["search", "checkout", "--json"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert sorted(r["id"] for r in results) == sorted(ids)


@pytest.mark.django_db
def test_show_prints_observations_in_full(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = _observations(tmp_path)
    assert frontend.run(["show", str(ids[1]), f"#{ids[0]}"]) == 0
    out = capsys.readouterr().out
    assert out.index(f"#{ids[1]} [bugfix]") < out.index(f"#{ids[0]} [bugfix]")
    assert "Narrative 1: totals were rounded twice." in out and "- fact 1" in out
    assert "read: shop/cart.py" in out and "x" * 80 in out  # titles are not cut


@pytest.mark.django_db
def test_forget_takes_the_query_positionally_and_names_missing_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from memory.models import Observation

    ids = _observations(tmp_path)
    assert frontend.run(["forget", "rounding", "bug"]) == 0
    assert "Would delete 3 row(s)." in capsys.readouterr().out
    assert frontend.run(["forget", "--ids", f"{ids[0]},999999", "--yes"]) == 0
    out = capsys.readouterr().out
    assert "Deleted 1 row(s)." in out and "No observation with id 999999." in out
    assert not Observation.objects.filter(pk=ids[0]).exists()


@pytest.mark.django_db
def test_timeline_marks_the_anchor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ids = _observations(tmp_path)
    assert frontend.run(["timeline", str(ids[1]), "--depth", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] if line.startswith(">") else line.split()[0] for line in lines] == [
        f"#{pk}" for pk in ids
    ]
    assert lines[1].startswith(f"> #{ids[1]}")


def test_open_hands_the_url_to_the_browser(tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" > {seen}\n')
    browser.chmod(0o755)
    env = {**os.environ, "CLAUDE_MEM_DATA_DIR": str(tmp_path / "data"), "BROWSER": str(browser)}
    port = free_port()
    env["CLAUDE_MEM_WORKER_PORT"] = str(port)
    link = f"http://127.0.0.1:{port}/auth/?token="  # the one-time login link (SECURITY.md §1)
    done = _cmem("open", env=env)
    try:
        assert done.returncode == 0 and link in done.stdout, done.stdout + done.stderr
        assert seen.read_text().strip().startswith(link)
        env["BROWSER"] = "/nonexistent-browser"
        env["PATH"] = str(Path(CMEM).parent)  # no xdg-open, no browser at all: the URL is printed
        done = _cmem("open", env=env)
        assert done.returncode == 0 and link in done.stdout
    finally:
        _cmem("stop", env=env)  # `cmem open` starts the worker when it is not running
