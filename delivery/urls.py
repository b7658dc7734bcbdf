"""Chat hooks (CONTRACT §3.5). Each hook verifies its request before anything else.

Add every hook through `hook()`: it is CSRF-exempt (chat platforms sign their requests
instead) and rate-limited per client IP before the request is read (see `ratelimit`)."""

from collections.abc import Callable

from django.http import HttpResponse
from django.urls import URLPattern, path
from django.views.decorators.csrf import csrf_exempt

from .hooks.ratelimit import hook_rate_limited
from .slack import hooks as slack
from .teams import hooks as teams


def hook(route: str, view: Callable[..., HttpResponse], name: str) -> URLPattern:
    return path(route, csrf_exempt(hook_rate_limited(view)), name=name)


urlpatterns: list[URLPattern] = [
    hook("slack/interactivity", slack.interactivity, "hook-slack-interactivity"),
    hook("slack/events", slack.events, "hook-slack-events"),
    hook("teams/messages", teams.messages, "hook-teams-messages"),
]
