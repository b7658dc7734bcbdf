"""Read access at answer time and losing it (issue 19 items 1 and 2).

1. Every card path (inbox, Slack, Teams: one pipeline, `delivery.actions`) re-checks the
   responder's read access with the one read rule when the answer is made: a responder
   who lost it (by a change nothing else heard of) gets the "moved on" reply, nothing is
   recorded, and the refusal is audited `answer_refused` / `NO_READ_PERMISSION`.
2. Losing read access revokes what was sent: a workspace load that drops a membership,
   an ACL change in the admin, a source resubmitted with a narrower ACL — each revokes
   the recipient's open card (its nonce), takes it out of the inbox, and moves the routing
   job waiting on them to the next candidate at once (`NO_READ_PERMISSION`, no escalation
   window burned).
"""

import copy
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from clarify.models import AuditEvent, ResponseRecord
from delivery.actions import DROPPED, MOVED, CardTap, card_tap_process
from delivery.cards import MOVED_ON
from delivery.identity import ChatIdentity
from delivery.inbox.views import open_cards
from delivery.models import Delivery, DeliveryStatus, NonceState
from graph.models import NodeVersion
from jobs.models import JobStatus
from tenancy.models import AliasKind, TenantGroup
from tenancy.services import workspace_load
from tests.conftest import WORKSPACE

from .conftest import build_submission, deliveries, events, job_of, run_worker

pytestmark = pytest.mark.django_db


def rows() -> dict[str, int]:
    return {m.__name__: m.objects.count() for m in (ResponseRecord, NodeVersion, Delivery)}


def identity(channel: str, person: Any) -> ChatIdentity:
    """The identity each channel's adapter hands the pipeline."""
    if channel == "slack":
        return ChatIdentity.of_aliases("slack:U0ALICE", (AliasKind.SLACK_USER_ID, "U0ALICE"))
    if channel == "teams":
        return ChatIdentity.of_aliases("teams:oid-alice", (AliasKind.AAD_OID, "oid-alice"))
    return ChatIdentity.of_person(person, "inbox")


def tap(delivery: Delivery, channel: str, person: Any) -> Any:
    return card_tap_process(
        CardTap(
            channel=channel,
            identity=identity(channel, person),
            clarification_id=str(delivery.clarification_id),
            nonce=delivery.nonce,
            answer_index=1,
            action_id=f"{channel}-tap-1",
        )
    )


def alice_card(submit, people) -> Delivery:
    clar = submit()
    run_worker()
    [card] = deliveries(clar)
    assert card.person_id == people["alice"].pk and card.nonce_state == NonceState.ACTIVE
    return card


@pytest.mark.parametrize("via", ["inbox", "slack", "teams"])
def test_a_card_answer_by_a_responder_who_lost_read_access_is_refused(submit, channel, people, via):
    alice = people["alice"]
    card = alice_card(submit, people)
    # She leaves legal by a path the read-access seam does not hear of: the card is open.
    legal = TenantGroup.objects.get(tenant=alice.tenant, name="legal").auth_group
    User.groups.through.objects.filter(user_id=alice.user_id, group_id=legal.pk).delete()
    before = rows()

    reply = tap(card, via, alice)

    assert (reply.status, reply.text, reply.reason) == (MOVED, MOVED_ON, "NO_READ_PERMISSION")
    # Nothing about it shown, the card not re-rendered (no passage again).
    assert (reply.clarification, reply.body, reply.delivery) == (None, None, None)
    assert rows() == before
    # The loss is heard now: her card is revoked and the job moves on to bob.
    card.refresh_from_db()
    assert card.nonce_state == NonceState.REVOKED
    assert job_of(card.clarification).last_error == "NO_READ_PERMISSION: read access ended"
    [refused] = events(card.clarification, "answer_refused")
    assert refused.detail == {
        "reason": "NO_READ_PERMISSION",
        "responder": str(alice.pk),
        "channel": via,
    }


def assert_revoked_and_moved_on(card: Delivery, people: dict[str, Any], channel: Any) -> None:
    """alice's card revoked, out of her inbox, the job moved on to bob at once."""
    card.refresh_from_db()
    assert (card.nonce_state, card.status) == (NonceState.REVOKED, DeliveryStatus.FAILED)
    assert open_cards(people["alice"]) == []
    [skipped] = events(card.clarification, "skipped")
    assert skipped.detail == {
        "attempt": 0,
        "candidate": str(people["alice"].pk),
        "reason": "NO_READ_PERMISSION",
        "revoked": True,
    }
    job = job_of(card.clarification)
    assert (job.status, job.attempts) == (JobStatus.PENDING, 1)
    assert job.last_error == "NO_READ_PERMISSION: read access ended"
    # Her tap on the revoked card records nothing.
    before = rows()
    assert tap(card, "inbox", people["alice"]).status == DROPPED
    assert rows() == before
    # The next pass asks bob (attempt 1) without any window having passed.
    assert run_worker() >= 1
    [delivered] = [d for d in deliveries(card.clarification) if d.attempt == 1]
    assert delivered.person_id == people["bob"].pk
    assert "window_expired" not in [e.type for e in events(card.clarification)]


def test_a_workspace_load_dropping_a_membership_revokes_the_card(submit, channel, people):
    card = alice_card(submit, people)
    data = copy.deepcopy(WORKSPACE)
    for entry in data["people"]:
        if entry["email"] == "alice@acme.test":
            entry["groups"] = []
    workspace_load(data=data)
    assert_revoked_and_moved_on(card, people, channel)


def test_an_acl_change_in_the_admin_revokes_the_card(submit, channel, people):
    card = alice_card(submit, people)
    source = card.clarification.source_version.source
    sam = Client()
    sam.force_login(people["sam"].user)
    url = f"/admin/graph/source/{source.pk}/change/"
    resp = sam.post(url, {"restriction": "", "acl_text": "group:legal, email:bob@acme.test"})
    assert resp.status_code == 302
    # Still legal's: nobody lost access, nothing revoked.
    card.refresh_from_db()
    assert card.nonce_state == NonceState.ACTIVE
    resp = sam.post(url, {"restriction": "", "acl_text": "email:bob@acme.test"})
    assert resp.status_code == 302
    source.refresh_from_db()
    assert source.acl == ["email:bob@acme.test"]
    [changed, _] = AuditEvent.objects.filter(type="source_acl_changed").order_by("-id")
    assert changed.detail["after"] == ["email:bob@acme.test"]
    assert_revoked_and_moved_on(card, people, channel)


def test_an_invalid_acl_in_the_admin_changes_nothing(submit, channel, people):
    card = alice_card(submit, people)
    source = card.clarification.source_version.source
    sam = Client()
    sam.force_login(people["sam"].user)
    url = f"/admin/graph/source/{source.pk}/change/"
    resp = sam.post(url, {"restriction": "", "acl_text": "legal team"})
    assert resp.status_code == 200 and b"Not a principal" in resp.content
    source.refresh_from_db()
    assert source.acl == ["group:legal"]
    card.refresh_from_db()
    assert card.nonce_state == NonceState.ACTIVE
    assert not AuditEvent.objects.filter(type="source_acl_changed").exists()


def test_a_resubmission_with_a_narrower_acl_revokes_the_card(
    submit, channel, people, ingest_client
):
    card = alice_card(submit, people)
    # The same document again, now readable only by bob (the default external id).
    narrower = build_submission(acl=["email:bob@acme.test"])
    resp = ingest_client.post("/v1/submissions", narrower, format="json")
    assert resp.status_code == 201, resp.content
    assert_revoked_and_moved_on(card, people, channel)
