"""Hot-path queries built by the ORM once, then run as raw SQL.

Building a QuerySet's SQL costs more than SQLite takes to run a primary-key or indexed
lookup (~0.17 ms per tool use for the session lookup; the gate's by-file query doubled its
CPU cost through the ORM). So a hot query is written as an ORM query with placeholder
values, compiled once per database vendor, and run with the real values in the order the
compiled SQL wants them. The ORM still writes the SQL (quoting, joins, LIMIT syntax per
backend); only the per-call building is skipped.

On SQLite such a statement then runs on the open sqlite3 connection itself (`rows`, `row`):
Django's cursor wrapper (a cursor object, its `%s` -> `?` regex on every call, two wrappers
and a thread-local lookup per statement) cost ~25 us a statement, more than SQLite takes to
run the gate's indexed reads. The checks that wrapper makes are made here too, and
Django's cursor still runs the statement wherever anything observes queries.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import (
    NOT_PROVIDED,
    AutoField,
    BigAutoField,
    BigIntegerField,
    BooleanField,
    CharField,
    Field,
    FloatField,
    ForeignKey,
    IntegerField,
    Model,
    PositiveBigIntegerField,
    PositiveIntegerField,
    PositiveSmallIntegerField,
    QuerySet,
    SmallAutoField,
    SmallIntegerField,
    TextField,
)


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

    def rows(self, **values: Any) -> list[tuple[Any, ...]]:
        """All rows of the query run with `values`."""
        sql, params = self.sql_and_params(**values)
        return rows(sql, params)

    def row(self, **values: Any) -> tuple[Any, ...] | None:
        """The first row of the query run with `values`, or None."""
        sql, params = self.sql_and_params(**values)
        return row(sql, params)


def _direct(conn: BaseDatabaseWrapper) -> Any:
    """The open sqlite3 connection to run a statement on directly, or None where Django's
    cursor must run it: another backend, or queries being observed (DEBUG,
    CaptureQueriesContext and django_assert_num_queries log them; an execute_wrapper sees
    them). Otherwise the checks of Django's cursor() and execute(), in their order."""
    if conn.vendor != "sqlite" or conn.execute_wrappers or conn.queries_logged:
        return None
    conn.close_if_health_check_failed()
    conn.ensure_connection()
    conn.validate_thread_sharing()
    conn.validate_no_broken_transaction()
    return conn.connection


def _run(sql: str, params: Sequence[Any], one: bool) -> Any:
    conn = connections[DEFAULT_DB_ALIAS]  # once: each `connection.x` is a thread-local lookup
    direct = _direct(conn)
    if direct is None:
        with conn.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchone() if one else cursor.fetchall()
    qmark = _QMARK.get(sql)
    if qmark is None:
        if len(_QMARK) > 512:  # statements are compiled ones, a few dozen; stay bounded
            _QMARK.clear()
        # What Django's SQLiteCursorWrapper.convert_query does on every call, once.
        qmark = _QMARK[sql] = _FORMAT_QMARK.sub("?", sql).replace("%%", "%")
    # wrap_database_errors: sqlite3's errors become django.db's (IntegrityError,
    # OperationalError), as from Django's cursor, and the connection notes them.
    with conn.wrap_database_errors:
        cursor = direct.execute(qmark, params)
        try:
            return cursor.fetchone() if one else cursor.fetchall()
        finally:
            cursor.close()


def rows(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Run one statement of `%s` placeholders on the default database: all its rows."""
    found: list[tuple[Any, ...]] = _run(sql, params, False)
    return found


def row(sql: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
    """Run one statement of `%s` placeholders on the default database: its first row (an
    INSERT ... RETURNING's), or None."""
    found: tuple[Any, ...] | None = _run(sql, params, True)
    return found


# Django's own pattern (django/db/backends/sqlite3/base.py): `%s` not preceded by `%`.
_FORMAT_QMARK = re.compile(r"(?<!%)%s")
_QMARK: dict[str, str] = {}


class CompiledFetch(CompiledQuery):
    """A model QuerySet's first row as a model instance, the SELECT compiled once.

    What `Model.objects.raw(sql)` or `.first()` gives (the field converters applied: aware
    datetimes, booleans), without their per-call machinery: raw() resolves the model's
    init order and its converters on every call, which was 14% of a tool use's ingest. The
    QuerySet must select the model's own concrete fields and nothing else (no
    select_related, values() or annotations); compiling checks it."""

    def __init__(
        self,
        model: type[Model],
        build: Callable[[Mapping[str, str]], QuerySet[Any]],
        *names: str,
    ) -> None:
        super().__init__(build, *names)
        self._model = model
        self._fields = [f.attname for f in model._meta.concrete_fields]
        self._converters: dict[str, list[tuple[int, list[Any], Any]]] = {}

    def _converters_for_vendor(self, conn: BaseDatabaseWrapper) -> list[tuple[int, list[Any], Any]]:
        found = self._converters.get(conn.vendor)
        if found is None:
            query = self._build(self._placeholders).query
            compiler = query.get_compiler(connection=conn)
            compiler.setup_query()
            targets = [getattr(col, "target", None) for col, _, _ in compiler.select]
            if targets != list(self._model._meta.concrete_fields):
                raise RuntimeError(f"{self._model.__name__} fetch selects more than its fields")
            cols = [col for col, _, _ in compiler.select]
            converted = compiler.get_converters(cols)
            found = [(pos, convs, col) for pos, (convs, col) in converted.items()]
            self._converters[conn.vendor] = found
        return found

    def first(self, **values: Any) -> Any:
        """The first row as an instance of the model, or None."""
        conn = connections[DEFAULT_DB_ALIAS]  # once: each `connection.x` is a thread-local lookup
        converters = self._converters_for_vendor(conn)
        found = self.row(**values)
        if found is None:
            return None
        values_ = list(found)
        for pos, convs, col in converters:
            value = values_[pos]
            for convert in convs:
                value = convert(value, col, conn)
            values_[pos] = value
        return self._model.from_db(conn.alias, self._fields, values_)


class CompiledInsert:
    """`Model.objects.create(**values)` for a hot path, as one INSERT compiled per vendor.

    The ORM's create builds an instance, a query and its SQL on every call (~0.3 ms on
    SQLite against ~0.1 ms for the INSERT itself: a third of a gate refusal's cost, which
    writes two rows). Values go through each field's own get_db_prep_save, and a field not
    given takes its model default, so the row is what create() would write. No signals are
    sent: use it only for models nothing listens to.

    A constant default (not callable: `status="pending"`, `attempts=0`, null, or no default
    at all: "" or None) is prepared once per vendor, not on every row: the ledger row's
    nine defaults through get_db_prep_save were a fifth of a gate refusal's Python. A
    callable default (`timezone.now`, `dict`) is called for each row, as create() does.
    A value of the exact type a plain field stores (a str for a CharField, an int for an
    IntegerField or a foreign key's id, see PLAIN_FIELDS) is the prepared value itself: its
    get_db_prep_save chain (four calls a field) hands it back unchanged.
    """

    def __init__(self, model: type[Model]) -> None:
        self._model = model
        self._fields = [f for f in model._meta.concrete_fields if not f.primary_key]
        self._names = frozenset(f.attname for f in self._fields)
        self._plain = [_plain_type(f) for f in self._fields]
        self._by_vendor: dict[tuple[str, bool], str] = {}
        self._constants: dict[str, dict[str, Any]] = {}
        self._upserts: dict[tuple[str, str, tuple[str, ...]], str] = {}

    def _sql(self, conn: BaseDatabaseWrapper, *, skip_duplicate: bool = False) -> str:
        key = (conn.vendor, skip_duplicate)
        sql = self._by_vendor.get(key)
        if sql is None:
            quote = conn.ops.quote_name
            columns = ", ".join(quote(f.column) for f in self._fields)
            marks = ", ".join(["%s"] * len(self._fields))
            sql = f"INSERT INTO {quote(self._model._meta.db_table)} ({columns}) VALUES ({marks})"
            if skip_duplicate:
                sql += " ON CONFLICT DO NOTHING"
            if conn.features.can_return_columns_from_insert:
                sql += f" RETURNING {quote(self._model._meta.pk.column)}"
            self._by_vendor[key] = sql
        return sql

    def _constant_defaults(self, conn: BaseDatabaseWrapper) -> dict[str, Any]:
        found = self._constants.get(conn.vendor)
        if found is None:
            found = {}
            for field in self._fields:
                # NOT_PROVIDED (no default: get_default() is "" or None) is a class, so callable.
                if field.db_default is not NOT_PROVIDED or (
                    field.has_default() and callable(field.default)
                ):
                    continue
                value = field.get_default()
                if value is None or type(value) in CONSTANT_TYPES:
                    found[field.attname] = field.get_db_prep_save(value, conn)
            self._constants[conn.vendor] = found
        return found

    def _params(self, values: Mapping[str, Any], conn: BaseDatabaseWrapper) -> list[Any]:
        if not self._names.issuperset(values):
            unknown = sorted(set(values) - self._names)
            raise TypeError(f"{self._model.__name__} has no field(s) {unknown}")
        constants = self._constant_defaults(conn)
        params = []
        for field, plain in zip(self._fields, self._plain, strict=True):
            name = field.attname
            if name in values:
                value = values[name]
                params.append(
                    value if type(value) is plain else field.get_db_prep_save(value, conn)
                )
            elif name in constants:
                params.append(constants[name])
            else:
                params.append(field.get_db_prep_save(field.get_default(), conn))
        return params

    def insert(self, **values: Any) -> int:
        """Insert one row; returns its primary key. Raises IntegrityError as create() would."""
        conn = connections[DEFAULT_DB_ALIAS]  # once: each `connection.x` is a thread-local lookup
        params = self._params(values, conn)
        if conn.features.can_return_columns_from_insert:
            returned = row(self._sql(conn), params)
            assert returned is not None  # an INSERT that did not raise returns its row
            return int(returned[0])
        with conn.cursor() as cursor:
            cursor.execute(self._sql(conn), params)
            return int(conn.ops.last_insert_id(cursor, self._model._meta.db_table, "id"))

    def upsert(self, *, conflict: str, update: Sequence[str], **values: Any) -> int:
        """Insert one row, or where one with the same `conflict` column (unique) exists,
        set its `update` fields to these values instead; the row's primary key. One
        statement, so no transaction around it (SQLite and PostgreSQL: ON_CONFLICT_VENDORS)."""
        conn = connections[DEFAULT_DB_ALIAS]
        if not upsert_supported():
            raise NotImplementedError(f"upsert on {conn.vendor}")
        key = (conn.vendor, conflict, tuple(update))
        sql = self._upserts.get(key)
        if sql is None:
            quote = conn.ops.quote_name
            columns = {f.attname: f.column for f in self._fields}
            insert = self._sql(conn).split(" RETURNING ", 1)[0]
            sets = ", ".join(f"{quote(columns[n])} = EXCLUDED.{quote(columns[n])}" for n in update)
            sql = self._upserts[key] = (
                f"{insert} ON CONFLICT ({quote(columns[conflict])}) DO UPDATE SET {sets}"
                f" RETURNING {quote(self._model._meta.pk.column)}"
            )
        returned = row(sql, self._params(values, conn))
        assert returned is not None  # inserted or updated, the statement returns the row
        return int(returned[0])

    def insert_new(self, **values: Any) -> int | None:
        """Insert one row unless a unique constraint already holds one like it: its primary
        key, or None for the duplicate (nothing written, the transaction still usable).

        The hot paths' "a duplicate delivery is a no-op" without a savepoint: SQLite and
        PostgreSQL skip the row by `ON CONFLICT DO NOTHING` (uniqueness only: a NOT NULL or
        foreign key violation still raises), two statements fewer than SAVEPOINT, INSERT,
        RELEASE. Another backend takes the savepoint and catches the IntegrityError."""
        conn = connections[DEFAULT_DB_ALIAS]
        if conn.vendor not in ON_CONFLICT_VENDORS:
            try:
                with transaction.atomic():
                    return self.insert(**values)
            except IntegrityError:
                return None
        params = self._params(values, conn)
        if conn.features.can_return_columns_from_insert:
            returned = row(self._sql(conn, skip_duplicate=True), params)
            return None if returned is None else int(returned[0])
        with conn.cursor() as cursor:
            cursor.execute(self._sql(conn, skip_duplicate=True), params)
            if cursor.rowcount == 0:
                return None
            return int(conn.ops.last_insert_id(cursor, self._model._meta.db_table, "id"))


# Field classes (exactly these, not subclasses) whose get_db_prep_save returns a value of
# this type unchanged on every backend Django ships: to_python() of a str is the str,
# int() of an int the int (bool is not int here: `type(True) is int` is False), and the
# database ops' integer and autopk adapters pass ints through.
PLAIN_FIELDS: dict[type[Field[Any, Any]], type] = {
    CharField: str,
    TextField: str,
    IntegerField: int,
    BigIntegerField: int,
    SmallIntegerField: int,
    PositiveIntegerField: int,
    PositiveBigIntegerField: int,
    PositiveSmallIntegerField: int,
    BooleanField: bool,
    FloatField: float,
}


def _plain_type(field: Field[Any, Any]) -> type | None:
    """The type whose values `field` stores as they are, or None."""
    if type(field) is ForeignKey:
        target = field.target_field
        return int if type(target) in {AutoField, BigAutoField, SmallAutoField} else None
    return PLAIN_FIELDS.get(type(field))


def upsert_supported() -> bool:
    """Whether CompiledInsert.upsert runs on the default database (else do it in two steps)."""
    conn = connections[DEFAULT_DB_ALIAS]
    return conn.vendor in ON_CONFLICT_VENDORS and conn.features.can_return_columns_from_insert


# Defaults of these types are immutable, so one prepared value serves every row.
CONSTANT_TYPES = (str, int, float, bool, Decimal)
# Backends whose INSERT takes `ON CONFLICT DO NOTHING` (SQLite >= 3.24, PostgreSQL >= 9.5).
ON_CONFLICT_VENDORS = frozenset({"sqlite", "postgresql"})


def db_datetime(value: datetime | str) -> datetime:
    """A datetime column read on a plain cursor: SQLite gives text (UTC), PostgreSQL an aware
    datetime; both become aware."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
