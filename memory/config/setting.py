"""One record of memory/config/registry.py: a setting, or (with `internal`) an environment
switch. Stdlib only, like the rest of memory.config."""

from __future__ import annotations

# Not `typing.TYPE_CHECKING`: importing typing (and dataclasses) would be the most of what
# importing memory.config costs a process that has neither yet (`cmem start` before Django).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    Kind = Literal["str", "int", "bool", "choice", "list"]


class Setting:
    """One setting (or, with `internal`, one environment switch). Never changed once made."""

    __slots__ = (
        "basic",
        "bounds",
        "choices",
        "default",
        "help",
        "hidden",
        "internal",
        "key",
        "kind",
        "label",
        "locked",
        "restart",
        "secret",
        "section",
        "shown_default",
    )

    def __init__(
        self,
        key: str,
        default: str,
        kind: Kind,
        label: str,
        section: str,
        help: str,
        *,
        bounds: tuple[int, int] | None = None,
        choices: tuple[str, ...] = (),
        basic: bool = False,
        hidden: bool = False,
        internal: bool = False,
        secret: bool = False,
        locked: bool = False,
        restart: bool = False,
        shown_default: str = "",
    ) -> None:
        self.key = key
        self.default = default  # as settings.json stores it: always a string
        self.kind: Kind = kind
        self.label = label  # the settings page's words; the raw key is shown small under it
        self.section = section
        self.help = help
        self.bounds = bounds  # inclusive; a value outside is clamped
        self.choices = choices  # what the settings page offers (kind "choice")
        self.basic = basic  # one of the few settings people change (the rest are advanced)
        # Set by cmem itself or a tuning knob nobody needs on the page (the install route,
        # the vector index): left off the settings page, still read from the file and env.
        self.hidden = hidden
        self.internal = internal  # an environment switch: never in settings.json
        self.secret = secret  # never shown back: the page offers a blank password field
        self.locked = locked  # the settings page shows it and never changes it
        self.restart = restart  # read once when the worker starts
        self.shown_default = shown_default  # the default as the docs show it, when per machine

    def __repr__(self) -> str:
        return f"Setting({self.key!r}, {self.default!r}, kind={self.kind!r})"

    @property
    def documented_default(self) -> str:
        return self.shown_default or self.default
