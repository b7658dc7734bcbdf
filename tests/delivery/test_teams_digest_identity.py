# ruff: noqa: F811 — fixtures imported from test_teams are used as parameters
"""Teams beyond the single card (issue 8), through the real signed-invoke path against the
local Bot Framework stub: digests (every item a full card, capped, and a tap re-rendering
the whole digest because Teams replaces the message with the invoke response), the
steward escalation, tenant-scoped identity (the same Teams user in two workspaces),
unmapped senders audited in the card's tenant, and the per-tenant rate limit."""

import json
import time
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from django.utils import timezone

from clarify.models import AuditEvent, Clarification, ResponseRecord, State
from clarify.stewardship import clarification_reask
from delivery.cards import Card, CardButton
from delivery.digests import digests_flush
from delivery.models import ChatTurn, Delivery, DeliveryStatus, NonceState, TeamsConversation
from delivery.teams.adaptive import MAX_DIGEST_CARDS, digest_card
from tenancy.models import PersonAlias

from .conftest import JUL_2026, JUN_2026, SPAN_TEXT, submit_with
from .conftest_ask import MSA_QUESTION
from .conftest_teams import (
    ALICE_CONVERSATION,
    ALICE_TEAMS_ID,
    MESSAGES,
    TEAMS_TENANT,
    conversation_update,
    invoke_action,
    message_submit,
)
from .test_teams import CARD_TYPE, connected, counts, rows, run_worker  # noqa: F401

MOVED_ON = "This clarification has moved on."


def containers(card: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in card["body"] if b["type"] == "Container"]


def item_actions(item: dict[str, Any]) -> list[dict[str, Any]]:
    return [a for b in item["items"] if b["type"] == "ActionSet" for a in b["actions"]]


def item_text(item: dict[str, Any]) -> str:
    return json.dumps(item, ensure_ascii=False)


def cid_of(item: dict[str, Any]) -> str:
    return str(item["id"]).removeprefix("clarify:")


def all_ids(value: Any) -> list[str]:
    """Every element id in a card, show cards included."""
    out: list[str] = []
    if isinstance(value, dict):
        if "id" in value and value.get("type", "").startswith("Input."):
            out.append(value["id"])
        for item in value.values():
            out += all_ids(item)
    elif isinstance(value, list):
        for item in value:
            out += all_ids(item)
    return out


@pytest.fixture
def digest(connected, teams_stub, submit, run_worker, clarify_settings):
    """`digest(n)` → n clarifications queued for alice and flushed as one Teams digest."""

    def make(n: int = 3) -> SimpleNamespace:
        clarify_settings(DIGEST_THRESHOLD=0)
        clars = [
            submit(external_id=f"contracts/d{i}.docx", title=f"Agreement {i}", name=f"Term {i}")
            for i in range(n)
        ]
        run_worker()
        assert teams_stub.of("activities") == []
        queued = Delivery.objects.filter(status=DeliveryStatus.QUEUED_DIGEST)
        assert queued.count() == n
        assert digests_flush(now=timezone.now() + timedelta(hours=2)) == 1
        [post] = teams_stub.of("activities")
        rows_ = {str(d.clarification_id): d for d in Delivery.objects.filter(kind="question")}
        refs = {d.message_ref for d in rows_.values()}
        assert len(refs) == 1
        activity_id = refs.pop().removeprefix(f"teams:{ALICE_CONVERSATION}:")
        return SimpleNamespace(
            clars=clars,
            post=post,
            card=post.card,
            deliveries=[rows_[str(c.pk)] for c in clars],
            activity_id=activity_id,
        )

    return make


@pytest.fixture
def tap_digest(teams_post, teams_stub):
    def do(d: SimpleNamespace, data: dict[str, Any], **kwargs: Any) -> Any:
        return teams_post(
            invoke_action(teams_stub.service_url, data, reply_to=d.activity_id, **kwargs)
        )

    return do


# --- digests ----------------------------------------------------------------------------


def test_every_digest_item_is_a_full_card(digest) -> None:
    d = digest(3)
    card = d.card
    assert (card["type"], card["version"]) == ("AdaptiveCard", "1.5")
    assert card["body"][0]["text"] == "3 questions are waiting for you"
    items = containers(card)
    assert [cid_of(i) for i in items] == [str(c.pk) for c in d.clars]
    for i, (item, delivery) in enumerate(zip(items, d.deliveries, strict=True)):
        text = item_text(item)
        assert f"Term {i}" in text
        assert SPAN_TEXT in text  # the excerpt, as on a single card
        assert f"https://example.test/contracts/d{i}.docx" in text  # the document link
        actions = item_actions(item)
        buttons = [a for a in actions if a["type"] == "Action.Execute"]
        assert [b["data"]["answerIndex"] for b in buttons] == [0, 1, 2]
        assert {b["data"]["nonce"] for b in buttons} == {delivery.nonce}
        assert all(b["fallback"]["type"] == "Action.Submit" for b in buttons)
        [show] = [a for a in actions if a["type"] == "Action.ShowCard"]
        assert show["title"] == "Something else…"
        cid = str(delivery.clarification_id)
        assert [x["id"] for x in show["card"]["body"]] == [
            f"validFrom:{cid}",
            f"validTo:{cid}",
            f"sourceText:{cid}",
        ]
        [submit] = show["card"]["actions"]
        assert submit["data"] == {
            "kind": "clarify_answer",
            "clarificationId": cid,
            "nonce": delivery.nonce,
            "custom": True,
        }
    ids = all_ids(card)
    assert len(ids) == len(set(ids)) == 9  # input ids are unique within the card


def _card(i: int) -> Card:
    return Card(
        clarification_id=f"c{i}",
        nonce=f"n{i}",
        question=f"Question {i}",
        buttons=[CardButton(0, "A"), CardButton(1, "B")],
        document_title=f"Doc {i}",
        document_url=f"https://example.test/{i}",
    )


def test_a_digest_lists_each_question_once_and_at_most_eight(settings) -> None:
    many = [_card(i) for i in range(11)]
    card = digest_card([*many, many[0], many[3]])
    items = containers(card)
    assert len(items) == MAX_DIGEST_CARDS == 8
    assert [cid_of(i) for i in items] == [f"c{i}" for i in range(8)]
    assert card["body"][0]["text"] == "11 questions are waiting for you"
    trailer = card["body"][-1]
    assert trailer["text"] == (
        f"3 more are waiting in your [Telha inbox]({settings.PUBLIC_BASE_URL}/inbox/)."
    )
    # Within Teams' message size, with every item's inputs: well under 28 KB.
    assert len(json.dumps(card).encode()) < 28_000
    assert len(containers(digest_card(many[:8]))) == 8
    assert "more are waiting" not in json.dumps(digest_card(many[:8]))


def test_a_tap_in_a_digest_returns_the_whole_digest(digest, tap_digest) -> None:
    d = digest(3)
    first, second, third = d.deliveries
    resp = tap_digest(d, {**_data(first), "answerIndex": 0})
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["type"] == CARD_TYPE
    items = containers(body["value"])
    # Teams replaces the whole message: every question is still there.
    assert [cid_of(i) for i in items] == [str(c.pk) for c in d.clars]
    answered, *others = items
    assert "✓ Recorded as evidence: 1 Oct 2026 (next quarter), confirmed by Alice" in item_text(
        answered
    )
    assert item_actions(answered) == []
    for item, delivery in zip(others, (second, third), strict=True):
        buttons = [a for a in item_actions(item) if a["type"] == "Action.Execute"]
        assert {b["data"]["nonce"] for b in buttons} == {delivery.nonce}
        assert "Recorded" not in item_text(item)
    [record] = ResponseRecord.objects.all()
    assert record.clarification_id == first.clarification_id
    assert record.message_ref == first.message_ref
    # A tap on the second item: the first is now closed ("moved on"), the third still open.
    resp = tap_digest(d, {**_data(second), "answerIndex": 2})
    first_item, second_item, third_item = containers(resp.json()["value"])
    assert MOVED_ON in item_text(first_item) and item_actions(first_item) == []
    assert "✓ Recorded as evidence: 1 Jul 2026 (countersignature)" in item_text(second_item)
    assert {a["data"]["nonce"] for a in item_actions(third_item) if "data" in a} == {third.nonce}
    assert ResponseRecord.objects.count() == 2


def test_a_digest_item_revoked_by_a_reask_comes_back_moved_on(digest, tap_digest) -> None:
    """A question re-asked after the digest was sent: its nonce in this digest no longer
    answers (a tap would be dropped), so a refresh shows it "moved on", without buttons,
    while its clarification is still open."""
    d = digest(3)
    first, second, third = d.deliveries
    clar = Clarification.objects.get(pk=third.clarification_id)
    people = {p.email.split("@")[0]: p for p in clar.tenant.people.all()}
    clarification_reask(clarification=clar, ranking=[people["bob"]], actor=people["sam"])
    third.refresh_from_db()
    assert third.nonce_state == NonceState.REVOKED
    resp = tap_digest(d, {**_data(first), "answerIndex": 0})
    answered, still_open, revoked = containers(resp.json()["value"])
    assert "✓ Recorded as evidence" in item_text(answered)
    assert {a["data"]["nonce"] for a in item_actions(still_open) if "data" in a} == {second.nonce}
    assert MOVED_ON in item_text(revoked) and item_actions(revoked) == []
    assert Clarification.objects.get(pk=third.clarification_id).state == State.OPEN


def _data(delivery: Delivery) -> dict[str, Any]:
    return {
        "kind": "clarify_answer",
        "clarificationId": str(delivery.clarification_id),
        "nonce": delivery.nonce,
    }


def test_a_custom_answer_in_a_digest_reads_its_own_inputs(digest, tap_digest) -> None:
    d = digest(2)
    first, second = d.deliveries
    cid = str(second.clarification_id)
    other = str(first.clarification_id)
    custom = {**_data(second), "custom": True}
    # An invalid interval: the whole digest comes back with the error on that item only,
    # and nothing is written.
    before, snapshot = counts(), rows()
    resp = tap_digest(
        d, {**custom, f"validFrom:{cid}": "2026-07-01", f"validTo:{cid}": "2026-06-12"}
    )
    items = containers(resp.json()["value"])
    assert [cid_of(i) for i in items] == [other, cid]
    assert "after the start date" in item_text(items[1])
    assert "after the start date" not in item_text(items[0])
    assert len(item_actions(items[0])) == len(item_actions(items[1])) == 4
    assert counts() == before and rows() == snapshot
    # Another item's inputs (Teams gathers only the submitting card's, but even if it
    # sent them) never answer this one.
    resp = tap_digest(d, {**custom, f"validFrom:{other}": "2026-06-12", "x": 1})
    assert "start date" in item_text(containers(resp.json()["value"])[1])
    assert counts() == before
    # The item's own inputs bind.
    resp = tap_digest(
        d,
        {
            **custom,
            f"validFrom:{cid}": "2026-06-12",
            f"validTo:{cid}": "2026-07-01",
            f"sourceText:{cid}": "Clause 2",
        },
    )
    items = containers(resp.json()["value"])
    assert "✓ Recorded as evidence: 12 June 2026 → 1 July 2026" in item_text(items[1])
    [record] = ResponseRecord.objects.all()
    assert record.clarification_id == second.clarification_id
    assert record.interval == (JUN_2026, JUL_2026)
    assert (record.answer_custom or {})["sourceText"] == "Clause 2"


def test_the_submit_fallback_in_a_digest_replies_with_the_whole_digest(
    digest, teams_post, teams_stub
) -> None:
    d = digest(2)
    first, _ = d.deliveries
    activity = message_submit(
        teams_stub.service_url, {**_data(first), "answerIndex": 1}, reply_to=d.activity_id
    )
    assert teams_post(activity).status_code == 200
    reply = teams_stub.of("activities")[-1]
    assert reply.conversation_id == ALICE_CONVERSATION
    items = containers(reply.card)
    assert [cid_of(i) for i in items] == [str(c.pk) for c in d.clars]
    assert "✓ Recorded as evidence: 12 June (signature)" in item_text(items[0])
    assert item_actions(items[1])


def test_a_restricted_item_of_a_digest_stays_a_teaser_when_refreshed(
    connected,
    teams_stub,
    submit,
    run_worker,
    clarify_settings,
    tap_digest,
) -> None:
    clarify_settings(DIGEST_THRESHOLD=0)
    open_ = submit(external_id="contracts/open.docx", name="Open term")
    secret = submit(
        external_id="legal/memo.docx",
        title="Privileged memo",
        name="Secret term",
        restriction="privileged",
    )
    run_worker()
    assert digests_flush(now=timezone.now() + timedelta(hours=2)) == 1
    [post] = teams_stub.of("activities")
    assert "Secret term" not in json.dumps(post.card) and "Privileged memo" not in json.dumps(
        post.card
    )
    delivery = Delivery.objects.get(clarification=open_)
    d = SimpleNamespace(activity_id=delivery.message_ref.rsplit(":", 1)[1])
    resp = tap_digest(d, {**_data(delivery), "answerIndex": 0})
    refreshed = json.dumps(resp.json(), ensure_ascii=False)
    assert "✓ Recorded as evidence" in refreshed
    for leaked in ("Secret term", "Privileged memo", SPAN_TEXT + "x"):
        assert leaked not in refreshed
    assert [cid_of(i) for i in containers(resp.json()["value"])] == [str(open_.pk), str(secret.pk)]
    assert "restricted document" in item_text(containers(resp.json()["value"])[1])


# --- the steward escalation -------------------------------------------------------------


def test_the_steward_escalation_goes_through_teams_redacted(
    teams_post,
    teams_stub,
    teams_alice,
    people,
    submit,
    run_worker,
) -> None:
    sam = people["sam"]
    PersonAlias.objects.create(tenant=sam.tenant, person=sam, kind="teamsUserId", value="29:1sam")
    update = conversation_update(
        teams_stub.service_url, user_id="29:1sam", aad_object_id=None, conversation_id="a:1sam"
    )
    assert teams_post(update).status_code == 200
    # Nobody in the ranking may read a finance-only document: the steward is asked.
    clar = submit(acl=["group:finance"])
    run_worker()
    [post] = teams_stub.of("activities")
    assert post.conversation_id == "a:1sam"
    card = post.card
    text = json.dumps(card, ensure_ascii=False)
    assert (card["type"], card["version"]) == ("AdaptiveCard", "1.5")
    assert "NO_READ_PERMISSION" in text
    assert "https://example.test/contracts/msa.docx" in text
    assert SPAN_TEXT not in text and "MSA term" not in text
    [review] = card["actions"]
    assert review["type"] == "Action.OpenUrl"
    assert review["url"].endswith(f"/admin/clarify/clarification/{clar.pk}/change/")
    assert "Action.Execute" not in text and "Action.Submit" not in text
    row = Delivery.objects.get(clarification=clar, kind="escalation")
    assert (row.person_id, row.channel, row.status) == (sam.pk, "teams", DeliveryStatus.SENT)


# --- tenant-scoped identity -------------------------------------------------------------


@pytest.fixture
def gina_too(globex, teams_alice):
    """Gina of globex holds the same Teams user id as alice of acme (one person, two
    workspaces served by the same bot)."""
    gina = globex.people["gina"]
    PersonAlias.objects.create(
        tenant=globex.tenant, person=gina, kind="teamsUserId", value=ALICE_TEAMS_ID
    )
    return gina


def test_the_same_teams_user_in_two_tenants_binds_in_each(
    gina_too,
    globex,
    teams_post,
    teams_stub,
    teams_alice,
    submit,
    run_worker,
) -> None:
    assert teams_post(conversation_update(teams_stub.service_url)).status_code == 200
    refs = {c.person_id: c for c in TeamsConversation.objects.all()}
    assert set(refs) == {teams_alice.pk, gina_too.pk}
    assert refs[gina_too.pk].tenant_id == globex.tenant.pk
    assert refs[teams_alice.pk].tenant_id == teams_alice.tenant_id

    acme = submit()
    glob = submit_with(
        globex.ingest_client,
        **{"email_domain": "globex.test", "links": [("AUTHORED_BY", "gina")]},
    )
    run_worker()
    acme_row = Delivery.objects.get(clarification=acme, kind="question")
    glob_row = Delivery.objects.get(clarification=glob, kind="question")
    assert (acme_row.person_id, glob_row.person_id) == (teams_alice.pk, gina_too.pk)
    assert acme_row.channel == glob_row.channel == "teams"
    for row, index in ((acme_row, 0), (glob_row, 2)):
        resp = teams_post(
            invoke_action(
                teams_stub.service_url,
                {**_data(row), "answerIndex": index},
                reply_to=row.message_ref.rsplit(":", 1)[1],
            )
        )
        assert resp.json()["type"] == CARD_TYPE, resp.content
    by_clar = {r.clarification_id: r for r in ResponseRecord.objects.all()}
    assert by_clar[acme.pk].responder == teams_alice.pk
    assert by_clar[glob.pk].responder == gina_too.pk
    assert by_clar[glob.pk].answer_index == 2
    for clar in (acme, glob):
        clar.refresh_from_db()
        assert clar.state == State.ANSWERED
    assert not AuditEvent.objects.filter(type="card_action_dropped").exists()


def test_a_sender_mapped_only_in_another_tenant_is_unmapped_for_this_card(
    globex,
    teams_post,
    teams_stub,
    teams_alice,
    submit,
    run_worker,
) -> None:
    assert teams_post(conversation_update(teams_stub.service_url)).status_code == 200
    clar = submit()
    run_worker()
    row = Delivery.objects.get(clarification=clar, kind="question")
    gina = globex.people["gina"]
    PersonAlias.objects.create(
        tenant=globex.tenant, person=gina, kind="teamsUserId", value="29:1gina"
    )
    before, snapshot = counts(), rows()
    resp = teams_post(
        invoke_action(
            teams_stub.service_url,
            {**_data(row), "answerIndex": 0},
            user_id="29:1gina",
            aad_object_id=None,
            conversation_id="a:1gina",
        )
    )
    assert "not linked" in resp.json()["value"]
    [event] = AuditEvent.objects.filter(type="card_action_dropped")
    assert event.tenant_id == clar.tenant_id and event.clarification_id == clar.pk
    assert event.detail == {
        "reason": "UNMAPPED_IDENTITY",
        "channel": "teams",
        "identity": f"teams:{TEAMS_TENANT}:29:1gina",
    }
    after = counts()
    assert after.pop("AuditEvent") == before.pop("AuditEvent") + 1
    assert after == before and rows() == snapshot
    assert not TeamsConversation.objects.filter(person=gina).exists()


def _question(service_url: str, text: str) -> dict[str, Any]:
    activity = message_submit(service_url, {})
    del activity["value"]
    activity["text"] = text
    return activity


def test_a_question_from_a_user_of_two_workspaces_is_not_answered(
    ask_on, world, gina_too, teams_post, teams_stub
) -> None:
    resp = teams_post(_question(teams_stub.service_url, MSA_QUESTION))
    assert resp.status_code == 200
    [reply] = teams_stub.of("activities")
    assert "several Telha workspaces" in reply.body["text"]
    assert "MSA" not in json.dumps(reply.body)
    assert ChatTurn.objects.count() == 0


def test_the_stored_references_tell_which_workspace_a_question_is_for(
    ask_on, world, gina_too, globex, teams_post, teams_stub, teams_alice
) -> None:
    """Globex's people talk to the bot from another Azure AD tenant: a question from
    acme's Azure AD tenant is alice's."""
    TeamsConversation.objects.create(
        tenant=globex.tenant,
        person=globex.people["gus"],
        conversation_id="a:1gus",
        service_url=teams_stub.service_url,
        teams_tenant_id="globex-aad-tenant",
        user_id="29:1gus",
    )
    TeamsConversation.objects.create(
        tenant=teams_alice.tenant,
        person=teams_alice,
        conversation_id=ALICE_CONVERSATION,
        service_url=teams_stub.service_url,
        teams_tenant_id=TEAMS_TENANT,
        user_id=ALICE_TEAMS_ID,
    )
    teams_post(_question(teams_stub.service_url, MSA_QUESTION))
    [reply] = teams_stub.of("activities")
    assert "MSA term" in reply.card["fallbackText"]
    asked, _ = ChatTurn.objects.order_by("created_at", "id")
    assert asked.person_id == teams_alice.pk


# --- the per-tenant rate limit ----------------------------------------------------------


@pytest.fixture
def frozen_window(monkeypatch):
    """Pin the rate-limit clock inside one minute window (no flake at a minute boundary)."""
    import delivery.hooks.ratelimit as ratelimit

    pinned = (int(time.time()) // 60) * 60 + 5
    monkeypatch.setattr(ratelimit, "time", SimpleNamespace(time=lambda: pinned))
    return pinned


@pytest.fixture
def post_from(client, teams_settings, teams_token):
    """`post_from(activity, ip)`: a signed activity from a given client address."""

    def post(activity: dict[str, Any], ip: str) -> Any:
        return client.post(
            MESSAGES,
            json.dumps(activity),
            content_type="application/json",
            headers={"Authorization": f"Bearer {teams_token()}"},
            REMOTE_ADDR=ip,
        )

    return post


def test_per_tenant_rate_limit_on_verified_teams_actions(
    connected,
    teams_stub,
    submit,
    run_worker,
    post_from,
    people,
    frozen_window,
    settings,
) -> None:
    clar = submit()
    run_worker()
    row = Delivery.objects.get(clarification=clar, kind="question")
    bob = people["bob"]
    PersonAlias.objects.create(tenant=bob.tenant, person=bob, kind="teamsUserId", value="29:1bob")
    settings.HOOK_RATE_LIMIT_PER_MINUTE = 2
    data = {**_data(row), "answerIndex": 0}
    statuses = [
        post_from(
            invoke_action(teams_stub.service_url, data, user_id="29:1bob", aad_object_id=None),
            f"10.0.0.{i}",
        ).status_code
        for i in range(2)
    ]
    before, snapshot = counts(), rows()
    # A fresh IP, alice herself: the tenant is over its budget.
    resp = post_from(invoke_action(teams_stub.service_url, data), "10.0.0.9")
    statuses.append(resp.status_code)
    assert statuses == [200, 200, 429]
    assert resp["Retry-After"] == "55"
    assert resp.json()["code"] == "RATE_LIMITED"
    assert counts() == before and rows() == snapshot
    assert not ResponseRecord.objects.exists()
    assert Clarification.objects.get(pk=clar.pk).state != State.ANSWERED


def test_tenant_less_activities_count_against_the_azure_ad_tenant(
    teams_stub, teams_alice, post_from, frozen_window, settings
) -> None:
    settings.HOOK_RATE_LIMIT_PER_MINUTE = 2
    update = conversation_update(teams_stub.service_url)
    assert [post_from(update, f"10.1.0.{i}").status_code for i in range(2)] == [200, 200]
    TeamsConversation.objects.all().delete()
    resp = post_from(update, "10.1.0.9")
    assert resp.status_code == 429 and resp.json()["code"] == "RATE_LIMITED"
    assert int(resp["Retry-After"]) >= 1
    assert not TeamsConversation.objects.exists()  # refused before anything was stored
    other = conversation_update(teams_stub.service_url)
    other["channelData"] = {"tenant": {"id": "another-aad-tenant"}}
    assert post_from(other, "10.1.0.10").status_code == 200
