"""Card actions from every channel (Slack, Teams, inbox) go through here: the nonce and
the recipient are checked against the delivery record, then the one answer service is
called as a `clarify` caller with the verified responder and their rights now."""

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from clarify.errors import AlreadyAnswered, UnparseableAnswer
from clarify.models import Clarification
from clarify.services import AnswerCaller, AnswerInput, audit_event_append, clarification_answer
from telha.common.errors import DomainError
from telha.tenancy.models import Person

from .cards import MOVED_ON, outcome_copy
from .models import CardAction, Delivery, NonceState

DROPPED = "dropped"
ANSWERED = "answered"
MOVED = "moved_on"
INVALID = "invalid"


@dataclass(frozen=True)
class ActionOutcome:
    status: str
    text: str
    reason: str = ""
    clarification: Clarification | None = None
    body: dict[str, Any] | None = None


def _drop(
    delivery: Delivery | None, reason: str, channel: str, detail: dict[str, Any] | None = None
) -> ActionOutcome:
    if delivery is not None:
        audit_event_append(
            tenant=delivery.tenant,
            clarification=delivery.clarification,
            type="card_action_dropped",
            detail={"reason": reason, "channel": channel, **(detail or {})},
        )
    return ActionOutcome(DROPPED, "This card can no longer be used.", reason=reason)


def card_action_process(
    *,
    channel: str,
    actor: Person | None,
    clarification_id: Any,
    nonce: Any,
    answer_index: Any = None,
    answer_custom: Any = None,
    action_id: str | None = None,
    message_ref: str | None = None,
    actor_identity: str = "",
) -> ActionOutcome:
    """Process one tap. Unknown nonce, a nonce replayed against another clarification, a
    revoked nonce, a tap by anyone but the recipient, or an exact replay: dropped and
    audited, never processed. The action log row records how it ended."""
    record: list[CardAction] = []
    outcome = _process(
        channel=channel,
        actor=actor,
        clarification_id=clarification_id,
        nonce=nonce,
        answer_index=answer_index,
        answer_custom=answer_custom,
        action_id=action_id,
        message_ref=message_ref,
        actor_identity=actor_identity,
        record=record,
    )
    if record:
        CardAction.objects.filter(pk=record[0].pk).update(
            outcome=(outcome.reason or outcome.status)[:40]
        )
    return outcome


def _process(
    *,
    channel: str,
    actor: Person | None,
    clarification_id: Any,
    nonce: Any,
    answer_index: Any,
    answer_custom: Any,
    action_id: str | None,
    message_ref: str | None,
    actor_identity: str,
    record: list[CardAction],
) -> ActionOutcome:
    delivery = (
        Delivery.objects.select_related("tenant", "clarification", "person")
        .filter(nonce=str(nonce or "")[:64])
        .first()
        if nonce
        else None
    )
    if action_id:
        try:
            with transaction.atomic():
                record.append(
                    CardAction.objects.create(
                        tenant=delivery.tenant if delivery else None,
                        channel=channel,
                        action_id=action_id[:200],
                        delivery=delivery,
                        outcome="received",
                    )
                )
        except IntegrityError:
            return _drop(delivery, "REPLAYED_ACTION", channel, {"actionId": action_id[:200]})
    if delivery is None:
        return _drop(None, "UNKNOWN_NONCE", channel)
    if str(delivery.clarification_id) != str(clarification_id):
        return _drop(
            delivery,
            "NONCE_CLARIFICATION_MISMATCH",
            channel,
            {"claimedClarification": str(clarification_id)[:64]},
        )
    if actor is None or actor.pk != delivery.person_id:
        return _drop(
            delivery,
            "NOT_RECIPIENT",
            channel,
            {"actor": str(actor.pk) if actor else None, "identity": actor_identity[:100]},
        )
    if delivery.nonce_state == NonceState.REVOKED:
        return _drop(delivery, "STALE_NONCE", channel)
    clar = delivery.clarification
    try:
        result = clarification_answer(
            caller=AnswerCaller(tenant=delivery.tenant, clarify_service=True),
            clarification_id=clar.pk,
            answer=AnswerInput(
                answer_index=answer_index,
                answer_custom=answer_custom,
                channel=channel,
                message_ref=message_ref,
                responder=str(actor.pk),
                rights=actor.role,
            ),
        )
    except AlreadyAnswered:
        return ActionOutcome(MOVED, MOVED_ON, reason="CLARIFY_ALREADY_ANSWERED", clarification=clar)
    except UnparseableAnswer as exc:
        return ActionOutcome(INVALID, exc.detail, reason=exc.code, clarification=clar)
    except DomainError as exc:
        return _drop(delivery, exc.code, channel)
    clar.refresh_from_db()
    text = outcome_copy(clar, result.body, actor)
    if delivery.nonce_state == NonceState.CLOSED and not text.startswith(MOVED_ON):
        text = f"{MOVED_ON} {text}"
    return ActionOutcome(ANSWERED, text, clarification=clar, body=result.body)
