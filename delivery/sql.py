"""The delivery worker's literal SQL: a statement whose compilation by the ORM cost a
multiple of running it, with the ORM call it replaces in its comment and compared with
it by `tests/delivery/test_sql.py`. Table and column names come from the models' `_meta`
(`common.sql`); callers use the function, never a cursor."""

from django.db import connections, router, transaction

from common.sql import column, field, table

from .models import Delivery

# The columns a send writes on its row.
SENT_FIELDS = ("status", "message_ref", "sent_at", "redacted")

# A sent row's outcome, one UPDATE a row. The ORM call it replaces,
# `Delivery.objects.bulk_update(rows, SENT_FIELDS)`, builds a CASE WHEN per row and field
# (what that cost: docs/design-decisions.md, "Hot statements").
SENT_SQL = (
    f"UPDATE {table(Delivery)} SET "
    + ", ".join(f"{column(Delivery, f)} = %s" for f in SENT_FIELDS)
    + f" WHERE {column(Delivery, 'id')} = %s"
)


def sent_rows_write(rows: list[Delivery]) -> None:
    """Each sent row's status, message reference, send time and redaction (`SENT_SQL`),
    all of them in one `executemany` (psycopg pipelines it: one round trip), in a
    transaction of their own unless in the caller's."""
    connection = connections[router.db_for_write(Delivery)]
    fields = [field(Delivery, name) for name in (*SENT_FIELDS, "id")]
    params = [
        [f.get_db_prep_save(getattr(row, f.attname), connection) for f in fields] for row in rows
    ]
    atomic = transaction.atomic(using=connection.alias, savepoint=False)
    with atomic, connection.cursor() as cursor:
        cursor.executemany(SENT_SQL, params)
