"""Operations (issue 10): `telha check_integrity`, `telha audit export`, `GET /metrics`,
request ids and structured JSON logs.

The commands run through `run_from_argv` (what `manage.py`/`telha` does) so the exit code
and stderr are the ones an operator sees; the connection closing at the end of a command
is switched off so the test transaction survives it.
"""

import contextlib
import io
import json
import logging
import os
import re
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from datetime import timedelta
from itertools import pairwise
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest
from django.core.management import ManagementUtility
from django.db import IntegrityError, connection, connections, transaction
from django.utils import timezone

from clarify.models import AuditEvent, Clarification, QuorumState, ResponseRecord, State
from clarify.services import audit_event_append
from common.observability import (
    JsonFormatter,
    RequestIdFilter,
    request_id_var,
)
from common.times import from_us, iso
from delivery.models import Delivery, NonceState
from graph.models import NodeVersion
from jobs.models import Job, JobStatus
from jobs.services import job_complete, job_enqueue, job_fail, job_lease
from jobs.tasks import work
from tenancy.models import Tenant
from tests.clarify.conftest import build_submission

BASE_DIR = Path(__file__).resolve().parent.parent
JOB_KIND = "clarify:temporal"
CHECKS = ("versions", "bindings", "states", "jobs", "nonces")
GENERATED_ID = re.compile(r"^[0-9a-f]{32}$")


# --- helpers ------------------------------------------------------------------------------


def telha(*argv: str) -> SimpleNamespace:
    """Run a management command as the command line does: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with (
        redirect_stdout(out),
        redirect_stderr(err),
        mock.patch.object(connections, "close_all"),
    ):
        utility = ManagementUtility(["telha", *argv])
        command = utility.fetch_command(argv[0])
        try:
            command.run_from_argv(["telha", *argv])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return SimpleNamespace(code=code, out=out.getvalue(), err=err.getvalue())


def run_worker() -> int:
    """One pass of the in-process worker (no connection recycling inside the test)."""
    with mock.patch("jobs.tasks.close_old_connections", lambda: None):
        return work(JOB_KIND, max_seconds=5)


def job_of(clar_id: Any) -> Job:
    return Job.objects.get(kind=JOB_KIND, subject=str(clar_id))


def answer(client: Any, clar_id: Any, index: int, **headers: str) -> Any:
    return client.post(
        f"/v1/clarifications/{clar_id}/answer",
        {"answerIndex": index},
        format="json",
        headers=headers,
    )


@pytest.fixture
def inbox(settings, people):
    """Only the built-in inbox channel; every acme person can sign in, so is reachable."""
    settings.CLARIFY_CHANNELS = ["inbox"]
    for person in people.values():
        person.user.set_password("inbox-pass-" + "x" * 10)
        person.user.save()
    return people


@pytest.fixture
def submit(ingest_client):
    """`submit(name, **build_submission_kwargs)` → the id of the clarification opened."""

    def do(name: str, **kwargs: Any) -> str:
        data = build_submission(external_id=f"contracts/{name}.docx", key=name, **kwargs)
        resp = ingest_client.post("/v1/submissions", data, format="json")
        assert resp.status_code == 201, resp.content
        return resp.json()["clarifications"][0]["id"]

    return do


@pytest.fixture
def flow(inbox, submit, person_client):
    """A normal run of the lifecycle:

    - `bound`: normal severity, delivered to alice in the inbox, answered → one binding;
    - `conflicted`: critical, alice and bob disagree → a critical conflict;
    - `partial`: critical, one confirmation of two → partially_confirmed;
    - `open`: normal, delivered, unanswered;
    - `dead`: its routing job leased and failed for good through jobs.services →
      dead_lettered.
    """
    alice, bob = person_client("alice"), person_client("bob")
    ids = SimpleNamespace(
        bound=submit("bound"),
        conflicted=submit("conflicted", severity_hint="critical"),
        partial=submit("partial", severity_hint="critical"),
        open=submit("open"),
    )
    assert run_worker() == 4
    assert answer(alice, ids.bound, 1).json()["outcome"] == "bound"
    assert answer(alice, ids.conflicted, 1).json()["outcome"] == "partial_confirmation"
    assert answer(bob, ids.conflicted, 2).json()["outcome"] == "conflict"
    assert answer(alice, ids.partial, 1).json()["outcome"] == "partial_confirmation"

    ids.dead = submit("dead")
    [lease] = job_lease(tenant=None, audience="clarify", kinds=[JOB_KIND], holder="test")
    assert lease.job.subject == ids.dead
    job_fail(
        tenant=None,
        job_id=lease.job.pk,
        token=lease.token,
        retryable=False,
        reason="PERMANENT",
        detail="no channel will ever work",
    )

    states = {name: Clarification.objects.get(pk=pk).state for name, pk in vars(ids).items()}
    assert states == {
        "bound": State.ANSWERED,
        "conflicted": State.CONFLICTED,
        "partial": State.PARTIALLY_CONFIRMED,
        "open": State.OPEN,
        "dead": State.DEAD_LETTERED,
    }
    assert job_of(ids.dead).status == JobStatus.DEAD
    return ids


# --- check_integrity ----------------------------------------------------------------------


def test_check_integrity_is_clean_on_an_empty_database(db):
    result = telha("check_integrity", "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out) == {"ok": True, "violations": {c: [] for c in CHECKS}}


def test_check_integrity_is_clean_after_a_normal_flow(flow):
    result = telha("check_integrity")
    assert result.code == 0, result.err
    assert result.err == ""
    lines = result.out.splitlines()
    assert [line.split() for line in lines] == [[check, "ok"] for check in CHECKS]

    result = telha("check_integrity", "--json")
    assert result.code == 0
    assert json.loads(result.out) == {"ok": True, "violations": {c: [] for c in CHECKS}}


def _versions_of_bound(ids: SimpleNamespace) -> tuple[NodeVersion, NodeVersion]:
    clar = Clarification.objects.get(pk=ids.bound)
    first, second = NodeVersion.objects.filter(node_id=clar.target_id).order_by("seq")
    assert first.tx_to == second.tx_from and second.tx_to is None
    return first, second


def corrupt_version_gap(ids: SimpleNamespace) -> dict[str, list[str]]:
    first, second = _versions_of_bound(ids)
    assert second.tx_from - 1 > first.tx_from  # the tx order check constraint still holds
    NodeVersion.objects.filter(pk=first.pk).update(tx_to=second.tx_from - 1)
    return {
        "versions": [
            f"node {first.node_id}: version {first.seq} ends at {second.tx_from - 1}, "
            f"next starts at {second.tx_from}"
        ]
    }


def corrupt_two_current_versions(ids: SimpleNamespace) -> dict[str, list[str]]:
    """The partial unique index `nodeversion_one_current` refuses a second current
    version; the corruption drops it first (rolled back with the test's transaction)."""
    first, second = _versions_of_bound(ids)
    with pytest.raises(IntegrityError), transaction.atomic():
        NodeVersion.objects.filter(pk=first.pk).update(tx_to=None)
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX nodeversion_one_current")
    NodeVersion.objects.filter(pk=first.pk).update(tx_to=None)
    return {
        "versions": [
            f"node {first.node_id} has 2 current versions",
            f"node {first.node_id}: version {first.seq} ends at None, "
            f"next starts at {second.tx_from}",
        ]
    }


def corrupt_answered_without_binding(ids: SimpleNamespace) -> dict[str, list[str]]:
    Clarification.objects.filter(pk=ids.open).update(state=State.ANSWERED)
    [delivery] = Delivery.objects.filter(clarification_id=ids.open)  # its card is still live
    return {
        "bindings": [f"clarification {ids.open} is answered without a binding"],
        "nonces": [f"delivery {delivery.pk} keeps an active nonce on an answered clarification"],
    }


def corrupt_binding_while_not_answered(ids: SimpleNamespace) -> dict[str, list[str]]:
    Clarification.objects.filter(pk=ids.bound).update(state=State.OPEN)
    return {
        "bindings": [
            f"clarification {ids.bound} is open but has a binding",
            f"clarification {ids.bound} has bound responses but is not answered",
        ]
    }


def corrupt_binding_disagrees_with_fact_version(ids: SimpleNamespace) -> dict[str, list[str]]:
    clar = Clarification.objects.get(pk=ids.bound)
    Clarification.objects.filter(pk=clar.pk).update(fact_version_tx=clar.fact_version_tx - 1)
    return {"bindings": [f"binding of {ids.bound} disagrees with factVersionTx"]}


def corrupt_partial_without_pending_quorum(ids: SimpleNamespace) -> dict[str, list[str]]:
    Clarification.objects.filter(pk=ids.partial).update(quorum_state=QuorumState.SATISFIED)
    return {
        "states": [f"clarification {ids.partial}: state partially_confirmed with quorum satisfied"]
    }


def corrupt_conflicted_without_conflicted_quorum(ids: SimpleNamespace) -> dict[str, list[str]]:
    Clarification.objects.filter(pk=ids.conflicted).update(quorum_state=QuorumState.PENDING)
    return {"states": [f"clarification {ids.conflicted}: state conflicted with quorum pending"]}


def corrupt_job_attempts(ids: SimpleNamespace) -> dict[str, list[str]]:
    """A leased job without a lease token cannot even be written (a DB check constraint);
    attempts beyond max_attempts can."""
    job = job_of(ids.open)
    assert job.status == JobStatus.LEASED
    with pytest.raises(IntegrityError), transaction.atomic():
        Job.objects.filter(pk=job.pk).update(lease_token=None)
    Job.objects.filter(pk=job.pk).update(attempts=job.max_attempts + 1)
    return {"jobs": [f"job {job.pk} has {job.max_attempts + 1} attempts of {job.max_attempts}"]}


def corrupt_dead_job_of_a_live_clarification(ids: SimpleNamespace) -> dict[str, list[str]]:
    Clarification.objects.filter(pk=ids.dead).update(state=State.OPEN)
    return {"jobs": [f"clarification {ids.dead} is open but its routing job is dead"]}


def corrupt_active_nonce_on_answered(ids: SimpleNamespace) -> dict[str, list[str]]:
    [delivery] = Delivery.objects.filter(clarification_id=ids.bound)
    assert delivery.nonce_state == NonceState.CLOSED  # the answer closed it
    Delivery.objects.filter(pk=delivery.pk).update(nonce_state=NonceState.ACTIVE)
    return {
        "nonces": [f"delivery {delivery.pk} keeps an active nonce on an answered clarification"]
    }


def corrupt_cards_not_recorded(ids: SimpleNamespace) -> dict[str, list[str]]:
    """Binding closes nonces only where the clarification records a card."""
    assert Delivery.objects.filter(clarification_id=ids.bound).exists()
    Clarification.objects.filter(pk=ids.bound).update(cards_issued=False)
    return {"nonces": [f"clarification {ids.bound} has cards but does not record that it has"]}


def corrupt_response_count(ids: SimpleNamespace) -> dict[str, list[str]]:
    """An answer reads a clarification's responses only when it counts some."""
    latest = ResponseRecord.objects.filter(clarification_id=ids.partial).order_by("-seq")[0].seq
    Clarification.objects.filter(pk=ids.partial).update(responses_recorded=0)
    return {"states": [f"clarification {ids.partial} counts 0 responses, its latest is {latest}"]}


CORRUPTIONS = [
    corrupt_version_gap,
    corrupt_two_current_versions,
    corrupt_answered_without_binding,
    corrupt_binding_while_not_answered,
    corrupt_binding_disagrees_with_fact_version,
    corrupt_partial_without_pending_quorum,
    corrupt_conflicted_without_conflicted_quorum,
    corrupt_job_attempts,
    corrupt_dead_job_of_a_live_clarification,
    corrupt_active_nonce_on_answered,
    corrupt_cards_not_recorded,
    corrupt_response_count,
]


@pytest.mark.parametrize(
    "corrupt", CORRUPTIONS, ids=[c.__name__.removeprefix("corrupt_") for c in CORRUPTIONS]
)
def test_check_integrity_reports_each_kind_of_violation(flow, corrupt):
    expected = {check: [] for check in CHECKS} | corrupt(flow)
    total = sum(len(found) for found in expected.values())

    result = telha("check_integrity")
    assert result.code == 1
    assert result.err.strip() == f"CommandError: INTEGRITY_VIOLATION: {total} violation(s)"
    for check in CHECKS:
        found = expected[check]
        status = f"{len(found)} violation(s)" if found else "ok"
        assert re.search(rf"^{check} +{re.escape(status)}$", result.out, re.M), result.out
        for message in found:
            assert f"  - {message}\n" in result.out

    result = telha("check_integrity", "--json")
    assert result.code == 1
    assert "INTEGRITY_VIOLATION" in result.err
    assert json.loads(result.out) == {"ok": False, "violations": expected}


# --- audit export -------------------------------------------------------------------------


def export(*args: str) -> SimpleNamespace:
    """The export's event lines (`rows`) and its closing chain head (`head`)."""
    result = telha("audit", "export", *args)
    lines = [json.loads(line) for line in result.out.splitlines()]
    result.head = lines.pop()["chainHead"] if lines else None
    result.rows = lines
    return result


CHAIN_KEYS = {"salt", "commitment", "prevHash", "hash"}


def test_audit_export_is_json_lines_in_chain_order(flow, workspace):
    # Appended last but dated first: the export follows the chain (the order of the
    # appends), so an auditor can check every link; the time is on each line.
    earliest = AuditEvent.objects.order_by("at").first().at - 1_000_000
    backdated = audit_event_append(
        tenant=workspace, type="note", detail={"x": "<b>&</b>"}, at=earliest
    )
    other = Tenant.objects.create(slug="globex", name="Globex")
    audit_event_append(tenant=other, type="note", detail={"tenant": "globex"})

    result = export("--tenant", "acme")

    assert result.code == 0, result.err
    assert result.out.endswith("\n") and all(result.out.splitlines())
    events = list(AuditEvent.objects.filter(tenant=workspace).order_by("seq"))
    assert len(result.rows) == len(events) > 20
    for row, event in zip(result.rows, events, strict=True):
        assert set(row) == {"id", "seq", "at", "time", "type", "clarification", "detail"} | (
            CHAIN_KEYS
        )
        assert row == {
            "id": event.pk,
            "seq": event.seq,
            "at": event.at,
            "time": iso(event.at),
            "type": event.type,
            "clarification": str(event.clarification_id) if event.clarification_id else None,
            "detail": event.detail,
            "salt": event.salt,
            "commitment": event.commitment,
            "prevHash": event.prev_hash,
            "hash": event.hash,
        }
    assert [row["seq"] for row in result.rows] == list(range(1, len(events) + 1))
    assert all(row["prevHash"] == before["hash"] for before, row in pairwise(result.rows))
    assert result.rows[-1]["id"] == backdated.pk and result.rows[-1]["at"] == earliest
    assert result.head == {"tenant": "acme", "seq": len(events), "hash": result.rows[-1]["hash"]}
    assert {"opened", "delivered", "bound", "conflict_entered", "dead_lettered"} <= {
        row["type"] for row in result.rows
    }
    assert all(row["detail"] != {"tenant": "globex"} for row in result.rows)
    assert [r["detail"] for r in export("--tenant", "globex").rows] == [{"tenant": "globex"}]


def test_audit_export_since_in_microseconds_and_rfc3339(flow, workspace):
    # --since T: the chain from its first event dated T or later, unbroken to the head.
    everything = export("--tenant", "acme").rows
    cut = everything[len(everything) // 2]["at"]
    first = next(i for i, row in enumerate(everything) if row["at"] >= cut)
    expected = everything[first:]
    assert 0 < len(expected) < len(everything)

    assert export("--tenant", "acme", "--since", str(cut)).rows == expected
    rfc3339 = from_us(cut).isoformat()  # 2026-…T…​.ffffff+00:00
    assert export("--tenant", "acme", "--since", rfc3339).rows == expected
    zulu = rfc3339.replace("+00:00", "Z")
    assert export("--tenant", "acme", "--since", zulu).rows == expected
    later = export("--tenant", "acme", "--since", str(cut + 1)).rows
    assert all(row["at"] > cut for row in later[:1]) and len(later) <= len(expected)
    # Far in the past: everything; far in the future: no events, only the head, exit 0.
    assert export("--tenant", "acme", "--since", "0").rows == everything
    future = export("--tenant", "acme", "--since", "2999-01-01T00:00:00Z")
    assert (future.code, future.rows) == (0, [])
    assert future.head["seq"] == len(everything)


@pytest.mark.parametrize(
    "since", ["yesterday", "2026-13-45T00:00:00Z", "2026-01-01T00:00:00", "-5", "1e6"]
)
def test_audit_export_refuses_a_bad_since_with_exit_2(workspace, since):
    result = export("--tenant", "acme", "--since", since)
    assert result.code == 2
    assert result.out == ""
    assert result.err.startswith("CommandError: --since:")


def test_audit_export_of_an_unknown_tenant_exits_1(workspace):
    result = export("--tenant", "nope")
    assert result.code == 1
    assert result.out == ""
    assert "NOT_FOUND" in result.err and "'nope'" in result.err


# --- /metrics -----------------------------------------------------------------------------


SAMPLE = re.compile(r"^([a-z_]+)(?:\{(.*)\})? (\S+)$")


def parse_metrics(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Prometheus text → {(name, sorted labels): value}; every line is a comment or a
    well-formed sample, and no sample repeats."""
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for line in text.splitlines():
        if line.startswith("# "):
            assert re.match(r"^# (HELP|TYPE) telha_[a-z_]+ ", line), line
            continue
        match = SAMPLE.match(line)
        assert match, line
        name, labels, value = match.groups()
        pairs = tuple(sorted(re.findall(r'([a-z]+)="((?:[^"\\]|\\.)*)"', labels or "")))
        key = (name, pairs)
        assert key not in samples, line
        samples[key] = float(value)
    return samples


def family(samples: dict, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {labels: value for (n, labels), value in samples.items() if n == name}


def scrape(client: Any) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    resp = client.get("/metrics")
    assert resp.status_code == 200, resp.content
    return parse_metrics(resp.content.decode())


def grown(after: dict, before: dict, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """How much each sample of `name` grew between two scrapes (counters, histograms:
    the process's metrics accumulate over the whole test run)."""
    out = {}
    for labels, value in family(after, name).items():
        change = value - before.get((name, labels), 0.0)
        if change:
            out[labels] = change
    return out


def test_metrics_in_the_prometheus_text_format(
    client, settings, flow, person_client, submit, workspace, django_capture_on_commit_callbacks
):
    settings.METRICS_ENABLED = True
    settings.METRICS_TOKEN = ""
    before = scrape(client)
    olga, sam = person_client("olga"), person_client("sam")
    with django_capture_on_commit_callbacks(execute=True):
        # Three answers through the endpoint (one refused: still an answer request) …
        assert answer(olga, flow.partial, 1).json()["outcome"] == "bound"
        assert answer(olga, flow.open, 2).json()["outcome"] == "bound"
        refused = answer(person_client("vera"), flow.bound, 7)
        assert refused.status_code == 422
        # … and one that is not an answer (no answer-latency sample).
        assert sam.get(f"/v1/clarifications/{flow.bound}").status_code == 200
        # A pending job that has waited two minutes; skipped candidates.
        waiting = submit("waiting", links=[("AUTHORED_BY", "bob")])
        Job.objects.filter(subject=waiting).update(run_after=timezone.now() - timedelta(minutes=2))
        audit_event_append(
            tenant=workspace, type="skipped", detail={"attempt": 0, "reason": "NO_DELIVERY_ALIAS"}
        )
        audit_event_append(
            tenant=workspace, type="skipped", detail={"attempt": 1, "reason": 'odd "reason"\\'}
        )
    text = client.get("/metrics").content.decode()
    after = parse_metrics(text)

    resp = client.get("/metrics")
    assert resp["Content-Type"] == "text/plain; version=0.0.4"
    assert text.endswith("\n")
    for name, kind in [
        ("telha_clarifications", "gauge"),
        ("telha_jobs", "gauge"),
        ("telha_job_ready_age_seconds", "gauge"),
        ("telha_delivery_events_total", "counter"),
        ("telha_audit_events_total", "counter"),
        ("telha_http_requests_total", "counter"),
        ("telha_http_request_duration_seconds", "histogram"),
        ("telha_answer_latency_seconds", "histogram"),
    ]:
        assert f"# TYPE {name} {kind}\n" in text, name

    # Gauges: the unfinished work only (answered clarifications and done or dead jobs are
    # never scanned; their flow is in the counters).
    assert family(after, "telha_clarifications") == {
        (("severity", "critical"), ("state", "conflicted")): 1,
        (("severity", "normal"), ("state", "dead_lettered")): 1,
        (("severity", "normal"), ("state", "open")): 1,
    }
    assert 'telha_clarifications{severity="critical",state="conflicted"} 1.0\n' in text
    assert family(after, "telha_jobs") == {(("kind", JOB_KIND), ("status", "pending")): 1}
    [(labels, age)] = family(after, "telha_job_ready_age_seconds").items()
    assert labels == (("kind", JOB_KIND),)
    assert 120 <= age < 180

    # Counters, counted as the events were committed.
    assert grown(after, before, "telha_delivery_events_total") == {
        (("event", "skipped"), ("reason", "NO_DELIVERY_ALIAS")): 1,
        (("event", "skipped"), ("reason", 'odd \\"reason\\"\\\\')): 1,
    }
    audit = grown(after, before, "telha_audit_events_total")
    assert audit[(("type", "skipped"),)] == 2
    assert audit[(("type", "opened"),)] == 1  # the waiting one
    assert audit[(("type", "bound"),)] == 2

    # Requests by endpoint (the URL's name, never its path) and status.
    requests = grown(after, before, "telha_http_requests_total")
    answer_endpoint = (("endpoint", "clarification-answer"), ("method", "POST"))
    assert requests[(*answer_endpoint, ("status", "200"))] == 2
    assert requests[(*answer_endpoint, ("status", "422"))] == 1
    detail = (("endpoint", "clarification"), ("method", "GET"), ("status", "200"))
    assert requests[detail] == 1
    assert requests[(("endpoint", "submissions"), ("method", "POST"), ("status", "201"))] == 1
    assert str(flow.bound) not in text

    # Answer latency by outcome: two bound, one refused (its error code).
    code = refused.json()["code"]
    latency = grown(after, before, "telha_answer_latency_seconds_count")
    assert latency == {(("outcome", "bound"),): 2, (("outcome", code),): 1}
    buckets = grown(after, before, "telha_answer_latency_seconds_bucket")
    bound = sorted(
        (float(dict(labels)["le"]), n)
        for labels, n in buckets.items()
        if dict(labels)["outcome"] == "bound"
    )
    assert bound[-1] == (float("inf"), 2)
    assert [n for _, n in bound] == sorted(n for _, n in bound)  # cumulative
    seconds = grown(after, before, "telha_answer_latency_seconds_sum")
    assert 0 < seconds[(("outcome", "bound"),)] < 60


def test_an_event_rolled_back_is_not_counted(
    client, settings, workspace, django_capture_on_commit_callbacks
):
    settings.METRICS_ENABLED = True
    before = scrape(client)
    with django_capture_on_commit_callbacks(execute=True):
        with contextlib.suppress(RuntimeError), transaction.atomic():
            audit_event_append(tenant=workspace, type="delivered", detail={"attempt": 0})
            raise RuntimeError("the delivery failed after its event was appended")
        audit_event_append(tenant=workspace, type="escalated", detail={"reason": "WINDOW"})
    after = scrape(client)
    assert grown(after, before, "telha_delivery_events_total") == {
        (("event", "escalated"), ("reason", "WINDOW")): 1
    }


def test_request_metrics_name_endpoints_never_paths(client, settings, db):
    settings.METRICS_ENABLED = True
    before = scrape(client)
    for path in ("/no/such/page-1234", "/v1/nodes/abc-5678", "/static/admin/css/base.css"):
        client.get(path)
    client.generic("BREW", "/healthz")
    after = scrape(client)
    requests = grown(after, before, "telha_http_requests_total")
    endpoints = {dict(labels)["endpoint"] for labels in requests} - {"metrics"}  # the scrape
    assert endpoints == {"unmatched", "node", "static", "healthz"}
    assert requests[(("endpoint", "healthz"), ("method", "other"), ("status", "405"))] == 1
    text = client.get("/metrics").content.decode()
    assert "page-1234" not in text and "abc-5678" not in text


def test_metrics_token(client, settings, db):
    settings.METRICS_ENABLED = True
    settings.METRICS_TOKEN = "s3cret-token"
    for headers in (
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": "s3cret"},
        {"Authorization": "Bearer s3cret-token-and-more"},
    ):
        resp = client.get("/metrics", headers=headers)
        assert resp.status_code == 401, headers
        assert b"telha_" not in resp.content
    resp = client.get("/metrics", headers={"Authorization": "Bearer s3cret-token"})
    assert resp.status_code == 200
    assert b"# TYPE telha_clarifications gauge" in resp.content
    assert (
        client.post("/metrics", headers={"Authorization": "Bearer s3cret-token"}).status_code == 405
    )


def test_metrics_without_a_token_are_open_when_enabled(client, settings, db):
    settings.METRICS_ENABLED = True
    settings.METRICS_TOKEN = ""
    resp = client.get("/metrics")
    assert resp.status_code == 200
    samples = parse_metrics(resp.content.decode())
    assert ("telha_clarifications", ()) not in samples  # no rows: the family is empty
    assert "# TYPE telha_answer_latency_seconds histogram" in resp.content.decode()


# --- request ids --------------------------------------------------------------------------


def test_a_response_carries_a_generated_request_id(client, db):
    first, second = client.get("/healthz"), client.get("/healthz")
    assert GENERATED_ID.match(first["X-Request-ID"])
    assert GENERATED_ID.match(second["X-Request-ID"])
    assert first["X-Request-ID"] != second["X-Request-ID"]
    assert request_id_var.get() == ""  # not left behind after the request


@pytest.mark.parametrize("rid", ["abc-123", "req.7:retry_2", "A" * 64, "0"])
def test_a_valid_incoming_request_id_is_echoed(client, db, rid):
    assert client.get("/healthz", headers={"X-Request-ID": rid})["X-Request-ID"] == rid


@pytest.mark.parametrize(
    "rid", ["has spaces", "x" * 200, "A" * 65, "", "semi;colon", "new\\nline", "é"]
)
def test_an_invalid_incoming_request_id_is_replaced(client, db, rid):
    resp = client.get("/healthz", headers={"X-Request-ID": rid})
    assert GENERATED_ID.match(resp["X-Request-ID"])
    assert resp["X-Request-ID"] != rid


def test_error_responses_carry_the_request_id_too(ingest_client):
    resp = ingest_client.post(
        "/v1/submissions", {"nodes": "nope"}, format="json", headers={"X-Request-ID": "bad-body-1"}
    )
    assert resp.status_code == 422
    assert resp["X-Request-ID"] == "bad-body-1"


def test_log_records_of_a_request_carry_its_id(client, caplog, db):
    caplog.handler.addFilter(RequestIdFilter())
    with caplog.at_level(logging.INFO):
        resp = client.get("/no/such/page", headers={"X-Request-ID": "trace-404"})
        other = client.get("/no/such/page")
    assert resp.status_code == 404 == other.status_code
    first = [r for r in caplog.records if r.name == "django.request"]
    assert [r.request_id for r in first] == ["trace-404", other["X-Request-ID"]]
    assert "Not Found: /no/such/page" in first[0].getMessage()

    caplog.clear()
    logging.getLogger("telha.test").warning("outside any request")
    assert [r.request_id for r in caplog.records] == [""]


def _record(message: str = "hello %s", *args: Any, **extra: Any) -> logging.LogRecord:
    record = logging.LogRecord("telha.test", logging.WARNING, __file__, 1, message, args, None)
    record.__dict__.update(extra)
    return record


def test_json_formatter_output_parses_with_the_request_id():
    token = request_id_var.set("fmt-42")
    try:
        record = _record("hello %s", "world")
        RequestIdFilter().filter(record)
    finally:
        request_id_var.reset(token)
    line = JsonFormatter().format(record)
    assert "\n" not in line
    payload = json.loads(line)
    assert set(payload) == {"time", "level", "logger", "message", "requestId"}
    assert payload["level"] == "WARNING"
    assert payload["logger"] == "telha.test"
    assert payload["message"] == "hello world"
    assert payload["requestId"] == "fmt-42"
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$", payload["time"])


def test_json_formatter_without_a_request_id_and_with_an_exception():
    record = _record('quote " and\nnewline')
    RequestIdFilter().filter(record)
    payload = json.loads(JsonFormatter().format(record))
    assert payload["requestId"] is None
    assert payload["message"] == 'quote " and\nnewline'

    try:
        raise ValueError("boom")
    except ValueError:
        record = _record("failed", exc_info=sys.exc_info())
    payload = json.loads(JsonFormatter().format(record))
    assert payload["requestId"] is None  # never passed the filter
    assert "ValueError: boom" in payload["exception"]


def test_the_configured_console_handler_writes_json_lines_with_the_request_id(client, db, settings):
    """Under the test settings (DEBUG=0) the configured console handler is the JSON one."""
    assert settings.LOG_FORMAT == "json"
    [console] = [h for h in logging.getLogger().handlers if isinstance(h.formatter, JsonFormatter)]
    stream = io.StringIO()
    previous = console.setStream(stream)
    try:
        client.get("/no/such/page", headers={"X-Request-ID": "console-1"})
    finally:
        console.setStream(previous)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    [line] = [p for p in lines if p["logger"] == "django.request"]
    assert line["requestId"] == "console-1"
    assert line["level"] == "WARNING"


def _settings_in_child(**env: str) -> dict[str, Any]:
    code = (
        "import json, telha.settings as s; "
        "print(json.dumps([s.LOG_FORMAT, s.LOGGING['handlers']['console']]))"
    )
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DJANGO_SETTINGS_MODULE", "DEBUG", "LOG_FORMAT", "SECRET_KEY"}
    }
    clean.update(SECRET_KEY="k" * 50, **env)
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=BASE_DIR,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    log_format, handler = json.loads(done.stdout)
    return {"format": log_format, "handler": handler}


def test_log_format_is_json_in_production_and_plain_in_debug():
    production = _settings_in_child(DEBUG="0")
    assert production["format"] == "json"
    assert production["handler"]["formatter"] == "json"
    assert production["handler"]["filters"] == ["request_id"]
    assert _settings_in_child(DEBUG="1")["format"] == "plain"
    assert _settings_in_child(DEBUG="0", LOG_FORMAT="plain")["format"] == "plain"


# --- one request id from submission through delivery to binding --------------------------


def audit_args(record: logging.LogRecord) -> tuple[str, str]:
    event_type, clar_id = record.args
    return event_type, str(clar_id)


def audit_lines(caplog: pytest.LogCaptureFixture, clar_id: str) -> list[tuple[str, str]]:
    """(event type, request id) of the `clarify.audit` log lines about one clarification."""
    out = []
    for record in caplog.records:
        if record.name == "clarify.audit" and audit_args(record)[1] == clar_id:
            out.append((audit_args(record)[0], record.request_id))
    return out


def test_a_request_id_follows_a_clarification_through_its_logs(
    inbox, ingest_client, person_client, caplog
):
    caplog.handler.addFilter(RequestIdFilter())
    caplog.set_level(logging.INFO, logger="clarify.audit")

    data = build_submission()
    resp = ingest_client.post(
        "/v1/submissions", data, format="json", headers={"X-Request-ID": "sub-7"}
    )
    assert resp.status_code == 201 and resp["X-Request-ID"] == "sub-7"
    clar_id = resp.json()["clarifications"][0]["id"]
    job = job_of(clar_id)
    assert job.request_id == "sub-7"
    assert set(job.payload) == {"v", "clarificationId", "ranking"}  # the payload is untouched
    assert audit_lines(caplog, clar_id) == [("opened", "sub-7")]

    # The worker runs outside any request, under the id of the request that enqueued it.
    assert request_id_var.get() == ""
    assert run_worker() == 1
    assert request_id_var.get() == ""
    assert audit_lines(caplog, clar_id)[1:] == [("delivered", "sub-7")]

    resp = answer(person_client("alice"), clar_id, 1, **{"X-Request-ID": "answer-9"})
    assert resp.json()["outcome"] == "bound" and resp["X-Request-ID"] == "answer-9"

    lines = audit_lines(caplog, clar_id)
    events = list(
        AuditEvent.objects.filter(clarification_id=clar_id)
        .order_by("at", "id")
        .values_list("type", flat=True)
    )
    assert [t for t, _ in lines] == events  # every audit event is logged once, in order
    assert lines[2:] == [(t, "answer-9") for t in events[2:]]
    assert "bound" in events[2:]

    # The JSON log line of the binding carries the answer's id.
    [bound] = [
        r
        for r in caplog.records
        if r.name == "clarify.audit" and audit_args(r) == ("bound", clar_id)
    ]
    payload = json.loads(JsonFormatter().format(bound))
    assert payload["requestId"] == "answer-9"
    assert payload["message"] == f"audit bound clarification={clar_id}"
    assert payload["logger"] == "clarify.audit"


handled: list[tuple[int, str]] = []  # (job id, request id inside its handler)


def recording_handler(lease: Any) -> None:
    """Records the request id seen inside the handler and completes the job."""
    handled.append((lease.job.pk, request_id_var.get()))
    job_complete(tenant=None, job_id=lease.job.pk, token=lease.token, result={})


def raising_handler(lease: Any) -> None:
    handled.append((lease.job.pk, request_id_var.get()))
    raise RuntimeError("handler bug")


def _run(kind: str) -> int:
    with mock.patch("jobs.tasks.close_old_connections", lambda: None):
        return work(kind, max_seconds=5)


def test_the_worker_restores_each_jobs_request_id_and_resets_it(workspace, job_kinds):
    job_kinds("ingest:ops", handler=recording_handler)
    handled.clear()
    plain = job_enqueue(tenant=workspace, kind="ingest:ops", payload={"n": 1})
    token = request_id_var.set("req-a")
    try:
        traced = job_enqueue(tenant=workspace, kind="ingest:ops", payload={"n": 2})
    finally:
        request_id_var.reset(token)
    assert (plain.request_id, traced.request_id) == ("", "req-a")
    assert "requestId" not in traced.payload

    token = request_id_var.set("outer")
    try:
        assert _run("ingest:ops") == 2
        assert request_id_var.get() == "outer"  # restored after each job
    finally:
        request_id_var.reset(token)
    assert sorted(handled) == sorted([(plain.pk, ""), (traced.pk, "req-a")])


def test_a_failing_handler_is_logged_under_its_jobs_request_id(workspace, job_kinds, caplog):
    caplog.handler.addFilter(RequestIdFilter())
    job_kinds("ingest:ops", handler=raising_handler)
    handled.clear()
    token = request_id_var.set("req-b")
    try:
        job = job_enqueue(tenant=workspace, kind="ingest:ops", payload={})
    finally:
        request_id_var.reset(token)

    assert _run("ingest:ops") == 1

    assert handled == [(job.pk, "req-b")]
    [failed] = [r for r in caplog.records if r.name == "jobs.tasks"]
    assert failed.getMessage() == f"job {job.pk} failed in its handler"
    assert failed.request_id == "req-b"
    assert request_id_var.get() == ""
    job.refresh_from_db()
    assert job.status == JobStatus.PENDING and job.attempts == 1
    assert job.last_error.startswith("WORKER_ERROR")
