"""The Teams channel end to end, against a local Bot Framework stub (OpenID metadata, JWKS,
token endpoint, connector) and tokens signed with a locally generated RSA key (CONTRACT
§3.5; architecture "Chat delivery needs no internet to test"; spec §7 card copy)."""

import json
import time
from types import SimpleNamespace
from typing import Any

import jwt
import jwt.jwks_client
import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

import delivery.worker
from clarify.models import AuditEvent, Clarification, ResponseRecord, State
from delivery.cards import build_card
from delivery.channels import configured_channels
from delivery.models import CardAction, Delivery, DeliveryStatus, TeamsConversation
from delivery.teams.adaptive import question_card
from delivery.teams.channel import TeamsChannel
from graph.models import NodeVersion
from jobs import tasks
from jobs.models import Job, JobStatus
from jobs.tasks import work
from tenancy.models import PersonAlias

from .conftest import (
    JOB_KIND,
    JUL_2026,
    JUN_2026,
    OCT_2026,
    SPAN_TEXT,
    assert_unavailable,
    nonce_lookups,
)
from .conftest_teams import (
    ALICE_CONVERSATION,
    ALICE_TEAMS_ID,
    APP_ID,
    APP_PASSWORD,
    KID,
    TEAMS_TENANT,
    conversation_update,
    invoke_action,
    local_key,
    message_submit,
    unendorsed_key,
)

CARD_TYPE = "application/vnd.microsoft.card.adaptive"
COUNTED: tuple[Any, ...] = (
    ResponseRecord,
    TeamsConversation,
    CardAction,
    AuditEvent,
    NodeVersion,
    Delivery,
    Job,
)
ROWS: tuple[Any, ...] = (
    ResponseRecord,
    TeamsConversation,
    CardAction,
    NodeVersion,
    Clarification,
    Delivery,
    Job,
)


# --- helpers ----------------------------------------------------------------------------


def counts() -> dict[str, int]:
    return {m.__name__: m.objects.count() for m in COUNTED}


def rows() -> dict[str, list[dict[str, Any]]]:
    """Every row an activity could write: a refused one must leave all of them alone."""
    return {m.__name__: list(m.objects.order_by("pk").values()) for m in ROWS}


def dropped(clar: Clarification) -> list[str]:
    return [
        e.detail["reason"]
        for e in AuditEvent.objects.filter(clarification=clar, type="card_action_dropped")
    ]


def texts(card: dict[str, Any]) -> str:
    return json.dumps(card, ensure_ascii=False)


def actions_of(card: dict[str, Any], type_: str) -> list[dict[str, Any]]:
    return [a for a in card.get("actions") or [] if a["type"] == type_]


def custom_action(card: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The "Something else…" ShowCard and its submit action."""
    [show] = actions_of(card, "Action.ShowCard")
    [submit] = show["card"]["actions"]
    return show, submit


@pytest.fixture
def run_worker(monkeypatch):
    """The real delivery worker loop, `work("clarify:temporal", max_seconds=5)`. Its
    per-round `close_old_connections()` would close the test's own transaction on
    PostgreSQL, so here (only) it is a no-op."""
    monkeypatch.setattr(tasks, "close_old_connections", lambda: None)
    return lambda: work(JOB_KIND, max_seconds=5)


@pytest.fixture
def connected(teams_post, teams_stub, teams_alice):
    """Alice installed the bot in a personal chat: a signed conversationUpdate stored her
    conversation reference."""
    resp = teams_post(conversation_update(teams_stub.service_url))
    assert resp.status_code == 200, resp.content
    conv = TeamsConversation.objects.get(person=teams_alice)
    assert (conv.conversation_id, conv.user_id) == (ALICE_CONVERSATION, ALICE_TEAMS_ID)
    assert conv.service_url == teams_stub.service_url
    assert conv.teams_tenant_id == TEAMS_TENANT
    return conv


@pytest.fixture
def delivered(connected, teams_stub, submit, run_worker):
    """`delivered(**submission_kwargs)` → a clarification submitted through the ingest API
    and delivered to alice by the real worker through the connector stub."""

    def make(**kwargs: Any) -> SimpleNamespace:
        before = len(teams_stub.of("activities"))
        clar = submit(**kwargs)
        assert run_worker() >= 1
        d = Delivery.objects.get(clarification=clar, kind="question")
        posts = teams_stub.of("activities")[before:]
        assert len(posts) == 1, [p.body for p in posts]
        post = posts[0]
        prefix = f"teams:{ALICE_CONVERSATION}:"
        assert d.message_ref.startswith(prefix), d.message_ref
        activity_id = d.message_ref.removeprefix(prefix)
        return SimpleNamespace(
            clar=clar,
            delivery=d,
            post=post,
            card=post.card,
            activity_id=activity_id,
            data=lambda i: {
                "kind": "clarify_answer",
                "clarificationId": str(clar.pk),
                "answerIndex": i,
                "nonce": d.nonce,
            },
        )

    return make


@pytest.fixture
def tap(teams_post, teams_stub):
    """`tap(card, data, **activity_kwargs)` → (response, the invoke activity)."""

    def do(card: SimpleNamespace, data: dict[str, Any], **kwargs: Any) -> tuple[Any, dict]:
        activity = invoke_action(teams_stub.service_url, data, reply_to=card.activity_id, **kwargs)
        return teams_post(activity), activity

    return do


@pytest.fixture
def job_fails(monkeypatch):
    """Every `job_fail` the worker calls, as (reason, retryable, detail). Whether a
    retryable DELIVERY_FAILED re-pends after the backoff or advances to the next candidate
    at once is the jobs protocol's business; this is what the worker asked for."""
    calls: list[tuple[str, bool, str]] = []
    real = delivery.worker.job_fail

    def spy(**kwargs: Any) -> Any:
        calls.append((kwargs.get("reason", ""), kwargs["retryable"], kwargs.get("detail", "")))
        return real(**kwargs)

    monkeypatch.setattr(delivery.worker, "job_fail", spy)
    return calls


def current_version(clar: Clarification) -> NodeVersion:
    return NodeVersion.objects.get(node_id=clar.target_id, tx_to=None)


# --- configuration ----------------------------------------------------------------------


def test_teams_is_configured_only_with_app_id_and_password(settings):
    settings.CLARIFY_CHANNELS = ["teams", "inbox"]
    settings.TEAMS_APP_ID, settings.TEAMS_APP_PASSWORD = "", "pw"
    assert [c.name for c in configured_channels()] == ["inbox"]
    settings.TEAMS_APP_ID, settings.TEAMS_APP_PASSWORD = APP_ID, ""
    assert [c.name for c in configured_channels()] == ["inbox"]
    settings.TEAMS_APP_PASSWORD = APP_PASSWORD
    assert [c.name for c in configured_channels()] == ["teams", "inbox"]


def test_teams_is_first_by_default():
    assert django_settings.CLARIFY_CHANNELS[0] == "teams"


def test_the_address_is_the_stored_conversation_reference(connected, teams_alice, people):
    channel = TeamsChannel()
    assert channel.address(teams_alice, {}) == f"teams:{connected.pk}"
    assert channel.address(people["bob"], {"slackUserId": "U0BOB"}) is None


# --- the happy path ---------------------------------------------------------------------


def test_a_signed_invoke_binds_an_answer_end_to_end(delivered, tap, teams_stub):
    card = delivered()
    post = card.post
    # Proactive: to alice's stored conversation, with a bearer token from the token endpoint.
    assert post.conversation_id == ALICE_CONVERSATION
    [token_call] = teams_stub.of("token")
    assert token_call.body == {
        "grant_type": "client_credentials",
        "client_id": APP_ID,
        "client_secret": APP_PASSWORD,
        "scope": "https://api.botframework.com/.default",
    }
    assert post.bearer == teams_stub.issued[0]
    assert post.body["type"] == "message"
    assert card.delivery.channel == "teams"
    assert card.delivery.status == DeliveryStatus.SENT
    assert card.delivery.message_ref == f"teams:{ALICE_CONVERSATION}:{card.activity_id}"
    assert card.activity_id.startswith("1:activity-")

    # The card: Adaptive Card 1.5, the question, the excerpt and the document link.
    content = card.card
    assert content["type"] == "AdaptiveCard"
    assert content["version"] == "1.5"
    assert "MSA term" in content["body"][0]["text"]
    assert SPAN_TEXT in texts(content)
    assert "https://example.test/contracts/msa.docx" in texts(content)
    # A button per candidate: Action.Execute with an Action.Submit fallback, and data
    # exactly CONTRACT §3.5's {"kind", "clarificationId", "answerIndex", "nonce"}.
    buttons = actions_of(content, "Action.Execute")
    assert [b["title"] for b in buttons] == [
        "1 Oct 2026 (next quarter)",
        "12 June (signature)",
        "1 Jul 2026 (countersignature)",
    ]
    for i, button in enumerate(buttons):
        assert button["data"] == card.data(i)
        assert list(button["data"]) == ["kind", "clarificationId", "answerIndex", "nonce"]
        assert button["fallback"]["type"] == "Action.Submit"
        assert button["fallback"]["data"] == card.data(i)
    # "Something else…": a ShowCard with two Input.Date fields (and where it says so).
    show, submit = custom_action(content)
    assert show["title"] == "Something else…"
    inputs = show["card"]["body"]
    assert [(x["type"], x["id"]) for x in inputs if x["type"] == "Input.Date"] == [
        ("Input.Date", "validFrom"),
        ("Input.Date", "validTo"),
    ]
    assert [x["id"] for x in inputs if x["type"] == "Input.Text"] == ["sourceText"]
    assert submit["type"] == "Action.Execute"
    assert submit["data"] == {
        "kind": "clarify_answer",
        "clarificationId": str(card.clar.pk),
        "nonce": card.delivery.nonce,
        "custom": True,
    }
    assert submit["fallback"]["type"] == "Action.Submit"

    # Alice taps the first button: the invoke carries the Action.Execute data as sent.
    resp, activity = tap(card, buttons[0]["data"])
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["statusCode"] == 200
    assert body["type"] == CARD_TYPE
    refreshed = body["value"]
    assert refreshed["version"] == "1.5"
    assert "✓ Recorded as evidence: 1 Oct 2026 (next quarter), confirmed by Alice, " in texts(
        refreshed
    )
    assert "actions" not in refreshed  # bound: the buttons are gone

    [record] = ResponseRecord.objects.filter(clarification=card.clar)
    assert record.channel == "teams"
    assert record.answer_index == 0
    assert record.responder == card.delivery.person_id
    assert record.message_ref == card.delivery.message_ref
    card.clar.refresh_from_db()
    assert card.clar.state == State.ANSWERED
    assert (current_version(card.clar).valid_from, current_version(card.clar).valid_to) == (
        OCT_2026,
        None,
    )
    [action] = CardAction.objects.filter(channel="teams")
    assert action.action_id == activity["id"]
    # Answered synchronously: nothing more went to the connector.
    assert len(teams_stub.of("activities")) == 1


def test_an_attestation_keeps_the_card_open_with_the_outcome_copy(delivered, tap, people):
    people["alice"].role = "viewer"
    people["alice"].save()
    card = delivered()
    resp, _ = tap(card, card.data(1))
    assert resp.status_code == 200
    assert "Your answer is recorded as an attestation" in texts(resp.json()["value"])
    card.clar.refresh_from_db()
    assert card.clar.state == State.ATTESTED


# --- inbound verification ---------------------------------------------------------------


BAD_TOKENS = [
    "wrong_issuer",
    "wrong_audience",
    "expired_beyond_skew",
    "not_yet_valid_beyond_skew",
    "unknown_kid_other_key",
    "known_kid_other_key",
    "no_kid",
    "no_exp",
    "mismatched_serviceurl",
    "no_serviceurl",
    "missing_authorization",
    "not_bearer",
    "garbage",
    "hs256",
    "alg_none",
    "key_not_endorsed_for_msteams",
]


def _bad_request(how: str, teams_token: Any) -> dict[str, Any]:
    """token= / authorization= for `teams_post`."""
    now = int(time.time())
    other = local_key("rogue-key")
    if how == "wrong_issuer":
        return {"token": teams_token(iss="https://sts.windows.net/evil/")}
    if how == "wrong_audience":
        return {"token": teams_token(aud="11111111-2222-3333-4444-555555555555")}
    if how == "expired_beyond_skew":
        return {"token": teams_token(exp=now - 330, nbf=now - 3600)}
    if how == "not_yet_valid_beyond_skew":
        return {"token": teams_token(nbf=now + 600, exp=now + 3600)}
    if how == "unknown_kid_other_key":
        return {"token": teams_token(key=other)}
    if how == "known_kid_other_key":
        return {"token": teams_token(key=other, kid=KID)}
    if how == "no_kid":
        return {"token": teams_token(kid="")}
    if how == "no_exp":
        return {"token": teams_token(exp=None)}
    if how == "mismatched_serviceurl":
        return {"token": teams_token(serviceurl="https://smba.trafficmanager.net/evil/")}
    if how == "no_serviceurl":
        return {"token": teams_token(serviceurl=None)}
    if how == "missing_authorization":
        return {"authorization": ""}
    if how == "not_bearer":
        return {"authorization": f"Basic {teams_token()}"}
    if how == "garbage":
        return {"authorization": "Bearer not.a.jwt"}
    if how == "hs256":
        return {"token": teams_token(alg="HS256")}
    if how == "key_not_endorsed_for_msteams":  # in the key set, endorsed for webchat only
        return {"token": teams_token(key=unendorsed_key())}
    if how == "alg_none":
        claims = {"iss": "https://api.botframework.com", "aud": APP_ID, "exp": now + 600}
        unsigned = jwt.encode(claims, "", algorithm="none", headers={"kid": KID})
        return {"token": unsigned}
    raise AssertionError(how)


@pytest.mark.parametrize("how", BAD_TOKENS)
def test_an_unverifiable_invoke_is_401_and_writes_nothing(
    delivered, teams_post, teams_token, teams_stub, how
):
    card = delivered()
    before, snapshot = counts(), rows()
    posts = len(teams_stub.of("activities"))
    activity = invoke_action(teams_stub.service_url, card.data(0), reply_to=card.activity_id)
    resp = teams_post(activity, **_bad_request(how, teams_token))
    assert resp.status_code == 401, resp.content
    assert resp.json()["code"] == "UNAUTHENTICATED"
    assert counts() == before
    assert rows() == snapshot
    assert len(teams_stub.of("activities")) == posts
    # The same activity, properly signed, would have bound.
    assert teams_post(activity).status_code == 200
    assert ResponseRecord.objects.filter(clarification=card.clar).count() == 1


@pytest.mark.parametrize(
    "how",
    [
        "wrong_issuer",
        "unknown_kid_other_key",
        "mismatched_serviceurl",
        "key_not_endorsed_for_msteams",
    ],
)
def test_an_unverifiable_conversation_update_stores_no_reference(
    teams_post, teams_token, teams_stub, teams_alice, how
):
    before = counts()
    resp = teams_post(conversation_update(teams_stub.service_url), **_bad_request(how, teams_token))
    assert resp.status_code == 401
    assert counts() == before
    assert not TeamsConversation.objects.exists()


def test_the_key_set_holds_both_keys_and_only_the_endorsed_one_is_accepted(
    teams_post, teams_token, teams_stub, teams_alice
):
    """Both keys verify as signatures (they are in the published set); only the key whose
    endorsements include the activity's channel (msteams) may speak for it."""
    published = {k["kid"]: k.get("endorsements") for k in teams_stub.keys}
    assert published == {KID: ["msteams"], unendorsed_key().kid: ["webchat"]}
    update = conversation_update(teams_stub.service_url)
    resp = teams_post(update, token=teams_token(key=unendorsed_key()))
    assert resp.status_code == 401
    assert resp.json() == {
        "code": "UNAUTHENTICATED",
        "detail": "the signing key is not endorsed for the activity's channel",
    }
    assert not TeamsConversation.objects.exists()
    assert teams_post(update).status_code == 200
    assert TeamsConversation.objects.filter(person=teams_alice).count() == 1


@pytest.mark.parametrize(
    "endorsements, channel",
    [
        (None, "msteams"),  # a key published without endorsements
        ((), "msteams"),  # … or with none
        (("webchat",), "webchat"),  # endorsed for the channel it claims, which is not Teams
        (("msteams",), None),  # an activity that names no channel
        (("msteams",), "MSTEAMS"),  # channel ids compare exactly
    ],
)
def test_a_key_not_endorsed_for_the_teams_channel_is_401_and_writes_nothing(
    teams_post, teams_token, teams_stub, teams_alice, endorsements, channel
):
    key = local_key(f"stub-key-endorsed-{endorsements}", endorsements)
    teams_stub.publish(key)
    activity = conversation_update(teams_stub.service_url)
    if channel is None:
        del activity["channelId"]
    else:
        activity["channelId"] = channel
    before, snapshot = counts(), rows()
    resp = teams_post(activity, token=teams_token(key=key))
    assert resp.status_code == 401, resp.content
    assert resp.json()["code"] == "UNAUTHENTICATED"
    assert counts() == before
    assert rows() == snapshot


def test_with_redis_down_the_teams_hook_is_503_and_writes_nothing(
    delivered, tap, teams_post, teams_stub, teams_alice, person_client, cache_down
):
    card = delivered()
    before, snapshot = counts(), rows()
    posts = len(teams_stub.of("activities"))
    resp, _ = tap(card, card.data(0))
    assert_unavailable(resp)
    assert_unavailable(teams_post(conversation_update(teams_stub.service_url)))
    assert counts() == before
    assert rows() == snapshot
    assert len(teams_stub.of("activities")) == posts
    # The API does not need the cache.
    resp = person_client("alice").post(
        f"/v1/clarifications/{card.clar.pk}/answer", {"answerIndex": 0}, format="json"
    )
    assert resp.status_code == 200, resp.content


def test_a_cache_failure_after_the_token_is_verified_is_503(
    delivered, tap, teams_stub, cache_failing
):
    """The per-IP limit answered; the per-tenant count, once the activity is verified and
    its tenant known, does not: 503, and the tap is not processed."""
    card = delivered()
    before, snapshot = counts(), rows()
    cache_failing(":tenant:")
    resp, _ = tap(card, card.data(0))
    assert_unavailable(resp)
    assert counts() == before
    assert rows() == snapshot


def test_a_token_expired_two_minutes_ago_is_within_the_skew(
    delivered, teams_post, teams_token, teams_stub
):
    card = delivered()
    now = int(time.time())
    activity = invoke_action(teams_stub.service_url, card.data(1), reply_to=card.activity_id)
    resp = teams_post(activity, token=teams_token(exp=now - 120, nbf=now - 3600))
    assert resp.status_code == 200, resp.content
    assert resp.json()["type"] == CARD_TYPE
    [record] = ResponseRecord.objects.filter(clarification=card.clar)
    assert record.answer_index == 1


def test_the_metadata_and_keys_are_fetched_once(teams_post, teams_stub, teams_alice):
    for _ in range(3):
        assert teams_post(conversation_update(teams_stub.service_url)).status_code == 200
    assert len(teams_stub.of("openid")) == 1
    assert len(teams_stub.of("keys")) == 1


def test_a_key_published_after_the_first_fetch_is_picked_up(
    teams_post, teams_token, teams_stub, teams_alice, monkeypatch
):
    assert teams_post(conversation_update(teams_stub.service_url)).status_code == 200
    assert len(teams_stub.of("keys")) == 1
    rotated = local_key("stub-key-2")
    # Not yet published: unknown key id → 401.
    update = conversation_update(teams_stub.service_url)
    assert teams_post(update, token=teams_token(key=rotated)).status_code == 401
    # Published now (after the first fetch). Within the refresh cooldown, an unknown key id
    # does not refetch (forged key ids cannot make every request fetch the JWKS)...
    teams_stub.publish(rotated)
    fetches = len(teams_stub.of("keys"))
    assert teams_post(update, token=teams_token(key=rotated)).status_code == 401
    assert len(teams_stub.of("keys")) == fetches
    # ...once the cooldown has passed, the unknown key id refreshes the JWKS and the new
    # key verifies.
    real_monotonic = jwt.jwks_client.time.monotonic
    later = SimpleNamespace(monotonic=lambda: real_monotonic() + 31)
    monkeypatch.setattr(jwt.jwks_client, "time", later)
    resp = teams_post(update, token=teams_token(key=rotated))
    assert resp.status_code == 200, resp.content
    assert len(teams_stub.of("keys")) == fetches + 1
    assert TeamsConversation.objects.filter(person=teams_alice).exists()
    # The old key still verifies (both are in the refreshed set); no further fetch.
    assert teams_post(update).status_code == 200
    assert len(teams_stub.of("keys")) == fetches + 1
    # A key that is still not published stays 401.
    assert teams_post(update, token=teams_token(key=local_key("rogue-key"))).status_code == 401


def test_the_metadata_being_unavailable_is_401(teams_post, teams_stub, teams_alice):
    teams_stub.fail("openid", status=503)
    before = counts()
    assert teams_post(conversation_update(teams_stub.service_url)).status_code == 401
    assert counts() == before
    teams_stub.heal()
    assert teams_post(conversation_update(teams_stub.service_url)).status_code == 200


def test_the_hook_is_post_only(client, teams_settings):
    assert client.get("/hooks/teams/messages").status_code == 405


# --- identity and conversation references -----------------------------------------------


def test_the_aad_object_id_alias_binds_when_the_teams_user_id_is_unknown(
    teams_post, teams_stub, people
):
    # Alice has no teamsUserId alias; her aadOid (oid-alice) is verified.
    activity = conversation_update(
        teams_stub.service_url, user_id="29:1alice-new-device", aad_object_id="OID-ALICE"
    )
    assert teams_post(activity).status_code == 200
    conv = TeamsConversation.objects.get()
    assert conv.person == people["alice"]
    assert conv.user_id == "29:1alice-new-device"


def test_a_message_updates_the_stored_reference(teams_post, teams_stub, connected):
    activity = message_submit(teams_stub.service_url, {}, conversation_id="a:1alice-new-chat")
    activity.pop("value")
    activity["text"] = "hello"
    assert teams_post(activity).status_code == 200
    connected.refresh_from_db()
    assert connected.conversation_id == "a:1alice-new-chat"
    assert TeamsConversation.objects.count() == 1


@pytest.mark.parametrize("conversation_type", ["groupChat", "channel"])
def test_a_group_or_channel_conversation_is_never_stored(
    teams_post, teams_stub, teams_alice, connected, conversation_type
):
    # Cards go to one person only (spec §9: never broadcast to a channel).
    activity = message_submit(
        teams_stub.service_url,
        {},
        conversation_id="19:team-general@thread.tacv2",
        conversation_type=conversation_type,
    )
    activity.pop("value")
    activity["text"] = "@Telha hello"
    activity["conversation"]["isGroup"] = True
    assert teams_post(activity).status_code == 200
    connected.refresh_from_db()
    assert connected.conversation_id == ALICE_CONVERSATION


def test_an_unmapped_identity_stores_nothing_and_submits_nothing(delivered, teams_post, teams_stub):
    card = delivered()
    before, snapshot = counts(), rows()
    stranger = {"user_id": "29:1stranger", "aad_object_id": "oid-stranger"}
    update = conversation_update(
        teams_stub.service_url, conversation_id="a:1stranger-chat", **stranger
    )
    assert teams_post(update).status_code == 200
    # No nonce, no tenant to audit in: logged only, nothing written.
    assert counts() == before
    invoke = invoke_action(
        teams_stub.service_url,
        card.data(0),
        reply_to=card.activity_id,
        conversation_id="a:1stranger-chat",
        **stranger,
    )
    resp = teams_post(invoke)
    assert resp.status_code == 200
    assert resp.json()["type"] == "application/vnd.microsoft.activity.message"
    assert "not linked" in resp.json()["value"]
    fallback = message_submit(teams_stub.service_url, card.data(0), **stranger)
    assert teams_post(fallback).status_code == 200
    # Each card action (its nonce names the delivery, hence the tenant) is audited in the
    # delivery's tenant, as on Slack — and is the only thing written.
    drops = AuditEvent.objects.filter(clarification=card.clar, type="card_action_dropped")
    assert [(e.tenant_id, e.detail) for e in drops] == [
        (
            card.clar.tenant_id,
            {
                "reason": "UNMAPPED_IDENTITY",
                "channel": "teams",
                "identity": f"teams:{TEAMS_TENANT}:29:1stranger",
            },
        )
    ] * 2
    after = counts()
    assert after.pop("AuditEvent") == before.pop("AuditEvent") + 2
    assert after == before
    assert rows() == snapshot  # no answer, card action, reference, delivery or job
    assert not TeamsConversation.objects.filter(conversation_id="a:1stranger-chat").exists()
    assert len(teams_stub.of("activities")) == 1  # only the card itself


def test_a_person_without_a_conversation_reference_is_skipped(
    teams_settings, teams_stub, teams_alice, submit, run_worker, settings
):
    settings.CLARIFY_CHANNELS = ["teams"]
    clar = submit()
    run_worker()
    skipped = AuditEvent.objects.filter(clarification=clar, type="skipped").order_by("at", "id")
    assert [e.detail["reason"] for e in skipped][:1] == ["NO_DELIVERY_ALIAS"]
    assert skipped[0].detail["candidate"] == str(teams_alice.pk)
    assert not Delivery.objects.filter(clarification=clar, kind="question").exists()
    assert teams_stub.of("activities") == []
    assert teams_stub.of("token") == []


# --- replays and forged actions ---------------------------------------------------------


def test_the_same_invoke_twice_is_dropped(delivered, teams_post, teams_stub):
    card = delivered()
    activity = invoke_action(teams_stub.service_url, card.data(0), reply_to=card.activity_id)
    first = teams_post(activity)
    assert first.json()["type"] == CARD_TYPE
    again = teams_post(activity)
    assert again.status_code == 200
    assert again.json()["value"] == "This card can no longer be used."
    assert ResponseRecord.objects.filter(clarification=card.clar).count() == 1
    assert "REPLAYED_ACTION" in dropped(card.clar)
    assert CardAction.objects.filter(channel="teams", action_id=activity["id"]).count() == 1


def test_a_nonce_replayed_against_another_clarification_is_dropped(delivered, tap):
    first = delivered()
    second = delivered(
        external_id="contracts/other.docx", title="Other agreement", name="Other term"
    )
    forged = {**first.data(1), "clarificationId": str(second.clar.pk)}
    resp, _ = tap(first, forged)
    assert resp.status_code == 200
    assert resp.json()["value"] == "This card can no longer be used."
    assert not ResponseRecord.objects.exists()
    assert "NONCE_CLARIFICATION_MISMATCH" in dropped(first.clar)
    for card in (first, second):
        card.clar.refresh_from_db()
        assert card.clar.state != State.ANSWERED


def test_a_tap_by_someone_else_is_dropped(delivered, tap, people, teams_post, teams_stub):
    card = delivered()
    bob = people["bob"]
    PersonAlias.objects.create(tenant=bob.tenant, person=bob, kind="teamsUserId", value="29:1bob")
    resp, _ = tap(
        card, card.data(0), user_id="29:1bob", aad_object_id=None, conversation_id="a:1bob-chat"
    )
    assert resp.json()["value"] == "This card can no longer be used."
    assert not ResponseRecord.objects.exists()
    assert "NOT_RECIPIENT" in dropped(card.clar)


def test_an_unknown_nonce_is_dropped(delivered, tap):
    card = delivered()
    resp, _ = tap(card, {**card.data(0), "nonce": "not-a-nonce"})
    assert resp.json()["value"] == "This card can no longer be used."
    assert not ResponseRecord.objects.exists()


def test_a_late_tap_after_binding_gets_moved_on(delivered, tap):
    card = delivered()
    assert tap(card, card.data(0))[0].json()["type"] == CARD_TYPE
    resp, _ = tap(card, card.data(0))  # a new tap (new activity id), same answer
    assert resp.status_code == 200
    assert "This clarification has moved on." in texts(resp.json())
    assert ResponseRecord.objects.filter(clarification=card.clar).count() == 1


def test_a_non_clarify_invoke_is_a_bad_request_invoke_response(delivered, tap):
    card = delivered()
    resp, _ = tap(card, {"kind": "something_else", "nonce": card.delivery.nonce})
    assert resp.status_code == 200
    assert resp.json()["statusCode"] == 400
    assert not ResponseRecord.objects.exists()


# --- "Something else…" -----------------------------------------------------------------


def _custom_submission(card: SimpleNamespace, **inputs: Any) -> dict[str, Any]:
    """What Teams sends for the ShowCard's submit: its data with the inputs merged in."""
    _, submit = custom_action(card.card)
    return {**submit["data"], **inputs}


def test_the_custom_answer_binds_the_custom_interval(delivered, tap):
    card = delivered()
    data = _custom_submission(
        card,
        validFrom="2026-06-12",
        validTo="2026-07-01",
        sourceText="Clause 2: from signature until the countersignature.",
    )
    assert data == {
        "kind": "clarify_answer",
        "clarificationId": str(card.clar.pk),
        "nonce": card.delivery.nonce,
        "custom": True,
        "validFrom": "2026-06-12",
        "validTo": "2026-07-01",
        "sourceText": "Clause 2: from signature until the countersignature.",
    }
    resp, _ = tap(card, data)
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["type"] == CARD_TYPE
    assert "✓ Recorded as evidence: 12 June 2026 → 1 July 2026, confirmed by Alice, " in texts(
        body["value"]
    )
    [record] = ResponseRecord.objects.filter(clarification=card.clar)
    assert record.channel == "teams"
    assert record.answer_index is None
    assert record.interval == (JUN_2026, JUL_2026)
    assert (record.answer_custom or {})["sourceText"] == data["sourceText"]
    card.clar.refresh_from_db()
    assert card.clar.state == State.ANSWERED
    version = current_version(card.clar)
    assert (version.valid_from, version.valid_to) == (JUN_2026, JUL_2026)


def test_the_custom_answer_with_only_a_start_date(delivered, tap):
    card = delivered()
    resp, _ = tap(card, _custom_submission(card, validFrom="2026-06-12", validTo="", sourceText=""))
    assert resp.json()["type"] == CARD_TYPE
    [record] = ResponseRecord.objects.filter(clarification=card.clar)
    assert record.interval == (JUN_2026, None)
    assert (record.answer_custom or {})["sourceText"] is None


@pytest.mark.parametrize(
    "inputs, error",
    [
        ({"validFrom": "2026-07-01", "validTo": "2026-06-12"}, "after the start date"),
        ({"validFrom": "2026-06-12", "validTo": "2026-06-12"}, "after the start date"),
        ({"validFrom": "12/06/2026"}, "2026-06-12"),
        ({"validFrom": "", "validTo": "2026-07-01"}, "start date"),
        ({"validFrom": "2026-06-12", "sourceText": "x" * 2001}, "2000"),
    ],
)
def test_an_invalid_custom_interval_rerenders_the_card_with_an_error(delivered, tap, inputs, error):
    card = delivered()
    before, snapshot = counts(), rows()
    resp, _ = tap(card, _custom_submission(card, **inputs))
    assert resp.status_code == 200
    body = resp.json()
    assert body["type"] == CARD_TYPE
    refreshed = body["value"]
    errors = [b["text"] for b in refreshed["body"] if b.get("color") == "Attention"]
    assert any(error in e for e in errors), errors
    # Still answerable: the same buttons and "Something else…".
    assert [a["data"] for a in actions_of(refreshed, "Action.Execute")] == [
        card.data(i) for i in range(3)
    ]
    assert custom_action(refreshed)[1]["data"] == custom_action(card.card)[1]["data"]
    assert counts() == before
    assert rows() == snapshot
    # A corrected submission then binds.
    resp, _ = tap(card, _custom_submission(card, validFrom="2026-06-12", validTo="2026-07-01"))
    assert "✓ Recorded as evidence" in texts(resp.json()["value"])


@pytest.mark.parametrize(
    "inputs",
    [{"validFrom": "12/06/2026"}, {"validFrom": "2026-07-01", "validTo": "2026-06-12"}],
)
def test_an_invalid_interval_re_render_is_for_the_recipient_only(delivered, tap, people, inputs):
    card = delivered()
    bob = people["bob"]
    PersonAlias.objects.create(tenant=bob.tenant, person=bob, kind="teamsUserId", value="29:1bob")
    before = counts()
    resp, _ = tap(
        card,
        _custom_submission(card, **inputs),
        user_id="29:1bob",
        aad_object_id=None,
        conversation_id="a:1bob-chat",
    )
    assert resp.status_code == 200
    assert resp.json()["type"] != CARD_TYPE
    assert SPAN_TEXT not in texts(resp.json())
    assert "MSA term" not in texts(resp.json())
    counts_now = counts()
    assert counts_now.pop("TeamsConversation") == before.pop("TeamsConversation") + 1
    assert counts_now == before


def test_the_refreshed_card_of_a_restricted_source_is_gated(delivered, tap):
    card = delivered(restriction="privileged")
    assert "MSA term" not in texts(card.card)
    resp, _ = tap(card, card.data(0))
    assert resp.status_code == 200
    refreshed = texts(resp.json())
    assert ResponseRecord.objects.filter(clarification=card.clar).count() == 1
    assert "✓ Recorded as evidence" in refreshed
    assert "MSA term" not in refreshed
    assert "Master services agreement" not in refreshed
    assert SPAN_TEXT not in refreshed


# --- the Action.Submit fallback ---------------------------------------------------------


def test_the_submit_fallback_binds_and_replies_in_the_conversation(
    delivered, teams_post, teams_stub
):
    card = delivered()
    [button] = [b for b in actions_of(card.card, "Action.Execute") if b["data"]["answerIndex"] == 2]
    activity = message_submit(
        teams_stub.service_url, button["fallback"]["data"], reply_to=card.activity_id
    )
    resp = teams_post(activity)
    assert resp.status_code == 200
    [record] = ResponseRecord.objects.filter(clarification=card.clar)
    assert (record.channel, record.answer_index) == ("teams", 2)
    assert record.message_ref == card.delivery.message_ref
    version = current_version(card.clar)
    assert (version.valid_from, version.valid_to) == (JUL_2026, None)
    # The outcome goes back as a reply in alice's conversation, with the cached token.
    reply = teams_stub.of("activities")[-1]
    assert reply is not card.post
    assert reply.conversation_id == ALICE_CONVERSATION
    assert reply.bearer == card.post.bearer
    assert "✓ Recorded as evidence: 1 Jul 2026 (countersignature), confirmed by Alice" in texts(
        reply.card
    )
    assert len(teams_stub.of("token")) == 1


def test_the_submit_fallback_custom_answer_binds(delivered, teams_post, teams_stub):
    card = delivered()
    _, submit = custom_action(card.card)
    value = {**submit["fallback"]["data"], "validFrom": "2026-06-12", "validTo": "2026-07-01"}
    assert teams_post(message_submit(teams_stub.service_url, value)).status_code == 200
    [record] = ResponseRecord.objects.filter(clarification=card.clar)
    assert record.interval == (JUN_2026, JUL_2026)
    assert "✓ Recorded as evidence" in texts(teams_stub.of("activities")[-1].card)


def test_the_submit_fallback_invalid_interval_replies_with_the_error(
    delivered, teams_post, teams_stub
):
    card = delivered()
    _, submit = custom_action(card.card)
    value = {**submit["fallback"]["data"], "validFrom": "2026-07-01", "validTo": "2026-06-12"}
    before = counts()
    assert teams_post(message_submit(teams_stub.service_url, value)).status_code == 200
    assert counts() == before
    assert "after the start date" in texts(teams_stub.of("activities")[-1].card)


# --- outbound ---------------------------------------------------------------------------


def _failed_attempt(clar: Clarification, attempts: int) -> AuditEvent:
    """The first attempt failed: the job was failed retryable with DELIVERY_FAILED (so it
    moved past that attempt), the delivery row is FAILED, and nothing was delivered."""
    job = Job.objects.get(kind=JOB_KIND, subject=str(clar.pk))
    assert job.attempts >= attempts + 1
    if job.status == JobStatus.PENDING and job.attempts == attempts + 1:
        assert job.last_error.startswith("DELIVERY_FAILED")
    [failed] = AuditEvent.objects.filter(
        clarification=clar, type="delivery_failed", detail__attempt=attempts
    )
    assert failed.detail["reason"] == "DELIVERY_FAILED"
    assert failed.detail["channel"] == "teams"
    [row] = Delivery.objects.filter(clarification=clar, kind="question", attempt=attempts)
    assert row.status == DeliveryStatus.FAILED
    assert not AuditEvent.objects.filter(clarification=clar, type="delivered").exists()
    return failed


def test_a_connector_500_is_retried_in_the_lease_then_the_job_fails_retryable(
    connected, teams_stub, submit, run_worker, job_fails
):
    teams_stub.fail("activities", status=500)
    clar = submit()
    attempts = Job.objects.get(kind=JOB_KIND, subject=str(clar.pk)).attempts
    run_worker()
    posts = teams_stub.of("activities")
    assert len(posts) == delivery.worker.SEND_RETRIES
    assert {p.conversation_id for p in posts} == {ALICE_CONVERSATION}
    assert len(teams_stub.of("token")) == 1  # cached across the retries
    reason, retryable, detail = job_fails[0]
    assert (reason, retryable) == ("DELIVERY_FAILED", True)
    assert "connector answered 500" in detail
    failed = _failed_attempt(clar, attempts)
    assert "500" in failed.detail["error"]


def test_a_token_endpoint_failure_is_retried_then_the_job_fails_retryable(
    connected, teams_stub, submit, run_worker, job_fails
):
    teams_stub.fail("token", status=500)
    clar = submit()
    attempts = Job.objects.get(kind=JOB_KIND, subject=str(clar.pk)).attempts
    run_worker()
    assert len(teams_stub.of("token")) == delivery.worker.SEND_RETRIES
    assert teams_stub.of("activities") == []
    reason, retryable, detail = job_fails[0]
    assert (reason, retryable) == ("DELIVERY_FAILED", True)
    assert "token endpoint answered 500" in detail
    failed = _failed_attempt(clar, attempts)
    assert "token endpoint" in failed.detail["error"]


def test_a_malformed_token_response_is_a_delivery_failure(
    connected, teams_stub, submit, run_worker, job_fails, monkeypatch
):
    original = teams_stub.handle

    def no_access_token(method: str, path: str, body: Any, headers: Any) -> tuple[int, dict]:
        if path == "/token":
            return 200, {"token_type": "Bearer", "expires_in": 3600}
        return original(method, path, body, headers)

    monkeypatch.setattr(teams_stub, "handle", no_access_token)
    clar = submit()
    attempts = Job.objects.get(kind=JOB_KIND, subject=str(clar.pk)).attempts
    run_worker()
    # A DeliveryError like any other failure, not a handler crash (WORKER_ERROR).
    reason, retryable, detail = job_fails[0]
    assert (reason, retryable) == ("DELIVERY_FAILED", True)
    assert "without an access token" in detail
    _failed_attempt(clar, attempts)
    assert teams_stub.of("activities") == []


def test_a_transient_connector_failure_recovers_within_the_lease(
    connected, teams_stub, submit, run_worker
):
    teams_stub.fail("activities", status=429, times=1)
    clar = submit()
    run_worker()
    assert len(teams_stub.of("activities")) == 2
    assert Delivery.objects.get(clarification=clar).status == DeliveryStatus.SENT


def test_a_rejected_token_is_refetched(connected, teams_stub, submit, run_worker):
    teams_stub.fail("activities", status=401, times=1)
    clar = submit()
    run_worker()
    first, second = teams_stub.of("activities")
    assert len(teams_stub.of("token")) == 2
    assert first.bearer != second.bearer == teams_stub.issued[-1]
    assert Delivery.objects.get(clarification=clar).status == DeliveryStatus.SENT


def test_a_permanent_connector_error_is_not_retried_within_the_lease(
    connected, teams_stub, submit, run_worker
):
    teams_stub.fail("activities", status=403)
    clar = submit()
    run_worker()
    assert len(teams_stub.of("activities")) == 1
    assert AuditEvent.objects.filter(clarification=clar, type="delivery_failed").count() == 1


def test_the_token_is_cached_across_sends(delivered, teams_stub):
    first = delivered()
    second = delivered(
        external_id="contracts/other.docx", title="Other agreement", name="Other term"
    )
    assert len(teams_stub.of("token")) == 1
    assert first.post.bearer == second.post.bearer == teams_stub.issued[0]


def test_a_restricted_source_crosses_as_a_teaser(delivered):
    card = delivered(restriction="privileged")
    content = texts(card.card)
    assert SPAN_TEXT not in content
    assert "MSA term" not in content
    assert "restricted document" in content
    assert actions_of(card.card, "Action.Execute") == []


def test_the_rendered_card_round_trips_as_json(delivered):
    card = delivered()
    rendered = question_card(build_card(card.clar, card.delivery.nonce, SPAN_TEXT))
    assert json.loads(json.dumps(rendered)) == card.card


def test_a_tap_reads_its_delivery_record_once(delivered, tap):
    """The record the action's nonce names is looked up once (for the per-tenant rate
    limit, then handed to the tap pipeline; issue 31 item 3)."""
    card = delivered()
    with CaptureQueriesContext(connection) as queries:
        resp, _ = tap(card, card.data(0))
    assert resp.status_code == 200, resp.content
    assert ResponseRecord.objects.filter(clarification=card.clar).count() == 1
    assert len(nonce_lookups(queries)) == 1
