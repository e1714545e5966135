"""smart_outline, smart_unfold and smart_search: a source file's structure for a fraction of
its tokens, one symbol's exact source, and symbols matching a query across a folder.

Tree-sitter with the grammar wheels installed alongside cmem (nothing is downloaded at run
time). One query per language captures every definition node in C; Python then names
them, nests them by byte range and cuts signatures at the start of the body. This module
imports no Django: the MCP server uses it directly, in the agent's own process.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import tree_sitter as ts

MAX_FILE_BYTES = 1024 * 1024
SEARCH_MAX_FILE_BYTES = 512 * 1024
SEARCH_MAX_FILES = 5000
SIGNATURE_CHARS = 160
DOC_CHARS = 60

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

ICONS = {
    "function": "ƒ",
    "method": "ƒ",
    "class": "◆",
    "struct": "◆",
    "record": "◆",
    "interface": "◇",
    "type": "◇",
    "trait": "◇",
    "enum": "▣",
    "impl": "◈",
    "module": "▢",
    "namespace": "▢",
    "property": "○",
    "macro": "●",
}
_CONTAINERS = frozenset({"class", "struct", "record", "interface", "trait", "impl", "enum"})
_FUNCTIONS = frozenset({"function", "method"})
_BODY_TYPES = frozenset(
    [
        "block",
        "body_statement",
        "class_body",
        "interface_body",
        "enum_body",
        "field_declaration_list",
        "declaration_list",
        "compound_statement",
        "statement_block",
        "object_type",
        "enum_variant_list",
        "enum_member_declaration_list",
        "accessor_list",
        "do_group",
    ]
)


class OutlineError(ValueError):
    """A file cmem cannot outline (missing, binary, too big, no grammar); says which and why."""


@dataclass(frozen=True)
class LanguageSpec:
    name: str
    module: str
    loader: str
    # Definition node type -> symbol kind (special cases refine it in _kind_and_name).
    defs: dict[str, str]
    imports: frozenset[str] = frozenset()
    # Container kinds whose functions are methods (Ruby's modules hold methods too).
    method_parents: frozenset[str] = _CONTAINERS


_C_DEFS = {
    "function_definition": "function",
    "struct_specifier": "struct",
    "enum_specifier": "enum",
    "union_specifier": "struct",
    "type_definition": "type",
}
_JS_DEFS = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "class_declaration": "class",
    "method_definition": "method",
    "variable_declarator": "function",
}
_TS_DEFS = {
    **_JS_DEFS,
    "abstract_class_declaration": "class",
    "interface_declaration": "interface",
    "type_alias_declaration": "type",
    "enum_declaration": "enum",
    "internal_module": "namespace",
    "method_signature": "method",
    "abstract_method_signature": "method",
    "function_signature": "function",
}

LANGUAGES: dict[str, LanguageSpec] = {
    spec.name: spec
    for spec in [
        LanguageSpec(
            "python",
            "tree_sitter_python",
            "language",
            {"function_definition": "function", "class_definition": "class"},
            frozenset({"import_statement", "import_from_statement", "future_import_statement"}),
        ),
        LanguageSpec(
            "javascript",
            "tree_sitter_javascript",
            "language",
            _JS_DEFS,
            frozenset({"import_statement"}),
        ),
        LanguageSpec(
            "typescript",
            "tree_sitter_typescript",
            "language_typescript",
            _TS_DEFS,
            frozenset({"import_statement"}),
        ),
        LanguageSpec(
            "tsx",
            "tree_sitter_typescript",
            "language_tsx",
            _TS_DEFS,
            frozenset({"import_statement"}),
        ),
        LanguageSpec(
            "go",
            "tree_sitter_go",
            "language",
            {
                "function_declaration": "function",
                "method_declaration": "method",
                "type_spec": "type",
            },
            frozenset({"import_spec"}),
        ),
        LanguageSpec(
            "rust",
            "tree_sitter_rust",
            "language",
            {
                "function_item": "function",
                "function_signature_item": "function",
                "struct_item": "struct",
                "enum_item": "enum",
                "union_item": "struct",
                "trait_item": "trait",
                "impl_item": "impl",
                "mod_item": "module",
                "type_item": "type",
                "macro_definition": "macro",
            },
            frozenset({"use_declaration"}),
        ),
        LanguageSpec(
            "java",
            "tree_sitter_java",
            "language",
            {
                "class_declaration": "class",
                "interface_declaration": "interface",
                "enum_declaration": "enum",
                "record_declaration": "record",
                "annotation_type_declaration": "interface",
                "method_declaration": "method",
                "constructor_declaration": "method",
            },
            frozenset({"import_declaration"}),
        ),
        LanguageSpec(
            "ruby",
            "tree_sitter_ruby",
            "language",
            {
                "module": "module",
                "class": "class",
                "method": "method",
                "singleton_method": "method",
            },
            method_parents=_CONTAINERS | {"module"},
        ),
        LanguageSpec("c", "tree_sitter_c", "language", _C_DEFS, frozenset({"preproc_include"})),
        LanguageSpec(
            "cpp",
            "tree_sitter_cpp",
            "language",
            {**_C_DEFS, "class_specifier": "class", "namespace_definition": "namespace"},
            frozenset({"preproc_include", "using_declaration"}),
        ),
        LanguageSpec(
            "csharp",
            "tree_sitter_c_sharp",
            "language",
            {
                "namespace_declaration": "namespace",
                "file_scoped_namespace_declaration": "namespace",
                "class_declaration": "class",
                "interface_declaration": "interface",
                "struct_declaration": "struct",
                "enum_declaration": "enum",
                "record_declaration": "record",
                "method_declaration": "method",
                "constructor_declaration": "method",
                "property_declaration": "property",
            },
            frozenset({"using_directive"}),
        ),
        LanguageSpec(
            "php",
            "tree_sitter_php",
            "language_php",
            {
                "class_declaration": "class",
                "interface_declaration": "interface",
                "trait_declaration": "trait",
                "enum_declaration": "enum",
                "function_definition": "function",
                "method_declaration": "method",
            },
            frozenset({"namespace_use_declaration"}),
        ),
        LanguageSpec("bash", "tree_sitter_bash", "language", {"function_definition": "function"}),
    ]
}

EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyw": "python", ".pyi": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust", ".java": "java", ".rb": "ruby", ".rake": "ruby",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".cs": "csharp", ".php": "php", ".sh": "bash", ".bash": "bash",
}  # fmt: skip


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
        header = f"{self.lines} lines, ~{self.source_tokens} tokens"
        if self.imports:
            header += f", {len(self.imports)} import{'s' if len(self.imports) > 1 else ''}"
        out = [header]
        if self.has_errors:
            out.append("⚠ the file has syntax errors; the outline may be incomplete")
        for symbol in self.symbols:
            self._render_symbol(symbol, 0, out)
        if not self.symbols:
            out.append("(no classes or functions)")
        return "\n".join(out)

    def _render_symbol(self, symbol: Symbol, depth: int, out: list[str]) -> None:
        # A few words of the first doc line for types and functions, none for methods: methods
        # are many and their names say most (as_dict has the line, unfold the whole docstring).
        doc = f" — {_few_words(symbol.doc)}" if symbol.doc and symbol.kind != "method" else ""
        icon = "" if symbol.kind in _FUNCTIONS else ICONS.get(symbol.kind, "•") + " "
        nested = symbol.kind in _FUNCTIONS and symbol.children
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


def language_for(path: Path) -> str | None:
    return EXTENSIONS.get(path.suffix.lower())


@cache
def _parser_and_query(language: str) -> tuple[ts.Parser, ts.Query]:
    spec = LANGUAGES[language]
    module = importlib.import_module(spec.module)
    lang = ts.Language(getattr(module, spec.loader)())
    types = sorted(set(spec.defs) | spec.imports)
    return ts.Parser(lang), ts.Query(lang, "[" + " ".join(f"({t})" for t in types) + "] @node")


# --- naming ------------------------------------------------------------------------------


def _text(node: ts.Node | None) -> str:
    return (
        node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""
    )


def _c_declarator_name(node: ts.Node) -> tuple[str, str]:
    """(owner, name) of a C/C++ function definition: unwrap pointers down to the identifier."""
    declarator = node.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        # `double& f()` wraps the declarator in a reference_declarator without a field name.
        declarator = declarator.child_by_field_name("declarator") or (
            declarator.named_children[-1] if declarator.named_children else None
        )
    if declarator is None:
        return "", ""
    target = declarator.child_by_field_name("declarator")
    name = _text(target)
    if "::" in name:
        owner, _, name = name.rpartition("::")
        return owner.replace("::", "."), name
    return "", name


_JS_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)


def _kind_and_name(language: str, node: ts.Node, kind: str) -> tuple[str, str, str] | None:
    """(kind, owner, name) of a definition node, or None when it is not worth a line."""
    kind_type = node.type
    if kind_type == "variable_declarator":
        value = node.child_by_field_name("value")
        if value is None or value.type not in _JS_FUNCTION_VALUES | {"class"}:
            return None
        return (
            ("class" if value.type == "class" else "function"),
            "",
            _text(node.child_by_field_name("name")),
        )
    if language in {"c", "cpp"}:
        if kind_type == "function_definition":
            owner, name = _c_declarator_name(node)
            return (kind, owner, name) if name else None
        if kind_type == "type_definition":
            inner = node.child_by_field_name("type")
            if inner is None or inner.child_by_field_name("body") is None:
                return None  # a plain alias (`typedef int id_t;`) is not structure
            return (
                ("enum" if inner.type == "enum_specifier" else "struct"),
                "",
                _text(node.child_by_field_name("declarator")),
            )
        if (
            node.child_by_field_name("body") is None
            or node.parent is not None
            and node.parent.type == "type_definition"
        ):
            return None  # forward declarations, and bodies the typedef already names
    if language == "go":
        if kind_type == "method_declaration":
            receiver = _text(node.child_by_field_name("receiver"))
            receiver_names = re.findall(r"[A-Za-z_]\w*", receiver.split("[")[0])
            return (
                kind,
                receiver_names[-1] if receiver_names else "",
                _text(node.child_by_field_name("name")),
            )
        if kind_type == "type_spec":
            inner = node.child_by_field_name("type")
            inner_type = inner.type if inner is not None else ""
            refined = {"struct_type": "struct", "interface_type": "interface"}.get(
                inner_type, "type"
            )
            return refined, "", _text(node.child_by_field_name("name"))
    if language == "rust":
        if kind_type == "impl_item":
            return kind, "", re.sub(r"<.*", "", _text(node.child_by_field_name("type")))
        if kind_type == "mod_item" and node.child_by_field_name("body") is None:
            return None
    if kind_type == "namespace_definition" and node.child_by_field_name("name") is None:
        return kind, "", "(anonymous)"
    name = _text(node.child_by_field_name("name"))
    return (kind, "", name) if name else None


# --- signatures and docs -------------------------------------------------------------------


def _body_start(node: ts.Node) -> int | None:
    for child in node.named_children:
        if child.type == "field_initializer_list":  # C++ constructors: `: a_(a)` is not signature
            return child.start_byte
    body = node.child_by_field_name("body")
    if body is not None:
        return body.start_byte
    frontier = list(node.named_children)
    for _ in range(2):
        following: list[ts.Node] = []
        for child in frontier:
            if child.type in _BODY_TYPES:
                return child.start_byte
            following.extend(child.named_children)
        frontier = following
    return None


def _signature(source: bytes, start: int, node: ts.Node, language: str) -> str:
    end = _body_start(node)
    if end is None or end <= start:
        end = node.end_byte
    # Stop after the last header token, so a comment between it and the body stays out.
    header_end = start
    for child in node.children:
        if child.start_byte >= end:
            break
        if "comment" not in child.type:
            header_end = max(header_end, child.end_byte)
    if start < header_end < end:
        end = header_end
    text = source[start:end].decode("utf-8", "replace")
    if end == node.end_byte:
        # No body node (Go interfaces, TS object types): stop where the braces open.
        text = text.split("{", 1)[0] if "{" in text else text.split("\n", 1)[0]
    if language == "ruby":
        text = text.split("\n", 1)[0]
    text = " ".join(text.split()).rstrip("{:=; ").rstrip()
    text = re.sub(
        r"([(\[]) | ([)\]])|, ([)\]])", lambda m: m.group(1) or m.group(2) or m.group(3), text
    )
    if language == "python":
        # The icon already says def or class, and every method takes self: spend no tokens on them.
        text = _PY_KEYWORD.sub(r"\1", text)
        text = _PY_SELF.sub("(", text)
    # Long default values (`=GET_ITERATOR_CHUNK_SIZE`, `=frozenset({...})`) become `=…`: the
    # parameter's name is the structure; unfold shows the value.
    text = _LONG_DEFAULT.sub("=…", text)
    return text if len(text) <= SIGNATURE_CHARS else text[: SIGNATURE_CHARS - 1] + "…"


DOC_WORDS_CHARS = 40


def _few_words(doc: str) -> str:
    """The doc line cut at a word boundary near DOC_WORDS_CHARS: enough to say what it is for."""
    doc = doc.rstrip("…")
    if len(doc) <= DOC_WORDS_CHARS:
        return doc
    cut = doc[:DOC_WORDS_CHARS].rsplit(" ", 1)[0]
    return cut.rstrip(",;:(") + "…"


_PY_KEYWORD = re.compile(r"^(async )?(?:def|class) ")
_LONG_DEFAULT = re.compile(
    r"(?<=[\w\]])\s?=\s?(?!=|>)(?:[^,()\[\]{}<>]|\([^()]*\)|\[[^\[\]]*\]|\{[^{}]*\}){13,}?(?=\s*[,)])"
)
_PY_SELF = re.compile(r"\((?:self|cls)(?:, |(?=\)))")


_COMMENT_MARKS = re.compile(r"^\s*(?:/\*\*?|\*/|\*|///?|//!|#+|--)\s?")


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = _COMMENT_MARKS.sub("", line).strip().strip("*/").strip().strip("\"'").strip()
        if line:
            return line if len(line) <= DOC_CHARS else line[: DOC_CHARS - 1] + "…"
    return ""


_LINE_COMMENTS: dict[str, tuple[str, ...]] = {
    "ruby": ("#",),
    "bash": ("#",),
    "php": ("//", "/*", "*", "#"),
}
_C_COMMENTS = ("//", "/*", "*")
_ATTRIBUTE_LINE = re.compile(r"^\s*(#\[|\[|@)")


def _doc(language: str, node: ts.Node, outer: ts.Node, lines: list[str]) -> str:
    """The first line of a symbol's documentation: a Python docstring, else the comment block
    right above it (attribute lines like `#[derive]` or `[Obsolete]` may sit in between)."""
    if language == "python":
        body = node.child_by_field_name("body")
        first = body.named_children[0] if body is not None and body.named_children else None
        if (
            first is not None
            and first.type == "expression_statement"
            and first.named_children
            and first.named_children[0].type == "string"
        ):
            return _first_line(
                re.sub(r"^[rRbBuUfF]*(\"\"\"|\'\'\'|\"|')", "", _text(first.named_children[0]))
            )
        return ""
    prefixes = _LINE_COMMENTS.get(language, _C_COMMENTS)
    row = outer.start_point[0] - 1
    while (
        row >= 0
        and _ATTRIBUTE_LINE.match(lines[row])
        and not lines[row].lstrip().startswith(prefixes)
    ):
        row -= 1
    if (
        row < 0
        or not lines[row].lstrip().startswith(prefixes)
        and not lines[row].rstrip().endswith("*/")
    ):
        return ""
    top = row
    while top > 0 and lines[top - 1].lstrip().startswith(prefixes):
        top -= 1
    return _first_line(re.sub(r"</?\w+[^>]*>", "", "\n".join(lines[top : row + 1])))


# --- outline ---------------------------------------------------------------------------------


def _outer(node: ts.Node) -> ts.Node:
    """The node whose range a symbol spans: decorators and `export` belong to it."""
    outer = node
    if (
        node.type == "variable_declarator"
        and node.parent is not None
        and node.parent.named_child_count == 1
    ):
        outer = node.parent
    if node.type == "type_spec" and node.parent is not None and node.parent.named_child_count == 1:
        outer = node.parent  # Go: `type X struct` is one type_declaration holding one type_spec
    while outer.parent is not None and outer.parent.type in {
        "decorated_definition",
        "export_statement",
        "template_declaration",
    }:
        outer = outer.parent
    return outer


_IMPORT_WORDS = re.compile(
    r"^\s*(?:#\s*include|import|use|using|from|require(?:_relative)?)\s+(?:static\s+|type\s+)?"
)


def _import_label(text: str) -> str:
    """`from a.b import c` → `a.b`, `import x from "y"` → `"y"`: the dependency, tersely."""
    text = " ".join(text.split()).rstrip(";")
    if " from " in text and not text.startswith("from "):
        return text.rsplit(" from ", 1)[1].strip()
    label = _IMPORT_WORDS.sub("", text)
    label = label.split(" import ", 1)[0]
    return label[:60]


def _read_source(path: Path, max_bytes: int) -> bytes:
    _check_file(path, max_bytes)
    try:
        source = path.read_bytes()
    except OSError as exc:
        raise OutlineError(f"{path}: cannot read ({exc.strerror})") from exc
    if b"\0" in source[:8192]:
        raise OutlineError(f"{path}: a binary file has no outline")
    return source


def _check_file(path: Path, max_bytes: int) -> None:
    """Refuse before reading: missing, not a regular file (fifo, device, folder), too big."""
    try:
        info = path.stat()
    except FileNotFoundError as exc:
        raise OutlineError(f"{path}: no such file") from exc
    except OSError as exc:
        raise OutlineError(f"{path}: cannot read ({exc.strerror})") from exc
    if not path.is_file():
        raise OutlineError(f"{path}: not a regular file")
    if info.st_size > max_bytes:
        raise OutlineError(
            f"{path}: {info.st_size} bytes is over the {max_bytes}-byte limit; read a range of it instead"
        )


def outline_source(source: bytes, *, language: str, path: str = "") -> Outline:
    """1. parse; 2. capture definitions and imports in one query; 3. name them and nest them
    by byte range (a stack of open symbols); 4. drop what adds noise, not structure."""
    parser, query = _parser_and_query(language)
    spec = LANGUAGES[language]
    tree = parser.parse(source)
    lines = source.decode("utf-8", "replace").splitlines()
    nodes = ts.QueryCursor(query).captures(tree.root_node).get("node", [])
    nodes.sort(key=lambda n: (n.start_byte, -n.end_byte))
    imports: list[str] = []
    roots: list[Symbol] = []
    stack: list[Symbol] = []
    for node in nodes:
        if node.type in spec.imports:
            while stack and stack[-1].end_byte <= node.start_byte:
                stack.pop()
            # Imports inside functions are detail; the file's dependencies are the top-level ones.
            if not any(open_symbol.kind in _FUNCTIONS for open_symbol in stack):
                label = _import_label(_text(node))
                if label not in imports:
                    imports.append(label)
            continue
        found = _kind_and_name(language, node, spec.defs[node.type])
        if found is None:
            continue
        kind, owner, name = found
        outer = _outer(node)
        while stack and stack[-1].end_byte <= outer.start_byte:
            stack.pop()
        parent = stack[-1] if stack else None
        # Arrow functions assigned inside function bodies are local detail, not structure.
        if node.type == "variable_declarator" and parent is not None and parent.kind in _FUNCTIONS:
            continue
        if kind == "function" and (
            owner or parent is not None and parent.kind in spec.method_parents
        ):
            kind = "method"
        elif kind == "method" and (parent is None or parent.kind in _FUNCTIONS) and not owner:
            kind = "function"
        sig_start = node.start_byte if language == "python" else outer.start_byte
        symbol = Symbol(
            name=name,
            kind=kind,
            signature=_signature(source, sig_start, node, language)
            + (f" {name}" if node.type == "type_definition" else ""),
            start_line=outer.start_point[0] + 1,
            end_line=outer.end_point[0] + 1,
            doc=_doc(language, node, outer, lines),
            owner=owner,
            exported=outer.type == "export_statement",
            parent=parent,
            start_byte=outer.start_byte,
            end_byte=outer.end_byte,
        )
        (parent.children if parent is not None else roots).append(symbol)
        stack.append(symbol)
    text_lines = source.count(b"\n") + (0 if source.endswith(b"\n") or not source else 1)
    return Outline(
        path=path,
        language=language,
        lines=text_lines,
        imports=imports,
        symbols=roots,
        source_tokens=estimate_tokens(source.decode("utf-8", "replace")),
        has_errors=tree.root_node.has_error,
    )


def smart_outline(
    path: Path, *, display: str | None = None, max_bytes: int = MAX_FILE_BYTES
) -> Outline:
    """The outline of one file; raises OutlineError for files cmem cannot outline."""
    _check_file(path, max_bytes)
    language = language_for(path)
    if language is None:
        supported = ", ".join(sorted(set(EXTENSIONS)))
        raise OutlineError(
            f"{path}: no grammar for '{path.suffix or path.name}' files (outlines cover {supported}); read the file instead"
        )
    source = _read_source(path, max_bytes)
    return outline_source(source, language=language, path=display or str(path))


# --- unfold ------------------------------------------------------------------------------------


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
    _check_file(path, max_bytes)
    language = language_for(path)
    if language is None:
        raise OutlineError(
            f"{path}: no grammar for '{path.suffix or path.name}' files; read the file instead"
        )
    source = _read_source(path, max_bytes)
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


# --- search ------------------------------------------------------------------------------------


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
