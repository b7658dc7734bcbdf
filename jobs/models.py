"""The lease queue: the `Job` table is the single source of truth for job state."""

from django.db import models

from tenancy.models import Tenant


class JobStatus(models.TextChoices):
    PENDING = "pending"
    LEASED = "leased"
    DONE = "done"
    DEAD = "dead"


# The unfinished jobs (the queue's backlog); /metrics counts only these (`job_backlog`).
BACKLOG_STATUSES = (JobStatus.PENDING, JobStatus.LEASED)


class Job(models.Model):
    """A unit of work leased by a worker of the kind's audience (the prefix before ':').

    Lease times come from the database clock. `attempts` counts finished attempts: a
    `clarify:temporal` job's attempt N asks ranking[N]."""

    # No index of its own: the (tenant, kind, status) index leads with it.
    tenant = models.ForeignKey(
        Tenant, on_delete=models.CASCADE, related_name="jobs", db_index=False
    )
    kind = models.CharField(max_length=64)
    audience = models.CharField(max_length=32)
    priority = models.SmallIntegerField(default=2)
    payload = models.JSONField(default=dict)
    subject = models.CharField(max_length=64, blank=True, help_text="what the job is about (an id)")
    status = models.CharField(max_length=8, choices=JobStatus.choices, default=JobStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    max_attempts = models.PositiveIntegerField(default=5)
    run_after = models.DateTimeField()
    lease_token = models.UUIDField(null=True, blank=True)
    lease_holder = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    result = models.JSONField(null=True, blank=True)
    request_id = models.CharField(
        max_length=64,
        blank=True,
        default="",
        help_text="X-Request-ID of the request that enqueued it",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["audience", "priority", "run_after", "id"],
                condition=models.Q(status="pending"),
                name="job_lease_ready",
            ),
            models.Index(
                fields=["lease_expires_at"],
                condition=models.Q(status="leased"),
                name="job_reap_expired",
            ),
            models.Index(fields=["tenant", "kind", "status"]),
            # /metrics: the backlog by kind and status, and the oldest ready job per kind,
            # from an index of the unfinished jobs only (done and dead ones pile up).
            models.Index(
                fields=["kind", "status", "run_after"],
                condition=models.Q(status__in=BACKLOG_STATUSES),
                name="job_backlog",
            ),
            # Equality only (a job's subject is an id): a plain b-tree, without the
            # pattern-ops twin PostgreSQL gets for `db_index=True` on a CharField.
            models.Index(fields=["subject"], name="job_subject"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(status="leased")
                | models.Q(lease_token__isnull=False, lease_expires_at__isnull=False),
                name="job_leased_has_token",
            )
        ]
        ordering = ["priority", "run_after", "id"]

    def __str__(self) -> str:
        return f"{self.kind}#{self.pk} ({self.status})"
