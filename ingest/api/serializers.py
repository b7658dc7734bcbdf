"""The Submission wire shape (CONTRACT §3.1)."""

from typing import Any

from django.core.validators import RegexValidator
from rest_framework import serializers

from clarify.models import Kind, Severity
from clarify.planning import MAX_CANDIDATES_PER_AMBIGUITY
from common.fields import LongTextField, MicrosField, StrictSerializer, with_field

MAX_TEXT_CHARS = 10 * 1024 * 1024
LABEL = RegexValidator(r"^[A-Za-z][A-Za-z0-9_]{0,63}$", "Labels are letters, digits and '_'.")
EDGE_TYPE = RegexValidator(r"^[A-Z][A-Z0-9_]{0,63}$", "Edge types are UPPER_SNAKE.")


class SourceInSerializer(StrictSerializer):
    system = serializers.CharField(max_length=100)
    externalId = serializers.CharField(max_length=500)
    title = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")
    uri = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")
    text = LongTextField(max_length=MAX_TEXT_CHARS, allow_blank=True, trim_whitespace=False)
    acl = serializers.ListField(
        child=serializers.CharField(max_length=400), max_length=1000, required=False, default=list
    )
    restriction = serializers.CharField(
        max_length=100, required=False, allow_null=True, default=None
    )


class SpanInSerializer(StrictSerializer):
    start = serializers.IntegerField(min_value=0, max_value=2**31 - 1)
    end = serializers.IntegerField(min_value=0, max_value=2**31 - 1)


class NodeInSerializer(StrictSerializer):
    ref = serializers.IntegerField(min_value=0, max_value=2**31 - 1)
    key = serializers.CharField(max_length=500, required=False)
    labels = serializers.ListField(
        child=serializers.CharField(max_length=64, validators=[LABEL]), min_length=1, max_length=20
    )
    properties = serializers.DictField(required=False, default=dict)
    validFrom = MicrosField(required=False, allow_null=True, default=None)
    validTo = MicrosField(required=False, allow_null=True, default=None)
    confidence = serializers.FloatField(min_value=0.0, max_value=1.0, required=False, default=1.0)
    spanRef = serializers.IntegerField(min_value=0, required=False, allow_null=True, default=None)


class EdgeInSerializer(StrictSerializer):
    type = serializers.CharField(max_length=64, validators=[EDGE_TYPE])
    to = serializers.IntegerField(min_value=0, max_value=2**31 - 1)

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields = super().get_fields()
        fields["from"] = serializers.IntegerField(min_value=0, max_value=2**31 - 1)
        return fields


class CandidateInSerializer(StrictSerializer):
    validFrom = MicrosField(required=False, allow_null=True, default=None)
    validTo = MicrosField(required=False, allow_null=True, default=None)
    spanRef = serializers.IntegerField(min_value=0, required=False, allow_null=True, default=None)

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        label = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
        return with_field(super().get_fields(), "label", label, after="validTo")


class AmbiguityInSerializer(StrictSerializer):
    nodeRef = serializers.IntegerField(min_value=0, max_value=2**31 - 1)
    kind = serializers.ChoiceField(choices=Kind.choices)
    severityHint = serializers.ChoiceField(
        choices=Severity.choices, required=False, allow_null=True, default=None
    )
    candidates = serializers.ListSerializer[Any](
        child=CandidateInSerializer(), max_length=MAX_CANDIDATES_PER_AMBIGUITY
    )
    detectorConfidence = serializers.FloatField(min_value=0.0, max_value=1.0)
    appliedCandidateConfidence = serializers.FloatField(min_value=0.0, max_value=1.0)


class SubmissionInSerializer(StrictSerializer):
    spans = serializers.ListSerializer[Any](
        child=SpanInSerializer(), required=False, default=list, max_length=10_000
    )
    nodes = serializers.ListSerializer[Any](child=NodeInSerializer(), max_length=10_000)
    edges = serializers.ListSerializer[Any](
        child=EdgeInSerializer(), required=False, default=list, max_length=50_000
    )
    ambiguities = serializers.ListSerializer[Any](
        child=AmbiguityInSerializer(), required=False, default=list, max_length=10_000
    )

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        return with_field(super().get_fields(), "source", SourceInSerializer(), after=None)


class NodeResultSerializer(serializers.Serializer[Any]):
    ref = serializers.IntegerField()
    id = serializers.UUIDField()
    versionTx = serializers.IntegerField()


class ClarificationResultSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    nodeRef = serializers.IntegerField()
    state = serializers.CharField()
    severity = serializers.CharField()
    deduplicated = serializers.BooleanField()


class SubmissionResultSerializer(serializers.Serializer[Any]):
    sourceVersionTx = serializers.IntegerField()
    nodes = NodeResultSerializer(many=True)
    clarifications = ClarificationResultSerializer(many=True)
