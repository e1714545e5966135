"""What an import did, counted per kind, for the closing summary every importer prints."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class ImportReport:
    imported: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. the root chosen per project

    def add(self, kind: str, created: bool) -> None:
        (self.imported if created else self.skipped)[kind] += 1

    def merge(self, other: ImportReport) -> None:
        """Add another report's counts, problems and notes (a batch's, once it committed)."""
        self.imported.update(other.imported)
        self.skipped.update(other.skipped)
        self.notes.extend(other.notes)
        for message in other.problems:
            if len(self.problems) < 20:
                self.problems.append(message)

    def problem(self, message: str) -> None:
        # Keep the report readable on a huge, damaged history: the count matters past 20.
        if len(self.problems) < 20:
            self.problems.append(message)
        self.skipped["problem"] += 1

    def lines(self) -> list[str]:
        kinds = sorted(set(self.imported) | set(self.skipped) - {"problem"})
        out = [
            f"{kind:<14} imported {self.imported[kind]:>6}   skipped {self.skipped[kind]:>6}"
            for kind in kinds
        ]
        out.extend(self.notes)
        if self.skipped["problem"]:
            out.append(f"{self.skipped['problem']} unreadable or unknown entries skipped")
            out.extend(f"  - {p}" for p in self.problems)
        return out
