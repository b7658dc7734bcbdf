"""The answer's literal SQL: the statements of every answer whose compilation by the ORM
cost a multiple of running them. Each is written next to the ORM call it replaces (in
its comment) and compared with that call on SQLite and PostgreSQL by
`tests/clarify/test_sql.py` (why each is here, with its figure: docs/design-decisions.md,
"Hot statements"); table and column names come from the models' `_meta`
(`common.sql`). Services call these functions and never hold a cursor."""

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from django.db import connections, router
from django.db.models import Model
from django.utils import timezone

from common.sql import column, columns, field, quoted, table
from graph.access import caller_source_readable_sql
from graph.models import Node, NodeVersion
from tenancy.auth import Caller
from tenancy.models import Tenant

from .models import AuditEvent, Clarification, ResponseRecord

# --- the lock: clarification, target, current version --------------------------------------

# The columns the lock reads of each model: all of them, in the model's field order.
LOCKED: dict[type[Model], tuple[str, ...]] = {
    model: tuple(f.column for f in model._meta.concrete_fields)
    for model in (Clarification, Node, NodeVersion)
}
_ALIASES = {Clarification: "c", Node: "n", NodeVersion: "v"}

# The lock, literal: the clarification (c), its target (n) and the target's current
# version (v, NULLs when it has none), the `readable` flag last; locks c then n. The ORM
# read it replaces — `Clarification.objects.select_related("target")
# .select_for_update(of=("self", "target")).get(tenant=tenant, pk=pk)` and
# `node_current_version(target)` — cost a multiple of running it to compile anew (the
# figure: docs/design-decisions.md, "Hot statements"). {readable}: the read rule's
# condition; {lock}: FOR UPDATE OF c, n where the database has it.
LOCK_SQL = (
    "SELECT "
    + ", ".join(
        f"{quoted(_ALIASES[model])}.{quoted(name)}"
        for model in (Clarification, Node, NodeVersion)
        for name in LOCKED[model]
    )
    + ", CASE WHEN {readable} THEN 1 ELSE 0 END"
    + f" FROM {table(Clarification)} {quoted('c')}"
    + f" INNER JOIN {table(Node)} {quoted('n')}"
    + f" ON ({column(Clarification, 'target', 'c')} = {column(Node, 'id', 'n')})"
    + f" LEFT OUTER JOIN {table(NodeVersion)} {quoted('v')}"
    + f" ON ({column(Node, 'id', 'n')} = {column(NodeVersion, 'node', 'v')}"
    + f" AND {column(NodeVersion, 'tx_to', 'v')} IS NULL)"
    + f" WHERE {column(Clarification, 'tenant', 'c')} = %s"
    + f" AND {column(Clarification, 'id', 'c')} = %s{{lock}}"
)


@dataclass(frozen=True)
class LockedRow:
    """What the lock read: the clarification with its target, the target's current
    version (None when it has none), and whether the caller may read the source."""

    clarification: Clarification
    current: NodeVersion | None
    readable: bool


def clarification_lock_read(
    tenant: Tenant, clarification_pk: Any, readable_by: Caller | None
) -> LockedRow | None:
    """The clarification `clarification_pk` of `tenant` locked with its target node
    (`LOCK_SQL`), its target's current version, and — with `readable_by` — whether that
    caller may read its source (the one read rule, as a column); None: no such row."""
    connection = connections[router.db_for_write(Clarification)]
    readable, acl_params = "1 = 1", list[Any]()
    if readable_by is not None:
        source = column(Node, "source", "n")
        readable, acl_params = caller_source_readable_sql(readable_by, source, connection)
    lock = " FOR UPDATE OF c, n" if connection.features.has_select_for_update_of else ""
    params = [
        *acl_params,
        field(Tenant, "id").get_db_prep_value(tenant.pk, connection),
        field(Clarification, "id").get_db_prep_value(clarification_pk, connection),
    ]
    with connection.cursor() as cursor:
        cursor.execute(LOCK_SQL.format(readable=readable, lock=lock), params)
        row = cursor.fetchone()
    if row is None:
        return None
    a, b = len(LOCKED[Clarification]), len(LOCKED[Clarification]) + len(LOCKED[Node])
    clar = cast(Clarification, _loaded(Clarification, row[:a], connection))
    clar.target = cast(Node, _loaded(Node, row[a:b], connection))
    current = cast(NodeVersion | None, _loaded(NodeVersion, row[b:-1], connection))
    return LockedRow(clar, current, bool(row[-1]))


def _loaded(model: type[Model], values: Sequence[Any], connection: Any) -> Model | None:
    """The instance of `model` read from its columns' `values` (None when its key is NULL:
    no row on that side of the outer join), each value converted by the converters the
    ORM's compiler applies to that column (JSON, UUIDs on SQLite, datetimes, booleans)."""
    if values[0] is None:
        return None
    row = list(values)
    for i, converters, col in _converters(model, connection.alias):
        for convert in converters:
            row[i] = convert(row[i], col, connection)
    return model.from_db(connection.alias, LOCKED[model], row)  # attnames: the columns


@functools.cache
def _converters(model: type[Model], alias: str) -> list[tuple[int, list[Any], Any]]:
    connection = connections[alias]
    found = []
    for i, concrete in enumerate(model._meta.concrete_fields):
        col = concrete.get_col(model._meta.db_table)
        converters = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
        if converters:
            found.append((i, converters, col))
    return found


# --- the answer's update of the clarification ---------------------------------------------

ANSWER_FIELDS = ("state", "quorum_state", "fact_version_tx", "responses_recorded", "updated_at")

# The answer's update of the clarification, literal. The ORM call it replaces:
# `clar.save(update_fields=ANSWER_FIELDS)`.
ANSWER_UPDATE_SQL = (
    f"UPDATE {table(Clarification)} SET "
    + ", ".join(f"{column(Clarification, name)} = %s" for name in ANSWER_FIELDS)
    + f" WHERE {column(Clarification, 'id')} = %s"
)


def clarification_answer_update(clar: Clarification) -> None:
    """Write the answer's fields of `clar` (`ANSWER_UPDATE_SQL`), `updated_at` stamped now
    on the object and in the row, as `save()` stamps `auto_now`."""
    connection = connections[router.db_for_write(Clarification)]
    clar.updated_at = timezone.now()
    params = [
        field(Clarification, name).get_db_prep_save(getattr(clar, name), connection)
        for name in (*ANSWER_FIELDS, "id")
    ]
    with connection.cursor() as cursor:
        cursor.execute(ANSWER_UPDATE_SQL, params)


# --- the answer's response record ---------------------------------------------------------

# The response record's insert, literal: every column. The ORM call it replaces:
# `record.save(force_insert=True)`.
_RESPONSE_FIELDS = tuple(f.name for f in ResponseRecord._meta.concrete_fields)
RESPONSE_INSERT_SQL = (
    f"INSERT INTO {table(ResponseRecord)} ({columns(ResponseRecord, _RESPONSE_FIELDS)})"
    f" VALUES ({', '.join(['%s'] * len(_RESPONSE_FIELDS))})"
)


def response_insert(record: ResponseRecord) -> None:
    """Insert the response record (`RESPONSE_INSERT_SQL`; its key is set already) and mark
    it saved."""
    connection = connections[router.db_for_write(ResponseRecord)]
    params = [
        f.get_db_prep_save(getattr(record, f.attname), connection)
        for f in (field(ResponseRecord, name) for name in _RESPONSE_FIELDS)
    ]
    with connection.cursor() as cursor:
        cursor.execute(RESPONSE_INSERT_SQL, params)
    record._state.adding, record._state.db = False, connection.alias


# --- audit events ------------------------------------------------------------------------

_EVENT_FIELDS = (
    "tenant",
    "clarification",
    "at",
    "type",
    "detail",
    "seq",
    "salt",
    "commitment",
    "prev_hash",
    "hash",
)
EVENTS_PER_STATEMENT = 100

# The audit events' insert, literal (every answer appends its events): one row of
# placeholders an event, the keys returned in row order. The ORM call it replaces:
# `AuditEvent.objects.bulk_create(events)`. {rows}: one (%s, %s, %s, %s, %s) an event.
EVENTS_INSERT_SQL = (
    f"INSERT INTO {table(AuditEvent)} ({columns(AuditEvent, _EVENT_FIELDS)})"
    + " VALUES {rows}"
    + f" RETURNING {column(AuditEvent, 'id')}"
)


def audit_events_insert(events: Iterable[AuditEvent]) -> None:
    """Insert `events` in order, EVENTS_PER_STATEMENT a statement (`EVENTS_INSERT_SQL`):
    each gets its key (ascending with the order) and is marked saved, as `bulk_create`
    does."""
    events = list(events)
    connection = connections[router.db_for_write(AuditEvent)]
    fields = [field(AuditEvent, name) for name in _EVENT_FIELDS]
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    for start in range(0, len(events), EVENTS_PER_STATEMENT):
        chunk = events[start : start + EVENTS_PER_STATEMENT]
        params = [
            f.get_db_prep_save(getattr(event, f.attname), connection)
            for event in chunk
            for f in fields
        ]
        sql = EVENTS_INSERT_SQL.format(rows=", ".join([row] * len(chunk)))
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            for event, (pk,) in zip(chunk, cursor.fetchall(), strict=True):
                event.pk = pk
                event._state.adding, event._state.db = False, connection.alias
