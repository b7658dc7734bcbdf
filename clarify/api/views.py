"""Clarification endpoints (CONTRACT §3.2): thin views over selectors and one service."""

import uuid
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from common.errors import InvalidInput, NotFound
from common.pagination import CURSOR_MAX_LENGTH, SignedCursorPagination
from tenancy.auth import Caller, caller_of
from tenancy.models import Audience

from ..answering import AnswerCaller, AnswerInput
from ..models import Clarification, Severity, State
from ..selectors import readable_clarifications
from ..services import clarification_answer
from .outcomes import answer_reply
from .serializers import (
    AnswerInSerializer,
    AnswerOutSerializer,
    ClarificationSerializer,
    ClarificationSummarySerializer,
    DeliveryViewSerializer,
    delivery_view,
)

ANSWER_FIELDS = {
    "answerIndex",
    "answerCustom",
    "stewardOverride",
    "channel",
    "messageRef",
    "responder",
    "rights",
}


class ClarificationCursor(SignedCursorPagination):
    ordering = ("-created_at", "-id")
    page_size = 50
    max_page_size = 200


class ClarificationListView(APIView):
    pagination_class = ClarificationCursor

    @extend_schema(
        parameters=[
            OpenApiParameter("state", str, enum=State.values),
            OpenApiParameter("severity", str, enum=Severity.values),
            OpenApiParameter(
                "cursor",
                {"type": "string", "maxLength": CURSOR_MAX_LENGTH},
                description="The `next` of the previous page, unchanged; any other "
                "value is `400 INVALID_INPUT`.",
            ),
            OpenApiParameter("limit", int),
        ],
        responses={200: ClarificationSummarySerializer(many=True)},
        tags=["clarifications"],
    )
    def get(self, request: Request) -> Response:
        """Clarifications the caller may read, newest first, cursor-paginated."""
        qs = readable_clarifications(caller_of(request))
        state, severity = request.query_params.get("state"), request.query_params.get("severity")
        if state is not None:
            if state not in State.values:
                raise InvalidInput(f"state must be one of {', '.join(State.values)}.")
            qs = qs.filter(state=state)
        if severity is not None:
            if severity not in Severity.values:
                raise InvalidInput(f"severity must be one of {', '.join(Severity.values)}.")
            qs = qs.filter(severity=severity)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(qs, request, view=self)
        data = ClarificationSummarySerializer(page, many=True).data
        return paginator.get_paginated_response(data)


def _get_readable(request: Request, clarification_id: str) -> Clarification:
    try:
        pk = uuid.UUID(str(clarification_id))
    except ValueError as exc:
        raise NotFound("No such clarification.") from exc
    clar = (
        readable_clarifications(caller_of(request))
        .select_related("source_version__source")
        .filter(pk=pk)
        .first()
    )
    if clar is None:
        raise NotFound("No such clarification.")
    return clar


class ClarificationDetailView(APIView):
    @extend_schema(responses={200: DeliveryViewSerializer}, tags=["clarifications"])
    def get(self, request: Request, clarification_id: str) -> Response:
        """One clarification; the `clarify` audience also gets the delivery view."""
        clar = _get_readable(request, clarification_id)
        data = dict(ClarificationSerializer(clar).data)
        if caller_of(request).audience == Audience.CLARIFY:
            data.update(delivery_view(clar))
        return Response(data)


def answer_caller_for(caller: Caller) -> AnswerCaller:
    return AnswerCaller(
        tenant=caller.tenant,
        clarify_service=caller.audience == Audience.CLARIFY,
        person_id=caller.person.pk if caller.person is not None else None,
        rights=caller.rights,
        person=caller.person,
    )


def answer_input_from(body: Any) -> AnswerInput:
    if not isinstance(body, dict):
        body = {"_invalid": True}
    override = body.get("stewardOverride", False)
    channel, message_ref = body.get("channel"), body.get("messageRef")
    return AnswerInput(
        answer_index=body.get("answerIndex"),
        answer_custom=body.get("answerCustom"),
        steward_override=override if isinstance(override, bool) else None,
        channel=channel if isinstance(channel, str) else None,
        message_ref=message_ref[:500] if isinstance(message_ref, str) else None,
        responder=body.get("responder"),
        rights=body.get("rights"),
        unknown=sorted(str(k) for k in body if k not in ANSWER_FIELDS),
    )


class ClarificationAnswerView(APIView):
    @extend_schema(
        request=AnswerInSerializer,
        responses={200: AnswerOutSerializer, 202: AnswerOutSerializer},
        tags=["clarifications"],
    )
    def post(self, request: Request, clarification_id: str) -> Response:
        """Answer a clarification (the outcome matrix of CONTRACT §3.2)."""
        caller = caller_of(request)
        outcome = clarification_answer(
            caller=answer_caller_for(caller),
            clarification_id=clarification_id,
            answer=answer_input_from(request.data),
            readable_by=caller,
        )
        reply = answer_reply(outcome)
        return Response(reply.body, status=reply.status)
