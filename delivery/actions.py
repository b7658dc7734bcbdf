"""Card actions from every channel (Slack, Teams, inbox) go through here: the nonce and
the recipient are checked against the delivery record, then the one answer service is
called as a `clarify` caller with the verified responder and their rights now."""

import logging
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from clarify.errors import AlreadyAnswered, UnparseableAnswer
from clarify.models import Clarification
from clarify.services import AnswerCaller, AnswerInput, audit_event_append, clarification_answer
from telha.common.errors import DomainError
from telha.tenancy.models import Person, Tenant

from .cards import MOVED_ON, outcome_copy
from .models import CardAction, Delivery, NonceState

audit_log = logging.getLogger("telha.audit")

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
    else:
        audit_log.warning("card_action_dropped reason=%s channel=%s", reason, channel)
    return ActionOutcome(DROPPED, "This card can no longer be used.", reason=reason)


def _drop_unknown(
    tenant: Tenant | None, channel: str, clarification_id: Any, actor_identity: str
) -> ActionOutcome:
    """A tap whose nonce matches no delivery (unknown or missing): there is no
    clarification to audit against, so it is recorded as a tenant audit event when the
    tenant is known (the signed-in person's, or the one the channel identity maps to),
    else on the `telha.audit` logger."""
    detail = {
        "reason": "UNKNOWN_NONCE",
        "channel": channel,
        "claimedClarification": str(clarification_id or "")[:64],
        "identity": actor_identity[:100],
    }
    if tenant is not None:
        audit_event_append(tenant=tenant, type="card_action_dropped", detail=detail)
    else:
        audit_log.warning(
            "card_action_dropped reason=UNKNOWN_NONCE channel=%s claimedClarification=%s "
            "identity=%s",
            channel,
            detail["claimedClarification"],
            detail["identity"],
        )
    return ActionOutcome(DROPPED, "This card can no longer be used.", reason="UNKNOWN_NONCE")


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
    tenant: Tenant | None = None,
) -> ActionOutcome:
    """Process one tap. Unknown nonce, a nonce replayed against another clarification, a
    revoked nonce, a tap by anyone but the recipient, or an exact replay: dropped and
    audited, never processed. `tenant` is the tenant the channel identity belongs to, when
    known (for auditing a tap whose nonce names no delivery; else the actor's). The action
    log row records how it ended."""
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
        tenant=tenant or (actor.tenant if actor is not None else None),
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
    tenant: Tenant | None,
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
        return _drop_unknown(tenant, channel, clarification_id, actor_identity)
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
