"""Following an agent's session files: what was read is kept, so nothing is read twice and
nothing is lost, whatever kills the watcher.

A session file that the agent rewrites whole (Continue) has no byte offset worth keeping:
the offset is the number of its history items already delivered, with a short digest of
each. A pass reads each changed file, finds the items past those already delivered (a
rewritten history is compared item by item: an item delivered before is never delivered
again, wherever it moved), posts their events to the worker's hook API in order, and after
each item's events were accepted writes the state atomically. A kill between a post and the
state write re-posts that one item only, which the worker stores once (tool uses by their
id, a turn's end by its key, a prompt equal to the session's last: memory/capture/ingest.py).

Bounded: a file over `max_bytes` is skipped with one message (until it changes), a file that
is not JSON is retried when it changes (the agent may have been writing it), and a pass posts
at most `max_events` events; the next pass goes on where it stopped.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory.hookclient import HookFailure, WorkerDown, setting
from memory.hookclient import client as hookclient
from memory.runtime import locks
from memory.watch import continue_sessions

STATE_VERSION = 1
MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_EVENTS_PER_PASS = 500
# Digests of items delivered and then rewritten away, kept per file to recognise them.
MAX_EARLIER = 5000
POST_TIMEOUT_S = 10.0
# A turn's last message younger than this may still be written: the loop waits for it.
SETTLE_S = 2.0


@dataclass(frozen=True)
class Source:
    """One agent's session files: where they are and how one becomes events."""

    agent: str
    platform: str
    folder: Path
    items: Callable[[Any, str], tuple[str, list[continue_sessions.Item]]]
    skip_names: frozenset[str] = frozenset()

    def files(self) -> list[Path]:
        try:
            found = [
                p for p in self.folder.glob("*.json")
                if p.name not in self.skip_names and p.is_file()
            ]  # fmt: skip
        except OSError:
            return []
        return sorted(found, key=lambda p: (_mtime_ns(p), p.name))


def _mtime_ns(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def continue_home() -> Path:
    """Continue's folder as `cn` finds it: $CONTINUE_GLOBAL_DIR, else ~/.continue."""
    base = os.environ.get("CONTINUE_GLOBAL_DIR")
    return Path(base).expanduser() if base else Path.home() / ".continue"


def source_for(agent: str) -> Source:
    if agent == "continue":
        return Source(
            agent="continue",
            platform=continue_sessions.PLATFORM,
            folder=continue_home() / "sessions",
            items=lambda doc, path: continue_sessions.session_items(doc, path=path),
            skip_names=frozenset({continue_sessions.INDEX_FILE}),
        )
    raise ValueError(f"unknown agent {agent!r}; cmem watches: {', '.join(AGENTS)}")


AGENTS = ("continue",)


# --- delivery -----------------------------------------------------------------------------


class WorkerUnavailable(Exception):
    """The worker cannot take events now: the pass stops, the state is where it was."""


def post_event(platform: str, event: str, payload: dict[str, Any]) -> tuple[bool, str]:
    """Post one event as the hook client would: (accepted, why not). A refusal the worker
    would repeat for ever (400, 413) is (False, reason); raises WorkerUnavailable when the
    worker is down or struggling (the event is posted again later)."""
    body = json.dumps(payload).encode()
    limit = hookclient.max_request_bytes()
    if len(body) > limit:
        body = hookclient.shrink(body, limit)
    remote = setting("CLAUDE_MEM_WORKER_URL").strip()
    try:
        if remote:
            # team mode's module only when CLAUDE_MEM_WORKER_URL is set (as the hook client)
            from memory.hookclient import remote as hookclient_remote

            status, answer = hookclient_remote.post(remote, platform, event, body, POST_TIMEOUT_S)
        else:
            status, answer = hookclient.post_local(
                f"/api/hooks/{platform}/{event}", body, POST_TIMEOUT_S
            )
    except WorkerDown as exc:
        raise WorkerUnavailable(str(exc)) from None
    except (HookFailure, OSError) as exc:
        raise WorkerUnavailable(str(exc)) from None
    if status == 200:
        return True, ""
    if status in (400, 413, 422):
        return False, answer.decode("utf-8", "replace")[:300]
    raise WorkerUnavailable(f"worker answered {status}")


# --- state --------------------------------------------------------------------------------


def state_dir() -> Path:
    return Path(hookclient.data_dir()) / "watch"


def state_path(agent: str) -> Path:
    return state_dir() / f"{agent}.json"


def load_state(agent: str) -> dict[str, Any]:
    try:
        data = json.loads(state_path(agent).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"version": STATE_VERSION, "files": {}}
    except (OSError, ValueError) as exc:
        # Never guess: a state that cannot be read would re-deliver everything.
        raise WatchError(
            f"cannot read {state_path(agent)} ({exc}); move it away to start over"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        raise WatchError(f"{state_path(agent)} is not cmem's watch state; move it away")
    return data


def save_state(agent: str, state: dict[str, Any]) -> None:
    """Atomically (temp file, fsync, rename): a kill leaves the old state or the new one."""
    path = state_path(agent)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, json.dumps(state, separators=(",", ":")).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


class WatchError(Exception):
    """Watching cannot go on (the message says why)."""


@contextlib.contextmanager
def watch_lock(agent: str, *, wait_s: float) -> Iterator[None]:
    """One watcher per agent and data dir (the worker's and a `cmem watch --once` may meet):
    the other waits up to `wait_s`, then gives up with WatchError."""
    path = state_dir() / f"{agent}.lock"
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # memory/runtime/locks.py: the OS drops the lock when a killed watcher's process ends
    with locks.exclusive(path, timeout=wait_s, mode="a+b") as held:
        if held is None:
            raise WatchError(f"another `cmem watch` follows {agent} for this data dir")
        yield


# --- one pass -----------------------------------------------------------------------------


@dataclass
class PassReport:
    events: int = 0  # accepted by the worker
    items: int = 0
    files: int = 0  # files with something delivered
    refused: int = 0
    more: bool = False  # stopped at max_events: call again
    messages: list[str] = field(default_factory=list)


Poster = Callable[[str, str, dict[str, Any]], tuple[bool, str]]


def follow_pass(
    source: Source,
    *,
    post: Poster = post_event,
    max_events: int = MAX_EVENTS_PER_PASS,
    max_bytes: int = MAX_FILE_BYTES,
    settle_s: float = SETTLE_S,
    now: Callable[[], float] = time.time,
) -> PassReport:
    """Deliver what is new in `source`'s files; the state is saved after every item.
    Raises WorkerUnavailable (state kept up to the last accepted item) or WatchError."""
    state = load_state(source.agent)
    files: dict[str, Any] = state["files"]
    report = PassReport()
    present = source.files()
    gone = set(files) - {p.name for p in present}
    if gone:  # sessions deleted: their offsets would only make every state write longer
        for name in gone:
            del files[name]
        save_state(source.agent, state)
    since = state.get("since")
    for path in present:
        if report.events >= max_events:
            report.more = True
            break
        try:
            stat = path.stat()
        except OSError:
            continue
        mark = [stat.st_size, stat.st_mtime_ns]
        record = files.get(path.name) or {"digests": []}
        if record.get("seen") == mark:
            continue  # unchanged since it was read to the end (or skipped, or broken)
        if stat.st_size > max_bytes:
            report.messages.append(
                f"{path}: {stat.st_size:,} bytes, over the {max_bytes:,} cmem reads: skipped"
                " until it changes"
            )
            record["seen"] = mark
            files[path.name] = record
            save_state(source.agent, state)
            continue
        try:
            with open(path, "rb") as fh:
                raw = fh.read(max_bytes + 1)
            doc = json.loads(raw.decode("utf-8", "replace"))
            _, items = source.items(doc, str(path))
        except (OSError, ValueError, RecursionError) as exc:
            if now() - stat.st_mtime < max(settle_s, 1.0):
                continue  # probably being written: read again next pass
            report.messages.append(
                f"{path}: not a readable session ({_short(exc)}): skipped until it changes"
            )
            record["seen"] = mark
            files[path.name] = record
            save_state(source.agent, state)
            continue
        if isinstance(since, int) and path.name not in files and stat.st_mtime_ns < since:
            # Last written before watching was turned on: its items count as read (a past
            # the user did not ask for, at a compressor's cost); what is added later is new.
            record["digests"] = [i.digest for i in items]
            record["seen"] = mark
            files[path.name] = record
            save_state(source.agent, state)
            continue
        delivered = _deliver(
            source, path, items, record, files, state,
            post=post, report=report, budget=max_events, mark=mark,
            young=now() - stat.st_mtime < settle_s,
        )  # fmt: skip
        if delivered:
            report.files += 1
    return report


def _short(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__


def _deliver(
    source: Source,
    path: Path,
    items: list[continue_sessions.Item],
    record: dict[str, Any],
    files: dict[str, Any],
    state: dict[str, Any],
    *,
    post: Poster,
    report: PassReport,
    budget: int,
    mark: list[int],
    young: bool,
) -> bool:
    """Post the file's new items in order; True when anything was delivered."""
    old: list[str] = [d for d in record.get("digests", []) if isinstance(d, str)]
    same = 0
    while same < min(len(old), len(items)) and old[same] == items[same].digest:
        same += 1
    # A rewritten history: what was delivered past the common start is remembered (bounded),
    # so an item that moved, or comes back after a truncation, is never delivered again.
    earlier = [d for d in record.get("earlier", []) if isinstance(d, str)]
    if same < len(old):
        earlier = [*earlier, *old[same:]][-MAX_EARLIER:]
        record["earlier"] = earlier
    already = set(earlier)
    digests = old[:same]
    finished = True
    delivered = False
    for index in range(same, len(items)):
        item = items[index]
        if not item.complete:
            finished = False
            break
        if young and item.ends_turn and index == len(items) - 1:
            finished = False  # the turn's last message may still be being written
            break
        if item.digest not in already:
            if report.events and report.events + len(item.events) > budget:
                report.more, finished = True, False
                break
            for event, payload in item.events:
                accepted, why = post(source.platform, event, payload)
                if accepted:
                    report.events += 1
                else:
                    report.refused += 1
                    report.messages.append(
                        f"{path}: item {index}: the worker refused {event} ({why})"
                    )
            report.items += 1
            delivered = True
        digests.append(item.digest)
        record["digests"] = digests
        record.pop("seen", None)
        files[path.name] = record
        save_state(source.agent, state)
    if finished:
        # The file as it was read: changed since, it differs from this mark and is read again.
        record["seen"] = mark
        record["digests"] = digests
        files[path.name] = record
        save_state(source.agent, state)
    return delivered
