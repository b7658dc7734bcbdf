"""Digest batching: questions queued for a person beyond the digest threshold go out as
one message listing them once the digest window has passed.

At send time every item passes the ACL floor check again (the person may have lost read
access while it waited): an item that fails is dropped — its nonce revoked, a `skipped`
event with the reason code — and, as for any skipped candidate, its routing job moves on
to the next candidate at once instead of waiting out the escalation window. On chat
channels each remaining card passes the delivery gate; a blocked one becomes the teaser
and a `restricted_content_blocked` event.

Each card a digest lists gets its one reminder job (`reminders.reminders_enqueue`) in the
transaction that marks it sent; its reminder re-sends that card alone, on the digest's
channel with the same nonce.

Locks: a person's clarifications first, then their deliveries, the reminder jobs, and the
audit chain head last — the order of the answer (which locks the clarification, then
closes its cards' nonces) and of the worker."""

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from clarify.models import CLOSED_STATES, Clarification
from clarify.policy import policy_for
from clarify.services import audit_event_append
from tenancy.selectors import aliases_for

from .cards import Card, build_card, card_of_row
from .channels import DeliveryError, route_for
from .gate import floor_check
from .models import Delivery, DeliveryKind, DeliveryStatus, NonceState
from .reminders import reminders_enqueue
from .restriction import excerpt_for_chat, gated_card, restricted_content_blocked
from .revocation import deliveries_drop


def digest_siblings(delivery: Delivery, limit: int, ref: str | None = None) -> list[Delivery]:
    """The questions sent in the same chat message as `delivery` (`ref`: that message's
    reference, by default the delivery's), to re-render a digest after a tap on one of
    them: the recipient's own question cards only, in the order they were listed, each
    clarification once (the tapped delivery standing for its own). The tapped one is
    always among the first `limit` (the cards a digest shows; the channel's rendering
    points to the inbox for any beyond): when it was listed further down, it follows the
    first `limit - 1`. Just `delivery` for a single card or a message without a
    reference."""
    ref = delivery.message_ref if ref is None else ref
    if not ref:
        return [delivery]
    siblings = Delivery.objects.filter(
        message_ref=ref, person_id=delivery.person_id, kind=DeliveryKind.QUESTION
    ).order_by("created_at", "pk")
    by_clarification: dict[Any, Delivery] = {}
    for sibling in siblings:
        by_clarification.setdefault(sibling.clarification_id, sibling)
    by_clarification[delivery.clarification_id] = delivery
    ordered = list(by_clarification.values())
    if delivery not in ordered[:limit]:
        ordered = [*ordered[: limit - 1], delivery]
    return ordered


def digests_flush(*, now: Any = None) -> int:
    """Send every due digest; returns how many digest messages went out."""
    now = now or timezone.now()
    window = timedelta(minutes=settings.CLARIFY["DIGEST_WINDOW_MINUTES"])
    queued = Delivery.objects.filter(status=DeliveryStatus.QUEUED_DIGEST)
    due_people = set(
        queued.filter(created_at__lte=now - window).values_list("person_id", flat=True)
    )
    sent = 0
    for person_id in due_people:
        with transaction.atomic():
            sent += _flush(queued.filter(person_id=person_id), now)
    return sent


def _locked(mine: Any) -> list[Delivery]:
    """A person's queued items, locked in the answer's order: their clarifications first,
    then the deliveries."""
    locked = list(
        Clarification.objects.select_for_update()
        .filter(pk__in=mine.values("clarification_id"))
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    return list(
        mine.select_for_update(of=("self",))
        .filter(clarification_id__in=locked)
        .select_related(
            "person__user",
            "clarification__source_version__source",
            "clarification__tenant",
            "on_behalf_of",
        )
        .order_by("created_at")
    )


def _mark_sent(items: list[Delivery], now: Any) -> None:
    """The items still queued are done with (sent, or closed before they went out)."""
    Delivery.objects.filter(
        pk__in=[d.pk for d in items], status=DeliveryStatus.QUEUED_DIGEST
    ).update(status=DeliveryStatus.SENT, sent_at=now)


def _flush(mine: Any, now: Any) -> int:
    """One person's digest, in the caller's transaction: 1 if it went out, else 0."""
    items = _locked(mine)
    open_items = [
        d
        for d in items
        if d.clarification.state not in CLOSED_STATES and d.nonce_state == NonceState.ACTIVE
    ]
    person = open_items[0].person if open_items else None
    open_items = _readable(open_items)
    if person is None or not open_items:  # the dropped ones are failed; closed ones need nothing
        _mark_sent(items, now)
        return 0
    route = route_for(
        person,
        aliases_for([person.pk]).get(str(person.pk), {}),
        policy_for(person.tenant).channel_order,
    )
    if route is None:
        return 0
    cards = [
        card_of_row(build_card(d.clarification, d.nonce, excerpt_for_chat(d.clarification)), d)
        for d in open_items
    ]
    if route.channel.name != "inbox":
        cards = [_gated(c, d, route.channel.name) for c, d in zip(cards, open_items, strict=True)]
    try:
        ref = route.channel.send_digest(address=route.address, cards=cards)
    except DeliveryError:
        return 0
    Delivery.objects.filter(pk__in=[d.pk for d in open_items]).update(
        status=DeliveryStatus.SENT, sent_at=now, message_ref=ref[:500], channel=route.channel.name
    )
    for d in open_items:
        d.status, d.sent_at, d.message_ref, d.channel = (
            DeliveryStatus.SENT,
            now,
            ref[:500],
            route.channel.name,
        )
    # Each card listed gets its one reminder, like a card sent alone: the card itself
    # again, on the digest's channel with its nonce (`worker.handle_reminders`).
    reminders_enqueue(
        open_items, {person.tenant_id: policy_for(person.tenant).reminder_after_hours}
    )
    _mark_sent(items, now)
    for d in open_items:
        _audit(
            d,
            "delivered",
            candidate=str(person.pk),
            channel=route.channel.name,
            digest=len(cards),
            nonceState=d.nonce_state,
        )
    return 1


def _audit(d: Delivery, type: str, **detail: Any) -> None:
    """An event of a digest item's clarification, naming the item's attempt first."""
    audit_event_append(
        tenant=d.tenant,
        clarification=d.clarification,
        type=type,
        detail={"attempt": d.attempt, **detail},
    )


def _readable(items: list[Delivery]) -> list[Delivery]:
    """The items whose recipient still passes the ACL floor check; the others are dropped
    (`revocation.deliveries_drop`: nonce revoked — the card can no longer be answered or
    shown in the inbox — status failed, a `skipped` event with the reason code, and the
    routing job moved on to its next candidate now if it still waits on this one)."""
    kept, lost = [], []
    for d in items:
        reason = floor_check(d.clarification, [d.person]).get(d.person.pk)
        if reason is None:
            kept.append(d)
        else:
            lost.append((d, reason))
    deliveries_drop(lost, detail="dropped from the digest", digest=True)
    return kept


def _gated(card: Card, d: Delivery, channel: str) -> Card:
    """The digest entry as it may cross to a chat channel; a block is audited like a card's."""
    gated, blocked = gated_card(card, d.clarification)
    if blocked:
        restricted_content_blocked(
            d.clarification, reason=blocked, channel=channel, message="digest", attempt=d.attempt
        )
    return gated
