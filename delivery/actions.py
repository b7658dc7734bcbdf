"""Card taps from every channel (Slack, Teams, inbox) go through here, the one place
their rules live. A channel adapter parses its payload into a `CardTap` and renders the
`CardReply` it gets back; everything in between is `card_tap_process`:

1. the "Something else…" inputs parsed into the answer's interval (`custom_answer_parse`;
   a bad one is refused before anything is read or written);
2. the nonce lookup (`delivery_for_nonce`): the delivery record names the card's tenant,
   clarification and recipient;
3. identity → person through the verified alias, in that tenant (`ChatIdentity`); an
   unmapped identity submits nothing (`unmapped_refuse`, the one refusal of it on every
   channel: the Teams hook, which binds its sender before anything else, and ask in
   chat use it too);
4. the exact-replay guard (a `CardAction` row per channel callback id);
5. an unknown nonce, a nonce replayed against another clarification, a tap by anyone but
   the recipient, a deprovisioned recipient, a revoked nonce: each refused (the last three
   are `recipient_refusal`, which the email link's confirmation page shares);
6. the one call to the answer service (`_answer`), as a `clarify` caller with the verified
   responder and their rights now; the service checks the responder's read access then
   (a responder who lost it gets the "moved on" reply, like a missing clarification);
7. the "moved on" rule: an answer to a clarification that moved on says so.

Every refused tap is audited by `card_tap_refuse` (`card_action_dropped`, with its
reason), and written nowhere else.
"""

import logging
from dataclasses import dataclass, field, replace
from datetime import date
from enum import Enum, StrEnum
from typing import Any, Literal

from django.db import IntegrityError, transaction

from clarify.answering import AnswerCaller, AnswerInput
from clarify.errors import AlreadyAnswered, NoReadPermission, UnparseableAnswer
from clarify.models import Clarification
from clarify.services import audit_event_append, clarification_answer
from common.codes import TapRefusal
from common.errors import DomainError
from common.times import from_us, now_us
from graph.access import read_access_changed
from ingest.detection.temporal import day_of
from tenancy.models import Person, Tenant

from .cards import MOVED_ON, outcome_copy
from .identity import ChatIdentity
from .models import CardAction, Delivery, NonceState

log = logging.getLogger(__name__)
audit_log = logging.getLogger("telha.audit")


class ReplyStatus(StrEnum):
    """How a tap ended (`CardReply.status`), for the channel to render."""

    ANSWERED = "answered"
    MOVED = "moved_on"
    INVALID = "invalid"
    DROPPED = "dropped"


# The statuses by the short names the channel adapters use.
ANSWERED, MOVED = ReplyStatus.ANSWERED, ReplyStatus.MOVED
INVALID, DROPPED = ReplyStatus.INVALID, ReplyStatus.DROPPED

DROPPED_TEXT = "This card can no longer be used."

# The "Something else…" fields, and what is wrong with one (the same words on every channel).
VALID_FROM, VALID_TO, SOURCE_TEXT = "validFrom", "validTo", "sourceText"
SOURCE_TEXT_MAX = 2000
BAD_DATE = "Dates must look like 2026-06-12."
START_REQUIRED = "Pick the date it takes effect (a start date is required)."
END_NOT_AFTER_START = "The end date must be after the start date."
SOURCE_TEXT_TOO_LONG = f"Where it says so: at most {SOURCE_TEXT_MAX} characters."


@dataclass(frozen=True)
class CustomInputs:
    """The "Something else…" form as a channel sent it: the dates as `YYYY-MM-DD` text
    (empty: not given) and where it says so."""

    valid_from: str = ""
    valid_to: str = ""
    source_text: str = ""


class Lookup(Enum):
    """A tap's delivery record not looked up yet (`CardTap.delivery`)."""

    UNREAD = "unread"


@dataclass(frozen=True)
class CardTap:
    """One tap on a card — a candidate button, or a "Something else…" submission when
    `custom` is set — as a channel adapter parsed it. Nothing in it is trusted: it is
    checked against the delivery record its nonce names. `action_id` identifies the
    channel's callback (an exact replay of it is dropped); `tenant`, when the channel
    knows it, is where a tap whose nonce names no delivery is audited."""

    channel: str
    identity: ChatIdentity
    clarification_id: Any
    nonce: Any
    answer_index: Any = None
    custom: CustomInputs | None = None
    action_id: str | None = None
    message_ref: str | None = None
    tenant: Tenant | None = None
    # The delivery record `nonce` names (None: none), when the adapter looked it up with
    # `delivery_for_nonce` already (its per-tenant rate limit): a tap reads it once.
    delivery: Delivery | Literal[Lookup.UNREAD] | None = Lookup.UNREAD


@dataclass(frozen=True)
class CardReply:
    """How a tap ended, for the channel to render: `status` (answered, moved_on, invalid,
    dropped), the outcome copy (spec §7) or error `text`, the refusal `reason` code,
    `errors` by "Something else…" field, and `delivery`: the card tapped, when the tapper
    is its recipient (what the channel re-renders)."""

    status: ReplyStatus
    text: str
    reason: str = ""
    clarification: Clarification | None = None
    body: dict[str, Any] | None = None
    delivery: Delivery | None = None
    errors: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class VerifiedTap:
    """A tap that passed every check: its delivery, and the recipient who tapped it."""

    delivery: Delivery
    person: Person


# --- the rules ---------------------------------------------------------------------------


def delivery_for_nonce(nonce: Any) -> Delivery | None:
    """The delivery record a card's nonce belongs to (hence its tenant, clarification and
    recipient), or None."""
    if not isinstance(nonce, str) or not nonce:
        return None
    return (
        Delivery.objects.select_related("tenant", "clarification", "person")
        .filter(nonce=nonce[:64])
        .first()
    )


def _tapped(tap: CardTap) -> Delivery | None:
    """The delivery record the tap's nonce names: the adapter's lookup when it made one,
    else `delivery_for_nonce` (once a tap)."""
    return delivery_for_nonce(tap.nonce) if tap.delivery is Lookup.UNREAD else tap.delivery


def _day(raw: str) -> date | None:
    """A typed day: what the temporal tagger reads as one calendar day — "2026-07-01",
    "1 July 2026", "next Monday" (counted from today, UTC) — else ValueError; blank is
    None. A numeric day/month form ("01/07/2026") reads two ways and is refused."""
    text = raw.strip()
    if not text:
        return None
    day = day_of(text, reference=from_us(now_us()).date())
    if day is None:
        raise ValueError(f"not a day: {text[:40]!r}")
    return day


def custom_answer_parse(inputs: CustomInputs) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """The "Something else…" inputs as `answerCustom` (RFC 3339 dates at 00:00Z), or what
    is wrong, by field, in the order to show it: a date that is not one, no start date, an
    end not after the start, where it says so over 2000 characters."""
    errors: dict[str, str] = {}
    days: dict[str, date | None] = {}
    for name, raw in ((VALID_FROM, inputs.valid_from), (VALID_TO, inputs.valid_to)):
        try:
            days[name] = _day(raw)
        except ValueError:
            errors[name] = BAD_DATE
    start, end = days.get(VALID_FROM), days.get(VALID_TO)
    if not errors and start is None:
        errors[VALID_FROM] = START_REQUIRED
    if not errors and start is not None and end is not None and end <= start:
        errors[VALID_TO] = END_NOT_AFTER_START
    source_text = inputs.source_text.strip()
    if len(source_text) > SOURCE_TEXT_MAX:
        errors[SOURCE_TEXT] = SOURCE_TEXT_TOO_LONG
    if errors or start is None:
        return None, errors
    return {
        "validFrom": f"{start.isoformat()}T00:00:00Z",
        "validTo": f"{end.isoformat()}T00:00:00Z" if end else None,
        "sourceText": source_text or None,
    }, {}


def card_tap_refuse(
    delivery: Delivery, reason: str, channel: str, detail: dict[str, Any] | None = None
) -> CardReply:
    """Refuse a tap on the delivery's card: audited on its clarification
    (`card_action_dropped` with the reason), nothing else written."""
    audit_event_append(
        tenant=delivery.tenant,
        clarification=delivery.clarification,
        type="card_action_dropped",
        detail={"reason": reason, "channel": channel, **(detail or {})},
    )
    return CardReply(DROPPED, DROPPED_TEXT, reason=reason)


def unmapped_refuse(delivery: Delivery | None, channel: str, identity: ChatIdentity) -> CardReply:
    """Refuse an identity no verified alias binds (in the tenant of the card its nonce
    names, when it names one): nothing is stored or submitted. A tap on a delivered card
    is audited on its clarification (`card_action_dropped`, `UNMAPPED_IDENTITY`); anything
    else (a message, a question, an unknown nonce) is logged. The channel shows its own
    "not linked" text for this reason."""
    if delivery is not None:
        return card_tap_refuse(
            delivery, TapRefusal.UNMAPPED_IDENTITY, channel, {"identity": identity.label[:100]}
        )
    log.info("unmapped %s identity %s: nothing stored or submitted", channel, identity.label[:100])
    return CardReply(DROPPED, DROPPED_TEXT, reason=TapRefusal.UNMAPPED_IDENTITY)


def _refuse_unknown(tap: CardTap) -> CardReply:
    """A tap whose nonce matches no delivery (unknown or missing): there is no
    clarification to audit against, so it is recorded as a tenant audit event when the
    tenant is known (the channel's, or the one the identity maps to), else on the
    `telha.audit` logger."""
    detail = {
        "reason": TapRefusal.UNKNOWN_NONCE,
        "channel": tap.channel,
        "claimedClarification": str(tap.clarification_id or "")[:64],
        "identity": tap.identity.label[:100],
    }
    person = tap.identity.only_person() if tap.tenant is None else None
    tenant = tap.tenant or (person.tenant if person is not None else None)
    if tenant is not None:
        audit_event_append(tenant=tenant, type="card_action_dropped", detail=detail)
    else:
        audit_log.warning(
            "card_action_dropped reason=UNKNOWN_NONCE channel=%s claimedClarification=%s "
            "identity=%s",
            tap.channel,
            detail["claimedClarification"],
            detail["identity"],
        )
    return CardReply(DROPPED, DROPPED_TEXT, reason=TapRefusal.UNKNOWN_NONCE)


def _recorded(tap: CardTap, delivery: Delivery | None, record: list[CardAction]) -> bool:
    """Log the channel's callback once (False: an exact replay of it)."""
    if not tap.action_id:
        return True
    try:
        with transaction.atomic():
            record.append(
                CardAction.objects.create(
                    tenant=delivery.tenant if delivery else None,
                    channel=tap.channel,
                    action_id=tap.action_id[:200],
                    delivery=delivery,
                    outcome="received",
                )
            )
    except IntegrityError:
        return False
    return True


def _verify(tap: CardTap, record: list[CardAction]) -> VerifiedTap | CardReply:
    """Steps 2-5 of the module docstring, in that order."""
    delivery = _tapped(tap)
    person = tap.identity.person_in(delivery.tenant) if delivery is not None else None
    if delivery is not None and person is None and not tap.identity.bound:
        return unmapped_refuse(delivery, tap.channel, tap.identity)
    if not _recorded(tap, delivery, record):
        return _refuse_replay(tap, delivery)
    if delivery is None:
        return _refuse_unknown(tap)
    if str(delivery.clarification_id) != str(tap.clarification_id):
        claimed = {"claimedClarification": str(tap.clarification_id)[:64]}
        return card_tap_refuse(
            delivery, TapRefusal.NONCE_CLARIFICATION_MISMATCH, tap.channel, claimed
        )
    reason = recipient_refusal(person, delivery)
    if reason == TapRefusal.NOT_RECIPIENT:
        who = {"actor": str(person.pk) if person else None, "identity": tap.identity.label[:100]}
        return card_tap_refuse(delivery, reason, tap.channel, who)
    if reason == TapRefusal.RESPONDER_NOT_AUTHORISED:
        return replace(card_tap_refuse(delivery, reason, tap.channel), text=MOVED_ON)
    if reason is not None:
        return card_tap_refuse(delivery, reason, tap.channel)
    assert person is not None
    return VerifiedTap(delivery=delivery, person=person)


def recipient_refusal(person: Person | None, delivery: Delivery) -> TapRefusal | None:
    """Why `person` may not answer with the delivery's card (step 5 past the nonce
    lookup: not its recipient, deprovisioned — their cards were withdrawn — or the nonce
    revoked), None when they may. Reads nothing: the one place of these checks, for the
    pipeline and for a page that shows a card before its tap (the email link's GET)."""
    if person is None or person.pk != delivery.person_id:
        return TapRefusal.NOT_RECIPIENT
    if person.deactivated_at is not None:
        return TapRefusal.RESPONDER_NOT_AUTHORISED
    if delivery.nonce_state == NonceState.REVOKED:
        return TapRefusal.STALE_NONCE
    return None


def _refuse_replay(tap: CardTap, delivery: Delivery | None) -> CardReply:
    """An exact replay of a callback: audited on the delivery's clarification, or logged
    when its nonce names none."""
    reason = TapRefusal.REPLAYED_ACTION
    if delivery is not None:
        return card_tap_refuse(
            delivery, reason, tap.channel, {"actionId": str(tap.action_id)[:200]}
        )
    audit_log.warning("card_action_dropped reason=%s channel=%s", reason, tap.channel)
    return CardReply(DROPPED, DROPPED_TEXT, reason=reason)


def _answer(verified: VerifiedTap, tap: CardTap, custom: dict[str, Any] | None) -> CardReply:
    """The one call to the answer service, and its outcome as a reply."""
    delivery, person = verified.delivery, verified.person
    clar = delivery.clarification
    try:
        outcome = clarification_answer(
            caller=AnswerCaller.clarify_service_of(delivery.tenant),
            clarification_id=clar.pk,
            answer=AnswerInput(
                answer_index=None if custom is not None else tap.answer_index,
                answer_custom=custom,
                channel=tap.channel,
                message_ref=tap.message_ref,
                responder=str(person.pk),
                rights=person.role,
            ),
        )
    except AlreadyAnswered:
        return CardReply(MOVED, MOVED_ON, reason=AlreadyAnswered.code, clarification=clar)
    except NoReadPermission as refused:
        # Like a missing clarification: the "moved on" reply, the card not re-rendered
        # (nothing of the passage shown again; the service audited the refusal). The loss
        # went unheard so far: said now through the seam, which revokes the card and
        # moves the routing job on.
        read_access_changed(
            delivery.tenant, people=[person], sources=[clar.source_version.source_id]
        )
        return CardReply(MOVED, MOVED_ON, reason=refused.reason)
    except UnparseableAnswer as exc:
        return CardReply(INVALID, exc.detail, reason=exc.code, clarification=clar)
    except DomainError as exc:
        return card_tap_refuse(delivery, exc.code, tap.channel)
    clar.refresh_from_db()
    text = outcome_copy(clar, outcome.body, person)
    return CardReply(ANSWERED, text, clarification=clar, body=outcome.body)


def _moved_on(reply: CardReply, delivery: Delivery) -> CardReply:
    """An answer recorded on a card whose nonce had closed (its clarification moved on
    before the tap) says so first."""
    closed = delivery.nonce_state == NonceState.CLOSED
    if reply.status == ANSWERED and closed and not reply.text.startswith(MOVED_ON):
        return replace(reply, text=f"{MOVED_ON} {reply.text}")
    return reply


def _own_card(tap: CardTap) -> Delivery | None:
    """The card the tap's nonce names, when the tapper is its recipient (read only: a tap
    refused before the checks re-renders its card, writes and audits nothing)."""
    delivery = _tapped(tap)
    if delivery is None:
        return None
    person = tap.identity.person_in(delivery.tenant)
    return delivery if person is not None and person.pk == delivery.person_id else None


# --- the entry points --------------------------------------------------------------------


def card_tap_verify(tap: CardTap) -> VerifiedTap | CardReply:
    """The checks of a tap that answers nothing yet (Slack's "Something else…" button,
    which opens the form): the verified tap, or the refusal (audited)."""
    return _verify(tap, [])


def card_tap_process(tap: CardTap) -> CardReply:
    """Process one tap end to end (the module docstring's steps). The `CardAction` row of
    the callback records how it ended."""
    custom, errors = (None, {}) if tap.custom is None else custom_answer_parse(tap.custom)
    if errors:
        first = next(iter(errors.values()))
        return CardReply(
            INVALID,
            first,
            reason=TapRefusal.INVALID_CUSTOM_ANSWER,
            delivery=_own_card(tap),
            errors=errors,
        )
    record: list[CardAction] = []
    verified = _verify(tap, record)
    if isinstance(verified, VerifiedTap):
        reply = _moved_on(_answer(verified, tap, custom), verified.delivery)
        if reply.status != DROPPED and reply.reason != NoReadPermission.reason:
            reply = replace(reply, delivery=verified.delivery)
    else:
        reply = verified
    if record:
        CardAction.objects.filter(pk=record[0].pk).update(
            outcome=(reply.reason or reply.status)[:40]
        )
    return reply


def card_action_process(
    *,
    channel: str,
    actor: Person | None,
    clarification_id: Any,
    nonce: Any,
    answer_index: Any = None,
    custom: CustomInputs | None = None,
    action_id: str | None = None,
    message_ref: str | None = None,
    actor_identity: str = "",
    tenant: Tenant | None = None,
    delivery: Delivery | Literal[Lookup.UNREAD] | None = Lookup.UNREAD,
) -> CardReply:
    """`card_tap_process` for a tap whose person the caller has bound itself (the inbox's
    signed-in person; None: nobody), named `actor_identity` in the audit. `delivery`: the
    record `nonce` names when the caller looked it up already (`CardTap.delivery`)."""
    return card_tap_process(
        CardTap(
            channel=channel,
            identity=ChatIdentity.of_person(actor, actor_identity),
            clarification_id=clarification_id,
            nonce=nonce,
            answer_index=answer_index,
            custom=custom,
            action_id=action_id,
            message_ref=message_ref,
            tenant=tenant or (actor.tenant if actor is not None else None),
            delivery=delivery,
        )
    )
