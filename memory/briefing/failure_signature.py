"""What makes two tool failures "the same error": one normalised error line, its key words,
the file it names and the command's program, read from a bounded part of the output.

The error line is picked from the text's tail and head only (`TAIL_CHARS`, `HEAD_CHARS`), so a
tool that printed megabytes costs the same as one that printed a line; every pattern below is
bounded, so the work is linear in what is read. Normalising strips what differs between two
runs of the same failure: ANSI colours, the folders of a path (its file name stays), line and
column numbers, addresses, timestamps, ids and long numbers. What is left is compared as
words, never as a pattern: a recorded note "fixed the same error" when it holds the line's
quoted names and most of its words (`matches`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

TAIL_CHARS = 6000
HEAD_CHARS = 2000
LINE_MAX = 240
# A line that says nothing but this is no signature: every failure of every kind has it.
GENERIC = frozenset(
    [
        "error",
        "errors",
        "exit",
        "code",
        "line",
        "file",
        "files",
        "traceback",
        "recent",
        "call",
        "last",
        "most",
        "stderr",
        "stdout",
        "exception",
        "failed",
        "failure",
        "fatal",
        "the",
        "and",
        "for",
        "with",
        "not",
        "this",
        "that",
        "was",
        "are",
        "has",
        "have",
        "had",
        "from",
        "into",
        "your",
        "you",
        "see",
        "run",
        "ran",
        "when",
        "then",
        "than",
        "but",
        "can",
    ]
)
MAX_TERMS = 8
MIN_TERMS = 2
# Share of the line's words a recorded note must hold (its quoted names always).
MATCH_SHARE = 0.75

_ANSI = re.compile(r"\x1b\[[0-9;?]{0,32}[A-Za-z]")
_EXIT_CODE = re.compile(
    r"^\s{0,8}(?:Exit code:?|exit status|Process exited with code)\s{0,4}(-?\d{1,6})\s*$", re.I
)
# Codex prefixes shell output with these lines (docs/reference/codex-hooks.md).
_CODEX_HEAD = re.compile(r"^(?:Exit code: -?\d{1,6}|Wall time: .{0,40}|Output:)\s*$")
# A test runner's summary of a failed test (pytest's `FAILED tests/x.py::test - why`).
_FAILED_TEST = re.compile(r"^(?:FAILED|FAIL:|--- FAIL:|not ok \d{1,7} -)\s{0,4}\S")
# An exception's name at the start of a line ("ModuleNotFoundError: …", pytest's "E   …" and
# "path:12: AssertionError").
_EXCEPTION = re.compile(
    r"^(?:E\s{1,8}|\S{1,300}:\d{1,7}: )?(?:[A-Za-z_][\w.]{0,120}\.)?"
    r"[A-Z]\w{0,80}(?:Error|Exception|Failure|Interrupt|Exit)\b"
)
_MARKER = re.compile(
    r"\b(?:error(?:\[\w{1,12}\])?|fatal|failed|failure|panic(?:ked)?|cannot|can't|could not|"
    r"unable to|not found|no such|denied|refused|undefined|unresolved|not defined|"
    r"exception|segmentation fault|timed out|assert\w{0,8})\b",
    re.I,
)
_SKIP = re.compile(
    r'^\s{0,16}(?:Traceback \(most recent call last\):|File "[^"]{0,400}", line \d{1,7}|'
    r"at \S{1,300} \(\S{1,400}\)|\^+|~+|-{3,}|={3,}.{0,200}={3,})\s*$"
)
_TIMESTAMP = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"
    r"|\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d{1,9})?\b"
)
_UUID = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{1,32}\b")
_HEX_ID = re.compile(r"\b(?=[0-9a-f]{0,63}\d)(?=[0-9a-f]{0,63}[a-f])[0-9a-f]{8,64}\b")
# A path: its folders go, its last part stays (`/tmp/pytest-12/app/models.py` → `models.py`).
_PATH = re.compile(r"(?<![\w.@+~/\\-])[\w.@+~-]{0,200}(?:[/\\][\w.@+~-]{1,200}){1,64}")
_LINE_NO = re.compile(r"\b(line|lines|col|column|pos|position|offset)\s{0,2}\d{1,9}\b", re.I)
_COLON_NO = re.compile(r"(?<=\S):\d{1,9}(?::\d{1,9})?\b")
_NUMBER = re.compile(r"\b\d{4,}\b|\b\d+\.\d+(?:e-?\d+)?s?\b")
_SPACE = re.compile(r"\s{1,4000}")
_QUOTED = re.compile(r"""['"`‘“]([^'"`’”\s]{2,120})['"`’”]""")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,60}")
_FILE_NAME = re.compile(r"\b[\w.-]{1,120}\.[A-Za-z][A-Za-z0-9]{0,7}\b")


@dataclass(frozen=True)
class Signature:
    """One failure, normalised: `line` is what is compared and shown, `key` names it (the
    once-per-session rule), `terms` its words, `quoted` the names it quotes (a module, a
    symbol, a file: the most telling part), `file` and `program` what it was run on."""

    line: str
    key: str
    terms: tuple[str, ...]
    quoted: tuple[str, ...] = ()
    file: str = ""
    program: str = ""

    @property
    def query(self) -> str:
        """The words to look the line up by (keyword search)."""
        return " ".join(dict.fromkeys([*self.quoted, *self.terms]))


def bounded(text: str) -> str:
    """The part of a tool's output that is read: its head and tail, never the middle of a
    huge one (errors are at the end, and a compiler's first error at the start)."""
    if len(text) <= HEAD_CHARS + TAIL_CHARS:
        return text
    return text[:HEAD_CHARS] + "\n" + text[-TAIL_CHARS:]


def normalise(line: str) -> str:
    """One error line without what differs between two runs of the same failure."""
    line = _ANSI.sub("", line[: LINE_MAX * 4])
    line = _TIMESTAMP.sub("", line)
    line = _UUID.sub("", line)
    line = _ADDRESS.sub("0x?", line)
    line = _PATH.sub(lambda m: _last_part(m.group()), line)
    line = _LINE_NO.sub(lambda m: m.group(1), line)
    line = _COLON_NO.sub("", line)
    line = _HEX_ID.sub("", line)
    line = _NUMBER.sub("N", line)
    line = _SPACE.sub(" ", line).strip(" :-")
    return line[:LINE_MAX]


def _last_part(path: str) -> str:
    parts = [p for p in re.split(r"[/\\]", path) if p]
    return parts[-1] if parts else path


def error_line(text: str, *, known_failure: bool) -> str:
    """The line of `text` that says what went wrong, raw; "" when none does.

    Unless the agent said the tool failed (`known_failure`), the output must say so itself:
    an exit code other than 0 in its first lines, else a failed test or a raised exception
    (a line merely saying "error" may be a log the command printed, not its failure)."""
    strict = False
    if not known_failure:
        code = exit_code(text)
        if code == 0:
            return ""
        strict = code is None
    lines = [ln for ln in _ANSI.sub("", bounded(text)).splitlines() if ln.strip()]
    lines = [ln for ln in lines if not _EXIT_CODE.match(ln) and not _CODEX_HEAD.match(ln)]
    lines = [ln for ln in lines if not _SKIP.match(ln)]
    # A failed test's summary names the test and why; the first is the first to fix.
    for ln in lines:
        if _FAILED_TEST.match(ln.strip()):
            return ln.strip()
    # An exception's name says most: the last one raised is the one that ended the run.
    for ln in reversed(lines):
        if _EXCEPTION.match(ln.strip()):
            return ln.strip()
    if strict:
        return ""
    # Else the first line that says "error", "not found", "denied"…: a compiler's first
    # error is the cause, what follows is fallout.
    for ln in lines:
        if _MARKER.search(ln[: LINE_MAX * 4]):
            return ln.strip()
    if lines:
        return lines[-1].strip()
    return ""


def signature(
    text: str, *, tool_input: Mapping[str, Any] | None = None, known_failure: bool = True
) -> Signature | None:
    """The failure's signature, or None when its text says too little to recognise it again
    ("Killed", a bare exit code): a recall keyed on nothing would match everything."""
    raw = error_line(text, known_failure=known_failure)
    if not raw:
        return None
    line = normalise(raw)
    quoted = tuple(dict.fromkeys(_last_part(q) for q in _QUOTED.findall(line)))[:4]
    words = [w.lower() for w in _WORD.findall(line)]
    terms = tuple(dict.fromkeys(w for w in words if w not in GENERIC))[:MAX_TERMS]
    if len(terms) < MIN_TERMS:
        return None
    tool_input = tool_input or {}
    return Signature(
        line=line,
        key=hashlib.sha256(line.lower().encode()).hexdigest()[:16],
        terms=terms,
        quoted=quoted,
        file=_file_of(tool_input, line),
        program=program_of(tool_input),
    )


def _file_of(tool_input: Mapping[str, Any], line: str) -> str:
    """The file the failure concerns: the tool's own `file_path`, else one the line names."""
    for key in ("file_path", "notebook_path", "path"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return _last_part(value)
    found = _FILE_NAME.search(line)
    return found.group() if found else ""


def program_of(tool_input: Mapping[str, Any]) -> str:
    """The program a shell command runs (`pytest`, `npm`, `python3`), past `cd …&&` and
    `VAR=value` prefixes; "" for a tool that runs no command."""
    command = tool_input.get("command")
    if not isinstance(command, str):
        return ""
    command = command[:2000].split("&&")[-1].split(";")[0]
    for word in command.split():
        if "=" in word and not word.startswith(("-", "/", ".")):
            continue
        if word in {"sudo", "env", "time", "exec", "uv", "poetry", "npx"}:
            continue
        return _last_part(word)[:60]
    return ""


def matches(signature: Signature, text: str) -> float:
    """How well a recorded note's text holds the failure: 0 when it misses one of the
    line's quoted names or holds less than MATCH_SHARE of its words, else the share held."""
    folded = text.lower()
    if any(q.lower() not in folded for q in signature.quoted):
        return 0.0
    held = sum(1 for term in signature.terms if term in folded)
    share = held / len(signature.terms)
    return share if share >= MATCH_SHARE else 0.0


def failure_text(*, error: str, tool_response: Any) -> str:
    """What a failed tool use said: the agent's `error` (Claude Code's PostToolUseFailure),
    else its output (Codex sends the output only, as a string; Bash's is stdout and stderr)."""
    if error:
        return error
    if isinstance(tool_response, str):
        return tool_response
    if isinstance(tool_response, Mapping):
        parts = [tool_response.get(k) for k in ("stderr", "stdout", "output", "error")]
        return "\n".join(p for p in parts if isinstance(p, str) and p)
    return ""


def exit_code(text: str) -> int | None:
    """The exit code a shell tool's output reports in its first lines, if any."""
    for ln in text[:400].splitlines()[:3]:
        found = _EXIT_CODE.match(ln)
        if found:
            return int(found.group(1))
    return None
