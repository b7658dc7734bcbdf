"""Digest batching: questions queued for a person beyond the digest threshold go out as
one message listing them once the digest window has passed."""

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from clarify.models import State
from clarify.services import audit_event_append
from telha.tenancy.selectors import aliases_for

from .cards import build_card
from .channels import DeliveryError
from .models import Delivery, DeliveryStatus, NonceState
from .restriction import excerpt_for_chat, gated_card


def digests_flush(*, now: Any = None) -> int:
    """Send every due digest; returns how many digest messages went out."""
    from .worker import route_for

    now = now or timezone.now()
    window = timedelta(minutes=settings.CLARIFY["DIGEST_WINDOW_MINUTES"])
    queued = Delivery.objects.filter(status=DeliveryStatus.QUEUED_DIGEST)
    due_people = set(
        queued.filter(created_at__lte=now - window).values_list("person_id", flat=True)
    )
    sent = 0
    for person_id in due_people:
        with transaction.atomic():
            items = list(
                queued.select_for_update(of=("self",))
                .filter(person_id=person_id)
                .select_related(
                    "person__user", "clarification__source_version__source", "clarification__tenant"
                )
                .order_by("created_at")
            )
            open_items = [
                d
                for d in items
                if d.clarification.state not in (State.ANSWERED, State.CONFLICTED)
                and d.nonce_state == NonceState.ACTIVE
            ]
            if not open_items:
                Delivery.objects.filter(pk__in=[d.pk for d in items]).update(
                    status=DeliveryStatus.SENT, sent_at=now
                )
                continue
            person = open_items[0].person
            route = route_for(person, aliases_for([person.pk]).get(str(person.pk), {}))
            if route is None:
                continue
            cards = [
                build_card(d.clarification, d.nonce, excerpt_for_chat(d.clarification))
                for d in open_items
            ]
            if route.channel.name != "inbox":
                cards = [
                    gated_card(c, d.clarification)[0]
                    for c, d in zip(cards, open_items, strict=True)
                ]
            try:
                ref = route.channel.send_digest(address=route.address, cards=cards)
            except DeliveryError:
                continue
            Delivery.objects.filter(pk__in=[d.pk for d in items]).update(
                status=DeliveryStatus.SENT, sent_at=now, message_ref=ref[:500]
            )
            for d in open_items:
                audit_event_append(
                    tenant=d.tenant,
                    clarification=d.clarification,
                    type="delivered",
                    detail={
                        "attempt": d.attempt,
                        "candidate": str(person.pk),
                        "channel": route.channel.name,
                        "digest": len(cards),
                        "nonceState": d.nonce_state,
                    },
                )
            sent += 1
    return sent
