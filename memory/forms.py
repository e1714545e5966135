"""Forms of the web app: the feed filters, My Work filters and the settings editor."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from django import forms

from memory import config
from memory.config.registry import SECTION_HELP, SECTION_ORDER
from memory.config.setting import Setting
from memory.models import Observation

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

    def __init__(self, *args: Any, meaning: bool = True, **kwargs: Any) -> None:
        """`meaning`: search by meaning is installed. Without it the Match select offers
        words only, and a link asking for meaning searches by words rather than failing."""
        super().__init__(*args, **kwargs)
        if not meaning:
            mode = self.fields["mode"]
            assert isinstance(mode, forms.ChoiceField)
            mode.choices = [("keyword", "Words")]
            if self.is_bound and self.data.get("mode") not in (None, "", "keyword"):
                self.data = {**{k: self.data.get(k) for k in self.data}, "mode": "keyword"}


class StatsForm(forms.Form):
    days = forms.TypedChoiceField(
        required=False,
        coerce=int,
        choices=[(7, "7 days"), (30, "30 days"), (90, "90 days")],
        empty_value=None,
    )
    project = forms.CharField(required=False, max_length=200)


# --- settings -------------------------------------------------------------------------

# Every setting's field is made from its record in memory/config/registry.py: its kind,
# bounds, choices, label, section, and whether the page may change it.
REGISTRY = config.registry.REGISTRY
# Whole-number settings and their allowed range: the bounds memory.config clamps to, so the
# form refuses exactly what the readers would clamp.
INT_RANGES: dict[str, tuple[int, int | None]] = dict(config.INT_BOUNDS)
# Settings that move traffic or code (where prompts go, what answers the hooks, which database
# and queue hold everything, which CA is trusted), and where the observer sends the user's
# code with which credentials: the web form shows them and never changes them (:
# another page or user must not redirect the hooks or the observer, or read a key back); edit
# settings.json or the environment.
READ_ONLY = frozenset(r.key for r in REGISTRY if r.locked)
SECRETS = frozenset(r.key for r in REGISTRY if r.secret)


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


def _field_for(record: Setting, disabled: bool) -> forms.Field:
    common: dict[str, Any] = {
        "label": record.label,
        "help_text": record.help,
        "disabled": disabled,
    }
    if record.kind == "choice":
        # The default is always valid, even if its module grew a choice this list lacks.
        options = dict.fromkeys([*record.choices, record.default])
        return forms.ChoiceField(choices=[(c, c) for c in options], **common)
    if record.kind == "bool":
        return forms.BooleanField(required=False, **common)
    if record.kind == "int":
        low, high = INT_RANGES.get(record.key, (0, None))
        return forms.IntegerField(min_value=low, max_value=high, **common)
    if record.secret:
        return forms.CharField(
            required=False, widget=forms.PasswordInput(render_value=False), **common
        )
    return forms.CharField(required=False, max_length=2000, **common)


# The settings the page offers: hidden ones (set by cmem itself, or tuning nobody needs on a
# page) stay settable in settings.json and the environment.
PAGE_SETTINGS = tuple(record for record in REGISTRY if not record.hidden)


class SettingsForm(forms.Form):
    """The settings page: the basic settings first, the rest under Advanced; keys set by
    environment are shown, not editable."""

    def __init__(self, *args: Any, current: dict[str, str], **kwargs: Any) -> None:
        initial: dict[str, Any] = {}
        for record in PAGE_SETTINGS:
            value = current.get(record.key, record.default)
            if record.kind == "bool":
                initial[record.key] = value.strip().lower() in {"1", "true", "yes", "on"}
            elif record.secret:
                initial[record.key] = ""
            else:
                initial[record.key] = value
        kwargs["initial"] = initial
        super().__init__(*args, **kwargs)
        for record in PAGE_SETTINGS:
            disabled = record.key in os.environ or record.locked
            self.fields[record.key] = _field_for(record, disabled=disabled)
        self._current = current

    @property
    def basic_rows(self) -> list[SettingRow]:
        """The ten settings people change, in registry order, above the Advanced section."""
        return [row for _, _, rows in self._grouped(basic=True) for row in rows]

    @property
    def sections(self) -> list[tuple[str, str, list[SettingRow]]]:
        """The Advanced section's groups: (title, what it affects, rows) in page order."""
        return self._grouped(basic=False)

    @property
    def advanced_open(self) -> bool:
        """A failed save that touched an advanced setting opens the section, so its error
        and its edit are in view."""
        keys = {row.key for _, _, rows in self.sections for row in rows}
        return bool(keys & (set(self.errors) | self._edited_keys()))

    def _grouped(self, *, basic: bool) -> list[tuple[str, str, list[SettingRow]]]:
        """(title, what it affects, rows) in page order; built after validation so a failed
        submission can mark the values it changed."""
        edited = self._edited_keys()
        grouped: dict[str, list[SettingRow]] = {title: [] for title in SECTION_ORDER}
        for record in PAGE_SETTINGS:
            if record.basic != basic:
                continue
            key, default = record.key, record.default
            value = str(self._current.get(key, default)).strip()
            changed = bool(value) if record.secret else value.lower() != default.strip().lower()
            row = SettingRow(
                key,
                record.help,
                default,
                from_env=key in os.environ,
                read_only=record.locked,
                needs_restart=record.restart,
                label=record.label,
                changed=changed,
                edited=key in edited and not self.fields[key].disabled,
            )
            grouped[record.section].append(row)
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
        page_order = [row.key for row in self.basic_rows] + [
            row.key for _, _, rows in self.sections for row in rows
        ]
        for key in page_order:
            for message in self.errors.get(key, []):
                out.append(
                    (self[key].id_for_label, config.registry.setting_label(key), str(message))
                )
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


# The observation page's curation forms. They check shapes only (a known type or action, a
# whole number); sizes and who may change what are the curation service's (memory.curation),
# whose errors the page shows as they are.

LINES = forms.Textarea(attrs={"rows": 5})


def _one_newline(text: str) -> str:
    """Browsers send a textarea's lines joined by CRLF; stored text uses LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


class ObservationEditForm(forms.Form):
    title = forms.CharField(strip=True)
    subtitle = forms.CharField(required=False)
    narrative = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 8}))
    facts = forms.CharField(required=False, widget=LINES, help_text="One fact per line.")
    type = forms.ChoiceField(choices=Observation.Type.choices)
    reason = forms.CharField(required=False, label="Why this edit (optional)")
    redact = forms.BooleanField(
        required=False, label="Redact: purge the old text from the history too"
    )

    @classmethod
    def for_row(cls, row: Observation) -> ObservationEditForm:
        facts = row.facts if isinstance(row.facts, list) else []
        return cls(
            initial={
                "title": row.title,
                "subtitle": row.subtitle,
                "narrative": row.narrative,
                "facts": "\n".join(str(f) for f in facts),
                "type": row.type,
            }
        )

    def changes(self, row: Observation) -> dict[str, Any]:
        """The fields that differ from the row; all text fields for a redacting edit (the
        old text goes from the history even when the current text stays)."""
        data = self.cleaned_data
        new: dict[str, Any] = {
            "title": data["title"],
            "subtitle": _one_newline(data["subtitle"]).strip(),
            "narrative": _one_newline(data["narrative"]).strip(),
            "facts": [
                line.strip() for line in _one_newline(data["facts"]).split("\n") if line.strip()
            ],
            "type": data["type"],
        }
        if data["redact"]:
            return new
        return {k: v for k, v in new.items() if getattr(row, k) != v}


# The actions the page offers; the service knows more (abandon, demote: consolidation's).
MARK_ACTIONS = [
    ("pin", "Pin"),
    ("unpin", "Unpin"),
    ("wrong", "Mark wrong"),
    ("outdated", "Mark outdated"),
    ("supersede", "Superseded by"),
    ("retire", "Retire"),
    ("restore", "Restore"),
]


class ObservationMarkForm(forms.Form):
    action = forms.ChoiceField(choices=MARK_ACTIONS)
    reason = forms.CharField(required=False)
    superseded_by = forms.CharField(required=False, max_length=24, label="By memory #")

    def clean_superseded_by(self) -> int | None:
        raw = self.cleaned_data["superseded_by"].strip().removeprefix("#").strip()
        if not raw:
            return None
        if not raw.isdigit() or not 0 < int(raw) < 2**63:
            raise forms.ValidationError("Give the id of a memory, such as 12 or #12.")
        return int(raw)


class RememberForm(forms.Form):
    project = forms.CharField(max_length=200)
    title = forms.CharField()
    text = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 6}))
    kind = forms.ChoiceField(choices=Observation.Type.choices, initial=Observation.Type.NOTE)
    topic = forms.CharField(
        required=False,
        help_text="Optional key: remembering under the same topic again replaces this memory.",
    )
    scope = forms.ChoiceField(choices=Observation.Scope.choices, initial=Observation.Scope.PROJECT)

    def clean_text(self) -> str:
        return _one_newline(self.cleaned_data["text"]).strip()


class ConsolidationForm(forms.Form):
    """The consolidation page's POST: run the pass (`run`), or undo one change (`undo`)."""

    undo = forms.IntegerField(required=False, min_value=1, max_value=2**63 - 1)
    run = forms.BooleanField(required=False)
    dry_run = forms.BooleanField(required=False)
    mode = forms.ChoiceField(
        required=False, choices=[("", "As set"), ("rules", "Offline rules"), ("model", "Model")]
    )
    project = forms.CharField(required=False, max_length=200)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not data.get("run") and not data.get("undo"):
            raise forms.ValidationError("say what to do: run the pass, or undo one change")
        if data.get("project") and "\x00" in data["project"]:
            raise forms.ValidationError("a project name has no NUL character")
        return data
