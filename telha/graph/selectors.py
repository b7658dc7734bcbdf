"""Reads of the fact store: as-of versions and what a caller may see."""

from typing import Any

from django.db.models import Q, QuerySet
from guardian.shortcuts import get_objects_for_user

from telha.common.times import interval_contains
from telha.tenancy.auth import Caller

from .models import Node, NodeVersion, Source


def readable_sources(caller: Caller) -> QuerySet[Source]:
    """Sources of the caller's tenant the caller may read (guardian `view_source`)."""
    tenant_sources = Source.objects.filter(tenant=caller.tenant)
    if caller.sees_whole_tenant:
        return tenant_sources
    if caller.user is None or not caller.user.is_active:
        return tenant_sources.none()
    return get_objects_for_user(
        caller.user, "graph.view_source", klass=tenant_sources, accept_global_perms=False
    )


def readable_nodes(caller: Caller) -> QuerySet[Node]:
    """Nodes of the caller's tenant that are sourceless (people) or from readable sources."""
    nodes = Node.objects.filter(tenant=caller.tenant)
    if caller.sees_whole_tenant:
        return nodes
    return nodes.filter(Q(source__isnull=True) | Q(source__in=readable_sources(caller)))


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
    text: str | None = None,
    current: bool = False,
) -> QuerySet[NodeVersion]:
    """Versions of `nodes` visible at (valid_at, tx_at), filtered by labels (all of them)
    and a case-insensitive substring."""
    qs = NodeVersion.objects.filter(node__in=nodes)
    if current:
        qs = qs.filter(tx_to__isnull=True)
    else:
        qs = qs.filter(tx_from__lte=tx_at).filter(Q(tx_to__isnull=True) | Q(tx_to__gt=tx_at))
    qs = qs.filter(Q(valid_from__isnull=True) | Q(valid_from__lte=valid_at)).filter(
        Q(valid_to__isnull=True) | Q(valid_to__gt=valid_at)
    )
    for label in labels or []:
        qs = qs.filter(labels__icontains=f'"{label}"')
    if text:
        qs = qs.filter(search_text__contains=text.lower())
    return qs.order_by("node_id")
