"""The answer outcome matrix of CONTRACT §3.2: replays, refusals, late answers, overrides."""

import pytest

from clarify.models import Clarification, ClarificationBinding
from tenancy.models import Person
from tenancy.services import api_key_create, workspace_load
from tests.conftest import client_for

from .conftest import (
    C1,
    C2,
    assert_nothing_written,
    assert_refused_unreadable,
    responses_of,
    snapshot,
    us,
    versions_of,
)


def _replay(answer, client, clar_id, first, **body):
    """Answer again with the same body: identical status and bytes, nothing written."""
    before = snapshot()
    again = answer(client, clar_id, **body)
    assert again.status_code == first.status_code
    assert again.content == first.content
    assert_nothing_written(before)
    return again


# ---------------------------------------------------------------------------------------
# Idempotent replay


def test_replay_of_binding_answer_is_byte_identical(submit, clients, answer):
    s = submit()
    first = answer(clients.alice, s.clar_id, answerIndex=1, channel="slack", messageRef="m1")
    assert first.status_code == 200
    assert first.json()["outcome"] == "bound"

    _replay(answer, clients.alice, s.clar_id, first, answerIndex=1, channel="slack")

    assert len(responses_of(s.clar_id)) == 1
    assert len(versions_of(s.node_id)) == 2


def test_replay_of_partial_confirmation(submit, clients, answer):
    s = submit(severity_hint="critical")
    first = answer(clients.alice, s.clar_id, answerIndex=1)
    assert first.status_code == 202
    assert first.json() == {
        "outcome": "partial_confirmation",
        "state": "partially_confirmed",
        "quorumRemaining": 1,
    }

    _replay(answer, clients.alice, s.clar_id, first, answerIndex=1)
    assert len(responses_of(s.clar_id)) == 1
    # The replay did not count twice: one more confirmation is still needed to bind.
    bound = answer(clients.bob, s.clar_id, answerIndex=1)
    assert bound.status_code == 200
    # And after binding the replay still returns her prior outcome, writing nothing.
    _replay(answer, clients.alice, s.clar_id, first, answerIndex=1)


def test_replay_matches_on_the_resolved_interval(submit, clients, answer):
    """A custom answer resolving to the chosen candidate's interval is the same answer."""
    s = submit(severity_hint="critical")
    first = answer(clients.alice, s.clar_id, answerIndex=1)
    _replay(
        answer,
        clients.alice,
        s.clar_id,
        first,
        answerCustom={"validFrom": "2026-07-01T00:00:00Z", "validTo": None},
    )


def test_replay_of_attestation_conflict_and_post_binding(submit, clients, answer):
    s = submit(severity_hint="critical")
    att = answer(clients.vera, s.clar_id, answerIndex=2)
    assert att.json() == {"outcome": "attestation", "state": "attested"}
    _replay(answer, clients.vera, s.clar_id, att, answerIndex=2)

    answer(clients.alice, s.clar_id, answerIndex=1)
    conflict = answer(clients.bob, s.clar_id, answerIndex=2)
    assert conflict.json() == {"outcome": "conflict", "state": "conflicted", "postBinding": False}
    _replay(answer, clients.bob, s.clar_id, conflict, answerIndex=2)

    t = submit(external_id="contracts/other.docx")
    answer(clients.alice, t.clar_id, answerIndex=1)
    post = answer(clients.bob, t.clar_id, answerIndex=2)
    assert post.json() == {"outcome": "conflict", "state": "answered", "postBinding": True}
    _replay(answer, clients.bob, t.clar_id, post, answerIndex=2)


def test_replay_through_the_clarify_service(submit, clarify_client, answer, people):
    s = submit()
    body = {"answerIndex": 1, "responder": str(people["bob"].pk), "rights": "editor"}
    first = answer(clarify_client, s.clar_id, **body)
    assert first.status_code == 200
    _replay(answer, clarify_client, s.clar_id, first, **body)


def test_replay_of_steward_override(submit, clients, answer):
    s = submit()
    first = answer(clients.sam, s.clar_id, answerIndex=2, stewardOverride=True)
    assert first.status_code == 200
    _replay(answer, clients.sam, s.clar_id, first, answerIndex=2, stewardOverride=True)
    # The same interval as a plain answer is not the override again: already answered.
    before = snapshot()
    plain = answer(clients.sam, s.clar_id, answerIndex=2)
    assert plain.status_code == 409
    assert plain.json()["code"] == "CLARIFY_ALREADY_ANSWERED"
    assert_nothing_written(before)


def test_replay_of_a_steward_override_after_binding(submit, clients, answer):
    """After binding, an override is recorded as a post-binding conflict; repeating the
    same request is a replay, not a second record."""
    s = submit()
    assert answer(clients.alice, s.clar_id, answerIndex=1).status_code == 200
    first = answer(clients.sam, s.clar_id, answerIndex=2, stewardOverride=True)
    assert first.status_code == 202
    assert first.json() == {"outcome": "conflict", "state": "answered", "postBinding": True}
    _replay(answer, clients.sam, s.clar_id, first, answerIndex=2, stewardOverride=True)
    _replay(answer, clients.sam, s.clar_id, first, answerIndex=2)
    assert [r.binding_status for r in responses_of(s.clar_id)] == ["bound", "conflicting"]
    # An editor's override flag is still refused, replay or not.
    post = answer(clients.bob, s.clar_id, answerIndex=2)
    assert post.status_code == 202
    before = snapshot()
    resp = answer(clients.bob, s.clar_id, answerIndex=2, stewardOverride=True)
    assert resp.status_code == 403
    assert resp.json()["code"] == "STEWARD_OVERRIDE_FORBIDDEN"
    assert_nothing_written(before)


def test_a_different_answer_is_not_a_replay(submit, clients, answer):
    s = submit(severity_hint="critical")
    answer(clients.alice, s.clar_id, answerIndex=1)
    answer(clients.alice, s.clar_id, answerIndex=2)
    # Back to her first answer: a new record (her latest changed), not a replay.
    again = answer(clients.alice, s.clar_id, answerIndex=1)
    assert again.status_code == 202
    assert [r.interval for r in responses_of(s.clar_id)] == [C1, C2, C1]


# ---------------------------------------------------------------------------------------
# Refusals write nothing


def test_already_answered_writes_nothing(submit, clients, answer, clarify_client, people):
    s = submit()
    assert answer(clients.alice, s.clar_id, answerIndex=1).status_code == 200
    before = snapshot()
    for client, body in [
        (clients.bob, {"answerIndex": 1}),
        (clients.vera, {"answerIndex": 1}),
        (clients.bob, {"answerCustom": {"validFrom": C1[0], "validTo": None}}),
        (
            clarify_client,
            {"answerIndex": 1, "responder": str(people["olga"].pk), "rights": "editor"},
        ),
    ]:
        resp = answer(client, s.clar_id, **body)
        assert resp.status_code == 409, body
        assert resp.json()["code"] == "CLARIFY_ALREADY_ANSWERED"
        assert set(resp.json()) == {"code", "detail"}
    assert_nothing_written(before)


@pytest.mark.parametrize("who", ["alice", "vera"])
def test_steward_override_forbidden_without_steward_rights(submit, clients, answer, who):
    s = submit()
    before = snapshot()
    resp = answer(getattr(clients, who), s.clar_id, answerIndex=1, stewardOverride=True)
    assert resp.status_code == 403
    assert resp.json()["code"] == "STEWARD_OVERRIDE_FORBIDDEN"
    assert_nothing_written(before)


def test_steward_override_forbidden_for_a_steward_key_limited_to_editor(
    submit, person_client, answer
):
    s = submit()
    before = snapshot()
    resp = answer(
        person_client("sam", role="editor"), s.clar_id, answerIndex=1, stewardOverride=True
    )
    assert resp.status_code == 403
    assert resp.json()["code"] == "STEWARD_OVERRIDE_FORBIDDEN"
    assert_nothing_written(before)


def test_steward_override_forbidden_by_policy(submit, clients, answer, tenant_policy):
    tenant_policy(allow_steward_override=False)
    s = submit(severity_hint="critical")
    assert s.clar.quorum_policy["allowStewardOverride"] is False
    before = snapshot()

    resp = answer(clients.sam, s.clar_id, answerIndex=1, stewardOverride=True)

    assert resp.status_code == 403
    assert resp.json()["code"] == "STEWARD_OVERRIDE_FORBIDDEN"
    assert_nothing_written(before)
    # Critical does not bind on a single response then: a steward's plain answer is one
    # confirmation of the two required.
    resp = answer(clients.sam, s.clar_id, answerIndex=1)
    assert resp.status_code == 202
    assert resp.json()["outcome"] == "partial_confirmation"
    assert len(versions_of(s.node_id)) == 1


def test_steward_override_on_conflict_is_the_steward_only_resolution(
    submit, clients, answer, tenant_policy
):
    """As-built v0.7 (6): override is allowed on a conflicted clarification even when the
    policy forbids overriding an open one (conflict policy is steward_only)."""
    tenant_policy(allow_steward_override=False)
    s = submit(severity_hint="critical")
    answer(clients.alice, s.clar_id, answerIndex=1)
    answer(clients.bob, s.clar_id, answerIndex=2)
    resp = answer(clients.sam, s.clar_id, answerIndex=1, stewardOverride=True)
    assert resp.status_code == 200, resp.content
    assert ClarificationBinding.objects.get().evidence_class == "steward_override"


def test_steward_override_binds_a_critical_clarification_when_policy_allows(
    submit, clients, answer
):
    s = submit(severity_hint="critical")
    resp = answer(clients.sam, s.clar_id, answerIndex=2, stewardOverride=True)
    assert resp.status_code == 200
    new = versions_of(s.node_id)[-1]
    assert (new.valid_from, new.valid_to, new.evidence_class) == (*C2, "steward_override")
    s.clar.refresh_from_db()
    assert (s.clar.state, s.clar.quorum_state) == ("answered", "satisfied")


def test_unknown_and_other_tenant_clarification_is_404(submit, clients, answer):
    s = submit()
    other = workspace_load(
        data={
            "tenant": "globex",
            "people": [{"name": "G", "email": "g@globex.test", "role": "editor"}],
        }
    )
    _, secret = api_key_create(tenant=other.tenant, person=other.tenant.people.get())
    before = snapshot()
    resp = answer(client_for(secret), s.clar_id, answerIndex=1)
    assert resp.status_code == 404
    assert resp.json()["code"] == "NOT_FOUND"
    _, csecret = api_key_create(tenant=other.tenant, audience="clarify")
    resp = answer(
        client_for(csecret),
        s.clar_id,
        answerIndex=1,
        responder=str(other.tenant.people.get().pk),
        rights="editor",
    )
    assert resp.status_code == 404
    for bad in ["00000000-0000-0000-0000-000000000000", "not-a-uuid"]:
        assert answer(clients.alice, bad, answerIndex=1).status_code == 404
    assert_nothing_written(before)


def test_unreadable_source_is_404_for_answer_and_read(submit, clients, answer):
    s = submit(acl=("group:legal",))  # olga is only in finance
    before = snapshot()
    resp = answer(clients.olga, s.clar_id, answerIndex=1)
    assert (resp.status_code, resp.json()["code"]) == (404, "NOT_FOUND")
    missing = answer(clients.olga, "00000000-0000-0000-0000-000000000000", answerIndex=1)
    assert (missing.status_code, missing.json()) == (resp.status_code, resp.json())
    assert clients.olga.get(f"/v1/clarifications/{s.clar_id}").status_code == 404
    assert_refused_unreadable(before, s.clar.pk)
    # The steward reads the whole tenant.
    assert clients.sam.get(f"/v1/clarifications/{s.clar_id}").status_code == 200


# ---------------------------------------------------------------------------------------
# Rights captured at answer time; late answers


def test_rights_are_captured_at_answer_time(submit, clients, answer, people):
    s = submit()
    Person.objects.filter(pk=people["alice"].pk).update(role="viewer")
    resp = answer(clients.alice, s.clar_id, answerIndex=1)
    assert resp.status_code == 202
    assert resp.json() == {"outcome": "attestation", "state": "attested"}
    Person.objects.filter(pk=people["alice"].pk).update(role="editor")
    [record] = responses_of(s.clar_id)
    assert (record.rights_at_answer_time, record.binding_status) == ("viewer", "attestation")
    # Promoted again, her new (different) answer binds; the old record is not re-derived.
    assert answer(clients.alice, s.clar_id, answerIndex=2).status_code == 200
    records = responses_of(s.clar_id)
    assert [(r.rights_at_answer_time, r.binding_status) for r in records] == [
        ("viewer", "attestation"),
        ("editor", "bound"),
    ]


@pytest.mark.parametrize("state", ["expired", "dead_lettered"])
def test_late_answers_are_accepted(submit, clients, answer, state):
    s = submit()
    Clarification.objects.filter(pk=s.clar_id).update(state=state)
    resp = answer(clients.alice, s.clar_id, answerIndex=1)
    assert resp.status_code == 200, resp.content
    assert resp.json()["outcome"] == "bound"
    s.clar.refresh_from_db()
    assert s.clar.state == "answered"
    assert (versions_of(s.node_id)[-1].valid_from, versions_of(s.node_id)[-1].valid_to) == C1


@pytest.mark.parametrize("state", ["expired", "dead_lettered"])
def test_late_attestation_and_partial_confirmation(submit, clients, answer, state):
    s = submit(severity_hint="critical")
    Clarification.objects.filter(pk=s.clar_id).update(state=state)
    resp = answer(clients.vera, s.clar_id, answerIndex=1)
    assert resp.json() == {"outcome": "attestation", "state": "attested"}
    t = submit(severity_hint="critical", external_id="contracts/other.docx")
    Clarification.objects.filter(pk=t.clar_id).update(state=state)
    resp = answer(clients.alice, t.clar_id, answerIndex=1)
    assert resp.status_code == 202
    assert resp.json()["state"] == "partially_confirmed"
    assert answer(clients.bob, t.clar_id, answerIndex=1).status_code == 200


def test_attestation_keeps_a_later_state(submit, clients, answer):
    """The attestation body reports the state as it stands after the answer."""
    s = submit(severity_hint="critical")
    answer(clients.alice, s.clar_id, answerIndex=1)
    resp = answer(clients.vera, s.clar_id, answerIndex=1)
    assert resp.status_code == 202
    assert resp.json() == {"outcome": "attestation", "state": "partially_confirmed"}
    assert [r.binding_status for r in responses_of(s.clar_id)] == [
        "binding_candidate",
        "attestation",
    ]


def test_custom_answers_accept_microseconds_and_rfc3339(submit, clients, answer):
    s = submit(severity_hint="critical")
    resp = answer(
        clients.alice,
        s.clar_id,
        answerCustom={"validFrom": "2026-03-01T00:00:00Z", "validTo": None, "sourceText": "1 Mar"},
    )
    assert resp.status_code == 202
    resp = answer(clients.bob, s.clar_id, answerCustom={"validFrom": us("2026-03-01")})
    assert resp.status_code == 200, resp.content
    new = versions_of(s.node_id)[-1]
    assert (new.valid_from, new.valid_to) == (us("2026-03-01"), None)
    assert [r.binding_status for r in responses_of(s.clar_id)] == ["bound", "bound"]


def test_clarify_service_asserted_viewer_rights_attest(submit, clarify_client, answer, people):
    s = submit()
    resp = answer(
        clarify_client,
        s.clar_id,
        answerIndex=1,
        responder=str(people["alice"].pk),
        rights="viewer",
    )
    assert resp.status_code == 202
    assert resp.json() == {"outcome": "attestation", "state": "attested"}
    [record] = responses_of(s.clar_id)
    assert (record.rights_at_answer_time, record.channel) == ("viewer", "clarify")
