"""What detection produces, before it is shaped into a Submission."""

from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .temporal import Timex


def label(d: date) -> str:
    """ "12 June" style label (the year is shown only when it is not obvious)."""
    return f"{d.day} {d.strftime('%B')}"


def label_with_year(d: date) -> str:
    """ "12 June 2026" style label."""
    return f"{d.day} {d.strftime('%B')} {d.year}"


def day_us(d: date) -> int:
    """Midnight UTC of a date, in µs since the epoch."""
    return int(datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp()) * 1_000_000


@dataclass
class Candidate:
    label: str
    valid_from: date | None = None
    valid_to: date | None = None
    span: tuple[int, int] | None = None


@dataclass
class Finding:
    """One ambiguity on one fact, found by the rule named in `rule`."""

    rule: str
    node_key: str
    kind: str
    candidates: list[Candidate]
    detector_confidence: float
    applied_candidate_confidence: float
    span: tuple[int, int] | None = None


@dataclass
class Fact:
    key: str
    labels: list[str]
    properties: dict[str, Any]
    valid_from: date | None = None
    valid_to: date | None = None
    confidence: float = 0.9
    span: tuple[int, int] | None = None


@dataclass
class PersonRef:
    """A person named by a document: resolved by email when we have one."""

    name: str = ""
    email: str = ""

    def key(self) -> str:
        return (self.email or self.name).lower()


@dataclass
class Detection:
    """Everything detected in one file."""

    title: str
    text: str
    facts: list[Fact] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    # (fact key, edge type, person)
    people: list[tuple[str, str, PersonRef]] = field(default_factory=list)
    acl: list[str] = field(default_factory=list)
    restriction: str | None = None
    # What relative dates in the text count from (the document's date, else the file's),
    # and the temporal expressions of `text` when detection has tagged them already.
    reference: date | None = None
    dates: "list[Timex] | None" = None
