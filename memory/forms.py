"""Forms of the web app: the feed filters, My Work filters and the settings editor."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from django import forms

from memory import config
from memory.models import Observation
from memory.settings_labels import SECTION_HELP, SECTION_ORDER, section_for, setting_label

DATE_INPUT = forms.DateInput(attrs={"type": "date"})


class FeedFilterForm(forms.Form):
    project = forms.CharField(required=False, max_length=200)
    type = forms.ChoiceField(required=False, choices=[("", "All types"), *Observation.Type.choices])
    kind = forms.ChoiceField(
        required=False,
        choices=[
            ("", "Everything"),
            ("prompt", "Prompts"),
            ("observation", "Observations"),
            ("summary", "Summaries"),
        ],
    )
    q = forms.CharField(required=False, max_length=200, label="Text")
    date_from = forms.DateField(required=False, widget=DATE_INPUT, label="From")
    date_to = forms.DateField(required=False, widget=DATE_INPUT, label="To")
    platform = forms.ChoiceField(
        required=False,
        choices=[("", "All agents"), ("claude-code", "Claude Code"), ("codex", "Codex")],
    )


class SearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=200, label="Search")
    project = forms.CharField(required=False, max_length=200)
    kind = forms.ChoiceField(
        required=False,
        choices=[
            ("", "Everything"),
            ("observation", "Observations"),
            ("summary", "Summaries"),
            ("prompt", "Prompts"),
        ],
    )
    type = forms.ChoiceField(required=False, choices=[("", "All types"), *Observation.Type.choices])
    mode = forms.ChoiceField(
        required=False,
        choices=[
            ("hybrid", "Words and meaning"),
            ("keyword", "Words only"),
            ("semantic", "Meaning only"),
        ],
    )


class StatsForm(forms.Form):
    days = forms.TypedChoiceField(
        required=False,
        coerce=int,
        choices=[(7, "7 days"), (30, "30 days"), (90, "90 days")],
        empty_value=None,
    )
    project = forms.CharField(required=False, max_length=200)


# --- settings -------------------------------------------------------------------------

# Whole-number settings and their allowed range: the bounds memory.config clamps to, so the
# form refuses exactly what the readers would clamp.
INT_RANGES: dict[str, tuple[int, int | None]] = dict(config.INT_BOUNDS)
CHOICES: dict[str, list[str]] = {
    "CLAUDE_MEM_LOG_LEVEL": ["DEBUG", "INFO", "WARN", "ERROR", "SILENT"],
    "CLAUDE_MEM_COMPRESSOR": ["auto", "api", "offline"],
    "CLAUDE_MEM_PROVIDER": [
        "auto",
        "claude",
        "anthropic",
        "openrouter",
        "gemini",
        "openai-compatible",
        "offline",
    ],
    "CLAUDE_MEM_READ_GATE": ["adaptive", "deny", "context", "off"],
    "CLAUDE_MEM_BILLING": ["auto", "api", "subscription"],
    "CLAUDE_MEM_PROJECT_IDENTITY": ["auto", "local", "remote"],
}
# Only meaningful as an environment variable: the file lives inside the data dir.
# Settings that move traffic or code: where prompts go, what answers the hooks, which database
# and queue hold everything, which CA is trusted. The web form shows them and never changes
# them (issue 15 §1: another page or user must not redirect the hooks); edit settings.json.
TRAFFIC_KEYS = frozenset(
    {
        "CLAUDE_MEM_DATA_DIR",
        "CLAUDE_MEM_WORKER_URL",
        "CLAUDE_MEM_WORKER_HOST",
        "CLAUDE_MEM_WORKER_PORT",
        "CLAUDE_MEM_DATABASE_URL",
        "CLAUDE_MEM_QUEUE_URL",
        "CLAUDE_MEM_API_TOKEN",
        "CLAUDE_MEM_CA_FILE",
    }
)
# Where the observer sends the user's code, and with which credentials: settings.json or the
# environment only, never a web form (a page reachable from the browser must not be able to
# redirect the observer, or read a key back).
PROVIDER_LOCKED = frozenset(
    key
    for key in config.SETTINGS
    if key.endswith(("_API_KEY", "_BASE_URL"))
    or key in {"CLAUDE_MEM_CLAUDE_PATH", "CLAUDE_MEM_INHERIT_ANTHROPIC_ENV"}
)
READ_ONLY = frozenset({*TRAFFIC_KEYS, *PROVIDER_LOCKED})
SECRETS = frozenset(
    {"CLAUDE_MEM_API_TOKEN", *(k for k in PROVIDER_LOCKED if k.endswith("_API_KEY"))}
)
# Read once when the worker starts.
NEEDS_RESTART = frozenset(
    {
        "CLAUDE_MEM_WORKER_HOST",
        "CLAUDE_MEM_WORKER_PORT",
        "CLAUDE_MEM_DATABASE_URL",
        "CLAUDE_MEM_QUEUE_URL",
        "CLAUDE_MEM_LOG_LEVEL",
    }
)
_BOOL_WORDS = {"true", "false"}


@dataclass(frozen=True)
class SettingRow:
    key: str
    help: str
    default: str
    from_env: bool
    read_only: bool
    needs_restart: bool
    label: str = ""
    changed: bool = False  # the value in effect differs from the default
    edited: bool = False  # this (failed) submission changed it; not saved yet


def _field_for(key: str, default: str, help_text: str, disabled: bool) -> forms.Field:
    common: dict[str, Any] = {
        "label": setting_label(key),
        "help_text": help_text,
        "disabled": disabled,
    }
    if key in CHOICES:
        # The default is always valid, even if its module grew a choice this list lacks.
        options = dict.fromkeys([*CHOICES[key], default])
        return forms.ChoiceField(choices=[(c, c) for c in options], **common)
    if default.lower() in _BOOL_WORDS:
        return forms.BooleanField(required=False, **common)
    if key in INT_RANGES or (default.isdigit() and key not in SECRETS):
        low, high = INT_RANGES.get(key, (0, None))
        return forms.IntegerField(min_value=low, max_value=high, **common)
    if key in SECRETS:
        return forms.CharField(
            required=False, widget=forms.PasswordInput(render_value=False), **common
        )
    return forms.CharField(required=False, max_length=2000, **common)


class SettingsForm(forms.Form):
    """Every key of memory.config.SETTINGS; keys set by environment are shown, not editable."""

    def __init__(self, *args: Any, current: dict[str, str], **kwargs: Any) -> None:
        initial: dict[str, Any] = {}
        for key, (default, _) in config.SETTINGS.items():
            value = current.get(key, default)
            if default.lower() in _BOOL_WORDS and key not in CHOICES:
                initial[key] = value.strip().lower() in {"1", "true", "yes", "on"}
            elif key in SECRETS:
                initial[key] = ""
            else:
                initial[key] = value
        kwargs["initial"] = initial
        super().__init__(*args, **kwargs)
        for key, (default, help_text) in config.SETTINGS.items():
            disabled = key in os.environ or key in READ_ONLY
            self.fields[key] = _field_for(key, default, help_text, disabled=disabled)
        self._current = current

    @property
    def sections(self) -> list[tuple[str, str, list[SettingRow]]]:
        """(title, what it affects, rows) in page order; built after validation so a failed
        submission can mark the values it changed."""
        edited = self._edited_keys()
        grouped: dict[str, list[SettingRow]] = {title: [] for title in SECTION_ORDER}
        for key, (default, help_text) in config.SETTINGS.items():
            value = str(self._current.get(key, default)).strip()
            changed = bool(value) if key in SECRETS else value.lower() != default.strip().lower()
            row = SettingRow(
                key,
                help_text,
                default,
                from_env=key in os.environ,
                read_only=key in READ_ONLY,
                needs_restart=key in NEEDS_RESTART,
                label=setting_label(key),
                changed=changed,
                edited=key in edited and not self.fields[key].disabled,
            )
            grouped[section_for(key)].append(row)
        return [(title, SECTION_HELP[title], rows) for title, rows in grouped.items() if rows]

    def _edited_keys(self) -> set[str]:
        """Keys whose submitted value differs from the one the page was served with, by
        their text (Field.has_changed calls "2500" and 2500 different)."""
        if not self.is_bound:
            return set()
        out = set()
        for key, fld in self.fields.items():
            if fld.disabled or key in SECRETS and not self.data.get(key):
                continue
            initial = self.initial.get(key)
            if isinstance(fld, forms.BooleanField):
                posted = fld.widget.value_from_datadict(self.data, self.files, self.add_prefix(key))
                changed = bool(posted) != bool(initial)
            else:
                changed = str(self.data.get(key, "")).strip() != str(initial or "").strip()
            if changed:
                out.add(key)
        return out

    def error_list(self) -> list[tuple[str, str, str]]:
        """(field id or "", label, message) for the summary at the top of the page."""
        out: list[tuple[str, str, str]] = [("", "", str(e)) for e in self.non_field_errors()]
        page_order = [row.key for _, _, rows in self.sections for row in rows]
        for key in page_order:
            for message in self.errors.get(key, []):
                out.append((self[key].id_for_label, setting_label(key), str(message)))
        return out

    def clean(self) -> dict[str, Any]:
        """Refuse a POST that tries to change a traffic setting (a disabled field alone would
        silently ignore it; a forged form should be told no)."""
        cleaned = super().clean() or {}
        for key in sorted(READ_ONLY):
            if key not in self.data:
                continue
            posted = str(self.data.get(key, "")).strip()
            if posted != str(self.initial.get(key, "")).strip():
                self.add_error(
                    None,
                    f"{key} cannot be changed from the web page; edit settings.json in the data dir.",
                )
        return cleaned

    def updates(self) -> dict[str, str]:
        """The settings.json values to write: editable keys only; a blank secret keeps the old one."""
        out: dict[str, str] = {}
        for key, field in self.fields.items():
            if field.disabled:
                continue
            value = self.cleaned_data.get(key)
            if key in SECRETS and not value:
                continue
            if isinstance(value, bool):
                out[key] = "true" if value else "false"
            elif value is None:
                out[key] = ""
            else:
                out[key] = str(value).strip()
        return out
