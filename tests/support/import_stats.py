"""How the house is kept, in numbers: `python -m tests.support.import_stats [ROOT]`.

Prints the import cycles among `memory`'s modules and among its rooms (grimp, the graph
import-linter checks), the layers contract's exemptions, the imports made inside functions
(and how many say why on the line above their block, or on their own line), and the loose
modules at the top of `memory/`. ROOT defaults to this checkout; give another tree to compare.
"""

from __future__ import annotations

import argparse
import ast
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

from tests.support.paths import REPO

APPS = ("memory", "deliverables", "cmem_site")


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def import_cycles(root: Path) -> tuple[list[list[str]], list[list[str]]]:
    """(cycles among memory's modules, cycles among memory's rooms)."""
    import grimp

    sys.path.insert(0, str(root))
    try:
        graph = grimp.build_graph("memory", cache_dir=None)
    finally:
        sys.path.remove(str(root))
    modules: dict[str, set[str]] = defaultdict(set)
    rooms: dict[str, set[str]] = defaultdict(set)
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            modules[module].add(imported)
            room, other = ".".join(module.split(".")[:2]), ".".join(imported.split(".")[:2])
            if room != other:
                rooms[room].add(other)
    return _cycles(modules), _cycles(rooms)


def layer_exemptions(root: Path) -> int:
    config = tomllib.loads((root / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    return sum(len(c.get("ignore_imports", [])) for c in contracts if c.get("type") == "layers")


def function_imports(root: Path) -> tuple[int, int]:
    """(imports inside a function, those with a comment on their line or above their block)."""
    inside: set[tuple[Path, int]] = set()  # a nested function's imports are walked twice
    explained: set[tuple[Path, int]] = set()
    for app in APPS:
        for path in (root / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            lines = path.read_text().splitlines()
            for function in ast.walk(ast.parse("\n".join(lines))):
                if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for node in ast.walk(function):
                    if isinstance(node, ast.Import | ast.ImportFrom):
                        inside.add((path, node.lineno))
                        if _explained(lines, node.lineno - 1):
                            explained.add((path, node.lineno))
    return len(inside), len(explained)


def _explained(lines: list[str], at: int) -> bool:
    if "#" in lines[at]:
        return True
    # Up through the block of imports (blank lines between isort's groups, the lines of a
    # parenthesised import) to the comment that heads it, if any.
    above = at - 1
    while above >= 0:
        line = lines[above].strip()
        in_block = line.startswith(("import ", "from ")) or line in ("", ")")
        if not (in_block or line.endswith(",")):
            break
        above -= 1
    return above >= 0 and lines[above].strip().startswith("#")


def loose_modules(root: Path) -> list[str]:
    return sorted(path.name for path in (root / "memory").glob("*.py"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("root", nargs="?", type=Path, default=REPO)
    root = parser.parse_args(argv).root.resolve()
    module_cycles, room_cycles = import_cycles(root)
    total, explained = function_imports(root)
    loose = loose_modules(root)
    print(f"import cycles among memory's modules: {len(module_cycles)}")
    for cycle in module_cycles:
        print("  " + " <-> ".join(cycle))
    print(f"import cycles among memory's rooms: {len(room_cycles)}")
    for cycle in room_cycles:
        print(f"  {len(cycle)} rooms: " + ", ".join(cycle))
    print(f"layers contract exemptions (upward imports allowed): {layer_exemptions(root)}")
    print(f"imports inside functions: {total}, saying why: {explained}")
    print(f"loose modules at the top of memory/: {len(loose)} ({', '.join(loose)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
