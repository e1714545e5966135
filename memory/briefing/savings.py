"""What the ledger says in money, as the Stats tiles and `cmem stats` show it: each kind at
its own model's price, each figure with one line saying what it is, and the net always
beside the parts it is made of.

Billing: an API user pays these prices; a subscription user (the observer runs through the
`claude` CLI login, or no API key is configured) pays a flat fee, so the same figures are
labelled as API-equivalent cost (CLAUDE_MEM_BILLING=auto|api|subscription).

The net is one figure, in money, with one sign convention everywhere (page, `cmem stats`):
positive is what cmem saved, negative what it cost. Tokens are shown as their parts and
never summed into a second net: the observer's tokens are a smaller model's, so a token
net could disagree in sign with the money one (issue 35: `net $0.012` beside
`net -3,010 tokens`).
"""

from __future__ import annotations

from dataclasses import dataclass

from memory import config
from memory.compression.providers import provider_choice
from memory.ledger import LedgerReport, ledger_report
from memory.ledger.prices import price_row

API_KEY_PROVIDERS = ("anthropic", "openrouter", "gemini", "openai-compatible")


@dataclass(frozen=True)
class Tile:
    key: str
    title: str
    tokens: int
    usd: float
    help: str


@dataclass(frozen=True)
class Savings:
    report: LedgerReport
    tiles: list[Tile]
    billing: str  # "api" | "subscription"
    billing_line: str
    net_usd: float
    net_line: str  # the net with what went into it
    unpriced: list[str]  # main models the price table does not know (priced at $0)

    @property
    def money_label(self) -> str:
        return "API-equivalent" if self.billing == "subscription" else "at API prices"

    @property
    def measured(self) -> bool:
        """Whether anything was recorded in the window: an empty install shows one line
        saying what to do instead of four $0.0000 tiles."""
        total = self.report.total
        return bool(
            total.shown
            or total.avoided
            or total.spent
            or total.usd_spent
            or total.denials
            or total.injections
            or total.memory_tools
        )

    @property
    def net_saved(self) -> bool:
        return self.net_usd >= 0

    @property
    def net_text(self) -> str:
        """`+$0.012 saved` or `−$0.012 cost`: the sign, the word and the page's colour agree."""
        return net_words(self.net_usd)

    @property
    def tokens_line(self) -> str:
        total = self.report.total
        return (
            f"saved {total.avoided:,}, added {total.shown:,} (the main model's tokens); "
            f"observer {total.spent:,} (a smaller model's, so not subtracted here: "
            "the net weighs each at its own price)"
        )


def billing_mode(settings: dict[str, str] | None = None) -> tuple[str, str]:
    """("api" | "subscription", why)."""
    values = settings if settings is not None else config.load()
    asked = config.get("CLAUDE_MEM_BILLING", values).strip().lower()
    if asked in {"api", "subscription"}:
        return asked, f"billing is set to {asked} in Settings"

    try:
        choice = provider_choice()
    except Exception:  # noqa: BLE001 - a label must never break a page
        return "subscription", "the observer's provider could not be read"
    if choice.name in API_KEY_PROVIDERS:
        return "api", f"the observer uses an API key ({choice.name})"
    if choice.name == "claude":
        return "subscription", "the observer runs through your Claude Code login"
    return "subscription", "no API key is configured"


def signed_usd(value: float) -> str:
    """`+$0.012` (saved) or `−$0.012` (cost)."""
    return f"+{usd(value)}" if value >= 0 else usd(value)


def net_words(value: float) -> str:
    return f"{signed_usd(value)} saved" if value >= 0 else f"{signed_usd(value)} cost"


def usd(value: float) -> str:
    """Dollars readable at every size: $0.0042, $0.42, $12.40; a sign only when negative."""
    sign = "−" if value < 0 else ""
    value = abs(value)
    if value >= 1:
        return f"{sign}${value:,.2f}"
    if value >= 0.01:
        return f"{sign}${value:.3f}"
    return f"{sign}${value:.4f}"


def savings(*, project: str | None = None, days: int = 30) -> Savings:
    settings = config.load()
    report = ledger_report(project=project, days=days, settings=settings)
    total = report.total
    models = sorted(report.models) or [report.default_model]
    main = ", ".join(models)
    observers = sorted({u.model for u in report.observer})
    billing, why = billing_mode(settings)
    tiles = [
        Tile(
            "saved",
            "Saved by the read gate",
            total.avoided,
            total.usd_avoided,
            f"Reads the model did not make after a refusal, at {main}'s input price; "
            "a refusal it read through anyway counts nothing.",
        ),
        Tile(
            "added",
            "Added to context",
            total.shown,
            total.usd_shown,
            "Indexes at session start, refusal texts, timelines and memory-tool answers "
            f"cmem put in front of the model, at {main}'s input price.",
        ),
        Tile(
            "observer",
            "Observer spend",
            total.spent,
            total.usd_spent,
            "Tokens the observer spent writing observations"
            + (f" ({', '.join(observers)})" if observers else "")
            + ", at its own price (as its provider reported it, else cmem's price table).",
        ),
    ]
    net = total.usd_net
    net_line = (
        f"saved {usd(total.usd_avoided)} − added {usd(total.usd_shown)} − observer "
        f"{usd(total.usd_spent)} = {net_words(net)}"
    )
    label = "API-equivalent cost" if billing == "subscription" else "API prices"
    billing_line = (
        f"Money shown as {label}: {why}."
        + (
            " A subscription pays a flat fee, not these amounts."
            if billing == "subscription"
            else ""
        )
        + (
            f" Sessions whose transcript named no model are priced as {report.default_model}"
            " (the main model setting, under Advanced in Settings)."
        )
    )
    unpriced = [m for m in models if price_row(m) is None]
    return Savings(report, tiles, billing, billing_line, net, net_line, unpriced)
