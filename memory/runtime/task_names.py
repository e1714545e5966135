"""Huey registers a task as "<module>.<function>", and a queued message carries that string.

Tasks moved between modules keep the name they were first registered under
(`registered_in`), so a message queued before an upgrade still finds its task after it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable[..., object])


def registered_in(module: str) -> Callable[[F], F]:
    """Register the task under `module` instead of the module that defines it."""

    def mark(fn: F) -> F:
        fn.__module__ = module
        return fn

    return mark
