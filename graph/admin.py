"""Sources (with their ACLs) and facts, viewable by stewards; nothing here edits a version.
A steward may change a source's restriction label and its ACL (both audited); narrowing
an ACL revokes the open cards of whoever lost read access (`graph.access` seam)."""

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin
from django.db import transaction
from django.http import HttpRequest
from django.utils.html import format_html_join

from common.display import json_for_people
from common.times import iso
from tenancy.models import Person
from tenancy.steward_admin import TenantScopedAdmin, steward_of

from .models import NodeVersion, Source, SourceVersion
from .services import acl_principal_valid, source_acl_set
from .signals import source_changed

RESTRICTION_HELP = (
    "A label such as “privileged”; leave empty to lift the restriction. Restriction is not "
    "the ACL: who may read the source does not change. A restricted source's content never "
    "crosses to a chat channel (cards, digests, escalations and ask answers about it go as "
    "a teaser); the inbox shows it in full to those who may read it."
)


@transaction.atomic
def source_restriction_set(*, source: Source, restriction: str | None, actor: Person) -> bool:
    """Mark a source restricted (a label) or unrestricted (None/empty) and append a
    `source_restriction_changed` audit event in its tenant (`signals.source_changed`);
    returns whether it changed.
    Only the restriction changes — never the ACL, the versions or the facts."""
    locked = Source.objects.select_for_update().get(pk=source.pk, tenant=actor.tenant_id)
    value = (restriction or "").strip() or None
    if locked.restriction == value:
        return False
    before = locked.restriction
    locked.restriction = value
    locked.save(update_fields=["restriction"])
    source.restriction = value
    source_changed.send(
        sender=Source,
        tenant=locked.tenant,
        type="source_restriction_changed",
        detail={"source": str(locked.pk), "by": str(actor.pk), "before": before, "after": value},
    )
    return True


# The seam for the source's text display: ingest (above the graph, so not imported here)
# registers its highlighter (the spans of the facts and clarifications) from its admin.
SOURCE_TEXT_HIGHLIGHT: list[Callable[[SourceVersion | None], str]] = []

ACL_HELP = (
    "Who may read the source: principals separated by commas (`group:legal`, "
    "`email:alice@acme.test`, `aad:<object id>`). Whoever loses read access loses the "
    "open cards about it at once; the next candidate is asked."
)


@transaction.atomic
def source_acl_change(*, source: Source, acl: list[str], actor: Person) -> bool:
    """Replace a source's ACL (`source_acl_set`: the guardian rows follow, and whoever
    lost read access is told through the read-access seam) and append a
    `source_acl_changed` audit event in its tenant (`signals.source_changed`); returns
    whether it changed."""
    locked = Source.objects.select_for_update().get(pk=source.pk, tenant=actor.tenant_id)
    if locked.acl == acl:
        return False
    before = locked.acl
    source_acl_set(source=locked, acl=acl)
    source.acl = list(acl)
    source_changed.send(
        sender=Source,
        tenant=locked.tenant,
        type="source_acl_changed",
        detail={"source": str(locked.pk), "by": str(actor.pk), "before": before, "after": acl},
    )
    return True


class SourceRestrictionForm(forms.ModelForm):
    restriction = forms.CharField(required=False, max_length=100, help_text=RESTRICTION_HELP)
    acl_text = forms.CharField(label="ACL", required=False, max_length=4000, help_text=ACL_HELP)

    class Meta:
        model = Source
        fields = ("restriction",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        acl = self.instance.acl if isinstance(self.instance.acl, list) else []
        self.fields["acl_text"].initial = ", ".join(acl)

    def clean_acl_text(self) -> list[str]:
        acl = [p.strip() for p in self.cleaned_data.get("acl_text", "").split(",") if p.strip()]
        bad = [p for p in acl if not acl_principal_valid(p)]
        if bad:
            raise forms.ValidationError(f"Not a principal: {', '.join(bad[:5])}.")
        return acl


@admin.register(Source)
class SourceAdmin(TenantScopedAdmin):
    """Read-only but for `restriction`, which a steward of the source's tenant may set or
    lift (audited through `source_restriction_set`), and the ACL (`source_acl_change`)."""

    editable = True
    form = SourceRestrictionForm
    list_display = ("title", "system", "external_id", "restriction", "acl_list")
    list_filter = ("system", "restriction")
    search_fields = ("title", "external_id")
    fields = (
        *("title", "system", "external_id", "uri", "restriction", "acl_text", "versions"),
        "extracted_text",
    )
    readonly_fields = ("title", "system", "external_id", "uri", "versions", "extracted_text")

    def save_model(self, request: HttpRequest, obj: Source, form: Any, change: bool) -> None:
        steward = steward_of(request)
        assert steward is not None and change  # no add permission; stewards only
        source_restriction_set(
            source=obj, restriction=form.cleaned_data.get("restriction"), actor=steward
        )
        if "acl_text" in form.data and "acl_text" in form.changed_data:  # (sent and changed)
            source_acl_change(source=obj, acl=form.cleaned_data["acl_text"], actor=steward)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        return None

    @admin.display(description="ACL")
    def acl_list(self, obj: Source) -> str:
        return ", ".join(obj.acl) if isinstance(obj.acl, list) else "(unparseable)"

    @admin.display(description="versions")
    def versions(self, obj: Source) -> str:
        return format_html_join(
            "",
            "<div>{} — {} characters, sha256 {}…</div>",
            ((iso(v.tx), len(v.text), v.content_hash[:12]) for v in obj.versions.all()),
        )

    @admin.display(description="text of the latest version")
    def extracted_text(self, obj: Source) -> str:
        latest = obj.versions.order_by("-tx").first()
        return SOURCE_TEXT_HIGHLIGHT[0](latest) if SOURCE_TEXT_HIGHLIGHT else ""


@admin.register(NodeVersion)
class NodeVersionAdmin(TenantScopedAdmin):
    tenant_field = "node__tenant"
    list_display = (
        "node",
        "seq",
        "label_list",
        "valid",
        "recorded",
        "confidence",
        "evidence_class",
        "pending",
    )
    list_filter = ("evidence_class", "pending")
    list_select_related = ("node",)
    search_fields = ("search_text",)
    fields = (
        "node",
        "seq",
        "labels",
        "properties",
        "valid",
        "recorded",
        "confidence",
        "provenance_text",
        "pending",
        "evidence_class",
    )
    readonly_fields = fields

    @admin.display(description="labels")
    def label_list(self, obj: NodeVersion) -> str:
        return ", ".join(obj.labels)

    @admin.display(description="valid")
    def valid(self, obj: NodeVersion) -> str:
        return f"{iso(obj.valid_from)} → {iso(obj.valid_to)}"

    @admin.display(description="provenance")
    def provenance_text(self, obj: NodeVersion) -> str:
        return json_for_people(obj.provenance)

    @admin.display(description="recorded")
    def recorded(self, obj: NodeVersion) -> str:
        return f"{iso(obj.tx_from)} → {iso(obj.tx_to)}"
