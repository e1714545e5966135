"""Hot-path queries built by the ORM once, then run as raw SQL.

Building a QuerySet's SQL costs more than SQLite takes to run a primary-key or indexed
lookup (~0.17 ms per tool use for the session lookup; the gate's by-file query doubled its
CPU cost through the ORM). So a hot query is written as an ORM query with placeholder
values, compiled once per database vendor, and run with the real values in the order the
compiled SQL wants them. The ORM still writes the SQL (quoting, joins, LIMIT syntax per
backend); only the per-call building is skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.db import connection
from django.db.models import QuerySet


class CompiledQuery:
    """An ORM query compiled once per database vendor.

    `build` receives one placeholder string per name (`{"path": "\\0path", ...}`) and
    returns the QuerySet using them as filter values; `sql_and_params(path=...)` gives the
    compiled SQL and the real values in the order its parameters come.
    """

    def __init__(self, build: Callable[[Mapping[str, str]], QuerySet[Any]], *names: str) -> None:
        self._build = build
        self._placeholders = {name: f"\0{name}" for name in names}
        self._by_vendor: dict[str, tuple[str, tuple[str, ...]]] = {}

    def _compile(self) -> tuple[str, tuple[str, ...]]:
        sql, params = self._build(self._placeholders).query.sql_with_params()
        names = {placeholder: name for name, placeholder in self._placeholders.items()}
        # Every parameter must be one of ours, each exactly once: a constant the ORM adds as
        # a parameter (or a value it folds into the SQL) would make the raw run wrong.
        if sorted(params) != sorted(names):
            raise RuntimeError(f"unexpected compiled query parameters {params!r}")
        return sql, tuple(names[param] for param in params)

    def sql_and_params(self, **values: Any) -> tuple[str, list[Any]]:
        compiled = self._by_vendor.get(connection.vendor)
        if compiled is None:
            compiled = self._by_vendor[connection.vendor] = self._compile()
        sql, order = compiled
        return sql, [values[name] for name in order]
