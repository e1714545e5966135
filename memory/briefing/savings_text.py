"""The savings report as `cmem stats` prints it: text lines and the JSON object.

Made here, not in the command, so the worker can answer it too (`GET /api/ledger/report`,
what the fast `cmem stats` asks: cmem_site/quick.py) and both print the same.
"""

from __future__ import annotations

from typing import Any

from memory.briefing.savings import Savings, signed_usd, usd
from memory.ledger import LedgerLine

SECTIONS = ("day", "project", "session")


def stats_json(found: Savings) -> dict[str, Any]:
    """`cmem stats --json`: the ledger report with the billing and the net in dollars."""
    return {**found.report.as_dict(), "billing": found.billing, "net_usd": round(found.net_usd, 6)}


def stats_lines(found: Savings, *, by: str = "all", sessions: int = 10) -> list[str]:
    """`cmem stats`: the money, the tokens, then the tables `by` asks for."""
    report = found.report
    scope = f"project {report.project}" if report.project else "all projects"
    total = report.total
    if not found.measured:
        return [
            f"cmem ledger, {scope}, last {report.days} days: nothing measured yet. "
            "Savings appear once a coding session runs with cmem's hooks installed "
            "(cmem install); cmem demo shows them with sample data."
        ]
    lines = [
        f"cmem ledger, {scope}, last {report.days} days: net {found.net_text} "
        f"({found.money_label}): {found.net_line}"
    ]
    lines += [
        f"  {tile.title}: {usd(tile.usd)}, {tile.tokens:,} tokens. {tile.help}"
        for tile in found.tiles
    ]
    lines.append(f"  {found.billing_line}")
    # No token net: it would mix the main model's tokens with the observer's cheaper ones
    # and could disagree in sign with the money net above.
    lines.append(
        f"tokens: {found.tokens_line}. "
        f"{total.denials} reads refused, {total.retries} retried, {total.injections} indexes "
        f"injected, {total.memory_tools} memory-tool answers"
    )
    if report.observer:
        lines.append(
            "\nobserver usage (provider, model: batches, input / cached / output tokens, cost)"
        )
        lines += [
            f"  {u.provider}, {u.model}: {u.batches} batches, {u.input:,} / {u.cached:,} / "
            f"{u.output:,} tokens, ${u.cost_usd:.4f}"
            for u in report.observer
        ]
    wanted = SECTIONS if by == "all" else (by,)
    if "day" in wanted:
        lines += _table("per day", report.by_day)
    if "project" in wanted:
        lines += _table("per project", report.by_project)
    if "session" in wanted:
        lines += _table("per session (best first)", report.by_session[: max(0, sessions)])
    return lines


def _table(title: str, rows: list[LedgerLine]) -> list[str]:
    if not rows:
        return [f"\n{title}", "  (nothing recorded)"]
    width = max(len(line.label or line.key) for line in rows)
    # The net is money only (positive: saved), like the headline; tokens are parts.
    header = f"  {'':<{width}}  {'net $':>9}  {'avoided':>10}  {'shown':>9}  {'observer':>10}  {'refused':>7}  {'retried':>7}"
    return [
        f"\n{title}",
        header,
        *(
            f"  {line.label or line.key:<{width}}  {signed_usd(line.usd_net):>9}  {line.avoided:>10,}  {line.shown:>9,}  "
            f"{line.spent:>10,}  {line.denials:>7}  {line.retries:>7}"
            for line in rows
        ),
    ]
