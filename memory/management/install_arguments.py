"""Options `cmem install`, `cmem uninstall` and `cmem doctor` share, spelled the same in all three."""

from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path


def add_claude_settings_argument(
    parser: ArgumentParser,
    *,
    help: str = "Claude Code settings file (default ~/.claude/settings.json).",
) -> None:
    # `--claude-settings` is the older spelling, kept so existing scripts still work.
    parser.add_argument(
        "--settings-file",
        "--claude-settings",
        dest="claude_settings",
        type=Path,
        default=None,
        help=help,
    )


def add_codex_home_argument(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--codex-home", type=Path, default=None, help="Default $CODEX_HOME or ~/.codex."
    )
