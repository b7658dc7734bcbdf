"""Making deleted and overwritten rows unrecoverable from the database's own files.

A database keeps what a `DELETE` or `UPDATE` removed: SQLite leaves it in freed pages,
in the free space inside pages and in its write-ahead log until those are overwritten;
PostgreSQL leaves dead tuples in the table until `VACUUM` makes their space reusable. An
erasure wraps its transaction in `secure_delete()` and calls `storage_reclaim()` for the
tables it changed:

- SQLite: `PRAGMA secure_delete = ON` for the transaction (SQLite overwrites the content
  it deletes with zeros, in freed pages and inside pages alike), then, once it has
  committed, `PRAGMA wal_checkpoint(TRUNCATE)`: every page is written back to the
  database file and the log is emptied, so neither file holds the old bytes. A reader
  of another connection can block it: it is retried CHECKPOINT_ATTEMPTS times with a
  doubling pause, and if still blocked `Reclaim.pending` says so (SQLite's automatic
  checkpoints never truncate the log, so the erased bytes may stay in it).
- PostgreSQL: `VACUUM` of each table, once the transaction has committed (it cannot run
  inside one): the dead tuples are removed and their space marked free. Until then, and in
  PostgreSQL's WAL, base backups and the free space of data pages until it is reused, the
  old bytes remain on disk, unreachable by any query.
"""

import contextlib
import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from django.db import connections, transaction

from .sql import sqlite_pragma, tables_vacuum, wal_checkpoint

log = logging.getLogger(__name__)

CHECKPOINT_ATTEMPTS = 5
CHECKPOINT_FIRST_PAUSE = 0.05  # seconds, doubled after each blocked attempt (~1.5 s in all)


@dataclass
class Reclaim:
    """What `storage_reclaim` did once the transaction committed: `pending` is true when
    SQLite's WAL checkpoint was still blocked by a reader after every attempt."""

    ran: bool = False
    pending: bool = False


@contextlib.contextmanager
def secure_delete(using: str = "default") -> Iterator[None]:
    """On SQLite, `PRAGMA secure_delete = ON` on the connection for the duration (the
    previous setting is restored); elsewhere nothing. Enter it before the transaction."""
    connection = connections[using]
    if connection.vendor != "sqlite":
        yield
        return
    previous = int(sqlite_pragma(connection, "secure_delete")[0])
    sqlite_pragma(connection, "secure_delete", 1)
    try:
        yield
    finally:
        sqlite_pragma(connection, "secure_delete", previous)


def storage_reclaim(tables: Iterable[str], using: str = "default") -> Reclaim:
    """Once the current transaction commits (now, outside one): SQLite's WAL checkpointed
    and truncated, or PostgreSQL's `tables` vacuumed. Inside a transaction that never
    commits for real (a test's), nothing runs. The `Reclaim` returned is filled in then."""
    names = sorted(set(tables))
    outcome = Reclaim()
    transaction.on_commit(lambda: _reclaim(names, using, outcome), using=using)
    return outcome


def _reclaim(tables: list[str], using: str, outcome: Reclaim) -> None:
    connection = connections[using]
    if connection.in_atomic_block:
        # Still inside an outer transaction (a test's, which never commits): neither a
        # checkpoint nor VACUUM can see the erasure as committed.
        log.info("storage reclaim skipped: still inside a transaction")
        return
    outcome.ran = True
    if connection.vendor == "sqlite":
        outcome.pending = not _checkpoint(connection)
    elif connection.vendor == "postgresql":
        tables_vacuum(connection, tables)


def _checkpoint(connection: Any) -> bool:
    """`PRAGMA wal_checkpoint(TRUNCATE)`, retried while a reader blocks it; False when it
    was still blocked at the last attempt."""
    pause = CHECKPOINT_FIRST_PAUSE
    for attempt in range(1, CHECKPOINT_ATTEMPTS + 1):
        busy, frames, copied = wal_checkpoint(connection)
        if not busy:
            return True
        if attempt < CHECKPOINT_ATTEMPTS:
            time.sleep(pause)
            pause *= 2
    log.warning(
        "storage reclaim: the WAL checkpoint was blocked by a reader %s times "
        "(%s of %s frames copied); the erased bytes may stay in the log",
        CHECKPOINT_ATTEMPTS,
        copied,
        frames,
    )
    return False
