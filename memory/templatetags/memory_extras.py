"""Formatting helpers for templates: type icons, durations, token counts, short paths."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

from django import template
from django.urls import reverse
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from memory import config
from memory.briefing.gate_policy import gate_mode_words
from memory.briefing.savings import net_words
from memory.briefing.savings import usd as dollars
from memory.config.registry import setting_label
from memory.dashboard.feed import feed_sort_key
from memory.team.auth import token_required

register = template.Library()

# One letter on a coloured disc per type (colours in cmem.css): no emoji font needed,
# which many Linux desktops and every headless browser lack.
TYPE_LETTERS = {
    "bugfix": "B",
    "feature": "F",
    "refactor": "R",
    "change": "C",
    "discovery": "D",
    "decision": "⚖",
    "security_alert": "!",
    "security_note": "S",
    "sensitive": "✱",
}


@register.filter
def type_icon(obs_type: str) -> str:
    return TYPE_LETTERS.get(obs_type, "•")


@register.filter
def extension(name: str) -> str:
    """`report.html` → `HTML`: the badge on a deliverable."""
    base = str(name).rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[-1][:4].upper() if "." in base.strip(".") else "FILE"


@register.filter
def duration(value: timedelta | None) -> str:
    """`42s`, `3m 05s`, `1h 12m`: compact, for request cards."""
    if value is None:
        return ""
    seconds = int(value.total_seconds())
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


@register.filter
def usd(value: float | None) -> str:
    """Dollars readable at every size ($0.0042, $0.42, $12.40), a minus sign when negative."""
    return dollars(float(value or 0.0))


_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_SETTING = re.compile(r"\b(CLAUDE_MEM_[A-Z0-9_]+)(?:=([^\s,;:)]*))?")


def _setting_words(match: re.Match[str]) -> str:
    key, value = match.group(1), match.group(2)
    try:
        label = setting_label(key)
    except KeyError:
        return match.group(0)
    if value is None:
        return f"the “{label}” setting"
    return f"the “{label}” setting is {value or 'empty'}"


@register.filter
def prose(text: str | None) -> SafeString:
    """Text written for the terminal (service notes, provider reasons, setting help) on a
    page: each `command` becomes <code>command</code> and a raw CLAUDE_MEM_* key its label,
    so no literal backtick or key reaches the reader of a basic page."""
    # Safe: the text is escaped first; only <code> tags and label words are added after.
    escaped = _SETTING.sub(_setting_words, str(escape(text or "")))
    return mark_safe(_CODE_SPAN.sub(r"<code>\1</code>", escaped).replace("`", ""))


@register.simple_tag
def admin_login_hint() -> dict[str, object]:
    """What the admin's login form says about its password: the file `cmem setup` wrote
    (memory/management/commands/ensure_admin.py) when there is one, else how to set one;
    staff accounts in team mode."""
    password_file = config.data_dir() / "admin-password"
    return {
        "team": token_required(),
        "user": "admin",
        "password_file": str(password_file) if password_file.exists() else "",
    }


@register.filter
def net_usd(value: float | None) -> str:
    """`+$0.012 saved` / `−$0.012 cost`: the sign and the word agree (Stats, session page)."""
    return net_words(float(value or 0.0))


@register.filter
def gate_words(mode: str) -> str:
    """What a read-gate mode does, in words ("refuses full re-reads of files it already knows…")."""
    return gate_mode_words(mode)


@register.filter
def tokens(value: int | None) -> str:
    """12,345 → `12.3k`; millions as `1.2M`."""
    n = int(value or 0)
    if abs(n) >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if abs(n) >= 10_000:
        return f"{n / 1000:.0f}k"
    if abs(n) >= 1000:
        return f"{n / 1000:.1f}k"
    return str(n)


@register.filter
def basename(path: str) -> str:
    return str(path).rstrip("/").rsplit("/", 1)[-1]


@register.filter
def as_list(value: Any) -> list[Any]:
    """JSON list fields may hold anything a model produced; show only a list of scalars."""
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str | int | float)]
    return []


@register.filter
def get_item(mapping: dict[str, Any], key: str) -> Any:
    return mapping.get(key)


@register.filter
def get_field(form: Any, name: str) -> Any:
    """The bound field `name` of a form whose fields are built at runtime (settings)."""
    return form[name]


@register.simple_tag(takes_context=True)
def query_with(context: template.Context, **changes: Any) -> str:
    """The current query string with some parameters replaced (pagination links keep filters)."""
    params = context["request"].GET.copy()
    for key, value in changes.items():
        if value in (None, ""):
            params.pop(key, None)
        else:
            params[key] = value
    encoded = params.urlencode()
    return f"?{encoded}" if encoded else "?"


@register.simple_tag
def marked(text: str, spans: Iterable[tuple[int, int]]) -> SafeString:
    """`text` escaped, with each [start, end) span of it in <mark> (search matches)."""
    out: list[str] = []
    at = 0
    for start, end in sorted(spans):
        if start < at or end > len(text):
            continue  # overlapping or out of range: never cut the text wrongly
        out += [escape(text[at:start]), "<mark>", escape(text[start:end]), "</mark>"]
        at = end
    out.append(escape(text[at:]))
    return mark_safe("".join(out))


@register.simple_tag
def file_url(project: str, path: str) -> str:
    """The file page of `path` in `project` (both escaped by reverse/urlencode)."""
    return reverse("memory-file", args=[project or "unknown"]) + "?" + urlencode({"path": path})


@register.simple_tag
def file_link(project: str, path: str, label: str = "", css: str = "file-link") -> SafeString:
    """An <a> to the file page; the text is `label` or the path, always escaped."""
    return format_html(
        '<a class="{}" href="{}" title="{}">{}</a>',
        css,
        file_url(project, path),
        path,
        label or path,
    )


@register.filter
def feed_sort(item: Any) -> str:
    """A feed item's order inside its session block, as a sortable string (memory.dashboard.feed)."""
    return feed_sort_key(item)
