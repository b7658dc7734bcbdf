"""Erasure of uploads (part of `gdpr_erase`): a document's fields, its stored file and its
stored file's name. Storage keeps its own form of the uploaded name (see
`privacy.filenames`), so the stored name is matched in that form, and a stored file that
names the person, or whose uploaded name does, is renamed to a neutral name — the
document's id — whatever its content."""

import posixpath
from typing import Any

from django.core.files.base import ContentFile
from django.db import transaction

from clarify.stewardship import ERASED, ErasureSubject
from graph.models import Source
from ingest.formats import SUPPORTED, suffix_of
from ingest.models import Document
from ingest.uploads import UPLOAD_SYSTEM, stored_name_for
from jobs.models import Job
from tenancy.models import Tenant

from .filenames import FileNameSubject


def documents_scrub(*, tenant: Tenant, subject: ErasureSubject, principals: set[str]) -> int:
    """Uploads: ACL principals naming the person dropped; their mentions erased from the
    uploaded name, title, uploader mark and source id — an uploaded name that still names them in a
    file name's form (`YaraQuint.pdf`) replaced whole by a neutral one (`erased.pdf`), in
    its copies too (the job's result, the source's title); the stored file rewritten with
    their mentions erased when its content names them, and moved to a neutral name when
    its stored or uploaded name does, in any form. The old file is deleted once the
    erasure commits (a rollback leaves it as it was). Returns how many documents changed."""
    changed = 0
    names = FileNameSubject.of(subject)
    for doc in Document.objects.filter(tenant=tenant):
        fields: dict[str, Any] = {}
        acl = [p for p in doc.acl if p.lower() not in principals]
        acl = [p for p in acl if not subject.pattern.search(p)]
        if acl != doc.acl:
            fields["acl"] = acl
        # The source id too (an uploader's own, naming them), when the source's renaming
        # (`upload_sources_renamed`) has not already carried it over.
        for name in ("title", "uploaded_by", "external_id"):
            value = subject.text(getattr(doc, name))
            if value != getattr(doc, name):
                fields[name] = value
        filename = _uploaded_name_scrubbed(doc, subject, names)
        if filename != doc.filename:
            fields["filename"] = filename
        named = names.mentions(doc.file.name or "") or names.mentions(doc.filename)
        rewritten = _stored_file_scrubbed(doc, subject, named=named)
        if rewritten is not None:
            fields["file"], fields["size"] = rewritten
        if fields:
            Document.objects.filter(pk=doc.pk).update(**fields)
            changed += 1
    return changed


def _uploaded_name_scrubbed(doc: Document, subject: ErasureSubject, names: FileNameSubject) -> str:
    """The uploaded name with the person's mentions erased; when it still names them in a
    file name's form, a neutral name, replacing its exact copies (the job's result, the
    title of the source it was applied to) as well."""
    filename = subject.text(doc.filename)
    if not names.mentions(filename):
        return filename
    suffix = suffix_of(doc.filename)
    neutral = ERASED + (suffix if suffix in SUPPORTED else "")
    job = Job.objects.filter(pk=doc.job_id, tenant=doc.tenant_id).first() if doc.job_id else None
    if job is not None and isinstance(job.result, dict) and job.result.get("file") == filename:
        job.result = {**job.result, "file": neutral}
        job.save(update_fields=["result", "updated_at"])
    Source.objects.filter(
        tenant=doc.tenant_id,
        system=UPLOAD_SYSTEM,
        external_id=doc.external_id,
        title=filename,
    ).update(title=neutral)
    return neutral


def _stored_file_scrubbed(
    doc: Document, subject: ErasureSubject, *, named: bool
) -> tuple[str, int] | None:
    """The upload's stored file rewritten — the person's mentions erased from its content,
    under a neutral name (`documents/2026/12/<document id>.pdf`) — as (new name, new
    size); None when neither its content nor its names mention them. A stored file that is
    gone keeps no name that names them (the name is cleared)."""
    old_name = doc.file.name or ""
    if not old_name:
        return None
    try:
        with doc.file.open("rb") as fh:
            data = fh.read()
    except OSError:
        return ("", doc.size) if named or subject.pattern.search(old_name) else None
    text = data.decode("utf-8", errors="surrogateescape")
    redacted = subject.text(text)
    if redacted == text and not named and not subject.pattern.search(old_name):
        return None
    content = redacted.encode("utf-8", errors="surrogateescape")
    storage = doc.file.storage
    neutral = posixpath.join(posixpath.dirname(old_name), stored_name_for(doc))
    new_name = storage.save(neutral, ContentFile(content))
    transaction.on_commit(lambda: storage.delete(old_name))
    return new_name, len(content)


def upload_sources_renamed(*, tenant: Tenant, system: str, old: str, new: str) -> None:
    """A source's external id changed by the erasure: the uploads applied to it follow."""
    if system == UPLOAD_SYSTEM:
        Document.objects.filter(tenant=tenant, external_id=old).update(external_id=new)
