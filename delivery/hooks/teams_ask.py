"""Ask in chat on Teams (ASK_ENABLED), called from `delivery.hooks.teams.messages` after the
token is verified and the sender is bound to a person through a verified alias (an unmapped
sender never gets here).

* A `message` activity with text and no `value` is a question: `delivery.ask.respond` with
  channel "teams" (read-scoped, gated for chat) and the gated body posted back to the
  conversation with `delivery.channels.teams.post_activity`, with an "Ask <person> now?"
  card when the answer offers it and the gate let the body through.
* `{"kind": "ask_now", "clarificationId"}` — as an `adaptiveCard/action` invoke or as the
  `Action.Submit` fallback message — is `delivery.ask.ask_now`.

Only a personal (1:1) conversation gets an answer: one scoped to what the asker may read
must not be posted where others read along.
"""

import logging
import re
from typing import Any

from django.http import HttpResponse, JsonResponse

from ..channels.base import DeliveryError
from ..channels.teams import post_activity
from ..models import TeamsConversation
from ..provenance import RESTRICTED_TEASER, ProvenanceError
from ..teams_cards import SCHEMA, attachment

log = logging.getLogger("telha.audit")

ASK_NOW_KIND = "ask_now"
ASK_NOW_VERB = "clarify_ask_now"
NOT_PERSONAL_TEXT = "I answer questions in a 1:1 chat: send me a direct message."
EMPTY_TEXT = "Ask me about a fact, for example “when does the MSA start?”"
FAILED_TEXT = "Sorry, I couldn't answer that. Try again, or ask in your Telha inbox."
_AT = re.compile(r"<at>.*?</at>", re.S | re.I)


def handle(person: Any, activity: dict[str, Any]) -> HttpResponse | None:
    """The response for an ask-in-chat activity, or None when the activity is not one
    (the hook then carries on exactly as without ask in chat)."""
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
    answer_message(person, activity, text)
    return HttpResponse(status=200)


def _ask_now(person: Any, data: dict[str, Any]) -> str:
    from ..ask import ask_now

    return ask_now(requester=person, clarification_id=data.get("clarificationId"))


def answer_message(person: Any, activity: dict[str, Any], text: str) -> None:
    from ..ask import respond

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
    reply: dict[str, Any] = {"type": "message", "text": delivered, "textFormat": "plain"}
    if answer.ask_now and delivered != RESTRICTED_TEASER:
        reply["attachments"] = [attachment(ask_now_card(answer.ask_now))]
    _post(activity, reply)


def ask_now_card(offer: dict[str, Any]) -> dict[str, Any]:
    """The "Ask <person> now?" button: `Action.Execute` with an `Action.Submit` fallback."""
    data = {"kind": ASK_NOW_KIND, "clarificationId": str(offer["clarificationId"])}
    title = str(offer["label"])
    return {
        "type": "AdaptiveCard",
        "$schema": SCHEMA,
        "version": "1.5",
        "body": [{"type": "TextBlock", "text": title, "wrap": True}],
        "actions": [
            {
                "type": "Action.Execute",
                "title": title,
                "verb": ASK_NOW_VERB,
                "data": data,
                "fallback": {"type": "Action.Submit", "title": title, "data": data},
            }
        ],
    }


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
