"""Codex has no Read tool: the model reads files with shell commands. A command that does
nothing but read one or a few files (`cat`, `head`, `tail`, `sed -n 'N,Mp'`, `nl`, `less`)
goes through the same file-read gate as Claude Code's Read; anything else (pipes, `&&`,
redirections, expansions, globs, unknown options) passes untouched, because guessing what a
complex command reads is how a gate ends up in the way.

A pure parser (no service, no settings): the Codex adapter imports it; the gate call that
uses it is `shell_read_gate` in memory/hooks/codex_rules.py.
"""

from __future__ import annotations

import re
import shlex

MAX_PATHS = 4
# Characters that make a command more than "a program and its words": separators, pipes,
# redirections, expansions, globs, subshells, home expansion. Any of them: not a plain read.
_COMPLEX = re.compile(r"[|;&<>$`(){}*?\[\]~!\n\\#]")
_NUMBER = re.compile(r"^[+-]?\d+[kKmMbB]?$")
# `sed -n` scripts that only print line ranges: 5p, 1,40p, 10,$p, several joined by ';'.
_SED_PRINT = re.compile(
    r"^\s*\d+(\s*,\s*(\d+|\$))?\s*p(\s*;\s*\d+(\s*,\s*(\d+|\$))?\s*p)*\s*;?\s*$"
)
_CAT_FLAGS = set("AbeEnstTuv")
_LESS_FLAGS = set("NSRriFXsemM")
_NL_FLAG = re.compile(r"^-(b[atn]|n(ln|rn|rz)|w\d+|s.|v\d+|i\d+|ba|p)$")


def _words(command: str) -> list[str] | None:
    # Single quotes expand nothing in a shell, so their content (`sed -n '10,$p'`) is
    # literal; everything outside them must be plain words.
    if not command.strip() or _COMPLEX.search(re.sub(r"'[^']*'", "''", command)):
        return None
    try:
        return shlex.split(command)
    except ValueError:
        return None


def _plain_flags(args: list[str], allowed: set[str]) -> list[str] | None:
    """Paths of `prog [-flags] PATH…` where every flag letter is in `allowed`."""
    paths: list[str] = []
    options_done = False
    for arg in args:
        if not options_done and arg == "--":
            options_done = True
        elif not options_done and arg.startswith("-") and arg != "-":
            if not set(arg[1:]) <= allowed:
                return None
        else:
            paths.append(arg)
    return paths


def _head_tail(args: list[str]) -> list[str] | None:
    paths: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in {"-n", "-c", "--lines", "--bytes"}:
            if i + 1 >= len(args) or not _NUMBER.match(args[i + 1]):
                return None
            i += 2
            continue
        if re.match(r"^-[nc][+-]?\d+[kKmMbB]?$", arg) or re.match(r"^-\d+$", arg):
            i += 1
            continue
        if re.match(r"^--(lines|bytes)=[+-]?\d+$", arg) or arg in {"-q", "-v"}:
            i += 1
            continue
        if arg.startswith("-"):
            return None  # -f (follow) and friends: not a plain read
        paths.append(arg)
        i += 1
    return paths


def _sed(args: list[str]) -> list[str] | None:
    """Only `sed -n [-e] 'N,Mp' PATH…`: printing line ranges, never editing."""
    quiet = False
    script = ""
    paths: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in {"-n", "--quiet", "--silent"}:
            quiet = True
        elif arg == "-e" and i + 1 < len(args) and not script:
            script = args[i + 1]
            i += 1
        elif arg.startswith("-"):
            return None  # -i edits in place; anything else is not a plain print
        elif not script:
            script = arg
        else:
            paths.append(arg)
        i += 1
    if not quiet or not _SED_PRINT.match(script):
        return None
    return paths


def _nl(args: list[str]) -> list[str] | None:
    paths = []
    for arg in args:
        if arg.startswith("-") and arg != "-":
            if not _NL_FLAG.match(arg):
                return None
        else:
            paths.append(arg)
    return paths


def shell_read_paths(command: str) -> list[str]:
    """The files a read-only shell command reads, as written; [] when it is anything else."""
    words = _words(command)
    if not words or "=" in words[0]:
        return []
    program, args = words[0].rsplit("/", 1)[-1], words[1:]
    if program == "cat":
        paths = _plain_flags(args, _CAT_FLAGS)
    elif program == "less":
        paths = _plain_flags(args, _LESS_FLAGS)
    elif program in {"head", "tail"}:
        paths = _head_tail(args)
    elif program == "sed":
        paths = _sed(args)
    elif program == "nl":
        paths = _nl(args)
    else:
        return []
    if not paths or len(paths) > MAX_PATHS or "-" in paths:
        return []
    return paths
