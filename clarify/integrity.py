"""Invariants the lifecycle guarantees (`telha check_integrity`): after any crash or race
these must hold. Each check returns human-readable violations; `CHECKS` is the registry
the command runs (delivery adds its nonce checks)."""

from collections.abc import Callable, Iterator
from typing import Any

from django.db.models import Count, F, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce

from graph.models import NodeVersion
from jobs.models import Job, JobStatus

from .models import (
    CLARIFY_JOB_KIND,
    BindingStatus,
    Clarification,
    ClarificationBinding,
    QuorumState,
    ResponseRecord,
    State,
)


def check_versions() -> Iterator[str]:
    """One current version per node; per node, transaction intervals chain without gaps."""
    for row in (
        NodeVersion.objects.filter(tx_to__isnull=True)
        .values("node_id")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
    ):
        yield f"node {row['node_id']} has {row['n']} current versions"
    previous: dict[Any, NodeVersion] = {}
    for v in (
        NodeVersion.objects.order_by("node_id", "tx_from")
        .only("node_id", "seq", "tx_from", "tx_to")
        .iterator(chunk_size=2000)
    ):
        prev = previous.get(v.node_id)
        if prev is not None and prev.tx_to != v.tx_from:
            yield (
                f"node {v.node_id}: version {prev.seq} ends at {prev.tx_to}, "
                f"next starts at {v.tx_from}"
            )
        previous = {v.node_id: v}


def check_bindings() -> Iterator[str]:
    """answered ⇔ one binding with factVersionTx; bound responses only where bound."""
    bound_ids = set(ClarificationBinding.objects.values_list("clarification_id", flat=True))
    for clar in Clarification.objects.only(
        "id", "state", "fact_version_tx", "target_id"
    ).iterator():
        has = clar.pk in bound_ids
        if clar.state == State.ANSWERED and (not has or clar.fact_version_tx is None):
            yield f"clarification {clar.pk} is answered without a binding"
        if clar.state != State.ANSWERED and has:
            yield f"clarification {clar.pk} is {clar.state} but has a binding"
    for b in ClarificationBinding.objects.select_related("clarification", "node_version"):
        if b.node_version.node_id != b.clarification.target_id:
            yield f"binding of {b.clarification_id} points at another node's version"
        if b.clarification.fact_version_tx != b.node_version.tx_from:
            yield f"binding of {b.clarification_id} disagrees with factVersionTx"
    counted = Q(binding_status__in=[BindingStatus.BOUND, BindingStatus.STEWARD_OVERRIDE])
    for row in (
        ResponseRecord.objects.filter(counted)
        .exclude(clarification__state=State.ANSWERED)
        .values("clarification_id")
        .distinct()
    ):
        yield f"clarification {row['clarification_id']} has bound responses but is not answered"


def check_states() -> Iterator[str]:
    """Lifecycle states agree with quorum states and responses."""
    bad = Clarification.objects.filter(
        Q(state=State.PARTIALLY_CONFIRMED) & ~Q(quorum_state=QuorumState.PENDING)
        | Q(state=State.CONFLICTED) & ~Q(quorum_state=QuorumState.CONFLICTED)
    )
    for clar in bad:
        yield f"clarification {clar.pk}: state {clar.state} with quorum {clar.quorum_state}"
    for row in (
        ResponseRecord.objects.values("clarification_id")
        .annotate(n=Count("id"), top=Count("seq", distinct=True))
        .filter(~Q(n=F("top")))
    ):
        yield f"clarification {row['clarification_id']} has duplicate response sequence numbers"
    latest = (
        ResponseRecord.objects.filter(clarification=OuterRef("pk"))
        .order_by("-seq")
        .values("seq")[:1]
    )
    for clar in (
        Clarification.objects.annotate(latest=Coalesce(Subquery(latest), Value(0)))
        .exclude(responses_recorded=F("latest"))
        .only("id", "responses_recorded")
    ):
        yield (
            f"clarification {clar.pk} counts {clar.responses_recorded} responses, "
            f"its latest is {clar.latest}"
        )


def check_jobs() -> Iterator[str]:
    for job in Job.objects.filter(attempts__gt=F("max_attempts")):
        yield f"job {job.pk} has {job.attempts} attempts of {job.max_attempts}"
    for job in Job.objects.filter(status=JobStatus.LEASED).filter(
        Q(lease_token__isnull=True) | Q(lease_expires_at__isnull=True)
    ):
        yield f"job {job.pk} is leased without a token or expiry"
    dead = Job.objects.filter(kind=CLARIFY_JOB_KIND, status=JobStatus.DEAD).values_list(
        "subject", flat=True
    )
    for clar in Clarification.objects.filter(pk__in=list(dead)).exclude(
        state__in=[State.DEAD_LETTERED, State.ANSWERED, State.CONFLICTED]
    ):
        yield f"clarification {clar.pk} is {clar.state} but its routing job is dead"


# The checks by name, in the order reported. A higher layer registers its own at start-up
# (`delivery.integrity.check_nonces`, appended in `DeliveryConfig.ready`).
CHECKS: list[tuple[str, Callable[[], Iterator[str]]]] = [
    ("versions", check_versions),
    ("bindings", check_bindings),
    ("states", check_states),
    ("jobs", check_jobs),
]


def integrity_violations() -> dict[str, list[str]]:
    return {name: list(check()) for name, check in CHECKS}
