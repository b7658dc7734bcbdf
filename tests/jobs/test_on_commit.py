"""Tasks are enqueued to django-q2 only with `transaction.on_commit` (issue "django-q2 as
the executor"; STYLE: no `async_task()` inside an open transaction): nothing is queued
before the commit, exactly the kick after it, nothing after a rollback. Dispatch is on here
(the test settings turn it off); the kicks are routed per audience."""

from functools import partial

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django_q.models import OrmQ

from jobs import dispatch
from jobs.models import Job
from jobs.services import job_enqueue

from .conftest import post, submission
from .handlers import complete_handler

ROUTES = {"clarify": "telha-clarify", "ingest": "telha-ingest"}
DOCUMENT = b"---\ntitle: NDA\n---\nThis NDA is effective from the start of next month.\n"


class Rollback(Exception):
    pass


@pytest.fixture(autouse=True)
def dispatch_on(settings, tmp_path):
    settings.JOBS_DISPATCH = True
    settings.JOB_CLUSTER_FOR_AUDIENCE = ROUTES
    settings.MEDIA_ROOT = str(tmp_path / "media")


def queued() -> list[tuple[str, str, tuple]]:
    return [(q.key, q.task["func"], q.task["args"]) for q in OrmQ.objects.order_by("id")]


def _submit(client, n: int = 0):
    body = submission(external_id=f"contracts/on-commit-{n}.docx", links=[("AUTHORED_BY", "alice")])
    return post(client, "/v1/submissions", body)


def _upload(client):
    return client.post(
        "/v1/documents", {"file": SimpleUploadedFile("nda.md", DOCUMENT)}, format="multipart"
    )


# ---------------------------------------------------------------------------------------
# Captured callbacks (the test's transaction never commits: callbacks run by hand)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("call", "kind", "queue"),
    [
        (_submit, "clarify:temporal", "telha-clarify"),  # clarify/services.py, via ingest
        (_upload, "ingest:document", "telha-ingest"),  # ingest/uploads.py
    ],
)
def test_the_kick_waits_for_the_commit(
    ingest_client, people, django_capture_on_commit_callbacks, call, kind, queue
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        resp = call(ingest_client)
        assert resp.status_code in (201, 202), resp.content
        assert Job.objects.filter(kind=kind).count() == 1
        assert queued() == []  # the job row is written, the cluster not yet woken
    assert queued() == []
    for callback in callbacks:  # the kick, and /metrics counting the audit events
        callback()
    assert queued() == [(queue, "jobs.tasks.work", (kind,))]


@pytest.mark.django_db
def test_a_refused_submission_kicks_nothing(
    ingest_client, people, django_capture_on_commit_callbacks
):
    body = submission(external_id="contracts/refused.docx", links=[("AUTHORED_BY", "alice")])
    body["ambiguities"][0]["candidates"] = []  # invalid: refused before anything is written
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        resp = post(ingest_client, "/v1/submissions", body)
    assert resp.status_code == 422, resp.content
    assert callbacks == []
    assert queued() == [] and not Job.objects.exists()


@pytest.mark.django_db
def test_a_rolled_back_enqueue_kicks_nothing(
    ingest_client, people, django_capture_on_commit_callbacks
):
    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(Rollback),
        transaction.atomic(),
    ):
        assert _submit(ingest_client).status_code == 201
        assert _upload(ingest_client).status_code == 202
        assert Job.objects.count() == 2
        raise Rollback
    assert callbacks == []
    assert queued() == [] and not Job.objects.exists()


# ---------------------------------------------------------------------------------------
# Real commits and rollbacks


@pytest.mark.django_db(transaction=True)
def test_job_enqueue_and_its_kick_commit_together(workspace, settings, job_kinds):
    """The documented pattern (`job_enqueue` docstring): enqueue inside the transaction,
    kick with `transaction.on_commit`."""
    job_kinds("ingest:rec", handler=complete_handler)
    with transaction.atomic():
        job_enqueue(tenant=workspace, kind="ingest:rec", payload={})
        transaction.on_commit(partial(dispatch.kick, "ingest:rec"))
        assert queued() == []
    assert queued() == [("telha-ingest", "jobs.tasks.work", ("ingest:rec",))]

    OrmQ.objects.all().delete()
    with pytest.raises(Rollback), transaction.atomic():
        job_enqueue(tenant=workspace, kind="ingest:rec", payload={})
        transaction.on_commit(partial(dispatch.kick, "ingest:rec"))
        raise Rollback
    assert queued() == []
    assert Job.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_submission_kicks_once_its_transaction_commits(ingest_client, people):
    with transaction.atomic():
        assert _submit(ingest_client, 1).status_code == 201
        assert queued() == []
    assert queued() == [("telha-clarify", "jobs.tasks.work", ("clarify:temporal",))]

    with pytest.raises(Rollback), transaction.atomic():
        assert _submit(ingest_client, 2).status_code == 201
        raise Rollback
    assert len(queued()) == 1
    assert Job.objects.filter(kind="clarify:temporal").count() == 1
