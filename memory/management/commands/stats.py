from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from memory.briefing.savings import Savings, savings, usd
from memory.ledger import LedgerLine
from memory.management.arguments import add_stats_arguments

SECTIONS = ("day", "project", "session")


class Command(BaseCommand):
    help = (
        "Net token savings of cmem per day, project and session: reads the gate avoided, minus what "
        "cmem put into context (indexes, timelines) and what the observer spent."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_stats_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        found = savings(project=options["project"], days=max(1, options["days"]))
        report = found.report
        if options["json"]:
            data = {
                **report.as_dict(),
                "billing": found.billing,
                "net_usd": round(found.net_usd, 6),
            }
            self.stdout.write(json.dumps(data, indent=2))
            return
        self.write_report(found, by=options["by"], sessions=options["sessions"])

    def write_report(self, found: Savings, *, by: str, sessions: int) -> None:
        report = found.report
        scope = f"project {report.project}" if report.project else "all projects"
        total = report.total
        self.stdout.write(
            f"cmem ledger, {scope}, last {report.days} days: net {usd(found.net_usd)} "
            f"({found.money_label}): {found.net_line}"
        )
        for tile in found.tiles:
            self.stdout.write(
                f"  {tile.title}: {usd(tile.usd)}, {tile.tokens:,} tokens. {tile.help}"
            )
        self.stdout.write(f"  {found.billing_line}")
        self.stdout.write(
            f"token ledger: net {total.net:+,} tokens "
            f"(avoided {total.avoided:,}, shown {total.shown:,}, observer {total.spent:,}; "
            f"{total.denials} reads refused, {total.retries} retried, {total.injections} indexes injected, "
            f"{total.memory_tools} memory-tool answers)"
        )
        if report.observer:
            self.stdout.write(
                "\nobserver usage (provider, model: batches, input / cached / output tokens, cost)"
            )
            for u in report.observer:
                self.stdout.write(
                    f"  {u.provider}, {u.model}: {u.batches} batches, {u.input:,} / {u.cached:,} / "
                    f"{u.output:,} tokens, ${u.cost_usd:.4f}"
                )
        wanted = SECTIONS if by == "all" else (by,)
        if "day" in wanted:
            self.write_table("per day", report.by_day)
        if "project" in wanted:
            self.write_table("per project", report.by_project)
        if "session" in wanted:
            self.write_table("per session (best first)", report.by_session[: max(0, sessions)])

    def write_table(self, title: str, lines: list[LedgerLine]) -> None:
        self.stdout.write(f"\n{title}")
        if not lines:
            self.stdout.write("  (nothing recorded)")
            return
        width = max(len(line.label or line.key) for line in lines)
        header = f"  {'':<{width}}  {'net $':>9}  {'net':>10}  {'avoided':>10}  {'shown':>9}  {'observer':>10}  {'refused':>7}  {'retried':>7}"
        self.stdout.write(header)
        for line in lines:
            self.stdout.write(
                f"  {line.label or line.key:<{width}}  {usd(line.usd_net):>9}  {line.net:>+10,}  {line.avoided:>10,}  {line.shown:>9,}  "
                f"{line.spent:>10,}  {line.denials:>7}  {line.retries:>7}"
            )
