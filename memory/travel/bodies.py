"""The body of each Markdown file, written and read back: one pair per kind.

The front matter holds every field a program sets; the body holds the text a person reads
and edits (an observation's title, subtitle, facts and narrative, a summary's sections, a
session's prompts). Each `*_body` writer has a `*_read` reader that inverts it exactly on
anything the writer produces, and reads a hand-edited body leniently (headings and list
markers are what it goes by). Everything under `LINKS_MARKER` is made on export from the
other rows (wikilinks for Obsidian) and ignored on import.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# An Obsidian comment (hidden in its reading view) that starts the generated part.
LINKS_MARKER = "%% cmem: the links below are made on export; an import ignores them %%"
SUMMARY_SECTIONS = (
    ("request", "Request"),
    ("investigated", "Investigated"),
    ("learned", "Learned"),
    ("completed", "Completed"),
    ("next_steps", "Next steps"),
    ("notes", "Notes"),
)
_PROMPT_RE = re.compile(r"^### Prompt (\d{1,9}) · (\S+)$")


def one_line(text: str) -> str:
    return " ".join(text.split())


def link(stem: str, label: str) -> str:
    """An Obsidian wikilink with a readable label ([, ] and | would end it early)."""
    label = one_line(re.sub(r"[\[\]|#^]", " ", label))[:80] or stem
    return f"[[{stem}|{label}]]"


def with_links(body: str, links: Iterable[str]) -> str:
    items = list(links)
    if not items:
        return body
    head = body.rstrip("\n") + "\n\n"
    return head + LINKS_MARKER + "\n## Links\n\n" + "".join(f"- {i}\n" for i in items)


def _own_part(body: str) -> str:
    cut = body.rfind(LINKS_MARKER)
    if cut >= 0 and (cut == 0 or body[cut - 1] == "\n"):
        body = body[:cut]
    return body


def _safe(text: str) -> str:
    """Text with the marker line defused: a memory quoting it must not cut its own body."""
    return text.replace(LINKS_MARKER, LINKS_MARKER.replace("%% cmem:", "%% cmem (quoted):"))


def _section(heading: str, text: str) -> str:
    return f"## {heading}\n\n{_safe(text)}\n\n" if text else ""


# --- observations -----------------------------------------------------------------------


def observation_body(fields: dict[str, Any]) -> str:
    """# title, the subtitle as a quote, ## Facts as a list, ## Narrative."""
    out = [f"# {one_line(fields['title'])}\n\n"]
    subtitle = fields["subtitle"].strip()
    if subtitle:
        lines = _safe(subtitle).split("\n")
        out.append("".join(f"> {line}\n" if line else ">\n" for line in lines))
        out.append("\n")
    facts = [f.strip() for f in fields["facts"] if f.strip()]
    if facts:
        out.append("## Facts\n\n")
        for fact in facts:
            first, *rest = fact.split("\n")
            out.append(f"- {_safe(first)}\n" + "".join(f"  {_safe(line)}\n" for line in rest))
        out.append("\n")
    out.append(_section("Narrative", fields["narrative"].strip()))
    return "".join(out)


def observation_read(body: str) -> dict[str, Any]:
    """title, subtitle, facts and narrative from a body `observation_body` wrote (or a
    person edited); ValueError when it has no title heading."""
    lines = _own_part(body).split("\n")
    i, n = 0, len(lines)
    while i < n and not lines[i].strip():
        i += 1
    if i == n or not (lines[i] == "#" or lines[i].startswith("# ")):
        raise ValueError("the body does not start with a title (a line `# Title`)")
    title = lines[i][2:].strip()
    i += 1
    subtitle: list[str] = []
    while i < n and (not lines[i].strip() and not subtitle):
        i += 1
    while i < n and lines[i].startswith(">"):
        subtitle.append(lines[i][2:] if lines[i].startswith("> ") else lines[i][1:])
        i += 1
    facts: list[str] = []
    narrative: list[str] = []
    section = ""
    for line in lines[i:]:
        if line.rstrip() in ("## Facts", "## Narrative") and section != "## Narrative":
            section = line.rstrip()
        elif section == "## Facts":
            if line.startswith(("- ", "* ")):
                facts.append(line[2:])
            elif line.strip() and facts:
                facts[-1] += "\n" + (line[2:] if line.startswith("  ") else line.strip())
            elif line.strip():
                facts.append(line.strip())
        else:
            # A hand-written body without headings: what follows the title is the narrative.
            narrative.append(line)
    return {
        "title": title,
        "subtitle": "\n".join(subtitle).strip(),
        "facts": [f.strip() for f in facts if f.strip()],
        "narrative": "\n".join(narrative).strip(),
    }


# --- summaries --------------------------------------------------------------------------


def summary_body(fields: dict[str, Any]) -> str:
    heading = one_line(fields["request"])[:100] or "Session summary"
    return f"# Summary: {heading}\n\n" + "".join(
        _section(label, fields[name].strip()) for name, label in SUMMARY_SECTIONS
    )


def summary_read(body: str) -> dict[str, str]:
    """Each section's text; a section a heading does not open is empty. The title line is
    made from the request and not read."""
    parts: dict[str, list[str]] = {name: [] for name, _ in SUMMARY_SECTIONS}
    order = {f"## {label}": index for index, (_, label) in enumerate(SUMMARY_SECTIONS)}
    current = -1
    for line in _own_part(body).split("\n"):
        index = order.get(line.rstrip(), -1)
        if index > current:  # headings come in order, so a repeated one is text
            current = index
        elif current >= 0:
            parts[SUMMARY_SECTIONS[current][0]].append(line)
    return {name: "\n".join(lines).strip() for name, lines in parts.items()}


# --- sessions ---------------------------------------------------------------------------


def session_body(title: str, prompts: list[tuple[int, str, str]]) -> str:
    """# title, then ## Prompts: `### Prompt N · time` and the prompt's text."""
    out = [f"# {one_line(title)}\n\n"]
    if prompts:
        out.append("## Prompts\n\n")
        for number, when, text in prompts:
            out.append(f"### Prompt {number} · {when}\n\n")
            if text.strip():
                out.append(f"{_safe(text.strip())}\n\n")
    return "".join(out)


def session_read(body: str) -> list[tuple[int, str, str]]:
    """(number, time text, text) of each prompt."""
    prompts: list[tuple[int, str, list[str]]] = []
    for line in _own_part(body).split("\n"):
        match = _PROMPT_RE.match(line.rstrip())
        if match:
            prompts.append((int(match[1]), match[2], []))
        elif prompts:
            prompts[-1][2].append(line)
    return [(number, when, "\n".join(text).strip()) for number, when, text in prompts]
