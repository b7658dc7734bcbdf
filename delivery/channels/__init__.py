"""Delivery channels. A person is reached on the first configured channel (in the
tenant's channel order, by default `CLARIFY_CHANNELS`) for which they have a verified
address."""

from django.conf import settings
from django.utils.module_loading import import_string

from .base import Channel, DeliveryError

CHANNEL_CLASSES = {
    "teams": "delivery.channels.teams.TeamsChannel",
    "slack": "delivery.channels.slack.SlackChannel",
    "inbox": "delivery.channels.inbox.InboxChannel",
}


def configured_channels(order: list[str] | None = None) -> list[Channel]:
    """Channels in `order` (a tenant's channel order; None or empty: `CLARIFY_CHANNELS`)
    that are implemented and configured here."""
    out: list[Channel] = []
    for name in order or settings.CLARIFY_CHANNELS:
        path = CHANNEL_CLASSES.get(name)
        if path is None:
            continue
        try:
            cls = import_string(path)
        except ImportError:
            continue
        channel = cls()
        if channel.configured():
            out.append(channel)
    return out


def channel_named(name: str) -> Channel | None:
    return next((c for c in configured_channels() if c.name == name), None)


__all__ = ["Channel", "DeliveryError", "channel_named", "configured_channels"]
