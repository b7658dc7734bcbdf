"""Slack fixtures: the Web API stub, settings pointing at it, and really signed requests.

Imported by tests/delivery/conftest.py. Plain helpers (`signed_headers`, payload
builders) are importable from this module.
"""

import json
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlencode

import pytest
from django.core.cache import cache
from slack_sdk.signature import SignatureVerifier

from .slack_stub import RunningStub, SlackStub

SIGNING_SECRET = "test-signing-secret-0123456789abcdef"
BOT_TOKEN = "xoxb-test-telha-clarify"
TEAM_ID = "T0ACME"
INTERACTIVITY = "/hooks/slack/interactivity"
EVENTS = "/hooks/slack/events"


def signed_headers(
    body: str, *, timestamp: int | None = None, secret: str = SIGNING_SECRET
) -> dict[str, str]:
    """`X-Slack-Request-Timestamp` and `X-Slack-Signature` for `body` (v0 HMAC-SHA256)."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
    assert signature is not None
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": signature}


def form_body(payload: dict[str, Any]) -> str:
    """An interactivity request body: the JSON payload in form field `payload`."""
    return urlencode({"payload": json.dumps(payload)})


def block_actions(
    *,
    action_id: str,
    value: str,
    user: str = "U0ALICE",
    channel: str = "D0ALICE",
    ts: str = "1700000000.000001",
    blocks: list[dict[str, Any]] | None = None,
    action_ts: str = "1700000100.000100",
    trigger_id: str = "1111.2222.trigger",
    team: str = TEAM_ID,
) -> dict[str, Any]:
    """A `block_actions` interactivity payload as Slack sends it for a button tap."""
    return {
        "type": "block_actions",
        "team": {"id": team, "domain": "acme"},
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": team},
        "api_app_id": "A0TELHA",
        "token": "legacy-verification-token",
        "container": {
            "type": "message",
            "message_ts": ts,
            "channel_id": channel,
            "is_ephemeral": False,
        },
        "trigger_id": trigger_id,
        "channel": {"id": channel, "name": "directmessage"},
        "message": {"type": "message", "ts": ts, "text": "card", "blocks": blocks or []},
        "response_url": f"https://hooks.slack.com/actions/{team}/1/fake",
        "actions": [
            {
                "type": "button",
                "action_id": action_id,
                "block_id": "clarify_act:x",
                "text": {"type": "plain_text", "text": "button"},
                "value": value,
                "action_ts": action_ts,
            }
        ],
    }


def view_submission(
    *,
    metadata: dict[str, Any],
    valid_from: str | None,
    valid_to: str | None = None,
    source_text: str | None = None,
    user: str = "U0ALICE",
    trigger_id: str = "3333.4444.trigger",
    team: str = TEAM_ID,
) -> dict[str, Any]:
    """A `view_submission` of the "Something else…" modal."""
    return {
        "type": "view_submission",
        "team": {"id": team, "domain": "acme"},
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": team},
        "api_app_id": "A0TELHA",
        "token": "legacy-verification-token",
        "trigger_id": trigger_id,
        "view": {
            "id": "V0MODAL",
            "team_id": team,
            "type": "modal",
            "callback_id": "clarify_custom",
            "private_metadata": json.dumps(metadata),
            "hash": "1700000200.abcdef",
            "state": {
                "values": {
                    "valid_from": {"date": {"type": "datepicker", "selected_date": valid_from}},
                    "valid_to": {"date": {"type": "datepicker", "selected_date": valid_to}},
                    "source_text": {"text": {"type": "plain_text_input", "value": source_text}},
                }
            },
        },
    }


def event_callback(
    event_id: str, *, event_type: str = "app_mention", team: str = TEAM_ID
) -> dict[str, Any]:
    return {
        "token": "legacy-verification-token",
        "team_id": team,
        "api_app_id": "A0TELHA",
        "event": {
            "type": event_type,
            "user": "U0ALICE",
            "text": "<@U0BOT> when does the MSA start?",
            "ts": "1700000300.000100",
            "channel": "C0GENERAL",
            "event_ts": "1700000300.000100",
        },
        "type": "event_callback",
        "event_id": event_id,
        "event_time": 1700000300,
    }


@pytest.fixture
def slack_stub() -> Iterator[SlackStub]:
    running = RunningStub()
    try:
        yield running.stub
    finally:
        running.stop()


@pytest.fixture
def slack_settings(settings: Any, slack_stub: SlackStub) -> Iterator[Any]:
    """Slack configured against the stub, channels slack then inbox, a clean cache."""
    settings.SLACK_SIGNING_SECRET = SIGNING_SECRET
    settings.SLACK_BOT_TOKEN = BOT_TOKEN
    settings.SLACK_API_URL = slack_stub.url
    settings.CLARIFY_CHANNELS = ["slack", "inbox"]
    cache.clear()
    yield settings
    cache.clear()


@pytest.fixture
def slack_post(client: Any, slack_settings: Any) -> Any:
    """`slack_post(path, body, content_type=…, timestamp=…, secret=…, headers=…, **extra)` →
    the response of a really signed POST (Django test client; `extra` is WSGI environ)."""

    def post(
        path: str,
        body: str,
        *,
        content_type: str = "application/x-www-form-urlencoded",
        timestamp: int | None = None,
        secret: str = SIGNING_SECRET,
        headers: dict[str, str] | None = None,
        using: Any = None,
        **extra: Any,
    ) -> Any:
        all_headers = {
            **signed_headers(body, timestamp=timestamp, secret=secret),
            **(headers or {}),
        }
        return (using or client).post(
            path, body, content_type=content_type, headers=all_headers, **extra
        )

    return post


@pytest.fixture
def slack_payloads() -> SimpleNamespace:
    return SimpleNamespace(
        block_actions=block_actions,
        view_submission=view_submission,
        event_callback=event_callback,
        form_body=form_body,
    )
