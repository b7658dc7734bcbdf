"""`POST /v1/submissions` (CONTRACT §3.1)."""

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from common.errors import SubmissionInvalid, flatten_errors
from ingest.services import submission_apply, submission_plan
from tenancy.auth import IsIngestService, caller_of

from .serializers import SubmissionInSerializer, SubmissionResultSerializer


class SubmissionView(APIView):
    permission_classes = [IsIngestService]

    @extend_schema(
        request=SubmissionInSerializer,
        responses={201: SubmissionResultSerializer},
        tags=["ingest"],
    )
    def post(self, request: Request) -> Response:
        """Validate the whole submission, then apply it in one transaction."""
        shape = SubmissionInSerializer(data=request.data)
        if not shape.is_valid():
            raise SubmissionInvalid(flatten_errors(shape.errors))
        plan = submission_plan(shape.validated_data)
        result = submission_apply(tenant=caller_of(request).tenant, plan=plan)
        return Response(SubmissionResultSerializer(result).data, status=201)
