"""The card model and the outcome copy of spec §7 (quorum-aware), the card action payload,
the redacted escalation, and restricted sources."""

from datetime import UTC, datetime

import pytest

from clarify.models import ClarifyPolicy
from clarify.services import AnswerCaller, AnswerInput, clarification_answer
from delivery.cards import (
    MOVED_ON,
    SOMETHING_ELSE,
    build_card,
    build_escalation,
    candidate_label,
    outcome_copy,
)
from delivery.restriction import excerpt_for_chat

from .conftest import JUN_2026, SPAN_TEXT, run_worker

LABEL = "12 June (signature)"  # CANDIDATES[1]
ATTESTATION = (
    "Your answer is recorded as an attestation. A steward or editor must confirm it before "
    "the fact is corrected."
)
CONFLICT = "A conflicting answer has been recorded. This clarification now requires steward review."
CRITICAL_NOTE = "This clarification affects a high-stakes date and requires two confirmations."


def today() -> str:
    return datetime.now(UTC).strftime("%-d %b %Y")


@pytest.fixture
def answer_as(people):
    """`answer_as(clar, "alice", index)` → the copy the card shows after that answer,
    through the answer service as the clarify-bot would call it."""

    def do(clar, name: str, index=None, custom=None) -> str:
        person = people[name]
        result = clarification_answer(
            caller=AnswerCaller(tenant=clar.tenant, clarify_service=True),
            clarification_id=clar.pk,
            answer=AnswerInput(
                answer_index=index,
                answer_custom=custom,
                channel="inbox",
                responder=str(person.pk),
                rights=person.role,
            ),
        )
        clar.refresh_from_db()
        return outcome_copy(clar, result.body, person)

    return do


def test_normal_after_answer(submit, answer_as):
    clar = submit()
    assert build_card(clar, "n0", "").note == ""
    text = answer_as(clar, "alice", 1)
    assert text == f"✓ Recorded as evidence: {LABEL}, confirmed by Alice, {today()}."


def test_critical_on_send_after_first_answer_and_quorum_satisfied(submit, answer_as):
    clar = submit(severity_hint="critical")
    assert build_card(clar, "n0", "").note == CRITICAL_NOTE
    first = answer_as(clar, "alice", 1)
    assert first == (
        f"First confirmation recorded: {LABEL} (Alice). One more confirmation is required "
        "before the correction becomes binding."
    )
    second = answer_as(clar, "bob", 1)
    assert second == (
        f"✓ Recorded as binding evidence: {LABEL}, confirmed by Alice and Bob, {today()}."
    )


def test_critical_with_three_confirmations_counts_them(submit, answer_as, workspace):
    ClarifyPolicy.objects.create(tenant=workspace, critical_required_confirmations=3)
    clar = submit(severity_hint="critical")
    assert build_card(clar, "n0", "").note == (
        "This clarification affects a high-stakes date and requires three confirmations."
    )
    assert answer_as(clar, "alice", 2).startswith(
        "First confirmation recorded: 1 Jul 2026 (countersignature) (Alice). 2 more "
        "confirmations are required"
    )


def test_viewer_attestation(submit, answer_as):
    clar = submit()
    assert answer_as(clar, "vera", 1) == ATTESTATION


def test_conflict_before_and_after_binding(submit, answer_as):
    clar = submit(severity_hint="critical")
    answer_as(clar, "alice", 0)
    assert answer_as(clar, "bob", 1) == CONFLICT

    bound = submit(external_id="contracts/other.docx")
    answer_as(bound, "alice", 1)
    late = answer_as(bound, "bob", 0)
    assert late.startswith(MOVED_ON)
    assert "conflicting attestation" in late and "steward" in late


def test_custom_answer_names_the_interval(submit, answer_as):
    clar = submit()
    text = answer_as(clar, "alice", custom={"validFrom": JUN_2026, "validTo": None})
    assert (
        text == f"✓ Recorded as evidence: 12 June 2026 → open-ended, confirmed by Alice, {today()}."
    )


def test_card_buttons_question_and_action_payload(submit):
    clar = submit()
    card = build_card(clar, "nonce-123", "the excerpt")
    assert [(b.index, b.label) for b in card.buttons] == [
        (0, "1 Oct 2026 (next quarter)"),
        (1, "12 June (signature)"),
        (2, "1 Jul 2026 (countersignature)"),
    ]
    assert card.question == "When does “MSA term” take effect? (from “Master services agreement”)"
    assert card.question.count("?") == 1
    assert SOMETHING_ELSE == "Something else…"
    for b in card.buttons:
        assert card.action(b.index) == {
            "kind": "clarify_answer",
            "clarificationId": str(clar.pk),
            "answerIndex": b.index,
            "nonce": "nonce-123",
        }
    assert (card.document_title, card.document_url) == (
        "Master services agreement",
        "https://example.test/contracts/msa.docx",
    )
    # A candidate without a label is shown by its dates.
    assert candidate_label({"validFrom": JUN_2026, "validTo": None}) == "12 June 2026 → open-ended"


def test_cards_carry_the_span_excerpt_but_the_escalation_never_does(submit, channel, people):
    clar = submit()
    assert excerpt_for_chat(clar) == SPAN_TEXT
    run_worker()
    [(_, card)] = channel.cards
    assert card.excerpt == SPAN_TEXT

    escalation = build_escalation(
        clar, [{"attempt": 0, "candidate": str(people["alice"].pk), "reason": "NO_READ_PERMISSION"}]
    )
    assert SPAN_TEXT not in repr(escalation)
    assert "ACME-CONFIDENTIAL" not in repr(escalation)
    assert "NO_READ_PERMISSION" in escalation.text
    assert "Master services agreement" in escalation.text
    assert escalation.document_url == "https://example.test/contracts/msa.docx"
    assert not hasattr(escalation, "excerpt")


def test_a_restricted_source_yields_no_excerpt(submit, channel):
    clar = submit(restriction="privileged")
    assert clar.source_version.source.restriction == "privileged"
    assert excerpt_for_chat(clar) == ""
    run_worker()
    [(_, card)] = channel.cards
    assert card.excerpt == ""
    assert SPAN_TEXT not in repr(card)
    assert "ACME-CONFIDENTIAL" not in repr(card)
