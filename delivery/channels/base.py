"""The channel interface: where a card, a digest or an escalation is sent."""

from abc import ABC, abstractmethod
from typing import Any

from tenancy.models import Person

from ..cards import Card, Escalation


class DeliveryError(Exception):
    """A send failed; `retryable` failures are retried within the lease."""

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


class Channel(ABC):
    name = ""
    # Its sends read and write nothing in the database (an HTTP call), so the batch
    # worker may run several at once from threads (`delivery.worker.SEND_THREADS`).
    threaded_sends = False

    def configured(self) -> bool:
        return True

    @abstractmethod
    def address(self, person: Person, aliases: dict[str, str]) -> str | None:
        """The verified address of `person` on this channel, or None."""

    @abstractmethod
    def send_card(self, *, address: str, card: Card) -> str:
        """Send one card; returns a message reference."""

    @abstractmethod
    def send_digest(self, *, address: str, cards: list[Card]) -> str:
        """Send one message listing several cards."""

    @abstractmethod
    def send_escalation(self, *, address: str, escalation: Escalation) -> str:
        """Send the redacted steward escalation."""

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}
