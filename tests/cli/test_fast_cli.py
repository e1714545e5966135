"""The CLI's fast path and its words (issue 35): the verbs that only talk to the worker run
without Django and print what the management commands print; ids, exit codes, hints, a
data dir that is a file, a closed pipe, quiet logs. Real `cmem` processes, one worker.

Never a timed assertion: `cmem bench cli` measures (tests/bench/cli.py). "No Django" is
proven with `python -X importtime`, which names every module the process imported."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory.hookclient.client import PLATFORMS
from memory.management.arguments import SEARCH_MODES
from tests.support import LiveWorker, free_port, make_worker_env
from tests.support.paths import CMEM

FAST = (
    ["status"],
    ["status", "--json"],
    ["search", "checkout"],
    ["search"],
    ["show", "1", "#2"],
    ["timeline", "2", "--depth", "1"],
    ["logs", "-n", "3"],
    ["stats"],
    ["start"],
)


def _run(env: dict[str, str], *args: str, importtime: bool = False) -> subprocess.CompletedProcess[str]:  # fmt: skip
    head = [sys.executable, "-X", "importtime", CMEM] if importtime else [CMEM]
    return subprocess.run(
        [*head, *args], env={**env, "COLUMNS": "100"}, capture_output=True, text=True, timeout=120
    )


def _imported(stderr: str) -> set[str]:
    return {
        line.rsplit("|", 1)[-1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:")
    }


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveWorker]:
    data = tmp_path_factory.mktemp("fast-cli") / "data"
    data.mkdir(mode=0o700)
    port = free_port()
    env = make_worker_env(data, port)
    live = LiveWorker(data_dir=data, port=port, env=env)
    live.start()  # migrates the new data dir
    try:
        assert _run(env, "demo").returncode == 0  # 13 observations, 4 summaries, 5 prompts
        yield live
    finally:
        live.stop()


def test_the_read_verbs_answer_from_the_worker_without_django(worker: LiveWorker) -> None:
    for args in FAST:
        done = _run(worker.env, *args, importtime=True)
        assert done.returncode == 0, (args, done.stderr[-500:])
        modules = _imported(done.stderr)
        assert not {m for m in modules if m.split(".")[0] in {"django", "ninja", "huey"}}, args
        assert "memory.models" not in modules, args


def test_the_fast_path_prints_what_the_command_prints(worker: LiveWorker) -> None:
    verbs = (["search", "checkout"], ["search"], ["show", "1", "3"], ["timeline", "2"],
             ["search", "refund", "--json"], ["stats", "--by", "session"], ["stats", "--json"],
             ["timeline", "999"], ["timeline", "X9"])  # fmt: skip
    fast = [_run(worker.env, *args) for args in verbs]
    worker.stop()  # the same verbs again, from the database under Django
    try:
        slow = [_run(worker.env, *args) for args in verbs]
    finally:
        worker.start()
    for args, a, b in zip(verbs, fast, slow, strict=True):
        if args[0] == "search" and "--json" in args:  # the worker's hits carry their fold too
            assert [h["id"] for h in eval_json(a.stdout)] == [h["id"] for h in eval_json(b.stdout)]
            continue
        assert (a.returncode, a.stdout) == (b.returncode, b.stdout), args
    assert fast[-2].stderr.strip() == "cmem timeline: no observation with id 999"
    assert fast[-1].returncode == 2 and slow[-1].stderr == fast[-1].stderr


def eval_json(text: str) -> list[dict[str, object]]:
    import json  # only this helper reads JSON

    return list(json.loads(text)["results"])


def test_show_takes_the_ids_search_prints_and_bad_ids_are_usage_errors(worker: LiveWorker) -> None:
    search = _run(worker.env, "search", "refunds", "--kind", "summary,prompt").stdout
    assert "#S" in search and "#P" in search
    done = _run(worker.env, "show", "S1", "#P2", "3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("#S1 [summary]") and "#P2 [prompt]" in done.stdout
    assert "#3 [change]" in done.stdout
    for bad in ("X1", "0", "P"):
        done = _run(worker.env, "show", bad)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, bad
        assert "S3 (summary) or P4 (prompt)" in done.stderr
    missing = _run(worker.env, "show", "P999")
    assert (missing.returncode, missing.stderr.strip()) == (1, "cmem show: no memory with id P999")


def test_search_says_what_it_listed(worker: LiveWorker) -> None:
    newest = _run(worker.env, "search", "--limit", "3").stdout.splitlines()
    assert newest[-1].startswith("3 newest row(s), newest first (no search words given).")
    nothing = _run(worker.env, "search", "zzzqqq")
    assert nothing.returncode == 0 and nothing.stdout == "0 result(s) for 'zzzqqq'.\n"


def test_usage_errors_exit_2_before_django(tmp_path: Path) -> None:
    env = make_worker_env(tmp_path / "data", free_port())
    for args in (["install", "--agent", "nosuch"], ["search", "--mode", "x"], ["stop", "--nope"],
                 ["restart", "--timeout", "soon"], ["show", "X1"]):  # fmt: skip
        done = _run(env, *args, importtime=True)
        assert done.returncode == 2, args
        errors = [line for line in done.stderr.splitlines() if not line.startswith("import time:")]
        assert len(errors) == 1 and "see `cmem" in errors[0], (args, errors)
        assert "django" not in _imported(done.stderr), args
    assert not (tmp_path / "data").exists()


@pytest.mark.django_db
def test_each_fast_verbs_help_is_its_commands_help_without_django(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cmem VERB --help` is answered before Django, and says exactly what the management
    command's own parser would: the same description, options and examples."""
    from django.core.management import load_command_class

    from cmem_site.frontend import _extra_arguments, verb_parser
    from cmem_site.verbs import BY_NAME
    from memory.management.arguments import VERB_ARGUMENTS

    monkeypatch.setenv("COLUMNS", "100")  # the width _run gives the `cmem` processes
    env = make_worker_env(tmp_path / "data", free_port())
    for name in VERB_ARGUMENTS:
        verb = BY_NAME[name]
        command = load_command_class("memory", verb.command_name)
        parser = verb_parser(verb, str(command.help))
        command.add_arguments(parser)
        _extra_arguments(verb, parser)
        done = _run(env, name, "--help", importtime=True)
        assert done.returncode == 0, (name, done.stderr[-500:])
        assert "django" not in _imported(done.stderr), name
        assert done.stdout == parser.format_help(), name
        assert str(command.help) in " ".join(done.stdout.split()), name


def test_search_modes_match_the_search_service() -> None:
    from memory.retrieval.search.query import MODES

    assert tuple(MODES) == SEARCH_MODES


def test_a_data_dir_that_is_a_file_is_one_line_for_every_verb(tmp_path: Path) -> None:
    blocker = tmp_path / "data"
    blocker.write_text("not a folder")
    env = make_worker_env(blocker, free_port())
    for verb in ("status", "search", "stats", "start", "migrate"):
        done = _run(env, verb)
        assert done.returncode == 1 and "Traceback" not in done.stderr, verb
        assert done.stderr.strip().splitlines() == [
            f"cmem {verb}: the data dir {blocker} is a file, not a folder; move that file away "
            "(cmem makes the folder), or point CLAUDE_MEM_DATA_DIR at a folder"
        ]
    doctor = _run(env, "doctor")
    assert doctor.returncode == 1 and doctor.stdout.startswith(f"FAIL  the data dir {blocker}")
    assert "fix: move that file away" in doctor.stdout


def test_a_closed_pipe_ends_quietly(worker: LiveWorker) -> None:
    for verb in ("search", "logs"):
        done = subprocess.run(
            f"{CMEM} {verb} | head -c 1",
            shell=True, env=worker.env, capture_output=True, text=True, timeout=120,
            executable="/bin/bash",
        )  # fmt: skip
        assert done.stderr == "", (verb, done.stderr)


def test_logs_leave_out_the_heartbeat_unless_all(tmp_path: Path) -> None:
    logs = tmp_path / "data" / "logs"
    logs.mkdir(parents=True)
    beat = [
        "2026-12-04 17:34:12,791 INFO huey.consumer.Scheduler 16389: Enqueueing periodic task memory.tasks.events_sweep_task: f727b9ef-8012.",
        "2026-12-04 17:34:12,791 INFO huey 16389: Executing memory.tasks.events_sweep_task: f727b9ef-8012-4142",
        "2026-12-04 17:34:12,799 INFO huey 16389: memory.tasks.events_sweep_task: f727b9ef-8012-4142 executed in 0.008s",
        "2026-12-04 17:34:12,800 INFO huey 16389: memory.spool_tasks.spool_ingest_periodic_task: fb540d6e executed in 0.000s",
    ]  # fmt: skip
    real = "2026-12-04 17:34:14,355 INFO memory.retrieval.embeddings.encoder 16389: encoder started"
    (logs / "cmem.log").write_text("\n".join([real, *beat * 30]) + "\n")
    env = make_worker_env(tmp_path / "data", free_port())
    quiet = _run(env, "logs", "-n", "5").stdout
    assert real in quiet and "sweep_task" not in quiet and "periodic_task" not in quiet
    loud = _run(env, "logs", "-n", "5", "--all").stdout
    assert real not in loud and loud.count("sweep_task") >= 3


def test_hook_help_lists_every_platform_and_its_examples_work(worker: LiveWorker) -> None:
    help_text = _run({}, "hook", "--help").stdout
    assert "platforms: claude-code, codex, gemini, copilot, opencode" in help_text
    listed = help_text.split("platforms: ", 1)[1].split("\n", 1)[0].split(", ")
    assert set(listed) == PLATFORMS  # every platform the hook client takes, none forgotten
    examples = [line.strip() for line in help_text.splitlines() if "| cmem hook" in line]
    env = {**worker.env, "PATH": f"{Path(CMEM).parent}:{worker.env['PATH']}"}
    context = subprocess.run(
        examples[0], shell=True, env=env, capture_output=True, text=True, timeout=60,
        executable="/bin/bash",
    )  # fmt: skip
    assert context.returncode == 0 and context.stderr == "", context.stderr
    assert '"hookEventName": "SessionStart"' in context.stdout
    done = subprocess.run(
        examples[1], shell=True, env=env, capture_output=True, text=True, timeout=60,
        executable="/bin/bash",
    )  # fmt: skip
    assert done.returncode == 0 and done.stderr == "", done.stderr


def _mcp_session(env: dict[str, str], *flags: str) -> tuple[list[str], str]:
    """initialize, initialized, tools/list through `cmem mcp`: (stdout lines, stderr)."""
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]  # fmt: skip
    import json  # only the MCP helper writes JSON-RPC

    proc = subprocess.Popen(
        [CMEM, "mcp", *flags], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    answers = []
    for message in messages:
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        if "id" in message:
            answers.append(proc.stdout.readline())
    proc.stdin.close()  # the server ends at the end of its input
    assert proc.stderr is not None
    err = proc.stderr.read()
    proc.wait(timeout=60)
    return answers, err


def test_the_mcp_server_is_quiet_unless_asked(worker: LiveWorker) -> None:
    answers, err = _mcp_session(worker.env)
    assert '"serverInfo"' in answers[0] and '"tools"' in answers[1]
    assert err == ""
    _, loud = _mcp_session(worker.env, "--verbose")
    assert "ListToolsRequest" in loud


def test_settings_files_keep_their_layout() -> None:
    from memory.agents.install.claude_code import json_like

    data = {"model": "opus", "hooks": {}}
    assert json_like(data, b'{"model": "opus"}') == '{"model": "opus", "hooks": {}}'
    assert json_like(data, b'{"model":"opus"}\n') == '{"model":"opus","hooks":{}}\n'
    assert json_like(data, b'{\n    "model": "opus"\n}\n').startswith('{\n    "model"')
    assert json_like(data, b'{\n\t"model": "opus"\n}').startswith('{\n\t"model"')
    assert json_like(data, None) == '{\n  "model": "opus",\n  "hooks": {}\n}\n'


def test_uninstall_stops_the_worker_keeps_the_file_and_says_what_is_left(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {**make_worker_env(data, free_port()), "HOME": str(tmp_path)}
    settings = tmp_path / "settings.json"
    settings.write_text('{"model": "opus", "env": {"A": "1"}}')
    assert _run(env, "install", "--settings-file", str(settings), "--no-mcp").returncode == 0
    assert settings.read_text().count("\n") == 0 and '"hooks": {' in settings.read_text()
    assert _run(env, "start").returncode == 0
    try:
        done = _run(env, "uninstall", "--settings-file", str(settings), "--keep-mcp")
    finally:
        _run(env, "stop")
    assert done.returncode == 0, done.stderr
    assert settings.read_text() == '{"model": "opus", "env": {"A": "1"}}'
    assert "cmem stopped (pid" in done.stdout
    assert "uv tool uninstall cmem" in done.stdout and f"rm -rf {data}" in done.stdout
    assert _run(env, "status").returncode == 3


@pytest.mark.django_db
def test_import_claude_code_with_nothing_found_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.importers import claude_code
    from memory.importers.report import ImportReport

    monkeypatch.setenv("HOME", str(tmp_path))
    report = ImportReport()
    claude_code.import_from(options={}, report=report, progress=lambda *a: lambda: None)
    assert report.lines() == [
        f"no Claude Code transcripts (*.jsonl) in {tmp_path}/.claude/projects; "
        "give a file or folder: `cmem import claude-code PATH`"
    ]
    empty = tmp_path / "empty"
    empty.mkdir()
    report = ImportReport()
    claude_code.import_from(
        options={"path": empty}, report=report, progress=lambda *a: lambda: None
    )
    assert report.lines() == [f"no Claude Code transcripts (*.jsonl) in {empty}"]


def test_get_observations_takes_the_ids_search_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp.server.fastmcp.exceptions import ToolError

    from memory.retrieval import mcp_server

    asked: list[dict[str, str]] = []

    def request(method: str, path: str, params: dict[str, str]) -> dict[str, object]:
        asked.append(params)
        return {"observations": [], "missing": [12]}

    monkeypatch.setattr(mcp_server.worker, "request", request)
    text = mcp_server.get_observations(["#12", "S3", "#P4"])
    assert asked == [{"ids": "12"}]  # S3 and P4 are never read as observations 3 and 4
    assert "(no observation with id 12)" in text
    assert "#S3 is a session summary" in text and 'timeline(anchor="P4")' in text
    with pytest.raises(ToolError, match="not an id"):
        mcp_server.get_observations(["X1"])
