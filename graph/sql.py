"""The fact store's literal SQL: the statement of every version write whose compilation by
the ORM cost a multiple of running it, with the ORM call it replaces in its comment and
compared with it by `tests/graph/test_sql.py`. Names come from the models' `_meta`
(`common.sql`); services call the function, never a cursor."""

from django.db import connections, router

from common.sql import column, table

from .models import NodeVersion

# The hot statement of every version write (binding included), literal: the ORM's
# `NodeVersion.objects.filter(pk__in=pks, tx_to__isnull=True).update(tx_to=tx)` (what
# compiling it cost: docs/design-decisions.md, "Hot statements"). {keys}: one %s per
# version.
VERSIONS_CLOSE_SQL = (
    f"UPDATE {table(NodeVersion)} SET {column(NodeVersion, 'tx_to')} = %s"
    f" WHERE {column(NodeVersion, 'tx_to')} IS NULL AND {column(NodeVersion, 'id')}"
    " IN ({keys})"
)


def versions_close(pks: list[int], tx: int) -> int:
    """Close the current versions `pks` at `tx` (those still current: `VERSIONS_CLOSE_SQL`);
    how many closed. Nothing to close runs nothing."""
    if not pks:
        return 0
    sql = VERSIONS_CLOSE_SQL.format(keys=", ".join(["%s"] * len(pks)))
    with connections[router.db_for_write(NodeVersion)].cursor() as cursor:
        cursor.execute(sql, [tx, *pks])
        return int(cursor.rowcount)
