"""The audit trail as the decide page shows it to a steward: each event's time as a date,
its type in words and its detail as labelled values — people by name, responses by their
number and responder, µs times as dates, nested values spelt out — never raw JSON or ids.
The CLI's `--json` and the API keep the events as recorded."""

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from common.times import iso
from tenancy.models import Person

from .models import Clarification, ResponseRecord

# Detail keys (and list keys) whose ids name people: one that no longer matches a person
# of the tenant is shown as an erased person.
PERSON_KEYS = frozenset({"by", "candidate", "responder", "person", "requester", "actor", "ranking"})
# A 16-digit integer is a µs time (2001 to 2286), as a value or written into text.
US_MIN, US_MAX = 10**15, 10**16
RAW_US = re.compile(r"(?<![\w-])1\d{15}(?![\w-])")
NOT_SHOWN = "(not shown)"
ERASED = "(erased person)"


@dataclass(frozen=True)
class TrailEvent:
    """One event of the trail, for people: `details` are (label, value) pairs."""

    at: str
    type: str
    details: list[tuple[str, str]]


def _uuid(value: Any) -> uuid.UUID | None:
    if not isinstance(value, str) or len(value) != 36:
        return None
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


def _ids_in(value: Any) -> Iterator[uuid.UUID]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _ids_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from _ids_in(item)
    elif (found := _uuid(value)) is not None:
        yield found


def label(key: str) -> str:
    """A detail key in words: `bindingStatus` → "binding status", `responseId` →
    "response", `skip_reasons` → "skip reasons"."""
    key = key[:-2] if key.endswith("Id") and len(key) > 2 else key
    words = "".join(f" {c.lower()}" if c.isupper() else c for c in key).replace("_", " ")
    return " ".join(words.split())


class TrailNames:
    """The names the trail's ids stand for, looked up once for the whole trail."""

    def __init__(self, clar: Clarification, events: list[dict[str, Any]]) -> None:
        ids = {i for e in events for i in _ids_in(e.get("detail"))}
        people = Person.objects.filter(tenant_id=clar.tenant_id, pk__in=ids)
        self.people = {p.pk: p.name or ERASED for p in people}
        responses = ResponseRecord.objects.filter(clarification=clar, pk__in=ids)
        self.responses = {
            r.pk: (r.seq, self.people.get(uuid.UUID(str(r.responder)), ERASED))
            if r.responder
            else (r.seq, ERASED)
            for r in responses
        }

    def value(self, key: str, value: Any) -> str:
        """A detail value in words (see the module docstring)."""
        if value is None or value == "":
            return "—"
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, int) and US_MIN <= value < US_MAX:
            return iso(value)
        if isinstance(value, list | tuple):
            return ", ".join(self.value(key, v) for v in value) or "none"
        if isinstance(value, dict):
            # Sorted: PostgreSQL's jsonb does not keep the written order, SQLite does.
            pairs = sorted(value.items())
            return "; ".join(f"{label(k)}: {self.value(k, v)}" for k, v in pairs) or "—"
        found = _uuid(value)
        if found is None:  # text: a µs time written into it (an interval) shown as a date
            return RAW_US.sub(lambda m: iso(int(m.group())), str(value))
        if found in self.people:
            return self.people[found]
        if found in self.responses:
            seq, name = self.responses[found]
            return f"#{seq} ({name})"
        return ERASED if key in PERSON_KEYS else NOT_SHOWN


def trail_for_people(clar: Clarification, events: list[dict[str, Any]]) -> list[TrailEvent]:
    """The clarification's events (`clarification_detail`'s `events`) for the decide
    page, in their order."""
    names = TrailNames(clar, events)
    return [
        TrailEvent(
            at=iso(e["at"]),
            type=e["type"].replace("_", " "),
            details=[(label(k), names.value(k, v)) for k, v in (e.get("detail") or {}).items()],
        )
        for e in events
    ]
