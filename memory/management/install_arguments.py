"""Options `cmem install`, `cmem uninstall` and `cmem doctor` share, spelled the same in all three."""

from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path

from memory.agents.install.agents import AGENTS


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


def add_agent_arguments(parser: ArgumentParser) -> None:
    """`--gemini`, `--copilot`, `--opencode`, `--qwen`, `--kilo`, `--droid` (or `--agent NAME`) and that agent's config folder."""
    for name, module in AGENTS.items():
        parser.add_argument(
            f"--{name}",
            dest="agent",
            action="store_const",
            const=name,
            help=f"{module.label} instead of Claude Code.",
        )
    parser.add_argument(
        "--agent",
        dest="agent",
        choices=["claude-code", "codex", *AGENTS],
        default=None,
        help="The agent by name (claude-code is the default).",
    )
    parser.add_argument(
        "--agent-home",
        type=Path,
        default=None,
        help="That agent's config folder (default: ~/.gemini, $COPILOT_HOME or ~/.copilot, "
        "~/.config/opencode, $QWEN_HOME or ~/.qwen, ~/.config/kilo, ~/.factory, "
        "$CONTINUE_GLOBAL_DIR or ~/.continue).",
    )
