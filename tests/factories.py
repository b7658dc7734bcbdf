"""factory-boy factories for the foundation models (tenancy and the fact store).

They build rows directly, bypassing the services, so tests can set up state the services
would refuse (for constraint tests) or that would be slow to build through the API.
"""

import uuid

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from clarify.models import AuditEvent, Clarification, ResponseRecord
from graph.models import (
    Edge,
    Node,
    NodeVersion,
    Source,
    SourceGroupObjectPermission,
    SourceUserObjectPermission,
    SourceVersion,
    Span,
)
from jobs.models import Job
from tenancy.models import ApiKey, Person, PersonAlias, Rights, Tenant, TenantGroup
from tenancy.services import user_name_for

from .submissions import OMIT, Submission


class TenantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Tenant
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"tenant-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}@example.test")
    email = factory.LazyAttribute(lambda o: o.username)
    password = factory.django.Password(None)  # unusable, as for people without a password


class TenantGroupFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TenantGroup

    tenant = factory.SubFactory(TenantFactory)
    name = factory.Sequence(lambda n: f"group{n}")
    auth_group = factory.LazyAttribute(
        lambda o: Group.objects.get_or_create(name=f"{o.tenant.slug}:{o.name}")[0]
    )


class PersonFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Person

    tenant = factory.SubFactory(TenantFactory)
    name = factory.Faker("name")
    email = factory.Sequence(lambda n: f"person{n}@example.test")
    role = Rights.VIEWER
    id = factory.LazyFunction(uuid.uuid4)
    # As `person_upsert` names it: by the person's id, never by a name a tenant chose.
    user = factory.SubFactory(
        UserFactory,
        username=factory.LazyAttribute(lambda o: user_name_for(o.factory_parent.id)),
        email=factory.SelfAttribute("..email"),
    )


class SourceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Source

    tenant = factory.SubFactory(TenantFactory)
    system = "test"
    external_id = factory.Sequence(lambda n: f"doc-{n}")
    title = factory.LazyAttribute(lambda o: f"Document {o.external_id}")
    acl = factory.LazyFunction(list)


class SourceVersionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = SourceVersion

    source = factory.SubFactory(SourceFactory)
    tx = factory.Sequence(lambda n: 1_700_000_000_000_000 + n)
    text = "Some canonical text."
    content_hash = factory.LazyAttribute(lambda o: f"{abs(hash(o.text)):064d}"[:64])


class NodeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Node

    tenant = factory.SubFactory(TenantFactory)
    source = factory.SubFactory(SourceFactory, tenant=factory.SelfAttribute("..tenant"))
    key = factory.Sequence(lambda n: f"fact-{n}")


class NodeVersionFactory(factory.django.DjangoModelFactory):
    """A raw version row (no write-path checks): for constraint tests only."""

    class Meta:
        model = NodeVersion

    node = factory.SubFactory(NodeFactory)
    seq = 1
    labels = factory.LazyFunction(lambda: ["CONTRACT_TERM"])
    properties = factory.LazyFunction(dict)
    tx_from = 1_700_000_000_000_000
    tx_to = None
    valid_from = None
    valid_to = None
    confidence = 1.0
    provenance = factory.LazyFunction(dict)


# --- submissions (CONTRACT §3.1) ------------------------------------------------------

MSA_TEXT = (
    "MASTER SERVICES AGREEMENT between Acme Corp and Initech. "
    + "Recitals and definitions. " * 3
    + "This agreement takes effect at the start of next quarter and runs for two years. "
    + "Signed by Alice Author for Acme Corp."
)
OCT_2026 = 1_790_812_800_000_000  # 2026-10-01T00:00:00Z
JAN_2027 = 1_798_761_600_000_000  # 2027-01-01T00:00:00Z


def submission_payload(**overrides: object) -> dict:
    """The CONTRACT §3.1 example: a contract term authored by alice with one relative-date
    ambiguity. Top-level keys are replaced by `overrides`; `source_*` keys patch the source."""
    sub = Submission(
        "contracts/msa.docx",
        MSA_TEXT,
        title="Master services agreement",
        uri="https://sharepoint.example/contracts/msa.docx",
        restriction=None,
    )
    fact = sub.fact(
        "msa-term", name="MSA effective period", span=sub.span_of("This agreement", "two years")
    )
    sub.person("alice@acme.test", of=[fact])
    sub.ambiguity(
        fact,
        candidates=[
            {
                "validFrom": OCT_2026,
                "validTo": None,
                "label": "1 Oct 2026 (next quarter)",
                "spanRef": 0,
            },
            {"validFrom": JAN_2027, "validTo": None, "label": "1 Jan 2027"},
        ],
    )
    payload: dict = sub.payload()
    for name, value in overrides.items():
        if name.startswith("source_"):
            payload["source"][name.removeprefix("source_")] = value
        else:
            payload[name] = value
    return payload


def fact_payload(
    *,
    external_id: str = "notes/plain.md",
    text: str = "A plain fact with no ambiguity at all.",
    acl: list[str] | None = None,
    key: str = "plain",
    labels: list[str] | None = None,
    properties: dict | None = None,
    valid_from: object = None,
    valid_to: object = None,
) -> dict:
    """A one-node submission without spans, edges or ambiguities."""
    sub = Submission(external_id, text, system="notes", acl=["group:legal"] if acl is None else acl)
    sub.fact(
        key,
        properties={"name": "Plain fact"} if properties is None else properties,
        labels=labels or ["CONTRACT_TERM"],
        valid_from=valid_from,
        valid_to=valid_to,
        confidence=OMIT,
        span=OMIT,
    )
    return sub.payload(omit_empty=True)


def written_counts() -> dict[str, int]:
    """Row counts of everything a submission (or a refused request) could write."""
    models = [
        Tenant,
        Person,
        PersonAlias,
        ApiKey,
        Source,
        SourceVersion,
        Span,
        SourceUserObjectPermission,
        SourceGroupObjectPermission,
        Node,
        NodeVersion,
        Edge,
        Clarification,
        ResponseRecord,
        AuditEvent,
        Job,
    ]
    return {m.__name__: m.objects.count() for m in models}
