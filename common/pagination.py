"""Cursor pagination that refuses every cursor it did not issue.

DRF's `CursorPagination` encodes a cursor as base64 of `o=<offset>&r=<reverse>&p=<position>`
and decodes leniently: unknown keys, an empty cursor and non-alphabet characters are
ignored, an offset past the cutoff is silently capped, and a position that is not a value
of the ordering field reaches the database (a `ValidationError` there, so a 500). Here a
cursor is a value signed with Django's signing framework (`SECRET_KEY`, salted per use),
so a tampered, truncated, foreign or hand-made cursor is refused before anything is
decoded, and the signed contents are still checked field by field. Every refusal is
`400 INVALID_INPUT` (`InvalidCursor`); nothing is ever ignored.
"""

from typing import Any

from django.core import signing
from django.utils.dateparse import parse_datetime
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response

from .errors import InvalidInput

#: Longer than any cursor this API issues (about 90 characters): anything longer is refused
#: before the signature is computed.
CURSOR_MAX_LENGTH = 256


class InvalidCursor(InvalidInput):
    """A `cursor` query parameter this API did not issue, or one it cannot use."""

    status_code = 400
    default_detail = (
        "cursor is not a cursor this API issued; pass the `next` value of the previous "
        "page unchanged, or omit cursor for the first page."
    )


class SignedCursorPagination(CursorPagination):
    """`CursorPagination` whose cursors are signed and whose decoding is strict.

    The ordering's first field must be a datetime (its value is the cursor's position);
    `limit` is an integer ≥ 1, capped at `max_page_size`, anything else `INVALID_INPUT`.
    """

    page_size: int = 50
    max_page_size: int = 200
    page_size_query_param = "limit"
    signing_salt = "telha.pagination.cursor"

    def get_page_size(self, request: Request) -> int:
        raw = request.query_params.get(self.page_size_query_param, "")
        if raw == "":
            return self.page_size
        if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:
            raise InvalidInput(f"{self.page_size_query_param} must be a positive integer.")
        return min(int(raw), self.max_page_size)

    def encode_cursor(self, cursor: Cursor) -> str:
        """The bare cursor (not a URL): the signed `{"o", "r", "p"}`."""
        payload = {"o": cursor.offset, "r": int(cursor.reverse), "p": cursor.position}
        return signing.dumps(payload, salt=self.signing_salt)

    def decode_cursor(self, request: Request) -> Cursor | None:
        values = request.query_params.getlist(self.cursor_query_param)
        if not values:
            return None
        if len(values) > 1:
            raise InvalidCursor("cursor was given more than once.")
        encoded = values[0]
        if not encoded:
            raise InvalidCursor("cursor is empty; omit it for the first page.")
        if len(encoded) > CURSOR_MAX_LENGTH or not encoded.isascii():
            raise InvalidCursor()
        try:
            payload = signing.loads(encoded, salt=self.signing_salt)
        except (signing.BadSignature, ValueError, UnicodeError) as exc:
            raise InvalidCursor() from exc
        return self._cursor_from(payload)

    def _cursor_from(self, payload: Any) -> Cursor:
        """The signed payload as a `Cursor`, every field checked (defence in depth: a
        payload signed by an older release or for another use must not reach a query)."""
        if not isinstance(payload, dict) or set(payload) != {"o", "r", "p"}:
            raise InvalidCursor()
        offset, reverse, position = payload["o"], payload["r"], payload["p"]
        if type(offset) is not int or not 0 <= offset <= self.offset_cutoff:
            raise InvalidCursor()
        if type(reverse) is not int or reverse not in (0, 1):
            raise InvalidCursor()
        if position is not None and not _is_aware_datetime(position):
            raise InvalidCursor()
        return Cursor(offset=offset, reverse=bool(reverse), position=position)

    def get_paginated_response(self, data: Any) -> Response:
        return Response({"results": data, "next": self.get_next_link()})

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["results", "next"],
            "properties": {"results": schema, "next": {"type": "string", "nullable": True}},
        }


def _is_aware_datetime(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        parsed = parse_datetime(value)
    except ValueError:
        return False
    return parsed is not None and parsed.tzinfo is not None
