"""A tenant's webhook endpoints: add, list, remove (`telha webhooks`, the steward admin)."""

import base64
import secrets
from collections.abc import Iterable

from common.errors import InvalidInput
from tenancy.models import Tenant

from .models import WEBHOOK_EVENT_TYPES, WebhookEndpoint


def webhook_secret_new() -> str:
    """A Standard Webhooks secret: "whsec_" and 24 random bytes in base64."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


def event_types_checked(types: Iterable[str]) -> list[str]:
    """The event types, each one Telha sends (`INVALID_INPUT` otherwise), in the
    contract's order, at least one."""
    wanted = {t.strip() for t in types if t.strip()}
    unknown = sorted(wanted - set(WEBHOOK_EVENT_TYPES))
    if unknown or not wanted:
        raise InvalidInput(
            f"Unknown event types {unknown}; choose from {', '.join(WEBHOOK_EVENT_TYPES)}."
            if unknown
            else "Name at least one event type."
        )
    return [t for t in WEBHOOK_EVENT_TYPES if t in wanted]


def webhook_save(endpoint: WebhookEndpoint) -> WebhookEndpoint:
    """Save an endpoint (new or changed): the appends of transactions that begin after
    it announce to it what it subscribes to."""
    endpoint.save()
    return endpoint


def webhook_remove(endpoint: WebhookEndpoint) -> None:
    """Remove an endpoint; its unsent messages are completed unsent when next leased."""
    endpoint.delete()


def webhook_add(
    *, tenant: Tenant, url: str, event_types: Iterable[str], with_text: bool = False
) -> WebhookEndpoint:
    """A new endpoint with a new secret (shown to its creator once)."""
    if not url.startswith(("http://", "https://")):
        raise InvalidInput("The URL must be http:// or https://.")
    return webhook_save(
        WebhookEndpoint(
            tenant=tenant,
            url=url,
            secret=webhook_secret_new(),
            event_types=event_types_checked(event_types),
            with_text=with_text,
        )
    )
