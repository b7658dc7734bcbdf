"""Serializers of the fact API (shapes for validation and the OpenAPI schema)."""

from typing import Any

from rest_framework import serializers

from common.fields import MicrosField, StrictSerializer, with_field

QUERY_LIMIT_DEFAULT = 100
QUERY_LIMIT_MAX = 1000


class AsOfQuerySerializer(StrictSerializer):
    validAt = MicrosField(required=False)
    txAt = MicrosField(required=False)


class QueryInSerializer(StrictSerializer):
    labels = serializers.ListField(
        child=serializers.CharField(max_length=64),
        required=False,
        default=list,
        max_length=20,
        help_text="a record carries every one of these labels (compared case-insensitively)",
    )
    text = serializers.CharField(
        max_length=500,
        required=False,
        allow_blank=True,
        default="",
        help_text="words searched for in the facts' property values and the text of "
        "their spans (not their labels: filter by `labels` for those): full-text, stemmed, "
        "case-insensitive; a record matches every word",
    )
    order = serializers.ChoiceField(
        choices=["relevance", "id"],
        required=False,
        help_text="`relevance` (the default with `text`: best match first, ties by node id) "
        "or `id` (node id order; the default without `text`)",
    )
    validAt = MicrosField(required=False, help_text="valid time (default now)")
    txAt = MicrosField(
        required=False, help_text="transaction time (default now: the current versions)"
    )
    limit = serializers.IntegerField(
        min_value=1,
        max_value=QUERY_LIMIT_MAX,
        required=False,
        default=QUERY_LIMIT_DEFAULT,
        help_text=f"at most this many records (default {QUERY_LIMIT_DEFAULT}, maximum "
        f"{QUERY_LIMIT_MAX}), cut after ordering; narrow the query to see the rest",
    )


class PendingClarificationSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    state = serializers.CharField()
    severity = serializers.CharField()
    candidates = serializers.ListField(child=serializers.DictField())
    appliedCandidateConfidence = serializers.FloatField()
    quorumState = serializers.CharField()


class ProvenanceSerializer(serializers.Serializer[Any]):
    sourceVersionTx = serializers.IntegerField(allow_null=True)
    spans = serializers.ListField(child=serializers.DictField())
    clarification = serializers.UUIDField(allow_null=True)


class RecordSourceSerializer(serializers.Serializer[Any]):
    system = serializers.CharField(help_text="the source system, e.g. `sharepoint`")
    externalId = serializers.CharField(help_text="the document's id in that system")
    title = serializers.CharField(allow_blank=True, help_text="the document's title")


class RecordSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    labels = serializers.ListField(child=serializers.CharField())
    properties = serializers.DictField()
    validFrom = serializers.IntegerField(allow_null=True)
    validTo = serializers.IntegerField(allow_null=True)
    txFrom = serializers.IntegerField()
    txTo = serializers.IntegerField(allow_null=True)
    confidence = serializers.FloatField()
    provenance = ProvenanceSerializer()
    evidenceClass = serializers.CharField()
    pendingClarification = PendingClarificationSerializer(allow_null=True)

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        source = RecordSourceSerializer(
            allow_null=True,
            help_text="the document the fact comes from; null for a node no document "
            "stands behind (a known person's)",
        )
        return with_field(super().get_fields(), "source", source, after="confidence")


class RecordsSerializer(serializers.Serializer[Any]):
    records = RecordSerializer(many=True)
