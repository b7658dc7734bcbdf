"""The built-in inbox: a signed-in page listing a person's open cards. Sending is
recording: the delivery row is what the page shows."""

from tenancy.models import Person

from ..cards import Card, Escalation
from ..channels.base import Channel


class InboxChannel(Channel):
    name = "inbox"

    def address(self, person: Person, aliases: dict[str, str]) -> str | None:
        user = person.user
        if user is None or not user.is_active or not user.has_usable_password():
            return None
        return f"inbox:{person.pk}"

    def send_card(self, *, address: str, card: Card) -> str:
        return f"{address}:{card.nonce}"

    def send_digest(self, *, address: str, cards: list[Card]) -> str:
        return f"{address}:digest:{len(cards)}"

    def send_escalation(self, *, address: str, escalation: Escalation) -> str:
        return f"{address}:escalation:{escalation.clarification_id}"
