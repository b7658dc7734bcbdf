"""Sources (with their ACLs) and facts, viewable by stewards; nothing here edits a version."""

from django.contrib import admin
from django.utils.html import format_html_join

from telha.admin_site import TenantScopedAdmin, json_for_people
from telha.common.times import iso

from .models import NodeVersion, Source


@admin.register(Source)
class SourceAdmin(TenantScopedAdmin):
    list_display = ("title", "system", "external_id", "restriction", "acl_list")
    list_filter = ("system", "restriction")
    search_fields = ("title", "external_id")
    fields = ("title", "system", "external_id", "uri", "restriction", "acl_list", "versions")
    readonly_fields = fields

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
