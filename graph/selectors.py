"""Reads of the fact store: as-of versions and what a caller may see."""

from typing import Any

from django.db.models import OuterRef, Q, QuerySet, Subquery

from common.times import interval_contains
from tenancy.auth import Caller

from .access import (  # noqa: F401  (the read rule, re-exported for older imports)
    SourceReadable,
    source_readable_q,
    source_readable_sql,
    view_source_permission_id,
)
from .models import Node, NodeVersion, Source


def readable_sources(caller: Caller) -> QuerySet[Source]:
    """Sources of the caller's tenant the caller may read (guardian `view_source`)."""
    tenant_sources = Source.objects.filter(tenant=caller.tenant)
    if caller.sees_whole_tenant:
        return tenant_sources
    if caller.user is None or not caller.user.is_active:
        return tenant_sources.none()
    return tenant_sources.filter(source_readable_q(caller.user))


def readable_nodes(caller: Caller) -> QuerySet[Node]:
    """Nodes of the caller's tenant the caller may read: a fact under its source's ACL; a
    PERSON node first named by a document (unresolved, or adopted since) under that
    document's ACL (`origin`); any other sourceless node (a known person's) tenant-wide."""
    nodes = Node.objects.filter(tenant=caller.tenant)
    if caller.sees_whole_tenant:
        return nodes
    return nodes.filter(
        Q(source__isnull=True, origin__isnull=True)
        | (Q(source__isnull=True) & source_readable_q(caller.user, source="origin"))
        | source_readable_q(caller.user, source="source")
    )


def node_version_as_of(*, node_id: Any, tx_at: int) -> NodeVersion | None:
    """The version recorded at transaction time `tx_at`: the latest version starting at or
    before it, if it was not already closed (index-only: no scan over the history)."""
    version = (
        NodeVersion.objects.filter(node_id=node_id, tx_from__lte=tx_at).order_by("-tx_from").first()
    )
    if version is None or (version.tx_to is not None and version.tx_to <= tx_at):
        return None
    return version


def node_version_visible(*, node_id: Any, valid_at: int, tx_at: int) -> NodeVersion | None:
    """The version visible at (valid_at, tx_at), or None."""
    version = node_version_as_of(node_id=node_id, tx_at=tx_at)
    if version is None or not interval_contains(version.valid_from, version.valid_to, valid_at):
        return None
    return version


def versions_visible(
    *,
    nodes: QuerySet[Node],
    valid_at: int,
    tx_at: int,
    labels: list[str] | None = None,
    current: bool = False,
) -> QuerySet[NodeVersion]:
    """Versions of `nodes` visible at (valid_at, tx_at), filtered by labels (all of them,
    case-insensitively); `graph.search` narrows them by text.

    `current`: the current versions (`tx_to IS NULL`, the partial index). Otherwise the
    as-of form, per node: a correlated subquery picks the node's version id with
    `tx_from <= T ORDER BY tx_from DESC LIMIT 1` (one probe of the `(node, tx_from)`
    index, whatever the history depth), then that row's `tx_to` is checked — never an
    `OR tx_to > T` filter over the whole history."""
    if current:
        qs = NodeVersion.objects.filter(node__in=nodes, tx_to__isnull=True)
    else:
        as_of = (
            NodeVersion.objects.filter(node_id=OuterRef("pk"), tx_from__lte=tx_at)
            .order_by("-tx_from")
            .values("pk")[:1]
        )
        picked = nodes.annotate(as_of_version=Subquery(as_of)).values("as_of_version")
        # NOT (tx_to <= T AND tx_to IS NOT NULL): the picked row was not closed by T.
        qs = NodeVersion.objects.filter(pk__in=picked).exclude(tx_to__lte=tx_at)
    qs = qs.filter(Q(valid_from__isnull=True) | Q(valid_from__lte=valid_at)).filter(
        Q(valid_to__isnull=True) | Q(valid_to__gt=valid_at)
    )
    for label in labels or []:
        qs = qs.filter(labels__icontains=f'"{label}"')
    return qs.order_by("node_id")
