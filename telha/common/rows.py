"""Row writes of a fixed shape for the hot write paths, their SQL built once per shape.

The ORM compiles every statement anew: for a one-row INSERT or UPDATE that is 0.2 to
0.5 ms of CPU, two to four times the cost of running the compiled SQL. The answer
endpoint runs seven such writes per request (bench/README.md, "The answer ratio"), so
those writes go through here: the SQL of each shape (model, columns, number of rows,
database) is built once from the model's `_meta`, and every call only prepares its values
— with the same field methods the ORM's insert and update compilers call
(`pre_save()` then `get_db_prep_save()`), so auto_now/auto_now_add, UUIDs, JSON and
datetimes are stored exactly as `save()`/`bulk_create()` would store them, on PostgreSQL
and SQLite alike. The statements run on Django's cursor, so they are logged, counted by
`assertNumQueries` and wrapped by `connection.execute_wrapper` like any other.

What the ORM does around a write and these do not: no `pre_save`/`post_save` signals
(nothing here listens to them for these models), no multi-table inheritance, no
expressions as values, no database defaults or generated columns — a model or value
outside that is refused with TypeError rather than written differently.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, TypeVar

from django.db import connections, router
from django.db.models import NOT_PROVIDED, Model
from django.db.models.fields import Field

M = TypeVar("M", bound=Model)


def rows_insert(objs: Sequence[Model]) -> None:
    """INSERT `objs` (instances of one model) in one statement, like `bulk_create(objs)`
    (one per batch where the database limits a statement's parameters — SQLite — in
    bulk_create's batch size): an auto-increment primary key comes back (`RETURNING`, in
    row order, as bulk_create assigns it) and is set on each object; a primary key with
    a default (UUID) is the object's own. Each object is then marked saved."""
    if not objs:
        return
    model = type(objs[0])
    if any(type(obj) is not model for obj in objs):
        raise TypeError("rows_insert: objects of one model only")
    alias = router.db_for_write(model)
    connection = connections[alias]
    with_pk = objs[0].pk is not None
    if any((obj.pk is not None) != with_pk for obj in objs):
        raise TypeError("rows_insert: either every object has its primary key or none")
    _, fields, _ = _insert_shape(model, alias, 1, with_pk)
    batch = max(1, connection.ops.bulk_batch_size(fields, objs))
    for start in range(0, len(objs), batch):
        chunk = objs[start : start + batch]
        sql, _, returning = _insert_shape(model, alias, len(chunk), with_pk)
        params: list[Any] = []
        for obj in chunk:
            params += [_prepared(f, f.pre_save(obj, True), connection) for f in fields]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            if returning is not None:
                for obj, row in zip(chunk, cursor.fetchall(), strict=True):
                    setattr(obj, returning.attname, row[0])
    for obj in objs:
        obj._state.adding = False
        obj._state.db = alias


def row_insert(obj: M) -> M:
    """INSERT one object (`rows_insert([obj])`); returns it."""
    rows_insert([obj])
    return obj


def row_update(obj: Model, fields: Sequence[str], *, where_null: Sequence[str] = ()) -> bool:
    """UPDATE the named fields of `obj`'s row from the object, like
    `obj.save(update_fields=fields)` (auto_now fields in `fields` are stamped on the
    object first). `where_null`: columns that must still be NULL for the row to be
    updated (`filter(pk=…, col=None).update(…)`). Returns whether a row was updated."""
    model = type(obj)
    alias = router.db_for_write(model)
    connection = connections[alias]
    sql, targets = _update_shape(model, alias, tuple(fields), tuple(where_null))
    params = [_prepared(f, f.pre_save(obj, False), connection) for f in targets]
    params.append(_prepared(model._meta.pk, obj.pk, connection))
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return bool(cursor.rowcount)


def quoted_column(field: Any, connection: Any, table: str | None = None) -> str:
    """The quoted column of a concrete field, qualified by the quoted `table` if given."""
    column = getattr(field, "column", None)
    if not isinstance(column, str):
        raise TypeError(f"{field}: not a concrete field")
    quoted = connection.ops.quote_name(column)
    return f"{connection.ops.quote_name(table)}.{quoted}" if table else quoted


def _prepared(field: Field, value: Any, connection: Any) -> Any:
    if hasattr(value, "resolve_expression"):
        raise TypeError(f"{field}: expressions are not written by telha.common.rows")
    return field.get_db_prep_save(value, connection=connection)


def _writable(field: Field) -> Field:
    """Refuse what the ORM would write otherwise than as a plain placeholder."""
    if field.generated or field.db_default is not NOT_PROVIDED or hasattr(field, "get_placeholder"):
        raise TypeError(f"{field}: not written by telha.common.rows")
    return field


@functools.cache
def _insert_shape(
    model: type[Model], alias: str, rows: int, with_pk: bool
) -> tuple[str, list[Field], Field | None]:
    meta = model._meta
    if meta.parents:
        raise TypeError(f"{model.__name__}: multi-table inheritance is not written here")
    auto = meta.auto_field
    returning = None if with_pk or auto is None else auto
    if any(f is not auto for f in meta.db_returning_fields):
        raise TypeError(f"{model.__name__}: columns returned on insert are not read here")
    fields = [_writable(f) for f in meta.local_concrete_fields if f is not returning]
    if not with_pk and auto is None:
        raise TypeError(f"{model.__name__}: the primary key must be set before inserting")
    connection = connections[alias]
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    sql = "INSERT INTO {} ({}) VALUES {}".format(
        connection.ops.quote_name(meta.db_table),
        ", ".join(quoted_column(f, connection) for f in fields),
        ", ".join([row] * rows),
    )
    if returning is not None:
        sql += f" RETURNING {quoted_column(returning, connection)}"
    return sql, fields, returning


@functools.cache
def _update_shape(
    model: type[Model], alias: str, fields: tuple[str, ...], where_null: tuple[str, ...]
) -> tuple[str, list[Field]]:
    meta = model._meta
    targets = [f for f in map(meta.get_field, fields) if isinstance(f, Field)]
    if (
        len(targets) != len(fields)
        or not targets
        or any(f.primary_key or not f.concrete for f in targets)
    ):
        raise TypeError(f"{model.__name__}: only concrete non-key fields are updated here")
    connection = connections[alias]
    conditions = [f"{quoted_column(meta.pk, connection)} = %s"]
    conditions += [f"{quoted_column(meta.get_field(n), connection)} IS NULL" for n in where_null]
    sql = "UPDATE {} SET {} WHERE {}".format(
        connection.ops.quote_name(meta.db_table),
        ", ".join(f"{quoted_column(_writable(f), connection)} = %s" for f in targets),
        " AND ".join(conditions),
    )
    return sql, targets


class RowColumns:
    """The columns of `model` under `table` (a table name or alias) in a hand-written
    SELECT (`sql`), and the instance read back from its slice of a result row
    (`instance`), converted by the same backend and field converters the ORM's
    compiler applies (JSON, UUIDs on SQLite, datetimes, booleans)."""

    def __init__(self, model: type[Model], table: str, alias: str) -> None:
        connection = connections[alias]
        ops = connection.ops
        self.model = model
        self.alias = alias
        self.fields = list(model._meta.concrete_fields)
        self.attnames = [f.attname for f in self.fields]
        self.sql = ", ".join(quoted_column(f, connection, table) for f in self.fields)
        self.width = len(self.fields)
        self._pk_index = self.fields.index(model._meta.pk)
        self._converters: list[tuple[int, list[Any], Any]] = []
        for i, field in enumerate(self.fields):
            col = field.get_col(table)
            found = ops.get_db_converters(col) + col.get_db_converters(connection)
            if found:
                self._converters.append((i, found, col))

    def instance(self, values: Sequence[Any]) -> Model | None:
        """The instance of `values` (this model's slice of the row), or None when its
        primary key is NULL (no row on that side of an outer join)."""
        if values[self._pk_index] is None:
            return None
        row = list(values)
        connection = connections[self.alias]
        for i, converters, col in self._converters:
            value = row[i]
            for convert in converters:
                value = convert(value, col, connection)
            row[i] = value
        return self.model.from_db(self.alias, self.attnames, row)


@functools.cache
def row_columns(model: type[Model], table: str, alias: str) -> RowColumns:
    """`RowColumns` of `model` under `table`, built once per process."""
    return RowColumns(model, table, alias)
