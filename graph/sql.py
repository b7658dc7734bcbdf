"""The fact store's literal SQL: the statement of every version write whose compilation by
the ORM cost a multiple of running it, with the ORM call it replaces in its comment and
compared with it by `tests/graph/test_sql.py`. Names come from the models' `_meta`
(`common.sql`); services call the function, never a cursor.

Also the fact search index (graph.search): its DDL, shared by the migration that installs
it and the post-migrate check that keeps it whole, and its SQLite queries. The DDL's names
are literal, not from `_meta`: a migration imports it, so it must not follow a later
rename. SQLite rebuilds a table to alter it (Django's "remake table"), which drops the
table's triggers: after every `migrate`, `fts_ensure` re-creates any trigger that is
missing and then rebuilds the index from `search_text`, so a later migration of
NodeVersion can never leave the index silently stale."""

from collections.abc import Sequence
from typing import Any

from django.db import connection as default_connection
from django.db import connections, router
from django.db.models.expressions import RawSQL

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


TABLE = "graph_nodeversion"
FTS = "graph_nodeversion_fts"
PG_COLUMN = "search_vector"
PG_INDEX = "nodeversion_search"

_SQLITE_TABLE = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS} USING fts5(search_text,"
    f" content='{TABLE}', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')"
)
_DELETE_OLD = (
    f"INSERT INTO {FTS}({FTS}, rowid, search_text) VALUES ('delete', old.id, old.search_text);"
)
_INSERT_NEW = f"INSERT INTO {FTS}(rowid, search_text) VALUES (new.id, new.search_text);"
_SQLITE_TRIGGERS = {
    f"{FTS}_insert": f"AFTER INSERT ON {TABLE} BEGIN {_INSERT_NEW} END",
    f"{FTS}_delete": f"AFTER DELETE ON {TABLE} BEGIN {_DELETE_OLD} END",
    f"{FTS}_update": (
        f"AFTER UPDATE OF search_text ON {TABLE} BEGIN {_DELETE_OLD} {_INSERT_NEW} END"
    ),
}


def fts_install(connection: Any) -> None:
    """Create the index and fill it from every version's `search_text`."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS {PG_COLUMN} tsvector"
                f" GENERATED ALWAYS AS (to_tsvector('english'::regconfig, search_text)) STORED"
            )
            cursor.execute(
                f"CREATE INDEX IF NOT EXISTS {PG_INDEX} ON {TABLE} USING gin ({PG_COLUMN})"
            )
        elif connection.vendor == "sqlite":
            cursor.execute(_SQLITE_TABLE)
            for name, body in _SQLITE_TRIGGERS.items():
                cursor.execute(f"CREATE TRIGGER IF NOT EXISTS {name} {body}")
            cursor.execute(f"INSERT INTO {FTS}({FTS}) VALUES ('rebuild')")


def fts_drop(connection: Any) -> None:
    """Remove the index (the migration's reverse)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"DROP INDEX IF EXISTS {PG_INDEX}")
            cursor.execute(f"ALTER TABLE {TABLE} DROP COLUMN IF EXISTS {PG_COLUMN}")
        elif connection.vendor == "sqlite":
            for name in _SQLITE_TRIGGERS:
                cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
            cursor.execute(f"DROP TABLE IF EXISTS {FTS}")


def fts_compact(connection: Any) -> None:
    """On SQLite, merge the index into one b-tree (FTS5's `optimize`). A deleted or
    rewritten version's terms stay in the index's older segments until a merge drops them;
    an erasure runs this inside its `secure_delete` transaction so the freed segments are
    zeroed too. Nothing on PostgreSQL (the tsvector is a column of the row)."""
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = %s", [FTS])
        if cursor.fetchone():
            cursor.execute(f"INSERT INTO {FTS}({FTS}) VALUES ('optimize')")


def fts_ensure(connection: Any) -> bool:
    """On SQLite, once the index's migration has run: re-create a missing trigger (a
    table remake dropped it) and rebuild the index. Returns whether anything was done."""
    if connection.vendor != "sqlite":
        return False
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger') AND name LIKE %s",
            [f"{FTS}%"],
        )
        present = {row[0] for row in cursor.fetchall()}
    if FTS not in present or set(_SQLITE_TRIGGERS) <= present:
        return False
    fts_install(connection)
    return True


def fts_ids(match: str) -> RawSQL:
    """The ids of the versions whose search text matches the FTS5 query `match` (SQLite),
    as a subquery for `pk__in`."""
    return RawSQL(f"SELECT rowid FROM {FTS} WHERE {FTS} MATCH %s", [match])


def fts_ranked(
    match: str, inner: str, params: Sequence[Any], limit: int
) -> list[tuple[Any, float]]:
    """On SQLite, up to `limit` (id, score) of the versions of the subquery `inner` (with
    `params`) matching the FTS5 query `match`, best first (bm25, then node), the score
    positive: higher is better."""
    versions = table(NodeVersion)
    vid, node = column(NodeVersion, "id", "v"), column(NodeVersion, "node", "v")
    sql = (
        f"SELECT {vid}, bm25({FTS}) FROM {FTS}"
        f" JOIN {versions} v ON {vid} = {FTS}.rowid"
        f" WHERE {FTS} MATCH %s AND {vid} IN ({inner})"
        f" ORDER BY bm25({FTS}), {node} LIMIT %s"
    )
    with default_connection.cursor() as cursor:
        cursor.execute(sql, [match, *params, limit])
        return [(pk, -float(score)) for pk, score in cursor.fetchall()]
