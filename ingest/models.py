"""Uploaded documents waiting for (or done with) the detection worker."""

import uuid

from django.db import models

from tenancy.models import Tenant


class Document(models.Model):
    """A file uploaded through `POST /v1/documents` or the steward admin; the
    `ingest:document` job that processes it carries this id. Its source (system `upload`)
    is `external_id`: the uploader's, when they name one (a new version of that source),
    else the document's own id (every upload its own source, whatever its file name)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="documents")
    filename = models.CharField(max_length=255)
    file = models.FileField(upload_to="documents/%Y/%m/")
    size = models.PositiveIntegerField()
    title = models.CharField(max_length=500, blank=True)
    acl = models.JSONField(default=list, blank=True)
    restriction = models.CharField(max_length=100, null=True, blank=True)
    uploaded_by = models.CharField(max_length=200, blank=True)
    external_id = models.CharField(max_length=500, blank=True, default="")
    # The source version the job wrote (or found identical): what the admin's text view
    # shows. Unset until the job has applied the file.
    source_version = models.ForeignKey(
        "graph.SourceVersion",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    job_id = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Why the job refused the file (found only while extracting: corrupt, over a limit);
    # the stored file is then deleted and this row is the refusal record.
    refused = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.filename


class IngestedFile(models.Model):
    """What `telha ingest` last applied for a source: the fingerprint of its input (the
    file's bytes and date, the options and the people directory detection read) and the
    source version it produced. A re-scan whose fingerprint matches, while that version
    is still the source's latest, is recognised before any detection or write."""

    source = models.OneToOneField(
        "graph.Source", on_delete=models.CASCADE, related_name="ingested_file"
    )
    source_version = models.ForeignKey("graph.SourceVersion", on_delete=models.CASCADE)
    fingerprint = models.CharField(max_length=64)
    # What the file's outcome said: {"facts", "ambiguities": {kind: n}, "clarifications"}
    summary = models.JSONField(default=dict)

    def __str__(self) -> str:
        return f"{self.source_id} @ {self.fingerprint[:12]}"
