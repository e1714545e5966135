"""Team sharing, opt-in per project (issue 34): a real team server, three teammates.

Alice captures a session in the team's project P and one in her own project Q. She shares
P with Bob only (`cmem share P --with bob`, run as her client would: through the server's
API with her token). Carol is not a member. Every read surface is then asked, over real
HTTP (and the MCP server): Bob sees Alice's P rows, named as hers, in the SessionStart
index, the read gate, search (every mode), prompt recall, the timeline, observation
detail, MCP and export, and never her Q rows; Carol sees none of Alice's. Corrections:
Alice's edit is everyone's, Bob's mark and edit are his alone. A hook body sent straight
over HTTP with a secret and a `<private>` part is redacted by the server itself. Revoking
the share takes everything out of Bob's view at once.

`SHARING_ATTACKS` holds the isolation checks of the /api/shares routes for
tests/team/test_isolation.py (its OpenAPI-driven completeness check).

These tests need PostgreSQL and Redis and fail (never skip) when either is missing.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import CMEM, LiveWorker
from tests.support.team import live_team_worker, run_cmem
from tests.team.isolation_world import (
    ALICE_ONLY,
    PROJECT,
    WORDS,
    UserRows,
    World,
    _capture,
    _wait_compressed,
    tool_use,
)

pytestmark = [pytest.mark.team, pytest.mark.slow]

P, Q = PROJECT, ALICE_ONLY
MODES = ("keyword", "semantic", "hybrid")
# A key of AWS's shape and a private part: neither may be stored, nor reach a teammate.
AWS_KEY = "AKIA" + "Q7ZP3XKV2MNB8RTD"
PRIVATE = "hushhush-pinecone-0451"


def _start(world: World, user: str, session_id: str, project: str = P) -> str:
    """A SessionStart of `user` in `project`: the index text it answers with."""
    root = f"/clients/{user}/{project.rsplit('/', 1)[-1]}"
    body = {
        "session_id": session_id,
        "transcript_path": "",
        "cwd": root,
        "cmem_project": {"name": project, "root": root},
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    reply = world.hook(user, "context", body)
    assert reply.status == 200, reply.text
    return reply.text


def _client_env(world: World, user: str, home: Path) -> dict[str, str]:
    """A teammate's machine: its own data dir, the team server's URL and their token."""
    home.mkdir(exist_ok=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CLAUDE_MEM_", "CMEM_", "ANTHROPIC_"))
    }
    env.update(
        HOME=str(home),
        CLAUDE_MEM_DATA_DIR=str(home / ".claude-mem"),
        CLAUDE_MEM_WORKER_URL=world.worker.url,
        CLAUDE_MEM_API_TOKEN=world.tokens[user],
    )
    return env


@pytest.fixture(scope="module")
def world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    template = request.getfixturevalue("pg_template")
    folder = tmp_path_factory.mktemp("share")
    with live_team_worker(
        template,
        folder,
        "share",
        # Prompt recall is one of the surfaces a share opens.
        CLAUDE_MEM_SEMANTIC_INJECT="true",
    ) as (worker, env):
        yield _build(worker, env, tmp_path_factory.mktemp("clients"))


def _build(worker: LiveWorker, env: dict[str, str], clients: Path) -> World:
    users = ("alice", "bob", "carol")
    tokens = {}
    for user in users:
        made = run_cmem(["token", "create", user], env)
        assert made.returncode == 0, made.stderr
        tokens[user] = made.stdout.strip().splitlines()[-1]
    world = World(
        worker, env, env["CLAUDE_MEM_DATABASE_URL"], tokens, {u: UserRows() for u in users}
    )
    # Bob's and Carol's sessions start before Alice's rows exist: their indexes showed none
    # of them, so prompt recall may bring them.
    for user in ("bob", "carol"):
        _start(world, user, f"sess-{user}-1")
    _capture(world, "alice", "sess-alice-1", P, 1)
    _capture(world, "alice", "sess-alice-2", Q, 2)
    _wait_compressed(world, ["alice"])
    alice = world.rows["alice"]
    uid = world.user_id("alice")
    for sid in alice.session_ids:
        pk = world.sql("SELECT id FROM memory_session WHERE session_id = %s", (sid,))[0][0]
        alice.observations.append(
            world.sql("SELECT id FROM memory_observation WHERE session_id = %s", (pk,))[0][0]
        )
    alice.session = world.sql(
        "SELECT id FROM memory_session WHERE owner_id = %s AND project = %s", (uid, P)
    )[0][0]
    # Alice shares P with Bob from her own machine: the CLI through the server's API.
    done = run_cmem(["share", P, "--with", "bob"], _client_env(world, "alice", clients / "alice"))
    assert done.returncode == 0, done.stderr
    assert f"{P} of alice: shared with bob" in done.stdout, done.stdout
    world.env = {**env, "CLIENTS": str(clients)}
    return world


def _p_obs(world: World) -> int:
    return world.rows["alice"].observations[0]


def _q_obs(world: World) -> int:
    return world.rows["alice"].observations[1]


def _q_marks(world: World) -> list[str]:
    """What of Alice's unshared project Q shows in a text: its session, file and word use."""
    return ["sess-alice-2", Path(world.rows["alice"].files[1]).name]


def _alice_marks(world: World) -> list[str]:
    rows = world.rows["alice"]
    return [*rows.session_ids, *(Path(f).name for f in rows.files), f"{WORDS['alice']}_reconcile"]


def _search(world: World, user: str, **params: Any) -> list[dict[str, Any]]:
    reply = world.call(user, "GET", "/api/search", params)
    assert reply.status == 200, reply.text
    return list(reply.json()["results"])


def _gate(world: World, user: str, session_id: str) -> str:
    """The read gate for `user` reading the file Alice's P row is about, in their session."""
    name = Path(world.rows["alice"].files[0]).name
    root = f"/clients/{user}/shop"
    pre = {**tool_use(user, session_id, root, name, "x", 7), "hook_event_name": "PreToolUse"}
    pre.pop("tool_response")
    pre["cmem_file_facts"] = {
        f"{root}/{name}": {"size": 200_000, "mtime": time.time(), "sha256": "f" * 64}
    }
    reply = world.hook(user, "file-context", pre)
    assert reply.status == 200, reply.text
    return reply.text


def _recall(world: World, user: str, session_id: str) -> str:
    root = f"/clients/{user}/shop"
    body = {
        "session_id": session_id,
        "transcript_path": "",
        "cwd": root,
        "cmem_project": {"name": P, "root": root},
        "prompt_id": f"{session_id}-p9",
        "hook_event_name": "UserPromptSubmit",
        "prompt": f"Explain the {WORDS['alice']} reconciliation in {P}",
    }
    reply = world.hook(user, "session-init", body)
    assert reply.status == 200, reply.text
    return reply.text


def _mcp(world: World, user: str, home: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """The texts of MCP tool calls made by `user`'s own `cmem mcp` against the team server."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = _client_env(world, user, home)

    async def run() -> list[str]:
        params = StdioServerParameters(command=CMEM, args=["mcp"], env=env, cwd=str(home))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            texts = []
            for tool, args in calls:
                result = await session.call_tool(tool, args)
                texts.append("\n".join(p.text for p in result.content if p.type == "text"))
            return texts

    return asyncio.run(asyncio.wait_for(run(), timeout=120))


# --- a member sees the shared project, named as Alice's, and nothing else ------------------


def test_a_member_sees_the_shared_projects_rows_on_every_surface(
    world: World, tmp_path: Path
) -> None:
    word, p_obs, q_obs = WORDS["alice"], _p_obs(world), _q_obs(world)
    # The SessionStart index of a new session in P: Alice's row, by her.
    index = _start(world, "bob", "sess-bob-2")
    assert f"{word}" in index and "(by alice)" in index, index
    assert ", by alice)" in index, index  # her session's summary, the project's last
    assert not any(mark in index for mark in _q_marks(world)), index
    # The read gate on the file her row is about.
    gate = _gate(world, "bob", "sess-bob-2")
    assert word in gate and "(by alice)" in gate, gate
    # Search, every mode: her P rows with their author, never Q's.
    for mode in MODES:
        hits = _search(world, "bob", q=f"{word} reconciliation", mode=mode)
        assert any(h["session"] == world.rows["alice"].session for h in hits), (mode, hits)
        for hit in hits:
            assert hit["project"] == P, (mode, hit)
            if hit["session"] == world.rows["alice"].session:
                assert hit["author"] == "alice", (mode, hit)
        assert not _search(world, "bob", q=word, project=Q, mode=mode), mode
    # Prompt recall in Bob's session begun before her rows: her row, by her.
    recall = _recall(world, "bob", "sess-bob-1")
    assert f"#{p_obs} " in recall and "(by alice)" in recall, recall
    # Timeline around her P row, with its author; her Q row is not there for Bob.
    around = world.call("bob", "GET", "/api/timeline", {"anchor": str(p_obs)})
    assert around.status == 200, around.text
    assert around.json()["anchor"]["author"] == "alice"
    assert world.call("bob", "GET", "/api/timeline", {"anchor": str(q_obs)}).status == 404
    # Detail: P's row with its author, Q's missing.
    detail = world.call("bob", "GET", "/api/observations", {"ids": f"{p_obs},{q_obs}"}).json()
    assert [o["id"] for o in detail["observations"]] == [p_obs] and detail["missing"] == [q_obs]
    assert detail["observations"][0]["author"] == "alice"
    # Export: Alice's P session, named as hers, without her ledger; never Q's.
    export = world.call("bob", "GET", "/api/export").json()
    sessions = {s["session_id"]: s for s in export["sessions"]}
    assert "sess-alice-1" in sessions and "sess-alice-2" not in sessions, list(sessions)
    assert sessions["sess-alice-1"]["author"] == "alice"
    assert sessions["sess-alice-1"]["ledger"] == []
    # The MCP server with Bob's token.
    texts = _mcp(
        world,
        "bob",
        tmp_path / "bob",
        [
            ("search", {"query": f"{word} reconciliation", "mode": "hybrid"}),
            ("get_observations", {"ids": [p_obs, q_obs]}),
            ("timeline", {"anchor": str(p_obs)}),
        ],
    )
    assert "(by alice)" in texts[0] and f"{p_obs}" in texts[0], texts[0]
    assert "by alice" in texts[1] and f"no observation with id {q_obs}" in texts[1], texts[1]
    assert "(by alice)" in texts[2], texts[2]
    for text in texts:
        assert not any(mark in text for mark in _q_marks(world)), text


def test_a_non_member_sees_none_of_the_shared_rows(world: World, tmp_path: Path) -> None:
    word, p_obs, q_obs = WORDS["alice"], _p_obs(world), _q_obs(world)
    texts = [
        _start(world, "carol", "sess-carol-2"),
        _gate(world, "carol", "sess-carol-2"),
        _recall(world, "carol", "sess-carol-1"),
    ]
    alice_sessions = {pk for (pk,) in world.sql(
        "SELECT id FROM memory_session WHERE owner_id = %s", (world.user_id("alice"),)
    )}  # fmt: skip
    for mode in MODES:
        hits = _search(world, "carol", q=f"{word} reconciliation", mode=mode)
        # Carol's own prompt (the recall above) may match; nothing of Alice's does.
        assert all(h["session"] not in alice_sessions and not h["author"] for h in hits), hits
    for anchor in (str(p_obs), str(q_obs)):
        reply = world.call("carol", "GET", "/api/timeline", {"anchor": anchor})
        assert reply.status == 404, reply.text
        texts.append(reply.text)
    detail = world.call("carol", "GET", "/api/observations", {"ids": f"{p_obs},{q_obs}"}).json()
    assert detail["observations"] == [] and detail["missing"] == [p_obs, q_obs]
    texts.append(world.call("carol", "GET", "/api/export").text)
    texts += _mcp(
        world,
        "carol",
        tmp_path / "carol",
        [("search", {"query": f"{word} reconciliation"}), ("get_observations", {"ids": [p_obs]})],
    )
    for text in texts:
        assert "by alice" not in text, text
        assert not any(mark in text for mark in _alice_marks(world)), text
    # Nor does Carol see Alice's share, or can she change it.
    assert world.call("carol", "GET", "/api/shares").json()["shares"] == []
    share_id = world.call("alice", "GET", "/api/shares").json()["shares"][0]["id"]
    assert world.call("carol", "DELETE", f"/api/shares/{share_id}").status == 404


def test_a_member_never_sees_an_unshared_project(world: World) -> None:
    word = WORDS["alice"]
    for mode in MODES:
        for params in ({"q": word}, {"q": word, "project": Q}, {"q": "", "limit": 100}):
            hits = _search(world, "bob", **params, mode=mode)
            assert all(h["project"] != Q for h in hits), (mode, params, hits)
    assert _start(world, "bob", "sess-bob-q", Q).count(word) == 0
    shares = world.call("bob", "GET", "/api/shares").json()["shares"]
    assert shares == []  # Bob manages his own shares only; Alice's is not his


# --- corrections: the author's are everyone's, a member's are their own -------------------


def _detail(world: World, user: str, pk: int) -> dict[str, Any]:
    reply = world.call(user, "GET", "/api/observations", {"ids": str(pk)})
    assert reply.status == 200, reply.text
    found = reply.json()["observations"]
    assert len(found) == 1, reply.text
    return dict(found[0])


def test_the_authors_correction_is_everyones_a_members_is_their_own(world: World) -> None:
    pk = _p_obs(world)
    original = _detail(world, "alice", pk)["title"]
    # Bob marks it wrong: his view only.
    marked = world.call(
        "bob",
        "POST",
        f"/api/observations/{pk}/mark",
        body={"action": "wrong", "reason": "not here"},
    )
    assert marked.status == 200, marked.text
    assert marked.json()["observation"]["status"] == "wrong"
    assert _detail(world, "bob", pk)["status"] == "wrong"
    assert _detail(world, "bob", pk)["viewer_corrected"] is True
    assert _detail(world, "alice", pk)["status"] == "current"
    assert (
        world.sql("SELECT status FROM memory_observation WHERE id = %s", (pk,))[0][0] == "current"
    )
    for mode in MODES:
        bobs = _search(world, "bob", q=WORDS["alice"], mode=mode, kind="observation")
        assert pk not in [h["id"] for h in bobs], (mode, bobs)
        alices = _search(world, "alice", q=WORDS["alice"], mode=mode, kind="observation")
        assert pk in [h["id"] for h in alices], (mode, alices)
    # Her only observation in P was the index's one "(by alice)" line: gone from Bob's.
    index = _start(world, "bob", "sess-bob-3")
    assert "(by alice)" not in index, index
    # Bob edits its title: his view only.
    edited = world.call(
        "bob", "PATCH", f"/api/observations/{pk}", body={"title": "bob's own words"}
    )
    assert edited.status == 200, edited.text
    assert _detail(world, "bob", pk)["title"] == "bob's own words"
    assert _detail(world, "alice", pk)["title"] == original
    # What only the author may do for everyone, Bob may not do at all.
    for action in ("pin", "supersede"):
        reply = world.call("bob", "POST", f"/api/observations/{pk}/mark", body={"action": action})
        assert reply.status in (400, 403), reply.text
    assert (
        world.call("bob", "PATCH", f"/api/observations/{pk}", body={"facts": ["x"]}).status == 403
    )
    # Bob restores it: his overlay's mark is gone, his row is current again for him.
    restored = world.call("bob", "POST", f"/api/observations/{pk}/mark", body={"action": "restore"})
    assert restored.status == 200 and _detail(world, "bob", pk)["status"] == "current"
    assert _detail(world, "bob", pk)["title"] == "bob's own words"  # his text stays his
    assert world.count("memory_observationrevision", "observation_id = %s", (pk,)) == 0
    # Alice edits it: everyone sees her text (Bob's own title still covers his view; his
    # mark is gone, so her status is his).
    done = world.call(
        "alice", "PATCH", f"/api/observations/{pk}", body={"narrative": "alice settled it weekly"}
    )
    assert done.status == 200, done.text
    assert _detail(world, "bob", pk)["narrative"] == "alice settled it weekly"
    assert _detail(world, "alice", pk)["narrative"] == "alice settled it weekly"
    assert _detail(world, "alice", pk)["title"] == original
    # Carol, not a member, cannot correct it at all.
    assert (
        world.call(
            "carol", "POST", f"/api/observations/{pk}/mark", body={"action": "wrong", "reason": "x"}
        ).status
        == 404
    )


# --- the server redacts what it receives, whoever sent it --------------------------------


def test_the_server_redacts_a_raw_hook_body_before_a_teammate_can_see_it(world: World) -> None:
    """Alice's hooks posted straight over HTTP (no client redaction) with an AWS key and a
    private part, in the shared project: stored redacted, and Bob finds neither."""
    sid, root = "sess-alice-secret", "/clients/alice/shop"
    base = {
        "session_id": sid,
        "transcript_path": "",
        "cwd": root,
        "cmem_project": {"name": P, "root": root},
    }
    secret = f"aws_key = {AWS_KEY}\n<private>{PRIVATE}</private>\n"
    assert (
        world.hook(
            "alice", "context", {**base, "hook_event_name": "SessionStart", "source": "startup"}
        ).status
        == 200
    )
    prompt = {
        **base,
        "prompt_id": f"{sid}-p1",
        "hook_event_name": "UserPromptSubmit",
        "prompt": f"deploy with {AWS_KEY} <private>{PRIVATE}</private> tomorrow",
    }
    assert world.hook("alice", "session-init", prompt).status == 200
    use = tool_use("alice", sid, root, "deploy_settings.py", f"def deploy():\n    {secret}", 11)
    assert world.hook("alice", "observation", use).status == 200
    stop = {**base, "prompt_id": f"{sid}-p1", "hook_event_name": "Stop", "stop_hook_active": False,
            "last_assistant_message": f"Deployed with {AWS_KEY}. <private>{PRIVATE}</private>"}  # fmt: skip
    assert world.hook("alice", "summarize", stop).status == 200
    deadline = time.monotonic() + 120
    where = "session_id IN (SELECT id FROM memory_session WHERE session_id = %s)"
    while time.monotonic() < deadline and not world.count("memory_observation", where, (sid,)):
        time.sleep(0.5)
    assert world.count("memory_observation", where, (sid,)), "the secret session was not compressed"
    # Nothing stored holds either, in any table a teammate's read could reach.
    for table, column in (
        ("memory_prompt", "text"),
        ("memory_event", "payload::text"),
        ("memory_observation", "title || subtitle || narrative || facts::text"),
        ("memory_summary", "request || investigated || learned || completed || next_steps"),
    ):
        for needle in (AWS_KEY, PRIVATE):
            assert world.count(table, f"{column} LIKE %s", (f"%{needle}%",)) == 0, (table, needle)
    # And Bob, a member of P, finds neither through any surface.
    texts = [world.call("bob", "GET", "/api/export").text, _start(world, "bob", "sess-bob-4")]
    assert "deploy_settings" in texts[0]  # the session is shared with Bob: its rows reach him
    for needle in (AWS_KEY, PRIVATE):
        assert _search(world, "bob", q=needle, mode="keyword") == [], needle
    texts.append(str(_search(world, "bob", q="deploy_settings", mode="hybrid")))
    texts.append(str(_search(world, "bob", q="", limit=100)))
    for text in texts:
        assert AWS_KEY not in text and PRIVATE not in text, text


# --- revoking: gone from the member's view at once ----------------------------------------


def test_revoking_the_share_takes_the_rows_out_of_the_members_view(world: World) -> None:
    clients = Path(world.env["CLIENTS"])
    alice_env = _client_env(world, "alice", clients / "alice")
    listed = run_cmem(["shares"], alice_env)
    assert listed.returncode == 0 and f"{P} of alice: shared with bob" in listed.stdout, listed
    done = run_cmem(["unshare", P], alice_env)
    assert done.returncode == 0, done.stderr
    assert "no teammate reads it any more" in done.stdout
    pk, word = _p_obs(world), WORDS["alice"]
    for mode in MODES:
        hits = _search(world, "bob", q=f"{word} reconciliation", mode=mode)
        assert all(h["author"] == "" for h in hits), (mode, hits)
    assert _detail_missing(world, "bob", pk)
    assert world.call("bob", "GET", "/api/timeline", {"anchor": str(pk)}).status == 404
    index = _start(world, "bob", "sess-bob-5")
    assert "by alice" not in index and word not in index, index
    assert word not in _gate(world, "bob", "sess-bob-5")
    assert "sess-alice-1" not in world.call("bob", "GET", "/api/export").text
    # Bob's overlay went quiet with the share; nothing of it shows anywhere.
    assert run_cmem(["shares"], alice_env).stdout.strip().startswith("no shares")


def _detail_missing(world: World, user: str, pk: int) -> bool:
    reply = world.call(user, "GET", "/api/observations", {"ids": str(pk)}).json()
    return reply["observations"] == [] and reply["missing"] == [pk]


# --- the /api/shares routes in the isolation world (tests/team/test_isolation.py) -----------


def check_shares_list(world: World) -> None:
    """Bob lists only his own shares: Alice's share (with staff Sam) is not among them."""
    made = world.call("alice", "POST", "/api/shares", body={"project": Q, "members": ["sam"]})
    assert made.status == 201, made.text
    try:
        for params in ({}, {"mine": "true"}, {"mine": "false"}):
            reply = world.call("bob", "GET", "/api/shares", params)
            assert reply.status == 200 and reply.json()["shares"] == [], reply.text
        assert world.call(None, "GET", "/api/shares").status == 401
        staff = world.call("sam", "GET", "/api/shares").json()["shares"]
        assert [s["owner"] for s in staff] == ["alice"]
        # Alice's share with Sam opens nothing to Bob.
        hits = world.call("bob", "GET", "/api/search", {"q": WORDS["alice"], "project": Q})
        assert hits.json()["results"] == []
    finally:
        world.call("alice", "DELETE", f"/api/shares/{made.json()['id']}")


def check_shares_create(world: World) -> None:
    """Bob's share is his own rows' only: sharing Alice's project name opens none of hers."""
    before = world.owned_counts("alice")
    made = [
        world.call("bob", "POST", "/api/shares", body={"project": project, "members": ["bob"]})
        for project in (P, Q)
    ]
    assert all(reply.status == 400 for reply in made)  # himself only: no one to share with
    made = [
        world.call("bob", "POST", "/api/shares", body={"project": project}) for project in (P, Q)
    ]
    assert all(reply.status == 201 for reply in made), [r.text for r in made]
    assert {reply.json()["owner"] for reply in made} == {"bob"}
    try:
        for mode in MODES:
            hits = world.call("bob", "GET", "/api/search", {"q": WORDS["alice"], "mode": mode})
            assert hits.json()["results"] == [], (mode, hits.text)
        detail = world.call(
            "bob",
            "GET",
            "/api/observations",
            {"ids": ",".join(map(str, world.rows["alice"].observations))},
        ).json()
        assert detail["observations"] == []
        assert world.call(None, "POST", "/api/shares", body={"project": P}).status == 401
        assert (
            world.call(
                "bob", "POST", "/api/shares", body={"project": P, "members": ["nobody"]}
            ).status
            == 400
        )
    finally:
        for reply in made:
            world.call("bob", "DELETE", f"/api/shares/{reply.json()['id']}")
    assert world.owned_counts("alice") == before


def check_shares_delete(world: World) -> None:
    """Bob cannot revoke or narrow Alice's share: 404, and it stays as it was."""
    made = world.call("alice", "POST", "/api/shares", body={"project": Q, "members": ["sam"]})
    assert made.status == 201, made.text
    share_id = made.json()["id"]
    try:
        for params in ({}, {"members": "sam"}):
            reply = world.call("bob", "DELETE", f"/api/shares/{share_id}", params)
            assert reply.status == 404, reply.text
        assert world.call("bob", "DELETE", f"/api/shares/{share_id + 1000}").status == 404
        assert world.call(None, "DELETE", f"/api/shares/{share_id}").status == 401
        left = world.call("alice", "GET", "/api/shares").json()["shares"]
        assert [(s["id"], s["members"]) for s in left] == [(share_id, ["sam"])]
    finally:
        assert world.call("alice", "DELETE", f"/api/shares/{share_id}").json()["revoked"] is True


SHARING_ATTACKS: dict[tuple[str, str], Callable[[World], None]] = {
    ("GET", "/api/shares"): check_shares_list,
    ("POST", "/api/shares"): check_shares_create,
    ("DELETE", "/api/shares/{share_id}"): check_shares_delete,
}
