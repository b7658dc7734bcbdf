"""Adaptive Cards 1.5 for Teams: candidate buttons as `Action.Execute` with an
`Action.Submit` fallback, and "Something else…" with two `Input.Date` fields. The nonce
and clarification id ride in every action's data."""

from typing import Any

from django.conf import settings

from ..cards import SOMETHING_ELSE, Card, Escalation

SCHEMA = "http://adaptivecards.io/schemas/adaptive-card.json"


def _execute(title: str, data: dict[str, Any], style: str | None = None) -> dict[str, Any]:
    action: dict[str, Any] = {
        "type": "Action.Execute",
        "title": title,
        "verb": "clarify_answer",
        "data": data,
        "fallback": {"type": "Action.Submit", "title": title, "data": data},
    }
    if style:
        action["style"] = style
    return action


# A digest lists at most this many questions (the rest are pointed to the inbox), as on
# Slack: every item carries its own buttons and "Something else…" form, and a Teams
# message must stay well under its 28 KB payload limit.
MAX_DIGEST_CARDS = 8

CUSTOM_INPUTS = ("validFrom", "validTo", "sourceText")


def input_id(name: str, suffix: str = "") -> str:
    """The id of a "Something else…" input. Ids are unique within a card, so a digest
    suffixes each item's inputs with its clarification id (`validFrom:<id>`)."""
    return f"{name}:{suffix}" if suffix else name


def _card_body(card: Card, *, outcome: str, error: str) -> list[dict[str, Any]]:
    """The question, the excerpt, the quorum note, the document link, then the outcome copy
    or the error."""
    body: list[dict[str, Any]] = [
        {"type": "TextBlock", "text": card.question, "wrap": True, "weight": "Bolder"},
    ]
    if card.excerpt:
        body.append(
            {"type": "TextBlock", "text": f"“{card.excerpt}”", "wrap": True, "isSubtle": True}
        )
    if card.note:
        body.append({"type": "TextBlock", "text": card.note, "wrap": True, "color": "Attention"})
    body.append(
        {
            "type": "TextBlock",
            "text": f"[{card.document_title}]({card.document_url})",
            "wrap": True,
            "size": "Small",
        }
    )
    if outcome:
        body.append({"type": "TextBlock", "text": outcome, "wrap": True, "color": "Good"})
    elif error:
        body.append({"type": "TextBlock", "text": error, "wrap": True, "color": "Attention"})
    return body


def _card_actions(card: Card, *, suffix: str = "") -> list[dict[str, Any]]:
    """A button per candidate, then "Something else…" (a ShowCard with two `Input.Date`
    fields and where it says so); none for a restricted teaser, which has no candidates."""
    if not card.buttons:
        return []
    actions = [_execute(b.label, card.action(b.index)) for b in card.buttons]
    custom_data = {
        "kind": "clarify_answer",
        "clarificationId": card.clarification_id,
        "nonce": card.nonce,
        "custom": True,
    }
    actions.append(
        {
            "type": "Action.ShowCard",
            "title": SOMETHING_ELSE,
            "card": {
                "type": "AdaptiveCard",
                "body": [
                    {
                        "type": "Input.Date",
                        "id": input_id("validFrom", suffix),
                        "label": "Valid from",
                        "isRequired": True,
                        "errorMessage": "A start date is required.",
                    },
                    {
                        "type": "Input.Date",
                        "id": input_id("validTo", suffix),
                        "label": "Valid to (optional)",
                    },
                    {
                        "type": "Input.Text",
                        "id": input_id("sourceText", suffix),
                        "label": "Where does it say so?",
                        "maxLength": 2000,
                    },
                ],
                "actions": [_execute("Submit", custom_data, style="positive")],
            },
        }
    )
    return actions


def _adaptive(body: list[dict[str, Any]], actions: list[dict[str, Any]]) -> dict[str, Any]:
    card: dict[str, Any] = {"type": "AdaptiveCard", "$schema": SCHEMA, "version": "1.5"}
    card["body"] = body
    if actions:
        card["actions"] = actions
    return card


def question_card(card: Card, *, error: str = "", outcome: str = "") -> dict[str, Any]:
    """One question: once answered (`outcome`) the buttons are gone; an `error` (an invalid
    custom interval) keeps them so the person can correct it."""
    body = _card_body(card, outcome=outcome, error=error)
    return _adaptive(body, [] if outcome else _card_actions(card))


def digest_card(
    cards: list[Card],
    *,
    outcomes: dict[str, str] | None = None,
    errors: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Several questions in one message (each clarification once), each item with its own
    question, excerpt, document link, buttons and "Something else…"; beyond
    `MAX_DIGEST_CARDS` the rest are pointed to the inbox. `outcomes`/`errors` (by
    clarification id) re-render items after a tap: Teams replaces the whole message with
    the invoke response, so the refreshed digest must hold every item."""
    outcomes, errors = outcomes or {}, errors or {}
    by_clarification: dict[str, Card] = {}
    for card in cards:
        by_clarification.setdefault(card.clarification_id, card)
    unique = list(by_clarification.values())
    shown = unique[:MAX_DIGEST_CARDS]
    body: list[dict[str, Any]] = [
        {
            "type": "TextBlock",
            "text": f"{len(unique)} questions are waiting for you",
            "weight": "Bolder",
            "wrap": True,
        }
    ]
    for card in shown:
        cid = card.clarification_id
        outcome = outcomes.get(cid, "")
        items = _card_body(card, outcome=outcome, error=errors.get(cid, ""))
        actions = [] if outcome else _card_actions(card, suffix=cid)
        if actions:
            items.append({"type": "ActionSet", "actions": actions})
        body.append(
            {"type": "Container", "separator": True, "id": f"clarify:{cid}", "items": items}
        )
    if len(unique) > len(shown):
        body.append(
            {
                "type": "TextBlock",
                "text": f"{len(unique) - len(shown)} more are waiting in your "
                f"[Telha inbox]({settings.PUBLIC_BASE_URL}/inbox/).",
                "wrap": True,
                "separator": True,
            }
        )
    return _adaptive(body, [])


def escalation_card(escalation: Escalation) -> dict[str, Any]:
    return {
        "type": "AdaptiveCard",
        "$schema": SCHEMA,
        "version": "1.5",
        "body": [
            {"type": "TextBlock", "text": escalation.text, "wrap": True},
            {
                "type": "TextBlock",
                "text": f"[{escalation.document_title}]({escalation.document_url})",
                "wrap": True,
            },
        ],
        "actions": [{"type": "Action.OpenUrl", "title": "Review", "url": escalation.review_url}],
    }


def attachment(card: dict[str, Any]) -> dict[str, Any]:
    return {"contentType": "application/vnd.microsoft.card.adaptive", "content": card}
