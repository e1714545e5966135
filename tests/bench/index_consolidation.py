"""`make bench NAME=index_consolidation`: what a consolidation pass saves in the SessionStart
index, on realistic histories labelled by hand (issue 31, "Measure it").

Three histories, each loaded into a throwaway data dir (a child process, as every bench):

- held-out: the hand-written catalogue's second half of facts (tests/bench/data/
  consolidation_history/facts.toml), generated with seed 29: the figure to quote;
- tuning: the other half, seed 11 (nothing is tuned on it today; it is kept apart so that
  whoever tunes the rules' thresholds does it there and still reports the held-out one);
- demo: the bundled `cmem demo` history (13 rows), labelled in demo_labels.toml.

For each: the index with every row (no token budget, 500 observations, Claude Code's
10,000-character cap lifted: the same information before and after), then the index at the
default settings (2,500 tokens, 50 observations: what the agent gets), then one
consolidation pass in rules mode, then both again. Reported: tokens and rows before/after,
current facts lost (must be 0), stale facts still shown as current, how many distinct
current facts the default index holds before and after, and what the pass changed.

Model mode is not run: the pass's model judgement needs a provider, and the fake Messages
API (tests/fakes/anthropic.py) answers scripted text, so a figure from it would measure the
script, not the model.

Without --quick the figures are also written to docs/benchmarks/consolidation-index.md.
"""

from __future__ import annotations

import os
import platform
import sys
from datetime import UTC, datetime
from typing import Any

from tests.bench.harness import REPO, is_bench_child, rerun_in_fresh_data_dir

NAME = "index_consolidation"
DOC = REPO / "docs" / "benchmarks" / "consolidation-index.md"
SEEDS = {"held-out": 29, "tuning": 11}
COMMAND = "make bench NAME=index_consolidation"


def run(*, out: Any, options: dict[str, Any]) -> None:
    if not is_bench_child(NAME):
        rerun_in_fresh_data_dir(NAME, options, runs=1)
        return
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    measures = measure_all(quick=bool(options.get("quick")))
    text = report(measures)
    out.write(text)
    if not options.get("quick"):
        DOC.write_text(document(text))
        out.write(f"\nwritten to {DOC.relative_to(REPO)}")


def measure_all(*, quick: bool = False) -> list[Any]:
    from tests.bench.consolidation_history import (
        catalogue_load,
        demo_history_load,
        history_generate,
        history_load,
        index_measure,
        rules_pass,
    )

    catalogue = catalogue_load()
    tuning, held_out = catalogue.halves()
    halves = {"held-out": held_out, "tuning": tuning}
    out = []
    for name, facts in halves.items():
        history = history_generate(
            catalogue,
            name=f"{catalogue.project}-{name}",
            seed=SEEDS[name],
            fact_ids=facts,
            sessions=12 if quick else None,
        )
        out.append(index_measure(history_load(history), consolidate=rules_pass))
    out.append(index_measure(demo_history_load(), consolidate=rules_pass))
    return out


def _pct(before: int, after: int) -> str:
    return f"{(before - after) / before:.0%}" if before else "-"


def report(measures: list[Any]) -> str:
    """The table (markdown, readable as plain text) and, per history, what the pass did."""
    lines = [
        "Every row (no token budget, the 10,000-character cap lifted):",
        "",
        "| history | rows | facts (current/stale) | tokens before → after | fewer | index rows"
        " before → after | current facts lost | stale shown as current before → after |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for m in measures:
        b, a = m.full_before, m.full_after
        lines.append(
            f"| {m.name} | {m.rows} | {m.facts} ({m.current_facts}/{m.stale_facts})"
            f" | {b.tokens:,} → {a.tokens:,} | {_pct(b.tokens, a.tokens)}"
            f" | {len(b.ids)} → {len(a.ids)} | {len(m.lost)}"
            f" | {len(m.stale_shown_before)} → {len(m.stale_shown_after)} |"
        )
    lines += [
        "",
        "At the default settings (2,500 tokens, 50 observations): what the agent gets:",
        "",
        "| history | tokens before → after | rows before → after | distinct current facts"
        " shown before → after | stale shown as current before → after |",
        "|---|---|---|---|---|",
    ]
    for m in measures:
        b, a = m.default_before, m.default_after
        current, shown_b, shown_a = m.current, m.facts_shown(b), m.facts_shown(a)
        lines.append(
            f"| {m.name} | {b.tokens:,} → {a.tokens:,} | {len(b.ids)} → {len(a.ids)}"
            f" | {len(shown_b & current)} → {len(shown_a & current)} of {m.current_facts}"
            f" | {len(shown_b - current)} → {len(shown_a - current)} |"
        )
    lines.append("")
    for m in measures:
        changes = ", ".join(f"{k} {v}" for k, v in sorted(m.changes.items())) or "none"
        lines.append(f"{m.name}: the pass changed {changes}.")
        if m.lost:
            lines.append(
                f"  current facts lost: {', '.join(m.lost)}"
                f" ({len(m.lost_to_demotion)} only by demotion: still searchable)"
            )
        if m.stale_shown_after:
            lines.append(f"  stale facts still shown as current: {', '.join(m.stale_shown_after)}")
        if m.against_labels:
            lines.append(
                f"  changes the labels call wrong ({len(m.against_labels)}): "
                + "; ".join(m.against_labels[:6])
            )
        if m.missed:
            lines.append(
                f"  facts still shown by several rows ({len(m.missed)}): " + ", ".join(m.missed[:8])
            )
    return "\n".join(lines)


def machine() -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{platform.platform()}, Python {sys.version.split()[0]}, {os.cpu_count()} cores"
        f" (shared), load average {load} at the end of the run,"
        f" {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    )


def document(table: str) -> str:
    return f"""# What consolidation saves in the SessionStart index

Issue 31, "Measure it": on a realistic history, the SessionStart index's tokens for the same
information before and after one consolidation pass (rules mode, offline), checked against
labels written by hand. Target: at least 30% fewer tokens, no current fact lost.

Command: `{COMMAND}` (tests/bench/index_consolidation.py; `--quick` for a smoke run that
writes nothing). Machine: {machine()}.

## The histories

- **held-out** (the figure to quote) and **tuning**: one hand-written catalogue of the facts
  of a plausible project, `parcel-api`, a shipping-rate service
  (tests/bench/data/consolidation_history/facts.toml: 53 facts, each phrased 2-5 ways as
  observers wrote it in different sessions; 14 made stale by a later fact: decisions
  reversed, guesses refuted, bugs found then fixed, settings changed back). A seeded
  generator (tests/bench/consolidation_history.py) turns it into 40 sessions over ten weeks:
  files re-read and re-summarised, "tests pass" again and again, a decision then its
  reversal, a guess then what refuted it; every row keeps its fact id outside the database.
  The facts are split in two halves by their chains (a fact and what replaced it stay
  together), each half generated from its own seed. Nothing was tuned: the rules ran with
  their shipped thresholds on both halves.
- **demo**: the bundled `cmem demo` history (13 rows), labelled by hand in
  tests/bench/data/consolidation_history/demo_labels.toml. No row repeats another; three
  describe a state a later row of another type changed (a bug, then its fix).

"Every row" is the real index (`context_text`) with CLAUDE_MEM_CONTEXT_OBSERVATIONS=500,
CLAUDE_MEM_CONTEXT_TOKENS=0 and Claude Code's 10,000-character cap lifted, so before and
after hold the same information; tokens are `estimate_tokens` (4 characters a token), the
header, legend and session lines included. A fact is shown when one of its rows is a row
line of the index; a current fact is lost when none is; a stale fact is shown as current
when one of its rows is.

## Figures (held-out first)

{table}

## Reading them

- The default index keeps the newest 50 rows, so before the pass it shows only the newest
  facts (and few stale ones: they are old); after it, the same budget reaches back over the
  whole history. Stale facts the pass did not catch then come back into view: that is the
  "stale shown as current" column at the default budget growing.
- What the rules leave stale is mostly outside what they look for: a discovery made stale by
  a change or a fix of another type (a setting changed, a bug found then fixed), a guess
  that a later row confirmed rather than refuted. A reversal can also miss an older decision
  on a busy file (the rules compare at most the newest 40 rows per file).
- "Several rows" are a fact's different phrasings: the rules fold near-identical wording,
  not paraphrases (the embedding rule needs vectors, which this offline run has none of).
"""
