"""Steward operations: re-ask, the audited policy change, and GDPR erasure.

`erase_person_attribution` is the architecture page's operation of that name: it rewrites
attribution while every piece of confirmation evidence survives. `gdpr_erase` is the full
erasure executor (spec v0.9, PR-081) built on it.
"""

import uuid
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from delivery.models import CardAction, ChatTurn, Delivery, NonceState, TeamsConversation
from telha.common.errors import Conflict, NotFound
from telha.graph.models import Node, NodeVersion, Source
from telha.graph.services import node_version_write, source_acl_set
from telha.ingest.models import Document
from telha.jobs.models import Job, JobStatus
from telha.jobs.services import job_enqueue
from telha.tenancy.models import Person, PersonAlias, Rights, Tenant

from .models import AuditEvent, Clarification, ClarifyPolicy, ResponseRecord, State
from .policy import job_priority
from .services import CLARIFY_JOB_KIND, audit_event_append

NIL = uuid.UUID(int=0)
ERASED = "erased"


def _scrub(value: Any, needles: set[str]) -> Any:
    """Replace every occurrence of any needle inside a JSON value with "erased"."""
    if isinstance(value, dict):
        return {k: _scrub(v, needles) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, needles) for v in value]
    if isinstance(value, str):
        for needle in needles:
            if needle and needle.lower() in value.lower():
                value = _replace_ci(value, needle, ERASED)
        return value
    return value


def _replace_ci(text: str, needle: str, replacement: str) -> str:
    lower, low_needle, out, i = text.lower(), needle.lower(), [], 0
    while True:
        j = lower.find(low_needle, i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j] + replacement)
        i = j + len(needle)


@transaction.atomic
def clarification_reask(
    *, clarification: Clarification, ranking: list[Person], actor: Person
) -> Job:
    """Re-enqueue delivery for a new candidate list: the current routing job ends, open
    card nonces are revoked, an expired or dead-lettered clarification opens again."""
    # Its routing jobs first, then the clarification: the order leasing and reaping lock
    # them in (job, then its clarification in the on_lease / on_dead hooks), so a re-ask
    # racing a lease waits instead of deadlocking.
    routing = Job.objects.filter(
        kind=CLARIFY_JOB_KIND,
        subject=str(clarification.pk),
        status__in=[JobStatus.PENDING, JobStatus.LEASED],
    )
    held = list(routing.select_for_update().values_list("pk", flat=True))
    clar = Clarification.objects.select_for_update().get(pk=clarification.pk)
    if clar.state == State.ANSWERED:
        raise Conflict("An answered clarification is not asked again.")
    for person in ranking:
        if person.tenant_id != clar.tenant_id:
            raise NotFound("No such person in this tenant.")
    routing.filter(pk__in=held).update(
        status=JobStatus.DONE,
        lease_token=None,
        lease_expires_at=None,
        last_error="superseded by a re-ask",
    )
    Delivery.objects.filter(clarification=clar, nonce_state=NonceState.ACTIVE).update(
        nonce_state=NonceState.REVOKED
    )
    ids = [str(p.pk) for p in ranking]
    previous_state = clar.state
    if clar.state in (State.EXPIRED, State.DEAD_LETTERED):
        clar.state = State.OPEN
    clar.asked = ids
    clar.save(update_fields=["asked", "state", "updated_at"])
    audit_event_append(
        tenant=clar.tenant,
        clarification=clar,
        type="reasked",
        detail={"by": str(actor.pk), "ranking": ids, "from": previous_state, "to": clar.state},
    )
    return job_enqueue(
        tenant=clar.tenant,
        kind=CLARIFY_JOB_KIND,
        payload={"v": 1, "clarificationId": str(clar.pk), "ranking": ids},
        priority=job_priority(clar.severity),
        max_attempts=len(ids) + 1,
        subject=str(clar.pk),
    )


POLICY_FIELDS = (
    "severity_elevate",
    "quorum_enabled",
    "critical_required_confirmations",
    "required_roles",
    "allow_steward_override",
)


@transaction.atomic
def clarify_policy_update(*, tenant: Tenant, actor: Person, **changes: Any) -> ClarifyPolicy:
    """Change the tenant's clarify policy (only clarifications opened afterwards use it)."""
    policy, _ = ClarifyPolicy.objects.select_for_update().get_or_create(tenant=tenant)
    before = {f: getattr(policy, f) for f in POLICY_FIELDS}
    for name, value in changes.items():
        if name not in POLICY_FIELDS:
            raise TypeError(f"unknown policy field {name}")
        setattr(policy, name, value)
    policy.save()
    after = {f: getattr(policy, f) for f in POLICY_FIELDS}
    audit_event_append(
        tenant=tenant,
        type="policy_changed",
        detail={"by": str(actor.pk), "before": before, "after": after},
    )
    return policy


@transaction.atomic
def erase_person_attribution(*, tenant: Tenant, person: Person) -> int:
    """Tombstone a person's attribution on every clarification of the tenant: asked
    entries and responder ids become the nil UUID, message refs are dropped, the channel
    becomes "erased", the person's id is scrubbed from audit details, and an
    `attribution_erased` event is appended. Answer values, response times, rights at
    answer time (the role-level confirmation marker), binding statuses, quorum state and
    the corrected fact version survive. Returns how many clarifications changed."""
    pid = str(person.pk)
    changed = 0
    touched = set(
        ResponseRecord.objects.filter(
            clarification__tenant=tenant, responder=person.pk
        ).values_list("clarification_id", flat=True)
    )
    touched |= set(
        Clarification.objects.filter(tenant=tenant, asked__icontains=pid).values_list(
            "pk", flat=True
        )
    )
    for clar in Clarification.objects.select_for_update().filter(pk__in=touched):
        clar.asked = [str(NIL) if a == pid else a for a in clar.asked]
        clar.save(update_fields=["asked", "updated_at"])
        roles = list(
            ResponseRecord.objects.filter(clarification=clar, responder=person.pk).values_list(
                "rights_at_answer_time", flat=True
            )
        )
        ResponseRecord.objects.filter(clarification=clar, responder=person.pk).update(
            responder=NIL, message_ref=None, channel=ERASED
        )
        for event in AuditEvent.objects.filter(clarification=clar):
            scrubbed = _scrub(event.detail, {pid})
            if scrubbed != event.detail:
                AuditEvent.objects.filter(pk=event.pk).update(detail=scrubbed)
        audit_event_append(
            tenant=tenant,
            clarification=clar,
            type="attribution_erased",
            detail={"responsesErased": len(roles), "rolesAtAnswerTime": sorted(set(roles))},
        )
        changed += 1
    return changed


def _person_node_erase(node: Node) -> None:
    """Purge a node standing for the erased person (their own, or one keyed by an alias):
    its whole history goes, its link and key are replaced, and one version remains that
    says only that a person was erased."""
    NodeVersion.objects.filter(node=node).delete()
    node.person = None
    node.key = f"erased:{uuid.uuid4()}"
    node.save(update_fields=["person", "key"])
    node_version_write(
        node=node,
        labels=["PERSON"],
        properties={"erased": True},
        valid_from=None,
        valid_to=None,
        confidence=1.0,
        provenance={},
    )


@transaction.atomic
def gdpr_erase(*, tenant: Tenant, person: Person) -> dict[str, int]:
    """The full erasure executor: attribution erasure everywhere, job rankings with the
    subject's positions nil'd (positions kept), the subject's delivery records, chat
    identities, aliases, keys, ACL grants and person-node history purged, and the person
    tombstoned. Afterwards no table holds their id, aliases or email except the tombstone
    row's primary key."""
    pid = str(person.pk)
    needles = {pid, person.email}
    aliases = list(PersonAlias.objects.filter(person=person).values_list("value", flat=True))
    needles |= set(aliases)
    # Jobs before clarifications: leasing and reaping lock a job, then its clarification;
    # taking them in the same order means waiting for a lease, never deadlocking with it.
    jobs = 0
    for job in Job.objects.select_for_update().filter(tenant=tenant, payload__icontains=pid):
        payload = dict(job.payload)
        if isinstance(payload.get("ranking"), list):
            payload["ranking"] = [str(NIL) if r == pid else r for r in payload["ranking"]]
        job.payload = _scrub(payload, {pid})
        job.last_error = _scrub(job.last_error, needles)
        job.save(update_fields=["payload", "last_error", "updated_at"])
        jobs += 1
    counts: dict[str, int] = {
        "clarifications": erase_person_attribution(tenant=tenant, person=person),
        "jobs": jobs,
    }

    deliveries = Delivery.objects.filter(person=person)
    CardAction.objects.filter(delivery__in=deliveries).delete()
    counts["deliveries"] = deliveries.delete()[0]
    counts["chatIdentities"] = TeamsConversation.objects.filter(person=person).delete()[0]
    # Their chat history (questions asked, answers given to them) and uploader marks.
    counts["chatTurns"] = ChatTurn.objects.filter(person=person).delete()[0]
    counts["documents"] = Document.objects.filter(tenant=tenant, uploaded_by__icontains=pid).update(
        uploaded_by=ERASED
    )
    for event in AuditEvent.objects.filter(tenant=tenant):
        scrubbed = _scrub(event.detail, needles)
        if scrubbed != event.detail:
            AuditEvent.objects.filter(pk=event.pk).update(detail=scrubbed)

    # ACL principals naming the person, and the person's own graph node.
    principals = {f"email:{person.email}".lower()} | {f"aad:{a}".lower() for a in aliases}
    for source in Source.objects.filter(tenant=tenant):
        kept = [p for p in source.acl if p.lower() not in principals]
        if kept != source.acl:
            source_acl_set(source=source, acl=kept)
    alias_keys = [
        f"{kind}:{value.lower()}"
        for kind, value in PersonAlias.objects.filter(person=person).values_list("kind", "value")
    ]
    for node in Node.objects.filter(
        Q(person=person) | Q(source__isnull=True, key__in=alias_keys), tenant=tenant
    ):
        _person_node_erase(node)

    counts["aliases"] = PersonAlias.objects.filter(person=person).delete()[0]
    person.api_keys.all().delete()
    user = person.user
    person.user = None
    person.name = "(erased)"
    person.email = f"erased-{uuid.uuid4().hex}@erased.invalid"
    person.role = Rights.VIEWER
    person.erased_at = timezone.now()
    person.save()
    person.groups.clear()
    if user is not None:
        user.delete()
    audit_event_append(tenant=tenant, type="person_erased", detail={"tombstone": True})
    return counts
