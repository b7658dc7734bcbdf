"""The job queue, viewable by stewards (their tenant's jobs only)."""

from django.contrib import admin

from telha.tenancy.steward_admin import TenantScopedAdmin

from .models import Job


@admin.register(Job)
class JobAdmin(TenantScopedAdmin):
    list_display = (
        "id",
        "kind",
        "status",
        "priority",
        "attempts",
        "max_attempts",
        "run_after",
        "last_error",
    )
    list_filter = ("status", "kind")
    fields = (
        "kind",
        "status",
        "priority",
        "attempts",
        "max_attempts",
        "run_after",
        "lease_expires_at",
        "subject",
        "payload",
        "result",
        "last_error",
    )
    readonly_fields = fields
    show_full_result_count = False
