"""The house's numbers stay where the layering put them (tests/support/import_stats.py):
no import cycle, no upward import allowed by the layers contract, every import inside a
function saying why, and few loose modules at the top of memory/."""

from __future__ import annotations

from pathlib import Path

from tests.support.import_stats import (
    function_imports,
    import_cycles,
    layer_exemptions,
    loose_modules,
)
from tests.support.paths import REPO


def test_no_import_cycle_among_modules_or_rooms() -> None:
    modules, rooms = import_cycles(REPO)
    assert modules == [] and rooms == []


def test_the_layers_allow_at_most_three_upward_imports() -> None:
    assert layer_exemptions(REPO) <= 3


def test_every_import_inside_a_function_says_why() -> None:
    total, explained = function_imports(REPO)
    assert total > 0 and explained == total


def test_an_unexplained_import_inside_a_function_is_counted(tmp_path: Path) -> None:
    for app in ("memory", "deliverables", "cmem_site"):
        (tmp_path / app).mkdir()
    (tmp_path / "memory" / "late.py").write_text(
        "def f():\n    # optional dependency\n    import numpy\n\n    from json import dumps\n"
        "    return numpy, dumps\n\n\ndef g():\n    import csv\n    return csv\n"
    )
    assert function_imports(tmp_path) == (3, 2)


def test_few_loose_modules_at_the_top_of_memory() -> None:
    assert len(loose_modules(REPO)) <= 15
