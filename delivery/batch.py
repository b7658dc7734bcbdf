"""The delivery worker's batch form (`settings.JOB_BATCH_WORKERS`): `telha.jobs.tasks.work`
hands it a round of leased `clarify:temporal` jobs at once.

It takes the leases whose current candidate is asked straight away — the clarification
open and of low, normal or critical severity, the candidate known, active, reachable on a
channel of the tenant's order, allowed to read the source and under the daily cap — and
does for them what `delivery.worker.handle_lease` does, with what it reads fetched once
per batch instead of once per card: the clarifications, the candidates, their chat
identities, the read-permission floor (once per source), the channel order (once per
tenant), whether the tenant has restricted excerpts at all, and the daily-cap and digest
counts, kept in memory and counted up as the batch issues cards (so two cards to one
person in one batch count as two, as they do one by one).

Everything else — a skip, the steward escalation, a high-severity card (its stewards'
FYI), a re-send of an attempt's existing card, a clarification closed or a lease lost
meanwhile, a second job of one clarification — is left to `handle_lease`, which `work()`
runs next, one lease at a time: as if the batch's cards had been leased first.

The delivery rows are made in one transaction, under the clarifications' row locks taken
in id order, after re-reading their state and that the leases are still held, exactly as
`_delivery_record` makes one: each row with its fresh nonce is committed before its card
is sent. A failing transaction writes nothing and leaves every lease to `handle_lease`.
Then the sends — on a channel whose sends touch no database (Slack) SEND_THREADS at a
time from a thread pool, else one by one — and each outcome handled in lease order: a
failed send is audited and fails its job as on the per-lease path, and does not touch
the others. The sent rows are updated in one
statement and the events appended in one (each job's audit log lines carry the id of
the request that enqueued it)."""

import logging
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connections, router, transaction
from django.db.models import Count, Q
from django.utils import timezone

from clarify.models import AuditEvent, Clarification, Severity, State
from clarify.policy import policy_for
from clarify.reports import target_names
from telha.common.codes import SkipReason
from telha.common.observability import request_id_var
from telha.common.times import now_us
from telha.jobs.models import Job, JobStatus
from telha.jobs.services import Lease, LeaseLost
from telha.jobs.tasks import fail_after_bug, still_held
from telha.tenancy.models import Person
from telha.tenancy.selectors import aliases_for

from . import worker
from .cards import Card
from .channels import DeliveryError
from .gate import floor_check
from .models import Delivery, DeliveryKind, DeliveryStatus
from .restriction import tenant_has_restricted_excerpts

log = logging.getLogger(__name__)
CLOSED = (State.ANSWERED, State.CONFLICTED)
COUNTED = (DeliveryStatus.SENT, DeliveryStatus.QUEUED_DIGEST)  # what the daily cap counts
# Sends at once on a channel with `threaded_sends` (Slack: one Web API call each).
SEND_THREADS = 4


@dataclass
class Ask:
    """One lease the batch asks for: its candidate, the route and whether the card is
    queued for a digest; `delivery` once its row is made."""

    lease: Lease
    clar: Clarification
    person: Person
    attempt: int
    route: worker.Route
    digest: bool
    delivery: Delivery | None = None


@dataclass(frozen=True)
class Candidate:
    lease: Lease
    clar: Clarification
    person_id: str


def handle_leases(leases: list[Lease]) -> list[Lease]:
    """Deliver the batch's straightforward cards; returns the leases left to the
    per-lease handler, in their order."""
    asks = _plan(_candidates(leases))
    if asks:
        try:
            asks = _record(asks)
        except DatabaseError:
            log.exception("the delivery rows of %d cards rolled back; one by one now", len(asks))
            return leases
        try:
            _deliver(asks)
        except Exception:  # the rows exist and cards went out: never handled twice
            log.exception("the batch of %d cards failed after its rows were made", len(asks))
    taken = {ask.lease.job.pk for ask in asks}
    return [lease for lease in leases if lease.job.pk not in taken]


def _candidates(leases: list[Lease]) -> list[Candidate]:
    """The leases whose clarification is open and not high severity, with the candidate
    of the current attempt (the steward escalation and malformed payloads are left)."""
    wanted: list[tuple[Lease, str]] = []
    for lease in leases:
        payload = lease.job.payload if isinstance(lease.job.payload, dict) else {}
        ids = worker._valid_uuids([str(payload.get("clarificationId") or "")])
        if ids:
            wanted.append((lease, ids[0]))
    clars = {
        str(c.pk): c
        for c in Clarification.objects.select_related(
            "tenant", "source_version__source", "target"
        ).filter(pk__in={clar_id for _, clar_id in wanted})
    }
    seen: set[str] = set()
    out = []
    for lease, clar_id in wanted:
        clar = clars.get(clar_id)
        ranking = [str(p) for p in lease.job.payload.get("ranking") or []]
        attempt = lease.job.attempts
        if clar is None or clar.tenant_id != lease.job.tenant_id or clar_id in seen:
            continue
        seen.add(clar_id)
        if clar.state in CLOSED or clar.severity == Severity.HIGH or attempt >= len(ranking):
            continue
        out.append(Candidate(lease, clar, ranking[attempt]))
    return out


def _plan(candidates: list[Candidate]) -> list[Ask]:
    """The candidates asked now, in lease order, with the gate, the cap and the digest
    decided as `handle_lease` decides them; the counts go up with every card."""
    people = {
        str(p.pk): p
        for p in Person.objects.select_related("user", "tenant").filter(
            pk__in=worker._valid_uuids([c.person_id for c in candidates])
        )
    }
    aliases = aliases_for(people)
    verdicts = _verdicts(candidates, people)
    orders: dict[Any, list[str] | None] = {}
    today, recent = _counts(people)
    asks = []
    for c in candidates:
        person = people.get(c.person_id)
        if c.clar.tenant_id not in orders:
            orders[c.clar.tenant_id] = policy_for(c.clar.tenant).channel_order
        order = orders[c.clar.tenant_id]
        sent = today[c.person_id]
        floor = verdicts[c.clar.source_version.source_id]
        reason = worker._skip_reason(c.clar, person, floor, aliases, order, sent_today=sent)
        if reason is not None or person is None:
            continue  # the per-lease handler audits the skip and moves on
        route = worker.route_for(person, aliases.get(c.person_id, {}), order)
        assert route is not None
        digest = c.clar.severity in (Severity.LOW, Severity.NORMAL) and (
            recent[c.person_id] >= settings.CLARIFY["DIGEST_THRESHOLD"]
        )
        today[c.person_id] += 1
        recent[c.person_id] += 1
        asks.append(Ask(c.lease, c.clar, person, c.lease.job.attempts, route, digest))
    return asks


def _verdicts(
    candidates: list[Candidate], people: dict[str, Person]
) -> dict[Any, dict[Any, SkipReason | None]]:
    """`floor_check` once per source, for that source's candidates (a person's verdict
    depends only on the source and the person): `{source id: {person id: verdict}}`."""
    by_source: dict[Any, tuple[Clarification, dict[str, Person]]] = {}
    for c in candidates:
        _, asked = by_source.setdefault(c.clar.source_version.source_id, (c.clar, {}))
        if c.person_id in people:
            asked[c.person_id] = people[c.person_id]
    return {
        source_id: floor_check(clar, asked.values())
        for source_id, (clar, asked) in by_source.items()
    }


def _counts(people: dict[str, Person]) -> tuple[defaultdict[str, int], defaultdict[str, int]]:
    """Per person, in one query: the question cards of the last day that the daily cap
    counts (`_sent_today`) and those of the digest window (`_recent_for_person`)."""
    now = timezone.now()
    day = now - timedelta(days=1)
    window = now - timedelta(minutes=settings.CLARIFY["DIGEST_WINDOW_MINUTES"])
    rows = (
        Delivery.objects.filter(
            person_id__in=list(people), kind=DeliveryKind.QUESTION, created_at__gte=min(day, window)
        )
        .order_by()
        .values("person_id")
        .annotate(
            today=Count("pk", filter=Q(status__in=COUNTED, created_at__gte=day)),
            recent=Count("pk", filter=Q(created_at__gte=window)),
        )
    )
    today: defaultdict[str, int] = defaultdict(int)
    recent: defaultdict[str, int] = defaultdict(int)
    for row in rows:
        today[str(row["person_id"])] = row["today"]
        recent[str(row["person_id"])] = row["recent"]
    return today, recent


def _record(asks: list[Ask]) -> list[Ask]:
    """The delivery rows of the asks that still stand, in one transaction: the
    clarifications locked in id order and re-read (answered or conflicted: left), the
    leases checked (lost: left), an attempt that has its row already left (the
    per-lease re-send keeps its nonce), then one INSERT of the new rows with fresh nonces
    and one UPDATE of `cards_issued`. Returns the asks with their rows."""
    clar_ids = sorted({ask.clar.pk for ask in asks})
    job_ids = [ask.lease.job.pk for ask in asks]
    with transaction.atomic():
        states = {
            pk: (state, issued)
            for pk, state, issued in Clarification.objects.select_for_update()
            .filter(pk__in=clar_ids)
            .order_by("pk")
            .values_list("pk", "state", "cards_issued")
        }
        held = set(
            Job.objects.filter(pk__in=job_ids, status=JobStatus.LEASED).values_list(
                "pk", "lease_token"
            )
        )
        existing = set(
            Delivery.objects.filter(job_id__in=job_ids, kind=DeliveryKind.QUESTION).values_list(
                "clarification_id", "job_id", "attempt", "person_id"
            )
        )
        kept = [
            ask
            for ask in asks
            if ask.clar.pk in states
            and states[ask.clar.pk][0] not in CLOSED
            and (ask.lease.job.pk, ask.lease.token) in held
            and (ask.clar.pk, ask.lease.job.pk, ask.attempt, ask.person.pk) not in existing
        ]
        for ask in kept:
            ask.delivery = Delivery(
                tenant_id=ask.clar.tenant_id,
                clarification=ask.clar,
                person=ask.person,
                job_id=ask.lease.job.pk,
                attempt=ask.attempt,
                kind=DeliveryKind.QUESTION,
                channel=ask.route.channel.name,
                status=DeliveryStatus.QUEUED_DIGEST if ask.digest else DeliveryStatus.SENT,
                nonce=worker._new_nonce(),
            )
        Delivery.objects.bulk_create([ask.delivery for ask in kept if ask.delivery])
        unissued = {ask.clar.pk for ask in kept if not states[ask.clar.pk][1]}
        if unissued:
            Clarification.objects.filter(pk__in=unissued).update(cards_issued=True)
    return kept


def _deliver(asks: list[Ask]) -> None:
    """After the rows committed: each card built in lease order (a digest's only
    audited), the cards sent (`_send_all`), each outcome handled in lease order as
    `_ask` handles it, then the sent rows updated in one statement and the events
    appended."""
    restricted: dict[Any, bool] = {}
    names = target_names([ask.clar for ask in asks if not ask.digest])
    events: list[tuple[str, AuditEvent]] = []  # (the job's request id, the event)
    cards: list[tuple[Ask, Card]] = []
    for ask in asks:
        with _request_of(ask), _failing_its_job(ask):
            if ask.digest:
                events.append((ask.lease.job.request_id, _digested(ask)))
            else:
                cards.append((ask, _card(ask, restricted, names)))
    sent: list[Delivery] = []
    for (ask, _), outcome in zip(cards, _send_all(cards), strict=True):
        with _request_of(ask), _failing_its_job(ask):
            if isinstance(outcome, Exception):
                raise outcome
            events.append((ask.lease.job.request_id, _delivered(ask, outcome)))
            assert ask.delivery is not None
            sent.append(ask.delivery)
    try:
        _write_outcomes(sent, events)
    except Exception as exc:  # as a per-lease handler raising after its send
        log.exception("the outcomes of %d cards were not written", len(sent))
        for ask, _ in cards:
            if ask.delivery in sent:
                fail_after_bug(ask.lease, exc)


@contextmanager
def _request_of(ask: Ask) -> Iterator[None]:
    """The id of the request that enqueued the ask's job, as around a per-lease handler."""
    token = request_id_var.set(ask.lease.job.request_id)
    try:
        yield
    finally:
        request_id_var.reset(token)


@contextmanager
def _failing_its_job(ask: Ask) -> Iterator[None]:
    """A send that still failed is audited and fails the job (`worker.delivery_failed`
    with its lease); anything else raised fails the job like a per-lease handler's bug.
    The other asks go on."""
    assert ask.delivery is not None
    try:
        yield
    except DeliveryError as exc:
        try:
            worker.delivery_failed(
                ask.clar,
                ask.delivery,
                exc,
                attempt=ask.attempt,
                person=ask.person,
                route=ask.route,
                lease=ask.lease,
            )
        except LeaseLost:
            _log_lease_lost(ask)
    except LeaseLost:
        _log_lease_lost(ask)
    except Exception as exc:
        log.exception("job %s failed in its batch handler", ask.lease.job.pk)
        fail_after_bug(ask.lease, exc)


def _log_lease_lost(ask: Ask) -> None:
    log.info("lease on job %s was lost; another worker or a re-ask owns it now", ask.lease.job.pk)


def _digested(ask: Ask) -> AuditEvent:
    assert ask.delivery is not None
    detail = worker.digested_detail(ask.lease, ask.attempt, ask.person, ask.route, ask.delivery)
    return _audit_event(ask.clar, "digested", detail)


def _card(ask: Ask, restricted: dict[Any, bool], names: dict[Any, str]) -> Card:
    """The ask's card through the restriction gate; whether the tenant has restricted
    excerpts at all is asked once per tenant (none: nothing to look up per card)."""
    clar, route = ask.clar, ask.route
    assert ask.delivery is not None
    excerpts: list[str] | None = None
    if route.channel.name != "inbox":
        if clar.tenant_id not in restricted:
            restricted[clar.tenant_id] = tenant_has_restricted_excerpts(clar.tenant_id)
        excerpts = None if restricted[clar.tenant_id] else []
    name = names[clar.target_id]
    return worker.outgoing_card(clar, ask.delivery, route, ask.attempt, excerpts, name)


def _send_all(cards: list[tuple[Ask, Card]]) -> list[str | Exception]:
    """Each card's message reference or the exception its send raised, in order, sent
    SEND_THREADS at a time: the cards of a channel with `threaded_sends` (they touch no
    database) from a thread pool, the others from this thread meanwhile. Before each
    group the leases are checked as `work()` checks a lease that waited (one more than
    half spent is extended; a lost one is not sent: `LeaseLost`)."""
    width = max(1, SEND_THREADS)
    outcomes: list[str | Exception] = []
    with ThreadPoolExecutor(width) as pool:
        for start in range(0, len(cards), width):
            group: list[str | Exception | Future[str | Exception]] = []
            for ask, card in cards[start : start + width]:
                if not still_held(ask.lease):
                    group.append(LeaseLost())
                elif ask.route.channel.threaded_sends and width > 1:
                    group.append(pool.submit(_send_one, ask, card))
                else:
                    group.append(_send_one(ask, card))
            outcomes += [o.result() if isinstance(o, Future) else o for o in group]
    return outcomes


def _send_one(ask: Ask, card: Card) -> str | Exception:
    with _request_of(ask):
        try:
            return worker.send_card(ask.route, card)
        except Exception as exc:
            return exc


def _delivered(ask: Ask, ref: str) -> AuditEvent:
    """The sent row's message reference and send time (written by `_write_outcomes`),
    and its `delivered` event."""
    delivery = ask.delivery
    assert delivery is not None
    delivery.status, delivery.message_ref = DeliveryStatus.SENT, ref[:500]
    delivery.sent_at = timezone.now()
    detail = worker.delivered_detail(ask.lease, ask.attempt, ask.person, ask.route, delivery, ref)
    return _audit_event(ask.clar, "delivered", detail)


def _audit_event(clar: Clarification, type: str, detail: dict[str, Any]) -> AuditEvent:
    return AuditEvent(tenant=clar.tenant, clarification=clar, at=now_us(), type=type, detail=detail)


# The sent rows' outcome, literal: one UPDATE a row, all of a batch's rows in one
# `executemany` (psycopg pipelines it: one round trip). The ORM statement it replaces,
# `Delivery.objects.bulk_update(sent, ["status", "message_ref", "sent_at"])`, built a
# CASE WHEN per row and field: a third of the batch worker's CPU. Compared with it by
# tests/delivery/test_batch.py.
SENT_SQL = (
    'UPDATE "delivery_delivery" SET "status" = %s, "message_ref" = %s, "sent_at" = %s'
    ' WHERE "id" = %s'
)


def sent_rows_write(sent: list[Delivery]) -> None:
    """Write each sent row's status, message reference and send time (`SENT_SQL`)."""
    connection = connections[router.db_for_write(Delivery)]
    pk, at = Delivery._meta.pk, Delivery._meta.get_field("sent_at")
    rows = [
        (
            d.status,
            d.message_ref,
            at.get_db_prep_value(d.sent_at, connection),
            pk.get_db_prep_value(d.pk, connection),
        )
        for d in sent
    ]
    atomic = transaction.atomic(using=connection.alias, savepoint=False)
    with atomic, connection.cursor() as cursor:
        cursor.executemany(SENT_SQL, rows)


def _write_outcomes(sent: list[Delivery], events: list[tuple[str, AuditEvent]]) -> None:
    """The sent rows (`sent_rows_write`); the events in one INSERT, the audit log line of
    each under the id of its job's request."""
    if sent:
        sent_rows_write(sent)
    if events:
        AuditEvent.objects.append([e for _, e in events], request_ids=[r for r, _ in events])
