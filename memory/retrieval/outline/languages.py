"""The grammars cmem outlines: which tree-sitter wheel serves which file extension, which node
types are definitions (and what kind of symbol each is) and which are imports.

tree_sitter and the grammar wheels are imported on first parse, not on import, so the MCP
server starts without loading them until an agent asks for an outline.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tree_sitter as ts

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
CONTAINERS = frozenset({"class", "struct", "record", "interface", "trait", "impl", "enum"})
FUNCTIONS = frozenset({"function", "method"})


@dataclass(frozen=True)
class LanguageSpec:
    name: str
    module: str
    loader: str
    # Definition node type -> symbol kind (special cases refine it in _kind_and_name).
    defs: dict[str, str]
    imports: frozenset[str] = frozenset()
    # Container kinds whose functions are methods (Ruby's modules hold methods too).
    method_parents: frozenset[str] = CONTAINERS


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
            method_parents=CONTAINERS | {"module"},
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


def language_for(path: Path) -> str | None:
    return EXTENSIONS.get(path.suffix.lower())


@cache
def parser_and_query(language: str) -> tuple[ts.Parser, ts.Query]:
    """One parser and one query per language, capturing every definition and import node."""
    # MCP start: tree-sitter loads on the first outline
    import tree_sitter as ts

    spec = LANGUAGES[language]
    module = importlib.import_module(spec.module)
    lang = ts.Language(getattr(module, spec.loader)())
    types = sorted(set(spec.defs) | spec.imports)
    return ts.Parser(lang), ts.Query(lang, "[" + " ".join(f"({t})" for t in types) + "] @node")
