"""A shared team server with two teammates' memory in one project, for the isolation tests.

One real `cmem serve` on PostgreSQL + Redis that requires tokens. Alice and Bob each
capture a session in the same project (`github.com/acme/shop`) through real hook requests
over HTTP, the way a remote hook client sends them (the project claim and the file facts
are the client's); the worker's consumer compresses and embeds them. Alice also works in a
project of her own. Sam is staff. Each user has a deliverable with a stored file.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support import CMEM, REPO, LiveWorker
from tests.support.team import pg_query, run_cmem

PROJECT = "github.com/acme/shop"
ALICE_ONLY = "github.com/alice/diary"
# Words only one user's rows hold: a hit on one is a leak.
WORDS = {"alice": "zebrafruit", "bob": "kiwiberry"}


@dataclass
class Reply:
    status: int
    body: bytes
    headers: dict[str, str]

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


@dataclass
class UserRows:
    session: int = 0
    session_ids: list[str] = field(default_factory=list)
    observations: list[int] = field(default_factory=list)
    summaries: list[int] = field(default_factory=list)
    prompts: list[int] = field(default_factory=list)
    deliverables: list[int] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


@dataclass
class World:
    worker: LiveWorker
    env: dict[str, str]
    db: str
    tokens: dict[str, str]
    rows: dict[str, UserRows]

    def call(
        self,
        user: str | None,
        method: str,
        path: str,
        params: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
    ) -> Reply:
        """One real HTTP request to the worker with `user`'s token (None: no token)."""
        url = self.worker.url + path
        if params:
            url += "?" + urllib.parse.urlencode(params, doseq=True)
        headers = {"Content-Type": "application/json"}
        if user is not None:
            headers["Authorization"] = f"Bearer {self.tokens[user]}"
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        opener = urllib.request.build_opener(_NoRedirect)
        try:
            with opener.open(request, timeout=60) as resp:
                return Reply(resp.status, resp.read(), dict(resp.headers))
        except urllib.error.HTTPError as exc:
            return Reply(exc.code, exc.read(), dict(exc.headers))

    def hook(self, user: str, event: str, payload: dict[str, Any]) -> Reply:
        return self.call(user, "POST", f"/api/hooks/claude-code/{event}", body=payload)

    def sql(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return pg_query(self.db, query, params)

    def count(self, table: str, where: str = "TRUE", params: tuple[Any, ...] = ()) -> int:
        return int(self.sql(f"SELECT count(*) FROM {table} WHERE {where}", params)[0][0])

    def owned_counts(self, user: str) -> dict[str, int]:
        """How many rows of each table belong to `user` (checked in the database itself)."""
        uid = self.user_id(user)
        sessions = "session_id IN (SELECT id FROM memory_session WHERE owner_id = %s)"
        return {
            "sessions": self.count("memory_session", "owner_id = %s", (uid,)),
            "prompts": self.count("memory_prompt", sessions, (uid,)),
            "events": self.count("memory_event", sessions, (uid,)),
            "observations": self.count("memory_observation", sessions, (uid,)),
            "summaries": self.count("memory_summary", sessions, (uid,)),
            "file_views": self.count("memory_fileview", sessions, (uid,)),
            "deliverables": self.count("deliverables_deliverable", sessions, (uid,)),
            "ledger": self.count("memory_ledgerentry", "owner_id = %s", (uid,)),
        }

    def user_id(self, user: str) -> int:
        return int(self.sql("SELECT id FROM auth_user WHERE username = %s", (user,))[0][0])


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A page's redirect to the login is the answer itself, not something to follow."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def tool_use(
    user: str, session_id: str, root: str, name: str, content: str, n: int, project: str = PROJECT
) -> dict[str, Any]:
    path = f"{root}/{name}"
    return {
        "session_id": session_id,
        "transcript_path": "",
        "cwd": root,
        "prompt_id": f"{session_id}-p1",
        "hook_event_name": "PostToolUse",
        "tool_name": "Read",
        "tool_use_id": f"toolu_{user}_{n}",
        "tool_input": {"file_path": path},
        "tool_response": {"type": "text", "file": {"filePath": path, "content": content}},
        "cmem_project": {"name": project, "root": root},
        # What a remote hook client measures on its own disk (memory/hookclient/remote.py).
        "cmem_file_facts": {
            path: {"size": len(content), "mtime": time.time(), "sha256": f"{n:064x}"}
        },
    }


def _capture(world: World, user: str, session_id: str, project: str, n: int) -> None:
    word = WORDS[user]
    root = f"/clients/{user}/{project.rsplit('/', 1)[-1]}"
    claim = {"name": project, "root": root}
    base = {"session_id": session_id, "transcript_path": "", "cwd": root, "cmem_project": claim}
    assert (
        world.hook(
            user, "context", {**base, "hook_event_name": "SessionStart", "source": "startup"}
        ).status
        == 200
    )
    prompt = {
        **base,
        "prompt_id": f"{session_id}-p1",
        "hook_event_name": "UserPromptSubmit",
        "prompt": f"Explain the {word} reconciliation in {project}",
    }
    assert world.hook(user, "session-init", prompt).status == 200
    name = f"{word}_ledger_{n}.py"
    body = f"def {word}_reconcile():\n    # {word} totals are settled nightly\n    return 42\n"
    assert (
        world.hook(
            user, "observation", tool_use(user, session_id, root, name, body, n, project)
        ).status
        == 200
    )
    stop = {
        **base,
        "prompt_id": f"{session_id}-p1",
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": f"The {word} reconciliation settles totals nightly.",
    }
    assert world.hook(user, "summarize", stop).status == 200
    world.rows[user].session_ids.append(session_id)
    world.rows[user].files.append(f"{root}/{name}")


def _wait_compressed(world: World, users: list[str], timeout: float = 180) -> None:
    """Until every session has its observation, summary and vectors (the consumer's work)."""
    deadline = time.monotonic() + timeout
    want = sum(len(world.rows[u].session_ids) for u in users)
    while time.monotonic() < deadline:
        done = world.sql(
            "SELECT count(*) FROM memory_session s WHERE "
            "EXISTS (SELECT 1 FROM memory_observation o WHERE o.session_id = s.id) AND "
            "EXISTS (SELECT 1 FROM memory_summary m WHERE m.session_id = s.id) AND "
            "EXISTS (SELECT 1 FROM memory_embedding e JOIN memory_observation o "
            "        ON e.kind = 'observation' AND e.object_id = o.id WHERE o.session_id = s.id)"
        )[0][0]
        if done >= want:
            return
        time.sleep(0.5)
    log = (world.worker.data_dir / "serve.out").read_text(errors="replace")[-3000:]
    pytest.fail(f"the consumer did not compress and embed {want} sessions in {timeout}s:\n{log}")


_DELIVERABLE = """
import hashlib, sys
from pathlib import Path
from deliverables.models import Deliverable
from deliverables.services import deliverables_root
from memory.models import Session
for sid, text in [a.split('=', 1) for a in sys.argv[1:]]:
    session = Session.objects.get(session_id=sid)
    rel = Path(session.project.replace('/', '_')) / f"{sid}.md"
    dest = deliverables_root() / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text)
    d = Deliverable.objects.create(session=session, project=session.project,
        original_path=f"/clients/{sid}.md", stored_path=str(rel), size=len(text),
        sha256=hashlib.sha256(text.encode()).hexdigest(), content_type='text/markdown')
    print(f'DELIVERABLE={d.pk}')
"""


def _deliverables(world: World, items: dict[str, str]) -> list[int]:
    """Stored deliverables for sessions (a remote client's bytes are not uploaded yet, so
    they are made the way the Stop hook stores them: a row and a file under the data dir)."""
    done = run_cmem(
        [
            "manage",
            "shell",
            "-c",
            f"import sys; sys.argv = ['x', *{[f'{k}={v}' for k, v in items.items()]!r}]\n"
            + _DELIVERABLE,
        ],
        {**world.env, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr
    return [int(w.split("=")[1]) for w in done.stdout.split() if w.startswith("DELIVERABLE=")]


def world_build(worker: LiveWorker, env: dict[str, str]) -> World:
    tokens = {}
    for user in ("alice", "bob", "sam"):
        made = run_cmem(["token", "create", user, "--name", f"{user}'s laptop"], env)
        assert made.returncode == 0, made.stderr
        tokens[user] = made.stdout.strip().splitlines()[-1]
    world = World(
        worker,
        env,
        env["CLAUDE_MEM_DATABASE_URL"],
        tokens,
        {u: UserRows() for u in ("alice", "bob", "sam")},
    )
    world.sql("UPDATE auth_user SET is_staff = TRUE WHERE username = 'sam' RETURNING id")
    _capture(world, "alice", "sess-alice-1", PROJECT, 1)
    _capture(world, "alice", "sess-alice-2", ALICE_ONLY, 2)
    _capture(world, "bob", "sess-bob-1", PROJECT, 3)
    _wait_compressed(world, ["alice", "bob"])
    # The gate's evidence: Alice reads her file again, is refused, and the refusal is booked.
    for user in ("alice", "bob"):
        rows = world.rows[user]
        sid, path = rows.session_ids[0], rows.files[0]
        root = path.rsplit("/", 1)[0]
        pre = {
            **tool_use(user, sid, root, path.rsplit("/", 1)[1], "x", 9),
            "hook_event_name": "PreToolUse",
        }
        pre.pop("tool_response")
        pre["cmem_file_facts"] = {path: {"size": 200_000, "mtime": time.time(), "sha256": "f" * 64}}
        denied = world.hook(user, "file-context", pre)
        assert denied.status == 200 and WORDS[user] in denied.text, (
            denied.text,
            world.sql("SELECT project, path, role, content_hash FROM memory_observationfile"),
            world.sql("SELECT id, title, project, files_read FROM memory_observation"),
            world.sql("SELECT path, content_hash FROM memory_fileview"),
        )
    for user in ("alice", "bob"):
        uid = world.user_id(user)
        rows = world.rows[user]
        rows.session = int(
            world.sql(
                "SELECT id FROM memory_session WHERE owner_id = %s ORDER BY id LIMIT 1", (uid,)
            )[0][0]
        )
        sessions = "session_id IN (SELECT id FROM memory_session WHERE owner_id = %s)"
        rows.observations = [
            r[0]
            for r in world.sql(
                f"SELECT id FROM memory_observation WHERE {sessions} ORDER BY id", (uid,)
            )
        ]
        rows.summaries = [
            r[0]
            for r in world.sql(
                f"SELECT id FROM memory_summary WHERE {sessions} ORDER BY id", (uid,)
            )
        ]
        rows.prompts = [
            r[0]
            for r in world.sql(f"SELECT id FROM memory_prompt WHERE {sessions} ORDER BY id", (uid,))
        ]
    made = _deliverables(
        world,
        {"sess-alice-1": f"# {WORDS['alice']} notes\n", "sess-bob-1": f"# {WORDS['bob']} notes\n"},
    )
    world.rows["alice"].deliverables, world.rows["bob"].deliverables = [made[0]], [made[1]]
    return world


__all__ = [
    "ALICE_ONLY",
    "CMEM",
    "PROJECT",
    "WORDS",
    "Path",
    "Reply",
    "World",
    "tool_use",
    "world_build",
]
