"""Delivery's invariants in `telha check_integrity`: registered into
`clarify.integrity.CHECKS` (`DeliveryConfig.ready`), so clarify checks them without
importing delivery."""

from collections.abc import Iterator

from clarify.models import Clarification, State

from .models import Delivery, NonceState


def check_nonces() -> Iterator[str]:
    for d in Delivery.objects.filter(
        nonce_state=NonceState.ACTIVE, clarification__state=State.ANSWERED
    ):
        yield f"delivery {d.pk} keeps an active nonce on an answered clarification"
    # Binding closes nonces only where a card was issued (delivery.worker.close_nonces).
    for clar in Clarification.objects.filter(
        cards_issued=False, pk__in=Delivery.objects.values("clarification_id")
    ).only("id"):
        yield f"clarification {clar.pk} has cards but does not record that it has"
