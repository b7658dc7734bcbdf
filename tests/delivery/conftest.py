"""Delivery fixtures: submissions that open clarifications, a recording fake channel, the
worker loop, window expiry, a second workspace, and row counts for "nothing written".

Plain helpers are importable from this module (`from .conftest import ...`)."""

from dataclasses import dataclass, field
from datetime import timedelta
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest
from django.utils import timezone

import delivery.channels
import delivery.worker
from clarify.models import AuditEvent, Clarification, ResponseRecord
from common.times import to_us
from delivery.cards import Card, Escalation
from delivery.channels import Channel, DeliveryError
from delivery.models import CardAction, Delivery
from graph.models import NodeVersion
from jobs.models import Job, JobStatus
from jobs.services import jobs_reap, jobs_sweep
from jobs.tasks import work
from tenancy.models import Person
from tenancy.services import api_key_create, workspace_load
from tests.conftest import client_for
from tests.submissions import contract_term

JOB_KIND = "clarify:temporal"
PASSWORD = "inbox-pass-" + "x" * 10

# The span text: distinctive, so "never delivered" can be asserted by substring.
SPAN_TEXT = "effective next quarter (ACME-CONFIDENTIAL-7731)"
TEXT = (
    "MASTER SERVICES AGREEMENT between Acme and Vendor. This agreement is "
    f"{SPAN_TEXT} and runs until terminated by either party with 90 days notice."
)
SPAN = {"start": TEXT.index(SPAN_TEXT), "end": TEXT.index(SPAN_TEXT) + len(SPAN_TEXT)}
OCT_2026 = 1_790_812_800_000_000  # 2026-10-01T00:00:00Z
JUL_2026 = 1_782_864_000_000_000  # 2026-07-01T00:00:00Z
JUN_2026 = 1_781_222_400_000_000  # 2026-06-12T00:00:00Z
CANDIDATES = [
    {"validFrom": OCT_2026, "validTo": None, "label": "1 Oct 2026 (next quarter)", "spanRef": 0},
    {"validFrom": JUN_2026, "validTo": None, "label": "12 June (signature)"},
    {"validFrom": JUL_2026, "validTo": None, "label": "1 Jul 2026 (countersignature)"},
]


def build_submission(
    *,
    external_id: str = "contracts/msa.docx",
    title: str = "Master services agreement",
    name: str = "MSA term",
    text: str = TEXT,
    span: dict[str, int] | None = None,
    links: list[tuple[str, str]] | None = None,
    acl: list[str] | None = None,
    restriction: str | None = None,
    severity_hint: str | None = None,
    kind: str = "relative_date",
    candidates: list[dict[str, Any]] | None = None,
    email_domain: str = "acme.test",
) -> dict[str, Any]:
    """A Submission (CONTRACT §3.1) with one fact (ref 0) and its authority edges
    (`tests.submissions.contract_term`): `links` are `(EDGE_TYPE, name)`, alice authored
    and bob mentioned unless given."""
    span = span or SPAN
    return contract_term(
        external_id=external_id,
        title=title,
        name=name,
        text=text,
        span=(span["start"], span["end"]),
        links=[("AUTHORED_BY", "alice"), ("MENTIONS", "bob")] if links is None else links,
        candidates=candidates or CANDIDATES,
        acl=["group:legal"] if acl is None else acl,
        restriction=restriction,
        severity_hint=severity_hint,
        kind=kind,
        email_domain=email_domain,
    )


def submit_with(client: Any, **kwargs: Any) -> Clarification:
    """POST a submission; returns its (one) clarification."""
    resp = client.post("/v1/submissions", build_submission(**kwargs), format="json")
    assert resp.status_code == 201, resp.content
    [clar] = resp.json()["clarifications"]
    return Clarification.objects.select_related("tenant").get(pk=clar["id"])


def job_of(clar: Clarification) -> Job:
    return Job.objects.get(kind=JOB_KIND, subject=str(clar.pk))


def run_worker() -> int:
    """One pass of the in-process worker. Like Django's test client (which disconnects
    `close_old_connections` from the request signals), the per-loop connection recycling
    is switched off: inside a test transaction it would close the test's connection."""
    with mock.patch("jobs.tasks.close_old_connections", lambda: None):
        return work(JOB_KIND, max_seconds=5)


def lapse_lease(clar: Clarification) -> Job:
    """The lease of the current attempt runs out (no heartbeat after a send): the reaper
    re-pends the job with attempts + 1 and run_after = now + the escalation window."""
    job = job_of(clar)
    assert job.status == JobStatus.LEASED, job.status
    Job.objects.filter(pk=job.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=5))
    assert jobs_reap() >= 1
    return job_of(clar)


def window_passes(clar: Clarification) -> Job:
    """The backoff (the escalation window) of a re-pended job has passed and the sweep
    runs: the clarification is `expired` until the next attempt is leased."""
    Job.objects.filter(kind=JOB_KIND, subject=str(clar.pk), status=JobStatus.PENDING).update(
        run_after=timezone.now() - timedelta(seconds=1)
    )
    jobs_sweep()
    return job_of(clar)


def expire_window(clar: Clarification) -> Job:
    """Unanswered past the window: the lease lapses, then the backoff passes."""
    lapse_lease(clar)
    return window_passes(clar)


def events(clar: Clarification, type: str | None = None) -> list[AuditEvent]:
    qs = AuditEvent.objects.filter(clarification=clar).order_by("at", "id")
    return list(qs.filter(type=type) if type else qs)


def event_types(clar: Clarification) -> list[str]:
    return [e.type for e in events(clar)]


def deliveries(clar: Clarification, **filters: Any) -> list[Delivery]:
    return list(Delivery.objects.filter(clarification=clar, **filters).order_by("attempt", "kind"))


def written_counts() -> dict[str, int]:
    """Rows a card action could write."""
    return {
        m.__name__: m.objects.count()
        for m in (ResponseRecord, NodeVersion, AuditEvent, Delivery, CardAction, Job)
    }


def snapshot_rows() -> dict[str, list[dict[str, Any]]]:
    """Every row of the tables a refused card action must leave alone."""
    return {
        m.__name__: list(m.objects.order_by("pk").values())
        for m in (ResponseRecord, NodeVersion, Delivery, Clarification, Job, CardAction)
    }


def acl_set_unheard(source: Any, acl: list[str]) -> None:
    """Change a source's ACL by a path the read-access seam does not hear of (its hooks
    unset): the open cards stay as they were, for the later checks (the digest's, the
    answer's) to catch. tests/delivery/test_read_access.py covers the seam."""
    from unittest import mock

    from graph import access
    from graph.services import source_acl_set

    with mock.patch.object(access, "READ_ACCESS_HOOKS", []):
        source_acl_set(source=source, acl=acl)


def day_us(iso_date: str) -> int:
    from datetime import datetime

    return to_us(datetime.fromisoformat(iso_date + "T00:00:00+00:00"))


# --- the recording fake channel ----------------------------------------------------------


@dataclass
class ChannelLog:
    """What the fake channel was asked to send, with the delivery row seen at send time."""

    cards: list[tuple[str, Card]] = field(default_factory=list)
    digests: list[tuple[str, list[Card]]] = field(default_factory=list)
    escalations: list[tuple[str, Escalation]] = field(default_factory=list)
    rows_at_send: list[dict[str, Any]] = field(default_factory=list)
    unreachable: set[str] = field(default_factory=set)
    fail_next: int = 0
    fail_retryable: bool = True
    send_calls: int = 0

    def person_of(self, address: str) -> Person:
        return Person.objects.get(pk=address.removeprefix("fake:"))

    def texts(self) -> list[str]:
        """Everything sent, as one string per message (for "never contains" checks)."""
        out = [repr(card) for _, card in self.cards]
        out += [repr(cards) for _, cards in self.digests]
        out += [repr(esc) for _, esc in self.escalations]
        return out

    def _maybe_fail(self) -> None:
        self.send_calls += 1
        if self.fail_next > 0:
            self.fail_next -= 1
            raise DeliveryError("stub channel is down", retryable=self.fail_retryable)


class RecordingChannel(Channel):
    """A channel that records every send. It asserts the delivery row (with the card's
    nonce) exists before the send, as the nonce rules require."""

    name = "fake"

    def __init__(self, log: ChannelLog) -> None:
        self.log = log

    def address(self, person: Person, aliases: dict[str, str]) -> str | None:
        if person.erased_at is not None or person.user_id is None:
            return None
        if str(person.pk) in self.log.unreachable:
            return None
        return f"fake:{person.pk}"

    def send_card(self, *, address: str, card: Card) -> str:
        row = Delivery.objects.filter(nonce=card.nonce).values().first()
        assert row is not None, "the nonce must be stored on the delivery before the send"
        assert str(row["person_id"]) == address.removeprefix("fake:")
        assert str(row["clarification_id"]) == card.clarification_id
        self.log.rows_at_send.append(row)
        self.log._maybe_fail()
        self.log.cards.append((address, card))
        return f"{address}:card:{card.nonce}"

    def send_digest(self, *, address: str, cards: list[Card]) -> str:
        for card in cards:
            row = Delivery.objects.filter(nonce=card.nonce).values().first()
            assert row is not None
            assert str(row["person_id"]) == address.removeprefix("fake:")
        self.log._maybe_fail()
        self.log.digests.append((address, list(cards)))
        return f"{address}:digest:{len(self.log.digests)}"

    def send_escalation(self, *, address: str, escalation: Escalation) -> str:
        assert Delivery.objects.filter(
            clarification_id=escalation.clarification_id,
            person_id=address.removeprefix("fake:"),
            kind="escalation",
        ).exists(), "the escalation's delivery row must exist before the send"
        self.log._maybe_fail()
        self.log.escalations.append((address, escalation))
        return f"{address}:escalation:{len(self.log.escalations)}"


def nonce_lookups(queries: Any) -> list[str]:
    """The statements that read a delivery record by its card's nonce."""
    return [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].lstrip().upper().startswith("SELECT")
        and '"delivery_delivery"."nonce" =' in q["sql"]
    ]


def assert_unavailable(resp: Any) -> None:
    """A hook's answer while the shared cache is down."""
    assert resp.status_code == 503, resp.content
    assert resp.json() == {
        "code": "SERVICE_UNAVAILABLE",
        "detail": "The shared cache is unavailable; retry shortly.",
    }
    assert resp["Retry-After"] == "5"


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def cache_down(settings):
    """The shared cache configured exactly as CACHE_URL=redis://… configures it
    (telha.settings.cache_config), pointing at a Redis that is not there; back to the
    test cache before the other fixtures' teardown clears it."""
    from telha.settings import cache_config

    working = settings.CACHES
    settings.CACHES = {"default": cache_config(f"redis://127.0.0.1:{closed_port()}/0")}
    yield settings
    settings.CACHES = working


@pytest.fixture
def cache_failing(monkeypatch):
    """`cache_failing(fragment)`: from now on the hooks' cache raises redis-py's
    ConnectionError for keys containing `fragment` (the rest still works), as a Redis
    going away between two calls of one request would."""
    import redis
    from django.core.cache import cache as real

    import delivery.hooks.ratelimit as ratelimit

    def install(fragment: str) -> None:
        class HalfDown:
            def add(self, key: str, *args: Any, **kwargs: Any) -> bool:
                if fragment in key:
                    raise redis.ConnectionError("Error 111 connecting to 127.0.0.1:6379.")
                return bool(real.add(key, *args, **kwargs))

            def incr(self, key: str, *args: Any, **kwargs: Any) -> int:
                return int(real.incr(key, *args, **kwargs))

        monkeypatch.setattr(ratelimit, "cache", HalfDown())

    return install


@pytest.fixture
def channel(monkeypatch):
    """Replace the configured channels with one recording fake channel; returns its log.
    Retries do not sleep."""
    log = ChannelLog()
    fake = RecordingChannel(log)
    monkeypatch.setattr(delivery.channels, "configured_channels", lambda order=None: [fake])
    monkeypatch.setattr(delivery.worker, "configured_channels", lambda order=None: [fake])
    monkeypatch.setattr(delivery.worker, "RETRY_PAUSE_SECONDS", 0)
    return log


@pytest.fixture
def inbox_only(settings):
    """The real channels, with only the built-in inbox configured."""
    settings.CLARIFY_CHANNELS = ["inbox"]


@pytest.fixture
def clarify_settings(settings):
    """`clarify_settings(KEY=value, ...)` overrides settings.CLARIFY for the test."""

    def apply(**overrides: Any) -> dict[str, Any]:
        settings.CLARIFY = {**settings.CLARIFY, **overrides}
        return settings.CLARIFY

    return apply


@pytest.fixture
def submit(ingest_client):
    """`submit(**build_submission_kwargs)` → the clarification opened in workspace acme."""

    def do(**kwargs: Any) -> Clarification:
        return submit_with(ingest_client, **kwargs)

    return do


@pytest.fixture
def with_passwords(people):
    """Every acme person can sign in to the inbox (and so is reachable by it)."""
    for person in people.values():
        person.user.set_password(PASSWORD)
        person.user.save()
    return people


GLOBEX = {
    "tenant": "globex",
    "name": "Globex",
    "groups": ["legal"],
    "people": [
        {
            "name": "Gina Globex",
            "email": "gina@globex.test",
            "role": "editor",
            "groups": ["legal"],
            "password": PASSWORD,
        },
        {
            "name": "Gus Globex",
            "email": "gus@globex.test",
            "role": "editor",
            "groups": ["legal"],
            "password": PASSWORD,
        },
        {
            "name": "Sally Steward",
            "email": "sally@globex.test",
            "role": "steward",
            "groups": ["legal"],
            "password": PASSWORD,
        },
    ],
}


@pytest.fixture
def globex(workspace):
    """A second workspace (tenant B) with its own legal group, editors and steward."""
    tenant = workspace_load(data=GLOBEX).tenant
    _, secret = api_key_create(tenant=tenant, audience="ingest")
    return SimpleNamespace(
        tenant=tenant,
        people={p.email.split("@")[0]: p for p in tenant.people.all()},
        ingest_client=client_for(secret),
    )


# Slack fixtures (stub of the Web API, signed requests): tests/delivery/conftest_slack.py
# Ask-in-chat fixtures (ASK_ENABLED, a world of facts): tests/delivery/conftest_ask.py
from .conftest_ask import ask_on, world  # noqa: E402
from .conftest_slack import slack_payloads, slack_post, slack_settings, slack_stub  # noqa: E402

# Teams fixtures (Bot Framework stub, locally signed tokens): tests/delivery/conftest_teams.py
from .conftest_teams import (  # noqa: E402
    teams_activities,
    teams_alice,
    teams_post,
    teams_settings,
    teams_stub,
    teams_token,
)

__all__ = [
    "ask_on",
    "slack_payloads",
    "slack_post",
    "slack_settings",
    "slack_stub",
    "teams_activities",
    "teams_alice",
    "teams_post",
    "teams_settings",
    "teams_stub",
    "teams_token",
    "world",
]
