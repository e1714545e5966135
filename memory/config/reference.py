"""The settings reference as Markdown, made from the registry. It is both
docs/reference/settings.md (`make reference` writes it; a test holds it current) and
the table `cmem settings_table` prints."""

from __future__ import annotations

from memory.config.registry import REGISTRY, SECTION_HELP, SECTION_ORDER
from memory.config.setting import Setting
from memory.config.switches import INTERNAL, INTERNAL_HELP, INTERNAL_SWITCHES

TITLE = "# Settings"
INTRO = """\
<!-- Generated from memory/config/registry.py by `make reference`; do not edit by hand. -->

cmem reads each setting from the environment first, then from `settings.json` in the data dir
(`~/.claude-mem/` unless `CLAUDE_MEM_DATA_DIR` says otherwise), then its default. The settings
page of the web app edits the same file. A number outside its range is clamped to it, and a
value that cannot be read falls back to the default; `cmem doctor` names either."""


def _cell(text: str) -> str:
    # A pipe would end the Markdown cell; `<name>` would be read as an HTML tag.
    return text.replace("|", r"\|").replace("<", "&lt;")


def _default(record: Setting) -> str:
    shown = record.documented_default
    return _cell(f"`{shown}`") if shown else "(empty)"


def _accepts(record: Setting) -> str:
    if record.kind == "int":
        if record.bounds is None:
            return "whole number"
        low, high = record.bounds
        return f"whole number, {low:,}..{high:,}"
    if record.kind == "bool":
        return "true / false"
    if record.kind == "choice":
        return _cell(" / ".join(f"`{choice}`" for choice in record.choices))
    if record.kind == "list":
        return "comma-separated list"
    return "text"


def settings_table(records: tuple[Setting, ...] = REGISTRY) -> list[str]:
    """`| key | default | meaning |`, one row a setting (what `cmem settings_table` prints)."""
    rows = ["| key | default | meaning |", "|---|---|---|"]
    rows += [f"| `{r.key}` | {_default(r)} | {_cell(r.help)} |" for r in records]
    return rows


def _section_table(records: list[Setting]) -> list[str]:
    rows = ["| setting | default | accepts | meaning |", "|---|---|---|---|"]
    for record in records:
        notes = [record.help]
        if record.secret:
            notes.append("Secret: never shown back.")
        if record.locked:
            notes.append("Shown on the settings page, changed only in settings.json or the env.")
        if record.restart:
            notes.append("Read when the worker starts.")
        if record.hidden:
            notes.append("Not on the settings page: set it in settings.json or the env.")
        meaning = " ".join(notes)
        rows.append(
            f"| {_cell(record.label)}<br>`{record.key}` | {_default(record)}"
            f" | {_accepts(record)} | {_cell(meaning)} |"
        )
    return rows


def render() -> str:
    """The whole page, docs/reference/settings.md."""
    lines = [TITLE, "", INTRO, "", "## The settings people change", ""]
    lines += settings_table(tuple(record for record in REGISTRY if record.basic))
    lines += ["", "## Every setting, by what it affects"]
    for title in SECTION_ORDER:
        members = [record for record in REGISTRY if record.section == title]
        if members:
            lines += ["", f"### {title}", "", SECTION_HELP[title], "", *_section_table(members)]
    lines += ["", f"## {INTERNAL}", "", INTERNAL_HELP, ""]
    lines += settings_table(INTERNAL_SWITCHES)
    return "\n".join(lines) + "\n"
