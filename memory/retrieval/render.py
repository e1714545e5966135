"""One observation's body as plain text: what `cmem show` and the MCP `get_observations` share
(subtitle, narrative, facts, then the file and concept lines)."""

from __future__ import annotations

from typing import Any

FIELD_LABELS = (("read", "files_read"), ("modified", "files_modified"), ("concepts", "concepts"))


def observation_body(obs: dict[str, Any], *, capitalise: bool = False) -> list[str]:
    """The lines below an observation's heading; labels capitalised for the MCP text."""
    lines: list[str] = []
    if obs.get("subtitle"):
        lines.append(obs["subtitle"])
    if obs.get("narrative"):
        lines += ["", obs["narrative"]]
    if obs.get("facts"):
        lines += ["", *[f"- {fact}" for fact in obs["facts"]]]
    for label, key in FIELD_LABELS:
        if obs.get(key):
            shown = label.capitalize() if capitalise else label
            lines.append(f"{shown}: {', '.join(map(str, obs[key]))}")
    return lines
