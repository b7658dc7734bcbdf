"""The Slack channel end to end, against a local stub of the Slack Web API and really
signed inbound requests (CONTRACT §3.5; architecture "Chat delivery needs no internet to
test")."""

import dataclasses
import itertools
import json
import time
import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from slack_sdk.models.blocks import DatePickerElement, InputBlock, SectionBlock

import delivery.slack.hooks as slack_hooks
import delivery.worker
from clarify.models import AuditEvent, Clarification, ResponseRecord, State
from clarify.stewardship import clarification_reask
from delivery.cards import Escalation, build_card, build_escalation
from delivery.channels import DeliveryError, configured_channels
from delivery.models import CardAction, Delivery, DeliveryStatus, NonceState
from delivery.restriction import excerpt_for_chat
from delivery.slack.blocks import (
    BlockKitError,
    card_blocks,
    card_message,
    digest_message,
    escalation_message,
    message_blocks,
    validate_message_blocks,
)
from delivery.slack.channel import SlackChannel, delivery_error
from graph.models import Node, NodeVersion
from jobs import tasks
from jobs.models import Job, JobStatus
from jobs.tasks import work
from tenancy.models import PersonAlias
from tenancy.services import workspace_load
from tests.factories import JAN_2027, OCT_2026, submission_payload

from .conftest import assert_unavailable, nonce_lookups, snapshot_rows, written_counts
from .conftest_slack import (
    BOT_TOKEN,
    EVENTS,
    INTERACTIVITY,
    SIGNING_SECRET,
    block_actions,
    event_callback,
    form_body,
    view_submission,
)

JOB_KIND = "clarify:temporal"
JUN_12_2026 = "2026-06-12T00:00:00Z"
_action_ts = itertools.count(1)
COUNTED: tuple[Any, ...] = (ResponseRecord, CardAction, AuditEvent, NodeVersion, Delivery, Job)
ANSWER_TABLES: tuple[Any, ...] = (ResponseRecord, NodeVersion, Clarification, Job, Delivery)


# --- helpers ----------------------------------------------------------------------------


def submit(ingest_client: Any, n: int = 0, **overrides: Any) -> Clarification:
    """The CONTRACT §3.1 example (alice authored it; ACL group:legal) as document `n`."""
    payload = submission_payload(**overrides)
    if n:
        payload["source"]["externalId"] = f"contracts/msa-{n}.docx"
        payload["source"]["title"] = f"Master services agreement {n}"
        payload["source"]["uri"] = f"https://sharepoint.example/contracts/msa-{n}.docx"
        payload["nodes"][0]["key"] = f"msa-term-{n}"
    resp = ingest_client.post("/v1/submissions", payload, format="json")
    assert resp.status_code == 201, resp.content
    [clar] = resp.json()["clarifications"]
    return Clarification.objects.get(pk=clar["id"])


def counts() -> dict[str, int]:
    return {m.__name__: m.objects.count() for m in COUNTED}


def answer_rows() -> dict[str, list[dict[str, Any]]]:
    """The rows an answer writes: a refused action must leave every one of them alone."""
    return {m.__name__: list(m.objects.order_by("pk").values()) for m in ANSWER_TABLES}


def dropped(clar: Clarification) -> list[dict[str, Any]]:
    return [
        e.detail for e in AuditEvent.objects.filter(clarification=clar, type="card_action_dropped")
    ]


def actions_blocks(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for b in blocks if b["type"] == "actions"]


def all_text(blocks: list[dict[str, Any]]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


@pytest.fixture
def run_worker(monkeypatch):
    """`run_worker()` → the real delivery worker loop, `work("clarify:temporal")`.

    The loop starts each round with `close_old_connections()`, as a django-q2 worker
    must; inside a test's transaction that would close the test's own PostgreSQL
    connection (SQLite keeps it), so here, and only here, it is a no-op."""
    monkeypatch.setattr(tasks, "close_old_connections", lambda: None)
    return lambda: work(JOB_KIND, max_seconds=5)


@pytest.fixture
def delivered(slack_settings, slack_stub, ingest_client, people, run_worker):
    """`delivered(n=0)` → a clarification submitted through the ingest API and delivered
    to alice by the real worker through the Slack stub."""

    def make(n: int = 0, **overrides: Any) -> SimpleNamespace:
        before = len(slack_stub.of("chat.postMessage"))
        clar = submit(ingest_client, n, **overrides)
        assert run_worker() >= 1
        d = Delivery.objects.get(clarification=clar, kind="question")
        posts = slack_stub.of("chat.postMessage")[before:]
        assert len(posts) == 1, [p.body for p in posts]
        channel, ts = d.message_ref.split(":")[1:]
        return SimpleNamespace(
            clar=clar,
            delivery=d,
            post=posts[0],
            blocks=posts[0].blocks,
            channel=channel,
            ts=ts,
            value=lambda i: json.dumps(
                {
                    "kind": "clarify_answer",
                    "clarificationId": str(clar.pk),
                    "answerIndex": i,
                    "nonce": d.nonce,
                }
            ),
        )

    return make


@pytest.fixture
def tap(slack_post):
    """`tap(card, index=0, user=…, value=…, action_ts=…)` → a signed block_actions POST."""

    def do(
        card: SimpleNamespace,
        index: int = 0,
        *,
        user: str = "U0ALICE",
        value: str | None = None,
        action_ts: str | None = None,
        using: Any = None,
        **extra: Any,
    ) -> Any:
        payload = block_actions(
            action_id=f"clarify_answer_{index}",
            value=value if value is not None else card.value(index),
            user=user,
            channel=card.channel,
            ts=card.ts,
            blocks=card.blocks,
            action_ts=action_ts or f"1700000100.{next(_action_ts):06d}",
        )
        return slack_post(INTERACTIVITY, form_body(payload), using=using, **extra)

    return do


# --- outbound: the card -----------------------------------------------------------------


def test_slack_is_configured_only_with_token_and_secret(settings):
    settings.CLARIFY_CHANNELS = ["slack", "inbox"]
    settings.SLACK_BOT_TOKEN, settings.SLACK_SIGNING_SECRET = "", "s"
    assert [c.name for c in configured_channels()] == ["inbox"]
    settings.SLACK_BOT_TOKEN, settings.SLACK_SIGNING_SECRET = "xoxb-1", ""
    assert [c.name for c in configured_channels()] == ["inbox"]
    settings.SLACK_SIGNING_SECRET = "s"
    assert [c.name for c in configured_channels()] == ["slack", "inbox"]


def test_address_is_the_verified_slack_alias(people):
    channel = SlackChannel()
    assert channel.address(people["alice"], {"slackUserId": "U0ALICE"}) == "U0ALICE"
    assert channel.address(people["olga"], {"email": "olga@acme.test"}) is None


# --- the shared cache unavailable -------------------------------------------------------


def test_with_redis_down_slack_hooks_are_503_and_nothing_is_processed(
    delivered, tap, slack_post, slack_stub, cache_down, person_client
):
    """A Redis that does not answer: taps and events are 503 SERVICE_UNAVAILABLE (Slack
    retries them), nothing is recorded or sent; the API, which needs no cache, answers."""
    from django.core.cache import cache

    card = delivered()
    before, snapshot = written_counts(), snapshot_rows()
    posts = len(slack_stub.calls)
    started = time.monotonic()
    assert_unavailable(tap(card, 1))
    event = json.dumps(event_callback("EvDOWN1", event_type="message"))
    assert_unavailable(slack_post(EVENTS, event, content_type="application/json"))
    assert time.monotonic() - started < 10  # no long retries per request
    assert written_counts() == before
    assert snapshot_rows() == snapshot
    assert len(slack_stub.calls) == posts
    assert cache.__class__.__name__ != "LocMemCache"  # the Redis cache was really used
    alice = person_client("alice")
    assert alice.get(f"/v1/clarifications/{card.clar.pk}").status_code == 200
    resp = alice.post(
        f"/v1/clarifications/{card.clar.pk}/answer", {"answerIndex": 1}, format="json"
    )
    assert resp.status_code == 200, resp.content
    assert resp.json()["outcome"] == "bound"


@pytest.mark.parametrize("failing", [":tenant:", "slack:event:"])
def test_a_cache_failure_inside_bolt_is_503_not_500(
    delivered, tap, slack_post, slack_stub, cache_failing, failing
):
    """The per-IP limit answers; the per-tenant count or the event dedupe (both inside
    slack-bolt's middleware, which answers an exception with an empty 500) does not."""
    card = delivered()
    before = written_counts()
    cache_failing(failing)
    if failing == ":tenant:":
        resp = tap(card, 1)
    else:
        event = json.dumps(event_callback("EvHALF1", event_type="message"))
        resp = slack_post(EVENTS, event, content_type="application/json")
    assert_unavailable(resp)
    assert written_counts() == before


def test_signed_block_actions_binds_an_answer_end_to_end(delivered, tap, slack_stub):
    card = delivered()
    post = card.post
    # The card went to alice's Slack user id, as a DM, with the bot token.
    assert post.body["channel"] == "U0ALICE"
    assert post.headers["authorization"] == f"Bearer {BOT_TOKEN}"
    assert card.delivery.channel == "slack"
    assert card.delivery.status == DeliveryStatus.SENT
    assert card.delivery.message_ref == f"slack:D0ALICE:{card.ts}"
    assert "MSA effective period" in post.body["text"]
    validate_message_blocks(card.blocks)
    # One actions block: a button per candidate whose value is exactly CONTRACT §3.5.
    [actions] = actions_blocks(card.blocks)
    buttons = actions["elements"]
    assert [b["action_id"] for b in buttons] == [
        "clarify_answer_0",
        "clarify_answer_1",
        "clarify_something_else",
    ]
    assert [b["text"]["text"] for b in buttons] == [
        "1 Oct 2026 (next quarter)",
        "1 Jan 2027",
        "Something else…",
    ]
    for i in (0, 1):
        assert buttons[i]["value"] == json.dumps(
            {
                "kind": "clarify_answer",
                "clarificationId": str(card.clar.pk),
                "answerIndex": i,
                "nonce": card.delivery.nonce,
            }
        )
        assert list(json.loads(buttons[i]["value"])) == [
            "kind",
            "clarificationId",
            "answerIndex",
            "nonce",
        ]
    assert json.loads(buttons[2]["value"]) == {
        "clarificationId": str(card.clar.pk),
        "nonce": card.delivery.nonce,
    }
    # The excerpt and the document link are in the context block.
    assert "takes effect at the start of next quarter" in all_text(card.blocks)
    assert "https://sharepoint.example/contracts/msa.docx" in all_text(card.blocks)

    resp = tap(card, 0)
    assert resp.status_code == 200, resp.content

    [record] = ResponseRecord.objects.filter(clarification=card.clar)
    assert record.channel == "slack"
    assert record.answer_index == 0
    assert record.message_ref == card.delivery.message_ref
    assert record.responder == card.delivery.person_id
    card.clar.refresh_from_db()
    assert card.clar.state == State.ANSWERED
    current = NodeVersion.objects.get(node=Node.objects.get(pk=card.clar.target_id), tx_to=None)
    assert (current.valid_from, current.valid_to) == (OCT_2026, None)
    assert CardAction.objects.filter(channel="slack").count() == 1

    [update] = slack_stub.of("chat.update")
    assert (update.body["channel"], update.body["ts"]) == ("D0ALICE", card.ts)
    assert update.body["text"].startswith(
        "✓ Recorded as evidence: 1 Oct 2026 (next quarter), confirmed by Alice, "
    )
    assert "✓ Recorded as evidence" in all_text(update.blocks)
    assert actions_blocks(update.blocks) == []  # answered: the buttons are gone
    validate_message_blocks(update.blocks)
    # No auth.test or anything else: authorize= supplies the token.
    assert {c.method for c in slack_stub.calls} == {"chat.postMessage", "chat.update"}


def test_a_tap_that_leaves_the_clarification_open_keeps_the_buttons(
    delivered, tap, slack_stub, people
):
    # Alice answers as a viewer: an attestation; the clarification stays open.
    people["alice"].role = "viewer"
    people["alice"].save()
    card = delivered()
    assert tap(card, 1).status_code == 200
    card.clar.refresh_from_db()
    assert card.clar.state == State.ATTESTED
    [update] = slack_stub.of("chat.update")
    assert "Your answer is recorded as an attestation" in update.body["text"]
    [actions] = actions_blocks(update.blocks)
    assert actions["elements"][0]["value"] == card.value(0)


# --- inbound verification ---------------------------------------------------------------


@pytest.mark.parametrize("path", [INTERACTIVITY, EVENTS])
@pytest.mark.parametrize(
    "how", ["bad_signature", "wrong_secret", "stale_timestamp", "future_timestamp", "missing"]
)
def test_bad_signature_or_stale_timestamp_is_401_and_writes_nothing(
    delivered, slack_post, slack_stub, path, how, client
):
    card = delivered()
    payload = block_actions(
        action_id="clarify_answer_0", value=card.value(0), channel=card.channel, ts=card.ts
    )
    body = form_body(payload)
    before, rows = counts(), answer_rows()
    now = int(time.time())
    if how == "bad_signature":
        resp = slack_post(path, body, headers={"X-Slack-Signature": "v0=" + "0" * 64})
    elif how == "wrong_secret":
        resp = slack_post(path, body, secret="not-the-secret")
    elif how == "stale_timestamp":
        resp = slack_post(path, body, timestamp=now - 301)
    elif how == "future_timestamp":
        resp = slack_post(path, body, timestamp=now + 360)  # +301 flaked on slow runs
    else:
        resp = client.post(path, body, content_type="application/x-www-form-urlencoded")
    assert resp.status_code == 401
    assert resp.json()["code"] == "UNAUTHENTICATED"
    assert counts() == before
    assert answer_rows() == rows
    assert slack_stub.of("chat.update") == []


def test_a_body_altered_after_signing_is_401(delivered, client, slack_stub):
    from .conftest_slack import signed_headers

    card = delivered()
    body = form_body(block_actions(action_id="clarify_answer_0", value=card.value(0)))
    headers = signed_headers(body)
    tampered = body.replace("clarify_answer_0", "clarify_answer_1")
    before = counts()
    resp = client.post(
        INTERACTIVITY, tampered, content_type="application/x-www-form-urlencoded", headers=headers
    )
    assert resp.status_code == 401
    assert counts() == before


def test_a_just_fresh_timestamp_is_accepted(delivered, tap):
    card = delivered()
    resp = tap(card, 0, timestamp=int(time.time()) - 290)
    assert resp.status_code == 200
    assert ResponseRecord.objects.filter(clarification=card.clar).count() == 1


def test_hooks_refuse_everything_when_slack_is_not_configured(client, settings, db):
    settings.SLACK_SIGNING_SECRET = ""
    body = json.dumps({"type": "url_verification", "challenge": "x"})
    resp = client.post(EVENTS, body, content_type="application/json")
    assert resp.status_code == 404
    assert resp.json()["code"] == "NOT_CONFIGURED"


# --- replays, recipients, identities ---------------------------------------------------


def test_nonce_replay_of_the_same_payload_is_dropped_and_audited(delivered, slack_post, slack_stub):
    card = delivered()
    payload = block_actions(
        action_id="clarify_answer_0", value=card.value(0), channel=card.channel, ts=card.ts
    )
    assert slack_post(INTERACTIVITY, form_body(payload)).status_code == 200
    rows = {k: v for k, v in answer_rows().items() if k != "Delivery"}
    assert slack_post(INTERACTIVITY, form_body(payload)).status_code == 200

    assert ResponseRecord.objects.filter(clarification=card.clar).count() == 1
    assert [d["reason"] for d in dropped(card.clar)] == ["REPLAYED_ACTION"]
    assert {k: v for k, v in answer_rows().items() if k != "Delivery"} == rows
    assert len(slack_stub.of("chat.update")) == 1  # the replay does not touch the card


def test_cross_clarification_replay_is_dropped_and_audited(delivered, tap, slack_stub):
    a = delivered(1)
    b = delivered(2)
    forged = json.dumps(
        {
            "kind": "clarify_answer",
            "clarificationId": str(b.clar.pk),
            "answerIndex": 0,
            "nonce": a.delivery.nonce,
        }
    )
    rows, events_before = answer_rows(), AuditEvent.objects.count()
    assert tap(b, 0, value=forged).status_code == 200

    assert answer_rows() == rows
    assert ResponseRecord.objects.count() == 0
    [detail] = dropped(a.clar)
    assert detail["reason"] == "NONCE_CLARIFICATION_MISMATCH"
    assert detail["claimedClarification"] == str(b.clar.pk)
    assert AuditEvent.objects.count() == events_before + 1
    assert slack_stub.of("chat.update") == []


def test_a_stale_or_unknown_nonce_is_dropped(delivered, tap, slack_stub):
    card = delivered()
    forged = json.dumps(
        {
            "kind": "clarify_answer",
            "clarificationId": str(card.clar.pk),
            "answerIndex": 0,
            "nonce": "not-a-real-nonce",
        }
    )
    rows = answer_rows()
    events_before = AuditEvent.objects.count()
    assert tap(card, 0, value=forged).status_code == 200
    assert answer_rows() == rows
    assert slack_stub.of("chat.update") == []
    # No delivery, so no clarification to audit against: a tenant event, the tenant being
    # the one the (unambiguous) Slack identity maps to.
    [event] = AuditEvent.objects.order_by("id")[events_before:]
    assert (event.type, event.tenant_id, event.clarification_id) == (
        "card_action_dropped",
        card.clar.tenant_id,
        None,
    )
    assert event.detail["reason"] == "UNKNOWN_NONCE"
    assert event.detail["channel"] == "slack"
    assert event.detail["claimedClarification"] == str(card.clar.pk)
    assert "U0ALICE" in event.detail["identity"]


def test_an_unknown_nonce_from_an_unmapped_slack_user_is_logged(delivered, tap, slack_stub, caplog):
    card = delivered()
    forged = json.dumps(
        {"kind": "clarify_answer", "clarificationId": str(card.clar.pk), "answerIndex": 0}
    )
    rows, events_before = answer_rows(), AuditEvent.objects.count()
    with caplog.at_level("WARNING", logger="telha.audit"):
        assert tap(card, 0, value=forged, user="U0STRANGER").status_code == 200
    assert answer_rows() == rows
    assert AuditEvent.objects.count() == events_before  # no tenant known: not a tenant event
    [record] = [r for r in caplog.records if r.name == "telha.audit"]
    assert "card_action_dropped reason=UNKNOWN_NONCE channel=slack" in record.getMessage()
    assert "U0STRANGER" in record.getMessage()


def test_a_tap_by_another_slack_user_is_dropped_not_recipient(delivered, tap, slack_stub):
    card = delivered()
    rows = answer_rows()
    assert tap(card, 0, user="U0BOB").status_code == 200  # bob is mapped, not the recipient
    assert answer_rows() == rows
    [detail] = dropped(card.clar)
    assert detail["reason"] == "NOT_RECIPIENT"
    assert "U0BOB" in detail["identity"]
    assert slack_stub.of("chat.update") == []


def test_an_unmapped_slack_user_submits_nothing_and_is_audited(delivered, tap, slack_stub):
    card = delivered()
    rows, actions = answer_rows(), CardAction.objects.count()
    assert tap(card, 0, user="U0STRANGER").status_code == 200
    assert answer_rows() == rows
    assert CardAction.objects.count() == actions  # nothing reached the answer path
    [detail] = dropped(card.clar)
    assert detail["reason"] == "UNMAPPED_IDENTITY"
    assert "U0STRANGER" in detail["identity"]
    assert slack_stub.of("chat.update") == []


def test_a_slack_user_of_another_tenant_is_unmapped_here(delivered, tap, workspace):
    # Gina holds a Slack id in globex; the card's delivery belongs to acme.
    workspace_load(
        data={
            "tenant": "globex",
            "name": "Globex",
            "people": [
                {
                    "name": "Gina Globex",
                    "email": "gina@globex.test",
                    "role": "editor",
                    "aliases": {"slackUserId": "U0GINA"},
                }
            ],
        }
    )
    assert PersonAlias.objects.filter(value="U0GINA").exists()
    card = delivered()
    rows = answer_rows()
    assert tap(card, 0, user="U0GINA").status_code == 200
    assert answer_rows() == rows
    assert [d["reason"] for d in dropped(card.clar)] == ["UNMAPPED_IDENTITY"]


def test_a_late_tap_on_a_resolved_card_gets_moved_on(delivered, tap, slack_stub):
    card = delivered()
    assert tap(card, 0).status_code == 200
    assert tap(card, 0).status_code == 200  # the same answer again: an idempotent replay
    assert ResponseRecord.objects.filter(clarification=card.clar).count() == 1
    assert tap(card, 1).status_code == 200  # a different answer after binding: a conflict
    records = ResponseRecord.objects.filter(clarification=card.clar).order_by("seq")
    assert [r.binding_status for r in records] == ["bound", "conflicting"]
    _, again, late = slack_stub.of("chat.update")
    assert again.body["text"].startswith("This clarification has moved on. ✓ Recorded")
    assert late.body["text"].startswith("This clarification has moved on. Your different answer")
    assert actions_blocks(again.blocks) == actions_blocks(late.blocks) == []


def test_a_tap_by_a_recipient_who_lost_read_access_gets_moved_on_and_records_nothing(
    delivered, tap, slack_stub, people
):
    # issue 19 item 1: alice leaves legal past the read-access seam; her Slack tap on the
    # open card is answered like one on a missing clarification.
    card = delivered()
    alice = people["alice"]
    User.groups.through.objects.filter(user_id=alice.user_id).delete()
    before = {m.__name__: m.objects.count() for m in (ResponseRecord, NodeVersion)}
    resp = tap(card, 0)
    assert resp.status_code == 200
    assert {m.__name__: m.objects.count() for m in (ResponseRecord, NodeVersion)} == before
    assert slack_stub.of("chat.update") == []  # the card (its passage) is not re-rendered
    [refused] = AuditEvent.objects.filter(clarification=card.clar, type="answer_refused")
    assert refused.detail["reason"] == "NO_READ_PERMISSION"
    assert CardAction.objects.get(delivery=card.delivery).outcome == "NO_READ_PERMISSION"
    card.delivery.refresh_from_db()
    assert card.delivery.nonce_state == NonceState.REVOKED


# --- "Something else…" -----------------------------------------------------------------


def test_something_else_opens_a_modal_and_its_submission_binds_a_custom_interval(
    delivered, slack_post, slack_stub
):
    card = delivered()
    something_else = json.dumps(
        {"clarificationId": str(card.clar.pk), "nonce": card.delivery.nonce}
    )
    payload = block_actions(
        action_id="clarify_something_else",
        value=something_else,
        channel=card.channel,
        ts=card.ts,
        trigger_id="9999.trigger",
    )
    assert slack_post(INTERACTIVITY, form_body(payload)).status_code == 200
    [opened] = slack_stub.of("views.open")
    assert opened.body["trigger_id"] == "9999.trigger"
    view = opened.view
    assert view["type"] == "modal"
    assert view["callback_id"] == "clarify_custom"
    metadata = json.loads(view["private_metadata"])
    assert metadata == {
        "clarificationId": str(card.clar.pk),
        "nonce": card.delivery.nonce,
        "messageRef": card.delivery.message_ref,
    }
    inputs = {b["block_id"]: b for b in view["blocks"] if b["type"] == "input"}
    assert inputs["valid_from"]["element"]["type"] == "datepicker"
    assert inputs["valid_from"]["optional"] is False
    assert inputs["valid_to"]["element"]["type"] == "datepicker"
    assert inputs["valid_to"]["optional"] is True
    assert inputs["source_text"]["element"]["type"] == "plain_text_input"
    assert ResponseRecord.objects.count() == 0  # opening the modal answers nothing

    submission = view_submission(
        metadata=metadata,
        valid_from="2026-06-12",
        valid_to="2027-06-12",
        source_text="Clause 14: effective on signature.",
    )
    resp = slack_post(INTERACTIVITY, form_body(submission))
    assert resp.status_code == 200
    assert resp.content in (b"", b"{}")  # a plain ack closes the modal

    [record] = ResponseRecord.objects.filter(clarification=card.clar)
    assert record.channel == "slack"
    assert record.answer_index is None
    assert (record.answer_custom or {})["sourceText"] == "Clause 14: effective on signature."
    card.clar.refresh_from_db()
    assert card.clar.state == State.ANSWERED
    current = NodeVersion.objects.get(node_id=card.clar.target_id, tx_to=None)
    from tests.clarify.conftest import us

    assert (current.valid_from, current.valid_to) == (us("2026-06-12"), us("2027-06-12"))
    [update] = slack_stub.of("chat.update")
    assert (update.body["channel"], update.body["ts"]) == ("D0ALICE", card.ts)
    assert update.body["text"].startswith("✓ Recorded as evidence: 12 June 2026")
    assert actions_blocks(update.blocks) == []


@pytest.mark.parametrize(
    ("valid_from", "valid_to", "block"),
    [
        ("2026-06-12", "2026-01-01", "valid_to"),  # from after to
        ("2026-06-12", "2026-06-12", "valid_to"),  # empty interval
        (None, "2026-06-12", "valid_from"),  # no start
        ("12/06/2026", None, "valid_from"),  # not a date
    ],
)
def test_an_invalid_interval_is_a_modal_error_and_writes_nothing(
    delivered, slack_post, slack_stub, valid_from, valid_to, block
):
    card = delivered()
    metadata = {
        "clarificationId": str(card.clar.pk),
        "nonce": card.delivery.nonce,
        "messageRef": card.delivery.message_ref,
    }
    before, rows = counts(), answer_rows()
    resp = slack_post(
        INTERACTIVITY,
        form_body(view_submission(metadata=metadata, valid_from=valid_from, valid_to=valid_to)),
    )
    assert resp.status_code == 200
    body = resp.json()
    assert body["response_action"] == "errors"
    assert set(body["errors"]) == {block}
    assert counts() == before
    assert answer_rows() == rows
    assert slack_stub.of("chat.update") == []


def test_a_modal_submission_with_a_foreign_nonce_is_refused_in_the_modal(
    delivered, slack_post, slack_stub
):
    a = delivered(1)
    b = delivered(2)
    metadata = {
        "clarificationId": str(b.clar.pk),
        "nonce": a.delivery.nonce,
        "messageRef": b.delivery.message_ref,
    }
    rows = answer_rows()
    resp = slack_post(
        INTERACTIVITY, form_body(view_submission(metadata=metadata, valid_from="2026-06-12"))
    )
    assert resp.json()["response_action"] == "errors"
    assert answer_rows() == rows
    assert [d["reason"] for d in dropped(a.clar)] == ["NONCE_CLARIFICATION_MISMATCH"]
    assert slack_stub.of("chat.update") == []


def test_something_else_by_an_unmapped_user_opens_nothing(delivered, slack_post, slack_stub):
    card = delivered()
    value = json.dumps({"clarificationId": str(card.clar.pk), "nonce": card.delivery.nonce})
    payload = block_actions(action_id="clarify_something_else", value=value, user="U0STRANGER")
    assert slack_post(INTERACTIVITY, form_body(payload)).status_code == 200
    assert slack_stub.of("views.open") == []
    assert [d["reason"] for d in dropped(card.clar)] == ["UNMAPPED_IDENTITY"]


# --- events -----------------------------------------------------------------------------


def test_url_verification_challenge(slack_post):
    body = json.dumps(
        {"token": "t", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9", "type": "url_verification"}
    )
    resp = slack_post(EVENTS, body, content_type="application/json")
    assert resp.status_code == 200
    assert resp.json() == {"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9"}


def test_mentions_and_messages_are_acked_and_write_nothing(slack_post, workspace):
    before = counts()
    for kind in ("app_mention", "message"):
        body = json.dumps(event_callback(f"Ev-{kind}", event_type=kind))
        resp = slack_post(EVENTS, body, content_type="application/json")
        assert resp.status_code == 200
    assert counts() == before


def test_retried_events_already_seen_are_acked_and_skipped(slack_post, monkeypatch, db):
    seen: list[str] = []

    def spy(ack: Any, body: dict[str, Any]) -> None:
        seen.append(body["event_id"])
        ack()

    monkeypatch.setattr(slack_hooks, "ack_only", spy)
    monkeypatch.setattr(slack_hooks, "_HANDLERS", {})  # so the app is built with the spy
    first = json.dumps(event_callback("Ev0001"))
    assert slack_post(EVENTS, first, content_type="application/json").status_code == 200
    retry = slack_post(
        EVENTS,
        first,
        content_type="application/json",
        headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"},
    )
    assert retry.status_code == 200
    other = json.dumps(event_callback("Ev0002"))
    assert slack_post(EVENTS, other, content_type="application/json").status_code == 200
    assert seen == ["Ev0001", "Ev0002"]


# --- rate limits, CSRF --------------------------------------------------------------------


@pytest.fixture
def frozen_window(monkeypatch):
    """Pin the rate-limit clock inside one minute window (no flake at a minute boundary)."""
    import delivery.hooks.ratelimit as ratelimit

    pinned = (int(time.time()) // 60) * 60 + 5
    monkeypatch.setattr(ratelimit, "time", SimpleNamespace(time=lambda: pinned))
    return pinned


def test_per_ip_rate_limit_answers_429_before_reading_the_request(
    slack_settings, client, frozen_window, db
):
    slack_settings.HOOK_RATE_LIMIT_PER_MINUTE = 2
    statuses = [
        client.post(EVENTS, "garbage", content_type="application/json").status_code
        for _ in range(3)
    ]
    assert statuses == [401, 401, 429]  # unsigned requests spend the IP's budget too
    resp = client.post(INTERACTIVITY, "garbage", content_type="application/json")
    assert resp.status_code == 429
    assert resp["Retry-After"] == "55"
    assert resp.json()["code"] == "RATE_LIMITED"
    assert resp.json()["detail"]
    other_ip = client.post(
        EVENTS, "garbage", content_type="application/json", REMOTE_ADDR="10.9.9.9"
    )
    assert other_ip.status_code == 401


def test_per_tenant_rate_limit_on_verified_taps(delivered, tap, frozen_window, slack_settings):
    card = delivered()
    slack_settings.HOOK_RATE_LIMIT_PER_MINUTE = 2
    statuses = []
    for i in range(2):
        statuses.append(tap(card, 0, user="U0BOB", REMOTE_ADDR=f"10.0.0.{i}").status_code)
    before = counts()
    resp = tap(card, 0, REMOTE_ADDR="10.0.0.9")  # a fresh IP; the tenant is over its budget
    statuses.append(resp.status_code)
    assert statuses == [200, 200, 429]
    assert int(resp["Retry-After"]) >= 1
    assert json.loads(resp.content)["code"] == "RATE_LIMITED"
    assert counts() == before
    assert ResponseRecord.objects.count() == 0


def test_every_hook_is_rate_limited_per_ip(slack_settings, client, frozen_window, db):
    slack_settings.HOOK_RATE_LIMIT_PER_MINUTE = 3
    paths = ["/hooks/slack/interactivity", "/hooks/slack/events", "/hooks/teams/messages"]
    statuses = [client.post(p, "{}", content_type="application/json").status_code for p in paths]
    assert statuses == [401, 401, 401]
    for path in paths:
        resp = client.post(path, "{}", content_type="application/json")
        assert resp.status_code == 429, path
        assert resp.json()["code"] == "RATE_LIMITED"


def test_rate_limit_window_passes(slack_settings, client, monkeypatch, db):
    import delivery.hooks.ratelimit as ratelimit

    slack_settings.HOOK_RATE_LIMIT_PER_MINUTE = 1
    now = [(int(time.time()) // 60) * 60 + 1.0]
    monkeypatch.setattr(ratelimit, "time", SimpleNamespace(time=lambda: now[0]))
    assert client.post(EVENTS, "x", content_type="application/json").status_code == 401
    assert client.post(EVENTS, "x", content_type="application/json").status_code == 429
    now[0] += 60
    assert client.post(EVENTS, "x", content_type="application/json").status_code == 401


def test_slack_hooks_work_without_a_csrf_token(delivered, tap, slack_post):
    csrf_client = Client(enforce_csrf_checks=True)
    card = delivered()
    resp = tap(card, 0, using=csrf_client)
    assert resp.status_code == 200
    assert ResponseRecord.objects.filter(clarification=card.clar, channel="slack").count() == 1
    challenge = json.dumps({"type": "url_verification", "challenge": "c-1", "token": "t"})
    resp = slack_post(EVENTS, challenge, content_type="application/json", using=csrf_client)
    assert resp.status_code == 200
    assert resp.json() == {"challenge": "c-1"}


def test_hooks_accept_only_post(slack_settings, client, db):
    assert client.get(INTERACTIVITY).status_code == 405
    assert client.get(EVENTS).status_code == 405


# --- the message guard, digests, escalation ----------------------------------------------


def test_input_blocks_are_refused_in_messages():
    input_block = InputBlock(
        label="Valid from", element=DatePickerElement(action_id="date"), block_id="valid_from"
    )
    with pytest.raises(BlockKitError, match="input blocks are for modals"):
        message_blocks([SectionBlock(text="hi"), input_block])
    with pytest.raises(BlockKitError, match="input"):
        validate_message_blocks([{"type": "input", "block_id": "x", "element": {}}])
    with pytest.raises(BlockKitError, match="not a message block"):
        validate_message_blocks([{"type": "modal"}])
    with pytest.raises(BlockKitError, match="duplicate block_id"):
        validate_message_blocks([{"type": "divider", "block_id": "a"}] * 2)
    # slack_sdk's own validation: a button's text is at most 75 characters.
    with pytest.raises(BlockKitError, match="text attribute cannot exceed 75 characters"):
        validate_message_blocks(
            [
                {
                    "type": "actions",
                    "elements": [
                        {
                            "type": "button",
                            "action_id": "a",
                            "text": {"type": "plain_text", "text": "x" * 76},
                            "value": "v",
                        }
                    ],
                }
            ]
        )
    validate_message_blocks([{"type": "section", "text": {"type": "mrkdwn", "text": "ok"}}])


def test_the_channel_never_sends_a_message_with_an_input_block(
    slack_settings, slack_stub, delivered, monkeypatch
):
    import delivery.slack.channel as slack_channel

    card = delivered()
    clar = Clarification.objects.get(pk=card.clar.pk)
    built = build_card(clar, card.delivery.nonce, excerpt_for_chat(clar))
    sneaky = InputBlock(label="x", element=DatePickerElement(action_id="date"), block_id="x")
    monkeypatch.setattr(slack_channel, "card_message", lambda c: message_blocks([sneaky]))
    posts = len(slack_stub.of("chat.postMessage"))
    with pytest.raises(DeliveryError) as err:
        SlackChannel().send_card(address="U0ALICE", card=built)
    assert err.value.retryable is False
    assert len(slack_stub.of("chat.postMessage")) == posts


def test_every_message_the_channel_renders_passes_the_guard(delivered):
    a, b = delivered(1), delivered(2)
    cards = [
        build_card(Clarification.objects.get(pk=x.clar.pk), x.delivery.nonce, "excerpt")
        for x in (a, b)
    ]
    many = [
        dataclasses.replace(cards[i % 2], clarification_id=str(uuid.uuid4())) for i in range(12)
    ]
    for blocks in (card_message(cards[0]), digest_message(cards), digest_message(many)):
        validate_message_blocks(blocks)
        assert not any(b["type"] == "input" for b in blocks)
    # A digest lists each clarification once; past eight cards it points to the inbox.
    assert len(actions_blocks(digest_message(cards * 3))) == 2
    big = digest_message(many)
    assert len(actions_blocks(big)) == 8
    assert "4 more are waiting in your inbox." in all_text(big)
    # Even with every card showing an outcome and its buttons, a message stays valid.
    answered = [
        blk for c in many[:8] for blk in message_blocks(card_blocks(c, outcome="✓ Recorded"))
    ]
    validate_message_blocks(
        [{"type": "header", "text": {"type": "plain_text", "text": "h"}}, *answered[:49]]
    )


def test_a_digest_lists_cards_each_with_its_own_buttons_and_a_tap_updates_only_its_card(
    delivered, slack_stub, slack_post
):
    a, b = delivered(1), delivered(2)
    cards = [
        build_card(Clarification.objects.get(pk=x.clar.pk), x.delivery.nonce, "") for x in (a, b)
    ]
    ref = SlackChannel().send_digest(address="U0ALICE", cards=cards)
    Delivery.objects.filter(pk__in=[a.delivery.pk, b.delivery.pk]).update(message_ref=ref)
    post = slack_stub.of("chat.postMessage")[-1]
    assert post.body["channel"] == "U0ALICE"
    blocks = post.blocks
    acts = actions_blocks(blocks)
    assert len(acts) == 2
    assert [json.loads(act["elements"][0]["value"])["clarificationId"] for act in acts] == [
        str(a.clar.pk),
        str(b.clar.pk),
    ]
    assert len({blk.get("block_id") for blk in blocks if blk.get("block_id")}) == len(
        [blk for blk in blocks if blk.get("block_id")]
    )

    channel, ts = ref.split(":")[1:]
    payload = block_actions(
        action_id="clarify_answer_1", value=a.value(1), channel=channel, ts=ts, blocks=blocks
    )
    assert slack_post(INTERACTIVITY, form_body(payload)).status_code == 200
    update = slack_stub.of("chat.update")[-1]
    remaining = actions_blocks(update.blocks)
    assert [json.loads(act["elements"][0]["value"])["clarificationId"] for act in remaining] == [
        str(b.clar.pk)
    ]
    assert "✓ Recorded as evidence: 1 Jan 2027" in all_text(update.blocks)
    record = ResponseRecord.objects.get(clarification=a.clar)
    assert record.message_ref == ref
    assert (record.interval_from, record.interval_to) == (JAN_2027, None)


@pytest.mark.parametrize("payload_has_message", [True, False])
def test_a_digest_card_revoked_by_a_reask_loses_its_buttons_when_the_message_is_updated(
    delivered, slack_stub, slack_post, people, payload_has_message
):
    """A question re-asked after the digest was sent: its nonce there no longer answers (a
    tap would be dropped), so the next update of the message shows it "moved on", without
    buttons, whether the other cards come from the payload's copy of the message or are
    re-rendered from their records."""
    a, b, c = delivered(1), delivered(2), delivered(3)
    cards = [
        build_card(Clarification.objects.get(pk=x.clar.pk), x.delivery.nonce, "") for x in (a, b, c)
    ]
    ref = SlackChannel().send_digest(address="U0ALICE", cards=cards)
    Delivery.objects.filter(pk__in=[x.delivery.pk for x in (a, b, c)]).update(message_ref=ref)
    blocks = slack_stub.of("chat.postMessage")[-1].blocks
    clarification_reask(clarification=c.clar, ranking=[people["bob"]], actor=people["sam"])
    assert Delivery.objects.get(pk=c.delivery.pk).nonce_state == NonceState.REVOKED

    channel, ts = ref.split(":")[1:]
    payload = block_actions(
        action_id="clarify_answer_1",
        value=a.value(1),
        channel=channel,
        ts=ts,
        blocks=blocks if payload_has_message else None,
    )
    assert slack_post(INTERACTIVITY, form_body(payload)).status_code == 200
    update = slack_stub.of("chat.update")[-1]
    remaining = actions_blocks(update.blocks)
    assert [json.loads(act["elements"][0]["value"])["clarificationId"] for act in remaining] == [
        str(b.clar.pk)
    ]
    revoked_card = [blk for blk in update.blocks if str(c.clar.pk) in str(blk.get("block_id", ""))]
    assert revoked_card and "This clarification has moved on." in all_text(revoked_card)
    assert "✓ Recorded as evidence: 1 Jan 2027" in all_text(update.blocks)
    assert Clarification.objects.get(pk=c.clar.pk).state == State.OPEN


def test_the_steward_escalation_is_redacted_and_has_no_buttons(
    slack_settings, slack_stub, ingest_client, people, workspace, run_worker
):
    # Alice cannot read a finance-only document: nobody passes, the steward is asked.
    PersonAlias.objects.create(
        tenant=workspace, person=people["sam"], kind="slackUserId", value="U0SAM"
    )
    clar = submit(ingest_client, 7, source_acl=["group:finance"])
    run_worker()
    [post] = slack_stub.of("chat.postMessage")
    assert post.body["channel"] == "U0SAM"
    text = all_text(post.blocks) + post.body["text"]
    assert "takes effect at the start of next quarter" not in text
    assert "Signed by Alice" not in text
    assert "NO_READ_PERMISSION" in text
    assert "https://sharepoint.example/contracts/msa-7.docx" in text
    assert actions_blocks(post.blocks) == []
    validate_message_blocks(post.blocks)
    esc = build_escalation(clar, [{"reason": "NO_READ_PERMISSION"}])
    assert actions_blocks(escalation_message(esc)) == []


# --- delivery failures ------------------------------------------------------------------


def test_a_500_from_slack_is_retried_in_the_lease_then_skipped_at_once(
    slack_settings, slack_stub, ingest_client, people, monkeypatch, run_worker
):
    monkeypatch.setattr(delivery.worker, "RETRY_PAUSE_SECONDS", 0)
    slack_stub.fail("chat.postMessage", status=500)
    clar = submit(ingest_client)  # ranking: alice only
    job = Job.objects.get(kind=JOB_KIND, subject=str(clar.pk))
    attempts = job.attempts
    run_worker()

    # alice: every in-lease try fails; the job is failed with DELIVERY_FAILED, a skip code:
    # nobody else is left, so the steward escalation goes out at once (sam, who has no
    # Slack alias, on the inbox) — no escalation window is burnt.
    assert len(slack_stub.of("chat.postMessage")) == delivery.worker.SEND_RETRIES
    job.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.LEASED, attempts + 1)
    assert job.last_error.startswith("DELIVERY_FAILED")
    [failed] = AuditEvent.objects.filter(clarification=clar, type="delivery_failed")
    assert failed.detail["reason"] == "DELIVERY_FAILED"
    assert failed.detail["channel"] == "slack"
    assert failed.detail["candidate"] == str(people["alice"].pk)
    [escalated] = AuditEvent.objects.filter(clarification=clar, type="escalated")
    assert escalated.detail["stewards"] == [str(people["sam"].pk)]
    assert [r["reason"] for r in escalated.detail["skipReasons"]] == ["DELIVERY_FAILED"]
    rows = Delivery.objects.filter(clarification=clar).order_by("attempt")
    assert [(d.person_id, d.kind, d.channel, d.status) for d in rows] == [
        (people["alice"].pk, "question", "slack", DeliveryStatus.FAILED),
        (people["sam"].pk, "escalation", "inbox", DeliveryStatus.SENT),
    ]
    assert not AuditEvent.objects.filter(clarification=clar, type="delivered").exists()


def test_a_permanent_slack_error_is_not_retried_within_the_lease(
    slack_settings, slack_stub, ingest_client, people, monkeypatch, run_worker
):
    monkeypatch.setattr(delivery.worker, "RETRY_PAUSE_SECONDS", 0)
    slack_stub.fail("chat.postMessage", status=200, error="channel_not_found")
    clar = submit(ingest_client)
    run_worker()
    assert len(slack_stub.of("chat.postMessage")) == 1
    assert AuditEvent.objects.filter(clarification=clar, type="delivery_failed").count() == 1


def test_a_transient_failure_recovers_within_the_lease(
    slack_settings, slack_stub, ingest_client, people, monkeypatch, run_worker
):
    monkeypatch.setattr(delivery.worker, "RETRY_PAUSE_SECONDS", 0)
    slack_stub.fail("chat.postMessage", status=429, error="ratelimited", times=1)
    clar = submit(ingest_client)
    run_worker()
    assert len(slack_stub.of("chat.postMessage")) == 2
    assert Delivery.objects.get(clarification=clar).status == DeliveryStatus.SENT


def test_slack_errors_map_to_retryable_or_not(slack_settings, slack_stub, settings):
    channel = SlackChannel()
    cases = [
        (500, "internal_error", True),
        (429, "ratelimited", True),
        (503, "service_unavailable", True),
        (200, "invalid_auth", False),
        (200, "channel_not_found", False),
        (200, "not_authed", False),
    ]
    escalation = Escalation(
        clarification_id="c",
        text="t",
        document_title="d",
        document_url="https://x.test",
        review_url="https://x.test/r",
    )
    for status, error, retryable in cases:
        slack_stub.fail("chat.postMessage", status=status, error=error, times=1)
        with pytest.raises(DeliveryError) as err:
            channel.send_escalation(address="U0X", escalation=escalation)
        assert err.value.retryable is retryable, (status, error)
    assert len(slack_stub.of("chat.postMessage")) == len(cases)
    settings.SLACK_API_URL = "http://127.0.0.1:9/api/"  # nothing listens there
    with pytest.raises(DeliveryError) as err:
        channel.send_escalation(address="U0X", escalation=escalation)
    assert err.value.retryable is True
    assert delivery_error(ValueError("x")).retryable is False


def test_signing_secret_is_real_hmac(slack_settings):
    from .conftest_slack import signed_headers

    headers = signed_headers("body", timestamp=1531420618)
    import hashlib
    import hmac

    expected = hmac.new(SIGNING_SECRET.encode(), b"v0:1531420618:body", hashlib.sha256).hexdigest()
    assert headers["X-Slack-Signature"] == f"v0={expected}"


def test_a_tap_reads_its_delivery_record_once(delivered, tap):
    """The record the nonce names is looked up once a tap: the per-tenant rate limit's
    lookup is the one the tap pipeline checks (issue 31 item 3)."""
    card = delivered()
    with CaptureQueriesContext(connection) as queries:
        resp = tap(card, 0)
    assert resp.status_code == 200, resp.content
    assert ResponseRecord.objects.filter(clarification=card.clar).count() == 1
    assert len(nonce_lookups(queries)) == 1
