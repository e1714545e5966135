"""Which files a shell command changed, read from the command line itself.

The Bash tool (and Codex's shell) edits files as often as Edit does: `printf … >> f`,
`cat > f <<EOF`, `sed -i`, `tee`, `mv`, `cp`, `rm`, `git checkout -- f`, `git restore`,
`git apply`/`patch`, formatters run with files. Each is recognised here so the file is
recorded as modified and the observation typed as a change. The parse is deliberately
conservative: a target it cannot name (a variable, a glob, a directory) is left out rather
than guessed.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

# Split a command line into simple commands; heredoc bodies are dropped first.
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1[^\n]*\n.*?\n\s*\2\s*(?:\n|$)", re.S)
_SEPARATORS = re.compile(r"\s*(?:&&|\|\||;|\n|\|(?!\|))\s*")
_NOT_FILES = ("/dev/", "&")
_FORMATTERS = {
    "black": (),
    "isort": (),
    "autopep8": ("-i", "--in-place"),
    "yapf": ("-i", "--in-place"),
    "prettier": ("--write", "-w"),
    "gofmt": ("-w",),
    "goimports": ("-w",),
    "rustfmt": (),
    "clang-format": ("-i",),
    "eslint": ("--fix",),
    "shfmt": ("-w",),
    "stylua": (),
}


@dataclass
class ShellChange:
    """What one command did to files: `kind` is the verb the offline titles use."""

    kind: str  # wrote, appended, edited, moved, copied, removed, restored, patched, formatted
    paths: list[str] = field(default_factory=list)
    tool: str = ""  # the program (sed, black…) when it says something


def _words(segment: str) -> list[str]:
    try:
        return shlex.split(segment, comments=False)
    except ValueError:
        return segment.split()


def _is_target(word: str) -> bool:
    return bool(word) and not word.startswith(_NOT_FILES) and not any(c in word for c in "$*?`")


def _operands(words: list[str]) -> list[str]:
    """Arguments that are not options (everything after `--` counts)."""
    out: list[str] = []
    rest = False
    for word in words:
        if word == "--" and not rest:
            rest = True
        elif rest or not word.startswith("-"):
            out.append(word)
    return out


def _looks_like_file(word: str) -> bool:
    return _is_target(word) and "." in word.rsplit("/", 1)[-1] and word not in {".", ".."}


def _program(words: list[str]) -> tuple[str, list[str]]:
    """The program and its arguments, past env assignments, sudo and python -m."""
    i = 0
    while i < len(words) and (
        re.match(r"^\w+=", words[i]) or words[i] in {"sudo", "env", "command"}
    ):
        i += 1
    words = words[i:]
    if not words:
        return "", []
    prog = words[0].rsplit("/", 1)[-1]
    if prog.startswith("python") and len(words) > 2 and words[1] == "-m":
        return words[2], words[3:]
    if prog in {"uv", "poetry", "pipx", "npx", "pnpm", "yarn"} and len(words) > 1:
        if words[1] == "run" and len(words) > 2:
            return words[2].rsplit("/", 1)[-1], words[3:]
        if prog in {"npx", "pnpm", "yarn"}:
            return words[1], words[2:]
    return prog, words[1:]


def _tokens(segment: str) -> list[str]:
    lexer = shlex.shlex(segment, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:
        return segment.split()


_REDIRECT_OPS = {">", ">>", ">|", "&>", "&>>"}


def _segment_changes(segment: str) -> list[ShellChange]:
    changes: list[ShellChange] = []
    tokens = _tokens(segment)
    words: list[str] = []
    skip = False
    for i, token in enumerate(tokens):
        if skip:
            skip = False
            continue
        if token in _REDIRECT_OPS and i + 1 < len(tokens):
            target = tokens[i + 1]
            if words and words[-1].isdigit():
                words.pop()  # the `2` of `2> err.log`
            if _is_target(target) and not target.isdigit():
                kind = "appended" if token.endswith(">>") else "wrote"
                changes.append(ShellChange(kind, [target]))
            skip = True
            continue
        if token in {"<", "<<", "<<<", ">&", "<&"} or token.startswith((">&", "<")):
            skip = token in {"<", "<<<"}
            continue
        words.append(token)
    prog, args = _program(words)
    if prog == "tee":
        files = [a for a in _operands(args) if _is_target(a)]
        if files:
            changes.append(ShellChange("appended" if "-a" in args else "wrote", files, "tee"))
    elif prog in {"sed", "gsed"} and any(
        a == "-i" or a.startswith(("-i", "--in-place")) for a in args
    ):
        operands = _operands([a for a in args if not a.startswith("-i")])
        has_e = any(a in {"-e", "--expression", "-f"} for a in args)
        files = operands if has_e else operands[1:]
        # `-e script` puts the script after an option: drop it from the operands.
        if has_e:
            scripts = {
                args[i + 1] for i, a in enumerate(args[:-1]) if a in {"-e", "--expression", "-f"}
            }
            files = [f for f in files if f not in scripts]
        files = [f for f in files if _is_target(f)]
        if files:
            changes.append(ShellChange("edited", files, "sed"))
    elif prog == "perl" and any(a.startswith("-pi") or a == "-i" for a in args):
        operands = _operands(args)
        scripts = {args[i + 1] for i, a in enumerate(args[:-1]) if a in {"-e", "-pe", "-pie"}}
        files = [f for f in operands if f not in scripts and _is_target(f)]
        if files:
            changes.append(ShellChange("edited", files, "perl"))
    elif prog in {"mv", "cp"}:
        operands = [a for a in _operands(args) if _is_target(a)]
        if len(operands) >= 2:
            if prog == "mv":
                changes.append(ShellChange("moved", operands, "mv"))
            else:
                changes.append(ShellChange("copied", operands[-1:], "cp"))
    elif prog in {"rm", "unlink", "truncate", "touch"}:
        operands = [a for a in _operands(args) if _is_target(a)]
        if prog == "truncate":
            operands = [a for a in operands if not re.fullmatch(r"[+-]?\d+[KMG]?", a)]
        if operands:
            kind = {"rm": "removed", "unlink": "removed", "touch": "touched"}.get(prog, "wrote")
            changes.append(ShellChange(kind, operands, prog))
    elif prog == "git" and args:
        sub, rest = args[0], args[1:]
        if sub == "checkout" and "--" in rest:
            files = [a for a in rest[rest.index("--") + 1 :] if _is_target(a)]
            if files:
                changes.append(ShellChange("restored", files, "git checkout"))
        elif sub == "restore":
            files = [a for a in _operands(rest) if _is_target(a) and a != "."]
            if files and "--staged" not in rest or ("--worktree" in rest and files):
                changes.append(ShellChange("restored", files, "git restore"))
        elif sub in {"apply", "am"}:
            changes.append(ShellChange("patched", [], f"git {sub}"))
        elif sub in {"mv", "rm"}:
            files = [a for a in _operands(rest) if _is_target(a)]
            if files:
                changes.append(
                    ShellChange("moved" if sub == "mv" else "removed", files, f"git {sub}")
                )
    elif prog == "patch":
        targets = [
            a
            for a in _operands(args)
            if _looks_like_file(a) and not a.endswith((".patch", ".diff"))
        ]
        changes.append(ShellChange("patched", targets, "patch"))
    elif (
        prog in _FORMATTERS
        or (prog == "ruff" and args[:1] == ["format"])
        or (prog == "ruff" and "--fix" in args)
    ):
        needs = _FORMATTERS.get(prog, ())
        if needs and not any(a in needs for a in args):
            return changes  # `prettier --check`, `gofmt -l`: reads only
        if "--check" in args or "--diff" in args:
            return changes
        operands = [
            a for a in _operands(args) if _looks_like_file(a) and a not in {"format", "check"}
        ]
        if operands:
            changes.append(ShellChange("formatted", operands, prog))
    return changes


def shell_changes(command: str) -> list[ShellChange]:
    """Every file change a command line names, in order."""
    text = _HEREDOC.sub("\n", command)
    out: list[ShellChange] = []
    for segment in _SEPARATORS.split(text):
        if segment.strip():
            out.extend(_segment_changes(segment.strip()))
    return out


def changed_paths(command: str) -> list[str]:
    seen: dict[str, None] = {}
    for change in shell_changes(command):
        for path in change.paths:
            seen.setdefault(path, None)
    return list(seen)
