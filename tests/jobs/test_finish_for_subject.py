"""`jobs_finish_for_subject`: completes the open jobs of one kind about one subject, in one
statement, and never waits for a job row another transaction holds (PostgreSQL)."""

import threading

import pytest
from django.db import connection, transaction

from jobs.models import Job, JobStatus
from jobs.services import jobs_finish_for_subject

from .conftest import postgres_only

KIND = "clarify:temporal"


def _statuses(jobs):
    return [Job.objects.get(pk=j.pk).status for j in jobs]


def _lease(job):
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.LEASED,
        lease_token="6f1f8a4e-9b0c-4f57-8d4e-0e7c0b7f2a11",
        lease_expires_at=job.run_after,
    )


@pytest.mark.django_db
def test_finishes_the_open_jobs_of_the_subject_and_nothing_else(enqueue):
    pending, leased, dead = enqueue(KIND, 3, subject="clar-1")
    _lease(leased)
    Job.objects.filter(pk=dead.pk).update(status=JobStatus.DEAD, last_error="gone")
    [other_subject] = enqueue(KIND, subject="clar-2")
    [other_kind] = enqueue("ingest:bulk", subject="clar-1")

    assert jobs_finish_for_subject(kind=KIND, subject="clar-1", reason="answered") == 2

    for job in (pending, leased):
        row = Job.objects.get(pk=job.pk)
        assert (row.status, row.last_error) == ("done", "answered")
        assert (row.lease_token, row.lease_expires_at) == (None, None)
    dead_row = Job.objects.get(pk=dead.pk)
    assert (dead_row.status, dead_row.last_error) == ("dead", "gone")
    assert _statuses([other_subject, other_kind]) == ["pending", "pending"]
    # Nothing left to finish: a second call changes nothing.
    assert jobs_finish_for_subject(kind=KIND, subject="clar-1", reason="again") == 0
    assert Job.objects.get(pk=pending.pk).last_error == "answered"


@pytest.mark.postgres
@postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_job_row_held_elsewhere_is_skipped_not_waited_for(enqueue):
    held, free = enqueue(KIND, 2, subject="clar-held")
    locked, release, done = threading.Event(), threading.Event(), threading.Event()

    def holder():
        try:
            with transaction.atomic():
                Job.objects.select_for_update().get(pk=held.pk)
                locked.set()
                release.wait(timeout=30)
        finally:
            connection.close()
            done.set()

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert locked.wait(timeout=30)
        with transaction.atomic():
            finished = jobs_finish_for_subject(kind=KIND, subject="clar-held", reason="answered")
        assert finished == 1
        assert _statuses([held, free]) == ["pending", "done"]
    finally:
        release.set()
        thread.join(timeout=30)
    assert done.is_set()


def _finish_with_the_orm(kind, subject, reason):
    """The ORM query `FINISH_SQL` replaces."""
    open_jobs = Job.objects.filter(
        kind=kind, subject=subject, status__in=[JobStatus.PENDING, JobStatus.LEASED]
    )
    if connection.features.has_select_for_update_skip_locked:
        open_jobs = open_jobs.select_for_update(skip_locked=True)
    return Job.objects.filter(pk__in=open_jobs.values("pk")).update(
        status=JobStatus.DONE, lease_token=None, lease_expires_at=None, last_error=reason
    )


def _after(finish):
    """Every job row after `finish()`, and its count; rolled back."""
    with transaction.atomic():
        count = finish()
        rows = list(Job.objects.order_by("pk").values())
        transaction.set_rollback(True)
    return count, rows


@pytest.mark.django_db
def test_the_literal_statement_writes_what_the_orm_query_writes(enqueue):
    _pending, leased, dead = enqueue(KIND, 3, subject="clar-1")
    _lease(leased)
    Job.objects.filter(pk=dead.pk).update(status=JobStatus.DEAD, last_error="gone")
    enqueue(KIND, subject="clar-2")
    enqueue("ingest:bulk", subject="clar-1")
    args = {"kind": KIND, "subject": "clar-1", "reason": "answered"}

    orm = _after(lambda: _finish_with_the_orm(**args))
    literal = _after(lambda: jobs_finish_for_subject(**args))

    assert orm[0] == 2
    assert literal == orm
