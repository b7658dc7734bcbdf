"""Ingesting many files at once (`telha ingest`): the files the command names, each with
its source identity and read as every command reads it (`files_read`, shared with
`telha detect`), detected one by one, applied in batches (`submissions_apply`: one
statement per table per batch, each document all-or-nothing), and an unchanged file
recognised by its fingerprint before detection or any write.

A file's source identity (externalId, CONTRACT §2) is its path under the root
(`--root`, default the current folder), whatever path named it: itself or a folder
holding it, relative or absolute, through `.`, `..` or a symbolic link to a folder —
one file, one source (`source_external_id`). A file outside the root is refused.

A file's fingerprint covers everything its submission is derived from: its bytes and
date, the options of the run (source system, clarify, ACL, restriction) and the people
directory detection resolves names with, and the version of the detection rules. A
re-scan skips a file whose fingerprint is the one recorded when the source's latest
version was applied (`IngestedFile`), and reports what that run reported, as a second run
would (nothing opened, its clarifications deduplicated)."""

import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.db.models import OuterRef, Subquery

from common.codes import JobReason
from common.errors import DomainError
from graph.models import SourceVersion
from tenancy.models import Tenant

from .api.serializers import SubmissionInSerializer
from .detection.build import MAX_FILE_BYTES, FileInput
from .documents import IngestOptions, IngestOutcome, Prepared, _counted, ingest_prepare
from .formats import SUPPORTED, Refused
from .models import IngestedFile
from .services import submissions_apply

# Bump when detection or to_submission changes what the same file yields: every file is
# then detected again on the next run.
DETECTION_VERSION = "4"  # 2: a lone "\r" is a line break; 3: dates read by the temporal tagger;
# 4: the document's `date` (DOCUMENT_DATE) and `term` facts, PDF text read like plain text


EXTERNAL_ID_MAX = 500  # a source's externalId (CONTRACT §3.1)


class OutsideRoot(Refused):
    """A file that is not under the run's root: it has no source identity there."""


# --- which files, and which source each is ------------------------------------------------


def _walk(folder: Path) -> Iterator[Path]:
    """Supported files under `folder`, depth first in name order (the order of the sorted
    paths), holding one directory listing per level, not the whole tree. Symbolic links
    to folders are not followed."""
    with os.scandir(folder) as entries:
        listing = sorted(
            (e.name, e.is_dir(follow_symlinks=False))
            for e in entries
            if e.is_dir(follow_symlinks=False) or Path(e.name).suffix.lower() in SUPPORTED
        )
    for name, is_dir in listing:
        path = folder / name
        if is_dir:
            yield from _walk(path)
        elif path.is_file():
            yield path


def iter_files(paths: list[str]) -> Iterator[Path]:
    """The files the given paths name, as named (a folder's files joined to it), streamed
    in a stable order. A file named directly is yielded whatever its type (and then
    refused as unsupported); inside folders only supported suffixes are walked. A missing
    path raises FileNotFoundError (before anything of it is yielded)."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            yield from _walk(path)
        elif path.is_file():
            yield path
        else:
            raise FileNotFoundError(raw)


def source_external_id(path: Path, root: Path) -> str:
    """The source identity (externalId) of the file at `path`: its path under `root`, in
    `/` form, whatever path named it — relative or absolute, through `.`, `..` or a
    symbolic link to a folder (the file's folder and the root are resolved; the file's
    own name is kept, so a link to a file is a source of its own). Raises `OutsideRoot`
    for a file not under the root, and `Refused` for one whose path under it is longer
    than an externalId may be."""
    absolute = Path(os.path.abspath(path))
    where = absolute.parent.resolve() / absolute.name
    base = root.resolve()
    try:
        relative = where.relative_to(base)
    except ValueError:
        raise OutsideRoot(
            f"outside the root: {where} is not under {base} (name a --root that holds it)"
        ) from None
    external_id = relative.as_posix()
    if len(external_id) > EXTERNAL_ID_MAX:
        raise Refused(f"too long: its path under the root is over {EXTERNAL_ID_MAX} characters")
    return external_id


@dataclass(frozen=True)
class FileRead:
    """One file a command named, read: `file` as named, `external_id` its source's
    identity, and `input` what detection reads — or `error`, why it is not read."""

    file: str
    external_id: str = ""
    input: FileInput | None = None
    error: str = ""


def file_read(path: Path, root: Path, *, anywhere: bool = False) -> FileRead:
    """One file as `telha ingest` (and `telha detect`) reads it: its identity under
    `root`, its bytes and date; refused (not read) outside the root or over 10 MB.
    `anywhere` (`telha detect`, which writes nothing and so needs no identity): a file
    outside the root is read all the same, with no externalId."""
    named = str(path)
    try:
        external_id = source_external_id(path, root)
    except OutsideRoot as exc:
        if not anywhere:
            return FileRead(file=named, error=str(exc))
        external_id = ""
    except Refused as exc:
        return FileRead(file=named, error=str(exc))
    try:
        stat = path.stat()
        if stat.st_size > MAX_FILE_BYTES:
            return FileRead(named, external_id, error="too large: file over 10 MB")
        data = path.read_bytes()
    except OSError as exc:
        return FileRead(named, external_id, error=f"unreadable: {exc.strerror or exc}")
    modified = datetime.fromtimestamp(stat.st_mtime, tz=UTC)
    name = external_id or path.name
    return FileRead(named, external_id, FileInput(name, data, modified, external_id=name))


def files_read(paths: list[str], *, root: Path, anywhere: bool = False) -> Iterator[FileRead]:
    """Every file the paths name (`iter_files`), read one at a time (`file_read`)."""
    for path in iter_files(paths):
        yield file_read(path, root, anywhere=anywhere)


# --- ingesting them ---------------------------------------------------------------------


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
    prints = {f.identity: file_fingerprint(f, digest) for f in files}
    known = _unchanged(tenant, options.system, prints)
    outcomes: list[IngestOutcome] = []
    todo: list[Prepared] = []
    shape = SubmissionInSerializer()
    for file in files:
        if file.identity in known:
            outcomes.append(_rescanned(file, known[file.identity]))
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
            fingerprint=prints[outcome.external_id],
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
    """`{externalId: recorded summary}` of the files whose fingerprint is the one recorded
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


def _rescanned(file: FileInput, summary: dict[str, Any]) -> IngestOutcome:
    return IngestOutcome(
        file=file.name,
        external_id=file.identity,
        facts=int(summary.get("facts", 0)),
        ambiguities=Counter(summary.get("ambiguities", {})),
        opened=0,
        deduplicated=int(summary.get("clarifications", 0)),
    )


def _error_text(exc: Exception | None) -> str:
    if isinstance(exc, DomainError):
        return f"{exc.code}: {exc.detail}"
    return f"{JobReason.INGEST_FAILED}: {type(exc).__name__}: {exc}"
