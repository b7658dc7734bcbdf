"""Every state change goes through `clarification_transition` (clarify.lifecycle): each
transition the lifecycle allows, audited as the one `state_changed` event; a refused one
writes nothing; a re-ask that reopens a clarification audits its state change too."""

import pytest
from django.db import transaction

from clarify.lifecycle import TRANSITIONS, TransitionRefused, clarification_transition
from clarify.models import AuditEvent, Clarification, State
from clarify.stewardship import clarification_reask

from .conftest import assert_nothing_written, snapshot

pytestmark = pytest.mark.django_db


def state_changes(clar_id):
    return [
        e.detail
        for e in AuditEvent.objects.filter(clarification_id=clar_id, type="state_changed").order_by(
            "at", "id"
        )
    ]


def test_the_table_names_every_state_and_only_states():
    assert set(TRANSITIONS) == set(State.values)
    assert all(set(targets) <= set(State.values) for targets in TRANSITIONS.values())
    assert TRANSITIONS[State.ANSWERED] == frozenset()  # terminal
    assert TRANSITIONS[State.CONFLICTED] == {State.ANSWERED}  # only a steward's override


@pytest.mark.parametrize("current", [s for s in State.values if TRANSITIONS[s]])
def test_every_allowed_transition_changes_the_state_and_audits_it(submit, people, current):
    clar_id = submit().clar_id
    for to in sorted(TRANSITIONS[current]):
        Clarification.objects.filter(pk=clar_id).update(state=current)
        clar = Clarification.objects.get(pk=clar_id)
        before = len(state_changes(clar_id))
        with transaction.atomic():
            assert clarification_transition(clar, to, actor=people["sam"], reason="test")
            clar.save(update_fields=["state", "updated_at"])
        assert Clarification.objects.get(pk=clar_id).state == to
        changes = state_changes(clar_id)
        assert len(changes) == before + 1
        assert changes[-1] == {
            "from": current,
            "to": to,
            "by": str(people["sam"].pk),
            "reason": "test",
        }


def test_a_change_to_the_same_state_is_no_change(submit):
    clar = submit().clar
    before = snapshot()
    assert clarification_transition(clar, State.OPEN) is False
    assert_nothing_written(before)
    assert clar.state == State.OPEN


@pytest.mark.parametrize(
    ("current", "to"),
    [
        (State.ANSWERED, State.OPEN),
        (State.ANSWERED, State.CONFLICTED),
        (State.CONFLICTED, State.DEAD_LETTERED),
        (State.PARTIALLY_CONFIRMED, State.ATTESTED),
        (State.ATTESTED, State.EXPIRED),
    ],
)
def test_a_refused_transition_writes_nothing(submit, current, to):
    clar_id = submit().clar_id
    Clarification.objects.filter(pk=clar_id).update(state=current)
    clar = Clarification.objects.get(pk=clar_id)
    before = snapshot()
    events = AuditEvent.objects.count()
    with pytest.raises(TransitionRefused) as refused:
        clarification_transition(clar, to)
    assert refused.value.code == "CONFLICT"
    assert clar.state == current
    assert AuditEvent.objects.count() == events
    assert_nothing_written(before)


@pytest.mark.parametrize("current", [State.EXPIRED, State.DEAD_LETTERED])
def test_a_reask_that_reopens_audits_its_state_change(submit, people, current):
    clar_id = submit().clar_id
    Clarification.objects.filter(pk=clar_id).update(state=current)
    clar = Clarification.objects.get(pk=clar_id)
    clarification_reask(clarification=clar, ranking=[people["bob"]], actor=people["sam"])
    assert Clarification.objects.get(pk=clar_id).state == State.OPEN
    assert state_changes(clar_id)[-1] == {
        "from": current,
        "to": State.OPEN,
        "by": str(people["sam"].pk),
        "reason": "reasked",
    }
    [reasked] = AuditEvent.objects.filter(clarification_id=clar_id, type="reasked")
    assert (reasked.detail["from"], reasked.detail["to"]) == (current, State.OPEN)


def test_a_reask_of_an_open_clarification_changes_no_state(submit, people):
    clar = submit().clar
    before = len(state_changes(clar.pk))
    clarification_reask(clarification=clar, ranking=[people["bob"]], actor=people["sam"])
    assert len(state_changes(clar.pk)) == before
