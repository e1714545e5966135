"""`python -m tests.bench offline`: does the offline compressor tell the truth?

Runs the offline compressor (no model, no database) over recorded hook payloads (the real
Claude Code and Codex ones in tests/fixtures/, or CMEM_FIXTURES_DIR) and a
built set of labelled tool uses: reads, edits, Bash edits of every kind cmem recognises,
a change only a later file hash reveals, test runs passing and failing, failures. Reports:
- file-changing tool uses recorded as modifying the file (files_modified holds every file the
  label names), and typed as a change rather than a discovery (target 100% for both);
- observation titles that carry a raw command line (target 0);
- whether the turn's summary "Done" line names the changes ("No file changes" only when none).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tests.bench import offline_sources

ROOT = "/home/dev/shop"


@dataclass
class Case:
    payload: dict[str, Any]
    changes: list[str] = field(default_factory=list)  # project-relative files it changed
    label: str = ""


def _bash(
    command: str, *, stdout: str = "", code: int = 0, description: str = ""
) -> dict[str, Any]:
    tool_input: dict[str, Any] = {"command": command}
    if description:
        tool_input["description"] = description
    if code:
        return {
            "tool_name": "Bash",
            "tool_input": tool_input,
            "error": f"Exit code {code}\n{stdout}",
            "hook_event_name": "PostToolUseFailure",
            "cwd": ROOT,
        }
    return {
        "tool_name": "Bash",
        "tool_input": tool_input,
        "cwd": ROOT,
        "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False},
    }


def _read(path: str, content: str, sha: str = "") -> dict[str, Any]:
    files = [{"path": path, "role": "read", "sha256": sha}] if sha else []
    return {
        "tool_name": "Read",
        "tool_input": {"file_path": f"{ROOT}/{path}"},
        "cwd": ROOT,
        "tool_response": {
            "type": "text",
            "file": {
                "filePath": f"{ROOT}/{path}",
                "content": content,
                "numLines": content.count("\n") + 1,
                "startLine": 1,
                "totalLines": content.count("\n") + 1,
            },
        },
        "cmem_files": files,
    }


def _edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {
        "tool_name": "Edit",
        "cwd": ROOT,
        "tool_input": {"file_path": f"{ROOT}/{path}", "old_string": old, "new_string": new},
        "tool_response": {"filePath": f"{ROOT}/{path}"},
        "cmem_files": [{"path": path, "role": "modified", "sha256": "e" * 64}],
    }


def built_set() -> list[Case]:
    """Labelled tool uses; the changed files are the truth the benchmark checks against."""
    src = "def total(items):\n    return sum(i.price for i in items)\n"
    return [
        Case(_read("shop/cart.py", src, "a" * 64), label="read"),
        Case(_edit("shop/cart.py", "sum(", "round(sum("), ["shop/cart.py"], "edit"),
        Case(
            _bash('printf "\\n# TODO: restock alerts\\nRESTOCK_AT = 5\\n" >> shop/inventory.py'),
            ["shop/inventory.py"],
            "printf >>",
        ),
        Case(
            _bash("cat > docs/notes.md <<'EOF'\n# Notes\nCart rounds totals.\nEOF"),
            ["docs/notes.md"],
            "heredoc >",
        ),
        Case(_bash("echo 'DEBUG=false' | tee -a .env.example"), [".env.example"], "tee -a"),
        Case(
            _bash("sed -i 's/price/unit_price/g' shop/cart.py shop/models.py"),
            ["shop/cart.py", "shop/models.py"],
            "sed -i",
        ),
        Case(_bash("perl -pi -e 's/\\bfoo\\b/bar/' shop/util.py"), ["shop/util.py"], "perl -pi"),
        Case(
            _bash("mv shop/helpers.py shop/utils/helpers.py"),
            ["shop/helpers.py", "shop/utils/helpers.py"],
            "mv",
        ),
        Case(_bash("cp config/default.toml config/local.toml"), ["config/local.toml"], "cp"),
        Case(_bash("rm -f shop/legacy_cart.py"), ["shop/legacy_cart.py"], "rm"),
        Case(_bash("git checkout -- shop/models.py"), ["shop/models.py"], "git checkout --"),
        Case(_bash("git restore shop/views.py"), ["shop/views.py"], "git restore"),
        Case(_bash("git apply fixes/rounding.patch"), ["shop/cart.py"], "git apply"),
        Case(_bash("patch -p1 shop/tax.py < fixes/tax.diff"), ["shop/tax.py"], "patch"),
        Case(
            _bash(
                "black shop/cart.py shop/tax.py",
                stdout="reformatted shop/cart.py\n1 file reformatted",
            ),
            ["shop/cart.py", "shop/tax.py"],
            "black",
        ),
        Case(
            _bash("ruff format shop/views.py", stdout="1 file reformatted"),
            ["shop/views.py"],
            "ruff format",
        ),
        Case(
            _bash("npx prettier --write web/app.js", stdout="web/app.js 20ms"),
            ["web/app.js"],
            "prettier",
        ),
        Case(_bash("cd shop && python -m isort models.py"), ["models.py"], "isort"),
        Case(
            _bash(
                "python -m pytest tests/test_cart.py -q",
                stdout="5 passed in 0.12s",
                description="Run the cart tests",
            ),
            label="tests pass",
        ),
        Case(
            _bash(
                "pytest -q tests/test_tax.py",
                stdout="E   AssertionError: 0.07 != 0.08\n1 failed",
                code=1,
            ),
            label="tests fail",
        ),
        Case(_bash("git status --short", stdout=" M shop/cart.py"), label="git status"),
        Case(
            _bash("grep -rn 'unit_price' shop/", stdout="shop/cart.py:2: unit_price"), label="grep"
        ),
        Case(_bash("ls shop", stdout="cart.py\nmodels.py"), label="ls"),
        Case(
            _bash("git commit -am 'Round cart totals'", stdout="[main 1a2b3c] Round cart totals"),
            label="git commit",
        ),
        Case(
            _bash("pip install requests", stdout="Successfully installed requests-2.32"),
            label="pip install",
        ),
        # A change only the capture's file hashes show: a generator rewrote the file.
        Case(_read("shop/schema.py", "FIELDS = 3\n", "b" * 64), label="read before regen"),
        Case(
            _bash("python tools/regen_schema.py", stdout="schema regenerated"),
            ["shop/schema.py"],
            "regen (hash)",
        ),
        Case(_read("shop/schema.py", "FIELDS = 4\n", "c" * 64), label="read after regen"),
        Case(
            _bash(
                "cat shop/missing.py",
                code=1,
                stdout="cat: shop/missing.py: No such file or directory",
            ),
            label="failed cat",
        ),
    ]


def fixture_cases() -> list[Case]:
    """The shared fixtures' hook payloads, one flat list (each is its own session)."""
    return [
        Case(r.payload, r.changes, r.label)
        for session in offline_sources.shared_fixtures().sessions
        for r in session
    ]


def evaluate_source(source: offline_sources.Source, root: str) -> dict[str, Any]:
    """`evaluate` per recorded session (the hash check never spans two), summed."""
    total: dict[str, Any] = {
        "tool_uses": 0,
        "file_changing": 0,
        "recorded_as_modifying": 0,
        "typed_as_change": 0,
        "titles": 0,
        "titles_with_raw_command": 0,
        "raw_titles": [],
        "misses": [],
        "sample_titles": [],
        "sessions": len(source.sessions),
        "sets": source.sets,
        "unlabelled": source.unlabelled,
    }
    for session in source.sessions:
        result = evaluate([Case(r.payload, r.changes, r.label) for r in session], root)
        for key in ("tool_uses", "file_changing", "recorded_as_modifying", "typed_as_change"):
            total[key] += result[key]
        total["titles"] += result["titles"]
        total["titles_with_raw_command"] += result["titles_with_raw_command"]
        for key in ("raw_titles", "misses", "sample_titles"):
            total[key] += result[key]
    return total


def evaluate(cases: list[Case], root: str) -> dict[str, Any]:
    from memory.compression import offline
    from memory.compression.offline_shell import looks_like_command
    from memory.compression.tooluse import SHELL_TOOLS, ToolUse, hash_changes

    uses = []
    for i, case in enumerate(cases):
        event = SimpleNamespace(
            pk=i + 1,
            payload=case.payload,
            tool_name=case.payload.get("tool_name", ""),
            created=None,
            prompt_number=1,
        )
        uses.append(ToolUse.from_event(event, n=i + 1, root=str(case.payload.get("cwd") or root)))
    hash_changes(uses)
    observations = offline.observations_for_batch(uses, prompts={1: "round the cart totals"})
    by_use = {n: obs for obs in observations for n in obs.uses}
    changing = recorded = typed = 0
    misses: list[str] = []
    raw_titles: list[str] = []
    for case, use in zip(cases, uses, strict=True):
        obs = by_use.get(use.n)
        if (
            use.name in SHELL_TOOLS
            and obs is not None
            and looks_like_command(obs.title, use.command)
        ):
            raw_titles.append(obs.title)
        if not case.changes:
            continue
        changing += 1
        expected = {use.rel(p) for p in case.changes}
        if obs is not None and expected <= set(obs.files_modified):
            recorded += 1
        else:
            misses.append(
                f"{case.label}: {sorted(expected)} vs {obs.files_modified if obs else None}"
            )
        if obs is not None and obs.type != "discovery":
            typed += 1
    summary = offline.summary_for(
        request="round the cart totals",
        observations=[
            {
                "type": o.type,
                "title": o.title,
                "files_read": o.files_read,
                "files_modified": o.files_modified,
            }
            for o in observations
        ],
        last_message="Done.",
    )
    return {
        "tool_uses": len(cases),
        "file_changing": changing,
        "recorded_as_modifying": recorded,
        "typed_as_change": typed,
        "titles": len(observations),
        "titles_with_raw_command": len(raw_titles),
        "raw_titles": raw_titles,
        "misses": misses,
        "done_line": summary.completed,
        "sample_titles": [o.title for o in observations],
    }


def _line(name: str, result: dict[str, Any]) -> str:
    changing = result["file_changing"]
    pct = 100.0 * result["recorded_as_modifying"] / changing if changing else 100.0
    typed = 100.0 * result["typed_as_change"] / changing if changing else 100.0
    where = f" ({result['sessions']} sessions)" if "sessions" in result else ""
    return (
        f"{name}{where}: {result['tool_uses']} tool uses, {changing} change a file: "
        f"{result['recorded_as_modifying']} recorded as modifying it ({pct:.0f}%), "
        f"{result['typed_as_change']} typed as a change ({typed:.0f}%); "
        f"{result['titles_with_raw_command']} of {result['titles']} titles carry a raw command line"
    )


def results() -> list[tuple[str, dict[str, Any]]]:
    """(source, figures) for every source: the recorded ones, then the built set."""
    global ROOT
    out: list[tuple[str, dict[str, Any]]] = []
    for source in (
        offline_sources.shared_fixtures(),
        offline_sources.shared_transcripts(),
        offline_sources.e2e_payloads(),
        offline_sources.e2e_transcripts(),
    ):
        out.append((source.name, evaluate_source(source, ROOT)))
    with tempfile.TemporaryDirectory(prefix="cmem-bench-offline-") as tmp:
        saved, ROOT = ROOT, tmp
        try:
            (Path(tmp) / "fixes").mkdir()
            (Path(tmp) / "fixes" / "rounding.patch").write_text(
                "--- a/shop/cart.py\n+++ b/shop/cart.py\n@@ -1,2 +1,2 @@\n-x\n+y\n"
            )
            out.append(("built set", evaluate(built_set(), tmp)))
        finally:
            ROOT = saved
    return out


def run(*, out: Any, options: dict[str, Any]) -> None:
    figures = results()
    for name, result in figures:
        out.write(_line(name, result))
        for miss in result["misses"]:
            out.write(f"  missed: {miss}")
        for title in result["raw_titles"]:
            out.write(f"  raw title: {title}")
        for unlabelled in result.get("unlabelled", []):
            out.write(f"  unlabelled shell command (add it to labels.json): {unlabelled}")
        if options.get("verbosity", 1) > 1:
            for title in result["sample_titles"]:
                out.write(f"  {title}")
    built = dict(figures)["built set"]
    out.write(f"summary Done line (built set): {built['done_line'][:300]}")
