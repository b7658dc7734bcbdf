"""`POST /hooks/teams/messages`: Bot Framework activities. The token is verified before
anything else; anything unverifiable is 401 and changes nothing."""

import json
import logging
from datetime import date
from typing import Any

from django.conf import settings
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from telha.common.parsers import json_problem
from telha.tenancy.models import AliasKind, PersonAlias

from ..actions import ANSWERED, INVALID, card_action_process
from ..cards import MOVED_ON, build_card
from ..models import Delivery, TeamsConversation
from ..restriction import excerpt_for_chat, gated_card
from ..teams_auth import TeamsAuthError, check_service_url, verify_token
from ..teams_cards import question_card
from . import teams_ask

log = logging.getLogger("telha.audit")
MAX_BODY_BYTES = 256 * 1024


def _unauthorized(reason: str) -> JsonResponse:
    return JsonResponse({"code": "UNAUTHENTICATED", "detail": reason}, status=401)


def person_for(activity: dict[str, Any]) -> Any:
    """The person behind an activity, through a verified alias only (teamsUserId, then
    aadOid); None when unmapped or ambiguous across tenants."""
    sender = activity.get("from") or {}
    for kind, value in (
        (AliasKind.TEAMS_USER_ID, sender.get("id")),
        (AliasKind.AAD_OID, sender.get("aadObjectId")),
    ):
        if not value:
            continue
        value = str(value) if kind == AliasKind.TEAMS_USER_ID else str(value).lower()
        matches = list(
            PersonAlias.objects.select_related("person__tenant").filter(
                kind=kind, value=value, person__erased_at__isnull=True
            )[:2]
        )
        if len(matches) == 1:
            return matches[0].person
        if len(matches) > 1:
            log.warning("teams identity %s maps to several people; ignored", kind)
            return None
    return None


PERSONAL = "personal"


def remember_conversation(person: Any, activity: dict[str, Any]) -> None:
    """Store (or refresh) the person's conversation reference for proactive cards. Only a
    personal (1:1) conversation qualifies: a card is never sent to a group chat or a
    channel, where others would see it. Unchanged references are not rewritten."""
    conversation = activity.get("conversation") or {}
    channel_data = activity.get("channelData") or {}
    if not conversation.get("id") or not activity.get("serviceUrl"):
        return
    if conversation.get("isGroup") or conversation.get("conversationType", PERSONAL) != PERSONAL:
        return
    fields = {
        "tenant": person.tenant,
        "conversation_id": str(conversation["id"])[:500],
        "service_url": str(activity["serviceUrl"])[:500],
        "teams_tenant_id": str((channel_data.get("tenant") or {}).get("id", ""))[:100],
        "user_id": str((activity.get("from") or {}).get("id", ""))[:200],
    }
    stored = TeamsConversation.objects.filter(person=person).first()
    if stored is not None and all(getattr(stored, k) == v for k, v in fields.items()):
        return
    TeamsConversation.objects.update_or_create(person=person, defaults=fields)


DATE_FORMAT_ERROR = "Dates must look like 2026-06-12."
START_REQUIRED_ERROR = "Pick the date it takes effect (a start date is required)."
ORDER_ERROR = "The end date must be after the start date."
SOURCE_TEXT_ERROR = "Where it says so: at most 2000 characters."


def _day(raw: Any) -> date | None:
    """An `Input.Date` value (`YYYY-MM-DD`; empty → None), or ValueError."""
    text = str(raw or "").strip()
    return date.fromisoformat(text) if text else None


def custom_answer(data: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The "Something else…" inputs (merged into the action data by Teams) as
    `answerCustom` (RFC 3339 dates at 00:00Z), or an error to show on the card. Checked
    here, before the answer path, so an invalid interval writes nothing."""
    try:
        start, end = _day(data.get("validFrom")), _day(data.get("validTo"))
    except ValueError:
        return None, DATE_FORMAT_ERROR
    source_text = data.get("sourceText")
    source_text = source_text.strip() if isinstance(source_text, str) else ""
    if start is None:
        return None, START_REQUIRED_ERROR
    if end is not None and end <= start:
        return None, ORDER_ERROR
    if len(source_text) > 2000:
        return None, SOURCE_TEXT_ERROR
    return {
        "validFrom": f"{start.isoformat()}T00:00:00Z",
        "validTo": f"{end.isoformat()}T00:00:00Z" if end else None,
        "sourceText": source_text or None,
    }, ""


def _refreshed_card(
    person: Any, nonce: str, outcome_text: str = "", error: str = ""
) -> dict[str, Any] | None:
    """The card of this nonce re-rendered for its recipient (None for anyone else), through
    the same restriction gate as the card that was sent."""
    delivery = (
        Delivery.objects.select_related(
            "clarification__source_version__source", "clarification__target"
        )
        .filter(nonce=nonce[:64])
        .first()
        if nonce
        else None
    )
    if delivery is None or person is None or delivery.person_id != person.pk:
        return None
    clar = delivery.clarification
    card, _ = gated_card(build_card(clar, delivery.nonce, excerpt_for_chat(clar)), clar)
    return question_card(card, outcome=outcome_text, error=error)


def handle_action(person: Any, data: dict[str, Any], activity: dict[str, Any]) -> dict[str, Any]:
    """A card action through the shared answer path; returns the invoke response body."""
    if not isinstance(data, dict) or data.get("kind") != "clarify_answer":
        return {
            "statusCode": 400,
            "type": "application/vnd.microsoft.error",
            "value": {"code": "BadRequest", "message": "Not a clarify action."},
        }
    nonce = str(data.get("nonce") or "")
    custom: dict[str, Any] | None = None
    if data.get("custom"):
        custom, error = custom_answer(data)
        if custom is None:
            return _card_response(_refreshed_card(person, nonce, error=error))
    outcome = card_action_process(
        channel="teams",
        actor=person,
        clarification_id=data.get("clarificationId"),
        nonce=nonce,
        answer_index=None if custom is not None else data.get("answerIndex"),
        answer_custom=custom,
        action_id=str(activity.get("id") or "")[:200] or None,
        message_ref=f"teams:{(activity.get('conversation') or {}).get('id', '')}:"
        f"{activity.get('replyToId', '')}"[:500],
        actor_identity=str((activity.get("from") or {}).get("id", "")),
    )
    if outcome.status == INVALID:
        return _card_response(_refreshed_card(person, nonce, error=outcome.text))
    if outcome.status == ANSWERED or outcome.text.startswith(MOVED_ON):
        return _card_response(_refreshed_card(person, nonce, outcome_text=outcome.text))
    return {
        "statusCode": 200,
        "type": "application/vnd.microsoft.activity.message",
        "value": outcome.text,
    }


def _card_response(card: dict[str, Any] | None) -> dict[str, Any]:
    if card is None:
        return {
            "statusCode": 200,
            "type": "application/vnd.microsoft.activity.message",
            "value": "This card can no longer be used.",
        }
    return {"statusCode": 200, "type": "application/vnd.microsoft.card.adaptive", "value": card}


@csrf_exempt
@require_POST
def messages(request: HttpRequest) -> HttpResponse:
    try:
        claims = verify_token(request.headers.get("Authorization", ""))
    except TeamsAuthError as exc:
        return _unauthorized(str(exc))
    if len(request.body) > MAX_BODY_BYTES:
        return JsonResponse(
            {"code": "PAYLOAD_TOO_LARGE", "detail": "Activity too large."}, status=413
        )
    try:
        activity = json.loads(request.body)
        if not isinstance(activity, dict):
            raise ValueError("not an object")
        if json_problem(activity) is not None:  # too deep, or U+0000 (PostgreSQL refuses it)
            raise ValueError("not a storable activity")
    except (ValueError, RecursionError):
        return JsonResponse(
            {"code": "MALFORMED_REQUEST", "detail": "Not a JSON activity."}, status=400
        )
    try:
        check_service_url(claims, activity)
    except TeamsAuthError as exc:
        return _unauthorized(str(exc))
    person = person_for(activity)
    kind = activity.get("type")
    if person is None:
        log.info(
            "unmapped teams identity %s (%s) submitted nothing",
            (activity.get("from") or {}).get("id"),
            kind,
        )
        if kind == "invoke":
            return JsonResponse(
                {
                    "statusCode": 200,
                    "type": "application/vnd.microsoft.activity.message",
                    "value": "Your Teams account is not linked to a person here.",
                }
            )
        return HttpResponse(status=200)
    with transaction.atomic():
        if kind in ("conversationUpdate", "message", "invoke"):
            remember_conversation(person, activity)
    if settings.ASK_ENABLED:  # ask in chat; off: nothing below changes (hooks/teams_ask.py)
        asked = teams_ask.handle(person, activity)
        if asked is not None:
            return asked
    if kind == "invoke" and activity.get("name") == "adaptiveCard/action":
        data = ((activity.get("value") or {}).get("action") or {}).get("data") or {}
        return JsonResponse(handle_action(person, data, activity))
    if kind == "message" and isinstance(activity.get("value"), dict):
        # The Action.Submit fallback: the outcome goes back as a reply in the conversation.
        _reply(person, handle_action(person, activity["value"], activity))
    return HttpResponse(status=200)


def _reply(person: Any, body: dict[str, Any]) -> None:
    from ..channels.base import DeliveryError
    from ..channels.teams import post_activity
    from ..teams_cards import attachment

    conversation = TeamsConversation.objects.filter(person=person).first()
    if conversation is None:
        return
    if body.get("type") == "application/vnd.microsoft.card.adaptive":
        activity: dict[str, Any] = {"type": "message", "attachments": [attachment(body["value"])]}
    else:
        activity = {"type": "message", "text": str(body.get("value", ""))}
    try:
        post_activity(conversation, activity)
    except DeliveryError:
        log.warning("could not reply to %s in Teams", person.pk)
