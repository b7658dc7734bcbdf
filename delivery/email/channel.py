"""The email channel: a person's verified `email` alias, reached when they can sign in
(an active account: a password or the tenant's single sign-on) — the confirmation page
answers only for the signed-in recipient. Configured when `EMAIL_URL` is set.

A message reference is `email:<Message-ID>`."""

import smtplib
from typing import Any

from django.conf import settings
from django.core.mail import EmailMultiAlternatives

from tenancy.models import AliasKind, Person

from ..cards import Card, Escalation
from ..channels.base import Channel, DeliveryError
from .render import digest_message, escalation_message, question_message

# SMTP reply codes of a permanent refusal (RFC 5321 §4.2.1: 5yz); 4yz is transient.
PERMANENT = 500


class EmailChannel(Channel):
    name = "email"

    def __init__(self) -> None:
        # An SMTP conversation touches no database (the message is built before), so the
        # worker may hold several at once; the console and file backends of development
        # write one stream, one message after another.
        backend = str(getattr(settings, "EMAIL_BACKEND", ""))
        self.threaded_sends = backend.endswith(".smtp.EmailBackend")

    def configured(self) -> bool:
        return bool(settings.EMAIL_URL)

    def address(self, person: Person, aliases: dict[str, str]) -> str | None:
        if person.erased_at is not None or person.deactivated_at is not None:
            return None
        user = person.user
        if user is None or not user.is_active:
            return None
        return aliases.get(AliasKind.EMAIL) or None

    def send_card(self, *, address: str, card: Card) -> str:
        return send(question_message(address, card))

    def send_digest(self, *, address: str, cards: list[Card]) -> str:
        return send(digest_message(address, cards))

    def send_escalation(self, *, address: str, escalation: Escalation) -> str:
        return send(escalation_message(address, escalation))

    def describe(self) -> dict[str, Any]:
        backend = str(getattr(settings, "EMAIL_BACKEND", ""))
        return {"name": self.name, "backend": backend.rsplit(".", 2)[-2] if backend else ""}


def send(message: EmailMultiAlternatives) -> str:
    """Send through Django's email backend; the message reference, or DeliveryError
    (a refused recipient, sender or login will fail again: not retryable; a dropped
    connection or a 4xx reply is)."""
    try:
        message.send(fail_silently=False)
    except smtplib.SMTPRecipientsRefused as exc:
        raise DeliveryError(f"email recipient refused: {exc}", retryable=False) from exc
    except smtplib.SMTPAuthenticationError as exc:
        raise DeliveryError(f"email login refused ({exc.smtp_code})", retryable=False) from exc
    except smtplib.SMTPResponseException as exc:
        retryable = exc.smtp_code < PERMANENT
        raise DeliveryError(f"email refused ({exc.smtp_code})", retryable=retryable) from exc
    except (smtplib.SMTPException, OSError) as exc:
        raise DeliveryError(f"email server unreachable: {exc}", retryable=True) from exc
    return f"email:{message.extra_headers['Message-ID']}"
