"""Events out: each tenant's audit chain head, its webhook endpoints, and the webhook
deliveries (the `events:webhook` jobs, the outbox) as the steward admin shows them."""

from typing import ClassVar

from django.db import models

from jobs.models import Job
from tenancy.models import Tenant

WEBHOOK_EVENT_TYPES = (
    "clarification.opened",
    "clarification.answered",
    "clarification.conflicted",
    "clarification.dead_lettered",
    "fact.corrected",
)


class ChainHead(models.Model):
    """The last link of a tenant's audit hash chain: its place and hash. Linking an event
    locks this row until the transaction ends (PostgreSQL: the events' insert trigger;
    SQLite: `events.chain.chain_events`), so a tenant's events are chained one
    transaction at a time while other tenants' go on; published in the export and on
    /metrics."""

    tenant = models.OneToOneField(
        Tenant, on_delete=models.CASCADE, primary_key=True, related_name="chain_head"
    )
    seq = models.BigIntegerField(default=0)
    hash = models.CharField(max_length=64)

    def __str__(self) -> str:
        return f"{self.tenant_id} #{self.seq}"


class WebhookEndpoint(models.Model):
    """A tenant's receiver of signed events (Standard Webhooks)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=2000)
    # "whsec_" + base64 of 24 random bytes: the HMAC-SHA256 key every delivery is signed with.
    secret = models.CharField(max_length=100, editable=False)
    event_types = models.JSONField(default=list, help_text="the event types it receives")
    with_text = models.BooleanField(
        default=False, help_text="whether its events may carry passage text"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.url} ({', '.join(self.event_types)})"


WEBHOOK_KIND = "events:webhook"


class WebhookDeliveries(models.Manager["WebhookDelivery"]):
    def get_queryset(self) -> models.QuerySet["WebhookDelivery"]:
        return super().get_queryset().filter(kind=WEBHOOK_KIND)


class WebhookDelivery(Job):
    """The webhook messages (`events:webhook` jobs), for the steward admin."""

    objects: ClassVar[WebhookDeliveries] = WebhookDeliveries()

    class Meta:
        proxy = True
        base_manager_name = "objects"  # a webhook delivery is only ever such a job
        verbose_name_plural = "webhook deliveries"
