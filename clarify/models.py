"""Clarifications: the question, its append-only response records and audit trail.

A clarification's quorum policy is pinned when it is opened and never recomputed.
Response records and audit events are append-only; only a response's `binding_status`
is ever re-marked (to `bound` when it counted toward the binding).
"""

import uuid

from django.db import models

from graph.models import Node, NodeVersion, SourceVersion
from tenancy.models import Rights, Tenant


class Kind(models.TextChoices):
    RELATIVE_DATE = "relative_date"
    CONFLICTING_DATES = "conflicting_dates"
    UNDATED = "undated"
    LOW_CONFIDENCE_EXTRACTION = "low_confidence_extraction"


class Severity(models.TextChoices):
    """Business risk, ordered low < normal < high < critical."""

    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"
    CRITICAL = "critical"

    @classmethod
    def rank(cls, value: str) -> int:
        return _SEVERITY_RANK[value]


_SEVERITY_RANK: dict[str, int] = {
    Severity.LOW: 0,
    Severity.NORMAL: 1,
    Severity.HIGH: 2,
    Severity.CRITICAL: 3,
}


class State(models.TextChoices):
    """The clarification lifecycle (spec §5)."""

    OPEN = "open"
    ATTESTED = "attested"
    PARTIALLY_CONFIRMED = "partially_confirmed"
    ANSWERED = "answered"
    CONFLICTED = "conflicted"
    EXPIRED = "expired"
    DEAD_LETTERED = "dead_lettered"


# Not yet answered (answered clarifications pile up); /metrics counts only these
# (`clarification_unresolved`).
UNRESOLVED_STATES = tuple(s for s in State if s != State.ANSWERED)
# The kind of a clarification's routing job (subject: the clarification's id).
CLARIFY_JOB_KIND = "clarify:temporal"
# Closed to delivery: answered, or conflicted (a steward's to resolve now). Nobody is asked
# about one any more: its routing job completes without a card, and a tap on a card sent
# before gets "moved on".
CLOSED_STATES = (State.ANSWERED, State.CONFLICTED)


class QuorumState(models.TextChoices):
    NOT_REQUIRED = "not_required"
    PENDING = "pending"
    SATISFIED = "satisfied"
    CONFLICTED = "conflicted"


class BindingStatus(models.TextChoices):
    BINDING_CANDIDATE = "binding_candidate"
    BOUND = "bound"
    ATTESTATION = "attestation"
    CONFLICTING = "conflicting"
    STEWARD_OVERRIDE = "steward_override"


class ClarifyPolicy(models.Model):
    """A tenant's overrides of the clarify policy; a NULL field falls back to the
    environment default (CONTRACT §1). Applies only to clarifications opened afterwards."""

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, related_name="clarify_policy")
    severity_elevate = models.JSONField(
        null=True, blank=True, help_text='e.g. {"conflicting_dates": "high"}'
    )
    quorum_enabled = models.BooleanField(null=True, blank=True)
    critical_required_confirmations = models.PositiveSmallIntegerField(null=True, blank=True)
    required_roles = models.JSONField(null=True, blank=True, help_text='e.g. ["editor"]')
    allow_steward_override = models.BooleanField(null=True, blank=True)
    channel_order = models.JSONField(
        null=True,
        blank=True,
        help_text=(
            'Delivery channels to try, in order, e.g. ["slack", "inbox"] (of teams, slack, '
            "inbox). A person is reached on the first configured channel where they have a "
            "verified address. Empty: the CLARIFY_CHANNELS default."
        ),
    )
    reminder_after_hours = models.FloatField(
        null=True,
        blank=True,
        help_text=(
            "One reminder to a person who has not answered, this many hours after their "
            "card; below the escalation window. Empty: CLARIFY_REMINDER_AFTER_HOURS (unset: "
            "no reminders)."
        ),
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "clarify policy"
        verbose_name_plural = "clarify policies"

    def __str__(self) -> str:
        return f"clarify policy of {self.tenant}"


class Clarification(models.Model):
    """A question about one fact node: candidates, who to ask, the pinned quorum policy,
    both detector and applied-candidate confidences, and where in the source it came from."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="clarifications")
    target = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="clarifications")
    kind = models.CharField(max_length=32, choices=Kind.choices)
    severity = models.CharField(max_length=10, choices=Severity.choices)
    state = models.CharField(max_length=20, choices=State.choices, default=State.OPEN)
    candidates = models.JSONField(default=list)
    asked = models.JSONField(default=list, help_text="the ranking: person ids, best first")
    quorum_policy = models.JSONField(default=dict)
    quorum_state = models.CharField(max_length=16, choices=QuorumState.choices)
    detector_confidence = models.FloatField()
    applied_candidate_confidence = models.FloatField()
    extraction_confidence = models.FloatField(default=1.0)
    source_version = models.ForeignKey(
        SourceVersion, on_delete=models.PROTECT, related_name="clarifications"
    )
    span_start = models.PositiveIntegerField(null=True, blank=True)
    span_end = models.PositiveIntegerField(null=True, blank=True)
    dedup_key = models.CharField(max_length=64)
    fact_version_tx = models.BigIntegerField(null=True, blank=True)
    # Written with every response under the clarification's lock: the latest response's
    # seq (0: none yet), so a first answer need not read the responses.
    responses_recorded = models.PositiveIntegerField(default=0)
    # Set under the clarification's lock with its first card (delivery.worker): until then
    # no nonce exists, so binding has none to close.
    cards_issued = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "dedup_key"], name="clarification_dedup")
        ]
        indexes = [
            models.Index(fields=["tenant", "state", "severity"]),
            models.Index(fields=["tenant", "-created_at", "id"]),
            # /metrics: the unanswered ones by state and severity, from an index of just
            # those rows.
            models.Index(
                fields=["state", "severity"],
                condition=models.Q(state__in=UNRESOLVED_STATES),
                name="clarification_unresolved",
            ),
        ]
        ordering = ["-created_at", "id"]

    def __str__(self) -> str:
        return f"{self.kind} on {self.target_id} ({self.state})"

    @property
    def required_confirmations(self) -> int:
        return int(self.quorum_policy.get("requiredConfirmations", 1))

    @property
    def minimum_role(self) -> str:
        roles = self.quorum_policy.get("requiredRoles") or [Rights.EDITOR]
        return min(roles, key=Rights.rank)

    @property
    def allows_steward_override(self) -> bool:
        """The pinned policy's `allowStewardOverride`."""
        return bool(self.quorum_policy.get("allowStewardOverride"))


class ResponseRecord(models.Model):
    """One answer, append-only: who (a person id, the nil UUID once erased), their rights
    at that moment, the answer and its resolved interval, the channel, and the outcome body
    returned (replayed byte-identically on an idempotent repeat)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: the unique (clarification, seq) index leads with it.
    clarification = models.ForeignKey(
        Clarification, on_delete=models.CASCADE, related_name="responses", db_index=False
    )
    seq = models.PositiveIntegerField()
    responder = models.UUIDField()
    rights_at_answer_time = models.CharField(max_length=10, choices=Rights.choices)
    answer_index = models.IntegerField(null=True, blank=True)
    answer_custom = models.JSONField(null=True, blank=True)
    interval_from = models.BigIntegerField(null=True, blank=True)
    interval_to = models.BigIntegerField(null=True, blank=True)
    channel = models.CharField(max_length=20)
    message_ref = models.CharField(max_length=500, null=True, blank=True)
    response_tx = models.BigIntegerField()
    binding_status = models.CharField(max_length=20, choices=BindingStatus.choices)
    outcome_status = models.PositiveSmallIntegerField()
    outcome = models.JSONField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["clarification", "seq"], name="response_unique_seq")
        ]
        ordering = ["clarification", "seq"]

    def __str__(self) -> str:
        return f"response {self.seq} on {self.clarification_id}"

    @property
    def interval(self) -> tuple[int | None, int | None]:
        return (self.interval_from, self.interval_to)


class ClarificationBinding(models.Model):
    """The one binding of a clarification: the unique constraint on `clarification` makes a
    second binding impossible even if a lock were missed."""

    clarification = models.OneToOneField(
        Clarification, on_delete=models.CASCADE, related_name="binding"
    )
    node_version = models.OneToOneField(
        NodeVersion, on_delete=models.PROTECT, related_name="clarification_binding"
    )
    evidence_class = models.CharField(max_length=24)
    bound_tx = models.BigIntegerField()

    def __str__(self) -> str:
        return f"binding of {self.clarification_id}"


class AuditEvent(models.Model):
    """An append-only audit event: deliveries, skips (with reason codes), answers,
    attestations, quorum transitions, conflicts, steward notifications, overrides,
    escalations, bindings, erasures. Written only by `clarify.audit.audit_events_append`
    (which logs and counts each)."""

    # Neither key has an index of its own: the (clarification, at) and (tenant, at)
    # indexes lead with them (an event is written with every state change; each index
    # is paid on every insert).
    tenant = models.ForeignKey(
        Tenant, on_delete=models.CASCADE, related_name="audit_events", db_index=False
    )
    clarification = models.ForeignKey(
        Clarification,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="events",
        db_index=False,
    )
    at = models.BigIntegerField()
    type = models.CharField(max_length=40)
    detail = models.JSONField(default=dict)
    # The tenant's hash chain (`events.chain`, arithmetic in `common.chain`): the event's
    # place, the salt of its detail's commitment ("" once an erasure forgot it), the
    # commitment, its predecessor's hash and its own. Set by the append, never changed.
    seq = models.BigIntegerField(null=True, blank=True)
    salt = models.CharField(max_length=32, blank=True, default="")
    commitment = models.CharField(max_length=64, blank=True, default="")
    prev_hash = models.CharField(max_length=64, blank=True, default="")
    hash = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        indexes = [
            models.Index(fields=["clarification", "at"]),
            models.Index(fields=["tenant", "at"]),
        ]
        constraints = [
            # One event a place in a tenant's chain (also the verifier's walk, in order).
            models.UniqueConstraint(fields=["tenant", "seq"], name="auditevent_chain_seq"),
        ]
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.type} @ {self.at}"
