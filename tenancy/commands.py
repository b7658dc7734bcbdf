"""What the management commands share about tenants."""

from django.core.management.base import CommandError

from common.codes import ErrorCode

from .models import Tenant


def tenant_named(slug: str) -> Tenant:
    """The tenant whose slug is `slug`; a command's `NOT_FOUND` (exit 1) when there is none."""
    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is None:
        raise CommandError(f"{ErrorCode.NOT_FOUND}: no tenant {slug!r}", returncode=1)
    return tenant
