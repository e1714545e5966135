"""The fast path of the CLI: the verbs that only talk to the worker, without Django.

`cmem status`, `search`, `show`, `timeline`, `stats` ask the running worker over its Unix socket
(the owner's door: memory/runtime/credentials.py) and print what their management commands
print (the text is memory/management/verb_text.py, shared); `start`, `stop`, `restart`, `open`
and `logs` never needed the database (memory/management/worker_verbs.py). Django's setup and
the models were most of what each of these cost (1.5 to 3 s under load, for a
millisecond's answer); here the process imports the standard library, memory.config and
the worker's state files only (the `cli-fast-path` import contract in pyproject.toml).

A handler answers None when it cannot answer the same way, and the front end then runs
the management command: the worker is not running or answers an error, or an option needs
the database (`show --tool-uses`, `show S3`).
"""

from __future__ import annotations

import http.client
import json
import shutil
import sys
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from memory import config
from memory.management import worker_verbs
from memory.management.verb_text import (
    observation_text,
    parse_show_ids,
    search_lines,
    search_modes_here,
    status_head,
    status_tail,
    timeline_line,
)
from memory.watch import loop as watch_loop
from memory.worker import lifecycle
from memory.worker import state as worker

FAILURE = 1
USAGE = 2
SEARCH_KINDS = ("observation", "summary", "prompt")
# A search or a timeline waits on the database; the fallback would wait as long.
TIMEOUT_S = 30.0


def _out(line: str) -> None:
    sys.stdout.write(line + "\n")


def _say(verb: str, message: str) -> None:
    sys.stderr.write(f"cmem {verb}: {message}\n")


def _get(path: str) -> tuple[int, dict[str, Any]] | None:
    """(status, JSON object) of GET `path` from the local worker, or None when it cannot answer."""
    conn = worker._unix_connection()(str(config.data_dir() / "worker.sock"), TIMEOUT_S)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        body = json.loads(resp.read())
    except (OSError, ValueError, http.client.HTTPException):
        return None
    finally:
        conn.close()
    return (resp.status, body) if isinstance(body, dict) else None


def status(o: dict[str, Any]) -> int | None:
    worker.worker_address()  # reads settings.json, recording what is wrong with it
    state = lifecycle.worker_state()
    if not (state.running and state.health):
        return None  # not running or not answering: the command says which
    search = search_modes_here()
    got = _get("/api/stats?status=1")
    if got is None or got[0] != 200 or not isinstance(got[1].get("observer"), dict):
        return None  # an older worker: the command computes the observer itself
    if search["semantic"]:
        search["waiting_for_vector"] = got[1].get("waiting_for_vector")
    for problem in config.problems():
        sys.stderr.write(f"settings: {problem}\n")
    pending = got[1].get("pending")
    # The observer the running worker uses (its settings and environment): it compresses.
    observer = got[1]["observer"]
    if o["json"]:
        _out(
            json.dumps(
                {
                    "running": True,
                    "pid": state.pid,
                    "url": state.address.url + "/",
                    "version": state.health.get("version"),
                    "answering": True,
                    "uptime_seconds": None if state.uptime is None else round(state.uptime),
                    "pending": pending,
                    "stale": None,
                    "observer": observer,
                    "search": search,
                }
            )
        )
        return 0
    head = status_head(
        running=True, pid=state.pid, url=state.address.url, health=state.health,
        uptime=state.uptime, pending=pending, data_dir=config.data_dir(),
    )  # fmt: skip
    for line in [*head, *status_tail(observer, search)]:
        _out(line)
    return 0


def search(o: dict[str, Any]) -> int | None:
    words = " ".join(o["text"])
    params: dict[str, Any] = {"q": words, "limit": max(1, o["limit"]), "mode": o["mode"]}
    kinds = [k for k in o["kind"].split(",") if k in SEARCH_KINDS]
    types = [t for t in o["type"].split(",") if t]
    extra = {"kind": ",".join(kinds), "type": ",".join(types), "project": o["project"],
             "file": o["file"], "concept": o["concept"]}  # fmt: skip
    params.update({key: value for key, value in extra.items() if value})
    got = _get("/api/search?" + urlencode(params))
    if got is None or got[0] != 200:
        return None
    body = got[1]
    if o["json"]:
        out = {"mode": body["mode"], "note": body["note"], "results": body["results"]}
        _out(json.dumps(out, indent=2))
        return 0
    if body["note"]:
        sys.stderr.write(f"cmem: {body['note']}\n")
    width = shutil.get_terminal_size((100, 24)).columns
    for line in search_lines(body["results"], words=words, width=width):
        _out(line)
    return 0


def show(o: dict[str, Any]) -> int | None:
    parsed = parse_show_ids(o["ids"])
    if isinstance(parsed, str):
        _say("show", parsed)
        return USAGE
    if o["tool_uses"] or any(kind != "observation" for kind, _ in parsed):
        return None  # summaries, prompts and raw tool uses: the command reads them
    wanted = list(dict.fromkeys(pk for _, pk in parsed))
    got = _get("/api/observations?ids=" + ",".join(map(str, wanted)))
    if got is None or got[0] != 200:
        return None
    found, missing = got[1]["observations"], got[1]["missing"]
    if o["json"]:
        _out(json.dumps({"observations": found, "missing": missing}, indent=2))
    elif found:
        _out("\n\n".join(observation_text(obs) for obs in found))
    if missing:
        _say("show", f"no observation with id {', '.join(map(str, missing))}")
        return FAILURE
    return 0


def timeline(o: dict[str, Any]) -> int | None:
    params = {"anchor": o["anchor"], "q": o["query"], "project": o["project"]}
    query = {key: value for key, value in params.items() if value}
    query.update(depth_before=o["depth"], depth_after=o["depth"])
    got = _get("/api/timeline?" + urlencode(query))
    if got is None or got[0] not in (200, 400, 404):
        return None
    status_code, body = got
    if status_code != 200:  # 400: no anchor or not an id (a usage error); 404: not found
        _say("timeline", str(body.get("error") or body))
        return USAGE if status_code == 400 else FAILURE
    if o["json"]:
        _out(json.dumps(body, indent=2))
    else:
        for item in body["items"]:
            _out(timeline_line(item))
    return 0


def stats(o: dict[str, Any]) -> int | None:
    params = {"days": max(1, o["days"]), "by": o["by"], "sessions": max(0, o["sessions"])}
    if o["project"]:
        params["project"] = o["project"]
    got = _get("/api/ledger/report?" + urlencode(params))
    if got is None or got[0] != 200:
        return None
    if o["json"]:
        _out(json.dumps(got[1]["report"], indent=2))
    else:
        _out(got[1]["text"])
    return 0


def _worker_verb(name: str, run: Callable[..., None]) -> Callable[[dict[str, Any]], int]:
    def handler(o: dict[str, Any]) -> int:
        try:
            run(o, _out)
        except worker_verbs.VerbError as exc:
            _say(name, str(exc))
            return FAILURE
        return 0

    return handler


def _logs(o: dict[str, Any]) -> int:
    worker_verbs.logs(o, _out, sys.stdout.flush)
    return 0


HANDLERS: dict[str, Callable[[dict[str, Any]], int | None]] = {
    "status": status,
    "search": search,
    "show": show,
    "timeline": timeline,
    "stats": stats,
    "logs": _logs,
    "start": _worker_verb("start", worker_verbs.start),
    "stop": _worker_verb("stop", worker_verbs.stop),
    "restart": _worker_verb("restart", worker_verbs.restart),
    "open": _worker_verb("open", worker_verbs.open_),
    "watch": lambda o: watch_loop.main(o),
}


def run(verb: str, options: dict[str, Any]) -> int | None:
    """The verb's exit code, or None: run the management command instead."""
    handler = HANDLERS.get(verb)
    if handler is None or config.get("CLAUDE_MEM_WORKER_URL", config.load()):
        return None  # team mode: the commands know the remote worker
    return handler(options)
