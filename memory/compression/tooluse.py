"""One captured tool use, read out of an Event payload: what both compressors need.

Payloads are the hook's own JSON (Claude Code or Codex), so the same fact sits under
different keys per tool and platform; this module is the one place that knows them. The
file evidence here (paths an edit touched, paths a Read returned) is what gets stored as
`files_modified` / `files_read`, whatever the model says.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memory.compression.shellwrites import shell_changes
from memory.projects import relative_path, remote_request

EDIT_TOOLS = {
    "Edit",
    "MultiEdit",
    "Write",
    "NotebookEdit",
    "write_file",
    "apply_patch",
    "str_replace_based_edit_tool",
}
READ_TOOLS = {"Read", "NotebookRead", "read_file"}
SEARCH_TOOLS = {"Grep", "Glob", "LS", "WebSearch", "WebFetch", "ToolSearch"}
_PATH_KEYS = ("file_path", "filePath", "notebook_path", "path")
_PATCH_HEADER = re.compile(
    r"^(?:\*\*\* (?:Update|Add|Delete) File: |\*\*\* Move to: |\+\+\+ b/)(.+?)\s*$", re.M
)
SHELL_TOOLS = {"Bash", "shell", "exec_command", "BashOutput"}
_FAILURE_OUTPUT = re.compile(
    r"(?i)(no such file or directory|command not found|permission denied|traceback \(most recent call last\)|^\w*error:|^fatal:|\bfailed\b)",
    re.M,
)
_EXIT_CODE = re.compile(r"(?i)exit code:?\s*(-?\d+)")

# Tags removed with their content before anything reaches a request (capture strips them
# too; this is the second, defensive pass).
_PRIVATE_TAGS = re.compile(
    r"<(private|claude-mem-context|system_instruction|system-instruction|persisted-output|system-reminder)\b[^>]*>.*?</\1\s*>",
    re.S,
)
_UNCLOSED_PRIVATE = re.compile(r"<private\b[^>]*>.*", re.S)
_SECRETS = [
    re.compile(
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.S
    ),
    re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{10,}"),
    re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_\-]{20,}"),
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}\b"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}\b"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"),
    re.compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),
]
_ASSIGNED_SECRET = re.compile(
    r"(?i)\b([A-Z0-9_]*(?:password|passwd|secret|token|api[_-]?key|access[_-]?key)[A-Z0-9_]*)(\s*[:=]\s*[\"']?)([^\s\"']{6,})"
)


def sanitize(text: str) -> str:
    """Private tags and secret-shaped strings out, whatever capture already did."""
    if not text:
        return text
    text = _PRIVATE_TAGS.sub("", text)
    text = _UNCLOSED_PRIVATE.sub("", text)
    for pattern in _SECRETS:
        text = pattern.sub("[redacted]", text)
    text = _ASSIGNED_SECRET.sub(lambda m: f"{m.group(1)}{m.group(2)}[redacted]", text)
    return _privacy_pass(text)


def _privacy_pass(text: str) -> str:
    try:
        # guarded: if privacy cannot be imported, the text goes on unscrubbed rather than lost
        from memory.privacy import redaction
    except ImportError:
        return text
    try:
        return redaction.redact_text(redaction.strip_tags(text))
    except Exception:  # noqa: BLE001 - the local pass above already ran
        return text


def elide(text: str, cap: int) -> str:
    """Keep the first 60% and the last 30% of `cap`, with claude-mem's elision marker between.
    Cuts move to a line break when one is near, so no line is torn in two."""
    if cap <= 0 or len(text) <= cap:
        return text
    head, tail = int(cap * 0.6), int(cap * 0.3)
    head_end = text.rfind("\n", int(head * 0.8), head)
    head_end = head_end + 1 if head_end >= 0 else head
    tail_start = text.find("\n", len(text) - tail, len(text) - int(tail * 0.8))
    tail_start = tail_start + 1 if tail_start >= 0 else len(text) - tail
    cut = tail_start - head_end
    return f'{text[:head_end]}… <elided chars="{cut}" original_size_chars="{len(text)}" /> …\n{text[tail_start:]}'


_OUTLINE = re.compile(
    r"^\s*(?:export\s+)?(?:async\s+def|def|class|function|func|fn|interface|struct|impl|module)\s+\w+"
)


def read_digest(content: str, cap: int) -> str:
    """A file's content for the model: whole when small; else its head and an outline of its
    definitions (with line numbers), which say more per character than its tail."""
    if cap <= 0 or len(content) <= cap:
        return content
    lines = content.splitlines()
    outline = [f"{i + 1}: {line.strip()}" for i, line in enumerate(lines) if _OUTLINE.match(line)]
    if not outline:
        return elide(content, cap)
    outline_text = elide("\n".join(outline), int(cap * 0.4))
    head_cap = cap - len(outline_text)
    head_end = content.rfind("\n", int(head_cap * 0.8), head_cap)
    head_end = head_end + 1 if head_end >= 0 else head_cap
    rest = len(content) - head_end
    return (
        f'{content[:head_end]}… <elided chars="{rest}" original_size_chars="{len(content)}" /> …\n'
        f"<outline>\n{outline_text}\n</outline>"
    )


def unified_diff(old: str, new: str, path: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}", n=2
    )
    out = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return out


@dataclass
class ToolUse:
    """A tool use of one Event, with its position `n` in the batch (the id the model cites)."""

    n: int
    event_pk: int
    name: str
    tool_input: dict[str, Any]
    response: Any
    error: str
    root: str
    created: datetime | None = None
    prompt_number: int | None = None
    files: list[dict[str, Any]] = field(default_factory=list)
    # Files a later Read/Edit showed changed by this shell command (see hash_changes).
    extra_modified: list[str] = field(default_factory=list)

    @classmethod
    def from_event(cls, event: Any, *, n: int, root: str) -> ToolUse:
        payload = event.payload if isinstance(event.payload, dict) else {}
        tool_input = payload.get("tool_input")
        if not isinstance(tool_input, dict):
            tool_input = {"input": tool_input} if tool_input else {}
        error = payload.get("error") or ""
        if not error and payload.get("hook_event_name") == "PostToolUseFailure":
            error = "the tool failed"
        files = payload.get("cmem_files")
        return cls(
            n=n,
            event_pk=event.pk,
            name=event.tool_name or str(payload.get("tool_name", "")),
            tool_input=tool_input,
            response=payload.get("tool_response"),
            error=str(error),
            root=root or str(payload.get("cwd") or ""),
            created=event.created,
            prompt_number=event.prompt_number,
            files=[f for f in files if isinstance(f, dict)] if isinstance(files, list) else [],
        )

    # -- facts ------------------------------------------------------------------------------
    @property
    def failed(self) -> bool:
        if self.error:
            return True
        code = self.exit_code
        if code is None and self.name in SHELL_TOOLS and not self.interrupted:
            # No exit code reported: judge by the output's last lines.
            tail = "\n".join(self.output.strip().splitlines()[-5:])
            return bool(_FAILURE_OUTPUT.search(tail))
        return code is not None and code != 0

    def rel(self, path: str) -> str:
        return relative_path(path, self.root) if path else path

    def _input_paths(self) -> list[str]:
        found: list[str] = []
        for key in _PATH_KEYS:
            value = self.tool_input.get(key)
            if isinstance(value, str) and value:
                found.append(value)
        paths = self.tool_input.get("filePaths")
        if isinstance(paths, list):
            found.extend(p for p in paths if isinstance(p, str))
        edits = self.tool_input.get("edits")
        if isinstance(edits, list):
            for edit in edits:
                if isinstance(edit, dict):
                    found.extend(str(edit[k]) for k in _PATH_KEYS if isinstance(edit.get(k), str))
        if self.name == "apply_patch" or "*** Begin Patch" in self.patch_text:
            found.extend(m.group(1) for m in _PATCH_HEADER.finditer(self.patch_text))
        return found

    @property
    def patch_text(self) -> str:
        for key in ("command", "patch", "input"):
            value = self.tool_input.get(key)
            if isinstance(value, str) and ("*** Begin Patch" in value or value.startswith("--- ")):
                return value
        return ""

    @property
    def modified_paths(self) -> list[str]:
        """Project-relative paths the tool's own input says it changed (never the model's word)."""
        if self.name in SHELL_TOOLS and not self.patch_text:
            return self.shell_modified_paths
        if self.name not in EDIT_TOOLS and not (
            self.name in {"Bash", "shell", "exec_command"} and self.patch_text
        ):
            return []
        if self.error:
            return []
        paths = [self.rel(p) for p in self._input_paths()]
        paths += [
            str(f.get("path") or self.rel(str(f.get("abs", ""))))
            for f in self.files
            if f.get("role") == "modified"
        ]
        return _unique(p for p in paths if p)

    @property
    def shell_modified_paths(self) -> list[str]:
        """Files a shell command wrote (redirections, sed -i, mv, formatters…; shellwrites),
        plus those a later file hash showed it changed. A redirection happens before the
        command runs, so it counts even when the command then failed."""
        paths: list[str] = []
        failed = self.failed
        for change in shell_changes(self.command):
            if failed and change.tool:  # a failed `sed -i` or `mv` changed nothing we know of
                continue
            targets = change.paths or (self.patch_targets() if change.kind == "patched" else [])
            paths += [self.rel(p) for p in targets]
        return _unique(p for p in [*paths, *self.extra_modified] if p)

    def shell_change_kinds(self) -> list[tuple[str, list[str], str]]:
        return [
            (c.kind, [self.rel(p) for p in c.paths] or self.patch_targets(), c.tool)
            for c in shell_changes(self.command)
        ]

    def patch_targets(self) -> list[str]:
        """The files a `git apply x.patch` / `patch < x.diff` touched, from the patch file
        when it is still in the project (bounded read)."""
        match = re.search(r"(?:^|\s|<)\s*([^\s<>|;&]+\.(?:patch|diff))\b", self.command)
        if not match or not self.root:
            return []

        if remote_request():
            return []  # team mode: the patch file is on the client's disk, not this server's

        target = Path(match.group(1))
        target = target if target.is_absolute() else Path(self.root) / target
        try:
            text = target.read_text(errors="replace")[:200_000]
        except OSError:
            return []
        return _unique(
            self.rel(m.group(1))
            for m in re.finditer(r"^\+\+\+ (?:b/)?(\S+)", text, re.M)
            if m.group(1) != "/dev/null"
        )

    @property
    def read_paths(self) -> list[str]:
        if self.name not in READ_TOOLS or self.error:
            return []
        paths = [self.rel(p) for p in self._input_paths()]
        paths += [
            str(f.get("path") or self.rel(str(f.get("abs", ""))))
            for f in self.files
            if f.get("role") == "read"
        ]
        return _unique(p for p in paths if p)

    def file_hashes(self) -> dict[str, str]:
        """path -> sha256 from the capture's file facts (`Event.payload["cmem_files"]`)."""
        out: dict[str, str] = {}
        for f in self.files:
            path = str(f.get("path") or self.rel(str(f.get("abs", ""))))
            if path and f.get("sha256"):
                out[path] = str(f["sha256"])
        return out

    @property
    def path(self) -> str:
        paths = self._input_paths()
        return self.rel(paths[0]) if paths else ""

    @property
    def command(self) -> str:
        value = self.tool_input.get("command") or self.tool_input.get("cmd") or ""
        if isinstance(value, list):
            value = " ".join(str(v) for v in value)
        return str(value)

    @property
    def exit_code(self) -> int | None:
        """The command's exit code; None when interrupted or not reported (Codex sends
        only the output of a command)."""
        if self.name not in SHELL_TOOLS:
            return None
        for text in (self.error, self.response if isinstance(self.response, str) else ""):
            match = _EXIT_CODE.search(text or "")
            if match:
                return int(match.group(1))
        if self.error:
            return 1
        if isinstance(self.response, dict):
            for key in ("exit_code", "exitCode", "returncode"):
                if isinstance(self.response.get(key), int):
                    return int(self.response[key])
            return None if self.response.get("interrupted") else 0
        return None

    @property
    def interrupted(self) -> bool:
        return isinstance(self.response, dict) and bool(self.response.get("interrupted"))

    @property
    def output(self) -> str:
        """The tool's textual output (stdout + stderr, file content, search results)."""
        response = self.response
        if isinstance(response, str):
            return response
        if isinstance(response, dict):
            if isinstance(response.get("file"), dict):
                return str(response["file"].get("content", ""))
            keys = [k for k in ("stdout", "stderr", "content", "output", "result") if k in response]
            if keys:
                return "\n".join(str(response[k]) for k in keys if response[k])
            if isinstance(response.get("filenames"), list):
                return "\n".join(str(f) for f in response["filenames"])
            return json.dumps(response, ensure_ascii=False, default=str)
        if isinstance(response, list):
            texts = [
                b.get("text", "")
                for b in response
                if isinstance(b, dict) and b.get("type") == "text"
            ]
            return (
                "\n".join(texts) if texts else json.dumps(response, ensure_ascii=False, default=str)
            )
        return "" if response is None else str(response)

    @property
    def stderr(self) -> str:
        if isinstance(self.response, dict):
            return str(self.response.get("stderr") or "")
        return ""

    def edits(self) -> list[tuple[str, str]]:
        """(old, new) pairs of an Edit / MultiEdit / str_replace."""
        if isinstance(self.tool_input.get("edits"), list):
            return [
                (str(e.get("old_string", "")), str(e.get("new_string", "")))
                for e in self.tool_input["edits"]
                if isinstance(e, dict)
            ]
        if "old_string" in self.tool_input or "new_string" in self.tool_input:
            return [
                (
                    str(self.tool_input.get("old_string", "")),
                    str(self.tool_input.get("new_string", "")),
                )
            ]
        if "old_str" in self.tool_input:
            return [
                (str(self.tool_input.get("old_str", "")), str(self.tool_input.get("new_str", "")))
            ]
        return []

    def diff(self) -> str:
        if self.patch_text:
            return self.patch_text
        return "".join(unified_diff(old, new, self.path or "file") for old, new in self.edits())

    @property
    def written_content(self) -> str:
        for key in ("content", "new_source", "file_text"):
            value = self.tool_input.get(key)
            if isinstance(value, str):
                return value
        return ""

    @property
    def created_file(self) -> bool:
        return isinstance(self.response, dict) and self.response.get("type") == "create"

    def read_range(self) -> str:
        """'lines 5-7 of 31' for a partial Read, '' for a whole file."""
        if not isinstance(self.response, dict) or not isinstance(self.response.get("file"), dict):
            return ""
        info = self.response["file"]
        start, num, total = info.get("startLine"), info.get("numLines"), info.get("totalLines")
        if isinstance(start, int) and isinstance(num, int) and isinstance(total, int):
            if start <= 1 and num >= total - 1:
                return f"{total} lines"
            return f"lines {start}-{start + num - 1} of {total}"
        return ""


def _unique(items: Any) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return list(seen)


def hash_changes(
    uses: list[ToolUse], prior: dict[str, tuple[str, datetime | None]] | None = None
) -> list[tuple[ToolUse, str, datetime | None]]:
    """A file whose hash changed between two tool uses, with no edit of it in between, was
    changed by the shell command(s) that ran in between: record it on the last of them
    (`extra_modified`), so a change made by an unrecognised command still counts.

    Only a read's hash reveals a change (an Edit's hash is taken after the edit, so it tells
    the new state, not the one before). `prior` holds the last hash known from before this
    batch (earlier batches and sessions, hash_evidence.prior_hashes); a read that differs
    from it with no shell command of this batch before it is returned as (use, path, since:
    when the last known hash was taken), for the caller to blame an earlier batch's command
    or an outside change."""
    last: dict[str, str] = {path: digest for path, (digest, _) in (prior or {}).items()}
    seen_at: dict[str, datetime | None] = {path: at for path, (_, at) in (prior or {}).items()}
    shell_since: dict[str, ToolUse | None] = {}
    unexplained: list[tuple[ToolUse, str, datetime | None]] = []
    for use in uses:
        reads = {str(f.get("path") or use.rel(str(f.get("abs", "")))) for f in use.files} - set(
            use.modified_paths
        )
        for path, digest in use.file_hashes().items():
            before = last.get(path)
            culprit = shell_since.get(path)
            if path in reads and before and digest != before:
                if culprit is None:
                    unexplained.append((use, path, seen_at.get(path)))
                elif path not in culprit.modified_paths:
                    culprit.extra_modified.append(path)
            last[path] = digest
            seen_at[path] = use.created
            shell_since[path] = None
        if use.name in SHELL_TOOLS:
            for path in last:
                shell_since[path] = use
        for path in use.modified_paths:
            if use.name not in SHELL_TOOLS:
                shell_since[path] = None
    return unexplained
