"""The PollJobs protocol for outside workers (CONTRACT §3.4)."""

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from common.fields import StrictSerializer
from common.times import to_us
from jobs.services import (
    MAX_BATCH,
    MAX_LEASE_SECONDS,
    job_complete,
    job_fail,
    job_heartbeat,
    job_lease,
)
from tenancy.auth import caller_of


class LeaseInSerializer(StrictSerializer):
    kinds = serializers.ListField(
        child=serializers.CharField(max_length=64), min_length=1, max_length=20
    )
    max = serializers.IntegerField(min_value=1, max_value=MAX_BATCH, required=False, default=1)
    leaseSeconds = serializers.IntegerField(
        min_value=1, max_value=MAX_LEASE_SECONDS, required=False, default=None
    )


class LeasedJobSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    attempts = serializers.IntegerField()
    maxAttempts = serializers.IntegerField()
    payload = serializers.JSONField()
    leaseToken = serializers.UUIDField()
    leaseExpiresAt = serializers.IntegerField(help_text="µs since the epoch")


class LeaseOutSerializer(serializers.Serializer[Any]):
    jobs = LeasedJobSerializer(many=True)


class HeartbeatInSerializer(StrictSerializer):
    leaseToken = serializers.CharField(max_length=64)
    leaseSeconds = serializers.IntegerField(
        min_value=1, max_value=MAX_LEASE_SECONDS, required=False, default=None
    )


class CompleteInSerializer(StrictSerializer):
    leaseToken = serializers.CharField(max_length=64)
    result = serializers.JSONField(required=False, default=None)


class FailInSerializer(StrictSerializer):
    leaseToken = serializers.CharField(max_length=64)
    retryable = serializers.BooleanField(required=False, default=True)
    reason = serializers.RegexField(r"^[A-Z][A-Z0-9_]{0,63}$", required=False, default="ERROR")
    detail = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")


class HeartbeatOutSerializer(serializers.Serializer[Any]):
    status = serializers.ChoiceField(choices=["leased"])
    leaseExpiresAt = serializers.IntegerField(help_text="the new expiry, µs since the epoch")


class CompleteOutSerializer(serializers.Serializer[Any]):
    status = serializers.ChoiceField(choices=["done"])


class FailOutSerializer(serializers.Serializer[Any]):
    status = serializers.ChoiceField(
        choices=["pending", "dead"],
        help_text="pending: the next attempt will run (at once for a skip reason code, "
        "else after the kind's backoff); dead: dead-lettered",
    )
    attempts = serializers.IntegerField(
        help_text="finished attempts; for clarify:temporal the index of the next candidate"
    )


def _body(serializer_class: type[serializers.Serializer[Any]], request: Request) -> dict[str, Any]:
    body = serializer_class(data=request.data)
    body.is_valid(raise_exception=True)
    return dict(body.validated_data)


def _job_id(raw: str) -> int:
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 19 else -1


class LeaseView(APIView):
    @extend_schema(request=LeaseInSerializer, responses={200: LeaseOutSerializer}, tags=["jobs"])
    def post(self, request: Request) -> Response:
        """Lease ready jobs of the kinds your token's audience may lease."""
        caller = caller_of(request)
        data = _body(LeaseInSerializer, request)
        leases = job_lease(
            tenant=caller.tenant,
            audience=caller.audience,
            kinds=data["kinds"],
            max_jobs=data["max"],
            lease_seconds=data["leaseSeconds"],
            holder=f"key:{caller.key.pk}",
        )
        jobs = [
            {
                "id": lease.job.pk,
                "kind": lease.job.kind,
                "attempts": lease.job.attempts,
                "maxAttempts": lease.job.max_attempts,
                "payload": lease.job.payload,
                "leaseToken": str(lease.token),
                "leaseExpiresAt": to_us(lease.expires_at),
            }
            for lease in leases
        ]
        return Response({"jobs": jobs})


class HeartbeatView(APIView):
    @extend_schema(
        request=HeartbeatInSerializer, responses={200: HeartbeatOutSerializer}, tags=["jobs"]
    )
    def post(self, request: Request, job_id: str) -> Response:
        """Extend your lease."""
        caller = caller_of(request)
        data = _body(HeartbeatInSerializer, request)
        expires = job_heartbeat(
            tenant=caller.tenant,
            audience=caller.audience,
            job_id=_job_id(job_id),
            token=data["leaseToken"],
            lease_seconds=data["leaseSeconds"],
        )
        return Response({"status": "leased", "leaseExpiresAt": to_us(expires)})


class CompleteView(APIView):
    @extend_schema(
        request=CompleteInSerializer, responses={200: CompleteOutSerializer}, tags=["jobs"]
    )
    def post(self, request: Request, job_id: str) -> Response:
        """Mark your leased job done."""
        caller = caller_of(request)
        data = _body(CompleteInSerializer, request)
        job_complete(
            tenant=caller.tenant,
            audience=caller.audience,
            job_id=_job_id(job_id),
            token=data["leaseToken"],
            result=data["result"],
        )
        return Response({"status": "done"})


class FailView(APIView):
    @extend_schema(request=FailInSerializer, responses={200: FailOutSerializer}, tags=["jobs"])
    def post(self, request: Request, job_id: str) -> Response:
        """Fail the current attempt (retryable: next attempt; skip reason codes at once)."""
        caller = caller_of(request)
        data = _body(FailInSerializer, request)
        job = job_fail(
            tenant=caller.tenant,
            audience=caller.audience,
            job_id=_job_id(job_id),
            token=data["leaseToken"],
            retryable=data["retryable"],
            reason=data["reason"],
            detail=data["detail"],
        )
        return Response({"status": job.status, "attempts": job.attempts})
