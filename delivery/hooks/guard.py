"""A verified Slack body that Bolt could not handle safely, refused with 400.

Runs only after the signature check (`slack._dispatch`): an unverified request is never
parsed. Bolt parses the body itself and answers 500 when it cannot (JSON nested past the
recursion limit); a string with U+0000 would reach database lookups and audit records (the
card's nonce and clarification id), which PostgreSQL refuses with an error. Both are
checked here with the API parser's rules (`telha.common.parsers.json_problem`), in the body
and in the JSON the listeners decode from it (button values, modal metadata).
"""

import json
from typing import Any
from urllib.parse import parse_qs

from django.http import HttpRequest

from telha.common.parsers import json_problem


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
    return json_problem(data) or _embedded_problem(data)


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
