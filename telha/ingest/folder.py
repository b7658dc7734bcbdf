"""Ingesting many files at once (`telha ingest`): detected one by one, applied in batches
(`submissions_apply`: one statement per table per batch, each document all-or-nothing),
and an unchanged file recognised by its fingerprint before detection or any write.

A file's fingerprint covers everything its submission is derived from: its bytes and
date, the options of the run (source system, clarify, ACL, restriction) and the people
directory detection resolves names with, and the version of the detection rules. A
re-scan skips a file whose fingerprint is the one recorded when the source's latest
version was applied (`IngestedFile`), and reports what that run reported, as a second run
would (nothing opened, its clarifications deduplicated)."""

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.db.models import OuterRef, Subquery

from telha.common.errors import DomainError
from telha.graph.models import SourceVersion
from telha.tenancy.models import Tenant

from .api.serializers import SubmissionInSerializer
from .detection.build import FileInput
from .documents import IngestOptions, IngestOutcome, Prepared, _counted, ingest_prepare
from .models import IngestedFile
from .services import submissions_apply

# Bump when detection or to_submission changes what the same file yields: every file is
# then detected again on the next run.
DETECTION_VERSION = "2"  # 2: dates read by the temporal tagger (issue 29)


@dataclass(frozen=True)
class FolderOptions(IngestOptions):
    """The options of a run, shared by its files (no title: each file's is its own; the
    people directory read once for the run)."""

    names: dict[str, str] = field(default_factory=dict)

    def digest(self) -> bytes:
        """What every file's fingerprint shares: the options and the directory."""
        raw = json.dumps(
            [DETECTION_VERSION, self.system, self.clarify, self.acl, self.restriction, self.names],
            sort_keys=True,
        )
        return hashlib.sha256(raw.encode()).digest()


def file_fingerprint(file: FileInput, digest: bytes) -> str:
    """The fingerprint of one file's input under a run's options digest."""
    h = hashlib.sha256(digest)
    h.update((file.modified.isoformat() if file.modified else "-").encode() + b"\x00")
    h.update(file.data)
    return h.hexdigest()


def files_ingest(
    *, tenant: Tenant, files: list[FileInput], options: FolderOptions, digest: bytes
) -> list[IngestOutcome]:
    """Ingest a batch of files: the unchanged ones recognised (one query), the others
    detected, applied together and their fingerprints recorded. One outcome per file."""
    prints = {f.name: file_fingerprint(f, digest) for f in files}
    known = _unchanged(tenant, options.system, prints)
    outcomes: list[IngestOutcome] = []
    todo: list[Prepared] = []
    shape = SubmissionInSerializer()
    for file in files:
        if file.name in known:
            outcomes.append(_rescanned(file.name, known[file.name]))
            continue
        prepared = ingest_prepare(tenant=tenant, file=file, options=options, shape=shape)
        outcomes.append(prepared.outcome)
        if prepared.plan is not None:
            todo.append(prepared)
    applied = submissions_apply(tenant=tenant, plans=[p.plan for p in todo if p.plan])
    records: dict[Any, IngestedFile] = {}
    for prepared, result in zip(todo, applied, strict=True):
        outcome = prepared.outcome
        if result.error is not None or result.result is None or result.source_version is None:
            outcome.error = _error_text(result.error)
            continue
        _counted(outcome, result.result)
        sv = result.source_version
        records[sv.source_id] = IngestedFile(
            source_id=sv.source_id,
            source_version=sv,
            fingerprint=prints[outcome.file],
            summary={
                "facts": outcome.facts,
                "ambiguities": dict(outcome.ambiguities),
                "clarifications": outcome.opened + outcome.deduplicated,
            },
        )
    IngestedFile.objects.bulk_create(
        list(records.values()),
        update_conflicts=True,
        unique_fields=["source"],
        update_fields=["source_version", "fingerprint", "summary"],
    )
    return outcomes


def _unchanged(tenant: Tenant, system: str, prints: dict[str, str]) -> dict[str, dict[str, Any]]:
    """`{file name: recorded summary}` of the files whose fingerprint is the one recorded
    for their source's latest version (one query)."""
    latest = SourceVersion.objects.filter(source=OuterRef("source")).order_by("-tx").values("pk")
    rows = (
        IngestedFile.objects.filter(
            source__tenant=tenant,
            source__system=system,
            source__external_id__in=list(prints),
            fingerprint__in=set(prints.values()),
        )
        .annotate(latest=Subquery(latest[:1]))
        .values_list("source__external_id", "fingerprint", "source_version_id", "latest", "summary")
    )
    return {
        name: summary
        for name, fingerprint, version, latest_version, summary in rows
        if prints.get(name) == fingerprint and version == latest_version
    }


def _rescanned(name: str, summary: dict[str, Any]) -> IngestOutcome:
    return IngestOutcome(
        file=name,
        facts=int(summary.get("facts", 0)),
        ambiguities=Counter(summary.get("ambiguities", {})),
        opened=0,
        deduplicated=int(summary.get("clarifications", 0)),
    )


def _error_text(exc: Exception | None) -> str:
    if isinstance(exc, DomainError):
        return f"{exc.code}: {exc.detail}"
    return f"INGEST_FAILED: {type(exc).__name__}: {exc}"
