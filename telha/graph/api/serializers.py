"""Serializers of the fact API (shapes for validation and the OpenAPI schema)."""

from rest_framework import serializers

from telha.common.fields import MicrosField, StrictSerializer


class AsOfQuerySerializer(StrictSerializer):
    validAt = MicrosField(required=False)
    txAt = MicrosField(required=False)


class QueryInSerializer(StrictSerializer):
    labels = serializers.ListField(
        child=serializers.CharField(max_length=64), required=False, default=list, max_length=20
    )
    text = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")
    validAt = MicrosField(required=False)
    txAt = MicrosField(required=False)
    limit = serializers.IntegerField(min_value=1, max_value=1000, required=False, default=100)


class PendingClarificationSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    state = serializers.CharField()
    severity = serializers.CharField()
    candidates = serializers.ListField(child=serializers.DictField())
    appliedCandidateConfidence = serializers.FloatField()
    quorumState = serializers.CharField()


class ProvenanceSerializer(serializers.Serializer):
    sourceVersionTx = serializers.IntegerField(allow_null=True)
    spans = serializers.ListField(child=serializers.DictField())
    clarification = serializers.UUIDField(allow_null=True)


class RecordSerializer(serializers.Serializer):
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


class RecordsSerializer(serializers.Serializer):
    records = RecordSerializer(many=True)
