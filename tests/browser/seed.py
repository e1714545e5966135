"""Rows for the web app's tests, made through the ORM.

Used in-process by the view tests and, for the browser tests, inside the live worker's own
data dir by running `python -m tests.browser.seed <command>` with the worker's environment.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from datetime import timedelta
from typing import Any

from django.utils import timezone

XSS = "<script>alert('xss')</script>"


def make_prompt(session: Any, text: str, *, minutes_ago: float = 0) -> Any:
    from memory.models import Prompt

    session.prompt_counter += 1
    session.save(update_fields=["prompt_counter"])
    created = timezone.now() - timedelta(minutes=minutes_ago)
    return Prompt.objects.create(
        session=session, number=session.prompt_counter, text=text, created=created
    )


def make_observation(
    session: Any,
    title: str,
    *,
    prompt_number: int | None = None,
    minutes_ago: float = 0,
    **fields: Any,
) -> Any:
    from memory.models import Observation

    fields.setdefault("type", "discovery")
    fields.setdefault("subtitle", f"about {title}")
    created = timezone.now() - timedelta(minutes=minutes_ago)
    number = prompt_number if prompt_number is not None else session.prompt_counter or None
    return Observation.objects.create(
        session=session,
        project=session.project,
        title=title,
        prompt_number=number,
        created=created,
        **fields,
    )


def make_file_rows(obs: Any, hashes: dict[str, str] | None = None) -> None:
    """The gate's by-file rows for an observation, as memory.compression.store writes them."""
    from memory.models import ObservationFile

    hashes = hashes or {}
    modified = list(obs.files_modified or [])
    rows = [("modified", p) for p in modified]
    rows += [("read", p) for p in obs.files_read or [] if p not in modified]
    ObservationFile.objects.bulk_create(
        ObservationFile(
            observation=obs,
            project=obs.project,
            path=path,
            role=role,
            content_hash=hashes.get(path, ""),
            created=obs.created,
        )
        for role, path in rows
    )


def make_summary(
    session: Any, *, prompt_number: int | None = None, minutes_ago: float = 0, **fields: Any
) -> Any:
    from memory.models import Summary

    created = timezone.now() - timedelta(minutes=minutes_ago)
    number = prompt_number if prompt_number is not None else session.prompt_counter
    return Summary.objects.create(
        session=session, project=session.project, prompt_number=number, created=created, **fields
    )


def make_deliverable(
    session: Any, prompt: Any, name: str, content: bytes, content_type: str = ""
) -> Any:
    """A stored deliverable as capture leaves it: the file under <data dir>/deliverables/."""
    from deliverables.models import Deliverable
    from deliverables.services import content_type_for, deliverables_root

    rel = f"{session.project}/{timezone.localdate().isoformat()}/{name}"
    path = deliverables_root() / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return Deliverable.objects.create(
        session=session,
        prompt=prompt,
        project=session.project,
        original_path=f"/tmp/out/{name}",
        stored_path=rel,
        size=len(content),
        sha256=hashlib.sha256(content).hexdigest(),
        content_type=content_type or content_type_for(name),
    )


def seed_demo() -> dict[str, Any]:
    """Two projects, a few turns, summaries and deliverables of each preview kind."""
    from tests.factories import SessionFactory  # the app registry is ready only from here (`_main`)

    web = SessionFactory(project="webshop", root="/home/dev/webshop", session_id="sess-web-1")
    p1 = make_prompt(web, "Fix the checkout rounding bug and write up what changed", minutes_ago=50)
    o1 = make_observation(
        web,
        "Checkout total rounded before tax",
        type="bugfix",
        minutes_ago=48,
        narrative="The total was rounded before tax was applied.",
        facts=["round() ran first"],
        files_modified=["shop/checkout.py"],
        files_read=["shop/tax.py"],
        tool_name="Edit",
    )
    o2 = make_observation(
        web,
        "Added a regression test for rounding",
        type="feature",
        minutes_ago=46,
        files_modified=["tests/test_checkout.py"],
        tool_name="Write",
    )
    make_summary(
        web,
        minutes_ago=45,
        request="Fix rounding",
        completed="Rounding happens after tax now.",
        next_steps="Ship the fix to staging.",
    )
    d1 = make_deliverable(
        web,
        p1,
        "CHANGES.md",
        b"# Changes\n\n- **Rounding** after tax\n\n<script>alert(1)</script>\n",
    )
    d2 = make_deliverable(
        web,
        p1,
        "report.html",
        b"<html><body><h1>Report</h1><script>document.title='pwned'</script></body></html>",
    )
    d3 = make_deliverable(web, p1, "notes.txt", b"plain notes\nline two\n")
    d4 = make_deliverable(web, p1, "chart.png", _PNG)
    api = SessionFactory(project="api-server", root="/home/dev/api", session_id="sess-api-1")
    p2 = make_prompt(api, "Why is the login endpoint slow?", minutes_ago=20)
    o3 = make_observation(
        api,
        "Login hashes the password twice",
        type="discovery",
        minutes_ago=18,
        files_read=["auth/views.py"],
        tool_name="Read",
    )
    for obs in (o1, o2, o3):
        make_file_rows(obs)
    return {
        "prompts": [p1.pk, p2.pk],
        "observations": [o1.pk, o2.pk, o3.pk],
        "deliverables": {"md": d1.pk, "html": d2.pk, "txt": d3.pk, "png": d4.pk},
        "sessions": [web.pk, api.pk],
    }


def seed_file(root: str) -> dict[str, Any]:
    """Project `filedemo` at `root`, whose app/cart.py two sessions touched: one read an
    older version, the other modified it into what is on disk now."""
    from tests.factories import SessionFactory

    path = "app/cart.py"
    with open(os.path.join(root, path), "rb") as fh:
        now = fh.read()
    first = SessionFactory(project="filedemo", root=root, session_id="sess-file-1")
    make_prompt(first, "How does the cart total work?", minutes_ago=300)
    old = make_observation(
        first, "Cart total sums line items", minutes_ago=299, files_read=[path, "app/tax.py"]
    )
    make_file_rows(old, {path: hashlib.sha256(b"old version").hexdigest()})
    second = SessionFactory(project="filedemo", root=root, session_id="sess-file-2")
    make_prompt(second, "Round the cart total to cents", minutes_ago=30)
    new = make_observation(
        second,
        "Cart total rounded to cents",
        type="bugfix",
        minutes_ago=29,
        files_modified=[path],
        tool_name="Edit",
    )
    make_file_rows(new, {path: hashlib.sha256(now).hexdigest()})
    return {"observations": [old.pk, new.pk], "sessions": [first.pk, second.pk]}


# A 1x1 PNG.
_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c63f0777bfa1f0004dc027accce058e0000000049454e44ae426082"
)


def _main(argv: list[str]) -> None:
    """`python -m tests.browser.seed demo|observation TITLE`: prints the ids as JSON."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cmem_site.settings")
    import django

    django.setup()
    if argv[0] == "demo":
        print(json.dumps(seed_demo()))
    elif argv[0] == "observation":
        from memory.models import Session

        session = Session.objects.get(session_id="sess-web-1")
        obs = make_observation(session, argv[1], type="change", files_modified=["shop/cart.py"])
        print(json.dumps({"id": obs.pk}))
    elif argv[0] == "observation-at":
        from memory.models import Session

        session = Session.objects.get(session_id=argv[3])
        obs = make_observation(
            session,
            argv[1],
            type="change",
            minutes_ago=float(argv[2]),
            files_modified=["shop/cart.py"],
        )
        print(json.dumps({"id": obs.pk}))
    elif argv[0] == "pending-event":
        from memory.models import Event, Session

        session = Session.objects.get(session_id="sess-web-1")
        # Claimed long ago by nobody: a compression that cannot run yet (no consumer picks
        # up a row the test made behind its back).
        event = Event.objects.create(
            session=session, kind=Event.Kind.OBSERVATION, payload={}, status=Event.Status.CLAIMED
        )
        print(json.dumps({"id": event.pk}))
    elif argv[0] == "fold":
        from memory.models import Session

        session = Session.objects.get(session_id="sess-web-1")
        titles = [
            "Parser cache invalidated",
            "parser cache invalidated!",
            "Parser  cache invalidated",
        ]
        made = [
            make_observation(
                session, title, type="change", minutes_ago=10 - i, files_modified=["shop/parser.py"]
            ).pk
            for i, title in enumerate(titles)
        ]
        print(json.dumps({"ids": made}))
    elif argv[0] == "file":
        print(json.dumps(seed_file(argv[1])))
    else:
        raise SystemExit(f"unknown command {argv[0]!r}")


if __name__ == "__main__":
    _main(sys.argv[1:])
