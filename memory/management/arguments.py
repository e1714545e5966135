"""The options of the verbs the CLI parses before Django starts, importable without Django.

`cmem_site/frontend.py` builds a verb's parser from here first, so a usage error (`cmem
install --agent nosuch`, `cmem search --limit x`) is answered in the time Python starts,
not after Django's setup; and cmem_site/quick.py answers the worker's read-only verbs from
the same parse. Each management command's `add_arguments` calls the same function, so both
paths accept exactly the same options.
"""

from __future__ import annotations

from argparse import ArgumentParser
from collections.abc import Callable
from pathlib import Path

# memory.retrieval.search.query.MODES, spelled here because that module imports the models
# (tests/cli/test_fast_cli.py checks that the two agree).
SEARCH_MODES = ("hybrid", "keyword", "semantic")


def add_status_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="Print one JSON object instead.")


def add_search_arguments(parser: ArgumentParser) -> None:
    parser.add_argument(
        "text", nargs="*", help='Words; "a phrase"; word* for a prefix. None: the newest rows.'
    )
    parser.add_argument("--project", default=None)
    parser.add_argument("--type", default="", help="Observation types, comma-separated.")
    parser.add_argument(
        "--kind", default="", help="observation, summary, prompt (comma-separated)."
    )
    parser.add_argument("--file", default=None)
    parser.add_argument("--concept", default=None)
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--json", action="store_true", help="The hits as JSON (as /api/search).")
    parser.add_argument(
        "--mode",
        choices=SEARCH_MODES,
        default="hybrid",
        help="keyword (words), semantic (meaning) or hybrid (both, fused; the default).",
    )


def add_show_arguments(parser: ArgumentParser) -> None:
    parser.add_argument(
        "ids",
        nargs="+",
        help="Ids as `cmem search` prints them: 12 or #12 (observation), S3 (summary), P4 (prompt).",
    )
    parser.add_argument("--json", action="store_true", help="Print one JSON object instead.")
    parser.add_argument(
        "--tool-uses",
        action="store_true",
        help="Also print the raw tool input and output each was made from (as recorded, "
        "redacted, 64 KB a payload at most).",
    )


def add_timeline_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("anchor", nargs="?", help="123 (observation), S12 (summary), P7 (prompt).")
    parser.add_argument("--query", default=None, help="Anchor on the best match of this search.")
    parser.add_argument("--project", default=None, help="Only this project (with --query).")
    parser.add_argument("--depth", type=int, default=5, help="Items on each side (default 5).")
    parser.add_argument("--json", action="store_true", help="The same as GET /api/timeline.")


def add_logs_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("-n", "--lines", type=int, default=50, help="Lines per file (default 50).")
    parser.add_argument("-f", "--follow", action="store_true", help="Keep printing new lines.")
    parser.add_argument(
        "--all",
        action="store_true",
        help="Also the queue's once-a-minute heartbeat lines (left out by default).",
    )


def add_open_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", default="/", help="Page to open, e.g. /work/.")
    parser.add_argument(
        "--print", action="store_true", help="Only print the link, open no browser."
    )


def add_stats_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("--project", default=None, help="Only this project.")
    parser.add_argument("--days", type=int, default=30, help="How far back (default 30).")
    parser.add_argument(
        "--by",
        choices=["day", "project", "session", "all"],
        default="all",
        help="Which breakdown to print.",
    )
    parser.add_argument(
        "--sessions", type=int, default=10, help="Sessions listed, best first (default 10)."
    )
    parser.add_argument("--json", action="store_true", help="The same report as GET /api/ledger.")


def add_install_arguments(parser: ArgumentParser) -> None:
    # install and uninstall only: the agents' table imports every installer (20-100 ms)
    from memory.management.install_arguments import (
        add_agent_arguments,
        add_claude_settings_argument,
        add_codex_home_argument,
    )

    add_claude_settings_argument(parser)
    parser.add_argument(
        "--plugin-dir",
        type=Path,
        default=None,
        help="Also write a Claude Code plugin folder here.",
    )
    parser.add_argument("--no-mcp", action="store_true", help="Do not register the MCP server.")
    parser.add_argument(
        "--codex",
        action="store_true",
        help=(
            "Install the Codex CLI hooks ($CODEX_HOME/hooks.json) and trust them, and register "
            "the MCP server in $CODEX_HOME/config.toml, instead."
        ),
    )
    add_codex_home_argument(parser)
    add_agent_arguments(parser)


def add_uninstall_arguments(parser: ArgumentParser) -> None:
    # install and uninstall only: the agents' table imports every installer (20-100 ms)
    from memory.management.install_arguments import (
        add_agent_arguments,
        add_claude_settings_argument,
        add_codex_home_argument,
    )

    add_claude_settings_argument(parser)
    parser.add_argument("--keep-mcp", action="store_true", help="Leave the MCP server registered.")
    parser.add_argument(
        "--keep-plugin",
        action="store_true",
        help="Leave the Claude Code plugin installed (remove only the settings.json hooks).",
    )
    parser.add_argument(
        "--codex", action="store_true", help="Remove the Codex CLI hooks and MCP server instead."
    )
    parser.add_argument(
        "--keep-worker",
        action="store_true",
        help="Leave the worker running (by default it is stopped: nothing feeds it any more).",
    )
    add_codex_home_argument(parser)
    add_agent_arguments(parser)


def add_start_arguments(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="Seconds to wait for /api/health."
    )


def add_stop_arguments(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--timeout", type=float, default=20.0, help="Seconds before escalating to SIGKILL."
    )


# The verbs whose parser needs no Django; the front end parses these first.
def add_watch_arguments(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--agent",
        choices=("continue",),
        default=None,
        help="The agent whose session files to follow (default: CLAUDE_MEM_WATCH's, else all).",
    )
    parser.add_argument(
        "--once",
        action="store_true",
        help="Deliver what is new now and exit (starts the worker if it is down).",
    )
    parser.add_argument(
        "--interval", type=float, default=None, help="Seconds between passes (default 2)."
    )


VERB_ARGUMENTS: dict[str, Callable[[ArgumentParser], None]] = {
    "status": add_status_arguments,
    "search": add_search_arguments,
    "show": add_show_arguments,
    "timeline": add_timeline_arguments,
    "logs": add_logs_arguments,
    "open": add_open_arguments,
    "stats": add_stats_arguments,
    "install": add_install_arguments,
    "uninstall": add_uninstall_arguments,
    "start": add_start_arguments,
    "restart": add_start_arguments,
    "stop": add_stop_arguments,
    "watch": add_watch_arguments,
}


# Each verb's description (its `--help` text and its management command's `help`): here, so
# that `cmem VERB --help` is answered before Django starts, like a usage error.
VERB_HELP: dict[str, str] = {
    "status": (
        "Say whether the cmem worker runs, with pid, URL, version, uptime and pending work."
    ),
    "search": (
        "Search memory (observations, summaries, prompts) and print the index, best match first."
    ),
    "show": (
        "Print observations in full (title, narrative, facts, files, concepts), in the order given."
    ),
    "timeline": (
        "What happened around an anchor (an observation id, S<id>, P<id>) or the best "
        "match of --query."
    ),
    "logs": (
        "Show the last lines of the worker's logs (<data dir>/logs); -f keeps following "
        "them. The queue's once-a-minute heartbeat lines are left out unless --all."
    ),
    "open": ("Open the web app in a browser, logged in with a one-time link (starts the worker)."),
    "stats": (
        "Net token savings of cmem per day, project and session: reads the gate avoided, "
        "minus what cmem put into context (indexes, timelines) and what the observer "
        "spent."
    ),
    "install": (
        "Write cmem's hooks into Claude Code's settings (idempotent) and register the MCP server."
    ),
    "uninstall": (
        "Remove cmem from Claude Code, whichever way it was installed: its hooks (and "
        "only them) in settings.json, its MCP server, and the cmem plugin (through "
        "`claude plugin uninstall` when `claude` is on PATH; else it says what to run)."
    ),
    "start": "Start the cmem worker in the background and wait until it answers.",
    "restart": "Stop the background cmem worker (if running) and start it again.",
    "stop": "Stop the background cmem worker and check that nothing of it is left running.",
    "watch": (
        "Follow the session files of an agent that writes its sessions to disk but runs no "
        "hooks (Continue CLI: ~/.continue/sessions/) and feed each new prompt, tool use and "
        "finished turn to the worker, like a hook. What was read is kept in the data dir's "
        "watch/ folder, so nothing is read twice. --once delivers what is new and exits; "
        "without it, it follows until stopped (the worker runs it when CLAUDE_MEM_WATCH is set)."
    ),
}
