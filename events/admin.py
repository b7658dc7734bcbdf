"""The steward admin's webhook pages: the tenant's endpoints (add, with the secret shown
once; remove) and the messages sent to them (the `events:webhook` jobs: status, attempts,
last error) with a "Re-send" action."""

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest

from common.errors import DomainError
from jobs import dispatch
from jobs.models import JobStatus
from jobs.services import JobSpec, jobs_enqueue
from tenancy.steward_admin import TenantScopedAdmin, steward_of

from .models import WEBHOOK_EVENT_TYPES, WebhookDelivery, WebhookEndpoint
from .outbox import WEBHOOK_KIND
from .services import event_types_checked, webhook_remove, webhook_save, webhook_secret_new


class WebhookEndpointForm(forms.ModelForm):
    url = forms.URLField(max_length=2000, assume_scheme="https")
    event_types = forms.MultipleChoiceField(
        choices=[(t, t) for t in WEBHOOK_EVENT_TYPES], widget=forms.CheckboxSelectMultiple
    )

    class Meta:
        model = WebhookEndpoint
        fields = ("url", "event_types", "with_text")

    def clean_event_types(self) -> list[str]:
        try:
            return event_types_checked(self.cleaned_data["event_types"])
        except DomainError as exc:
            raise forms.ValidationError(exc.detail) from exc


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(TenantScopedAdmin):
    form = WebhookEndpointForm
    list_display = ("id", "url", "event_types", "with_text", "created_at")
    fields = ("url", "event_types", "with_text")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return steward_of(request) is not None

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return steward_of(request) is not None

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        if not change:
            person = steward_of(request)
            assert person is not None
            obj.tenant, obj.secret = person.tenant, webhook_secret_new()
        webhook_save(obj)
        if not change:
            messages.warning(
                request, f"The endpoint's signing secret, shown this once: {obj.secret}"
            )

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        webhook_remove(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[WebhookEndpoint]) -> None:
        for endpoint in queryset:
            webhook_remove(endpoint)


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(TenantScopedAdmin):
    list_display = ("id", "message_type", "status", "attempts", "run_after", "last_error")
    list_filter = ("status",)
    fields = ("status", "attempts", "max_attempts", "run_after", "subject", "payload", "result")
    readonly_fields = fields
    actions = ["resend"]
    show_full_result_count = False

    @admin.display(description="event")
    def message_type(self, obj: WebhookDelivery) -> str:
        body = obj.payload.get("body") if isinstance(obj.payload, dict) else None
        return str(body.get("type")) if isinstance(body, dict) else ""

    @admin.action(description="Re-send the selected messages")
    def resend(self, request: HttpRequest, queryset: QuerySet[WebhookDelivery]) -> None:
        """Each selected message again, as a new job (same message id, so a receiver that
        already has it can tell); unfinished ones are left to run."""
        finished = list(
            queryset.filter(status__in=[JobStatus.DONE, JobStatus.DEAD]).select_related("tenant")
        )
        by_tenant: dict[Any, tuple[Any, list[JobSpec]]] = {}
        for job in finished:
            spec = JobSpec(WEBHOOK_KIND, job.payload, job.priority, None, job.subject)
            by_tenant.setdefault(job.tenant_id, (job.tenant, []))[1].append(spec)
        with transaction.atomic():
            for tenant, specs in by_tenant.values():
                jobs_enqueue(tenant=tenant, specs=specs)
            # Sent now, not at the next sweep (as the outbox wakes the sender).
            transaction.on_commit(lambda: dispatch.kick(WEBHOOK_KIND))
        self.message_user(request, f"{len(finished)} message(s) queued to be sent again.")
