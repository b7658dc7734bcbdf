"""Document uploads for stewards: an upload form, and each document's job outcome."""

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import JSONField, OuterRef, Subquery
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import path, reverse

from graph.admin import SOURCE_TEXT_HIGHLIGHT
from graph.models import Source
from graph.services import acl_principal_valid
from jobs.models import Job
from tenancy.steward_admin import TenantScopedAdmin, steward_of

from .detection.build import MAX_FILE_BYTES
from .formats import SUPPORTED, SUPPORTED_LABEL, Refused, precheck_upload
from .highlight import highlighted
from .models import Document
from .uploads import UPLOAD_SYSTEM, document_upload

if highlighted not in SOURCE_TEXT_HIGHLIGHT:
    SOURCE_TEXT_HIGHLIGHT.append(highlighted)


class UploadForm(forms.Form):
    file = forms.FileField(
        help_text=f"A {SUPPORTED_LABEL.replace(' and ', ' or ')} file of at most 10 MB."
    )
    title = forms.CharField(required=False, max_length=500)
    acl = forms.CharField(required=False, help_text="Comma list, e.g. group:legal,email:a@b.c")
    restriction = forms.CharField(required=False, max_length=100)
    external_id = forms.CharField(
        required=False,
        max_length=500,
        label="Source id",
        help_text=(
            "Leave empty: the file is a new source, whatever its name. The id of an uploaded "
            "source (its externalId): the file is a new version of that source, under this ACL."
        ),
    )

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        name = upload.name.lower()
        if not any(name.endswith(s) for s in SUPPORTED):
            raise forms.ValidationError(f"Only {SUPPORTED_LABEL} files are accepted.")
        if upload.size > MAX_FILE_BYTES:
            raise forms.ValidationError("Files over 10 MB are not accepted.")
        try:
            precheck_upload(upload, upload.name)
        except Refused as exc:
            raise forms.ValidationError(f"Refused: {exc}") from exc
        return upload

    def clean_acl(self) -> list[str]:
        acl = [p.strip() for p in self.cleaned_data.get("acl", "").split(",") if p.strip()]
        if not all(acl_principal_valid(p) for p in acl):
            raise forms.ValidationError("Use group:NAME, email:ADDR or aad:OID.")
        return acl


@admin.register(Document)
class DocumentAdmin(TenantScopedAdmin):
    list_display = ("filename", "title", "size", "created_at", "job_status", "job_outcome")
    fields = (
        "filename",
        "external_id",
        "title",
        "size",
        "acl",
        "restriction",
        "uploaded_by",
        "created_at",
        "job_status",
        "job_outcome",
        "extracted_text",
    )
    readonly_fields = fields

    def get_urls(self) -> list[Any]:
        return [
            path(
                "upload/",
                self.admin_site.admin_view(self.upload_view),
                name="ingest_document_upload",
            ),
            *super().get_urls(),
        ]

    def get_queryset(self, request: HttpRequest) -> Any:
        # Each row's job comes along in the list query (no query per row).
        job = Job.objects.filter(pk=OuterRef("job_id"))
        return (
            super()
            .get_queryset(request)
            .annotate(
                job_status_=Subquery(job.values("status")[:1]),
                job_result_=Subquery(job.values("result")[:1], output_field=JSONField()),
                job_error_=Subquery(job.values("last_error")[:1]),
            )
        )

    def _job(self, obj: Document) -> Job | None:
        if not obj.job_id:
            return None
        if hasattr(obj, "job_status_"):  # annotated by get_queryset (no query per row)
            status = getattr(obj, "job_status_", None)
            if status is None:
                return None
            return Job(
                pk=obj.job_id,
                status=status,
                result=getattr(obj, "job_result_", None),
                last_error=getattr(obj, "job_error_", None) or "",
            )
        return Job.objects.filter(pk=obj.job_id).first()

    @admin.display(description="job")
    def job_status(self, obj: Document) -> str:
        job = self._job(obj)
        return f"#{job.pk} {job.status}" if job else "-"

    @admin.display(description="outcome")
    def job_outcome(self, obj: Document) -> str:
        if obj.refused:
            return f"Refused: {obj.refused}"
        job = self._job(obj)
        if job is None:
            return "-"
        if job.result:
            r = job.result
            # Sorted by kind: PostgreSQL's jsonb does not keep the order the worker wrote.
            found = sorted((r.get("ambiguities") or {}).items())
            kinds = ", ".join(f"{k} {v}" for k, v in found)
            return (
                f"{r.get('facts', 0)} facts, ambiguities: {kinds or 'none'}, "
                f"{r.get('opened', 0)} opened, {r.get('deduplicated', 0)} deduplicated"
            )
        return job.last_error or "waiting for the worker"

    @admin.display(description="extracted text")
    def extracted_text(self, obj: Document) -> str:
        """The text the detection job extracted (the source version it wrote), each
        ambiguous phrase highlighted and linked to its clarification. The version is the
        document's own (found by id); a document applied before versions were linked
        shows its source's latest."""
        if obj.source_version_id is not None:
            return highlighted(obj.source_version)
        if obj.refused or not obj.external_id:
            return highlighted(None)
        source = Source.objects.filter(
            tenant=obj.tenant, system=UPLOAD_SYSTEM, external_id=obj.external_id
        ).first()
        return highlighted(source.versions.order_by("-tx").first() if source else None)

    def upload_view(self, request: HttpRequest) -> HttpResponse:
        steward = steward_of(request)
        assert steward is not None
        form = UploadForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            document = document_upload(
                tenant=steward.tenant,
                filename=upload.name,
                content=upload,
                size=upload.size,
                title=form.cleaned_data["title"],
                acl=form.cleaned_data["acl"],
                restriction=form.cleaned_data["restriction"] or None,
                uploaded_by=f"steward:{steward.pk}",
                external_id=form.cleaned_data["external_id"].strip() or None,
            )
            messages.success(
                request,
                f"Uploaded {document.filename}; job #{document.job_id} "
                "will detect its ambiguities.",
            )
            return HttpResponseRedirect(reverse("admin:ingest_document_changelist"))
        return render(
            request,
            "admin/ingest/upload.html",
            {
                **self.admin_site.each_context(request),
                "form": form,
                "title": "Upload a document",
                "opts": self.opts,
            },
        )
