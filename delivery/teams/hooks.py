"""`POST /hooks/teams/messages`: Bot Framework activities, a channel adapter. The token
is verified before anything else; anything unverifiable is 401 and changes nothing.

A card action (an `adaptiveCard/action` invoke, or the `Action.Submit` fallback message)
is parsed into a `delivery.actions.CardTap` — the sender bound to a person through a
verified alias (`teamsUserId`, then `aadOid`) in the card's tenant, the action's data and
its "Something else…" inputs — and the `CardReply` rendered as the invoke response (the
card re-rendered as it now stands, or a message). The checks are
`delivery.actions.card_tap_process`, the path every channel shares."""

import json
import logging
import uuid
from typing import Any

from django.conf import settings
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from clarify.models import Clarification
from common.parsers import json_problem
from tenancy.models import AliasKind, Person, Tenant

from ..actions import (
    ANSWERED,
    DROPPED_TEXT,
    INVALID,
    MOVED,
    CardReply,
    CardTap,
    CustomInputs,
    card_tap_process,
    delivery_for_nonce,
    unmapped_refuse,
)
from ..cards import Card, shown_outcome
from ..digests import digest_siblings
from ..hooks.errors import hook_malformed, hook_unauthenticated
from ..hooks.guard import teams_activity_problem
from ..hooks.ratelimit import rate_limit_hit, too_many_requests
from ..identity import ChatIdentity
from ..models import Delivery, TeamsConversation
from ..restriction import card_as_it_stands
from . import ask_hook
from .adaptive import MAX_DIGEST_CARDS, digest_card, input_id, question_card
from .auth import TeamsAuthError, check_activity, verify_token

log = logging.getLogger("telha.audit")
CHANNEL = "teams"
UNMAPPED_TEXT = "Your Teams account is not linked to a person here."


def _sender_aliases(activity: dict[str, Any]) -> list[tuple[str, str]]:
    """The sender's identities an alias can verify, in binding order."""
    sender = activity.get("from") or {}
    return [
        (kind, value)
        for kind, value in (
            (AliasKind.TEAMS_USER_ID, sender.get("id")),
            (AliasKind.AAD_OID, sender.get("aadObjectId")),
        )
        if isinstance(value, str) and value.strip()
    ]


def teams_identity(activity: dict[str, Any]) -> ChatIdentity:
    """The sender as an identity: bound to a person only through their verified aliases."""
    return ChatIdentity.of_aliases(identity_of(activity), *_sender_aliases(activity))


def person_for(activity: dict[str, Any], tenant: Tenant) -> Person | None:
    """The tenant's person behind an activity, through a verified alias only
    (`teamsUserId`, then `aadOid`); None when unmapped in that tenant."""
    return teams_identity(activity).person_in(tenant)


def people_for(activity: dict[str, Any]) -> list[Person]:
    """Every person the sender is, at most one per tenant (`ChatIdentity.people`)."""
    return teams_identity(activity).people()


def teams_tenant_of(activity: dict[str, Any]) -> str:
    """The Azure AD tenant id Teams sends (`channelData.tenant.id`)."""
    channel_data = activity.get("channelData") or {}
    tenant = channel_data.get("tenant") if isinstance(channel_data, dict) else None
    return str((tenant or {}).get("id") or "")[:100] if isinstance(tenant, dict) else ""


def asker_for(activity: dict[str, Any], people: list[Person]) -> Person | None:
    """The one person a tenant-less activity (a question) speaks for: the only one, or
    the only one whose workspace has conversation references in the sender's Azure AD
    tenant. None when that still leaves several: which workspace to answer from cannot
    be told, so nothing is answered."""
    if len(people) <= 1:
        return people[0] if people else None
    aad = teams_tenant_of(activity)
    linked = set(
        TeamsConversation.objects.filter(
            teams_tenant_id=aad, tenant__in=[p.tenant_id for p in people]
        ).values_list("tenant_id", flat=True)
    )
    narrowed = [p for p in people if p.tenant_id in linked] if aad else []
    return narrowed[0] if len(narrowed) == 1 else None


def action_data(activity: dict[str, Any]) -> dict[str, Any] | None:
    """The data of a card action: an `adaptiveCard/action` invoke's, or the `value` of
    the `Action.Submit` fallback message; None for anything else."""
    if activity.get("type") == "invoke" and activity.get("name") == "adaptiveCard/action":
        value = activity.get("value")
        action = value.get("action") if isinstance(value, dict) else None
        data = action.get("data") if isinstance(action, dict) else None
        return data if isinstance(data, dict) else {}
    if activity.get("type") == "message" and isinstance(activity.get("value"), dict):
        return dict(activity["value"])
    return None


def delivery_of(data: dict[str, Any] | None) -> Delivery | None:
    """The delivery record a card action's nonce belongs to (hence its tenant), or None."""
    return delivery_for_nonce(data.get("nonce") if data else None)


def _tenant_of_ask_now(data: dict[str, Any] | None) -> Tenant | None:
    """The tenant of the clarification an "Ask <person> now?" action names (ask in chat)."""
    if not settings.ASK_ENABLED or not data or data.get("kind") != ask_hook.ASK_NOW_KIND:
        return None
    try:
        pk = uuid.UUID(str(data.get("clarificationId")))
    except ValueError:
        return None
    clar = Clarification.objects.select_related("tenant").filter(pk=pk).first()
    return clar.tenant if clar is not None else None


def identity_of(activity: dict[str, Any]) -> str:
    return f"teams:{teams_tenant_of(activity)}:{(activity.get('from') or {}).get('id', '')}"[:100]


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


def custom_inputs(data: dict[str, Any]) -> CustomInputs:
    """The "Something else…" inputs Teams merged into the action data (a digest item's
    inputs carry its clarification id: `validFrom:<id>`)."""
    suffix = str(data.get("clarificationId") or "")

    def field(name: str) -> Any:
        suffixed = input_id(name, suffix)
        return data.get(suffixed) if suffixed in data else data.get(name)

    source_text = field("sourceText")
    return CustomInputs(
        valid_from=str(field("validFrom") or ""),
        valid_to=str(field("validTo") or ""),
        source_text=source_text if isinstance(source_text, str) else "",
    )


def _digest_siblings(delivery: Delivery) -> list[Delivery]:
    """The questions sent in the same Teams message as this one (`digest_siblings`)."""
    if not delivery.message_ref.startswith("teams:"):
        return [delivery]
    return digest_siblings(delivery, MAX_DIGEST_CARDS)


def _refreshed_card(
    delivery: Delivery | None, outcome_text: str = "", error: str = ""
) -> dict[str, Any] | None:
    """The message of the tapped card re-rendered for its recipient (None when the tap
    named no card of theirs), through the same restriction gate as what was sent. Teams
    replaces the whole message with it, so a digest comes back whole: the tapped item with
    its outcome or error, the others as they now stand (buttons while open and
    answerable, "moved on" once closed or once their nonce was revoked, e.g. by a
    re-ask)."""
    if delivery is None:
        return None
    siblings = _digest_siblings(delivery)
    if len(siblings) <= 1:
        card, _ = card_as_it_stands(delivery)
        return question_card(card, outcome=outcome_text, error=error)
    cards: list[Card] = []
    outcomes: dict[str, str] = {}
    for sibling in siblings:
        card, answers = card_as_it_stands(sibling)
        cards.append(card)
        mine = sibling.pk == delivery.pk
        outcomes[card.clarification_id] = outcome_text if mine else shown_outcome("", answers)
    errors = {str(delivery.clarification_id): error} if error else {}
    return digest_card(cards, outcomes=outcomes, errors=errors)


def card_tap_of(
    person: Person, data: dict[str, Any], activity: dict[str, Any], delivery: Delivery | None
) -> CardTap:
    """A card action as a tap by the (already bound) person on `delivery`, the record its
    nonce names (`delivery_of`: read once a tap)."""
    custom = custom_inputs(data) if data.get("custom") else None
    conversation = (activity.get("conversation") or {}).get("id", "")
    return CardTap(
        channel=CHANNEL,
        identity=ChatIdentity.of_person(person, identity_of(activity)),
        clarification_id=data.get("clarificationId"),
        nonce=str(data.get("nonce") or ""),
        answer_index=None if custom is not None else data.get("answerIndex"),
        custom=custom,
        action_id=str(activity.get("id") or "")[:200] or None,
        message_ref=f"teams:{conversation}:{activity.get('replyToId', '')}"[:500],
        delivery=delivery,
    )


def reply_body(reply: CardReply) -> dict[str, Any]:
    """The invoke response for a tap's reply: the card re-rendered with the error or the
    outcome, else the refusal as a message."""
    if reply.status == INVALID:
        return _card_response(_refreshed_card(reply.delivery, error=reply.text))
    if reply.status in (ANSWERED, MOVED):
        return _card_response(_refreshed_card(reply.delivery, outcome_text=reply.text))
    return _message_body(reply.text)


def handle_action(
    person: Any, data: dict[str, Any], activity: dict[str, Any], delivery: Delivery | None
) -> dict[str, Any]:
    """A card action through the shared tap path; returns the invoke response body."""
    if not isinstance(data, dict) or data.get("kind") != "clarify_answer":
        return {
            "statusCode": 400,
            "type": "application/vnd.microsoft.error",
            "value": {"code": "BadRequest", "message": "Not a clarify action."},
        }
    return reply_body(card_tap_process(card_tap_of(person, data, activity, delivery)))


def _message_body(text: str) -> dict[str, Any]:
    return {"statusCode": 200, "type": "application/vnd.microsoft.activity.message", "value": text}


def _card_response(card: dict[str, Any] | None) -> dict[str, Any]:
    if card is None:
        return _message_body(DROPPED_TEXT)
    return {"statusCode": 200, "type": "application/vnd.microsoft.card.adaptive", "value": card}


@csrf_exempt
@require_POST
def messages(request: HttpRequest) -> HttpResponse:
    """Order: the token (401 UNAUTHENTICATED, as on every hook), the body (400; one over
    `HOOK_MAX_BODY_BYTES` was refused 413 before it was read), the service URL and the
    key's endorsement of the activity's channel (401), the per-tenant rate limit (429),
    identity binding, then the activity."""
    try:
        token = verify_token(request.headers.get("Authorization", ""))
    except TeamsAuthError as exc:
        return hook_unauthenticated(str(exc))
    try:
        activity = json.loads(request.body)
        if not isinstance(activity, dict):
            raise ValueError("not an object")
        if json_problem(activity) is not None:  # too deep, or U+0000 (PostgreSQL refuses it)
            raise ValueError("not a storable activity")
        if teams_activity_problem(activity) is not None:  # not shaped as Teams sends it
            raise ValueError("not an activity")
    except (ValueError, RecursionError):
        return hook_malformed("Not a JSON activity.")
    try:
        check_activity(token, activity)
    except TeamsAuthError as exc:
        return hook_unauthenticated(str(exc))
    kind = activity.get("type")
    data = action_data(activity)
    delivery = delivery_of(data)
    tenant = delivery.tenant if delivery is not None else _tenant_of_ask_now(data)
    # Per tenant, counted only once verified (forged requests spend their IP's budget):
    # the workspace of the card's delivery when the action names one, else the Azure AD
    # tenant the activity comes from.
    aad = teams_tenant_of(activity)
    budget = str(tenant.pk) if tenant is not None else f"teams-tenant:{aad}" if aad else ""
    retry_after = rate_limit_hit("tenant", budget) if budget else None
    if retry_after is not None:
        return too_many_requests(retry_after, "tenant")
    if tenant is not None:
        person = person_for(activity, tenant)
        people = [person] if person is not None else []
    else:
        people = people_for(activity)
        person = asker_for(activity, people)
    if not people:
        return _unmapped(activity, delivery)
    with transaction.atomic():
        if kind in ("conversationUpdate", "message", "invoke"):
            for someone in people:  # each workspace's verified alias binds its own person
                remember_conversation(someone, activity)
    if settings.ASK_ENABLED:  # ask in chat; off: nothing below changes (hooks/ask_hook.py)
        # A person deprovisioned by the identity provider asks nothing.
        asker = person if person is not None and person.deactivated_at is None else None
        asked = ask_hook.handle(asker, activity)
        if asked is not None:
            return asked
    if data is None:
        return HttpResponse(status=200)
    if person is None:
        # A card action carries its nonce; one without a known delivery from a sender of
        # several workspaces is dropped, as an unknown nonce is.
        log.info(
            "teams card action without a known delivery from %s dropped", identity_of(activity)
        )
        return JsonResponse(_card_response(None)) if kind == "invoke" else HttpResponse(status=200)
    if kind == "invoke":
        return JsonResponse(handle_action(person, data, activity, delivery))
    # The Action.Submit fallback: the outcome goes back as a reply in the conversation.
    _reply(person, handle_action(person, data, activity, delivery))
    return HttpResponse(status=200)


def _unmapped(activity: dict[str, Any], delivery: Delivery | None) -> HttpResponse:
    """An identity no verified alias binds (in the card's workspace, when the action names
    a delivery): refused as on every channel (`unmapped_refuse`)."""
    unmapped_refuse(delivery, CHANNEL, teams_identity(activity))
    if activity.get("type") == "invoke":
        return JsonResponse(_message_body(UNMAPPED_TEXT))
    return HttpResponse(status=200)


def _reply(person: Any, body: dict[str, Any]) -> None:
    from ..channels.base import DeliveryError
    from .adaptive import attachment
    from .channel import post_activity

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
