"""Source bytes to an Outline: one tree-sitter query captures every definition node in C;
Python then names them, nests them by byte range and cuts signatures at the start of the
body. Also the file checks every entry point makes before reading (missing, binary, too big).
This package imports no Django: the MCP server uses it directly, in the agent's own process.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from memory.retrieval.outline.languages import FUNCTIONS, LANGUAGES, parser_and_query
from memory.retrieval.outline.model import Outline, OutlineError, Symbol, estimate_tokens

if TYPE_CHECKING:
    import tree_sitter as ts

MAX_FILE_BYTES = 1024 * 1024
SIGNATURE_CHARS = 160
DOC_CHARS = 60
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


def read_source(path: Path, max_bytes: int) -> bytes:
    check_file(path, max_bytes)
    try:
        source = path.read_bytes()
    except OSError as exc:
        raise OutlineError(f"{path}: cannot read ({exc.strerror})") from exc
    if b"\0" in source[:8192]:
        raise OutlineError(f"{path}: a binary file has no outline")
    return source


def check_file(path: Path, max_bytes: int) -> None:
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
    parser, query = parser_and_query(language)
    spec = LANGUAGES[language]
    tree = parser.parse(source)
    lines = source.decode("utf-8", "replace").splitlines()
    # MCP start: tree-sitter loads on the first outline
    from tree_sitter import QueryCursor

    nodes = QueryCursor(query).captures(tree.root_node).get("node", [])
    nodes.sort(key=lambda n: (n.start_byte, -n.end_byte))
    imports: list[str] = []
    roots: list[Symbol] = []
    stack: list[Symbol] = []
    for node in nodes:
        if node.type in spec.imports:
            while stack and stack[-1].end_byte <= node.start_byte:
                stack.pop()
            # Imports inside functions are detail; the file's dependencies are the top-level ones.
            if not any(open_symbol.kind in FUNCTIONS for open_symbol in stack):
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
        if node.type == "variable_declarator" and parent is not None and parent.kind in FUNCTIONS:
            continue
        if kind == "function" and (
            owner or parent is not None and parent.kind in spec.method_parents
        ):
            kind = "method"
        elif kind == "method" and (parent is None or parent.kind in FUNCTIONS) and not owner:
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
