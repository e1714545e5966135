"""Team mode of the hook client: a remote worker at `CLAUDE_MEM_WORKER_URL`, over http(s).

memory/hookclient/client.py imports this module only when that URL is set, so the local fast path
pays for none of it. This path takes `json` and `http.client`: the remote worker cannot see
our disk, so each payload gains the project (from the git remote) and facts about the local
files a file tool touches; requests carry the user's bearer token (`CLAUDE_MEM_API_TOKEN`);
and with no local worker to drain the spool, a hook that got through forwards what was
spooled while the shared worker was unreachable.
"""

from __future__ import annotations

import os

from memory.hookclient import HookFailure, WorkerDown, data_dir, error_reason, setting
from memory.protocol.netpolicy import is_loopback
from memory.protocol.spool_names import is_pending, parse_name

# Claude Code's, then Gemini CLI's, Copilot CLI's and OpenCode's file tools (their facts
# are sent for the files they name).
FILE_TOOLS = frozenset(
    {"Read", "Edit", "MultiEdit", "Write", "NotebookEdit"}
    | {"read_file", "write_file", "replace", "view", "create", "edit", "read", "write"}
)
PATH_KEYS = ("file_path", "notebook_path", "path", "filePath")
# The events at which a local worker reads the session's model from the transcript.
MODEL_EVENTS = frozenset({"summarize", "session-end"})


def _file_facts(path: str) -> dict | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    facts: dict = {"size": st.st_size, "mtime": st.st_mtime}
    if st.st_size <= 64 * 1024 * 1024:
        # team mode, per file fact: hashlib only for a file small enough to hash
        import hashlib

        digest = hashlib.sha256()
        try:
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
            facts["sha256"] = digest.hexdigest()
        except OSError:
            pass
    return facts


def remote_payload(event: str, body: bytes) -> bytes:
    """The remote worker cannot see our disk: add the project (`cmem_project`, computed here
    from the git remote) and, for file tools, each file's size, mtime and sha256."""
    # team mode: json only on the remote path (the module docstring)
    import json

    try:
        data = json.loads(body.decode("utf-8", "replace"))
    except ValueError:
        return body
    if not isinstance(data, dict):
        return body
    cwd = data.get("cwd") if isinstance(data.get("cwd"), str) else ""
    if cwd and "cmem_project" not in data:
        try:
            # team mode: the project from the git remote, only when the payload lacks it
            from memory.projects import project_facts

            data["cmem_project"] = project_facts(cwd)
        except Exception:  # noqa: BLE001 - the worker falls back to its own guess
            pass
    # Claude Code, Codex, Gemini: tool_input; Copilot: toolArgs; OpenCode's plugin: args.
    tool_input = data.get("tool_input") or data.get("toolArgs") or data.get("args")
    if (
        event in {"file-context", "observation"}
        and (data.get("tool_name") or data.get("toolName") or data.get("tool")) in FILE_TOOLS
        and isinstance(tool_input, dict)
    ):
        facts = {}
        for key in PATH_KEYS:
            path = tool_input.get(key)
            if isinstance(path, str) and path:
                absolute = os.path.normpath(
                    path if os.path.isabs(path) else os.path.join(str(cwd), path)
                )
                found = _file_facts(absolute)
                if found is not None:
                    facts[absolute] = found
        if facts:
            data["cmem_file_facts"] = facts
    # The session's main model, which prices its tokens in Stats: the shared worker cannot
    # read our transcript, so the client reads its tail (bounded, no links) and says.
    transcript = data.get("transcript_path")
    if event in MODEL_EVENTS and isinstance(transcript, str) and "cmem_model" not in data:
        # team mode: the transcript's model, only at the events that need it
        from memory.capture.transcript_model import transcript_model

        model = transcript_model(transcript)
        if model:
            data["cmem_model"] = model
    return json.dumps(data).encode()


def post_remote(base_url: str, path: str, body: bytes, timeout: float) -> tuple[int, bytes]:
    # team mode: http.client only when a request goes out
    import http.client
    from urllib.parse import urlsplit

    url = urlsplit(base_url.rstrip("/") + path)
    headers = {"Content-Type": "application/json"}
    token = setting("CLAUDE_MEM_API_TOKEN")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if url.scheme == "https":
        # https only: ssl maps OpenSSL
        import ssl

        # Verify the server's certificate (the default context checks chain and hostname);
        # CLAUDE_MEM_CA_FILE names the team's own CA when the proxy's cert is not public.
        context = ssl.create_default_context(cafile=setting("CLAUDE_MEM_CA_FILE") or None)
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            url.hostname or "", url.port, timeout=timeout, context=context
        )
    elif url.scheme == "http" and is_loopback(url.hostname or ""):
        # Plain http only to this machine (a test server or a local TLS-terminating tunnel).
        conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=timeout)
    elif url.scheme == "http":
        raise HookFailure(
            f"CLAUDE_MEM_WORKER_URL {base_url!r} is plain http to another host: prompts and "
            "the token would cross the network in clear; use https:// (a reverse proxy)"
        )
    else:
        raise HookFailure(
            f"CLAUDE_MEM_WORKER_URL must start with https:// (or http:// for loopback), not {base_url!r}"
        )
    try:
        try:
            conn.request("POST", url.path, body=body, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.read()
        except (OSError, http.client.HTTPException) as exc:
            raise WorkerDown(f"worker unreachable at {url.hostname} ({error_reason(exc)})") from exc
    finally:
        conn.close()


def post(
    base_url: str, platform: str, event: str, body: bytes, timeout: float
) -> tuple[int, bytes]:
    """One hook event to the remote worker, with what it cannot see of our disk added."""
    return post_remote(
        base_url, f"/api/hooks/{platform}/{event}", remote_payload(event, body), timeout
    )


def after_delivery(base_url: str, timeout: float) -> None:
    """Best effort once the answer is out: forward what waits in the spool."""
    if os.path.isdir(os.path.join(data_dir(), "spool")):
        try:  # noqa: SIM105 - contextlib costs an import on the hook's path
            flush_remote_spool(base_url, timeout)
        except Exception:  # noqa: BLE001
            pass


def flush_remote_spool(base_url: str, timeout: float, limit: int = 20) -> int:
    """Team mode has no local worker to drain the spool: after a request succeeds, this hook
    forwards up to `limit` spooled events, oldest first, claimed by rename like the worker
    does. Returns how many were delivered."""
    folder = os.path.join(data_dir(), "spool")
    try:
        names = sorted(n for n in os.listdir(folder) if is_pending(n))
    except OSError:
        return 0
    claimed_dir = os.path.join(folder, "claimed")
    os.makedirs(claimed_dir, mode=0o700, exist_ok=True)
    delivered = 0
    for name in names[:limit]:
        source, claimed = os.path.join(folder, name), os.path.join(claimed_dir, name)
        try:
            os.rename(source, claimed)
        except OSError:
            continue  # another hook took it
        parsed = parse_name(name)
        status = 0  # a name that is not a spool name goes to failed/, as the worker does
        if parsed is not None:
            try:
                with open(claimed, "rb") as fh:
                    body = fh.read()
                status, _ = post(base_url, parsed[0], parsed[1], body, timeout)
            except (HookFailure, OSError):
                os.replace(claimed, source)
                break
        if status >= 500 or status in (401, 403, 404, 405, 429):
            os.replace(claimed, source)  # not now; keep the order for a later hook
            break
        if status != 200:
            failed = os.path.join(folder, "failed")
            os.makedirs(failed, mode=0o700, exist_ok=True)
            os.replace(claimed, os.path.join(failed, name))
            continue
        os.unlink(claimed)
        delivered += 1
    return delivered
