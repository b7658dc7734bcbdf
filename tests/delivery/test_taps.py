"""The card-tap pipeline every channel shares (`delivery.actions`, issue 20 "channels as
adapters"), the Block Kit we build checked by slack_sdk's own validation, and the shape
itself: the rules live in `delivery.actions` once, the channel modules only parse and
render."""

import ast
import dataclasses
import uuid
from pathlib import Path
from typing import Any

import pytest
from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    HeaderBlock,
    PlainTextObject,
    SectionBlock,
)
from slack_sdk.models.views import View

from clarify.models import AuditEvent, Clarification, State
from delivery.actions import (
    ANSWERED,
    BAD_DATE,
    DROPPED,
    END_NOT_AFTER_START,
    INVALID,
    SOURCE_TEXT_TOO_LONG,
    START_REQUIRED,
    CardTap,
    CustomInputs,
    VerifiedTap,
    card_tap_process,
    card_tap_verify,
    custom_answer_parse,
)
from delivery.cards import Card, CardButton, Escalation, build_card, build_escalation
from delivery.identity import ChatIdentity
from delivery.models import CardAction
from delivery.restriction import RESTRICTED_CARD_TEXT, excerpt_for_chat, gated_card
from delivery.slack.blocks import (
    MAX_DIGEST_CARDS,
    BlockKitError,
    ask_blocks,
    ask_now_outcome_blocks,
    card_blocks,
    custom_answer_view,
    digest_message,
    escalation_message,
    message_blocks,
    validate_message_blocks,
)
from tenancy.models import AliasKind, PersonAlias

from .conftest import deliveries, events, run_worker, snapshot_rows, written_counts

ROOT = Path(__file__).resolve().parents[2]
CID = str(uuid.uuid4())


# --- "Something else…": one parser for every channel ---------------------------------------


@pytest.mark.parametrize(
    ("inputs", "answer"),
    [
        (
            CustomInputs("2026-06-12", "2027-06-12", " Clause 14 "),
            {
                "validFrom": "2026-06-12T00:00:00Z",
                "validTo": "2027-06-12T00:00:00Z",
                "sourceText": "Clause 14",
            },
        ),
        (
            CustomInputs(" 2026-06-12 ", "", "  "),
            {"validFrom": "2026-06-12T00:00:00Z", "validTo": None, "sourceText": None},
        ),
    ],
)
def test_custom_inputs_become_the_answer_interval(inputs, answer):
    assert custom_answer_parse(inputs) == (answer, {})


@pytest.mark.parametrize(
    ("inputs", "errors"),
    [
        (CustomInputs("12/06/2026"), {"validFrom": BAD_DATE}),
        (CustomInputs("2026-06-12", "next year"), {"validTo": BAD_DATE}),
        (CustomInputs("x", "y"), {"validFrom": BAD_DATE, "validTo": BAD_DATE}),
        (CustomInputs("", "2026-06-12"), {"validFrom": START_REQUIRED}),
        (CustomInputs(), {"validFrom": START_REQUIRED}),
        (CustomInputs("2026-06-12", "2026-06-12"), {"validTo": END_NOT_AFTER_START}),
        (CustomInputs("2026-07-01", "2026-06-12"), {"validTo": END_NOT_AFTER_START}),
        (CustomInputs("2026-06-12", "", "x" * 2001), {"sourceText": SOURCE_TEXT_TOO_LONG}),
        (
            CustomInputs("bad", "", "x" * 2001),
            {"validFrom": BAD_DATE, "sourceText": SOURCE_TEXT_TOO_LONG},
        ),
    ],
)
def test_bad_custom_inputs_say_what_is_wrong_by_field(inputs, errors):
    answer, found = custom_answer_parse(inputs)
    assert answer is None
    assert found == errors
    assert list(found) == list(errors)  # the order a single-message channel shows first


# --- the pipeline ---------------------------------------------------------------------------


def _slack_identity(user: str) -> ChatIdentity:
    return ChatIdentity.of_aliases(f"slack:T1:{user}", (AliasKind.SLACK_USER_ID, user))


def _tap(delivery: Any, identity: ChatIdentity, **fields: Any) -> CardTap:
    values: dict[str, Any] = {
        "channel": "slack",
        "identity": identity,
        "clarification_id": str(delivery.clarification_id),
        "nonce": delivery.nonce,
        "answer_index": 1,
    }
    return CardTap(**{**values, **fields})


@pytest.fixture
def card(submit, channel):
    """A clarification delivered to alice (slackUserId U0ALICE) by the fake channel."""
    clar = submit()
    run_worker()
    [delivery] = deliveries(clar, kind="question")
    return delivery


def test_a_tap_binds_the_identity_through_its_alias_and_answers(card):
    reply = card_tap_process(_tap(card, _slack_identity("U0ALICE"), action_id="cb-1"))
    assert reply.status == ANSWERED, reply
    assert reply.text.startswith("✓ Recorded as evidence")
    assert reply.delivery is not None and reply.delivery.pk == card.pk
    assert Clarification.objects.get(pk=card.clarification_id).state == State.ANSWERED
    assert CardAction.objects.get(action_id="cb-1").outcome == ANSWERED


def test_an_unmapped_identity_is_refused_before_anything_is_recorded(card, people):
    before, counts = snapshot_rows(), written_counts()
    reply = card_tap_process(_tap(card, _slack_identity("U0STRANGER"), action_id="cb-2"))
    assert (reply.status, reply.reason, reply.delivery) == (DROPPED, "UNMAPPED_IDENTITY", None)
    assert snapshot_rows() == before  # not even the CardAction row of the callback
    after = written_counts()
    assert after.pop("AuditEvent") == counts.pop("AuditEvent") + 1
    assert after == counts
    drop = events(Clarification.objects.get(pk=card.clarification_id))[-1]
    assert drop.detail == {
        "reason": "UNMAPPED_IDENTITY",
        "channel": "slack",
        "identity": "slack:T1:U0STRANGER",
    }


def test_an_alias_of_another_tenant_does_not_bind_here(card, globex):
    gina = globex.people["gina"]
    PersonAlias.objects.create(
        tenant=gina.tenant, person=gina, kind=AliasKind.SLACK_USER_ID, value="U0GINA"
    )
    before = snapshot_rows()
    reply = card_tap_process(_tap(card, _slack_identity("U0GINA")))
    assert (reply.status, reply.reason) == (DROPPED, "UNMAPPED_IDENTITY")
    assert snapshot_rows() == before


def test_an_unknown_nonce_is_audited_in_the_tenant_the_identity_maps_to(card):
    before = snapshot_rows()
    reply = card_tap_process(_tap(card, _slack_identity("U0ALICE"), nonce="forged-nonce"))
    assert (reply.status, reply.reason) == (DROPPED, "UNKNOWN_NONCE")
    assert snapshot_rows() == before
    event = AuditEvent.objects.order_by("id").last()
    assert event is not None
    assert (event.type, event.tenant_id, event.clarification_id) == (
        "card_action_dropped",
        card.tenant_id,
        None,
    )
    assert event.detail["identity"] == "slack:T1:U0ALICE"


def test_an_invalid_custom_answer_writes_and_audits_nothing(card):
    before, counts = snapshot_rows(), written_counts()
    tap = _tap(
        card,
        _slack_identity("U0ALICE"),
        answer_index=None,
        custom=CustomInputs("2026-07-01", "2026-06-12"),
        action_id="cb-3",
    )
    reply = card_tap_process(tap)
    assert (reply.status, reply.text, reply.errors) == (
        INVALID,
        END_NOT_AFTER_START,
        {"validTo": END_NOT_AFTER_START},
    )
    # Its card, for the channel to re-render with the error: the tapper is the recipient.
    assert reply.delivery is not None and reply.delivery.pk == card.pk
    assert snapshot_rows() == before and written_counts() == counts
    # Someone else's invalid submission gets no card of theirs to re-render.
    assert (
        card_tap_process(dataclasses.replace(tap, identity=_slack_identity("U0BOB"))).delivery
        is None
    )
    assert snapshot_rows() == before and written_counts() == counts


def test_verifying_a_tap_checks_without_answering(card, people):
    before = snapshot_rows()
    verified = card_tap_verify(_tap(card, _slack_identity("U0ALICE")))
    assert isinstance(verified, VerifiedTap)
    assert (verified.delivery.pk, verified.person.pk) == (card.pk, people["alice"].pk)
    refused = card_tap_verify(_tap(card, _slack_identity("U0BOB")))
    assert not isinstance(refused, VerifiedTap)
    assert (refused.status, refused.reason) == (DROPPED, "NOT_RECIPIENT")
    assert snapshot_rows() == before


# --- Block Kit: everything we build passes slack_sdk's validation ---------------------------


def _cards() -> list[Card]:
    base = Card(
        clarification_id=CID,
        nonce="n" * 32,
        question="When does “MSA <term>” & its renewal take effect? (from “MSA”)",
        buttons=[CardButton(0, "1 Oct 2026 (next quarter)"), CardButton(1, "x" * 200)],
        document_title="Master | services <agreement>",
        document_url="https://sharepoint.example/contracts/msa.docx",
    )
    return [
        base,
        dataclasses.replace(base, excerpt="takes effect " * 30, note="requires two confirmations."),
        dataclasses.replace(base, buttons=[CardButton(i, f"day {i}") for i in range(40)]),
        dataclasses.replace(base, question=RESTRICTED_CARD_TEXT, buttons=[], excerpt=""),
    ]


def _models(card: Card) -> list[list[Block]]:
    return [
        card_blocks(card),
        card_blocks(card, outcome="✓ Recorded as evidence: 1 Oct 2026, confirmed by Alice."),
        card_blocks(card, outcome="This clarification has moved on.", buttons=False),
    ]


def _view() -> View:
    return custom_answer_view(
        clarification_id=CID,
        nonce="n" * 32,
        message_ref="slack:D0ALICE:1700000000.000100",
        question="x" * 2000,
    )


def test_every_block_and_view_we_build_passes_slack_sdk_validation():
    """`to_dict()` runs slack_sdk's validators on every object and its parts; the JSON,
    parsed back into slack_sdk's models, validates again (what Slack gets is what was
    checked)."""
    for card in _cards():
        for blocks in _models(card):
            as_json = [block.to_dict() for block in blocks]
            assert [Block.parse(b).to_dict() for b in as_json] == as_json
            validate_message_blocks(as_json)
    view = _view().to_dict()
    assert View(**view).to_dict() == view
    assert {b["type"] for b in view["blocks"]} == {"section", "input"}


def test_every_message_we_send_passes_slack_sdk_validation():
    cards = _cards()
    many = [
        dataclasses.replace(cards[i % 3], clarification_id=str(uuid.uuid4())) for i in range(12)
    ]
    escalation = Escalation(
        CID, "Nobody could answer <this>.", "MSA & co", "https://d.example", "https://r.example"
    )
    messages = [
        digest_message(many[:3]),
        digest_message(many),
        escalation_message(escalation),
        ask_blocks("The MSA starts on *1 Oct 2026* <x>.", None),
        ask_blocks("y" * 4000, {"clarificationId": CID, "label": "Ask Olga Owner now?" * 9}),
    ]
    messages.append(ask_now_outcome_blocks(messages[-1], "Asked Olga."))
    for blocks in messages:
        validate_message_blocks(blocks)
        assert [Block.parse(b).to_dict() for b in blocks] == blocks
    assert len([b for b in digest_message(many) if b["type"] == "actions"]) == MAX_DIGEST_CARDS


def test_the_cards_of_a_delivered_clarification_pass_slack_sdk_validation(card):
    clar = Clarification.objects.get(pk=card.clarification_id)
    built = build_card(clar, card.nonce, excerpt_for_chat(clar))
    for shown in (built, gated_card(built, clar)[0]):
        for blocks in _models(shown):
            validate_message_blocks(message_blocks(blocks))
    validate_message_blocks(escalation_message(build_escalation(clar, [])))


def test_slack_sdk_refuses_what_slack_would_and_so_do_we():
    """The validation is real: invalid objects raise SlackObjectFormationError, and the
    message builder refuses them as BlockKitError (one of those)."""
    too_long = SectionBlock(text="x" * 3001)
    too_many = ActionsBlock(
        elements=[ButtonElement(text="b", action_id=f"a{i}", value="v") for i in range(26)]
    )
    long_header = HeaderBlock(text=PlainTextObject(text="h" * 151))
    long_button = ButtonElement(text="b" * 76, action_id="a", value="v")
    for invalid in (too_long, too_many, long_header, ActionsBlock(elements=[long_button])):
        with pytest.raises(SlackObjectFormationError):
            invalid.to_dict()
        with pytest.raises(BlockKitError):
            message_blocks([invalid])
    with pytest.raises(SlackObjectFormationError, match="title"):
        View(type="modal", title="t" * 25, blocks=[SectionBlock(text="x")]).to_dict()
    with pytest.raises(SlackObjectFormationError, match="private_metadata"):
        View(
            type="modal", title="t", private_metadata="m" * 3001, blocks=[SectionBlock(text="x")]
        ).to_dict()
    with pytest.raises(BlockKitError, match="actions block holds"):
        validate_message_blocks([{"type": "actions", "elements": []}])
    with pytest.raises(BlockKitError, match="duplicate action_id"):
        validate_message_blocks(
            [
                {
                    "type": "actions",
                    "elements": [
                        {
                            "type": "button",
                            "action_id": "a",
                            "text": {"type": "plain_text", "text": "b"},
                        }
                    ]
                    * 2,
                }
            ]
        )
    with pytest.raises(BlockKitError, match="at most 50 blocks"):
        validate_message_blocks([{"type": "divider"}] * 51)


# --- the shape: rules in delivery.actions, channels parse and render -------------------------

ADAPTERS = ["delivery/slack/hooks.py", "delivery/teams/hooks.py", "delivery/inbox/views.py"]
# What only the pipeline may do: answer, audit a refused tap, look a nonce up, bind an
# alias, parse a date input.
PIPELINE_ONLY = {
    "clarification_answer",
    "audit_event_append",
    "person_by_alias",
    "fromisoformat",
    "parse_us",
    "REVOKED",
}


def _nonce_lookups(tree: ast.AST) -> list[str]:
    """Queryset calls (`filter`, `get`, `exclude`) that look a row up by its nonce."""
    return [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("filter", "get", "exclude")
        for kw in node.keywords
        if kw.arg == "nonce" or (kw.arg or "").startswith("nonce__")
    ]


def _names(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.ImportFrom):
            found |= {a.name for a in node.names}
    return found


@pytest.mark.parametrize("path", ADAPTERS)
def test_a_channel_adapter_leaves_every_tap_rule_to_the_pipeline(path):
    tree = ast.parse((ROOT / path).read_text())
    assert _names(tree) & PIPELINE_ONLY == set()
    # No nonce lookups of its own: `Delivery.objects.filter(nonce=…)` is delivery_for_nonce.
    assert _nonce_lookups(tree) == []


def test_the_answer_service_is_called_from_one_function_of_the_delivery_app():
    callers = []
    for path in sorted((ROOT / "delivery").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and any(
                isinstance(n, ast.Call) and ast.unparse(n.func) == "clarification_answer"
                for n in ast.walk(fn)
            ):
                callers.append(f"{path.relative_to(ROOT)}:{fn.name}")
    assert callers == ["delivery/actions.py:_answer"]


def test_the_shape_checks_are_not_vacuous():
    source = (
        "from clarify.services import clarification_answer\n"
        "def view(d):\n"
        "    Delivery.objects.filter(nonce=d).first()\n"
        "    return date.fromisoformat(d)\n"
    )
    tree = ast.parse(source)
    assert _names(tree) & PIPELINE_ONLY == {"clarification_answer", "fromisoformat"}
    assert _nonce_lookups(tree) == ["Delivery.objects.filter(nonce=d)"]
    assert _nonce_lookups(ast.parse("Delivery.objects.filter(nonce_state=s)")) == []
