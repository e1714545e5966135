"""cmem's own command line: `cmem VERB …` with cmem's options only.

argparse (the standard library): the verbs' options are already argparse calls in their
management commands, so the front end hands each command a parser of its own instead of
Django's (no --settings/--pythonpath/--traceback on every verb, no 40 Django commands in the
help) and runs the command's handler. Django's commands stay reachable as `cmem manage …`.

Errors: a user mistake is one line on stderr and exit 2; a command that cannot do its job
(CommandError) one line and exit 1; no tracebacks unless CMEM_TRACEBACK=1.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

from cmem_site.verbs import BY_NAME, EXIT_CODES, Verb, help_text
from memory.management.arguments import VERB_ARGUMENTS, VERB_HELP

USAGE = 2
FAILURE = 1

# What Django's BaseCommand.execute() expects beside the command's own options.
DJANGO_DEFAULTS: dict[str, Any] = {
    "verbosity": 1,
    "settings": None,
    "pythonpath": None,
    "traceback": False,
    "no_color": False,
    "force_color": False,
    "skip_checks": True,  # the system checks cost a second and guard nothing a user can fix
}


class CmemParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line naming the verb and where help is."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=30)


def verb_parser(verb: Verb, description: str) -> CmemParser:
    examples = "\n".join(f"  {line}" for line in verb.examples)
    return CmemParser(
        prog=f"cmem {verb.name}",
        description=description or verb.summary,
        epilog=f"examples:\n{examples}\n\n{EXIT_CODES}",
        formatter_class=_formatter,
    )


def _django_setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cmem_site.settings")
    # CLI start: Django only for a verb that runs, never for `cmem --help`
    import django

    django.setup()


def _say(message: str) -> None:
    sys.stderr.write(message.rstrip() + "\n")


def _extra_arguments(verb: Verb, parser: argparse.ArgumentParser) -> None:
    if verb.name in {"install", "uninstall"}:
        # The README of old said `--settings FILE`; here it cannot be taken for Django's.
        parser.add_argument("--settings", dest="claude_settings", type=Path, help=argparse.SUPPRESS)
    if verb.name == "migrate":
        parser.add_argument(
            "-v", "--verbosity", type=int, choices=(0, 1, 2, 3), default=1, help="0 = quiet."
        )


def run_verb(verb: Verb, argv: list[str]) -> int:
    """Parse, then answer: from the fast path (cmem_site/quick.py) when it can, else by the
    verb's management command under Django.

    A verb whose options need no Django (memory/management/arguments.py) is parsed before
    Django is imported, so a usage error or `--help` costs what Python's start costs."""
    add = VERB_ARGUMENTS.get(verb.name)
    if add is not None:
        parser = verb_parser(verb, VERB_HELP.get(verb.name, verb.summary))
        add(parser)
        _extra_arguments(verb, parser)
        options = vars(parser.parse_args(argv))
        # CLI start: the fast path's modules only for a verb that has one
        from cmem_site import quick

        code = quick.run(verb.name, options)
        return code if code is not None else run_command(verb, options)
    return run_command(verb, argv)


def run_command(verb: Verb, argv: list[str] | dict[str, Any]) -> int:
    """The verb's management command under Django, on `argv` or on options parsed already."""
    # CLI start: Django's management machinery only for a verb that runs
    from django.core.management import load_command_class
    from django.core.management.base import CommandError

    _django_setup()
    command = load_command_class("memory", verb.command_name)
    if isinstance(argv, dict):
        options = {**DJANGO_DEFAULTS, **argv}
    else:
        parser = verb_parser(verb, str(command.help or ""))
        command.add_arguments(parser)  # type: ignore[arg-type]  # argparse is all they use
        _extra_arguments(verb, parser)
        options = {**DJANGO_DEFAULTS, **vars(parser.parse_args(argv))}
    try:
        command.execute(**options)
    except CommandError as exc:
        _say(f"cmem {verb.name}: {exc}")
        # 2 only when the command says so (input refused whole, as `cmem import markdown`
        # does for a bad file); Django's default is 1.
        return exc.returncode if exc.returncode != 0 else FAILURE
    except KeyboardInterrupt:
        return 130
    return 0


def run_manage(argv: list[str]) -> int:
    _django_setup()
    # CLI start: Django only for `cmem manage`
    from django.core.management import ManagementUtility

    utility = ManagementUtility(["cmem manage", *(argv or ["help"])])
    utility.prog_name = "cmem manage"
    utility.execute()
    return 0


def data_dir_blocked(verb: Verb, argv: list[str], data_dir: Path) -> int | None:
    """The exit code when the data dir is a file (every verb would fail on it with
    FileExistsError, Django's setup first); None when it is a folder or not made yet.
    `cmem doctor` reports it as its finding, in its own format."""
    if not data_dir.exists() or data_dir.is_dir() or {"-h", "--help"} & set(argv):
        return None
    what = f"the data dir {data_dir} is a file, not a folder"
    fix = "move that file away (cmem makes the folder), or point CLAUDE_MEM_DATA_DIR at a folder"
    if verb.name == "doctor":
        sys.stdout.write(f"FAIL  {what}\n      fix: {fix}\n")
        _say("cmem doctor: 1 problem(s) found")
    else:
        _say(f"cmem {verb.name}: {what}; {fix}")
    return FAILURE


def _pipe_closed() -> int:
    """The reader went away (`cmem status | head -1`): stop quietly, as `cat` would, and keep
    the interpreter's last flush from saying so on stderr."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 0


def run(argv: list[str]) -> int:
    # CLI start: importing this module stays free of config (timed by `-X importtime`)
    from memory import config

    if not argv or argv[0] in {"-h", "--help", "help"}:
        if len(argv) > 1 and argv[0] == "help":  # `cmem help search` = `cmem search --help`
            return run([argv[1], "--help"])
        sys.stdout.write(help_text(config.VERSION))
        return 0
    name, rest = argv[0], argv[1:]
    if name == "manage":
        return run_manage(rest)
    verb = BY_NAME.get(name)
    if verb is None:
        _say(f"cmem: {name!r} is not a cmem command (see `cmem --help`)")
        return USAGE
    blocked = data_dir_blocked(verb, rest, config.data_dir())
    if blocked is not None:
        return blocked
    try:
        code = run_verb(verb, rest)
        sys.stdout.flush()  # here, so that a closed pipe is caught below, not at exit
        return code
    except BrokenPipeError:
        return _pipe_closed()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else FAILURE)
    except Exception as exc:
        if os.environ.get("CMEM_TRACEBACK"):
            raise
        _say(
            f"cmem {name} failed: {type(exc).__name__}: {exc} "
            "(set CMEM_TRACEBACK=1 for the traceback; `cmem doctor` checks the installation)"
        )
        return FAILURE
