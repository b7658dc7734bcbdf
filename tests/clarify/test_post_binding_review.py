"""A disagreement after binding needs a steward (spec §6 `post_binding`): the clarification
stays answered with its binding untouched, but it is in the needs-steward-attention set
(`telha clarify queue`, the admin's Needs attention) until a steward acts. The steward's
act is an explicit override naming the bound interval: the binding is upheld, recorded as
a `steward_override` response and a `post_binding_conflict_resolved` event."""

import pytest

from clarify.models import Clarification, ClarificationBinding
from clarify.selectors import needs_steward_attention, needs_steward_attention_q

from .conftest import (
    C1,
    C2,
    assert_nothing_written,
    event_types,
    responses_of,
    snapshot,
    versions_of,
)
from .test_cli import cli

QUEUE_ROW_KEYS = {
    "id",
    "tenant",
    "target",
    "targetName",
    "kind",
    "severity",
    "state",
    "quorumState",
    "createdAt",
}


def _in_attention(clar_id) -> bool:
    """Whether the clarification is in the set, by every form of the selector; they agree."""
    in_q = Clarification.objects.filter(needs_steward_attention_q(), pk=clar_id).exists()
    queue = {r["id"] for r in cli("clarify", "queue", "--tenant", "acme", "--json")}
    assert (str(clar_id) in queue) == in_q
    assert needs_steward_attention(Clarification.objects.get(pk=clar_id)) == in_q
    return in_q


@pytest.fixture
def disputed(submit, clients, answer):
    """A normal clarification bound to C1 by alice, then a post-binding disagreement (C2)
    by bob."""

    def make(**kwargs):
        s = submit(**kwargs)
        assert answer(clients.alice, s.clar_id, answerIndex=1).status_code == 200
        assert not _in_attention(s.clar_id)
        resp = answer(clients.bob, s.clar_id, answerIndex=2)
        assert resp.json() == {"outcome": "conflict", "state": "answered", "postBinding": True}
        return s

    return make


def test_post_binding_conflict_needs_steward_attention(disputed):
    s = disputed()
    assert _in_attention(s.clar_id)
    [row] = [r for r in cli("clarify", "queue", "--json") if r["id"] == s.clar_id]
    assert set(row) == QUEUE_ROW_KEYS
    assert (row["state"], row["severity"]) == ("answered", "normal")
    assert s.clar_id in cli("clarify", "queue", "--tenant", "acme")


def test_answered_clarifications_without_a_dispute_need_no_attention(submit, clients, answer):
    s = submit()
    answer(clients.alice, s.clar_id, answerIndex=1)
    assert not _in_attention(s.clar_id)
    # A rejected late answer (409) records nothing and flags nothing.
    assert answer(clients.bob, s.clar_id, answerIndex=1).status_code == 409
    assert not _in_attention(s.clar_id)
    # Pre-binding conflicting responses of a clarification a steward then bound do not
    # count as post-binding disputes.
    c = submit(external_id="contracts/c.docx", severity_hint="critical")
    answer(clients.alice, c.clar_id, answerIndex=1)
    answer(clients.bob, c.clar_id, answerIndex=2)
    assert _in_attention(c.clar_id)  # conflicted
    assert answer(clients.sam, c.clar_id, answerIndex=2, stewardOverride=True).status_code == 200
    assert not _in_attention(c.clar_id)


def test_a_steward_upholds_the_binding(disputed, clients, answer, people):
    s = disputed()
    versions = versions_of(s.node_id)
    binding = ClarificationBinding.objects.values().get(clarification_id=s.clar_id)
    s.clar.refresh_from_db()
    bob_conflict = responses_of(s.clar_id)[-1]

    resp = answer(clients.sam, s.clar_id, answerIndex=1, stewardOverride=True)

    assert resp.status_code == 200, resp.content
    assert resp.json() == {
        "outcome": "bound",
        "state": "answered",
        "factVersionTx": s.clar.fact_version_tx,
        "quorumSatisfied": True,
    }
    # The binding is untouched: no new version, the same binding row.
    assert versions_of(s.node_id) == versions
    assert ClarificationBinding.objects.values().get(clarification_id=s.clar_id) == binding
    records = responses_of(s.clar_id)
    assert [(r.interval, r.binding_status) for r in records] == [
        (C1, "bound"),
        (C2, "conflicting"),
        (C1, "steward_override"),
    ]
    assert (records[-1].responder, records[-1].rights_at_answer_time) == (
        people["sam"].pk,
        "steward",
    )
    types = event_types(s.clar_id)
    assert types[-2:] == ["steward_override", "post_binding_conflict_resolved"]
    resolved = s.clar.events.get(type="post_binding_conflict_resolved")
    assert resolved.detail["resolution"] == "binding_upheld"
    assert resolved.detail["conflicts"] == [str(bob_conflict.pk)]
    assert resolved.detail["responseId"] == str(records[-1].pk)
    assert not _in_attention(s.clar_id)

    # Repeating it is a replay: the same bytes, nothing written.
    before = snapshot()
    again = answer(clients.sam, s.clar_id, answerIndex=1, stewardOverride=True)
    assert (again.status_code, again.content) == (resp.status_code, resp.content)
    assert_nothing_written(before)

    # A new disagreement puts it back in the set; the steward upholds again (a new record,
    # not a replay of the earlier one).
    assert answer(clients.olga, s.clar_id, answerIndex=0).json()["postBinding"] is True
    assert _in_attention(s.clar_id)
    resp = answer(clients.sam, s.clar_id, answerIndex=1, stewardOverride=True)
    assert resp.status_code == 200
    assert [r.binding_status for r in responses_of(s.clar_id)][-2:] == [
        "conflicting",
        "steward_override",
    ]
    assert not _in_attention(s.clar_id)
    assert len(versions_of(s.node_id)) == len(versions)


def test_the_steward_who_overrode_can_uphold_the_override(submit, clients, answer):
    """A steward's binding override is not replayed over a dispute recorded after it."""
    s = submit()
    first = answer(clients.sam, s.clar_id, answerIndex=1, stewardOverride=True)
    assert first.status_code == 200
    answer(clients.bob, s.clar_id, answerIndex=2)
    assert _in_attention(s.clar_id)

    resp = answer(clients.sam, s.clar_id, answerIndex=1, stewardOverride=True)

    assert resp.status_code == 200
    assert resp.json() == first.json()  # the same binding
    assert [r.binding_status for r in responses_of(s.clar_id)] == [
        "steward_override",
        "conflicting",
        "steward_override",
    ]
    assert not _in_attention(s.clar_id)


def test_upholding_is_allowed_when_the_pinned_policy_forbids_overrides(
    disputed, clients, answer, tenant_policy
):
    """Resolving a dispute does not override a quorum (like a conflicted clarification)."""
    tenant_policy(allow_steward_override=False)
    s = disputed(severity_hint="high")
    assert s.clar.quorum_policy["allowStewardOverride"] is False
    assert answer(clients.sam, s.clar_id, answerIndex=1, stewardOverride=True).status_code == 200
    assert not _in_attention(s.clar_id)
    # Nothing left to resolve: the override is the policy's to allow again.
    before = snapshot()
    resp = answer(clients.sam, s.clar_id, answerIndex=1, stewardOverride=True)
    assert resp.status_code == 200  # the replay of the upholding
    other = answer(clients.sam, s.clar_id, answerCustom={"validFrom": C1[0]}, stewardOverride=True)
    assert other.status_code == 200 and other.content == resp.content  # same interval: replay
    forbidden = answer(clients.sam, s.clar_id, answerIndex=0, stewardOverride=True)
    assert forbidden.status_code == 403
    assert forbidden.json()["code"] == "STEWARD_OVERRIDE_FORBIDDEN"
    assert_nothing_written(before)


def test_what_does_not_resolve_a_dispute(disputed, clients, answer, person_client):
    s = disputed()
    before = snapshot()
    refusals = [
        # Not a steward: the override flag is refused before anything else.
        (clients.alice, {"answerIndex": 1, "stewardOverride": True}, 403),
        (person_client("sam", role="editor"), {"answerIndex": 1, "stewardOverride": True}, 403),
        # A steward's plain agreeing answer is a late agreeing answer.
        (clients.sam, {"answerIndex": 1}, 409),
    ]
    for client, body, status in refusals:
        resp = answer(client, s.clar_id, **body)
        assert resp.status_code == status, (body, resp.content)
    assert_nothing_written(before)
    assert _in_attention(s.clar_id)
    # A steward's disagreeing override after binding is one more dispute, not a resolution.
    resp = answer(clients.sam, s.clar_id, answerIndex=0, stewardOverride=True)
    assert resp.json() == {"outcome": "conflict", "state": "answered", "postBinding": True}
    assert _in_attention(s.clar_id)


def test_without_a_dispute_an_upholding_override_is_already_answered(submit, clients, answer):
    s = submit()
    answer(clients.alice, s.clar_id, answerIndex=1)
    before = snapshot()
    resp = answer(clients.sam, s.clar_id, answerIndex=1, stewardOverride=True)
    assert resp.status_code == 409
    assert resp.json()["code"] == "CLARIFY_ALREADY_ANSWERED"
    assert_nothing_written(before)


def test_the_cli_resolves_a_dispute(disputed):
    s = disputed()
    assert s.clar_id in {r["id"] for r in cli("clarify", "queue", "--json")}
    out = cli(
        "clarify",
        "answer",
        s.clar_id,
        "--responder",
        "sam@acme.test",
        "--index",
        "1",
        "--steward-override",
        "--json",
    )
    assert (out["status"], out["outcome"], out["state"]) == (200, "bound", "answered")
    assert responses_of(s.clar_id)[-1].channel == "cli"
    assert s.clar_id not in {r["id"] for r in cli("clarify", "queue", "--json")}
