"""Adaptive Cards 1.5 for Teams: candidate buttons as `Action.Execute` with an
`Action.Submit` fallback, and "Something else…" with two `Input.Date` fields. The nonce
and clarification id ride in every action's data."""

from typing import Any

from .cards import SOMETHING_ELSE, Card, Escalation

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


def question_card(card: Card, *, error: str = "", outcome: str = "") -> dict[str, Any]:
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
        return {"type": "AdaptiveCard", "$schema": SCHEMA, "version": "1.5", "body": body}
    if error:
        body.append({"type": "TextBlock", "text": error, "wrap": True, "color": "Attention"})
    if not card.buttons:  # a restricted teaser has no candidates: nothing to tap
        return {"type": "AdaptiveCard", "$schema": SCHEMA, "version": "1.5", "body": body}
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
                        "id": "validFrom",
                        "label": "Valid from",
                        "isRequired": True,
                        "errorMessage": "A start date is required.",
                    },
                    {"type": "Input.Date", "id": "validTo", "label": "Valid to (optional)"},
                    {
                        "type": "Input.Text",
                        "id": "sourceText",
                        "label": "Where does it say so?",
                        "maxLength": 2000,
                    },
                ],
                "actions": [_execute("Submit", custom_data, style="positive")],
            },
        }
    )
    return {
        "type": "AdaptiveCard",
        "$schema": SCHEMA,
        "version": "1.5",
        "body": body,
        "actions": actions,
    }


def digest_card(cards: list[Card]) -> dict[str, Any]:
    body: list[dict[str, Any]] = [
        {
            "type": "TextBlock",
            "text": f"{len(cards)} questions are waiting for you",
            "weight": "Bolder",
            "wrap": True,
        }
    ]
    for card in cards:
        body.append(
            {
                "type": "Container",
                "separator": True,
                "items": [
                    {"type": "TextBlock", "text": card.question, "wrap": True},
                    {
                        "type": "ActionSet",
                        "actions": [_execute(b.label, card.action(b.index)) for b in card.buttons],
                    },
                ],
            }
        )
    return {"type": "AdaptiveCard", "$schema": SCHEMA, "version": "1.5", "body": body}


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
