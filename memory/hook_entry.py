"""The hook's own entry, run as `python -I -S -c "<import this; run()>" hook <platform> <event> …`.

`-I -S` skips `site`: no site-packages scan, no `.pth` files (setuptools' distutils hack,
the editable install's path entry), no user site, no PYTHON* variables. The hook client
needs none of it (stdlib only, memory/hookclient.py), so the process starts below the
venv's plain `python -c pass`. The package root is put on sys.path by hand instead (by the
installed `-c` line, or below when this file is run as a script).

What runs is exactly `cmem hook …` (cmem_site/cli.py: the same options, `--data-dir` and
`--route plugin`, and exit 0 whatever happens). `cmem install` writes this entry into Claude
Code's settings (memory/agents/install/claude_code.py `hook_entry_argv`) as a `-c` line, not
this file's path: a python given a file that is gone (cmem uninstalled) exits 2, which an
agent takes for "block this tool call", while a failed import exits 1, a plain hook error.
"""

# ruff: noqa: I002 - no `from __future__ import annotations` and no `os` at import: each
# is a module load on every hook (~0.2 and 1.2 ms under `-I -S`); `posix._exit` is `os._exit`.

import sys


def run() -> None:
    """`cmem hook …` from sys.argv (`hook` may be left out), then exit 0."""
    from posix import _exit

    try:
        from cmem_site.cli import main
    except BaseException:  # noqa: BLE001 - a broken installation must not block the agent
        sys.stderr.write("cmem: the hook entry cannot find cmem, continuing without memory\n")
        _exit(0)
    if sys.argv[1:2] != ["hook"]:
        sys.argv[1:1] = ["hook"]
    main()  # reads sys.argv like the console script; a hook exits 0 inside it
    sys.stdout.flush()  # `hook --help` returns instead
    _exit(0)


if __name__ == "__main__":
    import os

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    run()
