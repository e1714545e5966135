"""The `cmem` console script.

`cmem hook …` goes straight to the stdlib-only hook client (memory/hookclient/entry.py `hook`):
it runs on every tool call of the agent, so it must not pay for importing Django or
argparse. Everything else goes to cmem's own front end (cmem_site/frontend.py); Django's
commands are `cmem manage …`.
"""

# ruff: noqa: I002 - no `from __future__ import annotations`: it is a module load (~0.2 ms)
# on every hook, and every annotation here evaluates on 3.11.

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "hook":
        # hook path: the stdlib-only hook client, and nothing of the rest of cmem
        from memory.hookclient.entry import hook

        return hook(args[1:], exit_now=argv is None)
    if args[:2] == ["serve", "--supervise"]:
        # `cmem serve` re-executes itself here once migrations are done: the supervisor
        # imports no Django (memory/worker/supervisor.py).
        from memory.worker.supervisor import main as supervise

        return supervise()
    if args in (["serve"], ["serve", "--no-migrate"]):
        # The usual start, on an unchanged schema: no Django in this process at all.
        from memory.worker.fast_start import serve_if_ready

        code = serve_if_ready(migrate=args == ["serve"])
        if code is not None:
            return code
    if args[:1] == ["serve-process"]:
        # The one process the supervisor runs: web server + consumer threads.
        from memory.worker.server import main as serve_process

        return serve_process()
    if args in (["mcp"], ["mcp", "--verbose"]):
        # What every agent session starts (`cmem install` writes `cmem mcp`): the MCP server
        # imports no Django, and Django's setup was half of its start (~1 s), while the
        # agent's first requests go out without the server's tools until it answers.
        if args[1:] == ["--verbose"]:
            # the MCP path only: a line per request on stderr; the server's module reads the
            # level when it loads (memory/retrieval/mcp_server.py)
            import os

            os.environ["CMEM_MCP_LOG"] = "INFO"
        # MCP path: the server and its tools, imported only for `cmem mcp`
        from deliverables.mcp_tools import mcp_tools_register
        from memory.retrieval.mcp_server import main as mcp_serve

        mcp_tools_register()
        mcp_serve()
        return 0
    if args and args[0] in {"--version", "-V", "version"}:
        # CLI start: each branch imports only what it runs
        from memory import config

        print(f"cmem {config.VERSION} (hook protocol {config.PROTOCOL_VERSION})")
        return 0
    # CLI start: the front end (argparse, the verb table) only off the hook/serve/mcp paths
    from cmem_site.frontend import run

    return run(args)


if __name__ == "__main__":
    sys.exit(main())
