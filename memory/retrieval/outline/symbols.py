"""smart_search: symbols matching a query across a folder, walking only files with a grammar
and not ignored, with outlines cached by (path, mtime, size) for the life of the process."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory.retrieval.outline.languages import ICONS, language_for
from memory.retrieval.outline.model import Outline, OutlineError, Symbol
from memory.retrieval.outline.outline import smart_outline

SEARCH_MAX_FILE_BYTES = 512 * 1024
SEARCH_MAX_FILES = 5000

# Folders never worth walking for symbols (claude-mem skips the same ones).
SKIP_DIRS = frozenset(
    [
        "node_modules",
        ".git",
        "dist",
        "build",
        ".next",
        "__pycache__",
        ".venv",
        "venv",
        "env",
        ".env",
        "target",
        "vendor",
        ".cache",
        ".turbo",
        "coverage",
        ".nyc_output",
        ".claude",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        "site-packages",
    ]
)


@dataclass(frozen=True)
class SymbolMatch:
    path: str
    symbol: Symbol
    score: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "symbol": self.symbol.qualified_name,
            "kind": self.symbol.kind,
            "signature": self.symbol.signature,
            "start_line": self.symbol.start_line,
            "end_line": self.symbol.end_line,
            "doc": self.symbol.doc,
            "score": round(self.score, 2),
        }


def _gitignore(root: Path) -> Callable[[str], bool]:
    # MCP start: pathspec only when a .gitignore is read
    import pathspec

    lines: list[str] = []
    for name in (".gitignore", ".git/info/exclude"):
        try:
            lines += (root / name).read_text(errors="replace").splitlines()
        except OSError:
            continue
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    return spec.match_file


def source_files(root: Path, *, max_files: int = SEARCH_MAX_FILES) -> Iterator[Path]:
    """Files under `root` with a grammar, skipping vendored/built folders and .gitignore'd paths."""
    ignored = _gitignore(root)
    count = 0
    for folder, dirs, files in os.walk(root):
        rel_folder = os.path.relpath(folder, root)
        rel_folder = "" if rel_folder == "." else rel_folder + "/"
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in SKIP_DIRS
            and not d.endswith(".egg-info")
            and not ignored(rel_folder + d + "/")
        )
        for name in sorted(files):
            if language_for(Path(name)) is None or ignored(rel_folder + name):
                continue
            yield Path(folder) / name
            count += 1
            if count >= max_files:
                return


_SPLIT = re.compile(r"[\s_\-./:]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _words(text: str) -> list[str]:
    return [w.lower() for part in _SPLIT.split(text) for w in _CAMEL.split(part) if w]


_CACHE_MAX = 5000
_cache: dict[tuple[str, int, int], Outline] = {}


def _outline_cached(path: Path, display: str) -> Outline:
    """Outlines by (path, mtime, size): the MCP server lives as long as the agent's session and
    searches the same tree again and again; only changed files are parsed twice."""
    info = path.stat()
    key = (str(path), info.st_mtime_ns, info.st_size)
    outline = _cache.get(key)
    if outline is None:
        outline = smart_outline(path, display=display, max_bytes=SEARCH_MAX_FILE_BYTES)
        if len(_cache) >= _CACHE_MAX:
            _cache.pop(next(iter(_cache)))  # oldest first: dicts keep insertion order
        _cache[key] = outline
    outline.path = display
    return outline


def smart_search(
    query: str, root: Path, *, limit: int = 20, file_pattern: str = ""
) -> list[SymbolMatch]:
    """Symbols whose names (then signatures, docs and file paths) match the query's words."""
    terms = _words(query)
    if not terms:
        return []
    whole = query.strip().lower()
    matches: list[SymbolMatch] = []
    for path in source_files(root):
        rel = str(path.relative_to(root))
        if file_pattern and file_pattern not in rel:
            continue
        try:
            outline = _outline_cached(path, rel)
        except (OutlineError, OSError):  # unreadable, or gone since the walk
            continue
        rel_lower = rel.lower()
        for symbol in outline.walk():
            name_words = _words(symbol.qualified_name)
            score = 0.0
            for term in terms:
                if term in name_words:
                    score += 3
                elif any(word.startswith(term) for word in name_words):
                    score += 2
                elif term in symbol.signature.lower() or term in symbol.doc.lower():
                    score += 1
                elif term in rel_lower:
                    score += 0.5
                else:
                    score -= 1
            if whole == symbol.name.lower():
                score += 5
            if score > 0:
                matches.append(SymbolMatch(path=rel, symbol=symbol, score=score))
    matches.sort(key=lambda m: (-m.score, m.path, m.symbol.start_line))
    return matches[:limit]


def render_search(query: str, matches: list[SymbolMatch]) -> str:
    if not matches:
        return f"No symbols match {query!r}."
    out = [f"🔎 {len(matches)} symbol(s) matching {query!r} (smart_unfold one to read it):"]
    for match in matches:
        sym = match.symbol
        out.append(
            f"{ICONS.get(sym.kind, '•')} {match.path}:L{sym.start_line}-{sym.end_line} {sym.qualified_name} — {sym.signature}"
        )
    return "\n".join(out)
