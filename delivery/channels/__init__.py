"""Delivery channels. A person is reached on the first configured channel (in the
tenant's channel order, by default `CLARIFY_CHANNELS`) for which they have a verified
address."""

from dataclasses import dataclass

from django.conf import settings
from django.utils.module_loading import import_string

from tenancy.models import Person

from .base import Channel, DeliveryError

CHANNEL_CLASSES = {
    "teams": "delivery.teams.channel.TeamsChannel",
    "slack": "delivery.slack.channel.SlackChannel",
    "inbox": "delivery.inbox.channel.InboxChannel",
    "email": "delivery.email.channel.EmailChannel",
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


@dataclass(frozen=True)
class Route:
    """Where a person is reached: a channel and their verified address on it."""

    channel: Channel
    address: str


def route_for(
    person: Person,
    aliases: dict[str, str],
    order: list[str] | None = None,
    *,
    channels: list[Channel] | None = None,
) -> Route | None:
    """The first configured channel, in `order` (the tenant's channel order; None: the
    `CLARIFY_CHANNELS` default), on which the person has a verified address; `channels`:
    those channels, when the caller has them already."""
    for channel in configured_channels(order) if channels is None else channels:
        address = channel.address(person, aliases)
        if address:
            return Route(channel, address)
    return None


__all__ = [
    "Channel",
    "DeliveryError",
    "Route",
    "channel_named",
    "configured_channels",
    "route_for",
]
