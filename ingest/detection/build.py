"""Turn a file into a Submission (CONTRACT §3.1): detect, then shape."""

import csv
import logging
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from ingest.formats import LIMITS, TEXT_SUFFIXES, Refused, Unreadable, extract, precheck

from .extracted import detect_document
from .mail import detect_email
from .model import Detection, day_us
from .tabular import detect_csv
from .text import detect_text

log = logging.getLogger(__name__)
MAX_FILE_BYTES = LIMITS.file_bytes
UnsupportedFile = (
    Refused  # every refusal of a file (unsupported, mismatching, unreadable, too large)
)


@dataclass(frozen=True)
class FileInput:
    """One file to detect: `name` picks its reader (by suffix) and is the title when the
    file states none; `external_id` is its source's identity (default: `name`)."""

    name: str
    data: bytes
    modified: datetime | None = None
    external_id: str | None = None

    @property
    def identity(self) -> str:
        """The source's externalId."""
        return self.external_id or self.name


def detect(file: FileInput, *, people_by_name: dict[str, str] | None = None) -> Detection:
    """Read and detect one file. Raises `Refused` (its reason as the message) for a file
    that is not read: unsupported, not what its name says, encrypted, corrupt, too large.
    Nothing else escapes: a rule failing on a file it was not made for refuses that file
    (`corrupt: …`, logged with its traceback), so one file never stops a folder's run."""
    suffix = precheck(file.data, file.name)
    try:
        return _detected(file, suffix, people_by_name)
    except Refused:
        raise
    except csv.Error as exc:
        raise Unreadable(f"corrupt: the CSV cannot be read ({exc})") from exc
    except Exception as exc:
        log.exception("detection failed on %s; refused as corrupt", file.name)
        raise Unreadable(f"corrupt: the file cannot be read ({type(exc).__name__})") from exc


def _detected(file: FileInput, suffix: str, people_by_name: dict[str, str] | None) -> Detection:
    file_date = file.modified.astimezone(UTC).date() if file.modified else None
    if suffix == ".eml":
        return detect_email(file.data, filename=file.name)
    if suffix in TEXT_SUFFIXES:
        # Every line break a "\n" (a lone "\r" too: old Mac files; CSV cannot have it
        # inside an unquoted field), so offsets index the text as stored.
        text = file.data.decode("utf-8", errors="replace").replace("\r\n", "\n")
        text = text.replace("\r", "\n")
        if suffix == ".csv":
            return detect_csv(text, filename=file.name, people_by_name=people_by_name)
        return detect_text(
            text, filename=file.name, file_date=file_date, people_by_name=people_by_name
        )
    extracted = extract(file.data, file.name)
    return detect_document(
        extracted, filename=file.name, file_date=file_date, people_by_name=people_by_name or {}
    )


def _us(d: date | None) -> int | None:
    return day_us(d) if d is not None else None


class _Shape:
    """The Submission's arrays as they are built: spans (each once), nodes, edges."""

    def __init__(self) -> None:
        self.spans: list[dict[str, int]] = []
        self.nodes: list[dict[str, Any]] = []
        self.edges: list[dict[str, Any]] = []
        self.ref_of: dict[str, int] = {}  # fact key -> node ref
        self.person_ref: dict[str, int] = {}  # person key -> node ref

    def span_ref(self, span: tuple[int, int] | None) -> int | None:
        if span is None:
            return None
        item = {"start": span[0], "end": span[1]}
        if item not in self.spans:
            self.spans.append(item)
        return self.spans.index(item)

    def fact_add(self, fact: Any, span: tuple[int, int] | None) -> None:
        vf, vt = _us(fact.valid_from), _us(fact.valid_to)
        if vf is not None and vt is not None and vf >= vt:
            vt = None
        self.ref_of[fact.key] = len(self.nodes)
        self.nodes.append(
            {
                "ref": len(self.nodes),
                "key": fact.key,
                "labels": fact.labels,
                "properties": fact.properties,
                "validFrom": vf,
                "validTo": vt,
                "confidence": fact.confidence,
                "spanRef": self.span_ref(span),
            }
        )

    def person_edges_add(self, targets: list[str], edge_type: str, person: Any) -> None:
        key = person.key()
        if key not in self.person_ref:
            props = {"name": person.name} if person.name else {}
            if person.email:
                props["email"] = person.email
            self.person_ref[key] = len(self.nodes)
            self.nodes.append(
                {
                    "ref": len(self.nodes),
                    "key": f"person:{key}"[:500],
                    "labels": ["PERSON"],
                    "properties": props,
                }
            )
        for target in targets:
            if target not in self.ref_of:
                continue
            edge = {"type": edge_type, "from": self.ref_of[target], "to": self.person_ref[key]}
            if edge not in self.edges:
                self.edges.append(edge)

    def ambiguity(self, finding: Any) -> dict[str, Any]:
        return {
            "nodeRef": self.ref_of[finding.node_key],
            "kind": finding.kind,
            "candidates": [
                {
                    "validFrom": _us(c.valid_from),
                    "validTo": _us(c.valid_to),
                    "label": c.label[:200],
                    "spanRef": self.span_ref(c.span),
                }
                for c in finding.candidates
            ],
            "detectorConfidence": finding.detector_confidence,
            "appliedCandidateConfidence": finding.applied_candidate_confidence,
        }


def to_submission(
    detection: Detection,
    *,
    system: str,
    external_id: str,
    clarify: bool,
    acl: list[str] | None = None,
    restriction: str | None = None,
    title: str | None = None,
) -> dict[str, Any]:
    """The Submission for a detection. Ambiguities are emitted only when the capability
    flag (`options.clarify`) is on; the best guess is then applied by the core."""
    shape = _Shape()
    findings = {f.node_key: f for f in detection.findings} if clarify else {}
    for fact in detection.facts:
        finding = findings.get(fact.key)
        shape.fact_add(fact, finding.span if finding and finding.span else fact.span)
    for fact_key, edge_type, person in detection.people:
        if person.key():
            targets = [f.key for f in detection.facts] if fact_key == "*" else [fact_key]
            shape.person_edges_add(targets, edge_type, person)
    ambiguities = [shape.ambiguity(f) for f in findings.values() if f.node_key in shape.ref_of]
    return {
        "source": {
            "system": system,
            "externalId": external_id[:500],
            "title": (title or detection.title)[:500],
            "uri": "",
            "text": detection.text,
            "acl": acl if acl is not None else detection.acl,
            "restriction": restriction or detection.restriction,
        },
        "spans": shape.spans,
        "nodes": shape.nodes,
        "edges": shape.edges,
        "ambiguities": ambiguities,
    }
