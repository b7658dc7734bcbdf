"""Reads of the fact store: as-of versions and what a caller may see."""

from typing import Any

from django.contrib.auth.models import Permission, User
from django.db.models import BooleanField, Expression, F, OuterRef, Q, QuerySet, Subquery
from django.db.models.signals import post_migrate

from telha.common.times import interval_contains
from telha.tenancy.auth import Caller

from .models import (
    Node,
    NodeVersion,
    Source,
    SourceGroupObjectPermission,
    SourceUserObjectPermission,
)

# The `graph.view_source` permission's id, looked up once per process (reset when the
# permissions are re-created: `migrate`, or `flush` between transactional tests).
_view_source_permission_id: int | None = None


def view_source_permission_id() -> int:
    global _view_source_permission_id
    if _view_source_permission_id is None:
        _view_source_permission_id = Permission.objects.get(
            content_type__app_label="graph", content_type__model="source", codename="view_source"
        ).pk
    return _view_source_permission_id


def _forget_view_source_permission(**_: Any) -> None:
    global _view_source_permission_id
    _view_source_permission_id = None


post_migrate.connect(_forget_view_source_permission, dispatch_uid="graph.view_source_permission")

NOTHING = Q(pk__in=[])


class SourceReadable(Expression):
    """`EXISTS (a view row for the user) OR EXISTS (a view row for one of the user's
    groups)` on the direct-FK permission tables, correlated on the source id `source`
    (a field path, resolved like F()). Written as SQL once rather than as two querysets
    per request: the ORM's `Exists` costs several ms of CPU per query to build and
    compile. The user's groups come straight from the membership table (no join through
    auth_group). Plain SQL, the same on PostgreSQL and SQLite."""

    output_field = BooleanField()
    template = (
        "(EXISTS (SELECT 1 FROM {user_perms} telha_up WHERE telha_up.{object} = {source}"
        " AND telha_up.{user} = %s AND telha_up.{permission} = %s)"
        " OR EXISTS (SELECT 1 FROM {group_perms} telha_gp WHERE telha_gp.{object} = {source}"
        " AND telha_gp.{permission} = %s AND telha_gp.{group} IN"
        " (SELECT telha_ug.{group} FROM {memberships} telha_ug WHERE telha_ug.{user} = %s)))"
    )

    def __init__(self, source: Any, user_id: int, permission_id: int) -> None:
        super().__init__()
        self.source = source if hasattr(source, "resolve_expression") else F(source)
        self.user_id = user_id
        self.permission_id = permission_id

    def get_source_expressions(self) -> list[Any]:
        return [self.source]

    def set_source_expressions(self, exprs: list[Any]) -> None:  # type: ignore[override]
        (self.source,) = exprs

    def resolve_expression(self, *args: Any, **kwargs: Any) -> "SourceReadable":
        clone = self.copy()
        clone.source = self.source.resolve_expression(*args, **kwargs)
        return clone

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:  # type: ignore[override]
        source_sql, source_params = compiler.compile(self.source)
        return self.sql_on(source_sql, source_params, self.user_id, self.permission_id, connection)

    @classmethod
    def sql_on(
        cls,
        source_sql: str,
        source_params: list[Any],
        user_id: int,
        permission_id: int,
        connection: Any,
    ) -> tuple[str, list[Any]]:
        """The condition on a source id given as SQL (`source_sql`, `source_params`)."""
        q = connection.ops.quote_name
        sql = cls.template.format(
            user_perms=q(SourceUserObjectPermission._meta.db_table),
            group_perms=q(SourceGroupObjectPermission._meta.db_table),
            memberships=q(User.groups.through._meta.db_table),
            object=q("content_object_id"),
            user=q("user_id"),
            group=q("group_id"),
            permission=q("permission_id"),
            source=source_sql,
        )
        params = [
            *source_params,
            user_id,
            permission_id,
            *source_params,
            permission_id,
            user_id,
        ]
        return sql, params


def source_readable_q(user: Any, *, source: str = "pk") -> Q:
    """A filter granting exactly what guardian's `get_objects_for_user(user,
    "graph.view_source", accept_global_perms=False)` grants, as one `EXISTS … OR EXISTS …`
    over the direct-FK permission tables (no guardian queryset per request).

    `source` is the path from the filtered model to the source's id: "pk" on `Source`,
    "source" on `Node`, "target__source" on `Clarification`. No user or an inactive one
    reads nothing; a superuser reads every source (guardian's `with_superuser`);
    otherwise a `view_source` row for the user, or for one of the user's groups. Like the
    permission rows, it does not repeat the tenant: callers filter their own model by the
    caller's tenant, and a node's source is always of the node's tenant."""
    if user is None or not user.is_active:
        return NOTHING
    if user.is_superuser:  # every source (an empty Q() would vanish from an OR)
        return Q(pk__isnull=False) if source == "pk" else Q(**{f"{source}__isnull": False})
    return Q(SourceReadable(source, user.pk, view_source_permission_id()))


def source_readable_sql(user: Any, source_sql: str, connection: Any) -> tuple[str, list[Any]]:
    """`source_readable_q` as an SQL condition on a source id column given as SQL, for
    hand-written statements (clarify.services locks the answered clarification in one):
    nothing for no user or an inactive one, every source for a superuser, else the same
    `EXISTS … OR EXISTS …` (`SourceReadable`)."""
    if user is None or not user.is_active:
        return "1 = 0", []
    if user.is_superuser:
        return f"{source_sql} IS NOT NULL", []
    return SourceReadable.sql_on(source_sql, [], user.pk, view_source_permission_id(), connection)


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
    case-insensitively); `telha.graph.search` narrows them by text.

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
