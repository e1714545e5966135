"""The `cmem` console script.

`cmem hook …` goes straight to the stdlib-only hook client: it runs on every tool call of
the agent, so it must not pay for importing Django or argparse. Everything else goes to
cmem's own front end (cmem_site/frontend.py); Django's commands are `cmem manage …`.
"""

from __future__ import annotations

import sys

HOOK_HELP = """usage: cmem hook <platform> <event>

What an agent runs on each event: reads the event's JSON on stdin, records it, and prints
what the agent should see (context, a refused read). Always exits 0 and never blocks the
agent: a wrong platform or event is one line on stderr. `cmem install` writes these commands.

platforms: claude-code, codex

examples:
  echo '{"session_id": "s1", "cwd": "/tmp"}' | cmem hook claude-code session-start
"""


def _hook_options(args: list[str]) -> list[str]:
    """Take cmem's own trailing options off a hook's args (`cmem install` writes them).

    `--data-dir DIR`: the agent's environment lacks a CLAUDE_MEM_DATA_DIR set in the
    installing shell. `--route plugin`: the plugin's hooks say so once per session start, so
    the worker names the plugin's MCP tools (memory/agents/install/routes.py)."""
    import os

    rest: list[str] = []
    i = 0
    while i < len(args):
        if args[i] in ("--data-dir", "--route") and i + 1 < len(args):
            if args[i] == "--data-dir":
                os.environ["CLAUDE_MEM_DATA_DIR"] = args[i + 1]
            elif args[i + 1] == "plugin" and rest[-1:] == ["context"]:
                _route_record_plugin(os.environ.get("CLAUDE_MEM_DATA_DIR"))
            i += 2
            continue
        rest.append(args[i])
        i += 1
    return rest


def _route_record_plugin(data_dir: str | None) -> None:
    # Stdlib only, like the hook client: one small file, written when it says otherwise.
    import os

    folder = os.path.expanduser(data_dir or "~/.claude-mem")
    path = os.path.join(folder, "install-route")
    try:
        with open(path) as fh:
            if fh.read().strip() == "plugin":
                return
    except OSError:
        pass
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        with open(path + ".tmp", "w") as fh:
            fh.write("plugin\n")
        os.replace(path + ".tmp", path)
    except OSError:
        pass


def _hook(args: list[str], *, exit_now: bool) -> int:
    if args in (["--help"], ["-h"]):
        sys.stdout.write(HOOK_HELP)
        return 0
    args = _hook_options(args)
    from memory.hookclient import main as hook_main

    # Whatever happens, 0: an agent takes exit 2 from a hook for "block this".
    try:
        hook_main(args)
    except BaseException:  # noqa: BLE001 - nothing a hook raises may reach the agent
        sys.stderr.write("cmem: the hook client failed, continuing without memory\n")
    code = 0
    if exit_now:
        # Skip interpreter teardown (~2 ms, a sixth of a bare start): the hook has
        # flushed and closed everything it opened.
        import os

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "hook":
        return _hook(args[1:], exit_now=argv is None)
    if args[:2] == ["serve", "--supervise"]:
        # `cmem serve` re-executes itself here once migrations are done: the supervisor
        # imports no Django (memory/service/supervisor.py).
        from memory.service.supervisor import main as supervise

        return supervise()
    if args[:1] == ["serve-process"]:
        # The one process the supervisor runs: web server + consumer threads.
        from memory.service.server import main as serve_process

        return serve_process()
    if args == ["mcp"]:
        # What every agent session starts (`cmem install` writes `cmem mcp`): the MCP server
        # imports no Django, and Django's setup was half of its start (~1 s), while the
        # agent's first requests go out without the server's tools until it answers.
        from deliverables.mcp_tools import mcp_tools_register
        from memory.retrieval.mcp_server import main as mcp_serve

        mcp_tools_register()
        mcp_serve()
        return 0
    if args and args[0] in {"--version", "-V", "version"}:
        from memory import config

        print(f"cmem {config.VERSION} (hook protocol {config.PROTOCOL_VERSION})")
        return 0
    from cmem_site.frontend import run

    return run(args)


if __name__ == "__main__":
    sys.exit(main())
