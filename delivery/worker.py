"""The delivery worker (the clarify-bot, acting with the `clarify` audience).

It leases `clarify:temporal` jobs; attempt N asks ranking[N]. Candidates failing the
gate are skipped inside the same lease with a reason code. A send that still fails after
the in-lease retries is audited (`delivery_failed`) and the job is failed retryable with
`DELIVERY_FAILED`, a skip reason code of the jobs protocol: the next attempt is leasable
at once, so a failed delivery never burns an escalation window either. After a
successful send the worker stops heartbeating, so lease expiry plus the kind's backoff is
the escalation window. The attempt after the last candidate is the redacted steward
escalation. Channels are tried in the tenant's channel order.

Deliveries are keyed by (clarification, routing job, attempt, person, kind): re-leasing
the same job at the same attempt re-sends the same card with the same nonce, while a
steward re-ask's new job gets fresh rows and nonces even when it asks the same person at
the same attempt number. A row is made only while the lease is still held (a re-ask
supersedes it), and a card whose nonce was revoked or closed is never sent again
(`resend_withheld` is audited instead). The delivery events carry the routing job id.
"""

import contextlib
import logging
import secrets
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from clarify.models import AuditEvent, Clarification, Severity, State
from clarify.policy import policy_for
from clarify.routing import skip_reasons
from clarify.services import audit_event_append
from telha.common.codes import SkipReason
from telha.jobs.models import Job, JobStatus
from telha.jobs.services import Lease, LeaseLost, job_advance, job_complete, job_fail
from telha.tenancy.models import Person, Rights
from telha.tenancy.selectors import aliases_for

from .cards import Card, Escalation, build_card, build_escalation, build_steward_notice
from .channels import Channel, DeliveryError, configured_channels
from .gate import floor_check
from .models import Delivery, DeliveryKind, DeliveryStatus, NonceState
from .restriction import (
    excerpt_for_chat,
    gated_card,
    gated_escalation,
    restricted_content_blocked,
)

log = logging.getLogger(__name__)

NO_DELIVERY_ALIAS = "NO_DELIVERY_ALIAS"
# Deprovisioned by the identity provider (CONTRACT §3.7): never asked again.
RESPONDER_NOT_AUTHORISED = "RESPONDER_NOT_AUTHORISED"
DAILY_CAP_EXCEEDED = "DAILY_CAP_EXCEEDED"
DIGESTED = "DIGESTED"
DELIVERY_FAILED = "DELIVERY_FAILED"
# A steward escalation that failed on every reachable steward is retried after the
# kind's backoff (one escalation window) this many times before the job dies.
ESCALATION_RETRIES = 3
ESCALATION_RETRY = "ESCALATION_RETRY"
SEND_RETRIES = 3
RETRY_PAUSE_SECONDS = 0.2


@dataclass(frozen=True)
class Route:
    channel: Channel
    address: str


def route_for(
    person: Person, aliases: dict[str, str], order: list[str] | None = None
) -> Route | None:
    """The first configured channel, in `order` (the tenant's channel order; None: the
    `CLARIFY_CHANNELS` default), on which the person has a verified address."""
    for channel in configured_channels(order):
        address = channel.address(person, aliases)
        if address:
            return Route(channel, address)
    return None


def _new_nonce() -> str:
    return secrets.token_urlsafe(24)


class ClarificationClosed(Exception):
    """The clarification was answered or conflicted while the worker held its job."""

    def __init__(self, state: str) -> None:
        super().__init__(state)
        self.state = state


class CardWithdrawn(Exception):
    """This job attempt's card was revoked or closed since it was made: it is not sent
    again, neither with its dead nonce nor with a new one."""

    def __init__(self, delivery: Delivery) -> None:
        super().__init__(delivery.nonce_state)
        self.delivery = delivery


def _delivery_record(
    clar: Clarification,
    person: Person,
    lease: Lease,
    attempt: int,
    kind: str,
    channel: str,
    status: str,
) -> Delivery:
    """The delivery row, created (with its nonce) before the send, or the existing one of
    the same routing job's same attempt for an idempotent re-send (same nonce).

    Keyed by the routing job: a re-ask's new job asking the same person at the same
    attempt number makes its own row with a fresh nonce. Created under the
    clarification's row lock (the answer path's and the re-ask's lock; on SQLite the
    IMMEDIATE transaction), after re-reading its state and that the lease is still held:
    an answer that binds in the meantime closes every active nonce and a re-ask revokes
    them, so a row created after either would stay active. A closed clarification raises
    `ClarificationClosed`, a superseded lease `LeaseLost`, and an existing row whose nonce
    is no longer active `CardWithdrawn`."""
    with transaction.atomic():
        state, cards_issued = (
            Clarification.objects.select_for_update()
            .filter(pk=clar.pk)
            .values_list("state", "cards_issued")
            .first()
        ) or ("deleted", False)
        if state in (State.ANSWERED, State.CONFLICTED, "deleted"):
            raise ClarificationClosed(str(state))
        if not Job.objects.filter(
            pk=lease.job.pk, lease_token=lease.token, status=JobStatus.LEASED
        ).exists():
            raise LeaseLost()
        delivery, _ = Delivery.objects.get_or_create(
            clarification=clar,
            job_id=lease.job.pk,
            attempt=attempt,
            person=person,
            kind=kind,
            defaults={
                "tenant": clar.tenant,
                "channel": channel,
                "status": status,
                "nonce": _new_nonce(),
            },
        )
        if not cards_issued:
            Clarification.objects.filter(pk=clar.pk).update(cards_issued=True)
    if delivery.nonce_state != NonceState.ACTIVE:
        raise CardWithdrawn(delivery)
    return delivery


def _sent_today(person: Person) -> int:
    since = timezone.now() - timedelta(days=1)
    return Delivery.objects.filter(
        person=person,
        kind=DeliveryKind.QUESTION,
        status__in=[DeliveryStatus.SENT, DeliveryStatus.QUEUED_DIGEST],
        created_at__gte=since,
    ).count()


def _recent_for_person(person: Person) -> int:
    window = timedelta(minutes=settings.CLARIFY["DIGEST_WINDOW_MINUTES"])
    return Delivery.objects.filter(
        person=person,
        kind=DeliveryKind.QUESTION,
        created_at__gte=timezone.now() - window,
    ).count()


def _send_with_retries(send: Any) -> str:
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


def _event(clar: Clarification, type: str, **detail: Any) -> None:
    audit_event_append(tenant=clar.tenant, clarification=clar, type=type, detail=detail)


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
        _event(
            clar,
            "steward_notice_failed",
            attempt=attempt,
            steward=str(person.pk),
            channel=route.channel.name,
            error=str(exc)[:300],
        )
        return
    _event(
        clar,
        "delivery_failed",
        attempt=attempt,
        candidate=str(person.pk),
        channel=route.channel.name,
        reason=DELIVERY_FAILED,
        error=str(exc)[:300],
        job=delivery.job_id,
    )
    if lease is not None:
        job_fail(
            tenant=None,
            job_id=lease.job.pk,
            token=lease.token,
            retryable=True,
            reason=DELIVERY_FAILED,
            detail=str(exc)[:300],
        )


def handle_lease(lease: Lease) -> None:
    """Process one leased clarify:temporal job (see module docstring)."""
    job = lease.job
    payload = job.payload if isinstance(job.payload, dict) else {}
    ids = _valid_uuids([str(payload.get("clarificationId") or "")])
    clar = (
        Clarification.objects.select_related("tenant", "source_version__source", "target")
        .filter(pk=ids[0], tenant=job.tenant_id)
        .first()
        if ids
        else None
    )
    if clar is None:
        job_fail(
            tenant=None,
            job_id=job.pk,
            token=lease.token,
            retryable=False,
            reason="CLARIFICATION_MISSING",
        )
        return
    if clar.state in (State.ANSWERED, State.CONFLICTED):
        job_complete(
            tenant=None,
            job_id=job.pk,
            token=lease.token,
            result={"skipped": f"clarification {clar.state}"},
        )
        return
    ranking: list[str] = [str(p) for p in payload.get("ranking") or []]
    people = {
        str(p.pk): p
        for p in Person.objects.select_related("user").filter(pk__in=_valid_uuids(ranking))
    }
    verdicts = floor_check(clar, people.values())
    aliases = aliases_for(people)
    order = policy_for(clar.tenant).channel_order
    attempt = job.attempts
    try:
        while attempt < len(ranking):
            candidate = people.get(ranking[attempt])
            reason = _skip_reason(clar, candidate, verdicts, aliases, order)
            if reason is None:
                assert candidate is not None
                _ask(lease, clar, candidate, attempt, aliases.get(str(candidate.pk), {}), order)
                return
            _event(
                clar,
                "skipped",
                attempt=attempt,
                candidate=ranking[attempt],
                reason=reason,
                job=job.pk,
            )
            job = job_advance(tenant=None, job_id=job.pk, token=lease.token)
            attempt = job.attempts
        _escalate(lease, clar, attempt, order)
    except LeaseLost:
        log.info("lease on job %s was lost; another worker or a re-ask owns it now", job.pk)
    except CardWithdrawn as withdrawn:
        # Not re-sent and not re-minted: no heartbeat, so the lease runs out to the next
        # attempt as after a send.
        d = withdrawn.delivery
        _event(
            clar,
            "resend_withheld",
            attempt=d.attempt,
            **{"candidate" if d.kind == DeliveryKind.QUESTION else "steward": str(d.person_id)},
            job=job.pk,
            nonceState=d.nonce_state,
        )
    except ClarificationClosed as closed:
        with contextlib.suppress(LeaseLost):  # LeaseLost: the answer already finished the job
            job_complete(
                tenant=None,
                job_id=job.pk,
                token=lease.token,
                result={"skipped": f"clarification {closed.state}"},
            )


def _valid_uuids(values: list[str]) -> list[str]:
    out = []
    for value in values:
        try:
            out.append(str(uuid.UUID(value)))
        except ValueError:
            continue
    return out


def _skip_reason(
    clar: Clarification,
    candidate: Person | None,
    verdicts: dict[Any, SkipReason | None],
    aliases: dict[str, dict[str, str]],
    order: list[str] | None = None,
    sent_today: int | None = None,
) -> str | None:
    """Why `candidate` is not asked (a skip reason code), or None. `sent_today`: their
    cards of the last day when the caller counted them already (a batch does)."""
    if candidate is None:
        return NO_DELIVERY_ALIAS
    if candidate.deactivated_at is not None:
        return RESPONDER_NOT_AUTHORISED
    verdict = verdicts.get(candidate.pk)
    if verdict is not None:
        return verdict
    if route_for(candidate, aliases.get(str(candidate.pk), {}), order) is None:
        return NO_DELIVERY_ALIAS
    if sent_today is None:
        sent_today = _sent_today(candidate)
    if sent_today >= settings.CLARIFY["PER_PERSON_DAILY_CAP"]:
        return DAILY_CAP_EXCEEDED
    return None


def _ask(
    lease: Lease,
    clar: Clarification,
    person: Person,
    attempt: int,
    aliases: dict[str, str],
    order: list[str] | None = None,
) -> None:
    """Ask one candidate: the card is sent (or queued for a digest); a send that still
    fails after the in-lease retries is audited and fails the job retryable with
    `DELIVERY_FAILED` (a skip code: the next candidate's attempt is leasable at once)."""
    route = route_for(person, aliases, order)
    assert route is not None
    digest = clar.severity in (Severity.LOW, Severity.NORMAL) and (
        _recent_for_person(person) >= settings.CLARIFY["DIGEST_THRESHOLD"]
    )
    status = DeliveryStatus.QUEUED_DIGEST if digest else DeliveryStatus.SENT
    delivery = _delivery_record(
        clar, person, lease, attempt, DeliveryKind.QUESTION, route.channel.name, status
    )
    if digest:
        _event(clar, "digested", **digested_detail(lease, attempt, person, route, delivery))
        return
    card = outgoing_card(clar, delivery, route, attempt)
    ref = send_card_or_fail(
        lease, clar, delivery, card, attempt=attempt, person=person, route=route
    )
    if ref is None:
        return
    Delivery.objects.filter(pk=delivery.pk).update(
        status=DeliveryStatus.SENT, message_ref=ref[:500], sent_at=timezone.now()
    )
    _event(clar, "delivered", **delivered_detail(lease, attempt, person, route, delivery, ref))
    if clar.severity == Severity.HIGH and not _steward_notified(clar):
        # Once per clarification, at its first card (ranking[0] may have been skipped).
        _notify_stewards(lease, clar, attempt, person, order)
    # No heartbeat from here on: lease expiry + backoff is the escalation window.


def digested_detail(
    lease: Lease, attempt: int, person: Person, route: Route, delivery: Delivery
) -> dict[str, Any]:
    """The `digested` event's detail: the card is queued for the person's digest."""
    return {
        "attempt": attempt,
        "candidate": str(person.pk),
        "channel": route.channel.name,
        "reason": DIGESTED,
        "nonceState": delivery.nonce_state,
        "job": lease.job.pk,
    }


def delivered_detail(
    lease: Lease, attempt: int, person: Person, route: Route, delivery: Delivery, ref: str
) -> dict[str, Any]:
    """The `delivered` event's detail: the card was sent, `ref` its message reference."""
    return {
        "attempt": attempt,
        "candidate": str(person.pk),
        "channel": route.channel.name,
        "nonceState": delivery.nonce_state,
        "messageRef": ref[:200],
        "job": lease.job.pk,
    }


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


def send_card_or_fail(
    lease: Lease,
    clar: Clarification,
    delivery: Delivery,
    card: Card,
    *,
    attempt: int,
    person: Person,
    route: Route,
) -> str | None:
    """Send the card with the in-lease retries; its message reference, or None when it
    still failed: then it is audited and the job failed retryable with
    `DELIVERY_FAILED` (a skip code: the next candidate's attempt is leasable at once)."""
    try:
        return send_card(route, card)
    except DeliveryError as exc:
        delivery_failed(
            clar, delivery, exc, attempt=attempt, person=person, route=route, lease=lease
        )
        return None


def send_card(route: Route, card: Card) -> str:
    """The card sent on the route with the in-lease retries; its message reference."""
    return _send_with_retries(lambda: route.channel.send_card(address=route.address, card=card))


def _steward_notified(clar: Clarification) -> bool:
    return AuditEvent.objects.filter(
        clarification=clar, type="steward_notified", detail__reason="high_severity"
    ).exists()


def _stewards(clar: Clarification) -> list[Person]:
    return list(
        Person.objects.select_related("user").filter(
            tenant=clar.tenant,
            role=Rights.STEWARD,
            erased_at__isnull=True,
            deactivated_at__isnull=True,
        )
    )


@dataclass(frozen=True)
class StewardSends:
    sent: list[str]
    failed: list[str]


def _send_to_stewards(
    lease: Lease,
    clar: Clarification,
    attempt: int,
    message: Escalation,
    stewards: list[Person],
    order: list[str] | None,
    *,
    what: str,
) -> StewardSends:
    """Send a redacted steward message (escalation or notice) to each steward on their
    first reachable channel, through the delivery gate on chat channels. Each gets a
    delivery row (so it also shows in their inbox, whatever channel carried it)."""
    aliases = aliases_for(p.pk for p in stewards)
    sent: list[str] = []
    failed: list[str] = []
    for steward in stewards:
        route = route_for(steward, aliases.get(str(steward.pk), {}), order)
        if route is None:
            continue
        delivery = _delivery_record(
            clar,
            steward,
            lease,
            attempt,
            DeliveryKind.ESCALATION,
            route.channel.name,
            DeliveryStatus.SENT,
        )
        outgoing = message
        if route.channel.name != "inbox":
            outgoing, blocked = gated_escalation(message, clar)
            if blocked:
                restricted_content_blocked(
                    clar, reason=blocked, channel=route.channel.name, message=what, attempt=attempt
                )
        try:
            ref = _send_with_retries(
                lambda r=route, m=outgoing: r.channel.send_escalation(
                    address=r.address, escalation=m
                )
            )
        except DeliveryError as exc:
            failed.append(str(steward.pk))
            delivery_failed(
                clar,
                delivery,
                exc,
                attempt=attempt,
                person=steward,
                route=route,
                notice=what != "escalation",
            )
            continue
        Delivery.objects.filter(pk=delivery.pk).update(
            status=DeliveryStatus.SENT,
            message_ref=ref[:500],
            sent_at=timezone.now(),
            redacted=True,
        )
        sent.append(str(steward.pk))
    return StewardSends(sent, failed)


def _notify_stewards(
    lease: Lease, clar: Clarification, attempt: int, asked: Person, order: list[str] | None
) -> None:
    """High severity goes direct "with steward notified": a redacted FYI (title, link to
    the review page, who was asked — never span text) to every steward but the person
    just asked. A failed notice is audited and never blocks the question."""
    stewards = [s for s in _stewards(clar) if s.pk != asked.pk]
    sends = _send_to_stewards(
        lease, clar, attempt, build_steward_notice(clar, asked), stewards, order, what="notice"
    )
    _event(
        clar,
        "steward_notified",
        reason="high_severity",
        attempt=attempt,
        candidate=str(asked.pk),
        stewards=sends.sent,
    )


def _escalate(lease: Lease, clar: Clarification, attempt: int, order: list[str] | None) -> None:
    """The final attempt: the redacted steward escalation with the skip reasons.

    Nobody reachable: dead at once (`NO_DELIVERY_ALIAS`). Reachable stewards whose sends
    all failed (`DELIVERY_FAILED`, e.g. a connector down): retried after one escalation
    window, up to ESCALATION_RETRIES times (the job gets one more attempt each time), so a
    down connector does not dead-letter the clarification at once."""
    reasons = skip_reasons(clar)
    sends = _send_to_stewards(
        lease,
        clar,
        attempt,
        build_escalation(clar, reasons),
        _stewards(clar),
        order,
        what="escalation",
    )
    reason = None
    if not sends.sent:
        reason = DELIVERY_FAILED if sends.failed else NO_DELIVERY_ALIAS
    _event(
        clar,
        "escalated",
        attempt=attempt,
        candidate=None,
        stewards=sends.sent,
        skipReasons=reasons,
        reason=reason,
        job=lease.job.pk,
    )
    if reason == DELIVERY_FAILED and _escalation_failures(clar) <= ESCALATION_RETRIES:
        _extend_attempts(lease)
        job_fail(
            tenant=None,
            job_id=lease.job.pk,
            token=lease.token,
            retryable=True,
            reason=ESCALATION_RETRY,
            detail=f"{DELIVERY_FAILED}: the escalation reached no steward",
        )
    elif reason is not None:
        job_fail(
            tenant=None,
            job_id=lease.job.pk,
            token=lease.token,
            retryable=False,
            reason=reason,
            detail="no steward could be reached",
        )


def _escalation_failures(clar: Clarification) -> int:
    return AuditEvent.objects.filter(
        clarification=clar, type="escalated", detail__reason=DELIVERY_FAILED
    ).count()


def _extend_attempts(lease: Lease) -> None:
    """One more attempt for a retried escalation, fenced by the lease token."""
    if not Job.objects.filter(
        pk=lease.job.pk, lease_token=lease.token, status=JobStatus.LEASED
    ).update(max_attempts=F("max_attempts") + 1):
        raise LeaseLost()


def close_nonces(clar: Clarification) -> None:
    """A terminal clarification's cards can no longer bind: late taps get "moved on".

    `clar` is locked (bind's caller holds its row): its `cards_issued` is the one cards
    are created under, so when it is unset there is no nonce to close."""
    if not clar.cards_issued:
        return
    Delivery.objects.filter(clarification=clar, nonce_state=NonceState.ACTIVE).update(
        nonce_state=NonceState.CLOSED
    )
