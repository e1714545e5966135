"""Team mode authorises: a teammate's token reaches only its own user's rows (issue 15 §3).

Attacked as a hostile teammate would: Bob holds a valid token for the shared server
(real `cmem serve`, PostgreSQL, Redis, real HTTP) and tries every endpoint the API has on
Alice's rows in the project they share: search in every mode, ids guessed one by one,
timelines around her rows, the by-file ranking and the gate, the SessionStart index,
forget, export, deliverable downloads, stats and the ledger; then the same through the MCP
server pointed at the team server with his token. Sam is staff and sees both.

`ATTACKS` maps every (method, path) of the ninja API to its check, and
`test_every_api_endpoint_has_an_isolation_check` reads the routes from the API's own
schema: an endpoint added without a check here fails that test.

These tests need PostgreSQL and Redis and fail (never skip) when either is missing.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.team import live_team_worker, run_cmem
from tests.team.isolation_world import ALICE_ONLY, CMEM, PROJECT, WORDS, World, world_build
from tests.team.test_curation_team import CURATION_ATTACKS
from tests.team.test_sharing import SHARING_ATTACKS

pytestmark = [pytest.mark.team, pytest.mark.slow]

MODES = ("keyword", "semantic", "hybrid")


@pytest.fixture(scope="module")
def world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    template = request.getfixturevalue("pg_template")
    folder = tmp_path_factory.mktemp("iso")
    with live_team_worker(template, folder, "iso") as (worker, env):
        yield world_build(worker, env)


def _leaks(world: World, text: str, victim: str = "alice") -> list[str]:
    """What of `victim`'s rows shows in `text`: her session ids, file names, function name,
    prompt, summary and deliverable text (not her bare word: a reply may echo the query)."""
    rows = world.rows[victim]
    word = WORDS[victim]
    marks = [
        *rows.session_ids,
        *(Path(f).name for f in rows.files),
        f"{word}_reconcile",
        f"{word}_ledger",
        f"Explain the {word}",
        f"The {word} reconciliation",
        f"{word} notes",
    ]
    return [mark for mark in marks if mark in text]


# --- one check per endpoint -------------------------------------------------------------


def check_health(world: World) -> None:
    reply = world.call(None, "GET", "/api/health")
    assert reply.status == 200
    assert set(reply.json()) <= {"status", "service", "version", "protocol"}


def check_stats(world: World) -> None:
    bob, sam = world.call("bob", "GET", "/api/stats"), world.call("sam", "GET", "/api/stats")
    own = world.owned_counts("bob")
    assert bob.status == sam.status == 200
    got = bob.json()
    assert (got["sessions"], got["observations"], got["summaries"], got["prompts"]) == (
        own["sessions"], own["observations"], own["summaries"], own["prompts"],
    )  # fmt: skip
    assert got["deliverables"] == own["deliverables"] == 1
    assert (
        world.call("bob", "GET", "/api/stats", {"project": ALICE_ONLY}).json()["observations"] == 0
    )
    assert sam.json()["observations"] == world.count("memory_observation")
    assert sam.json()["sessions"] == world.count("memory_session")


def check_export(world: World) -> None:
    for params in ({}, {"project": PROJECT}, {"project": ALICE_ONLY}):
        reply = world.call("bob", "GET", "/api/export", params)
        assert reply.status == 200
        assert not _leaks(world, reply.text), params
        sessions = {s["session_id"] for s in reply.json()["sessions"]}
        assert sessions == ({"sess-bob-1"} if params.get("project") != ALICE_ONLY else set())
    staff = world.call("sam", "GET", "/api/export").json()
    assert {s["session_id"] for s in staff["sessions"]} >= {
        "sess-alice-1",
        "sess-alice-2",
        "sess-bob-1",
    }
    alice = world.call("alice", "GET", "/api/export").json()
    assert {s["session_id"] for s in alice["sessions"]} == {"sess-alice-1", "sess-alice-2"}


def check_hooks(world: World) -> None:
    """Bob's hooks naming Alice's session id store nothing in it and learn nothing of it."""
    before = world.owned_counts("alice")
    sid = "sess-alice-1"
    root = "/clients/bob/shop"
    base = {
        "session_id": sid,
        "transcript_path": "",
        "cwd": root,
        "cmem_project": {"name": PROJECT, "root": root},
    }
    path = world.rows["alice"].files[0]
    replies = [
        world.hook(
            "bob", "context", {**base, "hook_event_name": "SessionStart", "source": "compact"}
        ),
        world.hook(
            "bob",
            "session-init",
            {
                **base,
                "prompt_id": "b-x",
                "hook_event_name": "UserPromptSubmit",
                "prompt": "injected into alice",
            },
        ),
        world.hook(
            "bob",
            "observation",
            {
                **base,
                "hook_event_name": "PostToolUse",
                "tool_name": "Read",
                "tool_use_id": "toolu_bob_x",
                "tool_input": {"file_path": path},
                "tool_response": {
                    "type": "text",
                    "file": {"filePath": path, "content": "bob was here"},
                },
            },
        ),
        world.hook(
            "bob",
            "file-context",
            {
                **base,
                "hook_event_name": "PreToolUse",
                "tool_name": "Read",
                "tool_use_id": "toolu_bob_y",
                "tool_input": {"file_path": path},
                "cmem_file_facts": {path: {"size": 200_000, "mtime": 1.0, "sha256": "0" * 64}},
            },
        ),
        world.hook(
            "bob",
            "summarize",
            {
                **base,
                "prompt_id": "b-x",
                "hook_event_name": "Stop",
                "stop_hook_active": False,
                "last_assistant_message": "bob's stop",
            },
        ),
        world.hook(
            "bob", "session-end", {**base, "hook_event_name": "SessionEnd", "reason": "exit"}
        ),
    ]
    for reply in replies:
        assert reply.status == 200, reply.text
        assert not _leaks(world, reply.text), reply.text
        assert "deny" not in reply.text  # no gate decision made from Alice's file views
    assert world.owned_counts("alice") == before
    assert world.count("memory_prompt", "text LIKE %s", ("%injected into alice%",)) == 0
    assert (
        world.sql("SELECT status FROM memory_session WHERE session_id = %s", (sid,))[0][0]
        == "active"
    )
    # Bob's own SessionStart in the shared project: his index, none of Alice's notes.
    own = world.hook(
        "bob",
        "context",
        {
            **base,
            "session_id": "sess-bob-2",
            "hook_event_name": "SessionStart",
            "source": "startup",
        },
    )
    assert WORDS["bob"] in own.text and not _leaks(world, own.text), own.text
    # Bob's gate on Alice's file, in his own session: nothing of hers to refuse with.
    gate = world.hook(
        "bob",
        "file-context",
        {
            **base,
            "session_id": "sess-bob-2",
            "hook_event_name": "PreToolUse",
            "tool_name": "Read",
            "tool_use_id": "toolu_bob_z",
            "tool_input": {"file_path": path.replace("/alice/", "/bob/")},
            "cmem_project": {"name": PROJECT, "root": root},
            "cmem_file_facts": {
                path.replace("/alice/", "/bob/"): {
                    "size": 200_000,
                    "mtime": 1.0,
                    "sha256": "0" * 64,
                }
            },
        },
    )
    assert gate.status == 200 and not _leaks(world, gate.text) and "deny" not in gate.text, (
        gate.text
    )


def check_search(world: World) -> None:
    for mode in MODES:
        for params in (
            {"q": WORDS["alice"]},
            {"q": f"{WORDS['alice']} reconciliation", "project": PROJECT},
            {"q": "how are totals settled nightly"},
            {"q": WORDS["alice"], "kind": "prompt"},
            {"q": WORDS["alice"], "kind": "summary"},
            {"q": WORDS["alice"], "file": world.rows["alice"].files[0].rsplit("/", 1)[1]},
            {"q": WORDS["alice"], "project": ALICE_ONLY},
        ):
            reply = world.call("bob", "GET", "/api/search", {**params, "mode": mode})
            assert reply.status == 200, reply.text
            hits = reply.json()["results"]
            assert not _leaks(world, reply.text), (mode, params, hits)
            assert {h["session"] for h in hits} <= {world.rows["bob"].session}, (mode, params)
        # Positive controls: Bob finds his own, staff finds Alice's, in every mode.
        mine = world.call(
            "bob", "GET", "/api/search", {"q": f"{WORDS['bob']} reconciliation", "mode": mode}
        ).json()["results"]
        assert mine and {h["session"] for h in mine} == {world.rows["bob"].session}, mode
        staff = world.call(
            "sam", "GET", "/api/search", {"q": f"{WORDS['alice']} reconciliation", "mode": mode}
        ).json()["results"]
        alice_sessions = {
            pk
            for (pk,) in world.sql(
                "SELECT id FROM memory_session WHERE owner_id = %s", (world.user_id("alice"),)
            )
        }
        assert {h["session"] for h in staff} & alice_sessions, (mode, staff)
    # Newest first without a query: only Bob's rows.
    recent = world.call("bob", "GET", "/api/search", {"q": "", "limit": 100}).json()["results"]
    assert recent and {h["session"] for h in recent} == {world.rows["bob"].session}


def check_timeline(world: World) -> None:
    alice = world.rows["alice"]
    anchors = (
        [str(pk) for pk in alice.observations]
        + [f"S{pk}" for pk in alice.summaries]
        + [f"P{pk}" for pk in alice.prompts]
    )
    for anchor in anchors:
        reply = world.call("bob", "GET", "/api/timeline", {"anchor": anchor})
        assert reply.status == 404, (anchor, reply.text)
        assert not _leaks(world, reply.text)
    by_query = world.call("bob", "GET", "/api/timeline", {"q": WORDS["alice"]})
    assert by_query.status == 404 and not _leaks(world, by_query.text)
    # Around Bob's own row in the shared project: only his rows, although Alice's are beside.
    around = world.call(
        "bob",
        "GET",
        "/api/timeline",
        {"anchor": str(world.rows["bob"].observations[0]), "depth_before": 50, "depth_after": 50},
    )
    assert around.status == 200 and not _leaks(world, around.text)
    assert {item["session"] for item in around.json()["items"]} == {world.rows["bob"].session}
    staff = world.call("sam", "GET", "/api/timeline", {"anchor": anchors[0]})
    assert staff.status == 200 and WORDS["alice"] in staff.text


def check_observations(world: World) -> None:
    alice, bob = world.rows["alice"], world.rows["bob"]
    top = max(alice.observations + bob.observations)
    guesses = list(range(1, top + 20))
    reply = world.call("bob", "GET", "/api/observations", {"ids": ",".join(map(str, guesses))})
    assert reply.status == 200 and not _leaks(world, reply.text)
    assert {o["id"] for o in reply.json()["observations"]} == set(bob.observations)
    assert set(alice.observations) <= set(reply.json()["missing"])
    staff = world.call(
        "sam", "GET", "/api/observations", {"ids": ",".join(map(str, alice.observations))}
    )
    assert {o["id"] for o in staff.json()["observations"]} == set(alice.observations)


def check_tool_uses(world: World) -> None:
    """Raw tool output by observation id, by guessed event id (E1…), by session and project:
    only Bob's own tool uses; Alice's ids are `missing` like ids never made."""
    alice = world.rows["alice"]
    bobs = {r[0] for r in world.sql("SELECT id FROM memory_session WHERE owner_id = %s", (world.user_id("bob"),))}  # fmt: skip
    top_obs = max(alice.observations + world.rows["bob"].observations)
    top_event = world.sql("SELECT max(id) FROM memory_event")[0][0]
    guesses = [str(n) for n in range(1, top_obs + 5)] + [f"E{n}" for n in range(1, top_event + 5)]
    seen, missing = [], []
    for start in range(0, len(guesses), 200):  # the API takes 200 ids a request
        ids = ",".join(guesses[start : start + 200])
        reply = world.call("bob", "GET", "/api/tool-uses", {"ids": ids, "limit": 50})
        assert reply.status == 200 and not _leaks(world, reply.text), reply.text
        seen += reply.json()["tool_uses"]
        missing += reply.json()["missing"]
    assert seen and {u["session"] for u in seen} <= bobs
    assert {str(pk) for pk in alice.observations} <= set(missing)
    for params in ({"session": str(alice.session)}, {"project": PROJECT}, {"project": ALICE_ONLY}):
        reply = world.call("bob", "GET", "/api/tool-uses", params)
        assert reply.status == 200 and not _leaks(world, reply.text), reply.text
        assert {u["session"] for u in reply.json()["tool_uses"]} <= bobs
    staff = world.call(
        "sam", "GET", "/api/tool-uses", {"ids": ",".join(map(str, alice.observations))}
    )
    assert staff.status == 200 and f"{WORDS['alice']}_reconcile" in staff.text


def check_outline_roots(world: World) -> None:
    reply = world.call("bob", "GET", "/api/outline/roots")
    assert reply.status == 403 and not _leaks(world, reply.text)


def _check_outline(path: str, params: Callable[[World], dict[str, str]]) -> Callable[[World], None]:
    def check(world: World) -> None:
        # A shared server reads no file for anyone: Alice's paths, its own, all refused.
        for user in ("bob", "sam"):
            reply = world.call(user, "GET", path, params(world))
            assert reply.status == 403 and not _leaks(world, reply.text), reply.text

    return check


def check_forget(world: World) -> None:
    alice = world.rows["alice"]
    before = world.owned_counts("alice")
    attempts = [
        {"ids": alice.observations, "dry_run": False},
        {"query": WORDS["alice"], "kinds": ["observation", "summary", "prompt"], "dry_run": False},
        {"project": PROJECT, "kinds": ["observation", "summary", "prompt"], "dry_run": True},
        {"project": ALICE_ONLY, "kinds": ["observation", "summary", "prompt"], "dry_run": False},
        {
            "since": "2000-01-01T00:00:00Z",
            "kinds": ["observation", "summary", "prompt"],
            "dry_run": True,
        },
    ]
    for body in attempts:
        reply = world.call("bob", "POST", "/api/forget", body=body)
        assert reply.status == 200, reply.text
        assert not _leaks(world, reply.text), (body, reply.text)
        theirs = {
            "observation": alice.observations,
            "summary": alice.summaries,
            "prompt": alice.prompts,
        }
        for kind, rows in reply.json()["rows"].items():
            assert not {row["id"] for row in rows} & set(theirs[kind]), (body, kind, rows)
    assert world.owned_counts("alice") == before
    # Staff may forget anyone's rows: a dry run lists Alice's.
    staff = world.call(
        "sam", "POST", "/api/forget", body={"ids": alice.observations, "dry_run": True}
    )
    assert {row["id"] for row in staff.json()["rows"]["observation"]} == set(alice.observations)


def check_context(world: World) -> None:
    for project in (PROJECT, ALICE_ONLY):
        reply = world.call("bob", "GET", "/api/context", {"project": project})
        assert reply.status == 200 and not _leaks(world, reply.text), reply.text
    mine = world.call("bob", "GET", "/api/context", {"project": PROJECT})
    assert WORDS["bob"] in mine.text
    staff = world.call("sam", "GET", "/api/context", {"project": PROJECT})
    assert WORDS["alice"] in staff.text and WORDS["bob"] in staff.text
    # Alice's own index is hers alone, though Bob's rows share the project.
    alice = world.call("alice", "GET", "/api/context", {"project": PROJECT})
    assert WORDS["alice"] in alice.text and WORDS["bob"] not in alice.text


def check_by_file(world: World) -> None:
    for path in world.rows["alice"].files:
        for project in (PROJECT, ALICE_ONLY):
            rel = path.rsplit("/", 1)[1]
            for asked in (rel, path):
                reply = world.call(
                    "bob", "GET", "/api/observations/by-file", {"path": asked, "project": project}
                )
                assert reply.status == 200 and reply.json()["total"] == 0, reply.text
    rel = world.rows["alice"].files[0].rsplit("/", 1)[1]
    staff = world.call("sam", "GET", "/api/observations/by-file", {"path": rel, "project": PROJECT})
    assert staff.json()["total"] >= 1


def check_gate_modes(world: World) -> None:
    reply = world.call("bob", "GET", "/api/gate/modes")
    assert reply.status == 200
    assert {g["project"] for g in reply.json()} == {PROJECT}
    staff = world.call("sam", "GET", "/api/gate/modes")
    assert {g["project"] for g in staff.json()} >= {PROJECT, ALICE_ONLY}


def check_ledger(world: World) -> None:
    reply = world.call("bob", "GET", "/api/ledger")
    assert reply.status == 200 and not _leaks(world, reply.text), reply.text
    body = reply.json()
    assert {line["key"] for line in body["by_project"]} == {PROJECT}
    assert {line["key"] for line in body["by_session"]} <= {
        str(pk)
        for (pk,) in world.sql(
            "SELECT id FROM memory_session WHERE owner_id = %s", (world.user_id("bob"),)
        )
    }
    own = world.sql(
        "SELECT coalesce(sum(tokens_shown), 0) FROM memory_ledgerentry WHERE owner_id = %s",
        (world.user_id("bob"),),
    )[0][0]
    assert body["total"]["shown"] == own > 0
    staff = world.call("sam", "GET", "/api/ledger").json()
    assert (
        staff["total"]["shown"]
        == world.sql("SELECT sum(tokens_shown) FROM memory_ledgerentry")[0][0]
    )


def check_ledger_report(world: World) -> None:
    """`cmem stats` as the worker answers it (the fast CLI): the same scope as /api/ledger."""
    reply = world.call("bob", "GET", "/api/ledger/report")
    assert reply.status == 200 and not _leaks(world, reply.text), reply.text
    report = reply.json()["report"]
    assert {line["key"] for line in report["by_project"]} == {PROJECT}
    own = world.sql(
        "SELECT coalesce(sum(tokens_shown), 0) FROM memory_ledgerentry WHERE owner_id = %s",
        (world.user_id("bob"),),
    )[0][0]
    assert report["total"]["shown"] == own > 0
    staff = world.call("sam", "GET", "/api/ledger/report").json()["report"]
    assert (
        staff["total"]["shown"]
        == world.sql("SELECT sum(tokens_shown) FROM memory_ledgerentry")[0][0]
    )


def check_deliverables(world: World) -> None:
    for params in ({}, {"project": PROJECT}, {"session": world.rows["alice"].session}):
        reply = world.call("bob", "GET", "/api/deliverables", params)
        assert reply.status == 200 and not _leaks(world, reply.text)
        assert {d["id"] for d in reply.json()["deliverables"]} <= set(
            world.rows["bob"].deliverables
        )
    staff = world.call("sam", "GET", "/api/deliverables").json()["deliverables"]
    assert {d["id"] for d in staff} == {
        *world.rows["alice"].deliverables,
        *world.rows["bob"].deliverables,
    }


def check_download(world: World) -> None:
    theirs, mine = world.rows["alice"].deliverables[0], world.rows["bob"].deliverables[0]
    for pk in range(1, max(theirs, mine) + 5):
        reply = world.call("bob", "GET", f"/api/deliverables/{pk}/download")
        if pk == mine:
            assert reply.status == 200 and WORDS["bob"].encode() in reply.body
        else:
            assert reply.status == 404 and not _leaks(world, reply.text), pk
    assert (
        WORDS["alice"].encode()
        in world.call("alice", "GET", f"/api/deliverables/{theirs}/download").body
    )
    assert (
        WORDS["alice"].encode()
        in world.call("sam", "GET", f"/api/deliverables/{theirs}/download").body
    )
    # The pages (My Work, the page download) are staff-only in team mode: a token is not a login.
    for page in (
        "/work/",
        f"/deliverables/{theirs}/download/",
        f"/observations/{world.rows['alice'].observations[0]}/",
        "/search/?q=" + WORDS["alice"],
    ):
        reply = world.call("bob", "GET", page)
        assert reply.status in {302, 401, 403} and not _leaks(world, reply.text), (
            page,
            reply.status,
        )


ATTACKS: dict[tuple[str, str], Callable[[World], None]] = {
    ("GET", "/api/health"): check_health,
    ("GET", "/api/stats"): check_stats,
    ("GET", "/api/export"): check_export,
    ("POST", "/api/hooks/{platform}/{event}"): check_hooks,
    ("GET", "/api/search"): check_search,
    ("GET", "/api/timeline"): check_timeline,
    ("GET", "/api/observations"): check_observations,
    ("GET", "/api/tool-uses"): check_tool_uses,
    ("GET", "/api/outline/roots"): check_outline_roots,
    ("GET", "/api/outline"): _check_outline(
        "/api/outline", lambda w: {"path": w.rows["alice"].files[0]}
    ),
    ("GET", "/api/outline/unfold"): _check_outline(
        "/api/outline/unfold",
        lambda w: {"path": w.rows["alice"].files[0], "symbol": f"{WORDS['alice']}_reconcile"},
    ),
    ("GET", "/api/outline/search"): _check_outline(
        "/api/outline/search", lambda w: {"q": WORDS["alice"], "root": "/clients/alice/shop"}
    ),
    ("POST", "/api/forget"): check_forget,
    ("GET", "/api/context"): check_context,
    ("GET", "/api/observations/by-file"): check_by_file,
    ("GET", "/api/gate/modes"): check_gate_modes,
    ("GET", "/api/ledger"): check_ledger,
    ("GET", "/api/ledger/report"): check_ledger_report,
    ("GET", "/api/deliverables"): check_deliverables,
    ("GET", "/api/deliverables/{pk}/download"): check_download,
    **CURATION_ATTACKS,
    **SHARING_ATTACKS,
}


def test_every_api_endpoint_has_an_isolation_check() -> None:
    """The routes come from the API itself: a new endpoint without a check here fails."""
    from cmem_site.api import api

    routes = {
        (method.upper(), path)
        for path, operations in api.get_openapi_schema()["paths"].items()
        for method in operations
    }
    assert routes == set(ATTACKS), (
        f"endpoints without an isolation check: {sorted(routes - set(ATTACKS))}"
    )


# Forget runs last among the checks that read: it must have deleted nothing of Alice's.
@pytest.mark.parametrize("route", list(ATTACKS), ids=[f"{m} {p}" for m, p in ATTACKS])
def test_a_teammate_cannot_reach_another_users_rows(world: World, route: tuple[str, str]) -> None:
    ATTACKS[route](world)


def test_the_database_records_each_rows_owner(world: World) -> None:
    """Every captured row hangs off a session with an owner; ledger lines carry it too."""
    assert world.count("memory_session", "owner_id IS NULL") == 0
    assert world.count("memory_ledgerentry", "owner_id IS NULL") == 0
    for user in ("alice", "bob"):
        counts = world.owned_counts(user)
        assert all(
            counts[k] > 0
            for k in (
                "sessions",
                "prompts",
                "events",
                "observations",
                "summaries",
                "file_views",
                "ledger",
            )
        ), counts


# --- the MCP server, run by Bob against the team server with his token -------------------


def test_the_mcp_server_with_a_teammates_token_returns_none_of_another_users_rows(
    world: World, tmp_path: Path
) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    home = tmp_path / "bob-home"
    home.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CLAUDE_MEM_", "CMEM_", "ANTHROPIC_"))
    }
    env.update(
        HOME=str(home),
        CLAUDE_MEM_DATA_DIR=str(home / ".claude-mem"),
        CLAUDE_MEM_WORKER_URL=world.worker.url,
        CLAUDE_MEM_API_TOKEN=world.tokens["bob"],
    )
    alice = world.rows["alice"]
    before = world.owned_counts("alice")

    async def script(session: ClientSession) -> list[str]:
        texts = []

        async def call(tool: str, args: dict[str, Any]) -> None:
            result = await session.call_tool(tool, args)
            texts.append("\n".join(part.text for part in result.content if part.type == "text"))

        for mode in MODES:
            await call("search", {"query": WORDS["alice"], "mode": mode})
            await call(
                "search",
                {"query": f"{WORDS['alice']} reconciliation", "project": PROJECT, "mode": mode},
            )
        await call("timeline", {"anchor": str(alice.observations[0])})
        await call("timeline", {"query": WORDS["alice"]})
        await call("get_observations", {"ids": alice.observations})
        await call("get_tool_uses", {"ids": alice.observations})
        await call("get_tool_uses", {"session": alice.session, "limit": 50})
        await call("forget", {"ids": alice.observations, "dry_run": False})
        await call("forget", {"query": WORDS["alice"], "dry_run": False})
        await call("search", {"query": f"{WORDS['bob']} reconciliation"})
        return texts

    async def run() -> list[str]:
        params = StdioServerParameters(command=CMEM, args=["mcp"], env=env, cwd=str(home))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await script(session)

    texts = asyncio.run(asyncio.wait_for(run(), timeout=120))
    for text in texts:
        assert not _leaks(world, text), text
    assert _leaks(world, texts[-1], victim="bob")  # the MCP path itself works: Bob finds his own
    assert world.owned_counts("alice") == before


def test_the_cli_export_for_a_user_holds_only_their_rows(world: World) -> None:
    done = run_cmem(["export", "-", "--user", "bob"], world.env)
    assert done.returncode == 0, done.stderr
    assert "sess-bob-1" in done.stdout and not _leaks(world, done.stdout)


# --- a remote hook naming the server's own paths -------------------------------------------


def test_a_remote_hook_naming_server_paths_makes_the_server_read_nothing(
    world: World, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Mallory's hooks name /proc/self/environ, a 0600 file, the data dir's files and a
    symlink, all on the server, as reads, writes and a transcript. The server copies and
    hashes none of them: nothing of them is stored, copied as a deliverable, or answered."""
    import hashlib
    import json

    made = run_cmem(["token", "create", "mallory"], world.env)
    assert made.returncode == 0, made.stderr
    world.tokens["mallory"] = made.stdout.strip().splitlines()[-1]
    server = tmp_path_factory.mktemp("server-side")
    planted = f"planted-0600-{uuid.uuid4().hex}"
    private = server / "private.txt"
    private.write_text(f"PASSWORD={planted}\n")
    private.chmod(0o600)
    link = server / "innocent.txt"
    link.symlink_to(private)
    data = world.worker.data_dir
    data_files = [
        p
        for p in (data / "worker.secret", data / "serve.out", data / "settings.json")
        if p.exists()
    ]
    assert data / "worker.secret" in data_files
    # The worker's own environment and its secret: what a copy of either would reveal.
    environ = (
        Path(f"/proc/{world.worker.proc.pid}/environ").read_bytes() if world.worker.proc else b""
    )
    secret = (data / "worker.secret").read_text().strip()
    markers = [planted, secret, world.env["CLAUDE_MEM_DATABASE_URL"]]
    targets = ["/proc/self/environ", str(private), str(link), *map(str, data_files)]
    digests = {
        hashlib.sha256(Path(t).read_bytes()).hexdigest()
        for t in targets
        if t != "/proc/self/environ"
    }
    assert b"CLAUDE_MEM_DATABASE_URL" in environ  # the worker does hold what environ would leak
    transcript = server / "transcript.jsonl"
    transcript.write_text(
        "".join(
            json.dumps(
                {
                    "type": "assistant",
                    "message": {
                        "role": "assistant",
                        "content": [
                            {
                                "type": "tool_use",
                                "id": f"toolu_t{n}",
                                "name": "Write",
                                "input": {"file_path": t, "content": "x"},
                            }
                        ],
                    },
                }
            )
            + "\n"
            + json.dumps(
                {
                    "type": "user",
                    "message": {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": f"toolu_t{n}", "content": "ok"}
                        ],
                    },
                }
            )
            + "\n"
            for n, t in enumerate(targets)
        )
    )
    deliverables_before = world.count("deliverables_deliverable")
    files_before = (
        sorted(p for p in (data / "deliverables").rglob("*"))
        if (data / "deliverables").exists()
        else []
    )
    sid = "sess-mallory-1"
    base = {
        "session_id": sid,
        "transcript_path": str(transcript),
        "cwd": str(server),
        "cmem_project": {"name": "github.com/mallory/x", "root": str(server)},
    }
    replies = [
        world.hook(
            "mallory", "context", {**base, "hook_event_name": "SessionStart", "source": "startup"}
        ),
        world.hook(
            "mallory",
            "session-init",
            {**base, "prompt_id": "m1", "hook_event_name": "UserPromptSubmit", "prompt": "tidy up"},
        ),
    ]
    for n, target in enumerate(targets):
        for tool in ("Read", "Write"):
            tool_input = {"file_path": target, **({"content": "x"} if tool == "Write" else {})}
            replies.append(
                world.hook(
                    "mallory",
                    "file-context",
                    {
                        **base,
                        "hook_event_name": "PreToolUse",
                        "tool_name": tool,
                        "tool_use_id": f"toolu_m{n}{tool}",
                        "tool_input": tool_input,
                    },
                )
            )
            replies.append(
                world.hook(
                    "mallory",
                    "observation",
                    {
                        **base,
                        "prompt_id": "m1",
                        "hook_event_name": "PostToolUse",
                        "tool_name": tool,
                        "tool_use_id": f"toolu_m{n}{tool}",
                        "tool_input": tool_input,
                        "tool_response": {
                            "type": "text",
                            "file": {"filePath": target, "content": "nothing here"},
                        }
                        if tool == "Read"
                        else {"type": "create", "filePath": target, "content": "x"},
                    },
                )
            )
    replies.append(
        world.hook(
            "mallory",
            "summarize",
            {
                **base,
                "prompt_id": "m1",
                "hook_event_name": "Stop",
                "stop_hook_active": False,
                "last_assistant_message": "done",
            },
        )
    )
    for reply in replies:
        assert reply.status == 200, reply.text
        assert not any(m in reply.text for m in markers), reply.text
        assert '"deny"' not in reply.text  # no decision from facts the server measured itself
    # Let the consumer compress what was captured, then look everywhere.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and world.count("memory_event", "status = 'pending'"):
        time.sleep(0.5)
    assert world.count("memory_session", "session_id = %s", (sid,)) == 1  # the hooks were stored
    assert (
        world.count(
            "memory_event",
            "session_id IN (SELECT id FROM memory_session WHERE session_id = %s)",
            (sid,),
        )
        > 0
    )
    assert world.count("deliverables_deliverable") == deliverables_before
    files_after = (
        sorted(p for p in (data / "deliverables").rglob("*"))
        if (data / "deliverables").exists()
        else []
    )
    assert files_after == files_before
    tables = [
        t
        for (t,) in world.sql(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
        )
    ]
    for table in tables:
        for needle in [*markers, *digests, "CLAUDE_MEM_DATABASE_URL", "PASSWORD="]:
            found = world.count(f'"{table}" t', "row_to_json(t)::text LIKE %s", (f"%{needle}%",))
            assert found == 0, (table, needle)
    # What the server recorded of those files is only what a client could have told it.
    hashes = world.sql(
        "SELECT content_hash, size FROM memory_fileview WHERE session_id IN "
        "(SELECT id FROM memory_session WHERE session_id = %s)",
        (sid,),
    )
    assert hashes and all(h == "" and size is None for h, size in hashes), hashes
    for mode in MODES:
        for needle in (planted, "PASSWORD", "CLAUDE_MEM_DATABASE_URL"):
            found = world.call("sam", "GET", "/api/search", {"q": needle, "mode": mode}).json()
            assert not any(m in str(found["results"]) for m in markers), found
