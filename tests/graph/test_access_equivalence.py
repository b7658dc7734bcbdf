"""The lean read-access check grants exactly what guardian grants.

`graph.selectors.source_readable_q` (one `EXISTS … OR EXISTS …` over the direct-FK
permission tables, used by `readable_sources`, `readable_nodes`,
`readable_clarifications`, and as `source_readable_sql` the answer endpoint's lock)
replaced guardian's
`get_objects_for_user(user, "graph.view_source", accept_global_perms=False)`. Here both
are evaluated side by side, the old selectors written out as the reference, over an
exhaustive matrix of the ways a grant can or cannot reach a user (own row, group row,
other permissions, global permissions, inactive users, superusers, other tenants) and
over random ACLs, memberships and user flags (hypothesis). Runs on SQLite and PostgreSQL.
"""

import itertools
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.db import transaction
from django.db.models import Q
from guardian.shortcuts import assign_perm, get_objects_for_user
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clarify.models import Clarification
from clarify.selectors import readable_clarifications
from clarify.services import clarification_lock
from common.errors import NotFound
from graph.access import people_reading
from graph.models import Node, Source
from graph.selectors import (
    readable_nodes,
    readable_sources,
    source_readable_q,
    view_source_permission_id,
)
from tenancy.auth import Caller
from tenancy.models import Person, Rights

from ..factories import (
    NodeFactory,
    PersonFactory,
    SourceFactory,
    SourceVersionFactory,
    TenantFactory,
    TenantGroupFactory,
)

pytestmark = pytest.mark.django_db

PERMS = ("graph.view_source", "graph.change_source", "graph.delete_source")


# --- the reference: the selectors as they were, on guardian --------------------------


def ref_sources(caller: Caller) -> Any:
    tenant_sources = Source.objects.filter(tenant=caller.tenant)
    if caller.sees_whole_tenant:
        return tenant_sources
    if caller.user is None or not caller.user.is_active:
        return tenant_sources.none()
    return get_objects_for_user(
        caller.user, "graph.view_source", klass=tenant_sources, accept_global_perms=False
    )


def ref_nodes(caller: Caller) -> Any:
    nodes = Node.objects.filter(tenant=caller.tenant)
    if caller.sees_whole_tenant:
        return nodes
    readable = ref_sources(caller)
    return nodes.filter(
        Q(source__isnull=True, origin__isnull=True)
        | Q(source__isnull=True, origin__in=readable)
        | Q(source__in=readable)
    )


def ref_clarifications(caller: Caller) -> Any:
    qs = Clarification.objects.filter(tenant=caller.tenant)
    if caller.sees_whole_tenant:
        return qs
    return qs.filter(target__source__in=ref_sources(caller))


def ids(qs: Any) -> set[Any]:
    return set(qs.values_list("pk", flat=True))


def caller_of(person: Person, rights: str = Rights.EDITOR) -> Caller:
    """A fresh caller (re-read person and user: flags change between examples)."""
    person = Person.objects.select_related("tenant", "user").get(pk=person.pk)
    return Caller(tenant=person.tenant, key=None, person=person, rights=rights, audience=None)  # type: ignore[arg-type]


def assert_same_grants(caller: Caller, context: str = "") -> None:
    granted = ids(ref_sources(caller))
    assert ids(readable_sources(caller)) == granted, f"sources differ {context}"
    assert ids(readable_nodes(caller)) == ids(ref_nodes(caller)), f"nodes differ {context}"
    expected = ids(ref_clarifications(caller))
    assert ids(readable_clarifications(caller)) == expected, f"clarifications differ {context}"
    # The answer endpoint's form: its hand-written locking statement
    # (`source_readable_sql`), tried on every clarification of every tenant.
    with transaction.atomic():
        answerable = set()
        for clar_id in Clarification.objects.values_list("pk", flat=True):
            try:
                locked, _ = clarification_lock(caller.tenant, clar_id, caller)
            except NotFound:
                continue
            answerable.add(locked.pk)
        assert answerable == expected, f"answer lock differs {context}"
    # Nested as subqueries (their aliases relabelled), as the views and delivery use them.
    nested = Clarification.objects.filter(pk__in=readable_clarifications(caller).values("pk"))
    assert ids(nested) == expected, f"nested clarifications differ {context}"
    assert ids(Node.objects.filter(pk__in=readable_nodes(caller))) == ids(ref_nodes(caller))
    assert ids(Node.objects.filter(source__in=readable_sources(caller))) == ids(
        Node.objects.filter(source__in=ref_sources(caller))
    )
    # And the bare filter on `Source` for the user agrees with guardian on every source
    # of every tenant (no tenant filter on either side).
    if caller.user is not None and caller.user.is_active:
        everywhere = get_objects_for_user(
            caller.user, "graph.view_source", klass=Source, accept_global_perms=False
        )
        assert ids(Source.objects.filter(source_readable_q(caller.user))) == ids(everywhere)
    # The delivery gate's batch form of the same rule (`people_reading`) agrees too.
    person = caller.person
    if person is not None and person.role != Rights.STEWARD and person.erased_at is None:
        for source in Source.objects.filter(tenant=caller.tenant):
            reads = person.pk in people_reading(source, [person])
            assert reads == (source.pk in granted), f"gate differs {context}"


# --- the world -------------------------------------------------------------------------


@dataclass
class World:
    tenant: Any
    groups: list[Any]  # auth groups of the tenant's groups
    people: list[Person]  # with users
    userless: Person
    steward: Person
    sources: list[Source]  # of the tenant, each with a fact node and a clarification
    foreign_sources: list[Source]  # of another tenant


def _clarification_on(tenant: Any, source: Source, n: int) -> None:
    node = NodeFactory(tenant=tenant, source=source)
    Clarification.objects.create(
        tenant=tenant,
        target=node,
        kind="relative_date",
        severity="normal",
        quorum_state="not_required",
        detector_confidence=0.8,
        applied_candidate_confidence=0.4,
        source_version=SourceVersionFactory(source=source),
        dedup_key=f"dedup-{tenant.slug}-{n}",
    )


@pytest.fixture
def world() -> World:
    tenant, other = TenantFactory(slug="eq-main"), TenantFactory(slug="eq-other")
    groups = [TenantGroupFactory(tenant=tenant, name=f"g{i}").auth_group for i in range(3)]
    foreign_group = TenantGroupFactory(tenant=other, name="g0").auth_group
    people = [PersonFactory(tenant=tenant, role=Rights.EDITOR) for _ in range(4)]
    userless = PersonFactory(tenant=tenant, role=Rights.EDITOR, user=None)
    steward = PersonFactory(tenant=tenant, role=Rights.STEWARD)
    sources = [SourceFactory(tenant=tenant) for _ in range(4)]
    foreign = [SourceFactory(tenant=other) for _ in range(2)]
    for n, source in enumerate([*sources, *foreign]):
        _clarification_on(source.tenant, source, n)
    NodeFactory(tenant=tenant, source=None, key="person:someone")  # sourceless: always read
    # An unresolved PERSON node named by sources[0]: read under that source's ACL.
    NodeFactory(tenant=tenant, source=None, key="email:stranger@x.test", origin=sources[0])
    NodeFactory(tenant=other, source=None, key="person:elsewhere")
    # Grants on the other tenant's sources to this tenant's principals must never leak.
    for source in foreign:
        assign_perm("graph.view_source", people[0].user, source)
        assign_perm("graph.view_source", groups[0], source)
        assign_perm("graph.view_source", foreign_group, source)
    return World(tenant, groups, people, userless, steward, sources, foreign)


def test_permission_id_is_guardians_view_source():
    perm = Permission.objects.get(pk=view_source_permission_id())
    assert (perm.content_type.app_label, perm.codename) == ("graph", "view_source")


def test_matrix_of_grants(world):
    """Every way a grant can (not) reach the user, alone and combined, for active,
    inactive and superusers: the same sources, nodes and clarifications as guardian."""
    person = world.people[1]
    user = person.user
    source, group, other_group = world.sources[0], world.groups[0], world.groups[1]
    user_grants = [(), ("graph.view_source",), ("graph.change_source",)]
    group_grants = [
        (),
        ("member", "graph.view_source"),
        ("not-member", "graph.view_source"),
        ("member", "graph.change_source"),
        ("member", "graph.delete_source", "graph.view_source"),
    ]
    global_grants = [False, True]
    for case in itertools.product(
        user_grants, group_grants, global_grants, (True, False), (False, True)
    ):
        own, via_group, global_view, active, superuser = case
        with transaction.atomic():
            for perm in own:
                assign_perm(perm, user, source)
            if via_group:
                membership, *perms = via_group
                if membership == "member":
                    user.groups.add(group)
                else:
                    world.people[2].user.groups.add(group)
                user.groups.add(other_group)  # a group without grants changes nothing
                for perm in perms:
                    assign_perm(perm, group, source)
            if global_view:
                assign_perm("graph.view_source", user)  # global: ignored by both
            user.is_active, user.is_superuser = active, superuser
            user.save(update_fields=["is_active", "is_superuser"])
            caller = caller_of(person)
            assert_same_grants(caller, context=repr(case))
            readable = ids(readable_sources(caller))
            expected_on_source = active and (
                superuser
                or "graph.view_source" in own
                or (
                    bool(via_group)
                    and via_group[0] == "member"
                    and "graph.view_source" in via_group
                )
            )
            assert (source.pk in readable) == expected_on_source, case
            transaction.set_rollback(True)


def test_whole_tenant_and_userless_callers(world):
    steward = caller_of(world.steward, Rights.STEWARD)
    assert steward.sees_whole_tenant
    assert_same_grants(steward)
    assert ids(readable_sources(steward)) == {s.pk for s in world.sources}
    userless = caller_of(world.userless)
    assert_same_grants(userless)
    assert ids(readable_sources(userless)) == set()
    assert ids(readable_nodes(userless)) == ids(
        Node.objects.filter(tenant=world.tenant, source__isnull=True, origin__isnull=True)
    )


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_random_acls(world, data):
    """Random ACLs (user and group rows of several permissions), memberships and user
    flags: every person of the tenant reads the same through both."""
    users = [p.user for p in world.people]
    targets = world.sources + world.foreign_sources
    user_rows = data.draw(
        st.sets(
            st.tuples(
                st.sampled_from(range(len(users))),
                st.sampled_from(range(len(targets))),
                st.sampled_from(PERMS),
            ),
            max_size=12,
        ),
        label="user rows",
    )
    group_rows = data.draw(
        st.sets(
            st.tuples(
                st.sampled_from(range(len(world.groups))),
                st.sampled_from(range(len(targets))),
                st.sampled_from(PERMS),
            ),
            max_size=10,
        ),
        label="group rows",
    )
    memberships = data.draw(
        st.lists(
            st.sets(st.sampled_from(range(len(world.groups)))),
            min_size=len(users),
            max_size=len(users),
        ),
        label="memberships",
    )
    flags = data.draw(
        st.lists(
            st.tuples(st.booleans(), st.booleans(), st.booleans()),
            min_size=len(users),
            max_size=len(users),
        ),
        label="(active, superuser, global view) per user",
    )
    with transaction.atomic():
        for u, s, perm in user_rows:
            assign_perm(perm, users[u], targets[s])
        for g, s, perm in group_rows:
            assign_perm(perm, world.groups[g], targets[s])
        for user, member_of, (active, superuser, global_view) in zip(
            users, memberships, flags, strict=True
        ):
            user.groups.set([world.groups[g] for g in member_of])
            if global_view:
                assign_perm("graph.view_source", user)
            user.is_active, user.is_superuser = active, superuser
            user.save(update_fields=["is_active", "is_superuser"])
        for person in world.people:
            assert_same_grants(caller_of(person))
        transaction.set_rollback(True)


def test_permission_cache_survives_recreated_permissions(world, monkeypatch):
    """The cached permission id is forgotten when permissions are re-created (`migrate`,
    or `flush` between transactional tests emit post_migrate)."""
    from django.core.management.sql import emit_post_migrate_signal

    from graph import access as selectors

    first = view_source_permission_id()
    monkeypatch.setattr(selectors, "_view_source_permission_id", first + 10_000)
    emit_post_migrate_signal(verbosity=0, interactive=False, db="default")  # what flush does
    assert view_source_permission_id() == first
