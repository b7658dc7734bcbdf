"""Slack Block Kit for clarify cards, built with `slack_sdk.models`: the card / digest /
escalation renderings, the "Something else…" modal, the ask-in-chat answer, and the
message guard.

Every block is a `slack_sdk.models.blocks` object; `to_dict()` runs slack_sdk's own
validators (text, button, id and element-count limits), so a payload Slack would refuse
is never built. What slack_sdk cannot check on one block — that a *message* holds at
most 50 blocks, no `input` block (inputs belong in modals only), unique block ids, and
actions blocks with 1-25 elements of unique action ids — is `validate_message_blocks`.
Any refusal is a `BlockKitError`.

Block ids carry the clarification id (`clarify_<part>:<clarificationId>`), so one card's
blocks can be found and replaced inside a digest message.
"""

import json
from collections.abc import Iterable, Sequence
from typing import Any

from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    DatePickerElement,
    DividerBlock,
    HeaderBlock,
    InputBlock,
    MarkdownTextObject,
    PlainTextInputElement,
    PlainTextObject,
    SectionBlock,
)
from slack_sdk.models.views import View

from ..cards import SOMETHING_ELSE, Card, Escalation

JSON = dict[str, Any]

ANSWER_ACTION_PREFIX = "clarify_answer_"
SOMETHING_ELSE_ACTION = "clarify_something_else"
CUSTOM_CALLBACK_ID = "clarify_custom"
VALID_FROM_BLOCK = "valid_from"
VALID_TO_BLOCK = "valid_to"
SOURCE_TEXT_BLOCK = "source_text"
DATE_ACTION = "date"
TEXT_ACTION = "text"
ASK_NOW_ACTION = "clarify_ask_now"

# Block Kit limits a message adds to slack_sdk's per-block ones
# (https://docs.slack.dev/reference/block-kit/).
MAX_MESSAGE_BLOCKS = 50
MAX_ACTIONS_ELEMENTS = ActionsBlock.elements_max_length
MAX_BUTTON_TEXT = ButtonElement.text_max_length
MAX_SECTION_TEXT = SectionBlock.text_max_length
MAX_HEADER_TEXT = HeaderBlock.text_max_length
MAX_MODAL_TITLE = View.title_max_length
MESSAGE_BLOCK_TYPES = frozenset(
    {"section", "divider", "actions", "context", "header", "image", "rich_text", "markdown"}
)
SOURCE_TEXT_MAX = 2000


class BlockKitError(SlackObjectFormationError):
    """A payload Slack would refuse (slack_sdk's validation failed) or that must never be
    sent (an input block in a message)."""


def escape(text: str) -> str:
    """Escape the three characters Slack's mrkdwn gives control meaning."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def link(url: str, label: str) -> str:
    """A mrkdwn link; `|`, `<` and `>` cannot appear in either part."""
    safe_url = url.replace("|", "%7C").replace("<", "%3C").replace(">", "%3E")
    return f"<{safe_url}|{escape(label).replace('|', '¦')}>"


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def mrkdwn(text: str) -> MarkdownTextObject:
    return MarkdownTextObject(text=text)


def plain(text: str) -> PlainTextObject:
    return PlainTextObject(text=text, emoji=True)


def button(label: str, action_id: str, value: str, style: str | None = None) -> ButtonElement:
    """A button whose label is clipped to Slack's 75 characters (a long candidate label
    stays tappable)."""
    return ButtonElement(
        text=plain(clip(label, MAX_BUTTON_TEXT)), action_id=action_id, value=value, style=style
    )


def header(text: str) -> HeaderBlock:
    return HeaderBlock(text=plain(clip(text, MAX_HEADER_TEXT)))


# --- the guard ---------------------------------------------------------------------------


def _model_dict(block: Block) -> JSON:
    """A block object as JSON, through slack_sdk's validation."""
    try:
        return block.to_dict()
    except SlackObjectFormationError as exc:
        raise BlockKitError(str(exc)) from exc


def _validate_shown(i: int, block: JSON) -> None:
    """slack_sdk's validation of a block given as JSON (e.g. a message as a Slack payload
    shows it), parsed into its model."""
    try:
        model = Block.parse(dict(block))
        if model is not None:
            model.to_dict()
    except SlackObjectFormationError as exc:
        raise BlockKitError(f"block {i}: {exc}") from exc
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BlockKitError(f"block {i}: malformed block ({exc!r})") from exc


def _validate_message_shape(blocks: Sequence[JSON]) -> None:
    if len(blocks) > MAX_MESSAGE_BLOCKS:
        raise BlockKitError(f"a message holds at most {MAX_MESSAGE_BLOCKS} blocks")
    block_ids: set[str] = set()
    for i, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "input":
            raise BlockKitError(f"block {i}: input blocks are for modals, never messages")
        if kind not in MESSAGE_BLOCK_TYPES:
            raise BlockKitError(f"block {i}: {kind!r} is not a message block")
        block_id = block.get("block_id")
        if block_id is not None:
            if not isinstance(block_id, str) or not block_id:
                raise BlockKitError(f"block {i}: block_id must be a non-empty string")
            if block_id in block_ids:
                raise BlockKitError(f"block {i}: duplicate block_id {block_id!r}")
            block_ids.add(block_id)
        if kind == "actions":
            _validate_actions(i, block.get("elements") or [])


def _validate_actions(i: int, elements: list[JSON]) -> None:
    if not 0 < len(elements) <= MAX_ACTIONS_ELEMENTS:
        raise BlockKitError(f"block {i}: an actions block holds 1-{MAX_ACTIONS_ELEMENTS} elements")
    action_ids: set[str] = set()
    for element in elements:
        action_id = element.get("action_id") if isinstance(element, dict) else None
        if not isinstance(action_id, str) or not action_id:
            raise BlockKitError(f"block {i}: every action needs an action_id")
        if action_id in action_ids:
            raise BlockKitError(f"block {i}: duplicate action_id {action_id!r}")
        action_ids.add(action_id)


def validate_message_blocks(blocks: Sequence[JSON]) -> None:
    """Refuse blocks that may not go into a `chat.postMessage` / `chat.update` payload:
    any block slack_sdk's validation refuses, and what only a message rules out (see the
    module docstring)."""
    _validate_message_shape(blocks)
    for i, block in enumerate(blocks):
        _validate_shown(i, block)


def message_blocks(blocks: Iterable[Block | JSON]) -> list[JSON]:
    """Serialise blocks for a message payload: block objects through slack_sdk's
    validation, blocks given as JSON parsed and validated the same way, then the message
    rules of `validate_message_blocks`."""
    out: list[JSON] = []
    for i, block in enumerate(blocks):
        if isinstance(block, dict):
            _validate_shown(i, block)
            out.append(block)
        else:
            out.append(_model_dict(block))
    _validate_message_shape(out)
    return out


# --- clarify renderings ------------------------------------------------------------------


def block_id(part: str, clarification_id: str) -> str:
    return f"clarify_{part}:{clarification_id}"


def clarification_of_block(block: JSON) -> str | None:
    """The clarification id a card block belongs to, or None for other blocks."""
    value = block.get("block_id")
    if not isinstance(value, str) or not value.startswith("clarify_") or ":" not in value:
        return None
    return value.split(":", 1)[1]


def answer_value(card: Card, index: int) -> str:
    """The button value: exactly the card action payload of CONTRACT §3.5."""
    return json.dumps(card.action(index))


def something_else_value(card: Card) -> str:
    return json.dumps({"clarificationId": card.clarification_id, "nonce": card.nonce})


def card_blocks(card: Card, *, outcome: str = "", buttons: bool = True) -> list[Block]:
    """One card: the question, the excerpt and document link, the quorum note, the outcome
    copy once answered, and the candidate buttons plus "Something else…" while open."""
    cid = card.clarification_id
    context = [mrkdwn(f"“{escape(card.excerpt)}”")] if card.excerpt else []
    context.append(mrkdwn(link(card.document_url, card.document_title)))
    blocks: list[Block] = [
        SectionBlock(text=mrkdwn(f"*{escape(card.question)}*"), block_id=block_id("q", cid)),
        ContextBlock(elements=context, block_id=block_id("ctx", cid)),
    ]
    if card.note:
        note = mrkdwn(f":warning: {escape(card.note)}")
        blocks.append(ContextBlock(elements=[note], block_id=block_id("note", cid)))
    if outcome:
        blocks.append(SectionBlock(text=mrkdwn(escape(outcome)), block_id=block_id("out", cid)))
    if buttons and card.buttons:  # a restricted teaser has no candidates: nothing to tap
        elements = [
            button(b.label, f"{ANSWER_ACTION_PREFIX}{b.index}", answer_value(card, b.index))
            for b in card.buttons[: MAX_ACTIONS_ELEMENTS - 1]
        ]
        elements.append(button(SOMETHING_ELSE, SOMETHING_ELSE_ACTION, something_else_value(card)))
        blocks.append(ActionsBlock(elements=elements, block_id=block_id("act", cid)))
    return blocks


def card_message(card: Card, *, outcome: str = "", buttons: bool = True) -> list[JSON]:
    return message_blocks(card_blocks(card, outcome=outcome, buttons=buttons))


def card_fallback(card: Card) -> str:
    """The notification / accessibility text of a card message."""
    return card.question


# header + 8 x (divider + at most 5 card blocks) + trailer: within 50 blocks, even after
# every card has gained its outcome block.
MAX_DIGEST_CARDS = 8


def digest_header(count: int) -> HeaderBlock:
    return header(f"{count} date questions for you")


def digest_message(cards: Sequence[Card]) -> list[JSON]:
    """One message listing several cards (each clarification once), each with its own
    buttons; beyond `MAX_DIGEST_CARDS` the rest are pointed to the inbox."""
    unique = list({card.clarification_id: card for card in reversed(cards)}.values())[::-1]
    shown = unique[:MAX_DIGEST_CARDS]
    blocks: list[Block] = [digest_header(len(unique))]
    for card in shown:
        blocks.append(DividerBlock())
        blocks.extend(card_blocks(card))
    if len(unique) > len(shown):
        more = mrkdwn(f"{len(unique) - len(shown)} more are waiting in your inbox.")
        blocks.append(ContextBlock(elements=[more]))
    return message_blocks(blocks)


def digest_fallback(cards: Sequence[Card]) -> str:
    return f"{len(cards)} date questions for you"


def escalation_message(escalation: Escalation) -> list[JSON]:
    """The redacted steward escalation: title, links and reasons, never span text, no
    answer buttons."""
    cid = escalation.clarification_id
    links = [
        mrkdwn(link(escalation.document_url, escalation.document_title)),
        mrkdwn(link(escalation.review_url, "Review the clarification")),
    ]
    return message_blocks(
        [
            SectionBlock(text=mrkdwn(escape(escalation.text)), block_id=block_id("esc", cid)),
            ContextBlock(elements=links, block_id=block_id("esclinks", cid)),
        ]
    )


def replace_card(blocks: Sequence[JSON], clarification_id: str, new: Sequence[JSON]) -> list[JSON]:
    """`blocks` with the given card's blocks replaced by `new` (in place of the first one);
    other cards of a digest are kept verbatim."""
    out: list[JSON] = []
    inserted = False
    for block in blocks:
        if clarification_of_block(block) == clarification_id:
            if not inserted:
                out.extend(new)
                inserted = True
            continue
        out.append(block)
    if not inserted:
        out.extend(new)
    return out


def custom_answer_view(
    *, clarification_id: str, nonce: str, message_ref: str, question: str
) -> View:
    """The "Something else…" modal: valid from, valid to (optional), where it says so."""
    metadata = json.dumps(
        {"clarificationId": clarification_id, "nonce": nonce, "messageRef": message_ref}
    )
    date_placeholder = plain("Pick a date")
    return View(
        type="modal",
        callback_id=CUSTOM_CALLBACK_ID,
        title=plain(clip(SOMETHING_ELSE, MAX_MODAL_TITLE)),
        submit=plain("Record"),
        close=plain("Cancel"),
        private_metadata=metadata,
        blocks=[
            SectionBlock(text=mrkdwn(escape(question))),
            InputBlock(
                label=plain("Valid from"),
                element=DatePickerElement(action_id=DATE_ACTION, placeholder=date_placeholder),
                block_id=VALID_FROM_BLOCK,
                optional=False,
            ),
            InputBlock(
                label=plain("Valid to"),
                element=DatePickerElement(action_id=DATE_ACTION, placeholder=date_placeholder),
                block_id=VALID_TO_BLOCK,
                optional=True,
                hint=plain("Leave empty if it has no end date."),
            ),
            InputBlock(
                label=plain("Where does it say so?"),
                element=PlainTextInputElement(
                    action_id=TEXT_ACTION, multiline=True, max_length=SOURCE_TEXT_MAX
                ),
                block_id=SOURCE_TEXT_BLOCK,
                optional=True,
            ),
        ],
    )


def custom_answer_modal(
    *, clarification_id: str, nonce: str, message_ref: str, question: str
) -> JSON:
    """`custom_answer_view` as the `views.open` payload, validated by slack_sdk."""
    view = custom_answer_view(
        clarification_id=clarification_id, nonce=nonce, message_ref=message_ref, question=question
    )
    try:
        return view.to_dict()
    except SlackObjectFormationError as exc:
        raise BlockKitError(str(exc)) from exc


# --- ask in chat -------------------------------------------------------------------------


def ask_blocks(body: str, offer: dict[str, Any] | None) -> list[JSON]:
    """The answer as Block Kit: the (gated) body, and the "Ask <person> now?" button."""
    blocks: list[Block] = [SectionBlock(text=mrkdwn(clip(escape(body), MAX_SECTION_TEXT)))]
    if offer:
        value = json.dumps({"clarificationId": offer["clarificationId"]})
        ask = button(str(offer["label"]), ASK_NOW_ACTION, value, style="primary")
        blocks.append(ActionsBlock(elements=[ask], block_id=ASK_NOW_ACTION))
    return message_blocks(blocks)


def ask_now_outcome_blocks(shown: Sequence[Any], text: str) -> list[JSON]:
    """The "Ask <person> now?" message after the tap: its blocks without the button, and
    the outcome as a context line."""
    kept = [b for b in shown if isinstance(b, dict) and b.get("type") != "actions"]
    return message_blocks([*kept, ContextBlock(elements=[mrkdwn(escape(text))])])
