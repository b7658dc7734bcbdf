"""Tenants, people, their groups and delivery aliases, and API keys."""

import uuid
from datetime import date

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models


class Rights(models.TextChoices):
    """A person's rights in their tenant, ordered viewer < editor < steward."""

    VIEWER = "viewer", "Viewer"
    EDITOR = "editor", "Editor"
    STEWARD = "steward", "Steward"

    @classmethod
    def rank(cls, value: str) -> int:
        return _RIGHTS_RANK[value]

    @classmethod
    def at_least(cls, value: str, minimum: str) -> bool:
        return _RIGHTS_RANK[value] >= _RIGHTS_RANK[minimum]


_RIGHTS_RANK: dict[str, int] = {Rights.VIEWER: 0, Rights.EDITOR: 1, Rights.STEWARD: 2}


class Tenant(models.Model):
    """A workspace: every other object belongs to exactly one tenant."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class TenantGroup(models.Model):
    """A tenant's group (ACL principal `group:NAME`), backed by a Django auth group
    named `<tenant>:<name>` so django-guardian can grant object permissions to it."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="groups")
    name = models.CharField(max_length=100)
    auth_group = models.OneToOneField(Group, on_delete=models.PROTECT, related_name="tenant_group")
    # The identity provider's id for the group (SCIM `externalId`), if it sent one.
    external_id = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, null=True)
    updated_at = models.DateTimeField(auto_now=True, null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="tenantgroup_unique_name")
        ]
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.tenant.slug}:{self.name}"


class Person(models.Model):
    """A person of a tenant, with rights and a Django user whose user name is the person's
    id: the names people sign in with (their email, their `upn` alias, which is their SCIM
    userName) are unique within the tenant only (`person_unique_email`, `alias_unique_value`)
    and another tenant may hold the same ones.

    Sign-in is disabled (unusable password) unless the workspace file gives one; only
    stewards are staff (may enter the admin). An erased person keeps only a tombstone.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="people")
    name = models.CharField(max_length=200)
    email = models.EmailField(max_length=254)
    role = models.CharField(max_length=10, choices=Rights.choices, default=Rights.VIEWER)
    groups = models.ManyToManyField(TenantGroup, blank=True, related_name="members")
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="person",
    )
    erased_at = models.DateTimeField(null=True, blank=True)
    # Deprovisioned by the identity provider (SCIM `active: false` or DELETE): keys revoked,
    # sign-in refused, never asked again; everything they answered is kept as evidence.
    deactivated_at = models.DateTimeField(null=True, blank=True)
    # Deleted by the identity provider (SCIM DELETE): deactivated and no longer one of its
    # resources; re-created (same email) it is this person again.
    deleted_by_provider = models.BooleanField(default=False)
    # Away (issue 32): through the end of `away_until` (UTC) the person is not asked
    # (skip reason PERSON_AWAY); their delegate, when set, is asked in their place.
    away_until = models.DateField(null=True, blank=True)
    away_delegate = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="delegating"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "email"], name="person_unique_email")
        ]
        ordering = ["name"]
        verbose_name_plural = "people"

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>"

    def away_on(self, day: date) -> bool:
        """Away on `day` (a UTC date): through the end of `away_until`."""
        return self.away_until is not None and day <= self.away_until


class AliasKind(models.TextChoices):
    """Delivery and identity aliases of a person (CONTRACT §2.1 `aliases`)."""

    EMAIL = "email", "Email"
    UPN = "upn", "UPN"
    AAD_OID = "aadOid", "Entra object id"
    SLACK_USER_ID = "slackUserId", "Slack user id"
    TEAMS_USER_ID = "teamsUserId", "Teams user id"


CASE_INSENSITIVE_ALIASES = {AliasKind.EMAIL, AliasKind.UPN, AliasKind.AAD_OID}


def normalise_alias(kind: str, value: str) -> str:
    value = value.strip()
    return value.lower() if kind in CASE_INSENSITIVE_ALIASES else value


class PersonAlias(models.Model):
    """One verified identity of a person; unique per tenant, so resolution is never ambiguous."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="aliases")
    person = models.ForeignKey(Person, on_delete=models.CASCADE, related_name="aliases")
    kind = models.CharField(max_length=20, choices=AliasKind.choices)
    value = models.CharField(max_length=320)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "kind", "value"], name="alias_unique_value")
        ]
        verbose_name_plural = "person aliases"

    def __str__(self) -> str:
        return f"{self.kind}:{self.value}"


class Audience(models.TextChoices):
    """What a service token is for; it fences the job kinds it may lease."""

    INGEST = "ingest", "Ingestion worker"
    CLARIFY = "clarify", "Clarify delivery service"
    SCIM = "scim", "Identity provider (SCIM)"


class ApiKey(models.Model):
    """A credential of one tenant: an API key (optionally bound to a person and role) or a
    service token with an audience. Only the SHA-256 of the secret is stored."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=200, blank=True)
    prefix = models.CharField(max_length=16)
    key_hash = models.CharField(max_length=64, unique=True)
    person = models.ForeignKey(
        Person, on_delete=models.CASCADE, null=True, blank=True, related_name="api_keys"
    )
    role = models.CharField(max_length=10, choices=Rights.choices, null=True, blank=True)
    audience = models.CharField(max_length=10, choices=Audience.choices, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(person__isnull=True) | models.Q(audience__isnull=True),
                name="apikey_principal_or_audience",
            ),
            models.CheckConstraint(
                condition=models.Q(person__isnull=True, role__isnull=True)
                | models.Q(person__isnull=False, role__isnull=False),
                name="apikey_role_with_person",
            ),
        ]
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name or self.audience or 'key'})"
