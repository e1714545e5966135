"""Issue 20: `work_state_write` attachments and the hook's own handover of deliverable bytes.

The hook side (memory.capture.handover, stdlib only) is called as the hook client calls
it; the worker side goes through the real hook endpoint (Django's test client), so the
attachments are recorded by the same code that answers a live PostToolUse or Stop.
"""

from __future__ import annotations

import base64
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from deliverables.models import Deliverable
from deliverables.services import deliverables_root
from memory.capture import handover
from memory.privacy.spool_scrub import spool_scrub

pytestmark = pytest.mark.django_db

LIMIT = 8 * 1024 * 1024
MAX_FILE = 20_000_000
ATTACH = "mcp__cmem__work_state_write"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    (folder / ".ssh").mkdir(parents=True)
    (folder / ".ssh" / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n")
    monkeypatch.setenv("HOME", str(folder))
    return folder


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "scratch"
    folder.mkdir()
    return folder


def _attach_body(project: Path, paths: list[str], *, tool: str = ATTACH, **extra: Any) -> bytes:
    return json.dumps(
        {
            "session_id": "attach-sid",
            "cwd": str(project),
            "hook_event_name": "PostToolUse",
            "tool_name": tool,
            "tool_input": {"paths": paths, **extra},
            "tool_response": [{"type": "text", "text": "will be attached"}],
            "tool_use_id": f"tu-{time.monotonic_ns()}",
        }
    ).encode()


def _post(client: Client, event: str, body: bytes) -> None:
    resp = client.post(
        f"/api/hooks/claude-code/{event}", data=body, content_type="application/json"
    )
    assert resp.status_code == 200, resp.content


def _prompt(client: Client, project: Path, text: str = "write the quarterly report") -> None:
    _post(
        client,
        "session-init",
        json.dumps(
            {
                "session_id": "attach-sid",
                "cwd": str(project),
                "hook_event_name": "UserPromptSubmit",
                "prompt": text,
            }
        ).encode(),
    )


def _files(body: bytes) -> list[dict[str, Any]]:
    return json.loads(body)["cmem_handover"]["files"]


def test_both_install_routes_and_other_agents_are_recognised() -> None:
    for name in (
        "mcp__cmem__work_state_write",
        "mcp__plugin_cmem_cmem__work_state_write",
        "work_state_write",
    ):
        assert handover.is_attach_call({"tool_name": name}), name
    for name in ("mcp__other__work_state_write", "mcp__notcmem__work_state_write", "Write"):
        assert not handover.is_attach_call({"tool_name": name}), name


def test_an_attached_file_is_recorded_on_the_current_request_marked_attached(
    project: Path, outside: Path
) -> None:
    client = Client()
    _prompt(client, project)
    report = outside / "report.md"
    report.write_text("# Q3\n\nRevenue up.\n")
    body = handover.handover_add(
        _attach_body(
            project,
            [str(report)],
            title="Q3 report",
            note="Numbers from the <private>x</private> sheet",
        ),
        kind="attach",
        request_limit=LIMIT,
        max_file=MAX_FILE,
    )
    [entry] = _files(body)
    assert base64.b64decode(entry["data"]) == report.read_bytes()
    report.unlink()  # the hook read the bytes: the file may be gone by now
    _post(client, "observation", body)
    d = Deliverable.objects.get()
    assert d.attached and d.title == "Q3 report" and d.prompt is not None
    assert d.prompt.text == "write the quarterly report"
    assert "private" not in d.note and "Numbers from the" in d.note
    assert (deliverables_root() / d.stored_path).read_text() == "# Q3\n\nRevenue up.\n"
    # My Work shows it on the request's card, marked attached, with its title and note.
    page = client.get(reverse("deliverables-my-work")).content.decode()
    assert "report.md" in page and ">attached</span>" in page and "Q3 report" in page


def test_the_plugin_route_name_attaches_too_and_a_relative_path_is_the_cwds(
    project: Path,
) -> None:
    client = Client()
    _prompt(client, project)
    (project / "docs").mkdir()
    (project / "docs" / "plan.txt").write_text("the plan\n")
    body = handover.handover_add(
        _attach_body(project, ["docs/plan.txt"], tool="mcp__plugin_cmem_cmem__work_state_write"),
        kind="attach",
        request_limit=LIMIT,
        max_file=MAX_FILE,
    )
    _post(client, "observation", body)
    d = Deliverable.objects.get()
    # An attachment may live inside the project: the agent chose it.
    assert d.attached and d.original_path == str(project / "docs" / "plan.txt")


def test_hostile_attach_paths_attach_nothing(
    project: Path, outside: Path, home: Path, tmp_path: Path
) -> None:
    client = Client()
    _prompt(client, project)
    secret = outside / "secret.txt"
    secret.write_text("top secret\n")
    link = outside / "innocent.md"
    link.symlink_to(home / ".ssh" / "id_rsa")
    linked_dir = outside / "dir-link"
    linked_dir.symlink_to(home / ".ssh")
    hard = outside / "hard.txt"
    os.link(secret, hard)  # nlink 2: could be a hard link to a credentials file
    fifo = outside / "pipe.md"
    os.mkfifo(fifo)
    huge = outside / "huge.bin"
    with huge.open("wb") as fh:
        fh.truncate(MAX_FILE + 1)  # sparse: the size alone refuses it
    paths = [
        str(link),
        str(linked_dir / "id_rsa"),
        str(home / ".ssh" / "id_rsa"),
        "/proc/self/environ",
        str(fifo),
        str(huge),
        str(hard),
        str(outside),  # a folder
        str(outside / "missing.md"),
    ]
    started = time.monotonic()
    body = handover.handover_add(
        _attach_body(project, paths), kind="attach", request_limit=LIMIT, max_file=MAX_FILE
    )
    assert time.monotonic() - started < 1.0  # the FIFO never blocks, the huge file is not read
    files = _files(body)
    assert len(files) == len(paths)
    assert all("data" not in f and f.get("refused") for f in files), files
    # A client that lies (bytes for a secret path) is refused by the worker as well.
    forged = json.loads(body)
    forged["cmem_handover"]["files"] = [
        {"path": str(home / ".ssh" / "id_rsa"), "data": base64.b64encode(b"KEY").decode()},
        {"path": "/proc/self/environ", "data": base64.b64encode(b"API=1").decode()},
    ]
    _post(client, "observation", json.dumps(forged).encode())
    _post(client, "observation", body)
    assert Deliverable.objects.count() == 0
    assert not deliverables_root().exists() or not any(
        p.is_file() for p in deliverables_root().rglob("*")
    )


def test_the_handover_is_bounded_in_bytes_per_event(project: Path, outside: Path) -> None:
    names = []
    for i in range(3):
        path = outside / f"part{i}.bin"
        path.write_bytes(os.urandom(2 * 1024 * 1024))
        names.append(str(path))
    body = handover.handover_add(
        _attach_body(project, names), kind="attach", request_limit=LIMIT, max_file=MAX_FILE
    )
    files = _files(body)
    carried = [f for f in files if "data" in f]
    assert sum(f["size"] for f in carried) <= handover.HANDOVER_MAX_BYTES
    assert len(carried) < 3 and any(f.get("skipped") for f in files)
    assert len(body) < LIMIT


def test_a_spooled_handover_holds_no_secret_and_binary_bytes_survive(
    project: Path, outside: Path
) -> None:
    key = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8" * 6
    text = outside / "notes.md"
    text.write_text(f"# Notes\nANTHROPIC_API_KEY={key}\n")
    png = outside / "chart.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00" + os.urandom(512))
    body = handover.handover_add(
        _attach_body(project, [str(text), str(png)]),
        kind="attach",
        request_limit=LIMIT,
        max_file=MAX_FILE,
    )
    assert key.encode() in base64.b64decode(_files(body)[0]["data"])
    scrubbed = spool_scrub(body)
    assert scrubbed is not None and key.encode() not in scrubbed
    notes, chart = _files(scrubbed)
    assert key not in base64.b64decode(notes["data"]).decode()
    assert "[REDACTED" in base64.b64decode(notes["data"]).decode()
    assert base64.b64decode(chart["data"]) == png.read_bytes()


def _transcript(tmp_path: Path, written: list[Path]) -> str:
    lines: list[dict[str, Any]] = [
        {"type": "user", "message": {"role": "user", "content": "write the notes"}}
    ]
    for i, path in enumerate(written):
        lines.append(
            {
                "type": "assistant",
                "message": {
                    "content": [
                        {
                            "type": "tool_use",
                            "id": f"tu{i}",
                            "name": "Write",
                            "input": {"file_path": str(path), "content": "x"},
                        }
                    ]
                },
            }
        )
        lines.append(
            {
                "type": "user",
                "message": {"content": [{"type": "tool_result", "tool_use_id": f"tu{i}"}]},
            }
        )
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return str(transcript)


def test_a_stop_handover_carries_only_files_outside_the_source_tree(
    project: Path, outside: Path, tmp_path: Path
) -> None:
    notes = outside / "NOTES.md"
    notes.write_text("# Notes\n")
    inside = project / "src.py"
    inside.write_text("print(1)\n")
    stop = json.dumps(
        {
            "session_id": "attach-sid",
            "cwd": str(project),
            "hook_event_name": "Stop",
            "transcript_path": _transcript(tmp_path, [notes, inside]),
        }
    ).encode()
    body = handover.handover_add(stop, kind="stop", request_limit=LIMIT, max_file=MAX_FILE)
    assert [f["path"] for f in _files(body)] == [str(notes)]
    # Recorded from the handed-over bytes although the file is gone (a deleted worktree).
    client = Client()
    _prompt(client, project, "write the notes")
    notes.unlink()
    _post(client, "summarize", body)
    d = Deliverable.objects.get()
    assert not d.attached and d.original_path == str(notes)
    assert (deliverables_root() / d.stored_path).read_bytes() == b"# Notes\n"


def _attach_transcript(tmp_path: Path, paths: list[str], *, failed: bool = False) -> str:
    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": "tu-a"}
    if failed:
        result["is_error"] = True
    lines = [
        {"type": "user", "message": {"role": "user", "content": "attach the deck"}},
        {
            "type": "assistant",
            "message": {
                "content": [
                    {
                        "type": "tool_use",
                        "id": "tu-a",
                        "name": "mcp__plugin_cmem_cmem__work_state_write",
                        "input": {"paths": paths, "title": "Deck", "note": "for Friday"},
                    }
                ]
            },
        },
        {"type": "user", "message": {"content": [result]}},
    ]
    transcript = tmp_path / "attach.jsonl"
    transcript.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return str(transcript)


def _stop_body(project: Path, transcript: str) -> bytes:
    return json.dumps(
        {
            "session_id": "attach-sid",
            "cwd": str(project),
            "hook_event_name": "Stop",
            "transcript_path": transcript,
        }
    ).encode()


def test_stop_takes_attachments_from_the_transcript_when_their_hook_never_ran(
    project: Path, tmp_path: Path
) -> None:
    """The call's PostToolUse is async: Claude Code may exit before it runs. Stop is not."""
    client = Client()
    _prompt(client, project, "attach the deck")
    deck = project / "deck.html"  # inside the project: attached anyway, the agent chose it
    deck.write_text("<h1>Deck</h1>\n")
    _post(client, "summarize", _stop_body(project, _attach_transcript(tmp_path, ["deck.html"])))
    d = Deliverable.objects.get()
    assert d.attached and d.title == "Deck" and d.note == "for Friday"
    assert d.original_path == str(deck)


def test_a_failed_attach_call_attaches_nothing(project: Path, tmp_path: Path) -> None:
    client = Client()
    _prompt(client, project, "attach the deck")
    (project / "deck.html").write_text("<h1>Deck</h1>\n")
    transcript = _attach_transcript(tmp_path, ["deck.html"], failed=True)
    _post(client, "summarize", _stop_body(project, transcript))
    assert Deliverable.objects.count() == 0


def test_a_stop_handover_carries_attachments_with_their_title(
    project: Path, tmp_path: Path, home: Path
) -> None:
    deck = project / "deck.html"
    deck.write_text("<h1>Deck</h1>\n")
    transcript = _attach_transcript(tmp_path, [str(deck), str(home / ".ssh" / "id_rsa")])
    body = handover.handover_add(
        _stop_body(project, transcript), kind="stop", request_limit=LIMIT, max_file=MAX_FILE
    )
    carried, refused = _files(body)
    assert carried["attached"] and carried["title"] == "Deck" and "data" in carried
    assert refused.get("refused") and "data" not in refused
    scrubbed = spool_scrub(body)
    assert scrubbed is not None and _files(scrubbed)[0]["title"] == "Deck"
    client = Client()
    _prompt(client, project, "attach the deck")
    deck.unlink()
    _post(client, "summarize", scrubbed)
    d = Deliverable.objects.get()
    assert d.attached and d.title == "Deck" and d.original_path == str(deck)


def test_the_spool_redacts_at_most_its_text_budget_binary_is_kept(
    project: Path, outside: Path
) -> None:
    from memory.privacy.spool_scrub import SPOOL_TEXT_MAX_BYTES

    big = outside / "big.md"
    big.write_text("a line of text\n" * (SPOOL_TEXT_MAX_BYTES // 15 + 10))
    blob = outside / "blob.bin"
    blob.write_bytes(b"\x00" + os.urandom(SPOOL_TEXT_MAX_BYTES + 10))
    body = handover.handover_add(
        _attach_body(project, [str(big), str(blob)]),
        kind="attach",
        request_limit=LIMIT,
        max_file=MAX_FILE,
    )
    assert all("data" in f for f in _files(body))
    scrubbed = spool_scrub(body)
    assert scrubbed is not None
    text, binary = _files(scrubbed)
    assert "data" not in text and "redact" in text["skipped"]
    assert base64.b64decode(binary["data"]) == blob.read_bytes()
