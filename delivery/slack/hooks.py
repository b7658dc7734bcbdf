"""Slack hooks (CONTRACT §3.5) through slack-bolt's Django adapter: a channel adapter.

`POST /hooks/slack/interactivity` and `POST /hooks/slack/events`. Order for every request:

1. per-IP rate limit (`ratelimit.hook_rate_limited`, in the URLconf) — before the body is read;
2. the Slack signature and timestamp (`v0:` HMAC, 300 s window) over the raw body — 401 and
   nothing parsed or written otherwise (Bolt verifies again as its first middleware);
3. the payload guard (`guard.slack_payload_problem`: too deep, U+0000) — 400;
4. Bolt: our `before_authorize` middleware applies the per-tenant rate limit and drops
   already-seen event ids (Slack retries, `X-Slack-Retry-Num`), `authorize` returns the bot
   token without calling `auth.test`, then the listener: ack → parse → process → render.

A card listener only parses the interaction into a `delivery.actions.CardTap` (the Slack
user as a `slackUserId` alias identity, the button value or the modal's metadata and
date inputs) and renders the `CardReply` (`chat.update` of the card, or the modal's
field errors). Identity binding, the nonce, recipient and replay checks, the custom
interval, "moved on" and the audit of refused taps are `delivery.actions.card_tap_process`,
the path every channel shares.
"""

import hashlib
import json
import logging
import re
import threading
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from slack_bolt import App, BoltContext, BoltRequest, BoltResponse
from slack_bolt.adapter.django import SlackRequestHandler
from slack_bolt.authorization import AuthorizeResult
from slack_sdk import WebClient
from slack_sdk.errors import SlackClientError
from slack_sdk.models.blocks import Block, DividerBlock
from slack_sdk.signature import SignatureVerifier

from clarify.models import Clarification
from common.codes import HookError, TapRefusal
from tenancy.models import AliasKind, Person, Tenant

from ..actions import (
    ANSWERED,
    DROPPED,
    INVALID,
    MOVED,
    SOURCE_TEXT,
    VALID_FROM,
    VALID_TO,
    CardReply,
    CardTap,
    CustomInputs,
    VerifiedTap,
    card_tap_process,
    card_tap_refuse,
    card_tap_verify,
    delivery_for_nonce,
)
from ..cards import build_card, shown_outcome
from ..digests import digest_siblings
from ..hooks.errors import hook_error, hook_malformed, hook_unauthenticated
from ..hooks.guard import slack_payload_problem
from ..hooks.ratelimit import (
    CacheUnavailable,
    cache_add,
    rate_limit_hit,
    service_unavailable,
    too_many_requests,
)
from ..identity import ChatIdentity
from ..models import Delivery, NonceState
from ..provenance import RESTRICTED_TEASER
from ..restriction import card_as_it_stands, gated_card
from .blocks import (
    ANSWER_ACTION_PREFIX,
    ASK_NOW_ACTION,
    CUSTOM_CALLBACK_ID,
    DATE_ACTION,
    JSON,
    MAX_DIGEST_CARDS,
    SOMETHING_ELSE_ACTION,
    SOURCE_TEXT_BLOCK,
    TEXT_ACTION,
    VALID_FROM_BLOCK,
    VALID_TO_BLOCK,
    BlockKitError,
    ask_blocks,
    ask_now_outcome_blocks,
    card_blocks,
    clarification_of_block,
    custom_answer_modal,
    digest_header,
    escape,
    message_blocks,
    replace_card,
)
from .channel import api_url, message_ref, parse_message_ref

log = logging.getLogger(__name__)

CHANNEL = "slack"
EVENT_DEDUPE_SECONDS = 60 * 60  # Slack retries within minutes; keep ids for an hour
UNMAPPED_TEXT = "Your Slack account is not linked to a person in this workspace."
# The modal's block for each "Something else…" field (its errors are shown there).
FIELD_BLOCKS = {
    VALID_FROM: VALID_FROM_BLOCK,
    VALID_TO: VALID_TO_BLOCK,
    SOURCE_TEXT: SOURCE_TEXT_BLOCK,
}


# --- the Bolt app, built lazily from settings ------------------------------------------

_HANDLERS: dict[tuple[str, str, str, bool], SlackRequestHandler] = {}
_HANDLERS_LOCK = threading.Lock()


def slack_handler() -> SlackRequestHandler:
    """The adapter for the current settings (cached per (secret, token, API URL,
    ASK_ENABLED), so a test overriding settings gets its own app)."""
    key = (
        str(settings.SLACK_SIGNING_SECRET),
        str(settings.SLACK_BOT_TOKEN),
        api_url(),
        bool(settings.ASK_ENABLED),
    )
    with _HANDLERS_LOCK:
        handler = _HANDLERS.get(key)
        if handler is None:
            handler = SlackRequestHandler(build_app(*key))
            _HANDLERS[key] = handler
        return handler


def build_app(signing_secret: str, token: str, url: str, ask: bool = False) -> App:
    def authorize(
        enterprise_id: str | None, team_id: str | None, user_id: str | None
    ) -> AuthorizeResult:
        # One bot token for the installation: no auth.test round trip per request.
        return AuthorizeResult(
            enterprise_id=enterprise_id, team_id=team_id, user_id=user_id, bot_token=token
        )

    app = App(
        name="telha-clarify",
        signing_secret=signing_secret,
        authorize=authorize,
        # No token on the app's client: `authorize` supplies it per request (a token here
        # as well would make Bolt warn that it is ignored).
        client=WebClient(base_url=url, timeout=10),
        process_before_response=True,
        before_authorize=before_authorize,
        logger=log,
    )
    app.action(re.compile(rf"^{ANSWER_ACTION_PREFIX}\d+$"))(on_answer)
    app.action(SOMETHING_ELSE_ACTION)(on_something_else)
    app.view(CUSTOM_CALLBACK_ID)(on_custom_answer)
    if ask:
        # Ask in chat (ASK_ENABLED): see the "ask in chat" section below.
        app.event("app_mention")(on_ask_mention)
        app.event("message")(on_ask_message)
        app.action(ASK_NOW_ACTION)(on_ask_now)
    else:
        app.event("app_mention")(ack_only)
        app.event("message")(ack_only)
    return app


# --- the Django views --------------------------------------------------------------------


def signature_ok(request: HttpRequest, secret: str) -> bool:
    timestamp = request.headers.get("X-Slack-Request-Timestamp", "")
    signature = request.headers.get("X-Slack-Signature", "")
    # ASCII only and a sane length: slack_sdk's int() and hmac.compare_digest raise (a 500)
    # on "²", on 5000 digits, and on a non-ASCII signature.
    if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 12):
        return False
    if not signature or not signature.isascii():
        return False
    return SignatureVerifier(secret).is_valid(request.body, timestamp, signature)


def _dispatch(request: HttpRequest) -> HttpResponse:
    secret = str(settings.SLACK_SIGNING_SECRET or "")
    if not secret or not settings.SLACK_BOT_TOKEN:
        return hook_error(404, HookError.NOT_CONFIGURED, "Slack is not configured here.")
    if not signature_ok(request, secret):
        return hook_unauthenticated("Slack signature or timestamp invalid.")
    problem = slack_payload_problem(request)  # verified: too deep or U+0000 (hooks/guard.py)
    if problem is not None:
        return hook_malformed(problem)
    return slack_handler().handle(request)


@csrf_exempt
@require_POST
def interactivity(request: HttpRequest) -> HttpResponse:
    """Slack interactivity: button taps and modal submissions (form field `payload`)."""
    return _dispatch(request)


@csrf_exempt
@require_POST
def events(request: HttpRequest) -> HttpResponse:
    """Slack Events API, URL verification included."""
    return _dispatch(request)


# --- middleware: per-tenant limit, event dedupe -----------------------------------------


def _json_object(text: Any) -> dict[str, Any]:
    if not isinstance(text, str):
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _first_action(body: dict[str, Any]) -> dict[str, Any]:
    action = (body.get("actions") or [{}])[0]
    return action if isinstance(action, dict) else {}


def _card_value(body: dict[str, Any]) -> dict[str, Any]:
    """The clarify payload an interaction carries: a button's value, or a modal's
    private_metadata."""
    if body.get("type") == "block_actions":
        return _json_object(_first_action(body).get("value"))
    if body.get("type") == "view_submission":
        return _json_object((body.get("view") or {}).get("private_metadata"))
    return {}


def _bolt(response: HttpResponse) -> BoltResponse:
    """A hook's error response (`hook_error`, the one helper) as Bolt returns one from
    inside its middleware."""
    return BoltResponse(
        status=response.status_code,
        body=response.content.decode(),
        headers=dict(response.items()),
    )


def _rate_limited(retry_after: int) -> BoltResponse:
    return _bolt(too_many_requests(retry_after, "tenant"))


def before_authorize(
    req: BoltRequest, resp: BoltResponse, next: Callable[[], BoltResponse]
) -> BoltResponse:
    """Runs after signature verification. Interactivity: look the delivery up by nonce
    and count the request against its tenant. Events: count against the Slack team and
    skip event ids already seen (Slack retries them with `X-Slack-Retry-Num`; the id is
    claimed with one atomic `cache.add`, so of concurrent deliveries to several processes
    exactly one is processed). A shared cache that does not answer: 503, nothing done
    (Bolt would answer an exception raised here with a 500)."""
    try:
        stopped = _limited_or_seen(req)
    except CacheUnavailable as exc:
        return _bolt(service_unavailable(exc))
    return stopped if stopped is not None else next()


def _limited_or_seen(req: BoltRequest) -> BoltResponse | None:
    """The answer to a request stopped here (over its tenant's limit, or an event already
    seen), else None (the request goes on to its listener)."""
    body = req.body or {}
    if body.get("type") == "event_callback":
        team = str(body.get("team_id") or "")
        retry_after = rate_limit_hit("tenant", f"slack-team:{team}") if team else None
        if retry_after is not None:
            return _rate_limited(retry_after)
        event_id = str(body.get("event_id") or "")
        if event_id and not cache_add(f"telha:slack:event:{event_id}", 1, EVENT_DEDUPE_SECONDS):
            retry = (req.headers.get("x-slack-retry-num") or [""])[0]
            log.info("slack event %s already seen (retry %s); skipped", event_id, retry or "-")
            return BoltResponse(status=200, body="")
        return None
    if body.get("type") in ("block_actions", "view_submission"):
        delivery = delivery_for_nonce(_card_value(body).get("nonce"))
        req.context["clarify_delivery"] = delivery
        if delivery is not None:
            retry_after = rate_limit_hit("tenant", str(delivery.tenant_id))
            if retry_after is not None:
                return _rate_limited(retry_after)
    return None


# --- identity ----------------------------------------------------------------------------


def _slack_user(body: dict[str, Any]) -> str:
    return str((body.get("user") or {}).get("id") or "")


def _team(body: dict[str, Any]) -> str:
    return str((body.get("team") or {}).get("id") or (body.get("user") or {}).get("team_id") or "")


def slack_identity(slack_user_id: str, team: str = "") -> ChatIdentity:
    """A Slack user as an identity: bound to a person only through the `slackUserId`
    alias."""
    return ChatIdentity.of_aliases(
        f"slack:{team}:{slack_user_id}", (AliasKind.SLACK_USER_ID, slack_user_id)
    )


def _identity(body: dict[str, Any]) -> ChatIdentity:
    return slack_identity(_slack_user(body), _team(body))


def slack_person(slack_user_id: str, tenant: Tenant | None = None) -> Person | None:
    """Identity binding for ask in chat: the person holding this verified `slackUserId`
    alias — in `tenant` when one is known, else the only such person of any tenant (None
    when unmapped or ambiguous)."""
    if not slack_user_id:
        return None
    identity = slack_identity(slack_user_id)
    person = identity.person_in(tenant) if tenant is not None else identity.only_person()
    # Deprovisioned by the identity provider: asks nothing (as an unmapped user).
    return person if person is not None and person.deactivated_at is None else None


# --- parsing an interaction into a tap ---------------------------------------------------


def _message_location(body: dict[str, Any]) -> tuple[str, str]:
    container = body.get("container") or {}
    channel = container.get("channel_id") or (body.get("channel") or {}).get("id") or ""
    ts = container.get("message_ts") or (body.get("message") or {}).get("ts") or ""
    return str(channel), str(ts)


def _action_key(body: dict[str, Any], action: dict[str, Any]) -> str:
    """A unique id for this one callback, so an exact replay is dropped."""
    action_ts = str(action.get("action_ts") or "")
    trigger = str(body.get("trigger_id") or "")
    if action_ts or trigger:
        return f"block_actions:{action_ts}:{trigger}"
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    return f"block_actions:sha256:{digest}"


def _selected(values: dict[str, Any], block: str, action: str, key: str) -> str:
    value = ((values.get(block) or {}).get(action) or {}).get(key)
    return value.strip() if isinstance(value, str) else ""


def _modal_inputs(view: dict[str, Any]) -> CustomInputs:
    """The "Something else…" modal's date pickers and text as submitted."""
    values = (view.get("state") or {}).get("values") or {}
    return CustomInputs(
        valid_from=_selected(values, VALID_FROM_BLOCK, DATE_ACTION, "selected_date"),
        valid_to=_selected(values, VALID_TO_BLOCK, DATE_ACTION, "selected_date"),
        source_text=_selected(values, SOURCE_TEXT_BLOCK, TEXT_ACTION, "value"),
    )


def _tap(
    body: dict[str, Any], value: dict[str, Any], context: BoltContext, **parsed: Any
) -> CardTap:
    """A tap from the interaction: the card's clarification and nonce as its value (or
    the modal's metadata) carries them, the delivery record `before_authorize` looked up
    by that nonce (read once a tap), the rest as parsed by the listener."""
    known = {"delivery": context["clarify_delivery"]} if "clarify_delivery" in context else {}
    return CardTap(
        channel=CHANNEL,
        identity=_identity(body),
        clarification_id=value.get("clarificationId"),
        nonce=value.get("nonce"),
        **known,
        **parsed,
    )


# --- rendering a reply: the card as it now stands, the modal's errors --------------------


def _fresh(clarification_id: Any) -> Clarification:
    return Clarification.objects.select_related("tenant", "source_version__source", "target").get(
        pk=clarification_id
    )


def _card_for(delivery: Delivery, outcome_text: str = "") -> list[Block]:
    """The delivery's card as it now stands (`card_as_it_stands`): buttons only while they
    answer, else "moved on" unless an outcome is shown."""
    card, answers = card_as_it_stands(delivery)
    return card_blocks(card, outcome=shown_outcome(outcome_text, answers), buttons=answers)


def _updated_blocks(
    delivery: Delivery, ref: str, outcome_text: str, shown: list[JSON] | None
) -> list[JSON]:
    """The message after an outcome: the answered card re-rendered with the outcome copy
    (buttons kept only while the clarification is open). Other cards of a digest are kept
    as shown when the payload carries the message, except those whose nonce no longer
    answers (re-rendered without buttons), else re-rendered from their records."""
    cid = str(delivery.clarification_id)
    new = message_blocks(_card_for(delivery, outcome_text))
    siblings = digest_siblings(delivery, MAX_DIGEST_CARDS, ref)
    if shown:
        kept = replace_card(shown, cid, new)
        listed = {clarification_of_block(b) for b in kept}
        for sibling in siblings:
            sid = str(sibling.clarification_id)
            if sid != cid and sid in listed and sibling.nonce_state != NonceState.ACTIVE:
                kept = replace_card(kept, sid, message_blocks(_card_for(sibling)))
        return message_blocks(kept)
    if len(siblings) <= 1:
        return new
    blocks: list[Block] = [digest_header(len(siblings))]
    for sibling in siblings:
        blocks.append(DividerBlock())
        if sibling.clarification_id == delivery.clarification_id:
            blocks.extend(_card_for(delivery, outcome_text))
        else:
            blocks.extend(_card_for(sibling))
    return message_blocks(blocks)


def _update_message(
    client: WebClient, reply: CardReply, ref: str, shown: list[JSON] | None = None
) -> None:
    """`chat.update` of the tapped card's message with the reply's outcome."""
    location = parse_message_ref(ref)
    if reply.delivery is None or location is None:
        return
    channel, ts = location
    try:
        blocks = _updated_blocks(reply.delivery, ref, reply.text, shown)
        client.chat_update(channel=channel, ts=ts, text=reply.text, blocks=blocks)
    except (SlackClientError, OSError, BlockKitError) as exc:
        # The answer is recorded either way; the card just keeps its old look.
        log.warning("chat.update of %s failed: %s", ref, exc)


def _modal_errors(reply: CardReply) -> dict[str, str]:
    """The modal's field errors for a refused submission (empty: it closes)."""
    if reply.errors:
        return {FIELD_BLOCKS[name]: text for name, text in reply.errors.items()}
    if reply.reason == TapRefusal.UNMAPPED_IDENTITY:
        return {VALID_FROM_BLOCK: UNMAPPED_TEXT}
    if reply.status in (INVALID, DROPPED):
        return {VALID_FROM_BLOCK: reply.text[:150]}
    return {}


# --- card listeners ----------------------------------------------------------------------


def ack_only(ack: Callable[..., None]) -> None:
    """`app_mention` / `message` with ASK_ENABLED off: acknowledged, nothing else."""
    ack()


def on_answer(
    ack: Callable[..., None], body: dict[str, Any], client: WebClient, context: BoltContext
) -> None:
    """A candidate button: ack, process the tap, update the card with the outcome copy."""
    ack()
    action = _first_action(body)
    value = _json_object(action.get("value"))
    delivery: Delivery | None = context.get("clarify_delivery")
    if delivery is not None and value.get("kind") != "clarify_answer":
        card_tap_refuse(delivery, TapRefusal.MALFORMED_ACTION, CHANNEL)
        return
    channel, ts = _message_location(body)
    ref = message_ref(channel, ts) if channel and ts else None
    reply = card_tap_process(
        _tap(
            body,
            value,
            context,
            answer_index=value.get("answerIndex"),
            action_id=_action_key(body, action),
            message_ref=ref,
        )
    )
    log.info("slack tap: %s %s", reply.status, reply.reason)
    if ref and reply.status in (ANSWERED, MOVED):
        shown = (body.get("message") or {}).get("blocks")
        _update_message(client, reply, ref, shown if isinstance(shown, list) else None)


def on_something_else(
    ack: Callable[..., None], body: dict[str, Any], client: WebClient, context: BoltContext
) -> None:
    """ "Something else…": the tap's checks (`card_tap_verify`), then the date-range
    modal for the card's recipient."""
    ack()
    value = _json_object(_first_action(body).get("value"))
    checked = card_tap_verify(_tap(body, value, context))
    if not isinstance(checked, VerifiedTap):
        return  # refused and audited
    delivery = checked.delivery
    channel, ts = _message_location(body)
    clar = _fresh(delivery.clarification_id)
    try:
        view = custom_answer_modal(
            clarification_id=str(clar.pk),
            nonce=delivery.nonce,
            message_ref=message_ref(channel, ts) if channel and ts else delivery.message_ref,
            question=gated_card(build_card(clar, delivery.nonce, ""), clar)[0].question,
        )
        client.views_open(trigger_id=str(body.get("trigger_id") or ""), view=view)
    except (SlackClientError, OSError, BlockKitError) as exc:
        log.warning("views.open failed: %s", exc)


def on_custom_answer(
    ack: Callable[..., None], body: dict[str, Any], client: WebClient, context: BoltContext
) -> None:
    """The modal's submission: a tap with the modal's inputs, checked against the same
    delivery record as a button; refused ones keep the modal open with the error."""
    view = body.get("view") or {}
    meta = _json_object(view.get("private_metadata"))
    delivery: Delivery | None = context.get("clarify_delivery")
    ref = str(meta.get("messageRef") or "")
    if delivery is not None and delivery.message_ref and ref != delivery.message_ref:
        ref = delivery.message_ref  # only ever update the message this card was sent as
    key = body.get("trigger_id") or view.get("hash") or ""
    reply = card_tap_process(
        _tap(
            body,
            meta,
            context,
            custom=_modal_inputs(view),
            action_id=f"view_submission:{view.get('id', '')}:{key}",
            message_ref=ref or None,
        )
    )
    log.info("slack custom answer: %s %s", reply.status, reply.reason)
    errors = _modal_errors(reply)
    if errors:
        ack(response_action="errors", errors=errors)
        return
    ack()
    if ref:
        _update_message(client, reply, ref)


# --- ask in chat (ASK_ENABLED) -----------------------------------------------------------
#
# Registered only when ASK_ENABLED is on (off: `ack_only`, exactly as before). Order: ack →
# bind the Slack user through the `slackUserId` alias (unmapped: logged, the handler is never
# reached) → `delivery.ask.services.respond` (read-scoped, gated for chat) → `chat.postMessage` of
# the gated body. An `app_mention` in a shared channel is answered by direct message: the
# answer is scoped to what the asker may read, not to what the channel's members may read.

ASK_DM_POINTER = "I've sent you my answer in a direct message."
ASK_EMPTY_TEXT = "Ask me about a fact, for example “when does the MSA start?”"
ASK_FAILED_TEXT = "Sorry, I couldn't answer that. Try again, or ask in your Telha inbox."
_MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")


def _is_dm(channel: str) -> bool:
    return channel.startswith("D")


def _post(client: WebClient, **kwargs: Any) -> bool:
    try:
        client.chat_postMessage(unfurl_links=False, unfurl_media=False, **kwargs)
    except (SlackClientError, OSError, BlockKitError) as exc:
        log.warning("ask: chat.postMessage failed: %s", exc)
        return False
    return True


def _answer_event(event: dict[str, Any], client: WebClient, *, in_dm: bool) -> None:
    from ..ask.services import respond

    slack_user = str(event.get("user") or "")
    channel = str(event.get("channel") or "")
    # Where the answer goes: the DM (in its thread, if asked in one), else the asker's DM.
    where: dict[str, Any] = {"channel": channel} if in_dm else {"channel": slack_user}
    if in_dm and event.get("thread_ts"):
        where["thread_ts"] = str(event["thread_ts"])
    person = slack_person(slack_user)
    if person is None:
        log.info("ask: unmapped slack identity %s asked nothing", slack_user[:40] or "-")
        if slack_user:
            _post(client, text=UNMAPPED_TEXT, **where)
        return
    question = _MENTION.sub(" ", str(event.get("text") or "")).strip()[:1000]
    if not question:
        _post(client, text=ASK_EMPTY_TEXT, **where)
        return
    try:
        delivered, answer = respond(person=person, question=question, channel=CHANNEL)
    except Exception:  # the turn failed closed: nothing recorded, nothing crosses
        log.exception("ask: answering failed for %s", person.pk)
        _post(client, text=ASK_FAILED_TEXT, **where)
        return
    # The button only when the answer offers it and the gate let the body through.
    offer = answer.ask_now if answer.ask_now and delivered != RESTRICTED_TEASER else None
    _post(client, text=escape(delivered), blocks=ask_blocks(delivered, offer), **where)
    if not in_dm:
        thread = str(event.get("thread_ts") or event.get("ts") or "")
        _post(client, channel=channel, thread_ts=thread, text=ASK_DM_POINTER)


def on_ask_message(ack: Callable[..., None], event: dict[str, Any], client: WebClient) -> None:
    """A direct message to the bot: a person's own message (no subtype, not a bot) in an
    IM channel is a question."""
    ack()
    if event.get("channel_type") != "im" or event.get("subtype") or event.get("bot_id"):
        return
    _answer_event(event, client, in_dm=True)


def on_ask_mention(ack: Callable[..., None], event: dict[str, Any], client: WebClient) -> None:
    """An @-mention of the bot: the text without the mention is the question."""
    ack()
    if event.get("subtype") or event.get("bot_id"):
        return
    _answer_event(event, client, in_dm=_is_dm(str(event.get("channel") or "")))


def on_ask_now(ack: Callable[..., None], body: dict[str, Any], client: WebClient) -> None:
    """ "Ask <person> now?": bind the Slack user, then `delivery.ask.services.ask_now` (it dedups
    against the clarification's routing job); the button's message is updated with the
    outcome."""
    from ..ask.services import ask_now

    ack()
    action = (body.get("actions") or [{}])[0]
    value = _json_object(action.get("value") if isinstance(action, dict) else None)
    person = slack_person(_slack_user(body))
    if person is None:
        log.info("ask now: unmapped slack identity %s; nothing queued", _identity(body).label[:60])
        text = UNMAPPED_TEXT
    else:
        text = ask_now(requester=person, clarification_id=value.get("clarificationId"))
    channel, ts = _message_location(body)
    if not channel:
        return
    shown = (body.get("message") or {}).get("blocks")
    try:
        if ts and isinstance(shown, list):
            blocks = ask_now_outcome_blocks(shown, text)
            client.chat_update(channel=channel, ts=ts, text=escape(text), blocks=blocks)
        else:
            client.chat_postMessage(channel=channel, text=escape(text))
    except (SlackClientError, OSError, BlockKitError) as exc:
        log.warning("ask now: could not show the outcome: %s", exc)
