"""Names for the apps' literal SQL (`clarify.sql`, `delivery.sql`, `graph.sql`,
`jobs.sql`): a table's and a column's name taken from the model's `_meta`, never
spelled out, quoted as standard SQL quotes identifiers (both databases Telha runs on).

Also the few maintenance statements of the project itself (the health probe, SQLite's
pragmas and WAL checkpoint, PostgreSQL's VACUUM), so no module but a `sql.py` holds a
cursor."""

from collections.abc import Iterable
from typing import Any, cast

from django.db.models import Field, Model


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def field(model: type[Model], name: str) -> "Field[Any, Any]":
    """The model's concrete field `name` (a relation by its name: `tenant`)."""
    return cast("Field[Any, Any]", model._meta.get_field(name))


def table(model: type[Model]) -> str:
    """The model's table, quoted."""
    return quoted(model._meta.db_table)


def column(model: type[Model], name: str, alias: str = "") -> str:
    """The column of the model's field `name` (`tenant`: its `tenant_id`), quoted, after
    the table alias when given."""
    quoted_column = quoted(field(model, name).column)
    return f"{quoted(alias)}.{quoted_column}" if alias else quoted_column


def columns(model: type[Model], names: Iterable[str], alias: str = "") -> str:
    """`column` of each of `names`, comma-separated."""
    return ", ".join(column(model, name, alias) for name in names)


def database_ping(connection: Any) -> None:
    """`SELECT 1` on `connection`: raises `DatabaseError` when the database does not
    answer (the health probe)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def sqlite_pragma(connection: Any, name: str, value: int | None = None) -> Any:
    """SQLite's `PRAGMA name` (its first row), or `PRAGMA name = value` when given.
    `name` is one of the module's own, never input."""
    with connection.cursor() as cursor:
        if value is None:
            cursor.execute(f"PRAGMA {name}")
            return cursor.fetchone()
        cursor.execute(f"PRAGMA {name} = {int(value)}")
        return None


def wal_checkpoint(connection: Any) -> tuple[int, int, int]:
    """SQLite's `PRAGMA wal_checkpoint(TRUNCATE)`: (busy, frames, checkpointed)."""
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        busy, frames, copied = cursor.fetchone()
    return int(busy), int(frames), int(copied)


def tables_vacuum(connection: Any, tables: Iterable[str]) -> None:
    """PostgreSQL's `VACUUM` of each of `tables` (outside a transaction)."""
    with connection.cursor() as cursor:
        for name in tables:
            cursor.execute(f"VACUUM {connection.ops.quote_name(name)}")
