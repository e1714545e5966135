"""`cmem hook <platform> <event>`: the stdlib-only hook client.

It runs on the agent's critical path (every tool call waits for `file-context`), so it
pays for nothing it can avoid: no Django, no `json`, no `http.client`, not even the
`socket` module. It forwards the raw stdin bytes to the worker with one HTTP/1.1 POST
over the C `_socket` module to the worker's Unix socket (the worker parses), prints the response body, and always
exits 0. `python -X importtime -m cmem_site.cli hook …` shows only memory.hookclient.entry, this
module, memory.protocol.settings_file and `_socket` (under the `-I -S` entry not even `os`: see below).

When the worker cannot be reached, capture events go to `<data dir>/spool/` (written
atomically; names sort by time, so the worker ingests them in order) and the worker is
started detached, once for a crowd of parallel hooks (an O_EXCL lock file). `context` and
`file-context` wait briefly for a starting worker, then degrade to "no memory".

Settings come from memory.protocol.settings_file, the reader memory.config shares (one grammar);
it reads cmem's own file layout without `json`. Team mode (`CLAUDE_MEM_WORKER_URL` set)
lives in memory.hookclient.remote, imported only then; the spool's file names in
memory.protocol.spool_names, imported only when spooling.
"""

import sys
import time

# The shared ground lives in the package body (no client <-> remote loop); this module is the
# client's whole face, so what callers and tests reach as `client.X` is named here too.
from memory.hookclient import (  # noqa: F401 - file_settings, forget_settings: re-exported
    HookFailure,
    WorkerDown,
    _join,
    data_dir,
    env,
    error_reason,
    file_settings,
    forget_settings,
    setting,
)

# Codex's `compaction` (PostCompact) only marks the thread, but losing it loses one re-injection:
# spool it like the capture events. `subagent-context` answers with the index, so it waits.
CAPTURE_EVENTS = frozenset(
    {"session-init", "observation", "summarize", "session-end", "compaction"}
)
WAITING_EVENTS = frozenset({"context", "file-context", "subagent-context"})
PLATFORMS = frozenset(
    {"claude-code", "codex", "gemini", "copilot", "opencode", "qwen", "kilo", "droid"}
)
DEFAULT_TIMEOUT_MS = 2000
# A starting worker (migrate + gunicorn boot) is waited for at most this long by context hooks.
START_WAIT_S = 1.5
# A spawn lock older than this belongs to a spawn that is over (or died): take it over.
SPAWN_LOCK_STALE_S = 15.0
MAX_REQUEST_BYTES = 8 * 1024 * 1024

_counter = 0


def __getattr__(name: str) -> object:
    if name == "os":
        # hook path: os only when asked for (the module docstring)
        import os

        return os
    raise AttributeError(name)


def timeout_s() -> float:
    try:
        return max(50, int(setting("CLAUDE_MEM_HOOK_TIMEOUT_MS", str(DEFAULT_TIMEOUT_MS)))) / 1000
    except ValueError:
        return DEFAULT_TIMEOUT_MS / 1000


# --- the local worker: raw HTTP/1.1 over _socket ------------------------------------------


def socket_path() -> str:
    return _join(data_dir(), "worker.sock")


def post_local(path: str, body: bytes, timeout: float) -> tuple[int, bytes]:
    """POST over the worker's Unix socket `<data dir>/worker.sock` (memory/runtime/credentials.py).

    The socket authenticates the server: it lives in the owner's 0700 data dir, so only a
    process of the owner can have created it. Nothing is ever sent to (or printed from) the
    TCP port, which any local process could have taken after a crash."""
    # hook path: the C _socket module, not socket, on the first post only
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        try:
            sock.connect(socket_path())
        except OSError as exc:
            raise WorkerDown(f"worker not running ({error_reason(exc)})") from exc
        head = (
            f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()
        chunks: list[bytes] = []
        try:
            sock.sendall(head + body if len(body) < 65536 else head)
            if len(body) >= 65536:
                sock.sendall(body)
        except OSError:
            # The worker may answer (413) and close before reading a large body; its answer
            # is still in our receive buffer, so read it before giving up.
            pass
        try:
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        except OSError as exc:
            if not chunks:
                raise HookFailure(f"worker did not answer in time ({error_reason(exc)})") from exc
    finally:
        sock.close()
    return _parse_response(b"".join(chunks))


def _parse_response(raw: bytes) -> tuple[int, bytes]:
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep or not head.startswith(b"HTTP/1."):
        raise HookFailure("worker sent a malformed answer")
    lines = head.split(b"\r\n")
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError) as exc:
        raise HookFailure("worker sent a malformed status line") from exc
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
        body = _dechunk(body)
    elif b"content-length" in headers:
        body = body[: int(headers[b"content-length"])]
    return status, body


def _dechunk(data: bytes) -> bytes:
    out = []
    while data:
        size_line, _, rest = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out.append(rest[:size])
        data = rest[size + 2 :]
    return b"".join(out)


# --- spool and worker start ---------------------------------------------------------------


def spool_write(platform: str, event: str, body: bytes) -> str:
    """Write the event atomically under a name that sorts by time (then pid, then a counter),
    `<ns>.<pid>.<n>.<platform>.<event>.hook`; the worker ingests in name order."""
    # hook path: the spool is written only when the worker is down
    import os

    from memory.protocol.spool_names import spool_name, temp_name

    global _counter
    _counter += 1
    folder = os.path.join(data_dir(), "spool")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    name = spool_name(platform, event, ns=time.time_ns(), pid=os.getpid(), n=_counter)
    tmp = os.path.join(folder, temp_name(name))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        view = memoryview(body)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, os.path.join(folder, name))
    return name


def spawn_worker() -> bool:
    """Start the worker detached unless another hook did so within SPAWN_LOCK_STALE_S, or
    CMEM_NO_SPAWN=1 says not to (tests and scripts that want the spool path alone: a worker
    started behind their back would outlive them)."""
    # hook path: os only when a worker must be started
    import os

    if os.environ.get("CMEM_NO_SPAWN") == "1":
        return False
    folder = data_dir()
    os.makedirs(folder, mode=0o700, exist_ok=True)
    lock = os.path.join(folder, "worker.spawn.lock")
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        try:
            if time.time() - os.stat(lock).st_mtime < SPAWN_LOCK_STALE_S:
                return False
            # Stale: rename away first so only one of several racing hooks wins the takeover.
            os.rename(lock, f"{lock}.{os.getpid()}.stale")
            os.unlink(f"{lock}.{os.getpid()}.stale")
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError:
            return False
    os.write(fd, f"{os.getpid()} {time.time()}\n".encode())
    os.close(fd)
    # `cmem start` daemonizes and manages the pid file.
    argv = [sys.executable, "-m", "cmem_site.cli", "start"]
    log_path = os.path.join(folder, "logs")
    os.makedirs(log_path, mode=0o700, exist_ok=True)
    if not hasattr(os, "fork"):  # Windows: no fork or setsid (docs/platforms.md)
        return _spawn_without_fork(argv, folder, log_path)
    pid = os.fork()
    if pid == 0:  # child: its own session, no ties to the agent's terminal or pipes
        try:
            os.setsid()
            os.chdir(folder)
            null = os.open(os.devnull, os.O_RDWR)
            out = os.open(
                os.path.join(log_path, "spawn.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600
            )
            os.dup2(null, 0)
            os.dup2(out, 1)
            os.dup2(out, 2)
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    return True


def _spawn_without_fork(argv: list[str], folder: str, log_path: str) -> bool:
    """`cmem start` detached where there is no fork (Windows): a process group of its own
    and no console, so closing the agent's console does not end it. Untested: no Windows
    machine runs the tests (docs/platforms.md)."""
    # only here: the hook's path never needs them (os as in spawn_worker)
    import os
    import subprocess

    flags = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0) | getattr(
        subprocess, "DETACHED_PROCESS", 0
    )
    try:
        with open(os.path.join(log_path, "spawn.log"), "ab") as out:
            subprocess.Popen(
                argv,
                cwd=folder,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                creationflags=flags,
            )
    except OSError:
        return False
    return True


# --- the hook -----------------------------------------------------------------------------


def _fail(reason: str) -> int:
    sys.stderr.write(f"cmem: {reason}, continuing without memory\n")
    return 0


def _error_text(status: int, body: bytes) -> str:
    # Pull `"error": "..."` out without json; fall back to the status alone.
    at = body.find(b'"error"')
    if at >= 0:
        start = body.find(b'"', body.find(b":", at)) + 1
        end = body.find(b'"', start)
        if 0 < start <= end:
            return f"worker refused the event ({status}: {body[start:end].decode('utf-8', 'replace')[:200]})"
    return f"worker answered {status}"


def max_request_bytes() -> int:
    try:
        return int(env("CMEM_MAX_REQUEST_BYTES") or MAX_REQUEST_BYTES)
    except ValueError:
        return MAX_REQUEST_BYTES


def shrink(body: bytes, limit: int) -> bytes:
    """Cut the longest strings of an oversized payload (head and tail kept, with a marker) so
    the worker accepts it: a tool use with a trimmed output beats a lost tool use. The worker
    caps every field far below this anyway. Not JSON: returned unchanged (the worker says 413)."""
    # hook path: json only for an oversized payload
    import json

    try:
        data = json.loads(body.decode("utf-8", "replace"))
    except ValueError:
        return body
    budget = max(1024, limit // 2)

    def cut(value, room):  # type: ignore[no-untyped-def]
        if isinstance(value, str) and len(value) > room:
            half = room // 2
            return f"{value[:half]}\n…[cmem: {len(value) - 2 * half:,} characters cut]…\n{value[-half:]}"
        if isinstance(value, dict):
            return {k: cut(v, room) for k, v in value.items()}
        if isinstance(value, list):
            return [cut(v, room) for v in value]
        return value

    room = budget
    out = json.dumps(data).encode()
    while len(out) > budget and room > 256:
        out = json.dumps(cut(data, room)).encode()
        room //= 4
    return out


def _handover(body: bytes, kind: str) -> bytes:
    try:
        # hook path: the one named slow path (privacy), only for the Stop handover
        from memory.hookclient.slow_path import handover
    except Exception:  # noqa: BLE001 - the event goes without the bytes, never not at all
        return body
    return handover(body, kind, request_limit=max_request_bytes())


def run(platform: str, event: str, body: bytes) -> int:
    remote = setting("CLAUDE_MEM_WORKER_URL").strip()
    if len(body) > max_request_bytes():
        body = shrink(body, max_request_bytes())
    # A `work_state_write` call: the hook reads the attached files (the MCP server cannot
    # tell which request they belong to). A remote worker cannot read the Stop's files.
    if event == "observation" and b"work_state_write" in body:
        body = _handover(body, "attach")
    elif event == "summarize" and remote:
        body = _handover(body, "stop")
    timeout = timeout_s()
    try:
        if remote:
            # hook path: team mode's module only when CLAUDE_MEM_WORKER_URL is set
            from memory.hookclient import remote as hookclient_remote

            status, answer = hookclient_remote.post(remote, platform, event, body, timeout)
        else:
            status, answer = _post_or_start(f"/api/hooks/{platform}/{event}", event, body, timeout)
    except WorkerDown as exc:
        if event in CAPTURE_EVENTS:
            return _spool(platform, event, body, str(exc), start=not remote)
        return _fail(str(exc))
    except HookFailure as exc:
        # The worker may have stored it before timing out; ingest is idempotent, so spool anyway.
        if event in CAPTURE_EVENTS:
            return _spool(platform, event, body, str(exc), start=False)
        return _fail(str(exc))
    if status == 200:
        sys.stdout.buffer.write(answer)
        sys.stdout.flush()
        if remote:
            # hook path: team mode's module only when CLAUDE_MEM_WORKER_URL is set
            from memory.hookclient import remote as hookclient_remote

            hookclient_remote.after_delivery(remote, timeout)
        return 0
    # 5xx/429: the worker is struggling; 404/405: what answers is not (this version of) cmem.
    # Either way the event is kept for a worker that can take it.
    if (status >= 500 or status in (404, 405, 429)) and event in CAPTURE_EVENTS:
        return _spool(platform, event, body, f"worker answered {status}", start=False)
    return _fail(_error_text(status, answer))


def _post_or_start(path: str, event: str, body: bytes, timeout: float) -> tuple[int, bytes]:
    try:
        return post_local(path, body, timeout)
    except WorkerDown:
        if event not in WAITING_EVENTS:
            raise
    # context / file-context: start the worker and give it a moment.
    spawn_worker()
    deadline = time.monotonic() + min(START_WAIT_S, timeout)
    while True:
        time.sleep(0.05)
        try:
            return post_local(path, body, max(0.05, deadline - time.monotonic()))
        except WorkerDown:
            if time.monotonic() >= deadline:
                raise WorkerDown("worker is starting") from None


def _spool(platform: str, event: str, body: bytes, reason: str, *, start: bool) -> int:
    if body.lstrip()[:1] != b"{":
        return _fail(f"{reason}; the payload is not a JSON object, so it is not kept")
    if event == "summarize":
        # The worker cannot copy this turn's deliverables now, and by the time it ingests
        # this file the worktree or temp folder may be gone: their bytes go with the event.
        body = _handover(body, "stop")
    # Secrets and <private> passages never reach the disk (memory/privacy/spool_scrub.py); this path
    # runs only when the worker is down, so the privacy rules' import cost is fine here.
    try:
        # hook path: the one named slow path, only when the worker is down
        from memory.hookclient.slow_path import spool_scrubbed

        scrubbed = spool_scrubbed(body)
    except Exception as exc:  # noqa: BLE001 - keep nothing rather than keep a secret
        return _fail(
            f"{reason}; the event could not be scrubbed ({type(exc).__name__}), so it is not kept"
        )
    if scrubbed is None:
        return _fail(f"{reason}; the payload is not a JSON object, so it is not kept")
    try:
        spool_write(platform, event, scrubbed)
    except OSError as exc:
        return _fail(f"{reason}; could not spool the event ({error_reason(exc)})")
    if start:
        try:  # noqa: SIM105 - contextlib costs an import on the hook's path
            spawn_worker()
        except OSError:
            pass
    sys.stderr.write(f"cmem: {reason}; event saved to the spool, continuing without memory\n")
    return 0


def main(argv: list[str]) -> int:
    try:
        body = sys.stdin.buffer.read()
    except (OSError, ValueError):
        body = b""
    if env("CLAUDE_MEM_INTERNAL") == "1":
        # The observer's own `claude -p` session (claude provider): never observed.
        return 0
    if len(argv) != 2:
        return _fail("usage is `cmem hook <platform> <event>`")
    platform, event = argv
    if platform not in PLATFORMS:
        return _fail(f"unknown platform {platform!r}")
    try:
        return run(platform, event, body)
    except Exception as exc:  # noqa: BLE001 - a hook must never break the agent
        return _fail(f"hook client error ({type(exc).__name__}: {exc})")
