"""Application code never imports the test tree: everything in the package must run from an
installed wheel, outside a checkout. The benchmarks and the fakes they use (the fake
Messages API, tests/fakes/anthropic.py) live in the test tree; only `cmem bench hooks` ships."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
APPS = ("memory", "deliverables", "cmem_site")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_application_code_never_imports_tests() -> None:
    files = [p for app in APPS for p in (REPO / app).rglob("*.py")]
    offenders = sorted(
        f"{path.relative_to(REPO)}: {name}"
        for path in files
        for name in _imports(path)
        if name == "tests" or name.startswith("tests.")
    )
    assert offenders == []
    # The benchmark's fake is found where it now lives, in the test tree beside the others.
    assert "tests.fakes.anthropic" in _imports(REPO / "tests/bench/compress.py")
    assert not (REPO / "memory" / "benchmarks").exists()
