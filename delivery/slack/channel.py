"""Slack: cards as direct messages to the person's `slackUserId` through slack-sdk's
`WebClient` (base URL `SLACK_API_URL`, so tests drive a local stub of the Web API).

A message reference is `slack:<channel>:<ts>` — the DM channel and timestamp Slack
returns, which is also what an interactivity payload names, so `chat.update` can find it.
"""

import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from tenancy.models import AliasKind, Person

from ..cards import Card, Escalation
from ..channels.base import Channel, DeliveryError
from .blocks import (
    BlockKitError,
    card_fallback,
    card_message,
    digest_fallback,
    digest_message,
    escalation_message,
)

log = logging.getLogger(__name__)

SEND_TIMEOUT_SECONDS = 10
# Slack error codes worth another try; anything else (invalid_auth, channel_not_found,
# not_authed, account_inactive, invalid_blocks, …) will fail the same way again.
RETRYABLE_ERRORS = frozenset(
    {"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"}
)


def api_url() -> str:
    url = str(settings.SLACK_API_URL or "https://slack.com/api/")
    return url if url.endswith("/") else url + "/"


def web_client(token: str | None = None) -> WebClient:
    return WebClient(
        token=token if token is not None else settings.SLACK_BOT_TOKEN,
        base_url=api_url(),
        timeout=SEND_TIMEOUT_SECONDS,
    )


def message_ref(channel: str, ts: str) -> str:
    return f"slack:{channel}:{ts}"


def parse_message_ref(ref: str) -> tuple[str, str] | None:
    """`slack:<channel>:<ts>` → (channel, ts), or None for another channel's reference."""
    kind, _, rest = (ref or "").partition(":")
    channel, _, ts = rest.partition(":")
    if kind != "slack" or not channel or not ts:
        return None
    return channel, ts


def delivery_error(exc: Exception) -> DeliveryError:
    """A Slack or network failure as a DeliveryError: rate limits, 5xx and connection
    failures are retryable; authentication and addressing errors are not."""
    if isinstance(exc, SlackApiError):
        status = getattr(exc.response, "status_code", 0) or 0
        data = exc.response.data if isinstance(exc.response.data, dict) else {}
        error = str(data.get("error") or "unknown_error")
        retryable = status == 429 or status >= 500 or error in RETRYABLE_ERRORS
        return DeliveryError(f"slack {error} (HTTP {status})", retryable=retryable)
    if isinstance(exc, OSError):  # URLError, timeouts, refused connections
        return DeliveryError(f"slack unreachable: {exc}", retryable=True)
    if isinstance(exc, BlockKitError):
        return DeliveryError(f"refused to send invalid blocks: {exc}", retryable=False)
    return DeliveryError(f"slack client error: {exc}", retryable=False)


def call_slack(call: Callable[[], Any]) -> Any:
    """Run one Web API call, mapping failures to DeliveryError."""
    try:
        return call()
    except (SlackClientError, OSError, BlockKitError) as exc:
        raise delivery_error(exc) from exc


class SlackChannel(Channel):
    name = "slack"
    threaded_sends = True  # a Web API call with its own WebClient; no database

    def configured(self) -> bool:
        return bool(settings.SLACK_BOT_TOKEN and settings.SLACK_SIGNING_SECRET)

    def address(self, person: Person, aliases: dict[str, str]) -> str | None:
        """The person's verified `slackUserId` alias (the aliases the worker loaded)."""
        if person.erased_at is not None:
            return None
        return aliases.get(AliasKind.SLACK_USER_ID) or None

    def _post(self, *, address: str, text: str, blocks: Callable[[], list[dict[str, Any]]]) -> str:
        def send() -> Any:
            return web_client().chat_postMessage(
                channel=address,
                text=text,
                blocks=blocks(),
                unfurl_links=False,
                unfurl_media=False,
            )

        response = call_slack(send)
        channel, ts = response.get("channel"), response.get("ts")
        if not channel or not ts:
            raise DeliveryError("slack chat.postMessage returned no channel/ts", retryable=False)
        return message_ref(str(channel), str(ts))

    def send_card(self, *, address: str, card: Card) -> str:
        return self._post(
            address=address, text=card_fallback(card), blocks=lambda: card_message(card)
        )

    def send_digest(self, *, address: str, cards: list[Card]) -> str:
        return self._post(
            address=address, text=digest_fallback(cards), blocks=lambda: digest_message(cards)
        )

    def send_escalation(self, *, address: str, escalation: Escalation) -> str:
        return self._post(
            address=address,
            text=escalation.text,
            blocks=lambda: escalation_message(escalation),
        )

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "apiUrl": api_url()}
