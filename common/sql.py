"""Names for the apps' literal SQL (`clarify.sql`, `delivery.sql`, `graph.sql`,
`jobs.sql`): a table's and a column's name taken from the model's `_meta`, never
spelled out, quoted as standard SQL quotes identifiers (both databases Telha runs on)."""

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
