"""The job queue, viewable by stewards (their tenant's jobs only)."""

from django.contrib import admin

from tenancy.steward_admin import TenantScopedAdmin

from .models import Job

# What the list shows of a job, and (with its lease, subject, payload and result) the page.
SUMMARY = ("kind", "status", "priority", "attempts", "max_attempts", "run_after")


@admin.register(Job)
class JobAdmin(TenantScopedAdmin):
    list_display = ("id", *SUMMARY, "last_error")
    list_filter = ("status", "kind")
    fields = (*SUMMARY, "lease_expires_at", "subject", "payload", "result", "last_error")
    readonly_fields = fields
    show_full_result_count = False
