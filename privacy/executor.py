"""`gdpr_erase`: the tenant's erasure executor (spec v0.9, PR-081), built on the steward
service `clarify.stewardship.attribution_erase` and its scrubbing primitives. It deletes
or rewrites the person's rows in every app — deliveries, chat identities and history,
graph nodes and fact versions, sources and their texts, documents and their stored files
(`privacy.uploads`), jobs, admin log entries — so it lives here, above them all.
`privacy.erasure.person_erase` wraps it with the other tenants' audit events and the
database files."""

import uuid

from django.contrib.admin.models import LogEntry
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from clarify.models import AuditEvent, Clarification, ResponseRecord
from clarify.services import audit_event_append
from clarify.stewardship import (
    NIL,
    ErasureSubject,
    attribution_erase,
    audit_details_scrub,
    erasure_actor_id,
    scrub,
    scrub_rows,
)
from delivery.models import CardAction, ChatTurn, Delivery, TeamsConversation
from graph.access import read_access_changed
from graph.models import Node, NodeVersion, Source, SourceVersion
from graph.services import node_version_write, search_text_for, source_acl_set
from jobs.models import Job
from tenancy.models import Person, PersonAlias, Rights, Tenant

from .uploads import documents_scrub, upload_sources_renamed


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


def _sourcesscrub(tenant: Tenant, subject: ErasureSubject, principals: set[str]) -> int:
    """ACL principals naming the person go (with their guardian grants); the person's
    mentions in a source's title, URI and external id are erased."""
    changed = 0
    for source in Source.objects.filter(tenant=tenant).filter(
        subject.q("acl", "title", "uri", "external_id")
    ):
        acl = [p for p in source.acl if p.lower() not in principals]
        acl = [p for p in acl if not subject.pattern.search(p)]
        fields = {f: subject.text(getattr(source, f)) for f in ("title", "uri", "external_id")}
        fields = {f: v for f, v in fields.items() if v != getattr(source, f)}
        if "external_id" in fields and (
            Source.objects.filter(
                tenant=tenant, system=source.system, external_id=fields["external_id"]
            ).exists()
        ):
            fields["external_id"] = f"{fields['external_id']}-{uuid.uuid4().hex[:8]}"
        if fields:
            Source.objects.filter(pk=source.pk).update(**fields)
        if "external_id" in fields:
            upload_sources_renamed(
                tenant=tenant,
                system=source.system,
                old=source.external_id,
                new=fields["external_id"],
            )
        if acl != source.acl:
            source_acl_set(source=source, acl=acl)
        changed += bool(fields) or acl != source.acl
    return changed


def _fact_versionsscrub(tenant: Tenant, subject: ErasureSubject) -> int:
    """Fact versions naming the person (a property, provenance): mentions erased, the
    derived search text recomputed from the erased properties. No version is added or
    closed: the erasure changes what was stored, not what is believed."""
    changed = 0
    versions = NodeVersion.objects.filter(node__tenant=tenant).filter(
        subject.q("properties", "provenance", "search_text")
    )
    for version in versions:
        properties = scrub(version.properties, subject)
        provenance = scrub(version.provenance, subject)
        search_text = search_text_for(version.labels, properties)
        if (properties, provenance, search_text) != (
            version.properties,
            version.provenance,
            version.search_text,
        ):
            NodeVersion.objects.filter(pk=version.pk).update(
                properties=properties, provenance=provenance, search_text=search_text
            )
            changed += 1
    return changed


def _jobsscrub(tenant: Tenant, subject: ErasureSubject, pid: str) -> int:
    """The tenant's jobs mentioning the subject, locked: their ranking positions nil'd
    (positions kept), every other mention erased. Returns how many changed."""
    jobs = 0
    for job in (
        Job.objects.select_for_update()
        .filter(tenant=tenant)
        .filter(subject.q("payload", "last_error", "result"))
    ):
        payload = dict(job.payload) if isinstance(job.payload, dict) else job.payload
        if isinstance(payload, dict) and isinstance(payload.get("ranking"), list):
            payload["ranking"] = [str(NIL) if r == pid else r for r in payload["ranking"]]
        payload = scrub(payload, subject)
        last_error, result = subject.text(job.last_error), scrub(job.result, subject)
        if (payload, last_error, result) != (job.payload, job.last_error, job.result):
            job.payload, job.last_error, job.result = payload, last_error, result
            job.save(update_fields=["payload", "last_error", "result", "updated_at"])
            jobs += 1
    return jobs


def _person_tombstone(person: Person) -> None:
    """The erased person's row keeps only its key: no keys, user, groups, name or email."""
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
    read_access_changed(person.tenant, people=[person])  # their open cards are revoked


@transaction.atomic
def gdpr_erase(
    *, tenant: Tenant, person: Person, actor: Person | None = None, via: str = "cli"
) -> dict[str, int]:
    """The full erasure executor: attribution erasure everywhere, job rankings with the
    subject's positions nil'd (positions kept), the subject's delivery records, chat
    identities, chat history, aliases, keys, ACL grants and person-node history purged, every
    other mention of their id, email, aliases or full name erased from stored text (source
    texts redacted character for character, fact properties, documents and their stored
    files, jobs, chat turns, audit details, admin log entries), and the person tombstoned.
    Afterwards no table holds their id, aliases or email except the tombstone row's primary
    key. Returns how many rows of each kind changed."""
    pid = str(person.pk)
    alias_rows = list(PersonAlias.objects.filter(person=person).values_list("kind", "value"))
    aliases = [value for _, value in alias_rows]
    subject = ErasureSubject.of(person, aliases)
    by = erasure_actor_id(actor, person)
    # Jobs before clarifications: leasing and reaping lock a job, then its clarification;
    # taking them in the same order means waiting for a lease, never deadlocking with it.
    jobs = _jobsscrub(tenant, subject, pid)
    counts: dict[str, int] = {
        "clarifications": attribution_erase(tenant=tenant, person=person, by=by, via=via),
        "jobs": jobs,
    }

    deliveries = Delivery.objects.filter(person=person)
    CardAction.objects.filter(delivery__in=deliveries).delete()
    counts["deliveries"] = deliveries.delete()[0]
    counts["chatIdentities"] = TeamsConversation.objects.filter(person=person).delete()[0]
    # Their chat history (questions asked, answers given to them).
    counts["chatTurns"] = ChatTurn.objects.filter(person=person).delete()[0]

    # The person's own graph node and the unresolved ones keyed by their aliases.
    alias_keys = [f"{kind}:{value.lower()}" for kind, value in alias_rows]
    for node in Node.objects.filter(
        Q(person=person) | Q(source__isnull=True, key__in=alias_keys), tenant=tenant
    ):
        _person_node_erase(node)

    # Every other mention in stored text.
    principals = {f"email:{person.email}".lower()} | {f"aad:{a}".lower() for a in aliases}
    counts["sources"] = _sourcesscrub(tenant, subject, principals)
    counts["sourceTexts"] = 0
    for version in SourceVersion.objects.filter(source__tenant=tenant).filter(subject.q("text")):
        masked = subject.mask(version.text)
        if masked != version.text:
            SourceVersion.objects.filter(pk=version.pk).update(text=masked)
            counts["sourceTexts"] += 1
    counts["factVersions"] = _fact_versionsscrub(tenant, subject)
    counts["documents"] = documents_scrub(tenant=tenant, subject=subject, principals=principals)
    counts["records"] = (
        scrub_rows(Clarification.objects.filter(tenant=tenant), ("candidates",), subject)
        + scrub_rows(
            ResponseRecord.objects.filter(clarification__tenant=tenant),
            ("answer_custom", "outcome"),
            subject,
        )
        + scrub_rows(
            ChatTurn.objects.filter(tenant=tenant),
            ("text", "delivered_text", "restriction_provenance"),
            subject,
        )
        + scrub_rows(
            LogEntry.objects.filter(user__person__tenant=tenant),
            ("object_repr", "change_message"),
            subject,
        )
    )
    counts["auditEvents"] = audit_details_scrub(AuditEvent.objects.filter(tenant=tenant), subject)

    counts["aliases"] = PersonAlias.objects.filter(person=person).delete()[0]
    _person_tombstone(person)
    audit_event_append(
        tenant=tenant,
        type="person_erased",
        detail={"tombstone": True, "by": by, "via": via, "counts": counts},
    )
    return counts
