"""Factory Droid payloads (docs/guide/agents/droid.md) to and from HookEvent.

Droid's hooks are Claude Code's in events and shapes (snake_case stdin,
`hookSpecificOutput` out), and its read tool is Claude Code's `Read` with `file_path`; its
shell tool is `Execute` and its file-writing tool `Create`, renamed here. Seen with the real
CLI (0.225.2): the tool payloads carry no `tool_use_id`, so the adapter derives a stable one;
`tool_response` is the text the model got.
"""

from __future__ import annotations

from typing import Any

from memory.agents.base import HookEvent, HookResult
from memory.agents.translate import ToolMap, claude_shaped_output, claude_shaped_parse

platform = "droid"

TOOLS = {
    "Execute": ToolMap("Bash"),
    "Create": ToolMap("Write"),
}
READ_TOOL = "Read"
# Droid lists an MCP server's tools as <server>___<tool> (seen in the model's tool list).
MCP_PREFIX = "cmem___"


def parse(event: str, data: dict[str, Any]) -> HookEvent:
    # Droid numbers no tool use in its hook payloads: the delivery's own fields make one.
    return claude_shaped_parse(
        platform, event, data, tools=TOOLS,
        delivery=lambda session, tool, d: (session, tool, d.get("tool_input"), d.get("tool_response")),
    )  # fmt: skip


def render(event: HookEvent, result: HookResult) -> dict[str, Any]:
    """Droid's JSON output for this event (Claude Code's shape); {} when there is nothing to say."""
    return claude_shaped_output(event, result, prefix=MCP_PREFIX, read_tool=READ_TOOL)
