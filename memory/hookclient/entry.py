"""The hook's own entry, run as `python -I -S -c "<import this; run()>" hook <platform> <event> …`.

`-I -S` skips `site`: no site-packages scan, no `.pth` files (setuptools' distutils hack,
the editable install's path entry), no user site, no PYTHON* variables. The hook client
needs none of it (stdlib only, memory/hookclient/client.py), so the process starts below the
venv's plain `python -c pass`. The package root is put on sys.path by hand instead (by the
installed `-c` line, or below when this file is run as a script).

What runs is exactly `cmem hook …`: cmem_site/cli.py sends `cmem hook` to `hook()` here
(the same options, `--data-dir` and `--route plugin`, and exit 0 whatever happens).
`cmem install` writes this entry into Claude Code's settings
(memory/agents/install/claude_code.py `hook_entry_argv`) as a `-c` line, not this file's path: a python given a file that is gone (cmem uninstalled) exits 2, which an
agent takes for "block this tool call", while a failed import exits 1, a plain hook error.
"""

# ruff: noqa: I002 - no `from __future__ import annotations` and no `os` at import: each
# is a module load on every hook (~0.2 and 1.2 ms under `-I -S`); `posix._exit` is `os._exit`.

import sys

HOOK_HELP = """usage: cmem hook <platform> <event>

What an agent runs on each event: reads the event's JSON on stdin, records it, and prints
what the agent should see (context, a refused read). Always exits 0 and never blocks the
agent: a wrong platform or event is one line on stderr. `cmem install` writes these commands.

platforms: claude-code, codex, gemini, copilot, opencode, qwen, kilo, droid
events (every platform): context (session start), session-init (a prompt), observation
  (after a tool), file-context (before a read), summarize (end of a turn), session-end;
  codex also: subagent-context, compaction

examples:
  echo '{"session_id": "s1", "cwd": "/tmp", "source": "startup"}' | cmem hook claude-code context
  echo '{"session_id": "s1", "cwd": "/tmp", "prompt": "fix the login bug"}' | cmem hook claude-code session-init
"""


def _hook_options(args: list[str]) -> list[str]:
    """Take cmem's own trailing options off a hook's args (`cmem install` writes them).

    `--data-dir DIR`: the agent's environment lacks a CLAUDE_MEM_DATA_DIR set in the
    installing shell. `--route plugin`: the plugin's hooks say so once per session start, so
    the worker names the plugin's MCP tools (memory/agents/install/routes.py). `os` only
    for `--route` (memory/hookclient/client.py: not importing it is 1.2 ms a hook)."""
    rest: list[str] = []
    i = 0
    while i < len(args):
        if args[i] in ("--data-dir", "--route") and i + 1 < len(args):
            if args[i] == "--data-dir":
                # hook path: the package body, imported anyway; it sets the variable without
                # importing os (1.2 ms a hook where `cmem install` wrote --data-dir)
                from memory.hookclient import env_set

                env_set("CLAUDE_MEM_DATA_DIR", args[i + 1])
            elif args[i + 1] == "plugin" and rest[-1:] == ["context"]:
                _route_record_plugin()
            i += 2
            continue
        rest.append(args[i])
        i += 1
    return rest


def _route_record_plugin() -> None:
    # Stdlib only, like the hook client: one small file, written when it says otherwise.
    import os

    folder = os.path.expanduser(os.environ.get("CLAUDE_MEM_DATA_DIR") or "~/.claude-mem")
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


def hook(args: list[str], *, exit_now: bool) -> int:
    """`cmem hook ARGS`: the hook client on stdin, whatever happens exit 0 (at once with
    `exit_now`, skipping the interpreter's teardown)."""
    if args in (["--help"], ["-h"]):
        sys.stdout.write(HOOK_HELP)
        return 0
    args = _hook_options(args)
    # Whatever happens, 0: an agent takes exit 2 from a hook for "block this" (a broken
    # installation whose hook client cannot be imported included).
    try:
        # hook path: a failed import must still exit 0 (the comment above)
        from memory.hookclient.client import main as hook_main

        hook_main(args)
    except BaseException:  # noqa: BLE001 - nothing a hook raises may reach the agent
        sys.stderr.write("cmem: the hook client failed, continuing without memory\n")
    code = 0
    if exit_now:
        # Skip interpreter teardown (~2 ms, a sixth of a bare start): the hook has
        # flushed and closed everything it opened. posix._exit is os._exit, without
        # importing os (memory/hookclient/client.py says why).
        from posix import _exit

        sys.stdout.flush()
        sys.stderr.flush()
        _exit(code)
    return code


def run() -> None:
    """`cmem hook …` from sys.argv (`hook` may be left out), then exit 0. No `cmem_site`
    import: the entry calls `hook` below directly, as the console script's `cmem hook` does."""
    args = sys.argv[1:]
    if args[:1] == ["hook"]:
        args = args[1:]
    hook(args, exit_now=True)
    sys.stdout.flush()  # `hook --help` returns instead
    # hook path: posix._exit is os._exit without importing os
    from posix import _exit

    _exit(0)


if __name__ == "__main__":
    import os

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    run()
