"""Ask in chat on Teams (ASK_ENABLED), called from `delivery.teams.hooks.messages` after the
token is verified and the sender is bound to a person through a verified alias (an unmapped
sender never gets here).

* A `message` activity with text and no `value` is a question: `delivery.ask.services.respond` with
  channel "teams" (read-scoped, gated for chat) and the answer posted back to the
  conversation with `delivery.teams.channel.post_activity`: when the gate let the body
  through, as an Adaptive Card (the answer, each cited fact with its verdict, count, caveat
  and "Open full trace", the verification counts, "Ask <person> now?") whose
  `fallbackText` is the plain-text body; when it did not, the static teaser as text only.
* `{"kind": "ask_now", "clarificationId"}` — as an `adaptiveCard/action` invoke or as the
  `Action.Submit` fallback message — is `delivery.ask.services.ask_now`.

Only a personal (1:1) conversation gets an answer: one scoped to what the asker may read
must not be posted where others read along.
"""

import logging
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from django.http import HttpResponse, JsonResponse

from tenancy.models import Person

from ..channels.base import DeliveryError
from ..models import TeamsConversation
from ..provenance import RESTRICTED_TEASER, ProvenanceError, gate_outbound
from .adaptive import SCHEMA, attachment
from .channel import post_activity

if TYPE_CHECKING:
    from ..ask.services import AskAnswer

log = logging.getLogger("telha.audit")

ASK_NOW_KIND = "ask_now"
ASK_NOW_VERB = "clarify_ask_now"
NOT_PERSONAL_TEXT = "I answer questions in a 1:1 chat: send me a direct message."
EMPTY_TEXT = "Ask me about a fact, for example “when does the MSA start?”"
SEVERAL_WORKSPACES_TEXT = (
    "Your Teams account is linked to people in several Telha workspaces, so I can't tell "
    "whose facts to answer from. Ask in your Telha inbox."
)
FAILED_TEXT = "Sorry, I couldn't answer that. Try again, or ask in your Telha inbox."
_AT = re.compile(r"<at>.*?</at>", re.S | re.I)


def handle(person: Person | None, activity: dict[str, Any]) -> HttpResponse | None:
    """The response for an ask-in-chat activity, or None when the activity is not one
    (the hook then carries on exactly as without ask in chat). `person` is None when the
    sender is a person in several workspaces and the activity names none: a question is
    then not answered (an "Ask now" names its clarification, hence its workspace)."""
    kind = activity.get("type")
    if kind == "invoke" and activity.get("name") == "adaptiveCard/action":
        data = ((activity.get("value") or {}).get("action") or {}).get("data")
        if isinstance(data, dict) and data.get("kind") == ASK_NOW_KIND:
            return JsonResponse(
                {
                    "statusCode": 200,
                    "type": "application/vnd.microsoft.activity.message",
                    "value": _ask_now(person, data),
                }
            )
        return None
    if kind != "message":
        return None
    value = activity.get("value")
    if isinstance(value, dict):
        if value.get("kind") != ASK_NOW_KIND:
            return None
        _post(activity, {"type": "message", "text": _ask_now(person, value)})
        return HttpResponse(status=200)
    text = activity.get("text")
    if value is not None or not isinstance(text, str) or not text.strip():
        return None
    if person is None:
        log.info("teams ask from a sender of several workspaces; nothing answered")
        _post(activity, {"type": "message", "text": SEVERAL_WORKSPACES_TEXT})
        return HttpResponse(status=200)
    answer_message(person, activity, text)
    return HttpResponse(status=200)


def _ask_now(person: Person | None, data: dict[str, Any]) -> str:
    from ..ask.services import NOTHING_TO_ASK, ask_now

    if person is None:
        return NOTHING_TO_ASK
    return ask_now(requester=person, clarification_id=data.get("clarificationId"))


def answer_message(person: Person, activity: dict[str, Any], text: str) -> None:
    from ..ask.services import respond

    conversation_type = (activity.get("conversation") or {}).get("conversationType")
    if conversation_type not in (None, "", "personal"):
        _post(activity, {"type": "message", "text": NOT_PERSONAL_TEXT})
        return
    question = _AT.sub(" ", text).strip()[:1000]
    if not question:
        _post(activity, {"type": "message", "text": EMPTY_TEXT})
        return
    try:
        delivered, answer = respond(person=person, question=question, channel="teams")
    except ProvenanceError:  # the turn failed closed: nothing recorded, nothing crosses
        log.exception("teams ask failed for %s", person.pk)
        _post(activity, {"type": "message", "text": FAILED_TEXT})
        return
    _post(activity, answer_reply(delivered, answer))


def answer_reply(delivered: str, answer: "AskAnswer") -> dict[str, Any]:
    """The reply activity: the evidence card when the gate let the body through (and the
    card itself passes the same gate), else the gated text alone."""
    plain: dict[str, Any] = {"type": "message", "text": delivered, "textFormat": "plain"}
    if delivered == RESTRICTED_TEASER:
        return plain
    card = answer_card(answer, fallback=delivered)
    card_text = "\n".join(_strings(card))
    gate = gate_outbound(card_text, answer.provenance, answer.excerpts_in(card_text))
    if not gate.allowed:  # never expected (the card says what the body says); fail closed
        log.warning("teams ask: the evidence card was blocked (%s); sent as text", gate.reason)
        return plain
    return {
        "type": "message",
        "summary": answer.text[:200],
        "attachments": [attachment(card)],
    }


def _text(text: str, **style: Any) -> dict[str, Any]:
    return {"type": "TextBlock", "text": text, "wrap": True, **style}


def answer_card(answer: "AskAnswer", *, fallback: str) -> dict[str, Any]:
    """The evidence card as an Adaptive Card 1.5: the answer (with the top fact's caveat),
    each cited fact with its validity, verdict, confirmation count, caveat (when pending)
    and an "Open full trace" link, the verification counts, and "Ask <person> now?".
    `fallbackText` is the plain-text rendering, for clients that cannot show the card."""
    from ..ask.services import ask_now_text, verification_counts

    body: list[dict[str, Any]] = [_text(answer.text, weight="Bolder")]
    for i, e in enumerate(answer.evidence):
        facts = [
            {"title": "Valid", "value": e.valid},
            {"title": "Verdict", "value": e.verdict},
            {"title": "Confirmations", "value": str(e.confirmations)},
        ]
        items: list[dict[str, Any]] = [
            _text(e.name, weight="Bolder"),
            {"type": "FactSet", "facts": facts},
        ]
        if e.caveat and i:  # the top fact's caveat is in the answer above
            items.append(_text(e.caveat, color="Warning", size="Small"))
        items.append(
            {
                "type": "ActionSet",
                "actions": [
                    {"type": "Action.OpenUrl", "title": "Open full trace", "url": e.trace_url}
                ],
            }
        )
        body.append({"type": "Container", "separator": True, "items": items})
    if answer.evidence:
        body.append(_text(f"Verification: {verification_counts(answer)}", isSubtle=True))
    card: dict[str, Any] = {
        "type": "AdaptiveCard",
        "$schema": SCHEMA,
        "version": "1.5",
        "fallbackText": fallback,
        "body": body,
    }
    if answer.ask_now:
        offer = answer.ask_now
        data = {"kind": ASK_NOW_KIND, "clarificationId": str(offer["clarificationId"])}
        title = str(offer["label"])
        body.append(_text(ask_now_text(offer), size="Small"))
        card["actions"] = [
            {
                "type": "Action.Execute",
                "title": title,
                "verb": ASK_NOW_VERB,
                "data": data,
                "fallback": {"type": "Action.Submit", "title": title, "data": data},
            }
        ]
    return card


def _strings(value: Any) -> Iterator[str]:
    """Every string in a card (what the delivery gate reads)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _post(activity: dict[str, Any], reply: dict[str, Any]) -> None:
    """Post to the conversation the activity came from (its serviceUrl was checked
    against the token before the hook got here)."""
    conversation = TeamsConversation(
        conversation_id=str((activity.get("conversation") or {}).get("id") or "")[:500],
        service_url=str(activity.get("serviceUrl") or "")[:500],
    )
    if not conversation.conversation_id or not conversation.service_url:
        return
    try:
        post_activity(conversation, reply)
    except DeliveryError as exc:
        log.warning("could not post an ask-in-chat reply in Teams: %s", exc)
