"""`python -m tests.bench consolidation` (`make bench NAME=consolidation`): what the
consolidation pass costs in model tokens and dollars per 100 observations.

1. In a child with a throwaway data dir: generate, deterministically, a realistic history of
   one project (`--size N` observations, default 1,000; `--quick` 300) over 60 files, in the
   observer's mix of types, with observer-sized narratives and facts, and the overlap real
   histories have: about one row in ten repeats an earlier finding in other words, decisions
   are now and then reversed ("switched to … instead of …"), hypotheses are later refuted.
2. Start the fake Messages API (tests/fakes/anthropic.py: input tokens = request characters
   / 4, output = reply characters / 4) answering as a careful model would: it folds each
   duplicate group, supersedes where a reversal is stated, abandons where a refutation is.
3. Run the real pass in model mode through the real `anthropic` SDK with the budget lifted
   (the first pass over a whole history is the worst case), then add 10% new rows a day
   later and run again (a steady day: only groups holding a new row are sent).

Prints, from the pass's own ledger lines (kind `consolidation`, priced at the observer's
default model, Haiku 4.5): requests, input and output tokens, dollars, and the same per
100 observations, for the first pass and for the steady one; and what the default budget
(CLAUDE_MEM_CONSOLIDATE_MAX_TOKENS=30000) covers in one pass.
"""

from __future__ import annotations

import json
import os
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.bench.harness import is_bench_child, rerun_in_fresh_data_dir

NAME = "consolidation"
SUBJECTS = [
    "checkout total", "tax rounding", "session cache", "login throttle", "refund export",
    "search index", "invoice PDF", "price rules", "cart merge", "webhook retries",
    "CSV import", "user avatars", "email queue", "rate limiter", "feature flags",
    "coupon codes", "order history", "shipping quotes", "audit log", "password reset",
]  # fmt: skip
TYPES = [
    ("discovery", 38),
    ("bugfix", 16),
    ("feature", 16),
    ("change", 12),
    ("refactor", 8),
    ("decision", 10),
]
VERBS = {
    "discovery": ["{s} reads stale values after a save", "{s} is computed twice per request", "{s} depends on the request locale"],
    "bugfix": ["Fix {s} off-by-one on the last page", "Fix {s} when the cart is empty", "Fix {s} crash on a missing header"],
    "feature": ["Add {s} to the admin", "Add a CSV download of {s}", "Add paging to {s}"],
    "change": ["Rename {s} settings", "Move {s} to its own module", "Log {s} failures"],
    "refactor": ["Split {s} into a service", "Extract {s} helpers", "Type {s} functions"],
    "decision": ["Use Postgres advisory locks for {s}", "Keep {s} in memcached", "Run {s} in the nightly job"],
}  # fmt: skip
REPHRASE = ["{t}", "{t} (seen again)", "Confirmed: {t}", "{t}, as noted before"]


def narrative(rng: random.Random, subject: str) -> str:
    """Three observer-like sentences (~300 characters)."""
    parts = [
        f"The {subject} code path in the service layer was traced end to end.",
        rng.choice(["It runs after the transaction commits.", "It reads the settings at import time.", "It retries three times with backoff."]),
        rng.choice(["Tests cover the happy path only.", "The admin shows the same values.", "A migration backfills old rows."]),
        f"Callers in {rng.randint(2, 9)} modules depend on it.",
    ]  # fmt: skip
    return " ".join(parts)


def history(size: int, *, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    files = [
        f"shop/{s.replace(' ', '_')}/{n}.py"
        for s in SUBJECTS
        for n in ("models", "views", "services")
    ]
    kinds = [k for k, weight in TYPES for _ in range(weight)]
    rows: list[dict[str, Any]] = []
    start = datetime(2026, 1, 5, 9, tzinfo=UTC)
    for n in range(size):
        when = start + timedelta(minutes=7 * n)
        roll = rng.random()
        if rows and roll < 0.10:  # an earlier finding, observed again in other words
            base = rng.choice(rows[-200:])
            rows.append(
                {**base, "title": rng.choice(REPHRASE).format(t=base["title"]), "created": when}
            )
            continue
        subject = rng.choice(SUBJECTS)
        own = [f for f in files if f.startswith(f"shop/{subject.replace(' ', '_')}/")]
        kind = rng.choice(kinds)
        title = rng.choice(VERBS[kind]).format(s=subject)
        row = {
            "type": kind, "title": title, "narrative": narrative(rng, subject),
            "facts": [f"{subject} lives in {own[0]}", f"{rng.randint(2, 40)} call sites"],
            "files": rng.sample(own, rng.randint(1, 2)), "created": when, "certainty": "",
        }  # fmt: skip
        if kind == "decision" and roll > 0.85:
            row["narrative"] = (
                f"Switched {subject} to Redis instead of the earlier choice. " + row["narrative"]
            )
        if kind == "discovery" and roll > 0.9:
            row["title"] = f"{subject} might be the cause of the slow page"
            row["certainty"] = "hypothesis"
        if kind == "bugfix" and roll > 0.9:
            row["narrative"] = (
                f"The slowness was actually a missing index, not {subject}. " + row["narrative"]
            )
        rows.append(row)
    return rows


def seed(rows: list[dict[str, Any]], *, project: str, session_id: str) -> int:
    from memory.models import Observation, Session

    session = Session.objects.create(session_id=session_id, project=project)
    Observation.objects.bulk_create(
        Observation(
            session=session, project=project, type=r["type"], title=r["title"][:300],
            narrative=r["narrative"], facts=r["facts"], files_modified=r["files"],
            certainty=r["certainty"], created=r["created"],
        )
        for r in rows
    )  # fmt: skip
    return len(rows)


def careful_model(body: dict[str, Any]) -> Any:
    """The fake's answer: what a careful model would reply to these groups."""
    from tests.fakes.anthropic import Reply

    text = body["messages"][0]["content"]
    changes = []
    for line in text.split("\n")[1:-1]:
        group = json.loads(line)
        rows = group["rows"]
        ids = [r["id"] for r in rows]
        if group["kind"] == "duplicates":
            # Only true repeats (the same narrative observed again), not rows that merely
            # share a subject and a file.
            keep = rows[0]
            changes += [
                {"group": group["group"], "action": "duplicate", "id": r["id"], "by": keep["id"], "reason": "the same finding, observed again"}
                for r in rows[1:] if r["text"].split("\n", 1)[1:] == keep["text"].split("\n", 1)[1:]
            ]  # fmt: skip
        elif group["kind"] == "decisions" and "instead of" in rows[0]["text"]:
            changes.append({"group": group["group"], "action": "supersede", "id": ids[1], "by": ids[0], "reason": "the newer decision reverses it"})  # fmt: skip
        elif group["kind"] == "hypothesis":
            later = [r for r in rows[1:] if "was actually" in r["text"]]
            if later:
                changes.append({"group": group["group"], "action": "abandon", "id": ids[0], "by": later[0]["id"], "reason": "a later fix found another cause"})  # fmt: skip
    return Reply(text=json.dumps({"changes": changes}))


def spent() -> dict[str, float]:
    from django.db.models import Count, Sum

    from memory.models import LedgerEntry

    got = LedgerEntry.objects.filter(kind=LedgerEntry.Kind.CONSOLIDATION).aggregate(
        requests=Count("pk"),
        input=Sum("input_tokens"),
        cached=Sum("cached_tokens"),
        output=Sum("output_tokens"),
        tokens=Sum("tokens_spent"),
        usd=Sum("cost_usd"),
    )
    return {k: float(v or 0) for k, v in got.items()}


def _line(
    label: str, rows: int, before: dict[str, float], after: dict[str, float], applied: int
) -> str:
    d = {k: after[k] - before[k] for k in after}
    per = 100 / max(rows, 1)
    return (
        f"| {label} | {rows:,} | {int(d['requests'])} | {int(d['input']):,} | {int(d['output']):,} | "
        f"{d['tokens'] * per:,.0f} | ${d['usd'] * per:.4f} | {applied} |"
    )


def _child(size: int, out: Any) -> None:
    from django.core.management import call_command

    from memory.curation.consolidation.run import consolidation_run
    from tests.fakes.anthropic import FakeAnthropic, Reply

    call_command("migrate", verbosity=0)
    rows = history(size + size // 10)
    first, later = rows[:size], rows[size:]
    seed(first, project="acme-shop", session_id="bench-consolidation-1")
    with FakeAnthropic(default=Reply(fn=careful_model)) as api:
        os.environ.update(
            CLAUDE_MEM_ANTHROPIC_BASE_URL=api.url,
            ANTHROPIC_API_KEY="sk-ant-bench-consolidation",
            CLAUDE_MEM_PROVIDER="anthropic",
            CLAUDE_MEM_CONSOLIDATE="model",
            CLAUDE_MEM_CONSOLIDATE_MAX_TOKENS="2000000",
            CLAUDE_MEM_DEMOTE_AFTER_WEEKS="0",
        )
        out.write(
            "| pass | observations | requests | input tokens | output tokens | tokens / 100 obs | $ / 100 obs | changes |"
        )
        out.write("|---|---|---|---|---|---|---|---|")
        zero = spent()
        report = consolidation_run(mode="model")
        one = spent()
        out.write(_line("first (whole history)", size, zero, one, report.applied))
        for row in later:
            row["created"] += timedelta(days=1)
        seed(later, project="acme-shop", session_id="bench-consolidation-2")
        report = consolidation_run(mode="model")
        two = spent()
        out.write(_line("steady (a day's new rows)", len(later), one, two, report.applied))
    per_token = (one["tokens"] - zero["tokens"]) / max(size, 1)
    out.write(
        f"model: claude-haiku-4-5 (the observer's default), fake usage = characters / 4; "
        f"the default budget (30,000 tokens a pass) covers ~{30_000 / max(per_token, 1e-9):,.0f} "
        "observations of a first pass."
    )


def run(*, out: Any, options: dict[str, Any]) -> None:
    if not is_bench_child(NAME):
        rerun_in_fresh_data_dir(NAME, options, 1)
        return
    size = int(options.get("size") or (300 if options.get("quick") else 1000))
    _child(size, out)
