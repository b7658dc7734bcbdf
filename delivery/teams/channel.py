"""The Teams channel: proactive messages to a stored conversation reference through the
Bot Framework REST protocol, with a bearer token from the configured token endpoint
(client credentials, cached until shortly before it expires)."""

import threading
import time
from typing import Any

import requests
from django.conf import settings

from tenancy.models import Person

from ..cards import Card, Escalation
from ..channels.base import Channel, DeliveryError
from ..models import TeamsConversation
from .adaptive import attachment, digest_card, escalation_card, question_card

SCOPE = "https://api.botframework.com/.default"
TIMEOUT_SECONDS = 10

_token_lock = threading.Lock()
_token: dict[str, Any] = {}


def bot_token() -> str:
    """A bearer token for outbound calls (cached per token endpoint and app id; refreshed
    60 s before expiry). Any failure, including a malformed answer, is a `DeliveryError`."""
    key = (settings.TEAMS_TOKEN_URL, settings.TEAMS_APP_ID)
    with _token_lock:
        if (
            _token.get("key") == key
            and _token.get("value")
            and _token.get("expires", 0) > time.monotonic() + 60
        ):
            return str(_token["value"])
        try:
            response = requests.post(
                settings.TEAMS_TOKEN_URL,
                data={
                    "grant_type": "client_credentials",
                    "client_id": settings.TEAMS_APP_ID,
                    "client_secret": settings.TEAMS_APP_PASSWORD,
                    "scope": SCOPE,
                },
                timeout=TIMEOUT_SECONDS,
            )
        except requests.RequestException as exc:
            raise DeliveryError(f"token endpoint unreachable: {exc}") from exc
        if response.status_code != 200:
            raise DeliveryError(
                f"token endpoint answered {response.status_code}",
                retryable=response.status_code >= 500 or response.status_code == 429,
            )
        try:
            body = response.json()
            value = str(body["access_token"])
            expires_in = float(body.get("expires_in", 3600))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise DeliveryError("token endpoint answered without an access token") from exc
        if not value:
            raise DeliveryError("token endpoint answered without an access token")
        _token.update(key=key, value=value, expires=time.monotonic() + expires_in)
        return value


def reset_token_cache() -> None:
    with _token_lock:
        _token.clear()


def post_activity(conversation: TeamsConversation, activity: dict[str, Any]) -> str:
    """Post an activity to the conversation; returns the activity id."""
    url = (
        f"{conversation.service_url.rstrip('/')}/v3/conversations/"
        f"{conversation.conversation_id}/activities"
    )
    try:
        response = requests.post(
            url,
            json=activity,
            timeout=TIMEOUT_SECONDS,
            headers={"Authorization": f"Bearer {bot_token()}"},
        )
    except requests.RequestException as exc:
        raise DeliveryError(f"connector unreachable: {exc}") from exc
    if response.status_code == 401:
        reset_token_cache()
    if response.status_code >= 300:
        raise DeliveryError(
            f"connector answered {response.status_code}",
            retryable=response.status_code >= 500 or response.status_code in (401, 429),
        )
    try:
        return str(response.json().get("id", ""))
    except ValueError:
        return ""


class TeamsChannel(Channel):
    name = "teams"

    def configured(self) -> bool:
        return bool(settings.TEAMS_APP_ID and settings.TEAMS_APP_PASSWORD)

    def address(self, person: Person, aliases: dict[str, str]) -> str | None:
        conversation = TeamsConversation.objects.filter(person=person).first()
        return f"teams:{conversation.pk}" if conversation is not None else None

    def _conversation(self, address: str) -> TeamsConversation:
        conversation = TeamsConversation.objects.filter(pk=address.partition(":")[2]).first()
        if conversation is None:
            raise DeliveryError("conversation reference is gone", retryable=False)
        return conversation

    def _send(self, address: str, content: dict[str, Any], summary: str) -> str:
        conversation = self._conversation(address)
        activity = {
            "type": "message",
            "summary": summary[:200],
            "attachments": [attachment(content)],
        }
        return f"teams:{conversation.conversation_id}:{post_activity(conversation, activity)}"

    def send_card(self, *, address: str, card: Card) -> str:
        return self._send(address, question_card(card), card.question)

    def send_digest(self, *, address: str, cards: list[Card]) -> str:
        return self._send(address, digest_card(cards), f"{len(cards)} questions")

    def send_escalation(self, *, address: str, escalation: Escalation) -> str:
        return self._send(address, escalation_card(escalation), escalation.text)
