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
    # CLI start: Django's management machinery only for a verb that runs
    from django.core.management import load_command_class
    from django.core.management.base import CommandError

    _django_setup()
    command = load_command_class("memory", verb.command_name)
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
    try:
        return run_verb(verb, rest)
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
