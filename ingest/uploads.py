"""An uploaded document (the API's `POST /v1/documents`, the admin's upload form): the
file stored and its `ingest:document` job enqueued in one transaction; the job's worker
(`documents.handle_lease`) detects and applies it.

Each upload is its own source (system `upload`, externalId the document's id) unless the
uploader names an `externalId`: then it is a new version of that source, applied by the
job through the same checks as any resubmission (the whole submission validated first, a
restriction never lifted, cards of people the new ACL no longer lets read revoked). The
file name is never the source's identity: two files called `report.pdf` are two sources,
each under its own ACL (CONTRACT §3.1b)."""

from typing import Any

from django.db import transaction

from jobs.services import job_enqueue
from tenancy.models import Tenant

from .formats import SUPPORTED, suffix_of
from .models import Document

INGEST_DOCUMENT_KIND = "ingest:document"
UPLOAD_SYSTEM = "upload"  # the source system of uploaded documents


def stored_name_for(document: Document) -> str:
    """The name an upload is stored under (in `documents/YYYY/MM/`): the document's id and
    the uploaded name's suffix, never the uploaded name, which may name a person (it is
    kept on the document, where the erasure finds it)."""
    suffix = suffix_of(document.filename)
    return f"{document.pk}{suffix if suffix in SUPPORTED else ''}"


@transaction.atomic
def document_upload(
    *,
    tenant: Tenant,
    filename: str,
    content: Any,
    size: int,
    title: str = "",
    acl: list[str] | None = None,
    restriction: str | None = None,
    uploaded_by: str = "",
    external_id: str | None = None,
) -> Document:
    """Store an uploaded file and enqueue its `ingest:document` job (same transaction).
    The document's source is `external_id` when given, else its own id."""
    document = Document(
        tenant=tenant,
        filename=filename[:255],
        size=size,
        title=title[:500],
        acl=acl or [],
        restriction=restriction or None,
        uploaded_by=uploaded_by[:200],
    )
    document.external_id = (external_id or "")[:500] or str(document.pk)
    document.file.save(stored_name_for(document), content, save=False)
    document.save()
    job = job_enqueue(
        tenant=tenant,
        kind=INGEST_DOCUMENT_KIND,
        payload={"v": 1, "documentId": str(document.pk)},
        priority=2,
        subject=str(document.pk),
    )
    document.job_id = job.pk
    document.save(update_fields=["job_id"])
    from jobs import dispatch

    transaction.on_commit(lambda: dispatch.kick(INGEST_DOCUMENT_KIND))
    return document
