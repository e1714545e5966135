"""The hook's own entry script, for `python -I -S <this file> hook <platform> <event>`.

`-I -S` skips `site`: no site-packages scan, no `.pth` files (setuptools' distutils hack,
the editable install's path entry), no user site, no PYTHON* variables. The hook client
needs none of it (stdlib only, memory/hookclient.py), so the process starts below the
venv's plain `python -c pass`. The package root is put on sys.path by hand instead.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if __name__ == "__main__":
    from memory.hookclient import main

    args = sys.argv[1:]
    code = main(args[1:] if args[:1] == ["hook"] else args)
    # Skip interpreter teardown, as cmem_site/cli.py does for `cmem hook`.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
