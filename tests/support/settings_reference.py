"""The settings reference page, generated from the registry (memory/config/registry.py): every
setting by section with its default, what it accepts and what it does, then the internal
switches; and the README's table of the settings people change (between its
`<!-- settings:basic -->` markers). `python -m tests.support.settings_reference` prints the
page; `--write docs/reference/settings.md --readme README.md` (`make reference`) writes both;
tests/config/test_settings_registry.py checks both are current."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memory.config import reference

REPO = Path(__file__).resolve().parent.parent.parent
PAGE = REPO / "docs" / "reference" / "settings.md"
README = REPO / "README.md"
BASIC_START = "<!-- settings:basic -->\n"
BASIC_END = "<!-- /settings:basic -->\n"


def basic_table() -> str:
    """The README's table: the settings marked basic in the registry."""
    rows = reference.settings_table(tuple(r for r in reference.REGISTRY if r.basic))
    return "\n".join(rows) + "\n"


def readme_with_table(text: str) -> str:
    """`text` (the README) with the table between its markers made anew."""
    head, start, rest = text.partition(BASIC_START)
    _, end, tail = rest.partition(BASIC_END)
    if not (start and end):
        raise ValueError("README.md has no <!-- settings:basic --> markers")
    return head + start + basic_table() + end + tail


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
    parser.add_argument("--readme", type=Path, help="make the settings table in this README anew")
    args = parser.parse_args(argv)
    if args.write:
        changed = page_write(args.write)
        print(f"{args.write}: settings reference {'rewritten' if changed else 'already current'}")
    if args.readme:
        readme = args.readme.read_text()
        new = readme_with_table(readme)
        if new != readme:
            args.readme.write_text(new)
        print(
            f"{args.readme}: settings table {'rewritten' if new != readme else 'already current'}"
        )
    elif not args.readme:
        sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
