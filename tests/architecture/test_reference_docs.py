"""The generated reference pages (docs/reference/commands.md, http-api.md) are the code's: every
verb and every endpoint is on them, and a page that falls behind fails here."""

from __future__ import annotations

import pytest

from cmem_site.verbs import VERBS
from tests.support.reference_docs import PAGES, render_all, stale


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return render_all()


def test_the_reference_pages_are_current(pages: dict[str, str]) -> None:
    assert not stale(pages), f"stale reference pages (run `make reference`): {stale(pages)}"


def test_every_verb_is_on_the_commands_page(pages: dict[str, str]) -> None:
    missing = [v.name for v in VERBS if f"### `cmem {v.name}`" not in pages["commands"]]
    assert not missing, missing
    # A verb's options come from its real parser: `search --mode` and its choices.
    assert "| `--mode` | `hybrid` \\| `keyword` \\| `semantic` |" in pages["commands"]


def test_every_endpoint_is_on_the_http_api_page(pages: dict[str, str]) -> None:
    from cmem_site.api import api

    schema = api.get_openapi_schema(path_prefix="/api/")
    missing = [
        f"{method.upper()} {path}"
        for path, methods in schema["paths"].items()
        for method in methods
        if f"### `{method.upper()} {path}`" not in pages["http-api"]
    ]
    assert not missing, missing
    assert "POST /api/hooks/{platform}/{event}" in pages["http-api"]


def test_a_changed_page_is_stale(pages: dict[str, str]) -> None:
    """What the code renders is compared with the file byte for byte."""
    assert stale({**pages, "commands": pages["commands"] + "| `--new` | | | new |\n"}) == [
        "commands"
    ]
    assert stale({**pages, "http-api": pages["http-api"].replace("/api/search", "/api/find")}) == [
        "http-api"
    ]
    assert set(PAGES) == {"commands", "http-api"}
