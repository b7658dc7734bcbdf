"""The DDL of the fact search index (graph.search), shared by the migration that
installs it and the post-migrate check that keeps it whole (kept stable: a migration
imports it).

SQLite rebuilds a table to alter it (Django's "remake table"), which drops the table's
triggers: after every `migrate`, `fts_ensure` re-creates any trigger that is missing and
then rebuilds the index from `search_text`, so a later migration of NodeVersion can never
leave the index silently stale.
"""

from typing import Any

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
