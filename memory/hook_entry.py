"""The hook entry's old address: hooks installed before the hook client became a package
(memory/hookclient/) run `from memory.hook_entry import run`. Kept so an upgrade without a
fresh `cmem install` loses no event; `cmem install` writes the new address."""

# ruff: noqa: I002 - no `from __future__ import annotations`: every import is paid on each hook.

from memory.hookclient.entry import hook, run

__all__ = ["hook", "run"]
