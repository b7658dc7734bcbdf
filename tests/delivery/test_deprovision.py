"""Deprovisioning by the tenant's identity provider (CONTRACT §3.7: SCIM `active: false`
or DELETE): the person's keys stop authenticating for good, their sessions end, they are
never asked again (delivery skips them with RESPONDER_NOT_AUTHORISED, ranking leaves them
out), their open cards are withdrawn (a tap says the clarification moved on) and a routing
job waiting on them moves on to the next candidate at once. What they answered stays as
evidence. Reactivation restores sign-in; the old keys stay revoked."""

import pytest
from django.test import Client
from django.utils import timezone

from clarify.models import AuditEvent, ResponseRecord, State
from delivery.actions import ANSWERED, card_tap_process
from delivery.cards import MOVED_ON
from delivery.models import DeliveryStatus, NonceState
from identity.services import person_deprovision
from jobs.models import JobStatus
from tenancy.models import Person
from tenancy.services import api_key_create
from tests.conftest import client_for
from tests.identity.conftest import Scim

from .conftest import PASSWORD, deliveries, events, job_of, run_worker, written_counts
from .test_taps import _slack_identity, _tap

pytestmark = pytest.mark.django_db


@pytest.fixture
def scim(workspace) -> Scim:
    _, secret = api_key_create(tenant=workspace, audience="scim")
    return Scim(secret)


def set_active(scim: Scim, person: Person, active: bool) -> None:
    response = scim.patch(
        f"Users/{person.pk}", {"op": "replace", "path": "active", "value": active}
    )
    assert response.status_code == 200, response.content
    assert response.json()["active"] is active


def test_a_deprovisioned_persons_card_is_withdrawn_and_the_job_moves_on(
    scim, submit, channel, people
):
    clar = submit()
    run_worker()
    [card] = deliveries(clar, kind="question")
    assert card.person == people["alice"]
    assert (job_of(clar).status, job_of(clar).attempts) == (JobStatus.LEASED, 0)

    set_active(scim, people["alice"], False)
    card.refresh_from_db()
    assert (card.status, card.nonce_state) == (DeliveryStatus.FAILED, NonceState.REVOKED)
    [skipped] = events(clar, "skipped")
    assert skipped.detail == {
        "attempt": 0,
        "candidate": str(people["alice"].pk),
        "reason": "RESPONDER_NOT_AUTHORISED",
    }
    job = job_of(clar)
    assert (job.status, job.attempts) == (JobStatus.PENDING, 1)
    assert job.run_after <= timezone.now()
    assert job.last_error == "RESPONDER_NOT_AUTHORISED: deprovisioned"

    assert run_worker() >= 1  # the next candidate, bob, is asked now
    assert [a for a, c in channel.cards if c.clarification_id == str(clar.pk)][-1] == (
        f"fake:{people['bob'].pk}"
    )
    # alice's tap on the withdrawn card: "moved on", nothing answered.
    responses = ResponseRecord.objects.count()
    reply = card_tap_process(_tap(card, _slack_identity("U0ALICE"), action_id="cb-gone"))
    assert (reply.text, reply.reason) == (MOVED_ON, "RESPONDER_NOT_AUTHORISED")
    assert ResponseRecord.objects.count() == responses
    clar.refresh_from_db()
    assert clar.state == State.OPEN


def test_a_deprovisioned_candidate_is_skipped_when_their_turn_comes(submit, channel, people):
    clar = submit()  # ranked alice, bob; not asked yet
    person_deprovision(person=people["alice"])
    run_worker()
    [skipped] = events(clar, "skipped")
    assert skipped.detail["candidate"] == str(people["alice"].pk)
    assert skipped.detail["reason"] == "RESPONDER_NOT_AUTHORISED"
    [card] = deliveries(clar, kind="question")
    assert card.person == people["bob"]
    # A clarification opened now does not rank her at all.
    later = submit(external_id="contracts/later.docx")
    assert job_of(later).payload["ranking"] == [str(people["bob"].pk)]


def test_keys_and_sessions_end_and_reactivation_restores_sign_in_but_not_keys(scim, with_passwords):
    alice = with_passwords["alice"]
    _, secret = api_key_create(tenant=alice.tenant, person=alice)
    key = client_for(secret)
    assert key.get("/v1/clarifications").status_code == 200
    browser = Client()
    assert browser.login(username="alice@acme.test", password=PASSWORD)
    assert browser.get("/inbox/").status_code == 200

    set_active(scim, alice, False)
    assert key.get("/v1/clarifications").status_code == 401
    assert key.get("/v1/clarifications").json()["code"] == "UNAUTHENTICATED"
    assert browser.get("/inbox/").status_code == 302  # the session ended
    assert not Client().login(username="alice@acme.test", password=PASSWORD)
    [gone] = AuditEvent.objects.filter(type="person_deprovisioned")
    assert gone.detail == {"person": str(alice.pk), "via": "scim", "keys": 1, "cards": 0}

    set_active(scim, alice, True)
    alice.refresh_from_db()
    assert alice.deactivated_at is None and alice.user.is_active
    assert key.get("/v1/clarifications").status_code == 401  # old keys stay revoked
    assert browser.get("/inbox/").status_code == 302  # the old session does not come back
    again = Client()
    again.force_login(alice.user)  # signing in again (the tenant's OpenID provider)
    assert again.get("/inbox/").status_code == 200
    _, fresh = api_key_create(tenant=alice.tenant, person=alice)
    assert client_for(fresh).get("/v1/clarifications").status_code == 200


def test_a_deleted_person_is_gone_from_scim_but_their_answers_stay(scim, submit, channel, people):
    alice = people["alice"]
    clar = submit()
    run_worker()
    [card] = deliveries(clar, kind="question")
    reply = card_tap_process(_tap(card, _slack_identity("U0ALICE"), action_id="cb-ok"))
    assert reply.status == ANSWERED
    answered = list(ResponseRecord.objects.filter(clarification=clar).values())
    counts = written_counts()

    assert scim.delete(f"Users/{alice.pk}").status_code == 204
    assert scim.get(f"Users/{alice.pk}").status_code == 404
    assert scim.get("Users", filter='userName eq "alice@acme.test"').json()["totalResults"] == 0
    alice.refresh_from_db()
    assert alice.deactivated_at is not None and alice.deleted_by_provider
    assert list(ResponseRecord.objects.filter(clarification=clar).values()) == answered
    after = written_counts()
    assert after.pop("AuditEvent") == counts.pop("AuditEvent") + 1  # person_deprovisioned
    assert after == counts

    # Provisioned again with the same email: the same person, active again.
    again = scim.post(
        "Users",
        {
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
            "userName": "alice@acme.test",
            "active": True,
        },
    )
    assert again.status_code == 201, again.content
    assert again.json()["id"] == str(alice.pk)
    alice.refresh_from_db()
    assert alice.deactivated_at is None and not alice.deleted_by_provider


def test_a_deprovisioned_person_cannot_ask_in_chat(people):
    from delivery.slack.hooks import slack_person

    assert slack_person("U0ALICE") == people["alice"]
    person_deprovision(person=people["alice"])
    assert slack_person("U0ALICE") is None
    assert slack_person("U0ALICE", people["alice"].tenant) is None
