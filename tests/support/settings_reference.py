"""The settings reference page, generated from the registry (memory/config/registry.py): every
setting by section with its default, what it accepts and what it does, then the internal
switches. `python -m tests.support.settings_reference` prints it; `--write
docs/reference/settings.md` (`make reference-settings`) writes it; tests/config/test_settings_registry.py
checks the page is current."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memory.config import reference

REPO = Path(__file__).resolve().parent.parent.parent
PAGE = REPO / "docs" / "reference" / "settings.md"


def render() -> str:
    return reference.render()


def page_write(path: Path) -> bool:
    """Write the page; True when it changed."""
    new = render()
    old = path.read_text() if path.exists() else None
    if new != old:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(new)
    return new != old


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--write", type=Path, help="write the page to this file")
    args = parser.parse_args(argv)
    if args.write:
        changed = page_write(args.write)
        print(f"{args.write}: settings reference {'rewritten' if changed else 'already current'}")
    else:
        sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
