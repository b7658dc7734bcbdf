"""Teams fixtures: the Bot Framework stub (OpenID metadata, JWKS, token endpoint,
connector), settings pointing at it, tokens signed with a locally generated RSA key, and
activity builders.

Imported by tests/delivery/conftest.py. Plain helpers (`claims_for`, activity builders,
the key ids) are importable from this module.
"""

import itertools
import json
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from django.core.cache import cache

import delivery.teams.auth
import delivery.teams.channel
import delivery.worker
from tenancy.models import PersonAlias

from .teams_stub import ISSUER, LocalKey, RunningStub, TeamsStub

APP_ID = "00000000-0000-4000-8000-00000000a9b1"
APP_PASSWORD = "teams-app-password-for-tests"
HS256_SECRET = APP_PASSWORD + "-used-as-an-hmac-key"  # what a forger might try
MESSAGES = "/hooks/teams/messages"
KID = "stub-key-1"
# A second key in the same key set, endorsed for another channel only (not msteams).
UNENDORSED_KID = "stub-key-webchat-only"
ALICE_TEAMS_ID = "29:1alice-teams-user-id"
ALICE_OID = "oid-alice"
ALICE_CONVERSATION = "a:1alice-personal-chat"
TEAMS_TENANT = "72f988bf-0000-4000-8000-000000000acm"
BOT_ID = f"28:{APP_ID}"
_activity_ids = itertools.count(1)

# RSA key generation takes a while; a few keys serve the whole session.
_KEYS: dict[str, LocalKey] = {}


def local_key(kid: str, endorsements: tuple[str, ...] | None = ("msteams",)) -> LocalKey:
    """The session's locally generated RSA key with this key id (endorsed as given the
    first time it is asked for)."""
    if kid not in _KEYS:
        _KEYS[kid] = LocalKey.generate(kid, endorsements)
    return _KEYS[kid]


def unendorsed_key() -> LocalKey:
    """The key set's second key: endorsed for `webchat`, not for `msteams`."""
    return local_key(UNENDORSED_KID, ("webchat",))


def claims_for(service_url: str, **overrides: Any) -> dict[str, Any]:
    """The claims of a Bot Framework channel token for this app (valid for an hour)."""
    now = int(time.time())
    claims: dict[str, Any] = {
        "serviceurl": service_url,
        "nbf": now - 60,
        "exp": now + 3600,
        "iss": ISSUER,
        "aud": APP_ID,
    }
    claims.update(overrides)
    return {k: v for k, v in claims.items() if v is not None}


def next_activity_id() -> str:
    return f"f:activity-{next(_activity_ids):06d}"


def sender(user_id: str = ALICE_TEAMS_ID, aad_object_id: str | None = ALICE_OID) -> dict[str, Any]:
    out: dict[str, Any] = {"id": user_id, "name": "Alice Author"}
    if aad_object_id is not None:
        out["aadObjectId"] = aad_object_id
    return out


def _base(
    kind: str,
    service_url: str,
    *,
    user_id: str = ALICE_TEAMS_ID,
    aad_object_id: str | None = ALICE_OID,
    conversation_id: str = ALICE_CONVERSATION,
    conversation_type: str = "personal",
    activity_id: str | None = None,
) -> dict[str, Any]:
    return {
        "type": kind,
        "id": activity_id or next_activity_id(),
        "timestamp": "2026-07-04T10:00:00.000Z",
        "serviceUrl": service_url,
        "channelId": "msteams",
        "from": sender(user_id, aad_object_id),
        "conversation": {
            "id": conversation_id,
            "conversationType": conversation_type,
            "tenantId": TEAMS_TENANT,
        },
        "recipient": {"id": BOT_ID, "name": "Telha"},
        "channelData": {"tenant": {"id": TEAMS_TENANT}},
    }


def conversation_update(service_url: str, **kwargs: Any) -> dict[str, Any]:
    """The bot is installed in a personal chat (`membersAdded`: the bot)."""
    activity = _base("conversationUpdate", service_url, **kwargs)
    activity["membersAdded"] = [{"id": BOT_ID}]
    return activity


def invoke_action(
    service_url: str, data: dict[str, Any], *, reply_to: str = "", **kwargs: Any
) -> dict[str, Any]:
    """An `adaptiveCard/action` invoke: `Action.Execute` tapped (inputs merged into data)."""
    activity = _base("invoke", service_url, **kwargs)
    activity["name"] = "adaptiveCard/action"
    activity["value"] = {
        "action": {"type": "Action.Execute", "verb": "clarify_answer", "data": data},
        "trigger": "manual",
    }
    if reply_to:
        activity["replyToId"] = reply_to
    return activity


def message_submit(
    service_url: str, value: dict[str, Any], *, reply_to: str = "", **kwargs: Any
) -> dict[str, Any]:
    """The `Action.Submit` fallback: a `message` whose `value` is the action data."""
    activity = _base("message", service_url, **kwargs)
    activity["value"] = value
    activity["text"] = ""
    if reply_to:
        activity["replyToId"] = reply_to
    return activity


@pytest.fixture
def teams_stub() -> Iterator[TeamsStub]:
    running = RunningStub()
    running.stub.publish(local_key(KID))
    running.stub.publish(unendorsed_key())
    try:
        yield running.stub
    finally:
        running.stop()


def _reset_caches() -> None:
    delivery.teams.auth.reset_cache()
    delivery.teams.channel.reset_token_cache()
    cache.clear()


@pytest.fixture
def teams_settings(settings: Any, teams_stub: TeamsStub, monkeypatch: Any) -> Iterator[Any]:
    """Teams configured against the stub; channels teams then inbox; clean key, token and
    rate-limit caches; retries within the lease do not sleep."""
    settings.TEAMS_APP_ID = APP_ID
    settings.TEAMS_APP_PASSWORD = APP_PASSWORD
    settings.TEAMS_OPENID_METADATA_URL = teams_stub.metadata_url
    settings.TEAMS_TOKEN_URL = teams_stub.token_url
    settings.CLARIFY_CHANNELS = ["teams", "inbox"]
    monkeypatch.setattr(delivery.worker, "RETRY_PAUSE_SECONDS", 0)
    _reset_caches()
    yield settings
    _reset_caches()


@pytest.fixture
def teams_token(teams_stub: TeamsStub) -> Callable[..., str]:
    """`teams_token(key=…, kid=…, alg=…, **claim_overrides)` → a signed bearer token
    (RS256 with the published local key unless told otherwise; a claim set to None is
    left out; `alg="HS256"` signs with a shared secret instead)."""

    def make(
        *, key: LocalKey | None = None, kid: str | None = None, alg: str = "RS256", **claims: Any
    ) -> str:
        payload = claims_for(teams_stub.service_url, **claims)
        if alg == "HS256":
            import jwt

            return jwt.encode(payload, HS256_SECRET, algorithm="HS256", headers={"kid": KID})
        return (key or local_key(KID)).sign(payload, kid=kid)

    return make


@pytest.fixture
def teams_post(client: Any, teams_settings: Any, teams_token: Callable[..., str]) -> Any:
    """`teams_post(activity, token=…, authorization=…)` → the response of a POST to
    /hooks/teams/messages with a freshly signed token (or the given one; `authorization=""`
    sends no Authorization header)."""

    def post(
        activity: dict[str, Any], *, token: str | None = None, authorization: str | None = None
    ) -> Any:
        if authorization is None:
            authorization = f"Bearer {token if token is not None else teams_token()}"
        headers = {"Authorization": authorization} if authorization else {}
        return client.post(
            MESSAGES, json.dumps(activity), content_type="application/json", headers=headers
        )

    return post


@pytest.fixture
def teams_alice(people: dict[str, Any]) -> Any:
    """Alice with a verified `teamsUserId` alias (she already has `aadOid` oid-alice)."""
    alice = people["alice"]
    PersonAlias.objects.create(
        tenant=alice.tenant, person=alice, kind="teamsUserId", value=ALICE_TEAMS_ID
    )
    return alice


@pytest.fixture
def teams_activities() -> SimpleNamespace:
    return SimpleNamespace(
        conversation_update=conversation_update,
        invoke_action=invoke_action,
        message_submit=message_submit,
    )
