"""The document's own dates as facts (CONTRACT §2.2): `date` (DOCUMENT_DATE), the day it
was made or signed, and `term` (DOCUMENT_TERM), from the day it takes effect to the end
of its initial term (exclusive), with its renewal in `properties.renewal`.

A fact that cannot be pinned carries the best guess and at most one question, asked on
the fact the unknown is read into: a blank or two-way date of making on `date`, an
event-tied or blank start on `term`. A stated, consistent date opens nothing, and a
document that carries its date is never `undated`. The precedence of the readings is
the contract reader's (`contract/reading.py`); what the general text rules find
(signature and countersignature dates, relative phrases, yearless dates) fills in where
it is silent (`text.py`)."""

from dataclasses import dataclass, field, replace
from datetime import date

from .contract.forms import Written
from .contract.reading import ContractReading
from .contract.term import end_day
from .model import Candidate, Fact, Finding, label_with_year

# What each question's detector and applied confidence are: a blank or a two-way date
# is read for certain to be uncertain; an event-tied start is a firm question with a
# fair guess (the document's own date).
BLANK = (0.85, 0.3)
TWO_WAY = (0.9, 0.5)
TIED = (0.8, 0.5)


@dataclass
class DocumentDates:
    """What the document states about its dates, ready to become facts: each value
    with the span it was read from, and the questions the reader could not settle."""

    made: date | None = None
    made_span: tuple[int, int] | None = None
    start: date | None = None
    start_span: tuple[int, int] | None = None
    end: date | None = None
    renewal: dict[str, object] | None = None
    clause: tuple[int, int] | None = None
    findings: list[Finding] = field(default_factory=list)
    stated_made: bool = False  # a date the preamble, title or a definition states
    stated_start: bool = False  # an effective date the preamble or a definition states
    known_start: bool = False  # any start the contract gives (stated or tied)


def _shift(span: tuple[int, int], offset: int) -> tuple[int, int]:
    return span[0] + offset, span[1] + offset


def _blank_candidates(w: Written, signatures: list[Written]) -> list[Candidate]:
    """For a date left blank ("June __, 2004"): the signatures' dates it allows, then
    the first day of what it does state (the month, else the year)."""
    candidates = [
        Candidate(f"{label_with_year(s.day)} (signature)", s.day)
        for s in signatures
        if s.day and (w.year in (None, s.day.year)) and (w.month in (None, s.day.month))
    ]
    if w.year and w.month:
        first = date(w.year, w.month, w.dom or 1) if w.dom else date(w.year, w.month, 1)
        what = "as written" if w.dom else "the day is blank"
        candidates.append(Candidate(f"{label_with_year(first)} ({what})", first))
    elif w.year:
        candidates.append(
            Candidate(f"1 January {w.year} (only the year is written)", date(w.year, 1, 1))
        )
    unique = {c.valid_from: c for c in reversed(candidates)}
    ordered = [c for c in candidates if unique.get(c.valid_from) is c]
    return ordered or [Candidate("the date is left blank")]


def _question(fact: str, rule: str, w: Written, signatures: list[Written], offset: int) -> Finding:
    """The one question about a date the document writes but does not pin."""
    span = _shift((w.start, w.end), offset)
    if w.readings:
        labels = ("month first", "day first")
        candidates = [
            Candidate(f"{label_with_year(d)} ({why})", d, None, span)
            for d, why in zip(w.readings, labels, strict=False)
        ]
        detector, applied = TWO_WAY
        return Finding(
            f"{rule}:two_way", fact, "conflicting_dates", candidates, detector, applied, span
        )
    candidates = [
        Candidate(c.label, c.valid_from, None, span) for c in _blank_candidates(w, signatures)
    ]
    detector, applied = BLANK
    return Finding(
        f"{rule}:blank", fact, "low_confidence_extraction", candidates, detector, applied, span
    )


def _tied_question(reading: ContractReading, made: date | None, offset: int) -> Finding:
    """A start tied to an event the document does not date ("the Closing Date"): the
    document's own date and its signatures' as candidates, the first the guess."""
    assert reading.anchor is not None
    span = _shift((reading.anchor.start, reading.anchor.end), offset)
    candidates = []
    event = reading.event_day.day if reading.event_day is not None else None
    if event is not None:
        candidates.append(
            Candidate(f"{label_with_year(event)} (the event's date as written)", event, None, span)
        )
    if made is not None and made != event:
        candidates.append(
            Candidate(f"{label_with_year(made)} (the document's date)", made, None, span)
        )
    for s in reading.signatures:
        if s.day and all(c.valid_from != s.day for c in candidates):
            candidates.append(Candidate(f"{label_with_year(s.day)} (signature)", s.day, None, span))
    detector, applied = TIED
    return Finding(
        "contract:tied_start",
        "term",
        "relative_date",
        candidates or [Candidate("the event is not dated in the document")],
        detector,
        applied,
        span,
    )


def _latest(signatures: list[Written]) -> date | None:
    days = [s.day for s in signatures if s.day]
    return max(days) if days else None


def document_dates(reading: ContractReading, offset: int) -> DocumentDates:
    """The contract reader's findings as values and questions (offsets into the whole
    text: `offset` is where the reader's text starts)."""
    out = DocumentDates(renewal=None, clause=reading.clause)
    if reading.made is not None:
        w = reading.made.written
        out.made_span = _shift((w.start, w.end), offset)
        out.stated_made = reading.made.why != "signature"
        if w.day:
            out.made = w.day
        else:
            out.findings.append(_question("date", "contract:date", w, reading.signatures, offset))
            out.made = out.findings[-1].candidates[0].valid_from
    if reading.start is not None:
        w = reading.start.written
        out.start_span = _shift((w.start, w.end), offset)
        out.stated_start = reading.start.why in ("effective", "defined")
        out.known_start = True
        same = reading.made is not None and reading.made.written.start == w.start
        if w.day:
            out.start = w.day
        elif same:
            # One unknown, one question: asked on the term, whose start it is (the date
            # fact carries the same guess).
            out.findings = [replace(f, node_key="term") for f in out.findings]
            out.start = out.made
        else:
            out.findings.append(_question("term", "contract:start", w, reading.signatures, offset))
            out.start = out.findings[-1].candidates[0].valid_from
    elif reading.anchor is not None:
        out.known_start = True
        out.start_span = _shift((reading.anchor.start, reading.anchor.end), offset)
        if reading.anchor.kind == "signature":
            out.start = _latest(reading.signatures) or out.made
        elif reading.anchor.kind == "document":
            out.start = out.made
        else:
            out.findings.append(_tied_question(reading, out.made, offset))
            out.start = out.findings[-1].candidates[0].valid_from
        if out.start is None:
            out.known_start = False
    out.end = end_day(reading.end, out.start or out.made, out.made)
    if reading.renewal is not None and reading.renewal.every is not None:
        out.renewal = reading.renewal.as_property()
    return out


def term_fact(
    dd: DocumentDates, title: str, start: date | None, span: tuple[int, int] | None
) -> Fact:
    """The `term` fact: from `start` to the exclusive end of the initial term."""
    properties: dict[str, object] = {"name": f"{title} — effective period", "document": title}
    if dd.renewal is not None:
        properties["renewal"] = dd.renewal
    end = dd.end if start is None or dd.end is None or dd.end > start else None
    return Fact(
        key="term",
        labels=["DOCUMENT_TERM"],
        properties=properties,
        valid_from=start,
        valid_to=end,
        confidence=0.9,
        span=span,
    )


def date_fact(title: str, made: date | None, span: tuple[int, int] | None) -> Fact:
    """The `date` fact: the day the document was made or signed."""
    return Fact(
        key="date",
        labels=["DOCUMENT_DATE"],
        properties={"name": f"{title} — document date", "document": title},
        valid_from=made,
        confidence=0.9,
        span=span,
    )
