"""`jobs_complete_batch`: a worker finishing a leased batch in one UPDATE per token.

Runs on whichever database the suite runs on (SQLite locally, PostgreSQL in CI)."""

import pytest

from jobs.models import Job, JobStatus
from jobs.services import job_complete, job_enqueue, job_lease, jobs_complete_batch
from tenancy.models import Tenant

pytestmark = pytest.mark.django_db

KIND = "ingest:noop"


def lease(n: int, tenant=None):
    return job_lease(tenant=tenant, audience="ingest", kinds=[KIND], max_jobs=n, holder="w1")


def enqueue(tenant, n: int) -> list[Job]:
    return [job_enqueue(tenant=tenant, kind=KIND, payload={"i": i}) for i in range(n)]


def back_to_pending(*ids) -> None:
    """What the reaper does to an expired lease (minus the backoff), so it can be re-leased."""
    Job.objects.filter(pk__in=ids).update(
        status=JobStatus.PENDING, lease_token=None, lease_expires_at=None
    )


def test_completes_the_whole_batch_in_one_call(workspace):
    enqueue(workspace, 5)
    leases = lease(5)
    assert len(leases) == 5 and len({x.token for x in leases}) == 1

    assert jobs_complete_batch(tenant=workspace, leases=leases) == 5

    jobs = Job.objects.filter(pk__in=[x.job.pk for x in leases])
    assert {j.status for j in jobs} == {JobStatus.DONE}
    assert all(j.lease_token is None and j.lease_expires_at is None for j in jobs)


def test_stale_token_changes_nothing(workspace):
    enqueue(workspace, 3)
    stale = lease(3)
    back_to_pending(*[x.job.pk for x in stale])
    fresh = lease(3)
    assert {x.job.pk for x in fresh} == {x.job.pk for x in stale}
    before = {j.pk: (j.status, j.lease_token, j.updated_at) for j in Job.objects.all()}

    assert jobs_complete_batch(tenant=None, leases=stale) == 0

    after = {j.pk: (j.status, j.lease_token, j.updated_at) for j in Job.objects.all()}
    assert after == before
    assert {s for s, _, _ in after.values()} == {JobStatus.LEASED}
    assert jobs_complete_batch(tenant=None, leases=fresh) == 3


def test_only_jobs_still_held_change(workspace):
    enqueue(workspace, 4)
    leases = sorted(lease(4), key=lambda x: x.job.pk)
    lost = leases[0].job.pk
    back_to_pending(lost)
    relet = lease(1)
    assert [x.job.pk for x in relet] == [lost]

    assert jobs_complete_batch(tenant=workspace, leases=leases) == 3

    assert Job.objects.get(pk=lost).status == JobStatus.LEASED
    assert Job.objects.get(pk=lost).lease_token == relet[0].token
    assert Job.objects.filter(status=JobStatus.DONE).count() == 3


def test_done_jobs_are_not_completed_twice(workspace):
    enqueue(workspace, 2)
    leases = lease(2)
    job_complete(tenant=None, job_id=leases[0].job.pk, token=leases[0].token)

    assert jobs_complete_batch(tenant=None, leases=leases) == 1
    assert jobs_complete_batch(tenant=None, leases=leases) == 0


def test_another_tenant_changes_nothing(workspace):
    other = Tenant.objects.create(slug="other", name="Other")
    enqueue(workspace, 2)
    leases = lease(2)

    assert jobs_complete_batch(tenant=other, leases=leases) == 0
    assert Job.objects.filter(status=JobStatus.LEASED).count() == 2
    assert jobs_complete_batch(tenant=workspace, leases=leases) == 2


def test_several_tokens_and_an_empty_batch(workspace):
    enqueue(workspace, 4)
    first, second = lease(2), lease(2)
    assert first[0].token != second[0].token

    assert jobs_complete_batch(tenant=None, leases=[*first, *second]) == 4
    assert jobs_complete_batch(tenant=None, leases=[]) == 0
    assert not Job.objects.exclude(status=JobStatus.DONE).exists()
