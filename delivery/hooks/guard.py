"""A verified Slack body that Bolt could not handle safely, or a verified Teams activity
not shaped as Teams sends it, refused with 400.

Runs only after the signature (or token) check (`slack._dispatch`, `teams.messages`): an
unverified request is never parsed. Bolt parses the body itself and answers 500 when it
cannot (JSON nested past the recursion limit, a payload that is not an object, an `event`
that is a list); a string with U+0000 would reach database lookups and audit records (the
card's nonce and clarification id), which PostgreSQL refuses with an error. Both are
checked here with the API parser's rules (`common.parsers.json_problem`), in the body
and in the JSON the listeners decode from it (button values, modal metadata), and the
fields read before any listener runs are checked for the types Slack (or Teams) sends.
"""

import json
from typing import Any
from urllib.parse import parse_qs

from django.http import HttpRequest

from common.parsers import json_problem


def slack_payload_problem(request: HttpRequest) -> str | None:
    """Why this (verified) Slack request's payload is refused, or None."""
    try:
        text = request.body.decode("utf-8")
        data: Any
        if request.content_type == "application/json":
            data = json.loads(text)
        else:
            fields = parse_qs(text, keep_blank_values=True, max_num_fields=100)
            payload = fields.get("payload")
            data = json.loads(payload[0]) if payload else fields
    except (ValueError, RecursionError):
        return "not a JSON payload"
    return json_problem(data) or _shape_problem(data) or _embedded_problem(data)


# What Bolt reads from a payload before any listener runs (its context extractors and
# built-in middlewares), with the types Slack sends: Bolt assumes them and fails with a
# 500 on anything else (an `event` that is a list, `authorizations` that is a number).
_OBJECTS = {"event", "team", "user", "enterprise", "channel", "container", "message"}
_OBJECTS |= {"previous_message", "view", "item", "function_data", "assistant_thread"}
_OBJECT_LISTS = {"authorizations", "actions", "response_urls"}
_STRINGS = {"type", "team_id", "enterprise_id", "user_id", "channel_id", "api_app_id"}
_STRINGS |= {"token", "callback_id", "trigger_id", "response_url", "event_id", "challenge"}
_STRINGS |= {"context_team_id", "context_enterprise_id", "thread_ts", "ts", "command"}
_STRINGS |= {"action_id", "function_execution_id", "bot_access_token"}
# Inside `event`: a user, channel or team is an id, or (in some event types) an object.
_EVENT_IDS = {"user", "channel", "team", "user_team", "channel_id", "user_id"}
_EVENT_STRINGS = {"type", "subtype", "thread_ts", "ts", "bot_id", "channel_type", "text"}


def _shape_problem(data: Any) -> str | None:
    """Why a verified payload is not shaped as Slack sends it, for the fields Bolt reads
    before any listener runs; None when it is."""
    if not isinstance(data, dict):
        return "the payload is not a JSON object"
    wrong = [k for k in _OBJECTS if data.get(k) is not None and not isinstance(data[k], dict)]
    wrong += [k for k in _STRINGS if data.get(k) is not None and not isinstance(data[k], str)]
    wrong += [
        k
        for k in _OBJECT_LISTS
        if data.get(k) is not None
        and not (isinstance(data[k], list) and all(isinstance(i, dict) for i in data[k]))
    ]
    event = data.get("event")
    if isinstance(event, dict):
        wrong += [
            f"event.{k}"
            for k in _EVENT_IDS
            if event.get(k) is not None and not isinstance(event[k], str | dict)
        ]
        wrong += [
            f"event.{k}"
            for k in _EVENT_STRINGS
            if event.get(k) is not None and not isinstance(event[k], str)
        ]
    return f"unexpected types in the payload: {', '.join(sorted(wrong))}" if wrong else None


def _embedded_problem(data: Any) -> str | None:
    """Card values and modal metadata are JSON inside a JSON string; the listeners decode
    them (`slack._card_value`), so they get the same check."""
    if not isinstance(data, dict):
        return None
    embedded = [a.get("value") for a in data.get("actions") or [] if isinstance(a, dict)]
    view = data.get("view")
    if isinstance(view, dict):
        embedded.append(view.get("private_metadata"))
    for text in embedded:
        if not isinstance(text, str):
            continue
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            continue  # not JSON: the listeners treat it as no card value at all
        problem = json_problem(value)
        if problem is not None:
            return problem
    return None


# What the Teams hook reads of an activity, with the types the Bot Framework sends: the
# hook (and ask in chat) reads them as such and failed with a 500 on anything else.
_ACTIVITY_OBJECTS = ("from", "conversation", "recipient", "channelData")
_ACTIVITY_STRINGS = ("type", "id", "name", "serviceUrl", "channelId", "replyToId", "text")
_MEMBER_STRINGS = {
    "from": ("id", "aadObjectId", "name"),
    "conversation": ("id", "conversationType", "tenantId"),
}


def teams_activity_problem(activity: dict[str, Any]) -> str | None:
    """Why a (verified) Teams activity is not shaped as the Bot Framework sends it, for
    the fields the hook reads; None when it is."""
    wrong = [
        k
        for k in _ACTIVITY_OBJECTS
        if activity.get(k) is not None and not isinstance(activity[k], dict)
    ]
    wrong += [
        k
        for k in _ACTIVITY_STRINGS
        if activity.get(k) is not None and not isinstance(activity[k], str)
    ]
    for member, keys in _MEMBER_STRINGS.items():
        part = activity.get(member)
        if isinstance(part, dict):
            wrong += [
                f"{member}.{k}"
                for k in keys
                if part.get(k) is not None and not isinstance(part[k], str)
            ]
    channel_data = activity.get("channelData")
    tenant = channel_data.get("tenant") if isinstance(channel_data, dict) else None
    if tenant is not None and not isinstance(tenant, dict):
        wrong.append("channelData.tenant")
    value = activity.get("value")
    if activity.get("type") == "invoke" and value is not None:
        action = value.get("action") if isinstance(value, dict) else None
        if not isinstance(value, dict) or (action is not None and not isinstance(action, dict)):
            wrong.append("value")
    return f"unexpected types in the activity: {', '.join(sorted(wrong))}" if wrong else None
