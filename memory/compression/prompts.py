"""What the model is sent: one fixed system prompt (cached) and one message per batch.

Cost shape, and why: claude-mem keeps one observer conversation per session and resends
all of it with every tool use, so its cost grows with the square of the session length.
Here each request is the fixed system prompt (identical bytes every time, so the API's
prompt cache serves it after the first request) plus only the batch at hand, rendered
compactly: Edit/MultiEdit as a unified diff, Write and Read as bounded excerpts, command
output head + tail. Cost grows linearly with tool uses.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from memory import config
from memory.compression.language import language, language_name
from memory.compression.system_prompt import (  # noqa: F401 - re-exported: parse, tests
    CERTAINTIES,
    CONCEPTS,
    OBSERVATION_MAX_TOKENS,
    SUMMARY_MAX_TOKENS,
    SYSTEM_PROMPT,
    TYPES,
    for_language,
)
from memory.compression.tooluse import EDIT_TOOLS, ToolUse, elide, read_digest, sanitize


def system_prompt() -> str:
    """The system prompt in the user's language (CLAUDE_MEM_LANGUAGE)."""
    code = language()
    return for_language(code, language_name(code))


REPAIR_PROMPT = (
    "Your reply could not be used: {reason}. Reply again with only the XML blocks the "
    "instructions describe ({expected}), or with nothing at all. No prose."
)


@dataclass(frozen=True)
class Caps:
    field: int  # any one field (parameters, outcome, diff)
    excerpt: int  # file contents read or written, command output

    @classmethod
    def from_settings(cls) -> Caps:
        settings = config.load()
        field = max(200, config.get_int("CLAUDE_MEM_FIELD_CAP", settings))
        excerpt = max(100, config.get_int("CLAUDE_MEM_EXCERPT_CAP", settings))
        return cls(field=field, excerpt=min(excerpt, field))


def _attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def render_tool_use(use: ToolUse, caps: Caps) -> str:
    """One `<tool_use>` element: the parts of the payload that carry meaning, bounded."""
    status = "failed" if use.failed else "ok"
    parts: list[str] = []
    name = use.name
    if name in {"Edit", "MultiEdit", "str_replace_based_edit_tool"} and use.edits():
        params = use.path
        if use.tool_input.get("replace_all"):
            params += " (replace all)"
        parts.append(f"<parameters>{params}</parameters>")
        parts.append(f"<diff>\n{elide(use.diff(), caps.excerpt * 2)}</diff>")
    elif use.patch_text:
        parts.append(
            f"<parameters>patch of {', '.join(use.modified_paths) or 'files'}</parameters>"
        )
        parts.append(f"<diff>\n{elide(use.patch_text, caps.excerpt * 2)}</diff>")
    elif name in {"Write", "write_file", "NotebookEdit"}:
        content = use.written_content
        kind = "new file" if use.created_file else "whole file written"
        parts.append(
            f"<parameters>{use.path} ({kind}, {content.count(chr(10)) + 1} lines, {len(content)} chars)</parameters>"
        )
        parts.append(f"<excerpt>\n{elide(content, caps.excerpt)}</excerpt>")
    elif name in {"Read", "NotebookRead", "read_file"}:
        extent = use.read_range()
        parts.append(f"<parameters>{use.path}{f' ({extent})' if extent else ''}</parameters>")
    elif name in {"Bash", "shell", "exec_command"}:
        desc = use.tool_input.get("description")
        parts.append(f"<parameters>{elide(use.command, caps.excerpt // 2)}</parameters>")
        if isinstance(desc, str) and desc:
            parts.append(f"<purpose>{elide(desc, 200)}</purpose>")
    elif name in {"Grep", "Glob"}:
        where = use.tool_input.get("path")
        extra = [
            f"{k}={use.tool_input[k]}"
            for k in ("glob", "type", "output_mode", "-i")
            if use.tool_input.get(k)
        ]
        params = f'pattern "{use.tool_input.get("pattern", "")}"' + (
            f" in {use.rel(str(where))}" if where else ""
        )
        parts.append(
            f"<parameters>{elide(params + (' (' + ', '.join(extra) + ')' if extra else ''), 500)}</parameters>"
        )
    else:
        compact = {k: v for k, v in use.tool_input.items() if v not in (None, "", [], {})}
        parts.append(f"<parameters>{elide(_compact_json(compact), caps.excerpt)}</parameters>")

    outcome = _outcome(use, caps)
    if outcome:
        parts.append(f"<outcome>\n{outcome}</outcome>")
    body = "\n".join(parts)
    return sanitize(
        f'<tool_use n="{use.n}" tool="{_attr(name)}" status="{status}">\n{body}\n</tool_use>'
    )


def _outcome(use: ToolUse, caps: Caps) -> str:
    if use.error:
        return elide(use.error, caps.excerpt)
    name = use.name
    if name in EDIT_TOOLS:
        return ""  # the diff is the news; Claude Code's response repeats the whole file
    if name in {"Bash", "shell", "exec_command"}:
        code = use.exit_code
        head = (
            f"exit {code}"
            if code is not None
            else ("interrupted" if use.interrupted else "exit code not reported")
        )
        text = use.output.strip()
        return f"{head}\n{elide(text, caps.excerpt)}" if text else head
    if name in {"Grep", "Glob"} and isinstance(use.response, dict):
        count = use.response.get("numFiles", use.response.get("numMatches"))
        lead = f"{count} files" if count is not None else ""
        filenames = use.response.get("filenames")
        if isinstance(filenames, list) and not use.response.get("content"):
            text = "\n".join(use.rel(str(f)) for f in filenames)
        else:
            text = _relativize(use.output.strip(), use.root)
        return f"{lead}\n{elide(text, caps.excerpt // 2)}".strip()
    if name in {"Read", "NotebookRead", "read_file"}:
        return read_digest(use.output, caps.excerpt)
    return elide(use.output.strip(), caps.excerpt)


def _relativize(text: str, root: str) -> str:
    return text.replace(root.rstrip("/") + "/", "") if root and len(root) > 1 else text


def _compact_json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))


def render_batch(
    *, project: str, uses: Sequence[ToolUse], prompts: dict[int, str], caps: Caps
) -> str:
    """The user message for one batch: each prompt's text once, then its tool uses."""
    lines = [f'<batch project="{_attr(project)}" tool_uses="{len(uses)}">']
    current: int | None = None
    for use in uses:
        if use.prompt_number is not None and use.prompt_number != current:
            current = use.prompt_number
            text = prompts.get(current, "")
            if text:
                lines.append(
                    f'<user_request prompt_number="{current}">{sanitize(elide(text, 1000))}</user_request>'
                )
        lines.append(render_tool_use(use, caps))
    lines.append("</batch>")
    lines.append(
        'Write the observations for this batch now: zero or more <observation uses="…"> blocks, '
        "or an empty reply when nothing is worth keeping."
    )
    return "\n".join(lines)


def render_summary_request(
    *, project: str, request: str, observations: Sequence[str], last_message: str
) -> str:
    lines = [
        "--- MODE SWITCH: PROGRESS SUMMARY ---",
        "Reply with exactly one <summary> block (root tag <summary>); <observation> output is discarded.",
        f'<session project="{_attr(project)}">',
        f"<user_request>{sanitize(elide(request, 2000))}</user_request>",
        "<observations>",
        *(f"- {sanitize(elide(line, 300))}" for line in observations[-40:]),
        "</observations>",
        f"<last_assistant_message>{sanitize(elide(last_message, 3000))}</last_assistant_message>",
        "</session>",
        "Write the <summary> now.",
    ]
    return "\n".join(lines)


def repair_message(*, reason: str, summary: bool) -> str:
    expected = "one <summary> block" if summary else "zero or more <observation> blocks"
    return REPAIR_PROMPT.format(reason=reason, expected=expected)
