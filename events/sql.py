"""The chain head's literal SQL. On SQLite every appended batch of audit events runs it,
inside the appending transaction: lock the tenant's head row, create it when the tenant
has none, move it. On PostgreSQL the database links each event as it is inserted (the
trigger `events_chain_link`, installed by migration events 0003) and the append runs
none of it. Names from the model's
`_meta` (`common.sql`)."""

from typing import Any

from django.db import connections, router

from common.chain import GENESIS
from common.sql import column, field, table

from .models import ChainHead

_LOCK_SQL = (
    f"SELECT {column(ChainHead, 'seq')}, {column(ChainHead, 'hash')} FROM {table(ChainHead)}"
    f" WHERE {column(ChainHead, 'tenant')} = %s{{lock}}"
)
_CREATE_SQL = (
    f"INSERT INTO {table(ChainHead)}"
    f" ({column(ChainHead, 'tenant')}, {column(ChainHead, 'seq')}, {column(ChainHead, 'hash')})"
    f" VALUES (%s, 0, %s) ON CONFLICT DO NOTHING"
)
_MOVE_SQL = (
    f"UPDATE {table(ChainHead)} SET {column(ChainHead, 'seq')} = %s,"
    f" {column(ChainHead, 'hash')} = %s WHERE {column(ChainHead, 'tenant')} = %s"
)


def linked_on_insert() -> bool:
    """Whether the database links the audit events as they are inserted (PostgreSQL's
    trigger); otherwise the append links them (`events.chain.chain_events`)."""
    return connections[router.db_for_write(ChainHead)].vendor == "postgresql"


def _tenant_param(tenant_id: Any, connection: Any) -> Any:
    return field(ChainHead, "tenant").get_db_prep_value(tenant_id, connection)


def chain_head_lock(tenant_id: Any) -> tuple[int, str]:
    """The tenant's chain head (seq, hash), its row locked until the transaction
    ends (`FOR UPDATE` where the database has it; SQLite's IMMEDIATE transaction is the
    only writer already). A tenant without one gets one at the genesis (0, zeros)."""
    connection = connections[router.db_for_write(ChainHead)]
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    tenant = _tenant_param(tenant_id, connection)
    with connection.cursor() as cursor:
        cursor.execute(_LOCK_SQL.format(lock=lock), [tenant])
        row = cursor.fetchone()
        if row is None:
            cursor.execute(_CREATE_SQL, [tenant, GENESIS])
            cursor.execute(_LOCK_SQL.format(lock=lock), [tenant])
            row = cursor.fetchone()
    return int(row[0]), str(row[1])


def chain_head_move(tenant_id: Any, seq: int, hash: str) -> None:
    connection = connections[router.db_for_write(ChainHead)]
    with connection.cursor() as cursor:
        cursor.execute(_MOVE_SQL, [seq, hash, _tenant_param(tenant_id, connection)])
