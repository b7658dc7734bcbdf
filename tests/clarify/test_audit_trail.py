"""Every answer appends its audit events on the clarification, in order (spec §7: every
answer, attestation, quorum transition, conflict entry, steward notification, steward
override and binding): the exact event sequence per outcome of CONTRACT §3.2."""

from clarify.models import AuditEvent

from .conftest import event_types, responses_of


def _events_since(clar_id, mark: int) -> list[AuditEvent]:
    return list(
        AuditEvent.objects.filter(clarification_id=clar_id, pk__gt=mark).order_by("at", "id")
    )


def _mark() -> int:
    return AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0


def _answered(answer, client, clar_id, **body):
    """Answer and return (status, [(type, detail)] of the events it appended)."""
    mark = _mark()
    resp = answer(client, clar_id, **body)
    return resp.status_code, [(e.type, e.detail) for e in _events_since(clar_id, mark)]


def _about(detail: dict, record) -> None:
    """An answer event names its response record, responder, rights and channel."""
    assert detail["responseId"] == str(record.pk)
    assert detail["responder"] == str(record.responder)
    assert detail["rights"] == record.rights_at_answer_time
    assert detail["channel"] == record.channel


def test_events_of_a_binding_answer(submit, clients, answer):
    s = submit()
    assert event_types(s.clar_id) == ["opened"]

    status, events = _answered(answer, clients.alice, s.clar_id, answerIndex=1)

    assert status == 200
    assert [t for t, _ in events] == ["response_recorded", "state_changed", "bound"]
    [record] = responses_of(s.clar_id)
    _about(events[0][1], record)
    assert events[0][1]["bindingStatus"] == "binding_candidate"  # as evaluated, then bound
    assert events[1][1] == {"from": "open", "to": "answered"}
    assert events[2][1]["responses"] == [str(record.pk)]
    assert events[2][1]["evidenceClass"] == "human_clarification"


def test_events_of_partial_confirmation_then_quorum_binding(submit, clients, answer):
    s = submit(severity_hint="critical")

    status, events = _answered(answer, clients.alice, s.clar_id, answerIndex=1)

    assert status == 202
    # quorum stays pending (no transition): the response and the state change only.
    assert [t for t, _ in events] == ["response_recorded", "state_changed"]
    _about(events[0][1], responses_of(s.clar_id)[0])
    assert events[1][1] == {"from": "open", "to": "partially_confirmed"}

    status, events = _answered(answer, clients.bob, s.clar_id, answerIndex=1)

    assert status == 200
    assert [t for t, _ in events] == [
        "response_recorded",
        "quorum_transition",
        "state_changed",
        "bound",
    ]
    _about(events[0][1], responses_of(s.clar_id)[1])
    assert events[1][1] == {"from": "pending", "to": "satisfied"}
    assert events[2][1] == {"from": "partially_confirmed", "to": "answered"}
    assert events[3][1]["evidenceClass"] == "quorum_confirmation"


def test_events_of_entering_and_staying_in_conflict(submit, clients, answer):
    s = submit(severity_hint="critical")
    answer(clients.alice, s.clar_id, answerIndex=1)

    status, events = _answered(answer, clients.bob, s.clar_id, answerIndex=2)

    assert status == 202
    assert [t for t, _ in events] == [
        "response_recorded",
        "quorum_transition",
        "state_changed",
        "conflict_entered",
        "steward_notified",
    ]
    bob = responses_of(s.clar_id)[1]
    for _, detail in [events[0], events[3], events[4]]:
        _about(detail, bob)
    assert events[0][1]["bindingStatus"] == "conflicting"
    assert events[1][1] == {"from": "pending", "to": "conflicted"}
    assert events[2][1] == {"from": "partially_confirmed", "to": "conflicted"}
    assert events[4][1]["reason"] == "conflict"

    # Already conflicted: the response and another notification, no transition.
    status, events = _answered(answer, clients.olga, s.clar_id, answerIndex=1)

    assert status == 202
    assert [t for t, _ in events] == ["response_recorded", "steward_notified"]
    _about(events[0][1], responses_of(s.clar_id)[2])


def test_events_of_attestation(submit, clients, answer):
    s = submit()
    status, events = _answered(answer, clients.vera, s.clar_id, answerIndex=1)
    assert status == 202
    assert [t for t, _ in events] == ["state_changed", "attestation_recorded"]
    assert events[0][1] == {"from": "open", "to": "attested"}
    _about(events[1][1], responses_of(s.clar_id)[0])
    assert events[1][1]["bindingStatus"] == "attestation"
    # A second attestation changes no state.
    status, events = _answered(answer, clients.vera, s.clar_id, answerIndex=2)
    assert [t for t, _ in events] == ["attestation_recorded"]


def test_events_of_a_steward_override(submit, clients, answer):
    s = submit(severity_hint="critical")
    answer(clients.alice, s.clar_id, answerIndex=1)
    answer(clients.bob, s.clar_id, answerIndex=2)

    status, events = _answered(answer, clients.sam, s.clar_id, answerIndex=2, stewardOverride=True)

    assert status == 200
    assert [t for t, _ in events] == [
        "steward_override",
        "quorum_transition",
        "state_changed",
        "bound",
    ]
    _about(events[0][1], responses_of(s.clar_id)[2])
    assert events[1][1] == {"from": "conflicted", "to": "satisfied"}
    assert events[2][1] == {"from": "conflicted", "to": "answered"}
    assert events[3][1]["evidenceClass"] == "steward_override"


def test_events_of_a_post_binding_conflict(submit, clients, answer):
    s = submit()
    answer(clients.alice, s.clar_id, answerIndex=1)

    status, events = _answered(answer, clients.bob, s.clar_id, answerIndex=2)

    assert status == 202
    assert [t for t, _ in events] == ["post_binding_conflict", "steward_notified"]
    bob = responses_of(s.clar_id)[1]
    _about(events[0][1], bob)
    assert events[1][1]["reason"] == "post_binding_conflict"


def test_refusals_and_replays_append_no_event(submit, clients, answer):
    s = submit()
    answer(clients.alice, s.clar_id, answerIndex=1)
    types = event_types(s.clar_id)
    assert answer(clients.alice, s.clar_id, answerIndex=1).status_code == 200  # replay
    assert answer(clients.bob, s.clar_id, answerIndex=1).status_code == 409
    assert answer(clients.bob, s.clar_id, answerIndex=9).status_code == 422
    assert event_types(s.clar_id) == types
