"""A tenant's OpenID provider (CONTRACT §3.8)."""

from django.db import models

from tenancy.models import Tenant


class SsoProvider(models.Model):
    """The tenant's OpenID Connect provider: its endpoints come from discovery
    (`<issuer>/.well-known/openid-configuration`). `password_login` off hides and refuses
    password sign-in for the tenant's people."""

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, related_name="sso")
    issuer = models.URLField(max_length=500)
    client_id = models.CharField(max_length=300)
    client_secret = models.CharField(max_length=500)
    display_name = models.CharField(max_length=100, blank=True)
    password_login = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "OpenID provider"

    def __str__(self) -> str:
        return f"{self.tenant.slug}: {self.issuer}"

    @property
    def label(self) -> str:
        return self.display_name or self.issuer.split("//", 1)[-1].split("/", 1)[0]


class ProvisionedUser(models.Model):
    """What the identity provider left unset on a person it provisions (`displayName`,
    `active`, `roles`): the person still has a name, is active and a viewer, but the
    SCIM resource shows those attributes as absent, as the provider last sent it."""

    person = models.OneToOneField(
        "tenancy.Person", on_delete=models.CASCADE, primary_key=True, related_name="provisioned"
    )
    unset = models.JSONField(default=list)

    def __str__(self) -> str:
        return f"{self.person_id}: unset {self.unset}"
