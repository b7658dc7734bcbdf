"""`POST /v1/documents` (CONTRACT §3.1b): upload a file for the detection worker."""

from pathlib import PurePosixPath
from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import parsers, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from common.codes import ErrorCode
from common.errors import DomainError, InvalidInput
from graph.services import acl_principal_valid
from ingest.detection.build import MAX_FILE_BYTES
from ingest.formats import (
    SUPPORTED,
    SUPPORTED_LABEL,
    OverLimit,
    Refused,
    Unreadable,
    Unsupported,
    precheck_upload,
)
from ingest.uploads import INGEST_DOCUMENT_KIND, document_upload
from tenancy.auth import IsIngestServiceOrSteward, caller_of

EXTERNAL_ID_MAX = 500  # a source's externalId (CONTRACT §3.1)


class UnsupportedDocument(DomainError):
    status_code = 415
    code = ErrorCode.UNSUPPORTED_MEDIA_TYPE
    default_detail = f"Only {SUPPORTED_LABEL} files are accepted."


class DocumentUnreadable(DomainError):
    status_code = 422
    code = ErrorCode.DOCUMENT_UNREADABLE
    default_detail = "The file is encrypted or cannot be read."


class DocumentTooLarge(DomainError):
    status_code = 413
    code = ErrorCode.PAYLOAD_TOO_LARGE
    default_detail = "Files over 10 MB are not accepted."


REFUSALS: dict[type[Refused], type[DomainError]] = {
    Unsupported: UnsupportedDocument,
    OverLimit: DocumentTooLarge,
    Unreadable: DocumentUnreadable,
}


def refuse_document(upload: Any, name: str) -> None:
    """The cheap checks before anything is stored (content sniffing, encryption,
    declared sizes, the page count): 415, 413 or 422 with the reason. Extracting the
    text is the detection job's work."""
    if PurePosixPath(name).suffix.lower() not in SUPPORTED:
        raise UnsupportedDocument()
    try:
        precheck_upload(upload, name)
    except Refused as exc:
        raise REFUSALS.get(type(exc), DocumentUnreadable)(str(exc)) from exc


class DocumentUploadView(APIView):
    permission_classes = [IsIngestServiceOrSteward]
    parser_classes = [parsers.MultiPartParser]

    @extend_schema(
        request={
            "multipart/form-data": inline_serializer(
                "DocumentUpload",
                {
                    "file": serializers.FileField(),
                    "title": serializers.CharField(required=False),
                    "acl": serializers.CharField(required=False),
                    "restriction": serializers.CharField(required=False),
                    "externalId": serializers.CharField(
                        required=False,
                        max_length=EXTERNAL_ID_MAX,
                        help_text=(
                            "The source this file is a new version of. Without it every "
                            "upload is a new source, whatever its file name."
                        ),
                    ),
                },
            )
        },
        responses={
            202: inline_serializer(
                "DocumentAccepted",
                {"jobId": serializers.IntegerField(), "kind": serializers.CharField()},
            )
        },
        tags=["ingest"],
    )
    def post(self, request: Request) -> Response:
        """Store the file and enqueue an `ingest:document` job (202 with its id)."""
        length = int(request.META.get("CONTENT_LENGTH") or 0)
        if length > MAX_FILE_BYTES + 64 * 1024:
            raise DocumentTooLarge()
        upload = request.FILES.get("file")
        if upload is None:
            raise InvalidInput("Send the document as the multipart field `file`.")
        if upload.size is not None and upload.size > MAX_FILE_BYTES:
            raise DocumentTooLarge()
        name = PurePosixPath(upload.name or "").name
        refuse_document(upload, name)
        form: Any = request.data
        fields = ("title", "acl", "restriction", "externalId")
        if any("\x00" in str(form.get(field, "")) for field in fields):
            raise InvalidInput("Form fields must not contain U+0000.")  # PostgreSQL can't store it
        acl = [p.strip() for p in str(form.get("acl", "")).split(",") if p.strip()]
        if not all(acl_principal_valid(p) for p in acl):
            raise InvalidInput("acl takes group:NAME, email:ADDR or aad:OID principals.")
        external_id = str(form.get("externalId") or "").strip()
        if len(external_id) > EXTERNAL_ID_MAX:
            raise InvalidInput(f"externalId is at most {EXTERNAL_ID_MAX} characters.")
        caller = caller_of(request)
        document = document_upload(
            tenant=caller.tenant,
            filename=name,
            content=upload,
            size=upload.size or 0,
            title=str(form.get("title", ""))[:500],
            acl=acl,
            restriction=str(form.get("restriction") or "")[:100] or None,
            uploaded_by=f"key:{caller.key.pk}",
            external_id=external_id or None,
        )
        return Response({"jobId": document.job_id, "kind": INGEST_DOCUMENT_KIND}, status=202)
