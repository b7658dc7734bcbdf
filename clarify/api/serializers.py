"""Clarification shapes (CONTRACT §3.2)."""

import json
from typing import Any

from rest_framework import serializers

from common.fields import with_field
from graph.models import NodeVersion
from tenancy.selectors import aliases_for

from ..models import Clarification, ResponseRecord


class CandidateSerializer(serializers.Serializer[Any]):
    index = serializers.IntegerField()
    validFrom = serializers.IntegerField(allow_null=True)
    validTo = serializers.IntegerField(allow_null=True)

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        label = serializers.CharField()
        return with_field(super().get_fields(), "label", label, after="validTo")


class QuorumPolicySerializer(serializers.Serializer[Any]):
    requiredConfirmations = serializers.IntegerField()
    requiredRoles = serializers.ListField(child=serializers.CharField())
    allowStewardOverride = serializers.BooleanField()


class ResponseSerializer(serializers.Serializer[Any]):
    responseId = serializers.UUIDField(source="id")
    responder = serializers.UUIDField()
    rightsAtAnswerTime = serializers.CharField(source="rights_at_answer_time")
    answerIndex = serializers.IntegerField(source="answer_index", allow_null=True)
    answerCustom = serializers.JSONField(source="answer_custom", allow_null=True)
    channel = serializers.CharField()
    messageRef = serializers.CharField(source="message_ref", allow_null=True)
    responseTx = serializers.IntegerField(source="response_tx")
    bindingStatus = serializers.CharField(source="binding_status")


class EventSerializer(serializers.Serializer[Any]):
    at = serializers.IntegerField()
    type = serializers.CharField()
    detail = serializers.JSONField()


def _candidates(clar: Clarification) -> list[dict[str, Any]]:
    return [
        {
            "index": c.get("index", i),
            "validFrom": c.get("validFrom"),
            "validTo": c.get("validTo"),
            "label": c.get("label", ""),
        }
        for i, c in enumerate(clar.candidates)
    ]


class ClarificationSummarySerializer(serializers.Serializer[Any]):
    """A list row: everything but responses, events and the delivery view."""

    id = serializers.UUIDField()
    target = serializers.UUIDField(source="target_id")
    kind = serializers.CharField()
    severity = serializers.CharField()
    state = serializers.CharField()
    quorumState = serializers.CharField(source="quorum_state")
    quorumPolicy = QuorumPolicySerializer(source="quorum_policy")
    candidates = serializers.SerializerMethodField()
    asked = serializers.ListField(child=serializers.UUIDField())
    detectorConfidence = serializers.FloatField(source="detector_confidence")
    appliedCandidateConfidence = serializers.FloatField(source="applied_candidate_confidence")
    factVersionTx = serializers.IntegerField(source="fact_version_tx", allow_null=True)

    def get_candidates(self, clar: Clarification) -> list[dict[str, Any]]:
        return _candidates(clar)


class ClarificationSerializer(ClarificationSummarySerializer):
    """The full clarification with responses and its audit trail."""

    responses = serializers.SerializerMethodField()
    events = serializers.SerializerMethodField()

    def get_responses(self, clar: Clarification) -> list[dict[str, Any]]:
        records = ResponseRecord.objects.filter(clarification=clar).order_by("seq")
        return serializers.ListSerializer(records, child=ResponseSerializer()).data

    def get_events(self, clar: Clarification) -> list[dict[str, Any]]:
        events = clar.events.order_by("at", "id")
        return serializers.ListSerializer(events, child=EventSerializer()).data


SPAN_EXCERPT_MAX_CHARS = 280


def delivery_view(clar: Clarification) -> dict[str, Any]:
    """What the clarify service needs to deliver: span excerpt, the source ACL (a JSON
    string; unparseable fails closed at the gate) and the asked people's aliases."""
    text = clar.source_version.text
    excerpt = ""
    if clar.span_start is not None and clar.span_end is not None:
        excerpt = text[clar.span_start : clar.span_end][:SPAN_EXCERPT_MAX_CHARS]
    return {
        "spanExcerpt": excerpt,
        "aclJson": json.dumps(clar.source_version.source.acl),
        "askedAliases": aliases_for([a for a in clar.asked]),
    }


class DeliveryViewSerializer(ClarificationSerializer):
    """The clarification; the delivery view fields only for a `clarify`-audience caller."""

    spanExcerpt = serializers.CharField(required=False, help_text="clarify audience only")
    aclJson = serializers.CharField(required=False, help_text="clarify audience only")
    askedAliases = serializers.DictField(
        child=serializers.DictField(), required=False, help_text="clarify audience only"
    )


class AnswerCustomSerializer(serializers.Serializer[Any]):
    validFrom = serializers.IntegerField(allow_null=True, help_text="µs or RFC 3339")
    validTo = serializers.IntegerField(allow_null=True, help_text="µs or RFC 3339")
    sourceText = serializers.CharField(required=False, allow_null=True)


class AnswerInSerializer(serializers.Serializer[Any]):
    """Documentation shape; the answer service validates the body itself so that trust
    resolution happens before anything else."""

    answerIndex = serializers.IntegerField(required=False)
    answerCustom = AnswerCustomSerializer(required=False)
    stewardOverride = serializers.BooleanField(required=False)
    channel = serializers.CharField(required=False)
    messageRef = serializers.CharField(required=False)
    responder = serializers.UUIDField(required=False, help_text="clarify audience only")
    rights = serializers.ChoiceField(
        choices=["viewer", "editor", "steward"], required=False, help_text="clarify audience only"
    )


class AnswerOutSerializer(serializers.Serializer[Any]):
    outcome = serializers.ChoiceField(
        choices=["bound", "partial_confirmation", "attestation", "conflict"]
    )
    state = serializers.CharField()
    factVersionTx = serializers.IntegerField(required=False)
    quorumSatisfied = serializers.BooleanField(required=False)
    quorumRemaining = serializers.IntegerField(required=False)
    postBinding = serializers.BooleanField(required=False)


def bound_version(clar: Clarification) -> NodeVersion | None:
    binding = getattr(clar, "binding", None)
    return binding.node_version if binding is not None else None
