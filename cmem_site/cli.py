"""The `cmem` console script.

`cmem hook …` goes straight to the stdlib-only hook client: it runs on every tool call of
the agent, so it must not pay for importing Django. Everything else boots Django and runs
the management command of the same name (`cmem start` is `manage.py start`).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "hook":
        from memory.hookclient import main as hook_main

        code = hook_main(args[1:])
        if argv is None:
            # Skip interpreter teardown (~2 ms, a sixth of a bare start): the hook has
            # flushed and closed everything it opened.
            import os

            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        return code
    if args[:2] == ["serve", "--supervise"]:
        # `cmem serve` re-executes itself here once migrations are done: the supervisor
        # imports no Django (memory/service/supervisor.py).
        from memory.service.supervisor import main as supervise

        return supervise()
    if args and args[0] in {"--version", "-V", "version"}:
        from memory import config

        print(f"cmem {config.VERSION} (hook protocol {config.PROTOCOL_VERSION})")
        return 0
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cmem_site.settings")
    from django.core.management import execute_from_command_line

    if not args:
        args = ["help"]
    if args[0] in {"install", "uninstall", "doctor"}:
        # `--settings FILE` is Claude Code's settings file here; Django would take it for
        # DJANGO_SETTINGS_MODULE, so it travels as --claude-settings.
        args = [
            a.replace("--settings", "--claude-settings", 1) if a.startswith("--settings") else a
            for a in args
        ]
    execute_from_command_line(["cmem", *args])
    return 0


if __name__ == "__main__":
    sys.exit(main())
