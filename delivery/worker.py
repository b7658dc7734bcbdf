"""The delivery worker (the clarify-bot, acting with the `clarify` audience).

It leases `clarify:temporal` jobs; attempt N asks ranking[N]. Candidates failing the
gate are skipped inside the same lease with a reason code; after a successful send the
worker stops heartbeating, so lease expiry plus the kind's backoff is the escalation
window. The attempt after the last candidate is the redacted steward escalation.
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
from django.utils import timezone

from clarify.models import AuditEvent, Clarification, Severity, State
from clarify.routing import skip_reasons
from clarify.services import audit_event_append
from telha.jobs.services import Lease, LeaseLost, job_advance, job_complete, job_fail
from telha.tenancy.models import Person, Rights
from telha.tenancy.selectors import aliases_for

from .cards import build_card, build_escalation
from .channels import Channel, DeliveryError, configured_channels
from .gate import floor_check
from .models import Delivery, DeliveryKind, DeliveryStatus, NonceState
from .restriction import excerpt_for_chat, gated_card, gated_escalation

log = logging.getLogger(__name__)

NO_DELIVERY_ALIAS = "NO_DELIVERY_ALIAS"
DAILY_CAP_EXCEEDED = "DAILY_CAP_EXCEEDED"
DIGESTED = "DIGESTED"
DELIVERY_FAILED = "DELIVERY_FAILED"
SEND_RETRIES = 3
RETRY_PAUSE_SECONDS = 0.2


@dataclass(frozen=True)
class Route:
    channel: Channel
    address: str


def route_for(person: Person, aliases: dict[str, str]) -> Route | None:
    """The first configured channel on which the person has a verified address."""
    for channel in configured_channels():
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


def _delivery_record(
    clar: Clarification,
    person: Person,
    job_id: int,
    attempt: int,
    kind: str,
    channel: str,
    status: str,
) -> Delivery:
    """The delivery row, created (with its nonce) before the send, or the existing one for
    an idempotent re-send of the same attempt (same nonce).

    Created under the clarification's row lock (the answer path's lock; on SQLite the
    IMMEDIATE transaction), after re-reading its state: an answer that binds in the
    meantime closes every active nonce, so a nonce created after it would stay active on
    an answered clarification. A closed clarification raises `ClarificationClosed`."""
    with transaction.atomic():
        state = (
            Clarification.objects.select_for_update()
            .filter(pk=clar.pk)
            .values_list("state", flat=True)
            .first()
        )
        if state in (State.ANSWERED, State.CONFLICTED):
            raise ClarificationClosed(str(state))
        delivery, _ = Delivery.objects.get_or_create(
            clarification=clar,
            attempt=attempt,
            person=person,
            kind=kind,
            defaults={
                "tenant": clar.tenant,
                "job_id": job_id,
                "channel": channel,
                "status": status,
                "nonce": _new_nonce(),
            },
        )
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


def _delivery_failed(
    clar: Clarification,
    delivery: Delivery,
    exc: DeliveryError,
    *,
    attempt: int,
    person: Person,
    route: Route,
) -> None:
    """A send that failed after its retries: the delivery row and a `delivery_failed` event."""
    Delivery.objects.filter(pk=delivery.pk).update(status=DeliveryStatus.FAILED)
    _event(
        clar,
        "delivery_failed",
        attempt=attempt,
        candidate=str(person.pk),
        channel=route.channel.name,
        reason=DELIVERY_FAILED,
        error=str(exc)[:300],
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
    attempt = job.attempts
    try:
        while attempt < len(ranking):
            candidate = people.get(ranking[attempt])
            reason = _skip_reason(clar, candidate, verdicts, aliases)
            if reason is None:
                assert candidate is not None
                _ask(lease, clar, candidate, attempt, aliases.get(str(candidate.pk), {}))
                return
            _event(clar, "skipped", attempt=attempt, candidate=ranking[attempt], reason=reason)
            job = job_advance(tenant=None, job_id=job.pk, token=lease.token)
            attempt = job.attempts
        _escalate(lease, clar, attempt)
    except LeaseLost:
        log.info("lease on job %s was lost; another worker owns it now", job.pk)
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
    verdicts: dict[Any, str | None],
    aliases: dict[str, dict[str, str]],
) -> str | None:
    if candidate is None:
        return NO_DELIVERY_ALIAS
    verdict = verdicts.get(candidate.pk)
    if verdict is not None:
        return verdict
    if route_for(candidate, aliases.get(str(candidate.pk), {})) is None:
        return NO_DELIVERY_ALIAS
    if _sent_today(candidate) >= settings.CLARIFY["PER_PERSON_DAILY_CAP"]:
        return DAILY_CAP_EXCEEDED
    return None


def _ask(
    lease: Lease, clar: Clarification, person: Person, attempt: int, aliases: dict[str, str]
) -> None:
    route = route_for(person, aliases)
    assert route is not None
    digest = clar.severity in (Severity.LOW, Severity.NORMAL) and (
        _recent_for_person(person) >= settings.CLARIFY["DIGEST_THRESHOLD"]
    )
    status = DeliveryStatus.QUEUED_DIGEST if digest else DeliveryStatus.SENT
    delivery = _delivery_record(
        clar, person, lease.job.pk, attempt, DeliveryKind.QUESTION, route.channel.name, status
    )
    if digest:
        _event(
            clar,
            "digested",
            attempt=attempt,
            candidate=str(person.pk),
            channel=route.channel.name,
            reason=DIGESTED,
            nonceState=delivery.nonce_state,
        )
        return
    card = build_card(clar, delivery.nonce, excerpt_for_chat(clar))
    if route.channel.name != "inbox":
        card, blocked = gated_card(card, clar)
        if blocked:
            _event(
                clar,
                "restricted_content_blocked",
                attempt=attempt,
                channel=route.channel.name,
                reason=blocked,
            )
    try:
        ref = _send_with_retries(lambda: route.channel.send_card(address=route.address, card=card))
    except DeliveryError as exc:
        _delivery_failed(clar, delivery, exc, attempt=attempt, person=person, route=route)
        job_fail(
            tenant=None,
            job_id=lease.job.pk,
            token=lease.token,
            retryable=True,
            reason=DELIVERY_FAILED,
            detail=str(exc)[:300],
        )
        return
    Delivery.objects.filter(pk=delivery.pk).update(
        status=DeliveryStatus.SENT, message_ref=ref[:500], sent_at=timezone.now()
    )
    _event(
        clar,
        "delivered",
        attempt=attempt,
        candidate=str(person.pk),
        channel=route.channel.name,
        nonceState=delivery.nonce_state,
        messageRef=ref[:200],
    )
    if clar.severity == Severity.HIGH and not _steward_notified(clar):
        # Once per clarification, at its first card (ranking[0] may have been skipped).
        _event(clar, "steward_notified", reason="high_severity")
    # No heartbeat from here on: lease expiry + backoff is the escalation window.


def _steward_notified(clar: Clarification) -> bool:
    return AuditEvent.objects.filter(
        clarification=clar, type="steward_notified", detail__reason="high_severity"
    ).exists()


def _escalate(lease: Lease, clar: Clarification, attempt: int) -> None:
    """The final attempt: the redacted steward escalation with the skip reasons."""
    reasons = skip_reasons(clar)
    escalation = build_escalation(clar, reasons)
    stewards = list(
        Person.objects.select_related("user").filter(
            tenant=clar.tenant, role=Rights.STEWARD, erased_at__isnull=True
        )
    )
    aliases = aliases_for(p.pk for p in stewards)
    sent_to: list[str] = []
    for steward in stewards:
        route = route_for(steward, aliases.get(str(steward.pk), {}))
        if route is None:
            continue
        delivery = _delivery_record(
            clar,
            steward,
            lease.job.pk,
            attempt,
            DeliveryKind.ESCALATION,
            route.channel.name,
            DeliveryStatus.SENT,
        )
        message = (
            escalation if route.channel.name == "inbox" else gated_escalation(escalation, clar)
        )
        try:
            ref = _send_with_retries(
                lambda r=route, m=message: r.channel.send_escalation(
                    address=r.address, escalation=m
                )
            )
        except DeliveryError as exc:
            _delivery_failed(clar, delivery, exc, attempt=attempt, person=steward, route=route)
            continue
        Delivery.objects.filter(pk=delivery.pk).update(
            status=DeliveryStatus.SENT,
            message_ref=ref[:500],
            sent_at=timezone.now(),
            redacted=True,
        )
        sent_to.append(str(steward.pk))
    _event(
        clar,
        "escalated",
        attempt=attempt,
        candidate=None,
        stewards=sent_to,
        skipReasons=reasons,
        reason=None if sent_to else NO_DELIVERY_ALIAS,
    )
    if not sent_to:
        job_fail(
            tenant=None,
            job_id=lease.job.pk,
            token=lease.token,
            retryable=False,
            reason=NO_DELIVERY_ALIAS,
            detail="no steward could be reached",
        )


def close_nonces(clar: Clarification) -> None:
    """A terminal clarification's cards can no longer bind: late taps get "moved on"."""
    Delivery.objects.filter(clarification=clar, nonce_state=NonceState.ACTIVE).update(
        nonce_state=NonceState.CLOSED
    )
