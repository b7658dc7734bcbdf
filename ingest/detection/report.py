"""What detection reports for one file (CONTRACT §2.2, `telha detect --json`): its facts,
its ambiguities and every temporal expression of its stored text — the same detection
`telha ingest` applies, shaped for reading instead of submitting. Pure: no database."""

from datetime import date
from typing import Any

from .contract.forms import contract_days
from .model import Detection, Fact, Finding, day_us
from .temporal import Timex, tag


def _us(d: date | None) -> int | None:
    return day_us(d) if d is not None else None


def _excerpt(text: str, span: tuple[int, int] | None) -> str | None:
    return text[span[0] : span[1]] if span is not None else None


def detection_dates(detection: Detection, file_date: date | None) -> list[Timex]:
    """The temporal expressions of the detection's stored text: those the text rules
    tagged already, else tagged now against the document's date (else the file's) —
    with the days written in a contract's own forms ("the 8th day of May, 2014", "8t h
    day of May") in place of the shorter expressions the tagger read in them."""
    found = detection.dates
    if found is None:
        found = tag(detection.text, reference=detection.reference or file_date)
    return overlay(found, contract_days(detection.text))


def overlay(timexes: list[Timex], days: list[Timex]) -> list[Timex]:
    """`timexes` with each of `days` in place of the expressions it overlaps, when it is
    at least as long as each of them."""
    if not days:
        return timexes
    kept = list(timexes)
    for day in days:
        hit = [t for t in kept if t.start < day.end and day.start < t.end]
        if all(t.end - t.start <= day.end - day.start for t in hit):
            kept = [t for t in kept if t not in hit] + [day]
    return sorted(kept, key=lambda t: t.start)


def _fact(fact: Fact, text: str) -> dict[str, Any]:
    valid_from, valid_to = _us(fact.valid_from), _us(fact.valid_to)
    if valid_from is not None and valid_to is not None and valid_from >= valid_to:
        valid_to = None  # as the submission carries it
    return {
        "key": fact.key,
        "labels": fact.labels,
        "validFrom": valid_from,
        "validTo": valid_to,
        "properties": fact.properties,
        "excerpt": _excerpt(text, fact.span),
    }


def _ambiguity(finding: Finding, text: str) -> dict[str, Any]:
    return {
        "factKey": finding.node_key,
        "kind": finding.kind,
        "candidates": [
            {"validFrom": _us(c.valid_from), "validTo": _us(c.valid_to), "label": c.label[:200]}
            for c in finding.candidates
        ],
        "detectorConfidence": finding.detector_confidence,
        "appliedCandidateConfidence": finding.applied_candidate_confidence,
        "excerpt": _excerpt(text, finding.span),
    }


def detection_report(
    detection: Detection, *, file: str, external_id: str | None, file_date: date | None = None
) -> dict[str, Any]:
    """One file's result: CONTRACT §2.2's keys, times in µs, date offsets into the
    stored text (front matter included for Markdown)."""
    text = detection.text
    return {
        "file": file,
        "externalId": external_id,
        "title": detection.title,
        "error": None,
        "facts": [_fact(f, text) for f in detection.facts],
        "ambiguities": [_ambiguity(f, text) for f in detection.findings],
        "dates": [t.as_dict() for t in detection_dates(detection, file_date)],
    }


def refusal_report(*, file: str, external_id: str | None, error: str) -> dict[str, Any]:
    """A refused file's result: where it is and why it was refused, nothing else."""
    return {"file": file, "externalId": external_id, "error": error}
