"""Lease-queue fixtures: job factories, protocol helpers, row snapshots and a second tenant.

Plain helpers (`post`, `job_rows`, `expire_lease`, …) are importable from this module; the
fixtures bind them to the shared workspace / API-client fixtures of `tests/conftest.py`.
"""

import time
import uuid
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from clarify.models import Clarification
from jobs import policies
from jobs.models import Job, JobStatus
from jobs.services import job_enqueue
from tenancy.services import api_key_create, workspace_load
from tests.conftest import client_for
from tests.submissions import Submission

US = 1_000_000
UPPER_SNAKE = r"^[A-Z][A-Z0-9_]*$"
LEASED_JOB_KEYS = {
    "id",
    "kind",
    "attempts",
    "maxAttempts",
    "payload",
    "leaseToken",
    "leaseExpiresAt",
}

# Clock slack when comparing our clock with the database's (same host, but SQLite rounds
# `Now()` to milliseconds and requests take time).
SLACK = timedelta(milliseconds=250)

postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="needs PostgreSQL (SKIP LOCKED, real concurrency)"
)


def now() -> datetime:
    return datetime.now(UTC)


def now_us() -> int:
    return time.time_ns() // 1000


def post(client: Any, path: str, body: Any = None, **kwargs: Any) -> Any:
    return client.post(path, body if body is not None else {}, format="json", **kwargs)


def lease_http(client: Any, kinds: list[str], **extra: Any) -> Any:
    return post(client, "/v1/jobs/lease", {"kinds": kinds, **extra})


def job_rows() -> list[dict[str, Any]]:
    """Every job row as plain values (a refusal must leave these byte-identical)."""
    return list(Job.objects.order_by("id").values())


def row(job: Any) -> Job:
    return Job.objects.get(pk=job if isinstance(job, int) else job.pk)


def expire_lease(job: Any, seconds_ago: float = 1.0) -> None:
    """Pretend the lease ran out: its expiry moves into the past (the reaper's trigger)."""
    pk = job if isinstance(job, int) else job.pk
    updated = Job.objects.filter(pk=pk, status=JobStatus.LEASED).update(
        lease_expires_at=timezone.now() - timedelta(seconds=seconds_ago)
    )
    assert updated == 1, "only a leased job can expire"


def make_runnable(job: Any) -> None:
    """Skip the backoff: the job's run_after moves into the past."""
    pk = job if isinstance(job, int) else job.pk
    Job.objects.filter(pk=pk).update(run_after=timezone.now() - timedelta(seconds=1))


def wait_until_runnable(job: Any, budget: float = 30.0) -> None:
    """Sleep (for real) until the job's run_after has passed."""
    run_after = row(job).run_after
    delay = (run_after - now()).total_seconds() + 0.05
    assert delay < budget, f"run_after {run_after} is too far away"
    if delay > 0:
        time.sleep(delay)


def assert_error(resp: Any, status: int, code: str) -> None:
    assert resp.status_code == status, resp.content
    body = resp.json()
    assert body["code"] == code, body
    assert isinstance(body.get("detail"), str) and body["detail"], body


def register_test_kind(monkeypatch: pytest.MonkeyPatch, kind: str, **policy: Any) -> None:
    """A kind policy for this test only (the registry is restored by monkeypatch)."""
    monkeypatch.setattr(policies, "_KINDS", dict(policies._KINDS))
    policies.register_kind(kind, lambda: policies.KindPolicy(**policy))


# ---------------------------------------------------------------------------------------
# Submissions that open a clarification (and so its clarify:temporal routing job)

TEXT = (
    "MASTER SERVICES AGREEMENT between Acme and Vendor. This agreement is effective "
    "next quarter and runs until terminated by either party with 90 days notice."
)
CANDIDATES = [
    {"validFrom": 1790812800000000, "validTo": None, "label": "1 Oct 2026", "spanRef": 0},
    {"validFrom": 1782864000000000, "validTo": None, "label": "1 Jul 2026"},
]


def submission(
    *,
    external_id: str,
    links: list[tuple[str, str]],
    severity_hint: str | None = None,
) -> dict[str, Any]:
    """A submission with one CONTRACT_TERM fact (ref 0), one ambiguity on it, and a PERSON
    node per `(EDGE_TYPE, name)` link (fact → person)."""
    sub = Submission(
        external_id,
        TEXT + " " + external_id,
        title=external_id,
        uri="https://example.test/" + external_id,
        acl=["group:legal", "group:finance"],
    )
    fact = sub.fact("term", name=external_id, confidence=0.9, span=sub.span(69, 91))
    for edge_type, name in links:
        sub.person(f"{name}@acme.test", edge=edge_type, of=[fact])
    sub.ambiguity(fact, candidates=CANDIDATES, severity_hint=severity_hint, detector_confidence=0.8)
    return sub.payload()


DEFAULT_LINKS = [("AUTHORED_BY", "alice"), ("MENTIONS", "bob"), ("OWNED_BY", "olga")]


@pytest.fixture
def open_clarification(ingest_client, people):
    """`open_clarification(links=…, severity_hint=…)` → POST /v1/submissions and return a
    namespace with `clar` (the Clarification), `job` (its clarify:temporal job) and
    `ranking` (the expected person ids, best first)."""
    counter = iter(range(1000))

    def do(
        links: list[tuple[str, str]] | None = None, severity_hint: str | None = None
    ) -> SimpleNamespace:
        links = DEFAULT_LINKS if links is None else links
        body = submission(
            external_id=f"contracts/doc-{next(counter)}.docx",
            links=links,
            severity_hint=severity_hint,
        )
        resp = post(ingest_client, "/v1/submissions", body)
        assert resp.status_code == 201, resp.content
        clar_id = resp.json()["clarifications"][0]["id"]
        clar = Clarification.objects.get(pk=clar_id)
        job = Job.objects.get(kind="clarify:temporal", subject=str(clar.pk))
        return SimpleNamespace(
            clar=clar, job=job, ranking=[str(people[name].pk) for _, name in links]
        )

    return do


# ---------------------------------------------------------------------------------------
# Tenants, keys and jobs


@pytest.fixture
def tenant_b(db):
    return workspace_load(
        data={
            "tenant": "beta",
            "name": "Beta Ltd",
            "people": [{"name": "Ben Beta", "email": "ben@beta.test", "role": "steward"}],
        }
    ).tenant


@pytest.fixture
def tenant_b_clarify_client(tenant_b):
    _, secret = api_key_create(tenant=tenant_b, audience="clarify")
    return client_for(secret)


@pytest.fixture
def plain_key_client(workspace):
    """An API key with neither a principal nor an audience."""
    _, secret = api_key_create(tenant=workspace)
    return client_for(secret)


@pytest.fixture
def enqueue(workspace):
    """`enqueue(kind, n=1, tenant=…, **job_enqueue_kwargs)` → the new jobs (a list)."""

    def do(kind: str, n: int = 1, tenant: Any = None, **kwargs: Any) -> list[Job]:
        kwargs.setdefault("payload", {})
        return [job_enqueue(tenant=tenant or workspace, kind=kind, **kwargs) for _ in range(n)]

    return do


def random_token() -> str:
    return str(uuid.uuid4())
