"""Detection over an extracted document (PDF, DOCX, XLSX, HTML, Outlook .msg).

* The text of a PDF, DOCX or HTML page goes through the text rules, with the document's
  own creation date (its metadata) as the document date that anchors relative phrases
  ("from the start of next month" in a SOW created 2 March 2026 → 1 April 2026).
* A workbook's sheets go through the table rules, typed date cells as dates.
* An Outlook message goes through the `.eml` envelope rules.
* `rule_scanned` — a PDF without a text layer (and no OCR text) → `undated` on the
  document's fact, with no span: the question carries the document link, never text.
* The author and last editor the metadata names become AUTHORED_BY / LAST_MODIFIED_BY
  people when they are people of the tenant (by email, UPN or exact name).
"""

from datetime import date
from email.utils import parseaddr

from ingest.formats import Extracted, Metadata

from .document import date_fact
from .mail import detect_envelope
from .model import Candidate, Detection, Fact, Finding, PersonRef, label_with_year
from .tabular import Table, detect_rows
from .text import detect_text


def known_person(value: str, directory: dict[str, str]) -> PersonRef | None:
    """A metadata name ("Alice Author", "alice@acme.test", "Alice <alice@acme.test>",
    a UPN) resolved against the tenant's directory (lower-cased name/email/UPN →
    email); None when it names nobody of the tenant."""
    name, address = parseaddr(value)
    for candidate in (address, value.strip(), name):
        email = directory.get(candidate.strip().lower()) if candidate else None
        if email:
            return PersonRef(name=name or "", email=email)
    return None


def metadata_people(meta: Metadata, directory: dict[str, str]) -> list[tuple[str, str, PersonRef]]:
    refs = []
    for values, edge in (
        (meta.authors, "AUTHORED_BY"),
        (meta.last_modified_by, "LAST_MODIFIED_BY"),
    ):
        for value in values:
            ref = known_person(value, directory)
            if ref is not None:
                refs.append(("*", edge, ref))
    return refs


def rule_scanned(extracted: Extracted, file_date: date | None) -> Finding | None:
    """A PDF whose pages carry no text (a scan OCR did not read) → `undated`: the
    creation date its metadata states, else the file's date, is the weak best guess."""
    if not extracted.scanned:
        return None
    created = extracted.metadata.created.date() if extracted.metadata.created else None
    guesses = [(created, "PDF creation date"), (file_date, "file date")]
    candidates = [Candidate(f"{label_with_year(d)} ({why})", d) for d, why in guesses if d]
    unique = [
        c
        for i, c in enumerate(candidates)
        if c.valid_from not in {x.valid_from for x in candidates[:i]}
    ]
    return Finding(
        rule="scanned",
        node_key="term",
        kind="undated",
        candidates=unique or [Candidate("no text layer: the date is not readable")],
        detector_confidence=0.8,
        applied_candidate_confidence=0.3,
    )


def _scanned(extracted: Extracted, title: str, file_date: date | None) -> Detection:
    fact = Fact(
        key="term",
        labels=["DOCUMENT_TERM"],
        properties={"name": f"{title} — effective period", "document": title, "scanned": True},
    )
    finding = rule_scanned(extracted, file_date)
    facts = [fact, date_fact(title, None, None)]  # no text: the date is not read either
    return Detection(title=title, text="", facts=facts, findings=[finding] if finding else [])


def _workbook(extracted: Extracted, title: str, people_by_name: dict[str, str]) -> Detection:
    detection = Detection(title=title, text=extracted.text)
    sheets = extracted.sheets or []
    for sheet in sheets:
        table = Table(sheet.header, key_prefix=f"{sheet.name}/" if len(sheets) > 1 else "")
        rows = (
            (
                {h: v for h, v in zip(sheet.header, row, strict=False) if h},
                {h: s for h, s in zip(sheet.header, spans, strict=False) if h},
            )
            for row, spans in zip(sheet.rows, sheet.cell_spans, strict=True)
        )
        detect_rows(detection, table, rows, people_by_name=people_by_name)
    return detection


def detect_document(
    extracted: Extracted,
    *,
    filename: str,
    file_date: date | None,
    people_by_name: dict[str, str],
) -> Detection:
    title = extracted.title or filename
    if extracted.mail is not None:
        return detect_envelope(extracted.mail, filename=filename)
    if extracted.sheets is not None:
        detection = _workbook(extracted, title, people_by_name)
    elif extracted.scanned:
        detection = _scanned(extracted, title, file_date)
    else:
        created = extracted.metadata.created
        detection = detect_text(
            extracted.text,
            filename=filename,
            title=title,
            file_date=file_date,
            created=created.date() if created else None,
            people_by_name=people_by_name,
        )
    detection.people.extend(metadata_people(extracted.metadata, people_by_name))
    return detection
