"""smart_unfold: the exact source of one symbol of a file, found by qualified name, with its
line numbers."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory.retrieval.outline.languages import language_for
from memory.retrieval.outline.model import Outline, OutlineError, Symbol
from memory.retrieval.outline.parse import MAX_FILE_BYTES, check_file, outline_source, read_source


def _normalise_symbol(name: str) -> str:
    return re.sub(r"::|#|->|/", ".", name.strip()).strip(".")


@dataclass(frozen=True)
class Unfolded:
    path: str
    symbol: Symbol
    source: str

    def render(self) -> str:
        width = len(str(self.symbol.end_line))
        lines = self.source.splitlines()
        numbered = [
            f"{self.symbol.start_line + i:>{width}}  {line}" for i, line in enumerate(lines)
        ]
        header = f"📍 {self.path} L{self.symbol.start_line}-{self.symbol.end_line} {self.symbol.kind} {self.symbol.qualified_name}"
        return "\n".join([header, *numbered])

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "symbol": self.symbol.qualified_name,
            "kind": self.symbol.kind,
            "start_line": self.symbol.start_line,
            "end_line": self.symbol.end_line,
            "source": self.source,
            "text": self.render(),
        }


def find_symbol(outline: Outline, name: str) -> Symbol | None:
    """Exact qualified name first, then a qualified-name suffix (`method` finds `A.method`)."""
    wanted = _normalise_symbol(name)
    symbols = list(outline.walk())
    for symbol in symbols:
        if symbol.qualified_name == wanted:
            return symbol
    for symbol in symbols:
        if symbol.qualified_name.endswith("." + wanted):
            return symbol
    lowered = wanted.lower()
    for symbol in symbols:
        if symbol.qualified_name.lower() == lowered or symbol.qualified_name.lower().endswith(
            "." + lowered
        ):
            return symbol
    return None


def smart_unfold(
    path: Path, symbol: str, *, display: str | None = None, max_bytes: int = MAX_FILE_BYTES
) -> Unfolded:
    """The exact source of one symbol, with its line numbers; OutlineError if it is not there."""
    check_file(path, max_bytes)
    language = language_for(path)
    if language is None:
        raise OutlineError(
            f"{path}: no grammar for '{path.suffix or path.name}' files; read the file instead"
        )
    source = read_source(path, max_bytes)
    outline = outline_source(source, language=language, path=display or str(path))
    found = find_symbol(outline, symbol)
    if found is None:
        names = [s.qualified_name for s in outline.walk()]
        near = [n for n in names if _normalise_symbol(symbol).split(".")[-1].lower() in n.lower()][
            :10
        ] or names[:10]
        raise OutlineError(
            f"no symbol {symbol!r} in {outline.path}; symbols there include: {', '.join(near) or 'none'}"
        )
    lines = source.decode("utf-8", "replace").splitlines()
    return Unfolded(
        path=outline.path,
        symbol=found,
        source="\n".join(lines[found.start_line - 1 : found.end_line]),
    )
