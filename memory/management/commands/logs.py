from __future__ import annotations

import contextlib
import time
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand

from memory.worker import lifecycle
from memory.worker import state as worker


def tail_lines(path: Path, count: int) -> list[str]:
    """The last `count` lines, reading backwards in blocks so a big log costs little."""
    if count <= 0:
        return []
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        end = fh.tell()
        data = b""
        while end > 0 and data.count(b"\n") <= count:
            step = min(64 * 1024, end)
            end -= step
            fh.seek(end)
            data = fh.read(step) + data
    return data.decode(errors="replace").splitlines()[-count:]


class Command(BaseCommand):
    help = "Show the last lines of the worker's logs (<data dir>/logs); -f keeps following them."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "-n", "--lines", type=int, default=50, help="Lines per file (default 50)."
        )
        parser.add_argument("-f", "--follow", action="store_true", help="Keep printing new lines.")

    def handle(self, *args: Any, **options: Any) -> None:
        files = lifecycle.log_files()
        if not files:
            self.stdout.write(f"no logs yet in {worker.log_dir()}")
            if not options["follow"]:
                return
        for path in files:
            self.stdout.write(f"==> {path} <==")
            for line in tail_lines(path, options["lines"]):
                self.stdout.write(line)
        if options["follow"]:
            with contextlib.suppress(KeyboardInterrupt):
                self.follow()

    def follow(self, poll: float = 0.5, stop_after: float | None = None) -> None:
        """Print lines appended to any log (new files and rotations included) until interrupted."""
        # (inode, offset) per file: a new inode under the same name is a rotation.
        seen: dict[Path, tuple[int, int]] = {}
        for path in lifecycle.log_files():
            st = path.stat()
            seen[path] = (st.st_ino, st.st_size)
        last: Path | None = None
        started = time.monotonic()
        while stop_after is None or time.monotonic() - started < stop_after:
            for path in lifecycle.log_files():
                try:
                    st = path.stat()
                except FileNotFoundError:
                    continue
                inode, offset = seen.get(path, (st.st_ino, 0))
                if inode != st.st_ino or st.st_size < offset:  # rotated or truncated
                    offset = 0
                seen[path] = (st.st_ino, st.st_size)
                if st.st_size == offset:
                    continue
                with open(path, "rb") as fh:
                    fh.seek(offset)
                    chunk = fh.read(st.st_size - offset)
                if path != last:
                    self.stdout.write(f"==> {path} <==")
                    last = path
                self.stdout.write(chunk.decode(errors="replace").rstrip("\n"))
            self.stdout.flush()
            time.sleep(poll)
