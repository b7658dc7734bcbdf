"""The public SCIM compliance checker (scim2-tester) against the live server: discovery,
then create, read, query, replace, PATCH (add, replace, remove) and delete of Users and
Groups. No check may end in ERROR or CRITICAL — also when a second tenant's provider runs
the very same sequence, with the same user names, after the first."""

import random
import uuid
from collections.abc import Iterator
from contextlib import ExitStack

import httpx2
import pytest
import scim2_tester.filling
from scim2_client.engines.httpx2 import SyncSCIMClient
from scim2_tester import CheckResult, Status, check_server

from tenancy.models import AliasKind, Person, PersonAlias, Tenant, TenantGroup
from tenancy.services import api_key_create


def _client(stack: ExitStack, url: str, slug: str) -> tuple[Tenant, SyncSCIMClient]:
    tenant = Tenant.objects.create(slug=slug, name=slug.title())
    _, secret = api_key_create(tenant=tenant, audience="scim")
    http = httpx2.Client(
        base_url=f"{url}/scim/v2", headers={"Authorization": f"Bearer {secret}"}, timeout=30
    )
    stack.callback(http.close)
    return tenant, SyncSCIMClient(http)


@pytest.fixture
def scim_client(live_server, transactional_db) -> Iterator[tuple[Tenant, SyncSCIMClient]]:
    with ExitStack() as stack:
        yield _client(stack, live_server.url, "scimco")


def _failures(results: list[CheckResult]) -> list[str]:
    return [
        f"{r.status.name} {r.resource_type or ''} {r.title}: {r.reason}"
        for r in results
        if r.status in (Status.ERROR, Status.CRITICAL)
    ]


def test_scim2_tester_finds_no_error_against_the_live_server(scim_client):
    tenant, client = scim_client
    results = check_server(client)
    bad = _failures(results)
    assert bad == [], "\n".join(bad)
    succeeded = {(r.resource_type, r.title) for r in results if r.status == Status.SUCCESS}
    for kind in ("User", "Group"):
        for check in (
            "object_creation",
            "object_query",
            "object_replacement",
            "object_deletion",
            "check_add_attribute",
            "check_replace_attribute",
            "check_remove_attribute",
        ):
            assert (kind, check) in succeeded
    # Everything the checker created it deleted again: groups are gone, people are
    # deprovisioned and no longer SCIM resources (what they did stays as evidence).
    assert not TenantGroup.objects.filter(tenant=tenant).exists()
    assert not Person.objects.filter(tenant=tenant, deleted_by_provider=False).exists()


class _SeededUuid:
    """`uuid.uuid4` for the checker's generated values only, from a seeded generator: two
    runs with one seed send the same user names, emails and display names."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)

    def uuid4(self) -> uuid.UUID:
        return uuid.UUID(int=self._random.getrandbits(128), version=4)


def _seeded_run(monkeypatch: pytest.MonkeyPatch, client: SyncSCIMClient) -> list[CheckResult]:
    monkeypatch.setattr(scim2_tester.filling, "uuid", _SeededUuid(2028))
    monkeypatch.setattr(scim2_tester.filling, "random", random.Random(2028))
    return check_server(client)


def _user_names(tenant: Tenant) -> set[str]:
    return set(
        PersonAlias.objects.filter(tenant=tenant, kind=AliasKind.UPN).values_list(
            "value", flat=True
        )
    )


def test_a_second_tenants_provider_runs_the_same_names_without_error(
    monkeypatch, live_server, transactional_db
):
    """Issue 28 item 2, as the probe found it: one tenant's provider holds names (its
    deleted people keep theirs) that another tenant's provider then sends; the second run
    must go exactly as the first, and leave the first tenant's people as they were."""
    with ExitStack() as stack:
        first, first_client = _client(stack, live_server.url, "first")
        second, second_client = _client(stack, live_server.url, "second")
        assert _failures(_seeded_run(monkeypatch, first_client)) == []
        held = _user_names(first)
        first_people = sorted(
            Person.objects.filter(tenant=first).values_list(
                "pk", "email", "name", "user__username", "deactivated_at"
            )
        )
        bad = _failures(_seeded_run(monkeypatch, second_client))
        assert bad == [], "\n".join(bad)
    assert held and _user_names(second) == held  # the very same names, in both tenants
    assert (
        sorted(
            Person.objects.filter(tenant=first).values_list(
                "pk", "email", "name", "user__username", "deactivated_at"
            )
        )
        == first_people
    )
    assert _user_names(first) == held
