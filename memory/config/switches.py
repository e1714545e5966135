"""The environment switches the code reads that are not settings: cmem's own processes,
tests, CI and benchmarks set them (tests/config/test_settings_registry.py finds every
`CMEM_*` name in the code and holds it to this list). They are documented with the settings
(docs/reference/settings.md) and never loaded from settings.json.

Apart from memory/config/registry.py: the settings change when a user's choices do, these
when the code grows a switch for itself.
"""

from __future__ import annotations

from memory.config.setting import Setting

# Not `typing.TYPE_CHECKING`: memory/config/setting.py says why.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from memory.config.setting import Kind

INTERNAL = "Internal switches"
INTERNAL_HELP = (
    "Environment variables the code reads that are not settings: cmem's own processes, tests,"
    " CI and benchmarks set them. They are never read from settings.json."
)


def _internal(key: str, default: str, kind: Kind, help_text: str) -> Setting:
    label = key.removeprefix("CMEM_").replace("_", " ").capitalize()
    return Setting(key, default, kind, label, INTERNAL, help_text, internal=True)


INTERNAL_SWITCHES: tuple[Setting, ...] = (
    _internal(
        "CMEM_MACHINE_TZ",
        "",
        "str",
        "Set by memory.config on first import to the TZ the user started cmem in (Django then"
        " overwrites TZ); children inherit it and memory.clock shows the agent local times in it.",
    ),
    _internal(
        "CMEM_TIME_ZONE",
        "UTC",
        "str",
        "Django's TIME_ZONE, and the TZ the fast-start worker sets; stored times are UTC either"
        " way. Not the zone shown to the agent (CLAUDE_MEM_TIME_ZONE).",
    ),
    _internal(
        "CMEM_SECRET_KEY",
        "",
        "str",
        "Django's SECRET_KEY; empty = a key generated once and kept in the data dir's"
        " `secret_key` file.",
    ),
    _internal("CMEM_DEBUG", "false", "bool", "Django's DEBUG, for developing cmem only."),
    _internal(
        "CMEM_MCP_LOG",
        "",
        "str",
        "The MCP server's log level on stderr (e.g. INFO: each request); empty = warnings only."
        " `cmem mcp --verbose` sets INFO.",
    ),
    _internal(
        "CMEM_SERVE_NEXT_STEPS",
        "",
        "str",
        "Set by `cmem serve --ensure-admin` (what `make run` runs) for the supervisor it becomes:"
        " `1` makes its first announcement list the next steps.",
    ),
    _internal(
        "CMEM_ALLOWED_HOSTS",
        "",
        "list",
        "Host names Django accepts besides loopback (comma-separated); for a shared worker"
        " behind a proxy.",
    ),
    _internal(
        "CMEM_MAX_REQUEST_BYTES",
        str(8 * 1024 * 1024),
        "int",
        "Largest request body the worker takes (Django's DATA_UPLOAD_MAX_MEMORY_SIZE; the"
        " server's own limit is twice it); the hook client shrinks a bigger payload to fit.",
    ),
    _internal(
        "CMEM_HUEY_NAME",
        "cmem",
        "str",
        "The task queue's name: tests and benchmarks sharing one Redis set their own.",
    ),
    _internal(
        "CMEM_HUEY_IMMEDIATE",
        "false",
        "bool",
        "Run queued tasks at once in the caller instead of the consumer (tests/testenv.py sets"
        " it for every test).",
    ),
    _internal(
        "CMEM_SERVER",
        "granian",
        "str",
        "waitress makes the worker serve with its fallback server even when granian is"
        " installed (tests of the fallback).",
    ),
    _internal(
        "CMEM_SERVER_THREADS",
        "4",
        "int",
        "Threads of the serving process (memory.worker.server.SERVER_THREADS).",
    ),
    _internal(
        "CMEM_WORKER_CONSUMER",
        "1",
        "str",
        "0 = the serving process runs no task consumer of its own (nothing sets it today; for"
        " debugging the server without background work).",
    ),
    _internal(
        "CMEM_WORKER_ROLE",
        "",
        "str",
        "Set by the supervisor in the environment of each process it spawns, naming its role"
        " (e.g. server); no code reads it.",
    ),
    _internal(
        "CMEM_LIVENESS_EVERY_S",
        "10.0",
        "str",
        "Seconds between the supervisor's liveness probes of the serving process (tests"
        " shorten it).",
    ),
    _internal(
        "CMEM_NO_SPAWN",
        "",
        "str",
        "1 = the hook client never starts a worker when none answers, it only spools (tests and"
        " scripts: a worker started behind their back would outlive them).",
    ),
    _internal(
        "CMEM_CODEX_BIN",
        "",
        "str",
        "The `codex` CLI `cmem install` drives; empty = the one on PATH (tests point at a stub).",
    ),
    _internal(
        "CMEM_TRACEBACK",
        "",
        "str",
        "Any value: the cmem CLI prints the traceback of an unexpected error instead of one line.",
    ),
    _internal(
        "CMEM_SYNC_PAUSE",
        "",
        "str",
        "A stage of `cmem sync` (imported, committed, pushed) at which it stops for a minute:"
        " the tests kill it there to prove a killed sync loses and duplicates nothing.",
    ),
    _internal(
        "CLAUDE_MEM_INTERNAL",
        "",
        "str",
        "Set to 1 by the claude provider in its `claude -p` observer's environment: the hook"
        " client ignores every hook of that session, so cmem never observes itself.",
    ),
)
