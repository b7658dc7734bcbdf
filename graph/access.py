"""The one read-permission rule: who may read a source (spec §3.3, CONTRACT §2).

Guardian's `view_source` object permissions are the store (`graph.services.source_acls_sync`
writes them from a source's ACL); this module is the only place that reads them. A caller
reads a source when it sees its whole tenant (`Caller.sees_whole_tenant`: service tokens,
stewards, unbound keys) or when its user is active and is a superuser or holds
`view_source` on the source, itself or through one of its groups. A person reads what their
own key would (`person_reader`); an erased person reads nothing.

Every path asks this module: the API querysets (`source_readable_q`, through
`graph.selectors` and `clarify.selectors`), the answer lock (`source_readable_sql`), the
delivery gate and the access re-check after a change (`people_reading`), ask and the inbox
(`person_reader` + `graph.selectors.readable_nodes`).

The seam "whose read access changed": whatever changes the store or what it resolves to
(an ACL set or re-synced, a group membership, a role, an erasure, a deprovisioning) calls
`read_access_changed`; the layers above register a hook in `READ_ACCESS_HOOKS` (delivery
revokes the open cards of people who can no longer read). The core never imports them.
"""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import Permission, User
from django.db.models import BooleanField, Expression, F, Q, Value
from django.db.models.signals import post_migrate

from tenancy.auth import Caller
from tenancy.models import Person, Rights, Tenant

from .models import Source, SourceGroupObjectPermission, SourceUserObjectPermission

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


def _expression(value: Any) -> Any:
    return value if hasattr(value, "resolve_expression") else F(value)


class SourceReadable(Expression):
    """`EXISTS (a view row for the user) OR EXISTS (a view row for one of the user's
    groups)` on the direct-FK permission tables, correlated on the source id `source` (a
    field path, resolved like F(), or an expression) for the user `user` (an id, or a field
    path / expression naming the user's id column). Written as SQL once rather than as two
    querysets per request: the ORM's `Exists` costs several ms of CPU per query to build
    and compile. The user's groups come straight from the membership table (no join
    through auth_group). Plain SQL, the same on PostgreSQL and SQLite."""

    output_field = BooleanField()
    template = (
        "(EXISTS (SELECT 1 FROM {user_perms} telha_up WHERE telha_up.{object} = {source}"
        " AND telha_up.{user} = {who} AND telha_up.{permission} = %s)"
        " OR EXISTS (SELECT 1 FROM {group_perms} telha_gp WHERE telha_gp.{object} = {source}"
        " AND telha_gp.{permission} = %s AND telha_gp.{group} IN"
        " (SELECT telha_ug.{group} FROM {memberships} telha_ug WHERE telha_ug.{user} = {who})))"
    )

    def __init__(self, source: Any, user: Any, permission_id: int) -> None:
        super().__init__()
        self.source = _expression(source)
        self.user = user if isinstance(user, int) else _expression(user)
        self.permission_id = permission_id

    def get_source_expressions(self) -> list[Any]:
        return [self.source] if isinstance(self.user, int) else [self.source, self.user]

    def set_source_expressions(self, exprs: Sequence[Any]) -> None:
        if isinstance(self.user, int):
            (self.source,) = exprs
        else:
            self.source, self.user = exprs

    def resolve_expression(self, *args: Any, **kwargs: Any) -> "SourceReadable":
        clone = self.copy()
        clone.source = self.source.resolve_expression(*args, **kwargs)
        if not isinstance(self.user, int):
            clone.user = self.user.resolve_expression(*args, **kwargs)
        return clone

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        source = compiler.compile(self.source)
        who = ("%s", [self.user]) if isinstance(self.user, int) else compiler.compile(self.user)
        return self.sql_on(source, who, self.permission_id, connection)

    @classmethod
    def sql_on(
        cls,
        source: tuple[str, list[Any]],
        who: tuple[str, list[Any]],
        permission_id: int,
        connection: Any,
    ) -> tuple[str, list[Any]]:
        """The condition on a source id and a user id, each given as SQL and params."""
        q = connection.ops.quote_name
        (source_sql, source_params), (who_sql, who_params) = source, who
        sql = cls.template.format(
            user_perms=q(SourceUserObjectPermission._meta.db_table),
            group_perms=q(SourceGroupObjectPermission._meta.db_table),
            memberships=q(User.groups.through._meta.db_table),
            object=q("content_object_id"),
            user=q("user_id"),
            group=q("group_id"),
            permission=q("permission_id"),
            source=source_sql,
            who=who_sql,
        )
        params = [
            *source_params,
            *who_params,
            permission_id,
            *source_params,
            permission_id,
            *who_params,
        ]
        return sql, params


def source_readable_q(user: Any, *, source: str = "pk") -> Q:
    """The rule for one user, as a filter: exactly what guardian's
    `get_objects_for_user(user, "graph.view_source", accept_global_perms=False)` grants,
    as one `EXISTS … OR EXISTS …` over the direct-FK permission tables.

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
    hand-written statements (clarify.services locks the answered clarification in one)."""
    if user is None or not user.is_active:
        return "1 = 0", []
    if user.is_superuser:
        return f"{source_sql} IS NOT NULL", []
    who = ("%s", [user.pk])
    return SourceReadable.sql_on((source_sql, []), who, view_source_permission_id(), connection)


def caller_source_readable_sql(
    caller: Caller, source_sql: str, connection: Any
) -> tuple[str, list[Any]]:
    """The rule for a caller, as an SQL condition on a source id column (of the caller's
    tenant: the statement filters it)."""
    if caller.sees_whole_tenant:
        return "1 = 1", []
    return source_readable_sql(caller.user, source_sql, connection)


def person_reader(person: Person) -> Caller:
    """The person as a read-only caller: restricted like their own API key would be (a
    steward reads the whole tenant, a viewer or editor what the ACLs grant them)."""
    return Caller(
        tenant=person.tenant,
        key=None,  # type: ignore[arg-type]  # no key: the read rules never look at it
        person=person,
        rights=person.role,
        audience=None,
    )


def people_reading(source: Source, people: Iterable[Person]) -> set[Any]:
    """The ids of `people` who may read `source` now: people of its tenant, not erased,
    stewards, or whose user passes the rule (one query for the batch)."""
    people = [p for p in people if p.tenant_id == source.tenant_id and p.erased_at is None]
    readers = {p.pk for p in people if person_reader(p).sees_whole_tenant}
    user_ids = {p.user_id for p in people if p.pk not in readers and p.user_id is not None}
    if not user_ids:
        return readers
    source_id = Value(source.pk, output_field=Source._meta.pk)
    users = User.objects.filter(pk__in=user_ids, is_active=True).filter(
        Q(is_superuser=True) | Q(SourceReadable(source_id, "pk", view_source_permission_id()))
    )
    passing = set(users.values_list("pk", flat=True))
    return readers | {p.pk for p in people if p.user_id in passing}


# --- the seam: whose read access changed --------------------------------------------------


@dataclass(frozen=True)
class ReadAccessChange:
    """Read access may have ended for these people (None: anyone of the tenant) on these
    sources (None: any source of the tenant)."""

    tenant_id: Any
    person_ids: frozenset[Any] | None = None
    source_ids: frozenset[Any] | None = None


READ_ACCESS_HOOKS: list[Callable[[ReadAccessChange], object]] = []


def read_access_changed(
    tenant: Tenant | Any,
    *,
    people: Iterable[Any] | None = None,
    sources: Iterable[Any] | None = None,
) -> ReadAccessChange:
    """Tell the layers above that read access of `people` (persons or ids; None: anyone)
    to `sources` (sources or ids; None: any) may have ended. The hooks run now, in the
    caller's transaction, so the change and its consequences commit (or roll back)
    together."""

    def ids(items: Iterable[Any] | None) -> frozenset[Any] | None:
        return None if items is None else frozenset(getattr(i, "pk", i) for i in items)

    change = ReadAccessChange(getattr(tenant, "pk", tenant), ids(people), ids(sources))
    for hook in READ_ACCESS_HOOKS:
        hook(change)
    return change


def rights_within(asserted: str, person: Person) -> bool:
    """An asserted role is no higher than the person's current one."""
    return Rights.rank(asserted) <= Rights.rank(person.role)
