"""Test data through factory-boy: one way to make a session (and its first prompt), whatever
the test. Models are named by string ("memory.Session"); factory-boy resolves them when this
module is imported, so a script imports it after `django.setup()`.

`SessionFactory(root=path)` sets project_root and cwd to the folder and names the project after
it (pass project= to override); `prompt="..."` stores prompt 1 the way capture does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import factory
from factory.django import DjangoModelFactory


def _root(obj: Any) -> str:
    return str(obj.root) if obj.root else ""


class SessionFactory(DjangoModelFactory):
    class Meta:
        model = "memory.Session"
        skip_postgeneration_save = True

    class Params:
        root: Path | str | None = None

    session_id = factory.Sequence(lambda n: f"sess-{n}")
    project = factory.LazyAttribute(lambda o: Path(o.root).name if o.root else "demo")
    project_root = factory.LazyAttribute(_root)
    cwd = factory.LazyAttribute(_root)

    @factory.post_generation
    def prompt(obj: Any, create: bool, extracted: str | None, **kwargs: Any) -> None:
        if not extracted:
            return
        obj.prompt_counter = 1
        if create:
            obj.save(update_fields=["prompt_counter"])
            PromptFactory(session=obj, number=1, text=extracted)


class PromptFactory(DjangoModelFactory):
    class Meta:
        model = "memory.Prompt"

    session = factory.SubFactory(SessionFactory)
    number = factory.Sequence(lambda n: n + 1)
    text = "Fix the failing test"
