"""The architecture page's module map is the tree's: every module is named, with its docstring's line."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.support import REPO
from tests.support.module_map import DOC, PACKAGES, map_section, module_name, modules, render


def test_every_module_is_in_the_architecture_map() -> None:
    section = map_section(DOC.read_text())
    missing = [str(rel) for rel in modules() if f"| {module_name(rel)} |" not in section]
    assert not missing, (
        f"not in the architecture page's module map (run `make module-map`): {missing}"
    )


def test_the_architecture_map_is_current() -> None:
    """No stale line and no module that is gone: the section is exactly what the tree renders."""
    section = map_section(DOC.read_text())
    assert section == render(), "the architecture page's module map is stale: run `make module-map`"


def test_the_map_covers_every_package_and_skips_migrations() -> None:
    names = [rel.as_posix() for rel in modules()]
    assert {name.split("/")[0] for name in names} == set(PACKAGES)
    assert "memory/hookclient/client.py" in names and "cmem_site/cli.py" in names
    assert not [name for name in names if "/migrations/" in name]


def test_a_new_module_makes_the_map_stale(tmp_path: Path) -> None:
    for package in PACKAGES:
        shutil.copytree(REPO / package, tmp_path / package)
    before = render(tmp_path)
    (tmp_path / "memory" / "briefing" / "novelty.py").write_text('"""Brand new room."""\n')
    after = render(tmp_path)
    assert before != after
    assert "| `memory/briefing/novelty.py` | Brand new room. |" in after
    assert "novelty" not in map_section(DOC.read_text())


def test_the_generator_writes_the_section(tmp_path: Path) -> None:
    page = tmp_path / "architecture.md"
    text = DOC.read_text()
    page.write_text(text.replace(map_section(text), map_section(text).replace("owns", "x")))
    result = subprocess.run(
        [sys.executable, "-m", "tests.support.module_map", "--write", str(page)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "rewritten" in result.stdout
    assert page.read_text() == text
