"""Log rotation shared by several processes, and `cmem logs`."""

from __future__ import annotations

import io
import logging.handlers
import threading
import time
from pathlib import Path

import pytest
from django.core.management import call_command

from memory.management.commands.logs import Command as LogsCommand
from memory.management.commands.logs import tail_lines
from memory.worker import state as worker_module


def test_logs_rotate_in_generations_and_writers_follow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker_module, "LOG_ROTATE_BYTES", 10)
    folder = tmp_path / "logs"
    folder.mkdir()
    path = folder / "cmem.log"
    handler = logging.handlers.WatchedFileHandler(path)
    logger = logging.getLogger("cmem-rotation-test")
    logger.addHandler(handler)
    try:
        for generation in range(5):
            logger.warning("line %s is long enough", generation)
            assert worker_module.rotate_log(path)
        logger.warning("after rotation")
    finally:
        logger.removeHandler(handler)
        handler.close()
    assert path.read_text() == "after rotation\n"  # the writer reopened the new file
    assert sorted(p.name for p in folder.iterdir()) == [
        "cmem.log",
        "cmem.log.1",
        "cmem.log.2",
        "cmem.log.3",
    ]
    assert "line 4" in (folder / "cmem.log.1").read_text()
    assert "line 2" in (folder / "cmem.log.3").read_text()
    path.write_text("tiny\n")
    assert not worker_module.rotate_log(path)  # small enough: left alone


def test_tail_lines_reads_only_the_end(tmp_path: Path) -> None:
    path = tmp_path / "big.log"
    path.write_text("".join(f"line {i}\n" for i in range(100_000)))
    assert tail_lines(path, 3) == ["line 99997", "line 99998", "line 99999"]
    assert tail_lines(path, 0) == []
    (tmp_path / "empty.log").write_text("")
    assert tail_lines(tmp_path / "empty.log", 5) == []


def test_cmem_logs_prints_the_last_lines_of_each_file(data_dir: Path) -> None:
    logs = data_dir / "logs"
    logs.mkdir(exist_ok=True)
    (logs / "cmem.log").write_text("".join(f"app {i}\n" for i in range(10)))
    (logs / "worker.out").write_text("cmem is running\n")
    (logs / "notes.txt").write_text("not a log\n")
    out = io.StringIO()
    call_command("logs", "-n", "2", stdout=out)
    text = out.getvalue()
    assert f"==> {logs / 'cmem.log'} <==" in text and "app 8\napp 9" in text and "app 7" not in text
    assert "cmem is running" in text and "not a log" not in text


def test_cmem_logs_follow_prints_appended_lines_across_a_rotation(data_dir: Path) -> None:
    logs = data_dir / "logs"
    logs.mkdir(exist_ok=True)
    log = logs / "cmem.log"
    log.write_text("old line that is quite long\n")

    def writer() -> None:
        time.sleep(0.3)
        with open(log, "a") as fh:
            fh.write("fresh 1\n")
        time.sleep(0.3)
        log.rename(logs / "cmem.log.1")
        log.write_text("after rotation, longer than everything the old file held\n")

    out = io.StringIO()
    command = LogsCommand(stdout=out)
    thread = threading.Thread(target=writer)
    thread.start()
    command.follow(poll=0.05, stop_after=1.5)
    thread.join()
    text = out.getvalue()
    assert "fresh 1" in text and "after rotation" in text
    assert "old line" not in text  # follow starts at the end, like tail -f
