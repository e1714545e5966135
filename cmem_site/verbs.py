"""cmem's verbs: the one table `cmem --help` and `cmem VERB --help` are made from.

Each verb is a management command of the `memory` app (memory/management/commands/<command>.py)
that the front end (cmem_site/frontend.py) runs with its own parser, so Django's flags never
reach the user. A later verb is one more row here; a later agent flag (`install --gemini`) is
one more argument in its command.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Verb:
    name: str
    group: str
    summary: str
    examples: tuple[str, ...]
    command: str = ""  # the management command; defaults to the verb's name

    @property
    def command_name(self) -> str:
        return self.command or self.name


GROUPS = ("service", "agents", "memory", "corrections", "team", "tools")

VERBS: tuple[Verb, ...] = (
    # service
    Verb("setup", "service", "The whole first run: migrate, start the worker, install hooks and MCP for the agents found, check.", ("cmem setup",)),
    Verb("serve", "service", "Run the worker (web app + queue consumer) in the foreground.", ("cmem serve", "cmem serve --no-migrate")),
    Verb("start", "service", "Start the worker in the background and wait until it answers.", ("cmem start",)),
    Verb("stop", "service", "Stop the background worker.", ("cmem stop",)),
    Verb("restart", "service", "Stop the worker (if running) and start it again.", ("cmem restart",)),
    Verb("status", "service", "Whether the worker runs: pid, URL, version, uptime, pending work.", ("cmem status", "cmem status --json")),
    Verb("logs", "service", "The last lines of the worker's logs; -f follows them.", ("cmem logs -n 100", "cmem logs -f")),
    Verb("open", "service", "Open the dashboard in the browser (prints its URL when there is none).", ("cmem open",)),
    Verb("doctor", "service", "Check the installation and say how to fix each problem.", ("cmem doctor",)),
    Verb("migrate", "service", "Create or update the database tables.", ("cmem migrate",), command="cmem_migrate"),
    # agents
    Verb("install", "agents", "Install cmem's hooks and MCP server for Claude Code (or --codex, --gemini, --copilot, --opencode, --qwen, --kilo, --droid).", ("cmem install", "cmem install --codex", "cmem install --gemini", "cmem install --settings-file ./.claude/settings.json")),
    Verb("uninstall", "agents", "Remove cmem's hooks (and only them), its MCP server and its Claude Code plugin.", ("cmem uninstall", "cmem uninstall --keep-plugin", "cmem uninstall --codex")),
    Verb("hook", "agents", "What agents run on each event (reads the event on stdin; always exits 0).", ("echo '{\"session_id\": \"s1\", \"cwd\": \"/tmp\"}' | cmem hook claude-code context",)),
    Verb("watch", "agents", "Follow the session files of an agent without hooks (Continue CLI) into memory; the worker runs it when CLAUDE_MEM_WATCH is set.", ("cmem watch --once", "cmem watch --agent continue")),
    Verb("mcp", "agents", "Run cmem's MCP server on stdio (the agent starts it; quiet unless --verbose).", ("cmem mcp", "cmem mcp --verbose")),
    # memory
    Verb("search", "memory", "Search observations, summaries and prompts; best match first.", ("cmem search login bug", 'cmem search "rate limit" --project shop --json', "cmem search 'why do refunds disagree' --mode semantic")),
    Verb("show", "memory", "Print observations in full, by id (--tool-uses: with the raw tool input and output).", ("cmem show 12 15", "cmem show 12 --tool-uses")),
    Verb("timeline", "memory", "What happened around an observation (or the best match of a query).", ("cmem timeline 12", "cmem timeline --query 'login bug' --depth 5")),
    Verb("forget", "memory", "Delete observations by query, ids, project or dates (dry run unless --yes).", ("cmem forget 'api key'", "cmem forget --ids 12,15 --yes")),
    Verb("stats", "memory", "Net token savings per day, project and session.", ("cmem stats", "cmem stats --days 7 --by project")),
    Verb("export", "memory", "Write memory to a JSON file (or - for stdout).", ("cmem export backup.json", "cmem export - --project shop")),
    Verb("import", "memory", "Import Claude Code transcripts, a claude-mem database, Codex sessions or a cmem export.", ("cmem import claude-code", "cmem import json backup.json")),
    Verb("demo", "memory", "Load a demo history (project acme-shop) to look around.", ("cmem demo",)),
    Verb("embeddings", "memory", "Embed rows that lack a vector of the configured model (backfill), or show coverage (status).", ("cmem embeddings status", "cmem embeddings backfill")),
    Verb("consolidate", "memory", "Fold duplicates, supersede reversed decisions, demote unused memories (undoable).", ("cmem consolidate --dry-run", "cmem consolidate --project shop --mode rules")),
    Verb("sync", "memory", "Sync memory with your other machines through a git remote you control (--encrypt seals it).", ("cmem sync --remote git@host:me/memory.git --encrypt", "cmem sync", "cmem sync --dry-run", "cmem sync --status")),
    Verb("prune", "memory", "Empty old raw payloads (observations stay), then VACUUM.", ("cmem prune --dry-run", "cmem prune --days 14")),
    # corrections
    Verb("remember", "corrections", "Remember a decision, preference or conclusion no file shows (--topic replaces the topic's memory).", ('cmem remember "Prices are stored in cents" "Floats broke refunds." --kind decision --topic money', "cmem remember 'Prefer ruff over black' --kind preference --all-projects")),
    Verb("correct", "corrections", "Mark a memory wrong (say why), outdated, or superseded by another.", ("cmem correct 12 --wrong 'the leak was in the client'", "cmem correct 12 --outdated", "cmem correct 12 --superseded-by 40")),
    Verb("pin", "corrections", "Pin a memory: it leads every SessionStart index of its project.", ("cmem pin 12",)),
    Verb("unpin", "corrections", "Unpin a memory.", ("cmem unpin 12",)),
    Verb("retire", "corrections", "Retire a memory: no longer briefed as current, still searchable, restorable.", ("cmem retire 12 --reason 'the service is gone'",)),
    Verb("restore", "corrections", "Make a retired, wrong, outdated or superseded memory current again.", ("cmem restore 12",)),
    Verb("edit", "corrections", "Edit a memory's title, type, facts and narrative in $EDITOR (--redact purges the old text).", ("cmem edit 12", "cmem edit 12 --redact --reason 'a key was pasted'")),
    Verb("history", "corrections", "Every change of a memory: what, who, why, and the agent's proposals.", ("cmem history 12",)),
    Verb("undo", "corrections", "Undo one change of a memory (a revision from `cmem history`).", ("cmem undo 41",)),
    # team
    Verb("token", "team", "Team mode: create, list and revoke API tokens.", ("cmem token create alice --name laptop", "cmem token list", "cmem token revoke 3")),
    Verb("share", "team", "Team mode: share a project's memory with the whole team, or --with named teammates (read only).", ("cmem share github.com/acme/shop", "cmem share github.com/acme/shop --with bob,carol")),
    Verb("unshare", "team", "Team mode: revoke a share, wholly or --with named teammates only.", ("cmem unshare github.com/acme/shop", "cmem unshare github.com/acme/shop --with bob")),
    Verb("shares", "team", "Team mode: list your shares (staff, or on the server: every share).", ("cmem shares", "cmem shares --json")),
    # tools
    Verb("bench", "tools", "What a hook costs on this machine (the other benchmarks: `make bench` in a checkout).", ("cmem bench hooks", "cmem bench hooks --quick")),
)  # fmt: skip

BY_NAME = {verb.name: verb for verb in VERBS}

EXIT_CODES = (
    "exit codes: 0 ok, 1 failure, 2 usage error or input refused whole (`cmem import markdown`); "
    "`cmem status` exits 3 when the worker is not running; `cmem hook` always exits 0 (an agent takes 2 for 'block')."
)


def help_text(version: str) -> str:
    width = max(len(verb.name) for verb in VERBS)
    lines = [
        "usage: cmem <command> [options]",
        "",
        f"cmem {version}: persistent memory for coding agents.",
        "First run: `cmem setup`, then `cmem open`.",
    ]
    for group in GROUPS:
        lines += ["", f"{group}:"]
        lines += [f"  {v.name:<{width}}  {v.summary}" for v in VERBS if v.group == group]
    lines += [
        "",
        "options:",
        f"  {'--version':<{width}}  print cmem's version",
        f"  {'--help':<{width}}  this help; `cmem <command> --help` for a command's options and examples",
        "",
        EXIT_CODES,
        "Django's own management commands: `cmem manage help`.",
    ]
    return "\n".join(lines) + "\n"
