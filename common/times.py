"""Times are integers in microseconds since the Unix epoch (UTC), `None` = open end."""

import time
from datetime import UTC, datetime, timedelta

from django.utils.dateparse import parse_datetime

US_PER_SECOND = 1_000_000
MIN_US = 0
MAX_US = 253_402_300_799_999_999  # 9999-12-31T23:59:59.999999Z


class TimeParseError(ValueError):
    """A value that is neither µs in range nor an RFC 3339 timestamp."""


def now_us() -> int:
    """The wall clock in µs."""
    return time.time_ns() // 1000


def to_us(dt: datetime) -> int:
    """A timezone-aware datetime as µs since the epoch."""
    if dt.tzinfo is None:
        raise TimeParseError("timestamp needs a timezone offset")
    delta = dt - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * US_PER_SECOND + delta.microseconds


def from_us(us: int) -> datetime:
    """µs since the epoch as an aware UTC datetime."""
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=us)


def parse_us(value: object) -> int:
    """An input time: an integer µs in range, or an RFC 3339 string with an offset."""
    if isinstance(value, bool):
        raise TimeParseError("expected µs since the epoch or an RFC 3339 timestamp")
    if isinstance(value, int):
        us = value
    elif isinstance(value, str):
        text = value.strip()
        digits = text.removeprefix("-")
        if digits.isascii() and digits.isdigit():  # not "²" or "٣": isdigit() alone is Unicode
            if len(digits) > 20:  # int() refuses > 4300 digits; anything this long is out of range
                raise TimeParseError(f"time out of range [{MIN_US}, {MAX_US}] µs")
            us = int(text)
        else:
            try:
                parsed = parse_datetime(text.replace("z", "Z"))
            except ValueError as exc:
                raise TimeParseError(f"not an RFC 3339 timestamp: {value[:40]!r}") from exc
            if parsed is None:
                raise TimeParseError(f"not an RFC 3339 timestamp: {value[:40]!r}")
            us = to_us(parsed)
    else:
        raise TimeParseError("expected µs since the epoch or an RFC 3339 timestamp")
    if not MIN_US <= us <= MAX_US:
        raise TimeParseError(f"time out of range [{MIN_US}, {MAX_US}] µs")
    return us


def iso(us: int | None) -> str:
    """A µs time as an ISO 8601 string for people (admin, CLI); '∞' for an open end."""
    if us is None:
        return "∞"
    return from_us(us).strftime("%Y-%m-%d %H:%M:%S UTC")


def interval_contains(valid_from: int | None, valid_to: int | None, at: int) -> bool:
    """Whether the half-open interval [from, to) contains `at` (None = open)."""
    return (valid_from is None or valid_from <= at) and (valid_to is None or at < valid_to)
