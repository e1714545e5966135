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
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.db.models import Model, QuerySet


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


class CompiledInsert:
    """`Model.objects.create(**values)` for a hot path, as one INSERT compiled per vendor.

    The ORM's create builds an instance, a query and its SQL on every call (~0.3 ms on
    SQLite against ~0.1 ms for the INSERT itself: a third of a gate refusal's cost, which
    writes two rows). Values go through each field's own get_db_prep_save, and a field not
    given takes its model default, so the row is what create() would write. No signals are
    sent: use it only for models nothing listens to.
    """

    def __init__(self, model: type[Model]) -> None:
        self._model = model
        self._fields = [f for f in model._meta.concrete_fields if not f.primary_key]
        self._by_vendor: dict[str, str] = {}

    def _sql(self) -> str:
        sql = self._by_vendor.get(connection.vendor)
        if sql is None:
            quote = connection.ops.quote_name
            columns = ", ".join(quote(f.column) for f in self._fields)
            marks = ", ".join(["%s"] * len(self._fields))
            sql = f"INSERT INTO {quote(self._model._meta.db_table)} ({columns}) VALUES ({marks})"
            if connection.features.can_return_columns_from_insert:
                sql += f" RETURNING {quote(self._model._meta.pk.column)}"
            self._by_vendor[connection.vendor] = sql
        return sql

    def insert(self, **values: Any) -> int:
        """Insert one row; returns its primary key. Raises IntegrityError as create() would."""
        unknown = set(values) - {f.attname for f in self._fields}
        if unknown:
            raise TypeError(f"{self._model.__name__} has no field(s) {sorted(unknown)}")
        params = []
        for field in self._fields:
            value = values[field.attname] if field.attname in values else field.get_default()
            params.append(field.get_db_prep_save(value, connection))
        with connection.cursor() as cursor:
            cursor.execute(self._sql(), params)
            if connection.features.can_return_columns_from_insert:
                return int(cursor.fetchone()[0])
            return int(connection.ops.last_insert_id(cursor, self._model._meta.db_table, "id"))


def db_datetime(value: datetime | str) -> datetime:
    """A datetime column read on a plain cursor: SQLite gives text (UTC), PostgreSQL an aware
    datetime; both become aware."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
