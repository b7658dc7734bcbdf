"""Who is behind a chat identity. A channel's user id (a Slack user id, a Teams user or
Entra object id) binds a person only through that person's verified alias of the same
kind (CONTRACT §2.1 `aliases`), and only within one tenant: the tenant of the card a tap
names. Shared by card taps (`delivery.actions`) and ask in chat."""

import logging
from dataclasses import dataclass

from django.db.models import Q, QuerySet
from django.http import HttpRequest

from tenancy.models import Person, PersonAlias, Tenant, normalise_alias
from tenancy.selectors import person_by_alias

log = logging.getLogger(__name__)


def signed_in_person(request: HttpRequest) -> Person | None:
    """The person behind the request's signed-in user (the inbox, its pages, the email
    link's confirmation), or None: no person, or an erased one."""
    person = getattr(request.user, "person", None)
    return person if person is not None and person.erased_at is None else None


@dataclass(frozen=True)
class ChatIdentity:
    """A tapper or asker as their channel verified them.

    `label` names them in audit events ("slack:T1:U1", "teams:<tenant>:29:1x",
    "user:7"). Either the channel has bound the person itself (`bound`: the inbox's
    signed-in person, or the Teams hook that binds before anything else; `person` may
    then be None: nobody), or `aliases` — (kind, value) in binding order — bind them."""

    label: str
    aliases: tuple[tuple[str, str], ...] = ()
    person: Person | None = None
    bound: bool = False

    @classmethod
    def of_person(cls, person: Person | None, label: str = "") -> "ChatIdentity":
        return cls(label=label, person=person, bound=True)

    @classmethod
    def of_aliases(cls, label: str, *aliases: tuple[str, str]) -> "ChatIdentity":
        return cls(label=label, aliases=tuple(aliases))

    def person_in(self, tenant: Tenant) -> Person | None:
        """The tenant's person this identity is: the bound one, else the first alias that
        a (non-erased) person of the tenant holds; None when unmapped there."""
        if self.bound:
            return self.person
        for kind, value in self.aliases:
            person = person_by_alias(tenant=tenant, kind=kind, value=value) if value else None
            if person is not None:
                return person
        return None

    def _holders(self) -> "QuerySet[PersonAlias] | None":
        """The verified aliases of (non-erased) people that match this identity's, any
        tenant; None when it has none to match. The one alias lookup across tenants."""
        match = Q()
        for kind, value in self.aliases:
            if value:
                match |= Q(kind=kind, value=normalise_alias(kind, value))
        if not match:
            return None
        return PersonAlias.objects.filter(match, person__erased_at__isnull=True)

    def only_person(self) -> Person | None:
        """The one person, of any tenant, this identity is (when no card names a tenant):
        the bound one, else the only person holding its aliases; None when unmapped or
        ambiguous (people of several tenants)."""
        if self.bound:
            return self.person
        holders = self._holders()
        if holders is None:
            return None
        rows = holders.select_related("person__tenant", "person__user")[: len(self.aliases) + 1]
        people = {row.person_id: row.person for row in rows}
        if len(people) > 1:
            log.warning("a chat identity maps to people of several tenants; ignored")
        return next(iter(people.values())) if len(people) == 1 else None

    def people(self) -> list[Person]:
        """Every person this identity is, at most one per tenant (`person_in` of each
        tenant where one of its aliases is held: the same chat user may be a person in
        several workspaces)."""
        if self.bound:
            return [self.person] if self.person is not None else []
        holders = self._holders()
        if holders is None:
            return []
        tenants = holders.values_list("tenant", flat=True).distinct()
        found = (self.person_in(t) for t in Tenant.objects.filter(pk__in=tenants))
        return [p for p in found if p is not None]
