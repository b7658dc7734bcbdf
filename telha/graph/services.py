"""The append-only write path of the fact store and the source ACL."""

from collections.abc import Iterable
from typing import Any

from django.db import transaction
from guardian.shortcuts import assign_perm

from telha.common.times import now_us
from telha.tenancy.models import AliasKind, PersonAlias, Tenant, TenantGroup

from .models import (
    EvidenceClass,
    Node,
    NodeVersion,
    Source,
    SourceGroupObjectPermission,
    SourceUserObjectPermission,
)

VIEW_SOURCE = "graph.view_source"
ACL_KINDS = ("group", "email", "aad")


def acl_principal_valid(principal: object) -> bool:
    """`group:NAME`, `email:ADDR` or `aad:OID` (CONTRACT §2.1)."""
    if not isinstance(principal, str) or ":" not in principal:
        return False
    kind, _, value = principal.partition(":")
    return kind in ACL_KINDS and bool(value.strip()) and len(principal) <= 400


def search_text_for(labels: Iterable[str], properties: dict[str, Any]) -> str:
    """Lower-cased text a substring query matches against."""
    parts = [*labels]
    parts += [str(v) for v in properties.values() if isinstance(v, str | int | float)]
    return " ".join(parts).lower()


def source_acl_set(*, source: Source, acl: list[str]) -> None:
    """Replace the source's ACL: the principal list and the guardian permissions.

    Principals that match no known person or group grant nothing (they are kept in
    `acl` so a person loaded later can be granted by re-applying)."""
    source.acl = list(acl)
    source.save(update_fields=["acl"])
    SourceUserObjectPermission.objects.filter(content_object=source).delete()
    SourceGroupObjectPermission.objects.filter(content_object=source).delete()
    users, groups = principals_to_users_and_groups(tenant=source.tenant, acl=acl)
    for user in users:
        assign_perm(VIEW_SOURCE, user, source)
    for group in groups:
        assign_perm(VIEW_SOURCE, group, source)


def principals_to_users_and_groups(*, tenant: Tenant, acl: list[str]) -> tuple[list, list]:
    """Resolve ACL principals to the tenant's Django users and auth groups."""
    emails = [p.partition(":")[2].strip().lower() for p in acl if p.startswith("email:")]
    oids = [p.partition(":")[2].strip().lower() for p in acl if p.startswith("aad:")]
    names = [p.partition(":")[2].strip() for p in acl if p.startswith("group:")]
    aliases = PersonAlias.objects.filter(tenant=tenant).select_related("person__user")
    matched = aliases.filter(kind=AliasKind.EMAIL, value__in=emails) | aliases.filter(
        kind=AliasKind.AAD_OID, value__in=oids
    )
    users = {a.person.user for a in matched if a.person.user is not None}
    groups = [
        tg.auth_group
        for tg in TenantGroup.objects.filter(tenant=tenant, name__in=names).select_related(
            "auth_group"
        )
    ]
    return sorted(users, key=lambda u: u.pk), groups


def _next_tx(previous: NodeVersion | None) -> int:
    now = now_us()
    return max(now, previous.tx_from + 1) if previous is not None else now


def node_lock_current(node_id: Any) -> tuple[Node, NodeVersion | None]:
    """Lock a node (inside a transaction) and read its current version, in that order: a
    version read after the lock is the one the next write closes. Returns the locked node
    and that version; hand both to `node_version_write(node=…, current=…)` in the same
    transaction to skip a second lock and read."""
    node = Node.objects.select_for_update().filter(pk=node_id).get()
    return node, node_current_version(node_id)


def node_current_version(node_id: Any) -> NodeVersion | None:
    """The node's current version (None before the first). Read it after locking the node
    when it is about to be replaced (`node_lock_current`)."""
    return NodeVersion.objects.filter(node_id=node_id, tx_to__isnull=True).first()


_READ = object()  # node_version_write: lock the node and read its current version itself


# No savepoint when nested (two round trips per version): every caller lets a failure
# propagate, so the enclosing transaction rolls back anyway.
@transaction.atomic(savepoint=False)
def node_version_write(
    *,
    node: Node,
    labels: list[str],
    properties: dict[str, Any],
    valid_from: int | None,
    valid_to: int | None,
    confidence: float,
    provenance: dict[str, Any],
    pending: bool = False,
    evidence_class: str = EvidenceClass.SYSTEM_EXTRACTION,
    current: Any = _READ,
) -> NodeVersion:
    """Append a new version of `node`: lock the node, close the current version at the new
    transaction time (strictly after the previous one) and insert the next.

    `current`: the node's current version (or None) as returned by `node_lock_current`
    earlier in the same transaction, which already holds the node's lock; by default the
    lock is taken and the current version read here."""
    if current is _READ:
        _, current = node_lock_current(node.pk)
    tx = _next_tx(current)
    if current is not None:
        NodeVersion.objects.filter(pk=current.pk).update(tx_to=tx)
    return NodeVersion.objects.create(
        node=node,
        seq=(current.seq + 1) if current is not None else 1,
        labels=list(labels),
        properties=dict(properties),
        search_text=search_text_for(labels, properties),
        valid_from=valid_from,
        valid_to=valid_to,
        tx_from=tx,
        confidence=confidence,
        provenance=provenance,
        pending=pending,
        evidence_class=evidence_class,
    )


def node_update(*, node: Node, **changes: Any) -> NodeVersion:
    """A new version equal to the current one except for `changes` (labels, properties,
    valid_from, valid_to, confidence, provenance, pending, evidence_class)."""
    current = NodeVersion.objects.get(node=node, tx_to__isnull=True)
    fields = {
        "labels": current.labels,
        "properties": current.properties,
        "valid_from": current.valid_from,
        "valid_to": current.valid_to,
        "confidence": current.confidence,
        "provenance": current.provenance,
        "pending": current.pending,
        "evidence_class": current.evidence_class,
    }
    unknown = set(changes) - set(fields)
    if unknown:
        raise TypeError(f"node_update: unknown fields {sorted(unknown)}")
    fields.update(changes)
    return node_version_write(node=node, **fields)
