"""Ingesting files: the one code path behind `telha ingest`, the `ingest:document` job
worker and uploads (stored and enqueued by `uploads.document_upload`). Detection →
Submission → the same validation and apply as the API."""

import logging
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.serializers import as_serializer_error

from common.codes import JobReason
from common.errors import DomainError, SubmissionInvalid, flatten_errors
from graph.models import SourceVersion
from jobs.services import Lease, job_complete, job_fail
from tenancy.models import AliasKind, PersonAlias, Tenant

from .api.serializers import SubmissionInSerializer
from .detection.build import FileInput, detect, to_submission
from .formats import Refused
from .models import Document
from .plan import SubmissionPlan
from .services import submission_apply, submission_plan
from .uploads import UPLOAD_SYSTEM

log = logging.getLogger(__name__)


@dataclass
class IngestOutcome:
    """What ingesting one file did (or why it was refused: `error`)."""

    file: str
    external_id: str = ""
    facts: int = 0
    ambiguities: Counter = field(default_factory=Counter)
    opened: int = 0
    deduplicated: int = 0
    error: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "externalId": self.external_id,
            "facts": self.facts,
            "ambiguities": dict(self.ambiguities),
            "opened": self.opened,
            "deduplicated": self.deduplicated,
            "error": self.error,
        }


def people_by_name(tenant: Tenant) -> dict[str, str]:
    """The tenant's directory for detection: lower-cased names, emails and UPNs of its
    people → their email (to resolve "signed by …" and a document's metadata author)."""
    names: dict[str, str] = {}
    people = tenant.people.filter(erased_at__isnull=True)
    for name, email in people.values_list("name", "email"):
        names.setdefault(name.lower(), email)
        names.setdefault(email.lower(), email)
    upns = PersonAlias.objects.filter(
        tenant=tenant, kind=AliasKind.UPN, person__erased_at__isnull=True
    ).values_list("value", "person__email")
    for upn, email in upns:
        names.setdefault(upn.lower(), email)
    return names


@dataclass
class Prepared:
    """A file detected and planned (or refused: `outcome.error`), not yet applied."""

    outcome: IngestOutcome
    data: dict[str, Any] | None = None
    plan: SubmissionPlan | None = None


@dataclass(frozen=True)
class IngestOptions:
    """How a file becomes a submission: its source system, whether its ambiguities open
    clarifications, the source's ACL, restriction and title, and the people directory
    detection resolves names with (name → email; None: read the tenant's)."""

    system: str = "files"
    clarify: bool = True
    acl: list[str] | None = None
    restriction: str | None = None
    title: str | None = None
    names: dict[str, str] | None = None


DEFAULT_OPTIONS = IngestOptions()


def ingest_prepare(
    *,
    tenant: Tenant,
    file: FileInput,
    options: IngestOptions = DEFAULT_OPTIONS,
    shape: SubmissionInSerializer | None = None,
) -> Prepared:
    """Detect one file and plan its submission (reads nothing but the directory, writes
    nothing). Refusals (unsupported type, an invalid submission) are in the outcome.

    `shape`: a `SubmissionInSerializer()` to validate with, reused across a run's files
    (`run_validation` keeps no state; building the serializer's field tree is a third of
    the cost of validating a small submission)."""
    outcome = IngestOutcome(file=file.name, external_id=file.identity)
    try:
        names = options.names
        detection = detect(
            file, people_by_name=names if names is not None else people_by_name(tenant)
        )
        data = to_submission(
            detection,
            system=options.system,
            external_id=file.identity,
            clarify=options.clarify,
            acl=options.acl,
            restriction=options.restriction,
            title=options.title,
        )
        try:
            valid = (shape or SubmissionInSerializer()).run_validation(data)
        except ValidationError as exc:
            raise SubmissionInvalid(flatten_errors(as_serializer_error(exc))) from None
        plan = submission_plan(valid)
    except Refused as exc:
        outcome.error = str(exc)
        return Prepared(outcome)
    except DomainError as exc:
        outcome.error = f"{exc.code}: {exc.detail}"
        return Prepared(outcome)
    outcome.facts = sum(1 for n in data["nodes"] if "PERSON" not in n["labels"])
    outcome.ambiguities.update(a["kind"] for a in data["ambiguities"])
    return Prepared(outcome, data, plan)


def _counted(outcome: IngestOutcome, result: dict[str, Any]) -> IngestOutcome:
    for clar in result["clarifications"]:
        if clar["deduplicated"]:
            outcome.deduplicated += 1
        else:
            outcome.opened += 1
    return outcome


def ingest_file(
    *, tenant: Tenant, file: FileInput, options: IngestOptions = DEFAULT_OPTIONS
) -> IngestOutcome:
    """Detect and apply one file. Refusals (unsupported type, an invalid submission) are
    reported in the outcome and write nothing."""
    return _ingest_applied(tenant=tenant, file=file, options=options)[0]


def _ingest_applied(
    *, tenant: Tenant, file: FileInput, options: IngestOptions
) -> tuple[IngestOutcome, dict[str, Any] | None]:
    """`ingest_file`, with the submission's 201 body when it was applied."""
    prepared = ingest_prepare(tenant=tenant, file=file, options=options)
    if prepared.plan is None:
        return prepared.outcome, None
    try:
        result = submission_apply(tenant=tenant, plan=prepared.plan)
    except DomainError as exc:
        prepared.outcome.error = f"{exc.code}: {exc.detail}"
        return prepared.outcome, None
    return _counted(prepared.outcome, result), result


def document_applied(document: Document, result: dict[str, Any] | None) -> None:
    """Link an uploaded document to the source version its job wrote (or found identical):
    the version of its own source (`external_id`) at the 201 body's `sourceVersionTx`."""
    if result is None:
        return
    version = SourceVersion.objects.filter(
        source__tenant=document.tenant_id,
        source__system=UPLOAD_SYSTEM,
        source__external_id=document.external_id or document.filename,
        tx=result["sourceVersionTx"],
    ).first()
    document.source_version = version
    document.save(update_fields=["source_version"])


def document_refused(document: Document, reason: str) -> None:
    """A file its job refused (corrupt or over a limit, known only once extracted): like
    a refusal at upload, nothing of it stays — the stored file is deleted — but the
    Document row, marked `refused` with the reason, is the refusal record (the admin's
    document list; the job keeps the reason too: `INGEST_FAILED: reason`)."""
    document.file.delete(save=False)
    document.refused = reason[:2000]
    document.save(update_fields=["file", "refused"])
    log.info("document %s refused by its job: %s", document.pk, reason)


def handle_lease(lease: Lease) -> None:
    """The `ingest:` worker: ambiguities are emitted only when the job's capability flag
    `options.clarify` is true (the core sets it when clarify is enabled)."""
    job = lease.job
    payload = job.payload if isinstance(job.payload, dict) else {}
    try:
        document_id = uuid.UUID(str(payload.get("documentId")))
    except ValueError:
        document = None
    else:
        document = Document.objects.filter(pk=document_id, tenant=job.tenant_id).first()
    if document is None:
        job_fail(
            tenant=None,
            job_id=job.pk,
            token=lease.token,
            retryable=False,
            reason=JobReason.DOCUMENT_MISSING,
        )
        return
    clarify = bool((payload.get("options") or {}).get("clarify"))
    with document.file.open("rb") as fh:
        data = fh.read()
    file = FileInput(
        name=document.filename,
        data=data,
        modified=document.created_at,
        external_id=document.external_id or document.filename,
    )
    options = IngestOptions(
        system=UPLOAD_SYSTEM,
        clarify=clarify,
        acl=document.acl or None,
        restriction=document.restriction,
        title=document.title or None,
    )
    outcome, result = _ingest_applied(tenant=document.tenant, file=file, options=options)
    if outcome.error:
        job_fail(
            tenant=None,
            job_id=job.pk,
            token=lease.token,
            retryable=False,
            reason=JobReason.INGEST_FAILED,
            detail=outcome.error,
        )
        document_refused(document, outcome.error)
        return
    document_applied(document, result)
    job_complete(
        tenant=None,
        job_id=job.pk,
        token=lease.token,
        result={**outcome.as_dict(), "clarify": clarify},
    )
