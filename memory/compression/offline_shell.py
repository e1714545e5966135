"""Offline observations of shell commands (Bash, Codex's shell): what the command was for
and how it ended, in the project's terms.

A title names the purpose (the agent's own `description` of the command when it gave one,
else what the program does: tests, a commit, a search, the files it changed) and the
outcome (passed, failed with the error line, the output's last line), never the raw
command line: the command itself is kept whole in the facts.
"""

from __future__ import annotations

import re
import shlex

from memory.compression.offline_text import joined, t
from memory.compression.parse import ParsedObservation
from memory.compression.shellwrites import _program, _words
from memory.compression.tooluse import ToolUse, sanitize

_TEST_TOOLS = {
    "pytest": "pytest",
    "py.test": "pytest",
    "tox": "tox",
    "nox": "nox",
    "jest": "jest",
    "vitest": "vitest",
    "mocha": "mocha",
    "rspec": "rspec",
    "phpunit": "phpunit",
}
_INSTALLERS = {
    "pip",
    "pip3",
    "npm",
    "yarn",
    "pnpm",
    "uv",
    "poetry",
    "cargo",
    "apt",
    "apt-get",
    "brew",
    "gem",
    "go",
}
_PASS_LINE = re.compile(r"(?i)\b(\d+ (?:passed|tests? passed|ok)|ok\b|passed|all tests pass)")
_FAIL_LINE = re.compile(r"(?i)(error|exception|fatal|not found|no such file|denied|cannot)")
_WEAK_FAIL_LINE = re.compile(r"(?i)\b(failed|failure|assert)")


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    # Never end mid-token: back up to the last space when there is one.
    return (cut.rsplit(" ", 1)[0] if " " in cut[limit // 2 :] else cut).rstrip() + "…"


def _first_segment(command: str) -> list[str]:
    """The words of the command's main simple command (a leading `cd x &&` skipped)."""
    for segment in re.split(r"\s*(?:&&|\|\||;|\n)\s*", command):
        words = _words(segment.split("|")[0])
        prog, _ = _program(words)
        if prog and prog not in {"cd", "export", "set", "source", "."}:
            return words
    return []


def _test_tool(prog: str, args: list[str]) -> str:
    if prog in _TEST_TOOLS:
        return _TEST_TOOLS[prog]
    if prog in {"npm", "yarn", "pnpm"} and args[:1] in (["test"], ["run"]) and "test" in args[:2]:
        return f"{prog} test"
    if prog in {"go", "cargo", "dotnet", "mvn", "gradle"} and "test" in args[:1]:
        return f"{prog} test"
    if prog == "make" and any(a.startswith("test") for a in args[:2]):
        return "make test"
    if prog in {"manage.py", "django-admin"} and args[:1] == ["test"]:
        return "manage.py test"
    if (
        prog.startswith("python")
        and args
        and args[0].endswith("manage.py")
        and args[1:2] == ["test"]
    ):
        return "manage.py test"
    return ""


def purpose(use: ToolUse) -> tuple[str, str]:
    """(purpose phrase, kind): kind is test, commit, install, search, read, other."""
    words = _first_segment(use.command)
    prog, args = _program(words)
    operands = [a for a in args if not a.startswith("-")]
    tool = _test_tool(prog, args)
    if tool:
        return tool, "test"
    if prog == "git" and args:
        sub = args[0]
        if sub == "commit":
            message = next(
                (
                    args[i + 1]
                    for i, a in enumerate(args[:-1])
                    if a == "--message" or (a[:1] == "-" and a[1:2] != "-" and a.endswith("m"))
                ),
                "",
            )
            return t("committed", target=_short(message, 70) or "changes"), "commit"
        return t("git", target=sub), "git"
    if prog in _INSTALLERS and args[:1] and args[0] in {"install", "add", "i"}:
        pkgs = [a for a in operands[1:] if not a.startswith((".", "/"))] or ["dependencies"]
        return t("installed", target=joined(pkgs, 4), tool=prog), "install"
    if prog in {"grep", "rg", "ag", "ack", "git-grep"}:
        pattern = operands[0] if operands else ""
        return t("searched", pattern=_short(pattern, 40)), "search"
    if prog in {"find", "fd", "ls", "tree"}:
        return t("listed", target=operands[0] if operands else "."), "search"
    if prog in {"cat", "head", "tail", "less", "more", "bat"} and operands:
        return t("viewed", target=joined(operands, 2)), "read"
    if prog == "wc" and operands:
        return t("counted", target=joined(operands, 2)), "read"
    if prog in {"curl", "wget", "http"}:
        url = next((a for a in operands if "://" in a), "")
        host = url.split("://", 1)[-1].split("/", 1)[0] if url else "a URL"
        return t("fetched", target=host), "other"
    if prog.startswith(("python", "node", "ruby", "bash", "sh", "deno", "bun")) and operands:
        return t("ran", target=operands[0].rsplit("/", 1)[-1]), "other"
    if prog == "make":
        return t("ran", target="make " + (operands[0] if operands else "")).strip(), "other"
    target = prog + (
        f" {operands[0].rsplit('/', 1)[-1]}" if operands and "." in operands[0] else ""
    )
    return t("ran", target=target or "a command"), "other"


def _error_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # The last error line is usually the real one (tracebacks); "1 failed" tallies come last.
    for pattern in (_FAIL_LINE, _WEAK_FAIL_LINE):
        for line in reversed(lines):
            if pattern.search(line) and not line.startswith("File "):
                return _short(line, 140)
    return _short(lines[-1], 140) if lines else ""


def _change_title(use: ToolUse, what: str) -> str:
    titles: list[str] = []
    hash_only = list(use.extra_modified)
    for kind, paths, tool in use.shell_change_kinds():
        if kind == "moved" and len(paths) >= 2:
            titles.append(t("shell_moved", src=joined(paths[:-1], 2), dst=paths[-1]))
        elif kind == "patched" and not paths:
            titles.append(t("shell_patched_unknown", tool=tool))
        elif paths:
            titles.append(t(f"shell_{kind}", paths=joined(paths), tool=tool))
    if hash_only:
        titles.append(t("shell_hash", paths=joined(hash_only), purpose=what))
    return "; ".join(dict.fromkeys(titles)) or t(
        "shell_hash", paths=joined(use.modified_paths), purpose=what
    )


def command_observation(use: ToolUse, *, earlier_failure: bool = False) -> ParsedObservation | None:
    command = use.command.strip()
    if not command:
        return None
    code = use.exit_code
    output = use.output.strip()
    description = use.tool_input.get("description")
    said = _short(description, 90) if isinstance(description, str) and description.strip() else ""
    what, kind = purpose(use)
    label = said or what
    first_line = command.splitlines()[0]
    facts = [f"Command: {_short(first_line, 300)}"]
    facts.append(
        f"Exit code {code}."
        if code is not None
        else ("Interrupted." if use.interrupted else "Exit code not reported.")
    )
    modified = use.modified_paths
    if modified:
        title = _change_title(use, label)
        facts.append("Files changed: " + ", ".join(modified[:10]))
        obs_type = "bugfix" if earlier_failure else "change"
        concepts = ["problem-solution"] if obs_type == "bugfix" else ["what-changed"]
        if use.failed:
            title += " — " + t("failed", purpose=label)
    elif use.failed:
        error = _error_line(use.error + "\n" + output)
        title = (t("tests_failed", tool=what) if kind == "test" else t("failed", purpose=label)) + (
            f": {error}" if error else ""
        )
        if error:
            facts.append(f"Error: {error}")
        obs_type, concepts = "discovery", ["problem-solution"]
    else:
        if not output and kind not in {"test", "commit", "install"}:
            return None  # a silent success (cd, mkdir…) teaches nothing
        last = _short(output.splitlines()[-1], 100) if output else ""
        if kind == "test":
            tally = next(
                (line for line in reversed(output.splitlines()) if _PASS_LINE.search(line)), last
            )
            title = t("tests_passed", tool=what) + (f": {_short(tally, 80)}" if tally else "")
        else:
            title = label + (f": {last}" if last and kind not in {"read"} else "")
        if last:
            facts.append(f"Output ends: {last}")
        obs_type = "change" if kind in {"commit", "install"} else "discovery"
        concepts = ["what-changed"] if obs_type == "change" else ["how-it-works"]
    # The command itself is told in the narrative (and the facts), never in the title.
    narrative = f"{label}. {facts[0]}." + (f" {facts[-1]}" if len(facts) > 2 else "")
    return ParsedObservation(
        type=obs_type,
        title=sanitize(_short(title, 160)),
        subtitle=sanitize(_short(said or what, 160)),
        facts=[sanitize(f) for f in facts],
        narrative=sanitize(narrative),
        concepts=concepts,
        files_modified=modified,
        uses=[use.n],
    )


def looks_like_command(title: str, command: str) -> bool:
    """Does `title` carry the raw command line (the bench's check)? True when it holds the
    command's first line whole, or a cut-off piece of it (12+ characters ending in …)."""
    first = " ".join(command.strip().splitlines()[0].split()) if command.strip() else ""
    if not first or len(first) < 8:
        return False
    flat = " ".join(title.split())
    if first in flat:
        return True
    for piece in re.findall(r"([^:`]{12,})…", flat):
        if first.startswith(piece.strip().strip("`")):
            return True
    try:
        shlex.split(first)
    except ValueError:
        return False
    return f"`{first[:20]}" in flat
