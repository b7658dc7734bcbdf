"""Delivery channels. A person is reached on the first configured channel (in the
`CLARIFY_CHANNELS` order) for which they have a verified address."""

from django.conf import settings
from django.utils.module_loading import import_string

from .base import Channel, DeliveryError

CHANNEL_CLASSES = {
    "teams": "delivery.channels.teams.TeamsChannel",
    "slack": "delivery.channels.slack.SlackChannel",
    "inbox": "delivery.channels.inbox.InboxChannel",
}


def configured_channels() -> list[Channel]:
    """Channels in the configured order that are implemented and configured here."""
    out: list[Channel] = []
    for name in settings.CLARIFY_CHANNELS:
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
