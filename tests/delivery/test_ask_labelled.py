"""Ask-in-chat over the labelled set (tests/fixtures/ask_questions.json, issue 24): every
question is asked on a chat channel and in the inbox; no answer ever cites or shows a fact
the asker may not read, no restricted text crosses to chat, an unrestricted best answer is
never replaced by the teaser, and the right fact answers (top-1 accuracy at least 0.9;
`make bench` reports the same figure)."""

import json
from typing import Any

import pytest

from delivery.ask.services import answer_question, respond
from delivery.models import ChatTurn
from delivery.provenance import RESTRICTED_TEASER
from tests.fixtures.ask_questions import JSON_PATH, answered_right, build, submissions

pytestmark = pytest.mark.django_db
NOT_FOUND = "I couldn't find a fact you can read that matches that question."
GROUP_READERS = {"group:legal": {"alice", "sam"}, "group:finance": {"olga", "sam"}}


def test_the_committed_set_is_what_the_script_writes() -> None:
    data = json.loads(JSON_PATH.read_text())
    assert data == json.loads(json.dumps(build()))
    assert len(data["facts"]) >= 200 and len(data["questions"]) >= 60
    kinds = {q["kind"] for q in data["questions"]}
    assert {"start", "end", "typo", "plural", "period", "restricted", "unreadable"} <= kinds
    facts = data["facts"]
    assert any(f["restriction"] for f in facts) and any(f["pending"] for f in facts)
    assert any(f["acl"] == ["group:finance"] for f in facts)


@pytest.fixture
def labelled(ingest_client) -> dict[str, Any]:
    data = json.loads(JSON_PATH.read_text())
    for payload in submissions(data):
        response = ingest_client.post("/v1/submissions", payload, format="json")
        assert response.status_code == 201, response.content
    return data


def _check(person: Any, q: dict[str, Any], facts: list[dict[str, Any]]) -> bool:
    """Assert the leak rules for one question; return whether the top answer is right."""
    asker = q["asker"]
    unreadable = [f for f in facts if asker not in GROUP_READERS[f["acl"][0]]]
    restricted = [f for f in facts if f["restriction"]]
    readable_names = {f["name"] for f in facts} - {f["name"] for f in unreadable}
    answer = answer_question(person, q["question"])
    assert {e.name for e in answer.evidence} <= readable_names, q
    delivered, _ = respond(person=person, question=q["question"], channel="slack")
    for f in unreadable:
        assert f["name"] not in delivered and f["name"] not in answer.text, (q, f["name"])
    for f in restricted:
        assert f["name"] not in delivered, (q, f["name"])
        assert f["text"][f["text"].index("The parties") :] not in delivered, q
    assert "PRIV-" not in delivered
    top = answer.evidence[0] if answer.evidence else None
    if top is not None and top.restriction is None:
        assert delivered != RESTRICTED_TEASER, q  # a restricted near-miss never blocks it
    if top is not None and top.restriction is not None:
        assert delivered == RESTRICTED_TEASER, q
        turn = ChatTurn.objects.filter(role=ChatTurn.Role.ASSISTANT).latest("created_at")
        assert {p["sourceId"] for p in turn.restriction_provenance} >= {top.source_id}
    return answered_right(q, answer)


def test_no_question_leaks_and_the_right_fact_answers(labelled, people) -> None:
    facts = labelled["facts"]
    wrong = []
    for q in labelled["questions"]:
        if not _check(people[q["asker"]], q, facts):
            got = answer_question(people[q["asker"]], q["question"])
            wrong.append((q["question"], q["expect"], got.text[:120]))
    accuracy = 1 - len(wrong) / len(labelled["questions"])
    assert accuracy >= 0.9, wrong


def test_unreadable_questions_find_nothing_at_all(labelled, people) -> None:
    for q in labelled["questions"]:
        if q["kind"] == "unreadable":
            answer = answer_question(people[q["asker"]], q["question"])
            assert answer.text == NOT_FOUND and not answer.evidence, q
