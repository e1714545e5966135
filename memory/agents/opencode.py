"""OpenCode payloads (docs/guide/agents/opencode.md) to and from HookEvent.

OpenCode has no command hooks: it loads JavaScript plugins. cmem's plugin
(memory/agents/install/opencode_plugin.js, written by `cmem install --opencode`) hands each
plugin hook to `cmem hook opencode <event>` as one JSON object, keeping OpenCode's own
names: `sessionID`, `tool`, `callID`, `args` ({filePath, offset, limit…}), `output`
({title, output, metadata}). The answer is the plugin's own small shape, which it applies:
`{"context": text}` (a system-prompt part for this session, or text appended to the tool's
output) or `{"deny": reason}` (the plugin throws, which OpenCode turns into the tool's error).
"""

from __future__ import annotations

from typing import Any

from memory.agents.base import HookEvent, HookResult, field_str, parse_common
from memory.agents.translate import ToolMap, mcp_names, tool_translate, tool_use_id

platform = "opencode"

HOOK_EVENT_NAMES = {
    "context": "session.created",
    "session-init": "chat.message",
    "observation": "tool.execute.after",
    "file-context": "tool.execute.before",
    "summarize": "session.idle",
    "session-end": "session.deleted",
}
EVENTS = set(HOOK_EVENT_NAMES)
TOOLS = {
    "read": ToolMap("Read", keys={"filePath": "file_path"}),
    "write": ToolMap("Write", keys={"filePath": "file_path"}),
    "edit": ToolMap(
        "Edit", keys={"filePath": "file_path", "oldString": "old_string", "newString": "new_string"}
    ),
    "bash": ToolMap("Bash"),
}
READ_TOOL = "read"
# OpenCode lists an MCP server's tools as <server>_<tool>.
MCP_PREFIX = "cmem_"


def parse(event: str, data: dict[str, Any]) -> HookEvent:
    args = data.get("args")
    common = {"session_id": data.get("sessionID") or data.get("session_id"), "tool_input": args}
    session_id, tool_input = parse_common(event, common, events=EVENTS)
    agent_tool = field_str(data, "tool")
    tool_name, tool_input, tool_files = tool_translate(TOOLS, agent_tool, tool_input)
    output = data.get("output")
    response = output.get("output") if isinstance(output, dict) else output
    raw = dict(data)
    if agent_tool:
        raw["agent_tool_name"] = agent_tool
    call_id = field_str(data, "callID")
    facts = data.get("cmem_file_facts") or {}
    return HookEvent(
        platform=platform,
        event=event,
        session_id=session_id,
        cwd=field_str(data, "cwd"),
        hook_event_name=field_str(data, "hook_event_name") or HOOK_EVENT_NAMES[event],
        prompt=field_str(data, "prompt"),
        tool_name=tool_name,
        tool_input=tool_input,
        tool_response=response,
        tool_use_id=(
            (call_id or tool_use_id(session_id, agent_tool, args)) if event == "observation" else ""
        ),
        error=field_str(data, "error"),
        agent_id=field_str(data, "agent_id"),
        file_facts=facts if isinstance(facts, dict) else {},
        tool_files=tool_files,
        raw=raw,
    )


def _advice(text: str) -> str:
    return mcp_names(text, prefix=MCP_PREFIX, read_tool=READ_TOOL)


def render(event: HookEvent, result: HookResult) -> dict[str, Any]:
    """The plugin's answer: {"deny": reason}, {"context": text} or {}."""
    gate = result.gate
    if event.event == "file-context" and gate is not None and gate.decision == "deny":
        return {"deny": _advice(gate.reason)}
    context = result.context or (gate.context if gate is not None else "")
    if context and event.event in {"context", "session-init", "observation", "file-context"}:
        return {"context": _advice(context)}
    return {}
