"""What an outline is made of: symbols nested by byte range, and the file's outline with its
compact text rendering (every token of it is paid for by the agent each time)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from memory.retrieval.outline.languages import FUNCTIONS, ICONS


class OutlineError(ValueError):
    """A file cmem cannot outline (missing, binary, too big, no grammar); says which and why."""


@dataclass
class Symbol:
    name: str
    kind: str
    signature: str
    start_line: int
    end_line: int
    doc: str = ""
    owner: str = ""  # Go receivers, C++ `A::f`: the type a top-level method belongs to
    exported: bool = False
    children: list[Symbol] = field(default_factory=list)
    parent: Symbol | None = field(default=None, repr=False)
    start_byte: int = field(default=0, repr=False)
    end_byte: int = field(default=0, repr=False)

    @property
    def qualified_name(self) -> str:
        parts = [self.name, *reversed(self.owner.split("."))] if self.owner else [self.name]
        node = self.parent
        while node is not None:
            parts.append(node.name)
            node = node.parent
        return ".".join(reversed(parts))

    def walk(self) -> Iterator[Symbol]:
        yield self
        for child in self.children:
            yield from child.walk()

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "qualified_name": self.qualified_name,
            "kind": self.kind,
            "signature": self.signature,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "doc": self.doc,
            "exported": self.exported,
            "children": [child.as_dict() for child in self.children],
        }


@dataclass
class Outline:
    path: str
    language: str
    lines: int
    imports: list[str]
    symbols: list[Symbol]
    source_tokens: int
    has_errors: bool = False

    def walk(self) -> Iterator[Symbol]:
        for symbol in self.symbols:
            yield from symbol.walk()

    def render(self) -> str:
        """The outline as compact text, one line per symbol: `signature L<start>-<end>`.

        Every token counts (the agent pays for this text each time), so: no path or language
        (the agent named the file), imports as a count (as_dict has them), one-space indents,
        no icon for functions and methods (the parentheses say it; indentation under a type
        says method), and a few words of doc for types and functions, not methods.
        """
        out = [self._header()]
        if self.has_errors:
            out.append("⚠ the file has syntax errors; the outline may be incomplete")
        for symbol in self.symbols:
            self._render_symbol(symbol, 0, out)
        if not self.symbols:
            out.append("(no classes or functions)")
        return "\n".join(out)

    def _header(self) -> str:
        header = f"{self.lines} lines, ~{self.source_tokens} tokens"
        if self.imports:
            header += f", {len(self.imports)} import{'s' if len(self.imports) > 1 else ''}"
        return header

    def _render_symbol(self, symbol: Symbol, depth: int, out: list[str]) -> None:
        # A few words of the first doc line for types and functions, none for methods: methods
        # are many and their names say most (as_dict has the line, unfold the whole docstring).
        doc = f" — {few_words(symbol.doc)}" if symbol.doc and symbol.kind != "method" else ""
        icon = "" if symbol.kind in FUNCTIONS else ICONS.get(symbol.kind, "•") + " "
        nested = symbol.kind in FUNCTIONS and symbol.children
        if nested:
            # Helpers defined inside a function are its implementation, not the file's
            # structure; smart_unfold of the function shows them.
            doc += f" (+{sum(1 for _ in symbol.walk()) - 1} nested)"
        out.append(
            f"{' ' * depth}{icon}{symbol.signature} L{symbol.start_line}-{symbol.end_line}{doc}"
        )
        if not nested:
            for child in symbol.children:
                self._render_symbol(child, depth + 1, out)

    def render_brief(self) -> str:
        """The outline as the read gate's refusal carries it: `render()` with each type's
        members as names and line ranges, several to a line, without their parameters.

        A refusal is resent with every later request of the session, so its outline is the
        file's map, not its API: measured on `python -m tests.bench economy`'s 8 Django files, members'
        parameters were about half of the outline's tokens, and smart_unfold of a member
        shows its signature with its code."""
        out = [self._header()]
        if self.has_errors:
            out.append("⚠ the file has syntax errors; the outline may be incomplete")
        for symbol in self.symbols:
            self._render_brief(symbol, 0, out)
        return "\n".join(out)

    def _render_brief(self, symbol: Symbol, depth: int, out: list[str]) -> None:
        members = [] if symbol.kind in FUNCTIONS else symbol.children
        if not members:
            self._render_symbol(symbol, depth, out)
            return
        doc = f" — {few_words(symbol.doc)}" if symbol.doc else ""
        icon = ICONS.get(symbol.kind, "•") + " "
        out.append(
            f"{' ' * depth}{icon}{symbol.signature} L{symbol.start_line}-{symbol.end_line}{doc}"
        )
        plain = [m for m in members if not m.children or m.kind in FUNCTIONS]
        for start in range(0, len(plain), BRIEF_PER_LINE):
            names = (
                f"{m.name} L{m.start_line}-{m.end_line}"
                for m in plain[start : start + BRIEF_PER_LINE]
            )
            out.append(f"{' ' * (depth + 1)}{', '.join(names)}")
        for member in members:
            if member not in plain:  # a nested type keeps its own line and members
                self._render_brief(member, depth + 1, out)

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.render())

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "language": self.language,
            "lines": self.lines,
            "imports": self.imports,
            "symbols": [symbol.as_dict() for symbol in self.symbols],
            "has_errors": self.has_errors,
            "source_tokens": self.source_tokens,
            "tokens": self.tokens,
            "text": self.render(),
        }


def estimate_tokens(text: str) -> int:
    # Same deliberate approximation as memory.models.estimate_tokens (no Django import here).
    return (len(text) + 3) // 4


DOC_WORDS_CHARS = 40


# Members named on one line of a brief outline: short lines, so a cut falls between them.
BRIEF_PER_LINE = 6


def few_words(doc: str) -> str:
    """The doc line cut at a word boundary near DOC_WORDS_CHARS: enough to say what it is for."""
    doc = doc.rstrip("…")
    if len(doc) <= DOC_WORDS_CHARS:
        return doc
    cut = doc[:DOC_WORDS_CHARS].rsplit(" ", 1)[0]
    return cut.rstrip(",;:(") + "…"
