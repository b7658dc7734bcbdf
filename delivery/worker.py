"""The delivery worker (the clarify-bot, acting with the `clarify` audience): the handler
of `clarify:temporal` jobs (`handle_leases`, registered in `DeliveryConfig.ready`). It takes each
leased round whole; one lease is a round of one. Attempt N of a job asks ranking[N]; the
attempt after the last candidate is the redacted steward escalation.

A round is load → plan → record → send:

1. `_load`: what the round's plans read, once for all its leases — the clarifications,
   the ranked people, their chat identities, the read floor (once per source), the
   channels of each tenant's order, and each person's question cards of the last day and
   of the digest window (one grouped query).
2. `_record`, one transaction: the round's jobs still held locked
   (`jobs.services.leases_lock`), their clarifications locked in id order and their
   state re-read, the cards their jobs issued before; the plan of each lease
   (`delivery.plan`, pure; the counts go up with every card planned); then what the plans
   write — the `skipped`, `digested` and `resend_withheld` events, the jobs moved on past
   their skipped candidates (burning no escalation window), completed (the clarification
   closed) or failed (it names none), the new delivery rows with their fresh nonces and
   `cards_issued`. A card's row and nonce exist before it is sent, and only while its
   lease is held: a re-ask supersedes the job, an answer closes the nonces.
3. `_send`: each card through the restriction gate off the inbox, the steward messages
   likewise (a block is audited); on a channel whose sends touch no database (Slack)
   SEND_THREADS at a time, else one by one; each lease checked before its send (one more
   than half spent is extended, a lost one is not sent); each send retried inside the
   lease.
4. The outcomes, in lease order: the sent rows and the events in one statement each; a
   send that still fails is audited (`delivery_failed`) and fails its job retryable with
   DELIVERY_FAILED, a skip code, so the next candidate is asked at once; an escalation that
   reached no steward is retried after one window (up to ESCALATION_RETRIES times), and
   dies when nobody was reachable. After a card is sent the worker stops heartbeating:
   lease expiry plus the kind's backoff is the escalation window. A high-severity card's
   stewards' FYI follows as its own plan, record and send (NOTIFY), once per clarification.

Deliveries are keyed by (clarification, routing job, attempt, person, kind): leasing the
same attempt again re-sends its card with its nonce, never once that nonce is revoked or
closed (`resend_withheld`); a re-ask's new job gets fresh rows and nonces. Every event of a
lease is logged under the id of the request that enqueued its job."""

import logging
import secrets
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from clarify.audit import clarifications_hold
from clarify.models import AuditEvent, Clarification, ResponseRecord, Severity
from clarify.policy import policy_for
from clarify.reports import target_names
from clarify.routing import skip_reasons
from clarify.services import audit_event_append, audit_events_append
from common.codes import JobReason, SkipReason
from common.observability import request_id_var
from common.times import now_us
from jobs.services import (
    Lease,
    LeaseLost,
    job_advance,
    job_complete,
    job_fail,
    lease_attempt_add,
    lease_renew,
    leases_lock,
)
from jobs.tasks import fail_after_bug
from tenancy.models import Person, Rights
from tenancy.selectors import aliases_for

from .cards import (
    Card,
    Escalation,
    build_card,
    build_escalation,
    build_steward_notice,
    card_of_row,
    delegated_card,
    reminder_card,
)
from .channels import Channel, DeliveryError, Route, configured_channels, route_for
from .gate import floor_check
from .models import Delivery, DeliveryKind, DeliveryStatus, NonceState
from .plan import (
    DELETED,
    ClarView,
    Issued,
    JobView,
    Limits,
    Plan,
    Reach,
    Reminding,
    Step,
    lease_plan,
    notice_plan,
    reminder_plan,
    steward_messages,
)
from .reminders import reminders_enqueue
from .restriction import (
    excerpt_for_chat,
    gated_card,
    gated_escalation,
    restricted_content_blocked,
    tenant_has_restricted_excerpts,
)
from .sql import sent_rows_write

log = logging.getLogger(__name__)

# A steward escalation that failed on every reachable steward is retried after the
# kind's backoff (one escalation window) this many times before the job dies.
ESCALATION_RETRIES = 3
SEND_RETRIES = 3
RETRY_PAUSE_SECONDS = 0.2
# Sends at once on a channel with `threaded_sends` (Slack: one Web API call each).
SEND_THREADS = 4
# What the daily cap counts of a person's question cards.
COUNTED = (DeliveryStatus.SENT, DeliveryStatus.QUEUED_DIGEST)


@dataclass
class Round:
    """What a round's plans read, loaded once for all its leases (`_load`): each job's
    clarification (of its own tenant), the ranked people and their chat identities, the
    read floor by source and person, each tenant's channels in its order, the question
    cards each person has of the last day and of the digest window (counted up as the
    round plans cards), and the stewards once an escalation or a notice needs them."""

    clars: dict[Any, Clarification]
    people: dict[str, Person]
    aliases: dict[str, dict[str, str]]
    verdicts: dict[Any, dict[Any, SkipReason | None]]
    channels: dict[Any, list[Channel]]
    today: defaultdict[str, int]
    recent: defaultdict[str, int]
    limits: Limits
    stewards: dict[Any, list[Person]] = field(default_factory=dict)
    reminders: dict[Any, float | None] = field(default_factory=dict)  # hours, by tenant


@dataclass
class Leased:
    """One lease of the round: its clarification, its plan, the rows the plan made or
    sends again (its question card, or one per steward message), and what the sends
    did."""

    lease: Lease
    clar: Clarification | None
    plan: Plan = field(default_factory=lambda: Plan(Step.LOST))
    asked: Person | None = None  # the candidate asked (a notice is about them)
    on_behalf: Person | None = None  # the away candidate a delegate is asked for
    rows: list[Delivery] = field(default_factory=list)
    reasons: list[dict[str, Any]] = field(default_factory=list)  # an escalation's skip reasons
    sent_to: list[str] = field(default_factory=list)
    failed_to: list[str] = field(default_factory=list)
    lost: bool = False  # the lease went, or a bug failed the job, during the sends


@dataclass
class Message:
    """One send: a question card or a steward's message, on its row's route."""

    item: Leased
    row: Delivery
    person: Person
    route: Route
    card: Card | None = None
    escalation: Escalation | None = None


Planner = Callable[[Round, Leased, JobView, ClarView | None, dict[Any, Delivery]], Plan]


def handle_leases(leases: list[Lease]) -> None:
    """Process a round of leased clarify:temporal jobs (see the module docstring). It
    raises only before anything is written or sent (the round's transaction rolled
    back); after that a failure fails the jobs it touched, not the round."""
    round_ = _load(leases)
    items = _record(round_, [Leased(lease, round_.clars.get(lease.job.pk)) for lease in leases])
    try:
        notices = _deliver(round_, items)
        if notices:
            _notify(round_, notices)
    except Exception:  # the rows exist and cards went out: never handled twice
        log.exception("the delivery of a round of %d leases failed after its rows", len(leases))


# --- 1. load -----------------------------------------------------------------------------


def _load(leases: list[Lease]) -> Round:
    """The round's reads (see `Round`); the people are those ranked from each job's
    current attempt on."""
    clars = _clarifications(leases)
    ranked = {
        person
        for lease in leases
        if lease.job.pk in clars
        for person in _ranking(lease.job)[lease.job.attempts :]
    }
    people = _people(ranked)
    policies = {
        clar.tenant_id: policy_for(clar.tenant)
        for clar in {c.tenant_id: c for c in clars.values()}.values()
    }
    channels = {t: configured_channels(p.channel_order) for t, p in policies.items()}
    today, recent = _counts(people)
    limits = Limits(
        daily_cap=settings.CLARIFY["PER_PERSON_DAILY_CAP"],
        digest_threshold=settings.CLARIFY["DIGEST_THRESHOLD"],
    )
    return Round(
        clars,
        people,
        aliases_for(people),
        _verdicts(leases, clars, people),
        channels,
        today,
        recent,
        limits,
        reminders={t: p.reminder_after_hours for t, p in policies.items()},
    )


def _people(ranked: set[str]) -> dict[str, Person]:
    """The ranked people by id, and the delegates of those away today (one more query
    when someone is)."""
    found = Person.objects.select_related("user", "tenant")
    people = {str(p.pk): p for p in found.filter(pk__in=_uuids(ranked))}
    today = timezone.now().date()
    delegates = {
        str(p.away_delegate_id)
        for p in people.values()
        if p.away_delegate_id is not None and p.away_on(today)
    } - set(people)
    if delegates:
        people.update((str(p.pk), p) for p in found.filter(pk__in=list(delegates)))
    return people


def _clarifications(leases: list[Lease]) -> dict[Any, Clarification]:
    """Each job's clarification, by job id, when its payload names one of the job's
    tenant."""
    wanted = {lease.job.pk: _clarification_id(lease.job) for lease in leases}
    found = {
        str(c.pk): c
        for c in Clarification.objects.select_related(
            "tenant", "source_version__source", "target"
        ).filter(pk__in=_uuids(wanted.values()))
    }
    out = {}
    for lease in leases:
        clar = found.get(wanted[lease.job.pk])
        if clar is not None and clar.tenant_id == lease.job.tenant_id:
            out[lease.job.pk] = clar
    return out


def _verdicts(
    leases: list[Lease], clars: dict[Any, Clarification], people: dict[str, Person]
) -> dict[Any, dict[Any, SkipReason | None]]:
    """`floor_check` once per source, for the people ranked on that source's
    clarifications (a person's verdict depends only on the source and the person):
    `{source id: {person id: verdict}}`."""
    by_source: dict[Any, tuple[Clarification, dict[str, Person]]] = {}
    for lease in leases:
        clar = clars.get(lease.job.pk)
        if clar is None:
            continue
        _, asked = by_source.setdefault(clar.source_version.source_id, (clar, {}))
        for person in _ranking(lease.job)[lease.job.attempts :]:
            if person in people:
                asked[person] = people[person]
                delegate = str(people[person].away_delegate_id)
                if delegate in people:  # away today with a delegate: the same gate
                    asked[delegate] = people[delegate]
    return {
        source: floor_check(clar, asked.values()) for source, (clar, asked) in by_source.items()
    }


def _counts(people: dict[str, Person]) -> tuple[defaultdict[str, int], defaultdict[str, int]]:
    """Per person, in one query: the question cards of the last day the daily cap counts,
    and those of the digest window."""
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


def _clarification_id(job: Any) -> str:
    payload = job.payload if isinstance(job.payload, dict) else {}
    return str(payload.get("clarificationId") or "")


def _ranking(job: Any) -> list[str]:
    payload = job.payload if isinstance(job.payload, dict) else {}
    return [str(p) for p in payload.get("ranking") or []]


def _uuids(values: Any) -> list[str]:
    """The values that are UUIDs (a malformed id names nobody)."""
    out = []
    for value in values:
        try:
            out.append(str(uuid.UUID(value)))
        except ValueError:
            continue
    return out


# --- 2. plan and record ------------------------------------------------------------------


def _record(round_: Round, items: list[Leased], planner: Planner | None = None) -> list[Leased]:
    """Plan each lease under the round's locks and write what the plans say, in one
    transaction (see the module docstring). `planner`: the plan of one lease
    (`_lease_plan` by default)."""
    plan_of = planner or _lease_plan
    with transaction.atomic():
        held = leases_lock([item.lease for item in items])
        states = _locked({item.clar.pk for item in items if item.clar is not None})
        issued = _issued({item.lease.job.pk for item in items} & held)
        for item in items:
            job = item.lease.job
            view = JobView(job.pk in held, job.attempts, job.max_attempts, _ranking(job))
            clar = None
            if item.clar is not None:
                clar = ClarView(states.get(item.clar.pk, (DELETED, False))[0], item.clar.severity)
            item.plan = plan_of(round_, item, view, clar, issued.get(job.pk, {}))
        _with_stewards(round_, items, issued)
        _write(round_, items, states, issued)
    return items


def _lease_plan(
    round_: Round, item: Leased, job: JobView, clar: ClarView | None, issued: dict[Any, Delivery]
) -> Plan:
    """`delivery.plan.lease_plan` with the round's facts; a card planned counts at once
    toward its person's daily cap and digest threshold."""
    people = {}
    if item.clar is not None:
        for person in job.ranking[job.attempts :]:
            reach = _reach(round_, item.clar, person)
            if reach is not None:
                people[person] = reach
                if reach.delegate and reach.delegate not in people:
                    delegate = _reach(round_, item.clar, reach.delegate)
                    if delegate is not None:
                        people[reach.delegate] = delegate
    cards = {
        (attempt, person): _issued_view(row)
        for (attempt, person, kind), row in issued.items()
        if kind == DeliveryKind.QUESTION
    }
    plan = lease_plan(job, clar, people, cards, round_.limits)
    if plan.new_card:
        round_.today[plan.person] += 1
        round_.recent[plan.person] += 1
    return plan


def _reach(round_: Round, clar: Clarification, person_id: str) -> Reach | None:
    """A ranked person as the plan reads them (None: nobody known by that id)."""
    person = round_.people.get(person_id)
    if person is None:
        return None
    # Fails closed: a person the round did not check on this source may not read it.
    verdicts = round_.verdicts[clar.source_version.source_id]
    verdict = verdicts.get(person.pk, SkipReason.NO_READ_PERMISSION)
    deactivated = person.deactivated_at is not None
    away = person.away_on(timezone.now().date())
    route = None
    if not deactivated and verdict is None and not away:
        aliases = round_.aliases.get(person_id, {})
        route = route_for(person, aliases, channels=round_.channels[clar.tenant_id])
    delegate = str(person.away_delegate_id) if away and person.away_delegate_id else None
    return Reach(
        deactivated,
        verdict,
        route,
        round_.today[person_id],
        round_.recent[person_id],
        away=away,
        delegate=delegate,
    )


def _notice_planner(
    round_: Round, item: Leased, job: JobView, clar: ClarView | None, issued: dict[Any, Delivery]
) -> Plan:
    assert clar is not None and item.asked is not None
    return notice_plan(job, clar, item.plan.attempt, str(item.asked.pk))


def _locked(clar_ids: set[Any]) -> dict[Any, tuple[str, bool]]:
    """The clarifications locked in id order: `{id: (state, cards_issued)}`."""
    return {
        pk: (state, issued)
        for pk, state, issued in Clarification.objects.select_for_update()
        .filter(pk__in=clar_ids)
        .order_by("pk")
        .values_list("pk", "state", "cards_issued")
    }


def _issued(job_ids: set[Any]) -> dict[Any, dict[Any, Delivery]]:
    """The cards the held jobs issued before: `{job id: {(attempt, person id, kind): row}}`."""
    out: dict[Any, dict[Any, Delivery]] = {}
    if job_ids:
        for row in Delivery.objects.filter(job_id__in=job_ids):
            out.setdefault(row.job_id, {})[(row.attempt, str(row.person_id), row.kind)] = row
    return out


def _issued_view(row: Delivery) -> Issued:
    return Issued(row.pk, row.kind, row.nonce_state)


def _with_stewards(
    round_: Round, items: list[Leased], issued: dict[Any, dict[Any, Delivery]]
) -> None:
    """The steward messages of the escalations and notices planned: each active steward
    of the clarification's tenant on their first reachable channel (read once per
    tenant), with the card this attempt issued them before."""
    wanted = [i for i in items if i.plan.step in (Step.ESCALATE, Step.NOTIFY)]
    tenants = {i.clar.tenant_id for i in wanted if i.clar is not None} - set(round_.stewards)
    if tenants:
        found = Person.objects.select_related("user").filter(
            tenant_id__in=tenants,
            role=Rights.STEWARD,
            erased_at__isnull=True,
            deactivated_at__isnull=True,
        )
        for tenant in tenants:
            round_.stewards[tenant] = [p for p in found if p.tenant_id == tenant]
        round_.aliases.update(aliases_for(p.pk for p in found))
    for item in wanted:
        assert item.clar is not None
        order = round_.channels[item.clar.tenant_id]
        stewards = [
            (str(s.pk), route_for(s, round_.aliases.get(str(s.pk), {}), channels=order))
            for s in round_.stewards[item.clar.tenant_id]
        ]
        mine = issued.get(item.lease.job.pk, {})
        cards = {
            person: _issued_view(row)
            for (attempt, person, kind), row in mine.items()
            if kind == DeliveryKind.ESCALATION and attempt == item.plan.attempt
        }
        item.plan = steward_messages(item.plan, stewards, cards)


def _write(
    round_: Round,
    items: list[Leased],
    states: dict[Any, tuple[str, bool]],
    issued: dict[Any, dict[Any, Delivery]],
) -> None:
    """What the plans write, in the round's transaction: the rows of their cards (new
    ones with fresh nonces, in one INSERT), their events (one INSERT), the jobs moved on,
    completed or failed, and `cards_issued` for the clarifications with their first
    card."""
    new: list[Delivery] = []
    events: list[tuple[str, AuditEvent]] = []
    for item in items:
        new += _rows(round_, item, issued.get(item.lease.job.pk, {}))
        events += [(item.lease.job.request_id, e) for e in _planned_events(item)]
    if events:
        audit_events_append([e for _, e in events], request_ids=[r for r, _ in events])
    for item in items:
        with _request_of(item.lease):
            _job_moves(item)
    if new:
        Delivery.objects.bulk_create(new)
        unissued = {d.clarification_id for d in new if not states[d.clarification_id][1]}
        if unissued:
            Clarification.objects.filter(pk__in=unissued).update(cards_issued=True)


def _rows(round_: Round, item: Leased, issued: dict[Any, Delivery]) -> list[Delivery]:
    """The item's rows (`Leased.rows`); returns the new ones, not yet saved."""
    plan, clar = item.plan, item.clar
    if plan.step in (Step.ASK, Step.DIGEST):
        assert clar is not None and plan.route is not None
        item.asked = round_.people[plan.person]
        item.on_behalf = round_.people[plan.on_behalf] if plan.on_behalf else None
        kind, who = DeliveryKind.QUESTION, [(item.asked, plan.route)]
    elif plan.step in (Step.ESCALATE, Step.NOTIFY):
        assert clar is not None
        stewards = {str(s.pk): s for s in round_.stewards[clar.tenant_id]}
        kind, who = DeliveryKind.ESCALATION, [(stewards[m.steward], m.route) for m in plan.stewards]
    else:
        return []
    new = []
    for person, route in who:
        row = issued.get((plan.attempt, str(person.pk), kind))
        if row is None:
            digest = plan.step is Step.DIGEST
            row = Delivery(
                tenant_id=clar.tenant_id,
                clarification=clar,
                person=person,
                job_id=item.lease.job.pk,
                attempt=plan.attempt,
                kind=kind,
                channel=route.channel.name,
                status=DeliveryStatus.QUEUED_DIGEST if digest else DeliveryStatus.SENT,
                nonce=secrets.token_urlsafe(24),
                on_behalf_of=item.on_behalf if kind == DeliveryKind.QUESTION else None,
            )
            new.append(row)
        item.rows.append(row)
    return new


def _planned_events(item: Leased) -> list[AuditEvent]:
    """The events the plan writes with its rows: each skip, a digested card, a withheld
    re-send."""
    plan, clar, job = item.plan, item.clar, item.lease.job.pk
    if clar is None:
        return []
    events = [_skipped(clar, s, job) for s in plan.skips]
    if plan.on_behalf and plan.step in (Step.ASK, Step.DIGEST):
        events.append(
            _event(
                clar,
                "delegated",
                attempt=plan.attempt,
                candidate=plan.on_behalf,
                delegate=plan.person,
                reason=SkipReason.PERSON_AWAY,
                job=job,
            )
        )
    if plan.step is Step.DIGEST:
        [row] = item.rows
        assert plan.route is not None
        events.append(
            _event(
                clar,
                "digested",
                attempt=plan.attempt,
                candidate=plan.person,
                channel=plan.route.channel.name,
                reason=SkipReason.DIGESTED,
                nonceState=row.nonce_state,
                job=job,
                **({"onBehalfOf": plan.on_behalf} if plan.on_behalf else {}),
            )
        )
    elif plan.step is Step.WITHHOLD:
        assert plan.card is not None
        who = "candidate" if plan.card.kind == DeliveryKind.QUESTION else "steward"
        events.append(
            _event(
                clar,
                "resend_withheld",
                attempt=plan.attempt,
                **{who: plan.person},
                job=job,
                nonceState=plan.card.nonce_state,
            )
        )
    return events


def _skipped(clar: Clarification, skip: Any, job: Any) -> AuditEvent:
    """A skip's event; an away candidate's names the delegate its reason is about."""
    extra = {"delegate": skip.delegate} if skip.delegate else {}
    return _event(
        clar,
        "skipped",
        attempt=skip.attempt,
        candidate=skip.candidate,
        reason=skip.reason,
        job=job,
        **extra,
    )


def _job_moves(item: Leased) -> None:
    """The plan's moves of its job, under the round's lock on it: on past each skipped
    candidate (the last attempt's skip ends it), done when the clarification closed,
    dead when it names none."""
    lease, plan = item.lease, item.plan
    for _ in plan.skips:
        job_advance(tenant=None, job_id=lease.job.pk, token=lease.token)
    if plan.step is Step.LOST:
        log.info("lease on job %s was lost; another worker or a re-ask owns it now", lease.job.pk)
    else:
        _job_close(lease, plan.step, skipped=f"clarification {plan.state}")


def _job_close(lease: Lease, step: Step, *, skipped: str) -> None:
    """A plan that ends its job without a card: done (`COMPLETE`, the result says why it
    was `skipped`) or dead (`FAIL`: the clarification is gone); other steps, nothing."""
    if step is Step.COMPLETE:
        result = {"skipped": skipped}
        job_complete(tenant=None, job_id=lease.job.pk, token=lease.token, result=result)
    elif step is Step.FAIL:
        job_fail(
            tenant=None,
            job_id=lease.job.pk,
            token=lease.token,
            retryable=False,
            reason=JobReason.CLARIFICATION_MISSING,
        )


# --- 3. send -----------------------------------------------------------------------------


def _deliver(round_: Round, items: list[Leased]) -> list[Leased]:
    """After the rows committed: the messages built in lease order, sent, and their
    outcomes written (`_outcomes`). Returns the high-severity cards sent, for their
    stewards' FYI."""
    messages: list[Message] = []
    names = target_names([i.clar for i in items if i.plan.step is Step.ASK and i.clar])
    restricted: dict[Any, bool] = {}
    for item in items:
        with _request_of(item.lease), _failing_its_job(item):
            messages += _messages(item, names, restricted)
    return _outcomes(items, messages, _send_all(messages), round_.reminders)


def _messages(item: Leased, names: dict[Any, str], restricted: dict[Any, bool]) -> list[Message]:
    """The item's sends: its question card, or its steward messages (the escalation with
    every skip reason of the clarification, or the high-severity FYI), each through the
    restriction gate off the inbox."""
    plan, clar = item.plan, item.clar
    if plan.step is Step.ASK:
        assert clar is not None and item.asked is not None and plan.route is not None
        [row] = item.rows
        excerpts: list[str] | None = None
        if plan.route.channel.name != "inbox":
            if clar.tenant_id not in restricted:
                restricted[clar.tenant_id] = tenant_has_restricted_excerpts(clar.tenant_id)
            excerpts = None if restricted[clar.tenant_id] else []
        card = outgoing_card(clar, row, plan.route, plan.attempt, excerpts, names[clar.target_id])
        if item.on_behalf is not None:
            card = delegated_card(card, item.on_behalf)
        return [Message(item, row, item.asked, plan.route, card=card)]
    if plan.step not in (Step.ESCALATE, Step.NOTIFY):
        return []
    assert clar is not None
    if plan.step is Step.ESCALATE:
        item.reasons = skip_reasons(clar)
        what, message = "escalation", build_escalation(clar, item.reasons)
    else:
        assert item.asked is not None
        what, message = "notice", build_steward_notice(clar, item.asked)
    out = []
    for row, steward in zip(item.rows, plan.stewards, strict=True):
        outgoing = message
        if steward.route.channel.name != "inbox":
            outgoing, blocked = gated_escalation(message, clar)
            if blocked:
                channel = steward.route.channel.name
                restricted_content_blocked(
                    clar, reason=blocked, channel=channel, message=what, attempt=plan.attempt
                )
        out.append(Message(item, row, row.person, steward.route, escalation=outgoing))
    return out


def outgoing_card(
    clar: Clarification,
    delivery: Delivery,
    route: Route,
    attempt: int,
    excerpts: list[str] | None = None,
    name: str | None = None,
) -> Card:
    """The question card with the delivery's nonce, through the restriction gate off the
    inbox (a block is audited). `excerpts`: the restricted excerpts it quotes, and `name`
    the target's name, when the caller knows them already (None: read here)."""
    card = build_card(clar, delivery.nonce, excerpt_for_chat(clar), name)
    if route.channel.name != "inbox":
        card, blocked = gated_card(card, clar, excerpts)
        if blocked:
            restricted_content_blocked(
                clar, reason=blocked, channel=route.channel.name, message="card", attempt=attempt
            )
    return card


def _send_all(messages: list[Message]) -> list[str | Exception]:
    """Each message's reference or the exception its send raised, in order, sent
    SEND_THREADS at a time: those of a channel with `threaded_sends` (they touch no
    database) from a thread pool, the others from this thread meanwhile. Before each
    group the leases are checked (`lease_renew`: one more than half spent is extended; a
    lost one is not sent: `LeaseLost`)."""
    width = max(1, SEND_THREADS)
    outcomes: list[str | Exception] = []
    with ThreadPoolExecutor(width) as pool:
        for start in range(0, len(messages), width):
            group: list[str | Exception | Future[str | Exception]] = []
            for message in messages[start : start + width]:
                if message.item.lost or not lease_renew(message.item.lease):
                    group.append(LeaseLost())
                elif message.route.channel.threaded_sends and width > 1:
                    group.append(pool.submit(_send_one, message))
                else:
                    group.append(_send_one(message))
            outcomes += [o.result() if isinstance(o, Future) else o for o in group]
    return outcomes


def _send_one(message: Message) -> str | Exception:
    route = message.route
    with _request_of(message.item.lease):
        try:
            if message.card is not None:
                return send_card(route, message.card)
            assert message.escalation is not None
            escalation = message.escalation
            return _send_with_retries(
                lambda: route.channel.send_escalation(address=route.address, escalation=escalation)
            )
        except Exception as exc:
            return exc


def send_card(route: Route, card: Card) -> str:
    """The card sent on the route with the in-lease retries; its message reference."""
    return _send_with_retries(lambda: route.channel.send_card(address=route.address, card=card))


def _send_with_retries(send: Callable[[], Any]) -> str:
    last: DeliveryError | None = None
    for attempt in range(SEND_RETRIES):
        try:
            return str(send())
        except DeliveryError as exc:
            last = exc
            if not exc.retryable:
                break
            time.sleep(RETRY_PAUSE_SECONDS * (attempt + 1))
    assert last is not None
    raise last


# --- 4. outcomes -------------------------------------------------------------------------


def _outcomes(
    items: list[Leased],
    messages: list[Message],
    outcomes: list[str | Exception],
    reminders: dict[Any, float | None],
) -> list[Leased]:
    """Each send's outcome in lease order (`_outcome`), the escalations' and notices'
    events naming the stewards reached; then, in one transaction, the sent rows, their
    reminder jobs (`reminders`: hours by tenant) and the events; and each escalation's
    verdict on its job. Returns the high-severity cards sent."""
    sent: list[Delivery] = []
    events: list[tuple[str, AuditEvent]] = []
    notify: list[Leased] = []
    for message, outcome in zip(messages, outcomes, strict=True):
        item = message.item
        with _request_of(item.lease), _failing_its_job(item):
            if not _outcome(message, outcome):
                continue
            sent.append(message.row)
            if message.card is not None:
                events.append((item.lease.job.request_id, _delivered(message)))
                if item.clar is not None and item.clar.severity == Severity.HIGH:
                    notify.append(item)
    for item in items:
        if item.plan.step in (Step.ESCALATE, Step.NOTIFY) and not item.lost:
            events.append((item.lease.job.request_id, _stewards_event(item)))
    try:
        _write_outcomes(sent, events, reminders)
    except Exception as exc:  # as a handler raising after its sends
        log.exception("the outcomes of %d sends were not written", len(sent))
        for item in {id(m.item): m.item for m in messages if m.row in sent}.values():
            fail_after_bug(item.lease, exc)
        return []
    for item in items:
        if item.plan.step is Step.ESCALATE and not item.lost:
            with _request_of(item.lease), _failing_its_job(item):
                _escalation_verdict(item)
    return notify


def _outcome(message: Message, outcome: str | Exception) -> bool:
    """One send's outcome on its row: sent (True; a steward's message marked redacted),
    or failed after its retries (`delivery_failed`: a card's job failed too). A lost
    lease or a bug raises, for `_failing_its_job`."""
    item, row, person = message.item, message.row, message.person
    if isinstance(outcome, DeliveryError):
        assert item.clar is not None
        if message.card is None:
            item.failed_to.append(str(person.pk))
        delivery_failed(
            item.clar,
            row,
            outcome,
            attempt=item.plan.attempt,
            person=person,
            route=message.route,
            notice=item.plan.step is Step.NOTIFY,
            lease=item.lease if message.card is not None else None,
        )
        return False
    if isinstance(outcome, Exception):
        raise outcome
    row.status, row.message_ref, row.sent_at = DeliveryStatus.SENT, outcome[:500], timezone.now()
    if message.card is None:
        row.redacted = True
        item.sent_to.append(str(person.pk))
    return True


def _delivered(message: Message) -> AuditEvent:
    item, row = message.item, message.row
    assert item.clar is not None
    return _event(
        item.clar,
        "delivered",
        attempt=item.plan.attempt,
        candidate=str(message.person.pk),
        channel=message.route.channel.name,
        nonceState=row.nonce_state,
        messageRef=row.message_ref[:200],
        job=item.lease.job.pk,
        **({"onBehalfOf": str(row.on_behalf_of_id)} if row.on_behalf_of_id else {}),
    )


def _stewards_event(item: Leased) -> AuditEvent:
    """`escalated` (with every skip reason, and why it reached nobody) or, for a notice,
    `steward_notified`: the stewards reached."""
    plan, clar = item.plan, item.clar
    assert clar is not None
    if plan.step is Step.NOTIFY:
        return _event(
            clar,
            "steward_notified",
            reason="high_severity",
            attempt=plan.attempt,
            candidate=plan.person,
            stewards=item.sent_to,
        )
    return _event(
        clar,
        "escalated",
        attempt=plan.attempt,
        candidate=None,
        stewards=item.sent_to,
        skipReasons=item.reasons,
        reason=_unreached(item),
        job=item.lease.job.pk,
    )


def _unreached(item: Leased) -> SkipReason | None:
    """Why an escalation reached no steward: every send failed (DELIVERY_FAILED) or
    nobody was reachable (NO_DELIVERY_ALIAS); None when it reached one."""
    if item.sent_to:
        return None
    return SkipReason.DELIVERY_FAILED if item.failed_to else SkipReason.NO_DELIVERY_ALIAS


def _escalation_verdict(item: Leased) -> None:
    """An escalation that reached no steward: every send failed (e.g. a connector down)
    — retried after one escalation window, up to ESCALATION_RETRIES times (the job gets
    one more attempt each time), so a down connector does not dead-letter it at once;
    nobody reachable, or out of retries: the job dies."""
    lease, reason = item.lease, _unreached(item)
    if reason is None:
        return
    if reason == SkipReason.DELIVERY_FAILED and _escalation_failures(item) <= ESCALATION_RETRIES:
        lease_attempt_add(lease)
        job_fail(
            tenant=None,
            job_id=lease.job.pk,
            token=lease.token,
            retryable=True,
            reason=JobReason.ESCALATION_RETRY,
            detail=f"{SkipReason.DELIVERY_FAILED}: the escalation reached no steward",
        )
        return
    job_fail(
        tenant=None,
        job_id=lease.job.pk,
        token=lease.token,
        retryable=False,
        reason=reason,
        detail="no steward could be reached",
    )


def _escalation_failures(item: Leased) -> int:
    return AuditEvent.objects.filter(
        clarification=item.clar, type="escalated", detail__reason=SkipReason.DELIVERY_FAILED
    ).count()


def _write_outcomes(
    sent: list[Delivery], events: list[tuple[str, AuditEvent]], reminders: dict[Any, float | None]
) -> None:
    """In one transaction: the clarifications locked in id order, the sent rows
    (`delivery.sql.sent_rows_write`), the cards' reminder jobs
    (`reminders.reminders_enqueue`), then the events in one INSERT (the chain head, the
    last lock), the audit log line of each under the id of its job's request. A sent
    card is never recorded without its reminder job, nor a job without its card. Nested
    in a caller's transaction it is a savepoint: a failure here (`_outcomes` fails the
    jobs) leaves the caller's transaction usable."""
    with transaction.atomic():
        held = {r.clarification_id for r in sent} | {e.clarification_id for _, e in events}
        clarifications_hold(held - {None})
        if sent:
            sent_rows_write(sent)
            reminders_enqueue(sent, reminders)
        if events:
            audit_events_append([e for _, e in events], request_ids=[r for r, _ in events])


def delivery_failed(
    clar: Clarification,
    delivery: Delivery,
    exc: DeliveryError,
    *,
    attempt: int,
    person: Person,
    route: Route,
    notice: bool = False,
    lease: Lease | None = None,
) -> None:
    """A send that failed after its retries: the delivery row and a `delivery_failed` event
    (for a steward's high-severity notice a `steward_notice_failed` event instead: it is no
    candidate's skip reason). A card's `lease`: its job failed too, retryable with
    `DELIVERY_FAILED`."""
    Delivery.objects.filter(pk=delivery.pk).update(status=DeliveryStatus.FAILED)
    if notice:
        audit_event_append(
            tenant=clar.tenant,
            clarification=clar,
            type="steward_notice_failed",
            detail={
                "attempt": attempt,
                "steward": str(person.pk),
                "channel": route.channel.name,
                "error": str(exc)[:300],
            },
        )
        return
    audit_event_append(
        tenant=clar.tenant,
        clarification=clar,
        type="delivery_failed",
        detail={
            "attempt": attempt,
            "candidate": str(person.pk),
            "channel": route.channel.name,
            "reason": SkipReason.DELIVERY_FAILED,
            "error": str(exc)[:300],
            "job": delivery.job_id,
        },
    )
    if lease is not None:
        job_fail(
            tenant=None,
            job_id=lease.job.pk,
            token=lease.token,
            retryable=True,
            reason=SkipReason.DELIVERY_FAILED,
            detail=str(exc)[:300],
        )


# --- the stewards' FYI of a high-severity card -------------------------------------------


def _notify(round_: Round, cards: list[Leased]) -> None:
    """High severity goes direct "with steward notified": once per clarification, at its
    first card sent (ranking[0] may have been skipped), a redacted FYI — title, link to
    the review page, who was asked, never span text — to every steward but the person
    asked, planned, recorded and sent as a round of its own. A failed notice is audited
    and never blocks the question."""
    first = {item.clar.pk: item for item in reversed(cards) if item.clar is not None}
    notified = set(
        AuditEvent.objects.filter(
            clarification_id__in=list(first),
            type="steward_notified",
            detail__reason="high_severity",
        ).values_list("clarification_id", flat=True)
    )
    items = [
        Leased(i.lease, i.clar, plan=i.plan, asked=i.asked)
        for pk, i in first.items()
        if pk not in notified
    ]
    if not items:
        return
    try:
        _record(round_, items, _notice_planner)
    except Exception as exc:  # after the cards went out: the jobs fail, not the round
        log.exception("the stewards' notices of %d cards were not recorded", len(items))
        for item in items:
            fail_after_bug(item.lease, exc)
        return
    _deliver(round_, items)


# --- helpers -----------------------------------------------------------------------------


@contextmanager
def _request_of(lease: Lease) -> Iterator[None]:
    """The id of the request that enqueued the lease's job, around what is done for it."""
    token = request_id_var.set(lease.job.request_id)
    try:
        yield
    finally:
        request_id_var.reset(token)


@contextmanager
def _failing_its_job(item: Leased) -> Iterator[None]:
    """A lease lost meanwhile is logged (its new holder has it); anything else raised
    fails the job like a handler's bug (`fail_after_bug`). Either way nothing more is
    done for the lease; the round's other leases go on."""
    try:
        yield
    except LeaseLost:
        item.lost = True
        log.info(
            "lease on job %s was lost; another worker or a re-ask owns it now", item.lease.job.pk
        )
    except Exception as exc:
        item.lost = True
        log.exception("job %s failed in its round", item.lease.job.pk)
        fail_after_bug(item.lease, exc)


def _event(clar: Clarification, type: str, **detail: Any) -> AuditEvent:
    """An event of the clarification, to append with others (not saved here)."""
    return AuditEvent(tenant=clar.tenant, clarification=clar, at=now_us(), type=type, detail=detail)


def close_nonces(clar: Clarification) -> None:
    """A terminal clarification's cards can no longer bind: late taps get "moved on".

    `clar` is locked (bind's caller holds its row): its `cards_issued` is the one cards
    are created under, so when it is unset there is no nonce to close."""
    if not clar.cards_issued:
        return
    Delivery.objects.filter(clarification=clar, nonce_state=NonceState.ACTIVE).update(
        nonce_state=NonceState.CLOSED
    )


# --- reminders (CLARIFY_REMINDER_AFTER_HOURS) --------------------------------------------


@dataclass
class Reminder:
    """One reminder job's lease: its question card's row and where the card's channel
    reaches its person now."""

    lease: Lease
    row: Delivery | None
    route: Route | None = None
    plan: Plan = field(default_factory=lambda: Plan(Step.LOST))


def handle_reminders(leases: list[Lease]) -> None:
    """A round of reminder jobs: load their cards → plan each (`reminder_plan`) → record
    in one transaction (the card marked reminded, `reminded` audited, the job done) →
    send the card again on its channel with its nonce, marked as a reminder. A send that
    fails is audited (`reminder_failed`); a card is never reminded twice."""
    items = _reminders_load(leases)
    _reminders_record(items)
    for item in items:
        if item.plan.step is Step.REMIND:
            with _request_of(item.lease):
                _reminder_send(item)


def _reminders_load(leases: list[Lease]) -> list[Reminder]:
    """Each job's card (of its own tenant) and its person's route on the card's channel."""
    wanted = {
        lease.job.pk: str((lease.job.payload or {}).get("delivery") or "")
        if isinstance(lease.job.payload, dict)
        else ""
        for lease in leases
    }
    rows = {
        str(d.pk): d
        for d in Delivery.objects.select_related(
            "clarification__tenant",
            "clarification__source_version__source",
            "clarification__target",
            "person__user",
            "on_behalf_of",
        ).filter(pk__in=_uuids(wanted.values()), kind=DeliveryKind.QUESTION)
    }
    items = []
    for lease in leases:
        row = rows.get(wanted[lease.job.pk])
        items.append(Reminder(lease, row if row and row.tenant_id == lease.job.tenant_id else None))
    aliases = aliases_for({item.row.person_id for item in items if item.row is not None})
    orders: dict[Any, list[Channel]] = {}
    for item in items:
        if item.row is None:
            continue
        clar = item.row.clarification
        if clar.tenant_id not in orders:
            orders[clar.tenant_id] = configured_channels(policy_for(clar.tenant).channel_order)
        same = [c for c in orders[clar.tenant_id] if c.name == item.row.channel]
        person = item.row.person
        item.route = route_for(person, aliases.get(str(person.pk), {}), channels=same)
    return items


def _reminders_record(items: list[Reminder]) -> None:
    """The plans under the round's locks (the jobs, the clarifications, the cards), and
    what they write: the cards reminded, their `reminded` events, the jobs done."""
    rows = [item.row for item in items if item.row is not None]
    with transaction.atomic():
        held = leases_lock([item.lease for item in items])
        states = _locked({row.clarification_id for row in rows})
        fresh = {
            d.pk: d
            for d in Delivery.objects.select_for_update()
            .filter(pk__in=[row.pk for row in rows])
            .order_by("pk")
            .only("pk", "nonce_state", "reminded_at")
        }
        answered = set(
            ResponseRecord.objects.filter(
                clarification_id__in={row.clarification_id for row in rows}
            ).values_list("clarification_id", "responder")
        )
        today = timezone.now().date()
        for item in items:
            job, row = item.lease.job, item.row
            view = JobView(job.pk in held, job.attempts, job.max_attempts, ())
            clar = card = None
            if row is not None:
                state = states.get(row.clarification_id, (DELETED, False))[0]
                clar = ClarView(state, row.clarification.severity)
                now_row = fresh.get(row.pk)
                card = Reminding(
                    person=str(row.person_id),
                    attempt=row.attempt,
                    nonce_state=now_row.nonce_state if now_row else NonceState.REVOKED,
                    reminded=now_row is None or now_row.reminded_at is not None,
                    answered=(row.clarification_id, row.person_id) in answered,
                    away=row.person.away_on(today),
                    route=item.route,
                    on_behalf=str(row.on_behalf_of_id or ""),
                )
            item.plan = reminder_plan(view, clar, card)
        _reminders_write(items)


def _reminders_write(items: list[Reminder]) -> None:
    events: list[tuple[str, AuditEvent]] = []
    for item in items:
        lease, plan, row = item.lease, item.plan, item.row
        if plan.step is Step.REMIND:
            assert row is not None and plan.route is not None
            extra = {"onBehalfOf": plan.on_behalf} if plan.on_behalf else {}
            reminded = _event(
                row.clarification,
                "reminded",
                attempt=plan.attempt,
                candidate=plan.person,
                channel=plan.route.channel.name,
                nonceState=NonceState.ACTIVE,
                job=row.job_id,
                reminderJob=lease.job.pk,
                **extra,
            )
            events.append((lease.job.request_id, reminded))
            row.reminded_at = timezone.now()
            Delivery.objects.filter(pk=row.pk).update(reminded_at=row.reminded_at)
            job_complete(tenant=None, job_id=lease.job.pk, token=lease.token, result={})
        else:
            _job_close(lease, plan.step, skipped=plan.state)
    if events:
        audit_events_append([e for _, e in events], request_ids=[r for r, _ in events])


def _reminder_send(item: Reminder) -> None:
    """The reminder: the card again, same nonce, marked, through the restriction gate."""
    row, plan = item.row, item.plan
    assert row is not None and plan.route is not None
    clar = row.clarification
    card = reminder_card(card_of_row(outgoing_card(clar, row, plan.route, plan.attempt), row))
    try:
        send_card(plan.route, card)
    except DeliveryError as exc:
        audit_event_append(
            tenant=clar.tenant,
            clarification=clar,
            type="reminder_failed",
            detail={
                "attempt": plan.attempt,
                "candidate": plan.person,
                "channel": plan.route.channel.name,
                "error": str(exc)[:300],
                "job": row.job_id,
            },
        )
    except Exception:
        log.exception("the reminder of card %s failed", row.pk)
