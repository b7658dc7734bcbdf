"""Steward-surface fixtures: submissions that open clarifications, a signed-in steward's
admin client, a second tenant with its own steward, the delivery worker, and row
snapshots for "nothing was written".

Plain helpers are importable from this module (`from .conftest import ...`)."""

import json
import re
import uuid
from datetime import timedelta
from io import StringIO
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from clarify.models import (
    AuditEvent,
    Clarification,
    ClarificationBinding,
    ClarifyPolicy,
    ResponseRecord,
)
from delivery.models import CardAction, Delivery
from graph.models import NodeVersion
from jobs.models import Job, JobStatus
from jobs.services import jobs_reap
from jobs.tasks import work
from tenancy.models import Person
from tenancy.services import api_key_create, workspace_load
from tests.conftest import client_for
from tests.submissions import contract_term

JOB_KIND = "clarify:temporal"
NIL = str(uuid.UUID(int=0))
STEWARD_PASSWORD = "steward-pass-1"  # sam's, from the shared workspace fixture
PASSWORD = "person-pass-" + "p" * 10  # given to people who must be reachable by the inbox

# The shared document text names nobody; an erasure test that needs a document naming
# its subject passes its own `text` (which must contain SPAN_TEXT).
SPAN_TEXT = "effective next quarter (ACME-7731)"
TEXT = (
    "MASTER SERVICES AGREEMENT between Acme and Vendor. This agreement is "
    f"{SPAN_TEXT} and runs until terminated by either party with 90 days notice."
)
SPAN = {"start": TEXT.index(SPAN_TEXT), "end": TEXT.index(SPAN_TEXT) + len(SPAN_TEXT)}
OCT_2026 = 1_790_812_800_000_000  # 2026-10-01T00:00:00Z
JUN_2026 = 1_781_222_400_000_000  # 2026-06-12T00:00:00Z
JUL_2026 = 1_782_864_000_000_000  # 2026-07-01T00:00:00Z
CANDIDATES = [
    {"validFrom": OCT_2026, "validTo": None, "label": "1 Oct 2026 (next quarter)", "spanRef": 0},
    {"validFrom": JUN_2026, "validTo": None, "label": "12 June 2026 (signature)"},
    {"validFrom": JUL_2026, "validTo": None, "label": "1 Jul 2026 (countersignature)"},
]
# A 16-digit integer is a raw µs timestamp (2001 to 2286); no admin page may show one.
RAW_US = re.compile(r"(?<![\w-])1\d{15}(?![\w-])")


def build_submission(
    *,
    external_id: str = "contracts/msa.docx",
    title: str = "Master services agreement",
    name: str = "MSA term",
    links: list[tuple[str, str]] | None = None,
    acl: list[str] | None = None,
    severity_hint: str | None = None,
    kind: str = "relative_date",
    candidates: list[dict[str, Any]] | None = None,
    email_domain: str = "acme.test",
    text: str = TEXT,
) -> dict[str, Any]:
    """A Submission (CONTRACT §3.1): one fact (ref 0) with one ambiguity on SPAN_TEXT in
    `text`, and its authority edges (`tests.submissions.contract_term`); alice authored
    and bob mentioned unless `links` says otherwise."""
    start = text.index(SPAN_TEXT)
    return contract_term(
        external_id=external_id,
        title=title,
        name=name,
        text=text,
        span=(start, start + len(SPAN_TEXT)),
        links=[("AUTHORED_BY", "alice"), ("MENTIONS", "bob")] if links is None else links,
        candidates=candidates or CANDIDATES,
        acl=["group:legal"] if acl is None else acl,
        severity_hint=severity_hint,
        kind=kind,
        email_domain=email_domain,
    )


def submit_with(client: Any, **kwargs: Any) -> Clarification:
    resp = client.post("/v1/submissions", build_submission(**kwargs), format="json")
    assert resp.status_code == 201, resp.content
    [clar] = resp.json()["clarifications"]
    return Clarification.objects.select_related("tenant", "target").get(pk=clar["id"])


def change_url(obj_or_id: Any, model: str = "clarify/clarification") -> str:
    pk = getattr(obj_or_id, "pk", obj_or_id)
    return f"/admin/{model}/{pk}/change/"


def admin_ids(html: str, model: str = "clarify/clarification") -> set[str]:
    """The object ids a changelist links to."""
    return set(re.findall(rf"/admin/{model}/([0-9a-f-]{{36}}|\d+)/change/", html))


def messages_of(resp: Any) -> list[str]:
    return [str(m) for m in resp.context["messages"]] if resp.context else []


def cli(*args: str) -> Any:
    """`telha <args>` through call_command; parsed JSON when `--json` is given."""
    out = StringIO()
    call_command(*args, stdout=out)
    text = out.getvalue()
    return json.loads(text) if "--json" in args else text


def job_of(clar: Clarification, **filters: Any) -> Job:
    return Job.objects.filter(kind=JOB_KIND, subject=str(clar.pk), **filters).latest("id")


def run_worker() -> int:
    """One pass of the in-process delivery worker (`jobs.tasks.work`). Its per-loop
    `close_old_connections()` is switched off, as Django's test client does for requests:
    inside a test transaction it would close the test's own connection (PostgreSQL)."""
    with mock.patch("jobs.tasks.close_old_connections", lambda: None):
        return work(JOB_KIND, max_seconds=5)


def lapse_lease(clar: Clarification) -> Job:
    """No answer within the lease: the reaper re-pends the job with attempts + 1 after
    the escalation window, or kills it once the ranking is exhausted."""
    job = job_of(clar)
    assert job.status == JobStatus.LEASED, job.status
    Job.objects.filter(pk=job.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=5))
    assert jobs_reap() >= 1
    Job.objects.filter(pk=job.pk, status=JobStatus.PENDING).update(
        run_after=timezone.now() - timedelta(seconds=1)
    )
    return job_of(clar)


def events(clar: Any, type: str | None = None) -> list[AuditEvent]:
    qs = AuditEvent.objects.filter(clarification_id=getattr(clar, "pk", clar)).order_by("at", "id")
    return list(qs.filter(type=type) if type else qs)


def event_types(clar: Any) -> list[str]:
    return [e.type for e in events(clar)]


WRITE_MODELS = (
    Clarification,
    ResponseRecord,
    ClarificationBinding,
    NodeVersion,
    Job,
    AuditEvent,
    Delivery,
    CardAction,
    ClarifyPolicy,
    Person,
)


def counts() -> dict[str, int]:
    return {m.__name__: m.objects.count() for m in WRITE_MODELS}


def snapshot() -> dict[str, list[dict[str, Any]]]:
    """Every row of every table a steward action could write."""
    return {m.__name__: list(m.objects.order_by("pk").values()) for m in WRITE_MODELS}


def assert_nothing_written(before: dict[str, list[dict[str, Any]]]) -> None:
    after = snapshot()
    for name, rows in before.items():
        assert after[name] == rows, f"{name} changed"


def assert_only_events_appended(before: dict[str, list[dict[str, Any]]]) -> list[AuditEvent]:
    """Nothing was written but new audit events (returned, oldest first)."""
    after = snapshot()
    for name, rows in before.items():
        if name != "AuditEvent":
            assert after[name] == rows, f"{name} changed"
    old = {row["id"] for row in before["AuditEvent"]}
    assert [r for r in after["AuditEvent"] if r["id"] in old] == before["AuditEvent"]
    return list(AuditEvent.objects.exclude(pk__in=old).order_by("id"))


def reask_form(*people: Any, also: tuple[Any, ...] = ()) -> dict[str, str]:
    """The decide page's re-ask form as a browser posts it: a position input per person,
    `people` numbered 1, 2, … in that order and every input in `also` left blank."""
    data = {"action": "reask"}
    data.update({f"position_{p.pk}": "" for p in also})
    data.update({f"position_{p.pk}": str(i) for i, p in enumerate(people, start=1)})
    return data


# --- fixtures ----------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def inbox_channel(settings):
    """Only the built-in inbox delivers: a person with a password is reachable."""
    settings.CLARIFY_CHANNELS = ["inbox"]


@pytest.fixture
def submit(ingest_client):
    """`submit(**build_submission_kwargs)` → the clarification opened in workspace acme."""

    def do(**kwargs: Any) -> Clarification:
        return submit_with(ingest_client, **kwargs)

    return do


@pytest.fixture
def passwords(people):
    """`passwords("alice", ...)`: those people can sign in (so the inbox reaches them)."""

    def give(*names: str) -> None:
        for name in names:
            user = people[name].user
            user.set_password(PASSWORD)
            user.save()

    return give


@pytest.fixture
def answer(person_client):
    """`answer("alice", clar, index=0)` or `answer("bob", clar, custom={...})` through the
    API with that person's key; returns the response."""
    clients: dict[str, Any] = {}

    def do(name: str, clar: Any, index: int | None = None, **body: Any) -> Any:
        if name not in clients:
            clients[name] = person_client(name)
        if index is not None:
            body["answerIndex"] = index
        pk = getattr(clar, "pk", clar)
        return clients[name].post(f"/v1/clarifications/{pk}/answer", body, format="json")

    return do


@pytest.fixture
def steward_client(people):
    """An admin client signed in as sam, acme's steward (password login, as in a browser)."""
    client = Client()
    assert client.login(username="sam@acme.test", password=STEWARD_PASSWORD)
    return client


@pytest.fixture
def conflicted(submit, answer):
    """`conflicted(**submit_kwargs)` → a critical clarification that alice and bob (editors)
    answered differently: state conflicted, no fact version bound."""

    def make(**kwargs: Any) -> Clarification:
        kwargs.setdefault("severity_hint", "critical")
        clar = submit(**kwargs)
        assert answer("alice", clar, index=1).status_code == 202
        resp = answer("bob", clar, index=2)
        assert resp.status_code == 202 and resp.json()["outcome"] == "conflict", resp.content
        clar.refresh_from_db()
        assert clar.state == "conflicted"
        return clar

    return make


GLOBEX = {
    "tenant": "globex",
    "name": "Globex",
    "groups": ["legal"],
    "people": [
        {"name": "Gina Globex", "email": "gina@globex.test", "role": "editor", "groups": ["legal"]},
        {
            "name": "Sally Steward",
            "email": "sally@globex.test",
            "role": "steward",
            "groups": ["legal"],
            "password": "globex-steward-pass-1",
        },
    ],
}


@pytest.fixture
def globex(workspace):
    """A second tenant with its own steward (signed in) and an ingest key."""
    tenant = workspace_load(data=GLOBEX).tenant
    _, secret = api_key_create(tenant=tenant, audience="ingest")
    client = Client()
    assert client.login(username="sally@globex.test", password="globex-steward-pass-1")
    return SimpleNamespace(
        tenant=tenant,
        people={p.email.split("@")[0]: p for p in tenant.people.all()},
        ingest_client=client_for(secret),
        steward_client=client,
    )


def bulk_clarifications(
    tenant: Any,
    n: int,
    *,
    state: str = "conflicted",
    severity: str = "critical",
    prefix: str = "bulk",
) -> list[Clarification]:
    """`n` clarifications, each about its own fact node, written directly (fast set-up for
    query-count checks): one source version, n nodes, n node versions, n clarifications."""
    from common.times import now_us
    from graph.models import Node, Source, SourceVersion

    source = Source.objects.create(
        tenant=tenant,
        system="bulk",
        external_id=f"{prefix}/{uuid.uuid4()}",
        title="Bulk doc",
        acl=["group:legal"],
    )
    version = SourceVersion.objects.create(
        source=source, tx=now_us(), content_hash="0" * 64, text=TEXT
    )
    nodes = Node.objects.bulk_create(
        [Node(tenant=tenant, source=source, key=f"{prefix}-{i}") for i in range(n)]
    )
    tx = now_us()
    NodeVersion.objects.bulk_create(
        [
            NodeVersion(
                node=node,
                seq=1,
                labels=["CONTRACT_TERM"],
                properties={"name": f"{prefix} term {i}"},
                search_text=f"contract_term {prefix} term {i}",
                valid_from=OCT_2026,
                tx_from=tx,
                confidence=0.45,
                pending=True,
            )
            for i, node in enumerate(nodes)
        ]
    )
    return Clarification.objects.bulk_create(
        [
            Clarification(
                tenant=tenant,
                target=node,
                kind="relative_date",
                severity=severity,
                state=state,
                candidates=[dict(c) for c in CANDIDATES],
                asked=[],
                quorum_policy={
                    "requiredConfirmations": 2,
                    "requiredRoles": ["editor"],
                    "allowStewardOverride": True,
                },
                quorum_state="conflicted",
                detector_confidence=0.81,
                applied_candidate_confidence=0.45,
                source_version=version,
                span_start=SPAN["start"],
                span_end=SPAN["end"],
                dedup_key=f"{prefix}-{node.pk}",
            )
            for node in nodes
        ]
    )
