"""The lease queue's literal SQL: the statement the answer runs on every binding, whose
compilation by the ORM cost a multiple of running it, with the ORM query it replaces in
its comment and compared with it by `tests/jobs/test_finish_for_subject.py`. Names come
from the model's `_meta` (`common.sql`); services call the function, never a
cursor."""

from django.db import connections, router

from common.sql import column, table

from .models import Job, JobStatus

# Finishing a subject's open jobs, literal. The ORM query it replaces:
#   Job.objects.filter(pk__in=Job.objects.filter(kind=kind, subject=subject,
#       status__in=[PENDING, LEASED]).select_for_update(skip_locked=True).values("pk"))
#   .update(status=DONE, lease_token=None, lease_expires_at=None, last_error=reason)
# (what compiling it cost: docs/design-decisions.md, "Hot statements"). {lock}: FOR
# UPDATE SKIP LOCKED on PostgreSQL; SQLite has one writer at a time.
FINISH_SQL = (
    f"UPDATE {table(Job)} SET {column(Job, 'status')} = %s, {column(Job, 'lease_token')} = NULL,"
    f" {column(Job, 'lease_expires_at')} = NULL, {column(Job, 'last_error')} = %s"
    f" WHERE {column(Job, 'id')} IN (SELECT {column(Job, 'id')} FROM {table(Job)}"
    f" WHERE {column(Job, 'kind')} = %s AND {column(Job, 'subject')} = %s"
    f" AND {column(Job, 'status')} IN (%s, %s){{lock}})"
)


def jobs_finish(*, kind: str, subject: str, reason: str) -> int:
    """`FINISH_SQL`: the pending and leased jobs of `kind` about `subject` done, lease
    cleared, `last_error` the reason; rows another transaction holds skipped. How many."""
    connection = connections[router.db_for_write(Job)]
    skip_locked = connection.features.has_select_for_update_skip_locked
    sql = FINISH_SQL.format(lock=" FOR UPDATE SKIP LOCKED" if skip_locked else "")
    params = [JobStatus.DONE.value, reason[:2000], kind, subject]
    params += [JobStatus.PENDING.value, JobStatus.LEASED.value]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return int(cursor.rowcount)
