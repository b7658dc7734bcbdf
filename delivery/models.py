"""Delivery records: every card sent (or queued for a digest) with its nonce, and every
card action received (so exact replays are dropped)."""

import uuid

from django.db import models

from clarify.models import Clarification
from tenancy.models import Person, Tenant


class DeliveryKind(models.TextChoices):
    QUESTION = "question"
    ESCALATION = "escalation"


class DeliveryStatus(models.TextChoices):
    QUEUED_DIGEST = "queued_digest", "queued for a digest"
    SENT = "sent"
    FAILED = "failed"


class NonceState(models.TextChoices):
    """active: the card may be answered; closed: the clarification reached a terminal state
    (a late tap gets "moved on"); revoked: replaced (a tap is dropped)."""

    ACTIVE = "active"
    CLOSED = "closed"
    REVOKED = "revoked"


class Delivery(models.Model):
    """One card for one person about one clarification at one attempt of one routing job.
    The nonce is stored before the send and reused verbatim on an idempotent re-send of
    that job's attempt (only while it is still active). A re-ask enqueues a new routing
    job, so asking the same person at the same attempt number again is a new delivery
    with a fresh nonce; the superseded one stays revoked. `job_id` is null only on rows
    from before routing jobs keyed deliveries whose job no longer exists."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="deliveries")
    clarification = models.ForeignKey(
        Clarification, on_delete=models.CASCADE, related_name="deliveries"
    )
    person = models.ForeignKey(Person, on_delete=models.CASCADE, related_name="deliveries")
    job_id = models.BigIntegerField(null=True, blank=True)
    attempt = models.PositiveIntegerField(default=0)
    kind = models.CharField(max_length=12, choices=DeliveryKind.choices)
    channel = models.CharField(max_length=12)
    status = models.CharField(max_length=16, choices=DeliveryStatus.choices)
    nonce = models.CharField(max_length=64, unique=True)
    nonce_state = models.CharField(
        max_length=8, choices=NonceState.choices, default=NonceState.ACTIVE
    )
    message_ref = models.CharField(max_length=500, blank=True)
    redacted = models.BooleanField(default=False)
    # A delegate's card: the away person it was routed for (issue 32).
    on_behalf_of = models.ForeignKey(
        Person, on_delete=models.SET_NULL, null=True, blank=True, related_name="delegated_cards"
    )
    # The one reminder of an unanswered question card (CLARIFY_REMINDER_AFTER_HOURS).
    reminded_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["clarification", "job_id", "attempt", "person", "kind"],
                name="delivery_unique_job_attempt_person",
            )
        ]
        indexes = [
            models.Index(fields=["person", "sent_at"]),
            models.Index(fields=["person", "status"]),
        ]
        ordering = ["-created_at"]
        verbose_name_plural = "deliveries"

    def __str__(self) -> str:
        return f"{self.kind} to {self.person_id} via {self.channel} ({self.status})"


class CardAction(models.Model):
    """A card action received from a channel; (channel, action_id) is unique, so an exact
    replay of the same callback is dropped."""

    tenant = models.ForeignKey(
        Tenant, on_delete=models.CASCADE, null=True, blank=True, related_name="card_actions"
    )
    channel = models.CharField(max_length=12)
    action_id = models.CharField(max_length=200)
    delivery = models.ForeignKey(
        Delivery, on_delete=models.SET_NULL, null=True, blank=True, related_name="actions"
    )
    outcome = models.CharField(max_length=40)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["channel", "action_id"], name="cardaction_unique")
        ]

    def __str__(self) -> str:
        return f"{self.channel}:{self.action_id} → {self.outcome}"


class TeamsConversation(models.Model):
    """A Teams conversation reference for proactive messages, bound to a person only
    through a verified alias (`teamsUserId` or `aadOid`)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="teams_conversations")
    person = models.OneToOneField(
        Person, on_delete=models.CASCADE, related_name="teams_conversation"
    )
    conversation_id = models.CharField(max_length=500)
    service_url = models.URLField(max_length=500)
    teams_tenant_id = models.CharField(max_length=100, blank=True)
    user_id = models.CharField(max_length=200)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"teams conversation of {self.person_id}"


class ChatTurn(models.Model):
    """One side of a persisted chat exchange (two rows per exchange). `channel_origin` is on
    both; only the assistant's row carries `restriction_provenance`, validated at write
    time so the column never holds a value the delivery gate cannot parse."""

    class Role(models.TextChoices):
        PERSON = "person"
        ASSISTANT = "assistant"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="chat_turns")
    person = models.ForeignKey(Person, on_delete=models.CASCADE, related_name="chat_turns")
    exchange = models.UUIDField(db_index=True)
    role = models.CharField(max_length=10, choices=Role.choices)
    channel_origin = models.CharField(max_length=12)
    text = models.TextField()
    restriction_provenance = models.JSONField(null=True, blank=True)
    delivered_text = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(role="assistant")
                | models.Q(restriction_provenance__isnull=True),
                name="chatturn_provenance_on_assistant_only",
            )
        ]
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.role} turn via {self.channel_origin}"
