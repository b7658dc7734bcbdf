"""Slack Block Kit for clarify cards: a small typed builder, the card / digest / escalation
renderings, the "Something else…" modal, and a guard that validates message payloads.

Block ids carry the clarification id (`clarify_<part>:<clarificationId>`), so one card's
blocks can be found and replaced inside a digest message. Message payloads never carry an
`input` block: inputs belong in modals only (`message_blocks` refuses them).
"""

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from .cards import SOMETHING_ELSE, Card, Escalation

JSON = dict[str, Any]

ANSWER_ACTION_PREFIX = "clarify_answer_"
SOMETHING_ELSE_ACTION = "clarify_something_else"
CUSTOM_CALLBACK_ID = "clarify_custom"
VALID_FROM_BLOCK = "valid_from"
VALID_TO_BLOCK = "valid_to"
SOURCE_TEXT_BLOCK = "source_text"
DATE_ACTION = "date"
TEXT_ACTION = "text"

# Block Kit limits (https://docs.slack.dev/reference/block-kit/).
MAX_MESSAGE_BLOCKS = 50
MAX_MODAL_BLOCKS = 100
MAX_ACTIONS_ELEMENTS = 25
MAX_CONTEXT_ELEMENTS = 10
MAX_BUTTON_TEXT = 75
MAX_BUTTON_VALUE = 2000
MAX_SECTION_TEXT = 3000
MAX_HEADER_TEXT = 150
MAX_ID = 255
MAX_MODAL_TITLE = 24
MAX_PRIVATE_METADATA = 3000
MESSAGE_BLOCK_TYPES = frozenset(
    {"section", "divider", "actions", "context", "header", "image", "rich_text", "markdown"}
)
SOURCE_TEXT_MAX = 2000


class BlockKitError(ValueError):
    """A payload Slack would refuse (or that must never be sent, like an input in a message)."""


def escape(text: str) -> str:
    """Escape the three characters Slack's mrkdwn gives control meaning."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def link(url: str, label: str) -> str:
    """A mrkdwn link; `|`, `<` and `>` cannot appear in either part."""
    safe_url = url.replace("|", "%7C").replace("<", "%3C").replace(">", "%3E")
    return f"<{safe_url}|{escape(label).replace('|', '¦')}>"


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- the typed builder -------------------------------------------------------------------


class Element(Protocol):
    def to_dict(self) -> JSON: ...


@dataclass(frozen=True)
class Text:
    text: str
    kind: Literal["plain_text", "mrkdwn"] = "mrkdwn"

    def to_dict(self) -> JSON:
        if self.kind == "plain_text":
            return {"type": "plain_text", "text": self.text, "emoji": True}
        return {"type": "mrkdwn", "text": self.text}


def plain(text: str) -> Text:
    return Text(text, "plain_text")


@dataclass(frozen=True)
class Button:
    text: str
    action_id: str
    value: str
    style: Literal["primary", "danger"] | None = None

    def to_dict(self) -> JSON:
        out: JSON = {
            "type": "button",
            "text": plain(clip(self.text, MAX_BUTTON_TEXT)).to_dict(),
            "action_id": self.action_id,
            "value": self.value,
        }
        if self.style:
            out["style"] = self.style
        return out


@dataclass(frozen=True)
class DatePicker:
    action_id: str
    placeholder: str = "Pick a date"

    def to_dict(self) -> JSON:
        return {
            "type": "datepicker",
            "action_id": self.action_id,
            "placeholder": plain(self.placeholder).to_dict(),
        }


@dataclass(frozen=True)
class PlainTextInput:
    action_id: str
    multiline: bool = False
    max_length: int | None = None
    placeholder: str | None = None

    def to_dict(self) -> JSON:
        out: JSON = {
            "type": "plain_text_input",
            "action_id": self.action_id,
            "multiline": self.multiline,
        }
        if self.max_length is not None:
            out["max_length"] = self.max_length
        if self.placeholder:
            out["placeholder"] = plain(self.placeholder).to_dict()
        return out


@dataclass(frozen=True)
class Section:
    text: Text
    block_id: str | None = None

    def to_dict(self) -> JSON:
        out: JSON = {"type": "section", "text": self.text.to_dict()}
        if self.block_id:
            out["block_id"] = self.block_id
        return out


@dataclass(frozen=True)
class Context:
    elements: Sequence[Text]
    block_id: str | None = None

    def to_dict(self) -> JSON:
        out: JSON = {"type": "context", "elements": [e.to_dict() for e in self.elements]}
        if self.block_id:
            out["block_id"] = self.block_id
        return out


@dataclass(frozen=True)
class Actions:
    elements: Sequence[Element]
    block_id: str | None = None

    def to_dict(self) -> JSON:
        out: JSON = {"type": "actions", "elements": [e.to_dict() for e in self.elements]}
        if self.block_id:
            out["block_id"] = self.block_id
        return out


@dataclass(frozen=True)
class Divider:
    def to_dict(self) -> JSON:
        return {"type": "divider"}


@dataclass(frozen=True)
class Header:
    text: str

    def to_dict(self) -> JSON:
        return {"type": "header", "text": plain(clip(self.text, MAX_HEADER_TEXT)).to_dict()}


@dataclass(frozen=True)
class Input:
    """An input block — valid in modals only, never in a message."""

    label: str
    element: Element
    block_id: str
    optional: bool = False
    hint: str | None = None

    def to_dict(self) -> JSON:
        out: JSON = {
            "type": "input",
            "block_id": self.block_id,
            "label": plain(self.label).to_dict(),
            "element": self.element.to_dict(),
            "optional": self.optional,
        }
        if self.hint:
            out["hint"] = plain(self.hint).to_dict()
        return out


@dataclass(frozen=True)
class Modal:
    title: str
    callback_id: str
    blocks: Sequence[Element]
    submit: str = "Record"
    close: str = "Cancel"
    private_metadata: str = ""
    extra: JSON = field(default_factory=dict)

    def to_dict(self) -> JSON:
        return {
            "type": "modal",
            "callback_id": self.callback_id,
            "title": plain(clip(self.title, MAX_MODAL_TITLE)).to_dict(),
            "submit": plain(self.submit).to_dict(),
            "close": plain(self.close).to_dict(),
            "private_metadata": self.private_metadata,
            "blocks": [b.to_dict() for b in self.blocks],
            **self.extra,
        }


# --- the guard ---------------------------------------------------------------------------


def _text_of(obj: Any) -> str:
    return str(obj.get("text", "")) if isinstance(obj, dict) else ""


def validate_message_blocks(blocks: Sequence[JSON]) -> None:
    """Refuse blocks that may not go into a `chat.postMessage` / `chat.update` payload:
    any `input` block (modals only), unknown block types, duplicate block ids, and the
    Block Kit size limits a card could plausibly hit."""
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
            if not isinstance(block_id, str) or not 0 < len(block_id) <= MAX_ID:
                raise BlockKitError(f"block {i}: block_id must be 1-{MAX_ID} characters")
            if block_id in block_ids:
                raise BlockKitError(f"block {i}: duplicate block_id {block_id!r}")
            block_ids.add(block_id)
        if kind == "section" and len(_text_of(block.get("text"))) > MAX_SECTION_TEXT:
            raise BlockKitError(f"block {i}: section text over {MAX_SECTION_TEXT} characters")
        if kind == "header" and len(_text_of(block.get("text"))) > MAX_HEADER_TEXT:
            raise BlockKitError(f"block {i}: header text over {MAX_HEADER_TEXT} characters")
        if kind == "context" and len(block.get("elements") or []) > MAX_CONTEXT_ELEMENTS:
            raise BlockKitError(f"block {i}: over {MAX_CONTEXT_ELEMENTS} context elements")
        if kind == "actions":
            _validate_actions(i, block.get("elements") or [])


def _validate_actions(i: int, elements: list[JSON]) -> None:
    if not 0 < len(elements) <= MAX_ACTIONS_ELEMENTS:
        raise BlockKitError(f"block {i}: an actions block holds 1-{MAX_ACTIONS_ELEMENTS} elements")
    action_ids: set[str] = set()
    for element in elements:
        action_id = element.get("action_id")
        if not isinstance(action_id, str) or not 0 < len(action_id) <= MAX_ID:
            raise BlockKitError(f"block {i}: action_id must be 1-{MAX_ID} characters")
        if action_id in action_ids:
            raise BlockKitError(f"block {i}: duplicate action_id {action_id!r}")
        action_ids.add(action_id)
        if element.get("type") == "button":
            if len(_text_of(element.get("text"))) > MAX_BUTTON_TEXT:
                raise BlockKitError(f"block {i}: button text over {MAX_BUTTON_TEXT} characters")
            if len(str(element.get("value", ""))) > MAX_BUTTON_VALUE:
                raise BlockKitError(f"block {i}: button value over {MAX_BUTTON_VALUE} characters")


def message_blocks(blocks: Iterable[Element | JSON]) -> list[JSON]:
    """Serialise blocks for a message payload, validated by `validate_message_blocks`."""
    out = [b if isinstance(b, dict) else b.to_dict() for b in blocks]
    validate_message_blocks(out)
    return out


def validate_modal(view: JSON) -> None:
    if view.get("type") != "modal":
        raise BlockKitError("a view must be a modal")
    if len(_text_of(view.get("title"))) > MAX_MODAL_TITLE:
        raise BlockKitError(f"a modal title is at most {MAX_MODAL_TITLE} characters")
    if len(view.get("blocks") or []) > MAX_MODAL_BLOCKS:
        raise BlockKitError(f"a modal holds at most {MAX_MODAL_BLOCKS} blocks")
    if len(str(view.get("private_metadata", ""))) > MAX_PRIVATE_METADATA:
        raise BlockKitError(f"private_metadata is at most {MAX_PRIVATE_METADATA} characters")


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


def card_blocks(card: Card, *, outcome: str = "", buttons: bool = True) -> list[Element]:
    """One card: the question, the excerpt and document link, the quorum note, the outcome
    copy once answered, and the candidate buttons plus "Something else…" while open."""
    cid = card.clarification_id
    context = [Text(f"“{escape(card.excerpt)}”")] if card.excerpt else []
    context.append(Text(link(card.document_url, card.document_title)))
    blocks: list[Element] = [
        Section(Text(f"*{escape(card.question)}*"), block_id=block_id("q", cid)),
        Context(context, block_id=block_id("ctx", cid)),
    ]
    if card.note:
        blocks.append(
            Context([Text(f":warning: {escape(card.note)}")], block_id=block_id("note", cid))
        )
    if outcome:
        blocks.append(Section(Text(escape(outcome)), block_id=block_id("out", cid)))
    if buttons and card.buttons:  # a restricted teaser has no candidates: nothing to tap
        elements: list[Element] = [
            Button(b.label, f"{ANSWER_ACTION_PREFIX}{b.index}", answer_value(card, b.index))
            for b in card.buttons[: MAX_ACTIONS_ELEMENTS - 1]
        ]
        elements.append(Button(SOMETHING_ELSE, SOMETHING_ELSE_ACTION, something_else_value(card)))
        blocks.append(Actions(elements, block_id=block_id("act", cid)))
    return blocks


def card_message(card: Card, *, outcome: str = "", buttons: bool = True) -> list[JSON]:
    return message_blocks(card_blocks(card, outcome=outcome, buttons=buttons))


def card_fallback(card: Card) -> str:
    """The notification / accessibility text of a card message."""
    return card.question


# header + 8 x (divider + at most 5 card blocks) + trailer: within 50 blocks, even after
# every card has gained its outcome block.
MAX_DIGEST_CARDS = 8


def digest_message(cards: Sequence[Card]) -> list[JSON]:
    """One message listing several cards (each clarification once), each with its own
    buttons; beyond `MAX_DIGEST_CARDS` the rest are pointed to the inbox."""
    unique = list({card.clarification_id: card for card in reversed(cards)}.values())[::-1]
    cards = unique
    shown = unique[:MAX_DIGEST_CARDS]
    blocks: list[Element] = [Header(f"{len(cards)} date questions for you")]
    for card in shown:
        blocks.append(Divider())
        blocks.extend(card_blocks(card))
    if len(cards) > len(shown):
        blocks.append(Context([Text(f"{len(cards) - len(shown)} more are waiting in your inbox.")]))
    return message_blocks(blocks)


def digest_fallback(cards: Sequence[Card]) -> str:
    return f"{len(cards)} date questions for you"


def escalation_message(escalation: Escalation) -> list[JSON]:
    """The redacted steward escalation: title, links and reasons, never span text, no
    answer buttons."""
    cid = escalation.clarification_id
    return message_blocks(
        [
            Section(Text(escape(escalation.text)), block_id=block_id("esc", cid)),
            Context(
                [
                    Text(link(escalation.document_url, escalation.document_title)),
                    Text(link(escalation.review_url, "Review the clarification")),
                ],
                block_id=block_id("esclinks", cid),
            ),
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


def custom_answer_modal(
    *, clarification_id: str, nonce: str, message_ref: str, question: str
) -> JSON:
    """The "Something else…" modal: valid from, valid to (optional), where it says so."""
    metadata = json.dumps(
        {"clarificationId": clarification_id, "nonce": nonce, "messageRef": message_ref}
    )
    view = Modal(
        title=SOMETHING_ELSE,
        callback_id=CUSTOM_CALLBACK_ID,
        private_metadata=metadata,
        blocks=[
            Section(Text(escape(question))),
            Input("Valid from", DatePicker(DATE_ACTION), block_id=VALID_FROM_BLOCK),
            Input(
                "Valid to",
                DatePicker(DATE_ACTION),
                block_id=VALID_TO_BLOCK,
                optional=True,
                hint="Leave empty if it has no end date.",
            ),
            Input(
                "Where does it say so?",
                PlainTextInput(TEXT_ACTION, multiline=True, max_length=SOURCE_TEXT_MAX),
                block_id=SOURCE_TEXT_BLOCK,
                optional=True,
            ),
        ],
    ).to_dict()
    validate_modal(view)
    return view
