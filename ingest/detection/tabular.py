"""Detection rules for tables (.csv): designated validity columns only.

* `read_cell` — ISO and English textual dates are unambiguous; `03/04/2026` has two
  readings (3 April vs 4 March) unless one part is above 12 or both are equal; anything
  else in a validity column is unreadable.
* `rule_ambiguous_cell` — two readings → `conflicting_dates` with both as candidates.
* `rule_unreadable_cell` — an unreadable cell → `low_confidence_extraction`.
At most `MAX_FINDINGS_PER_FILE` ambiguities per file; the `owner` column names the owner.
"""

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime

from ingest.formats.base import Cell, cell_text

from .cells import Span, csv_records
from .model import Candidate, Detection, Fact, Finding, PersonRef, label_with_year
from .temporal import written_day

DEFAULT_START_COLUMNS = ("valid_from", "effective_date", "effective_from", "start_date", "starts")
DEFAULT_END_COLUMNS = ("valid_to", "effective_to", "end_date", "expiry_date", "expires", "ends")
ID_COLUMNS = ("id", "policy_id", "ref", "reference")
NAME_COLUMNS = ("name", "title", "policy", "description")
OWNER_COLUMNS = ("owner", "owner_email")
MAX_FINDINGS_PER_FILE = 5
SLASHED = re.compile(r"^\s*(\d{1,2})[/.-](\d{1,2})[/.-]((?:19|20)\d\d)\s*$")


@dataclass(frozen=True)
class CellReading:
    """What a validity cell says: one date, two readings, or nothing readable."""

    dates: tuple[date, ...]
    blank: bool = False

    @property
    def unambiguous(self) -> date | None:
        return self.dates[0] if len(self.dates) == 1 else None


def read_cell(value: str) -> CellReading:
    """Read one validity cell: blank, one date (ISO, English text, or a slashed/dotted/
    dashed day-month pair that only one way makes a calendar date), two readings, or
    nothing readable (also 31/02/2026 and two-digit years)."""
    value = (value or "").strip()
    if not value:
        return CellReading((), blank=True)
    parsed = written_day(value)
    if parsed is not None:
        return CellReading((parsed,))
    m = SLASHED.match(value)
    if m is None:
        return CellReading(())
    a, b, year = int(m.group(1)), int(m.group(2)), int(m.group(3))
    readings: list[date] = []
    for day, month in ((a, b), (b, a)):
        try:
            d = date(year, month, day)
        except ValueError:
            continue
        if d not in readings:
            readings.append(d)
    return CellReading(tuple(readings))


def _column(header: Sequence[str], options: tuple[str, ...]) -> str | None:
    """The header cell that is the first of `options` (case and padding ignored)."""
    lowered = {h.strip().lower(): h for h in header}
    return next((lowered[o] for o in options if o in lowered), None)


def rule_ambiguous_cell(
    key: str, column: str, raw: str, reading: CellReading, is_end: bool
) -> Finding | None:
    """A cell with two readings (03/04/2026: 3 April vs 4 March) → `conflicting_dates`,
    the day/month reading first; an end column's readings become `validTo`."""
    if len(reading.dates) < 2:
        return None
    candidates = [
        Candidate(
            f"{label_with_year(d)} (reading {raw.strip()} as {order})",
            None if is_end else d,
            d if is_end else None,
        )
        for d, order in zip(reading.dates, ("day/month", "month/day"), strict=False)
    ]
    return Finding(
        rule="ambiguous_cell",
        node_key=key,
        kind="conflicting_dates",
        candidates=candidates,
        detector_confidence=0.9,
        applied_candidate_confidence=0.5,
    )


def rule_unreadable_cell(key: str, column: str, raw: str, reading: CellReading) -> Finding | None:
    """A non-blank validity cell that is no date ("sometime in Q3") →
    `low_confidence_extraction`; the only candidate says what the cell holds."""
    if reading.dates or reading.blank:
        return None
    return Finding(
        rule="unreadable_cell",
        node_key=key,
        kind="low_confidence_extraction",
        candidates=[Candidate(f"unreadable {column}: {raw.strip()[:60]!r}")],
        detector_confidence=0.8,
        applied_candidate_confidence=0.2,
    )


def read_value(value: Cell) -> CellReading:
    """A cell as the file types it: a date cell (XLSX) is that date, never ambiguous; a
    number is no date; text is read by `read_cell`."""
    if isinstance(value, datetime):
        return CellReading((value.date(),))
    if isinstance(value, date):
        return CellReading((value,))
    if value is None:
        return CellReading((), blank=True)
    if isinstance(value, int | float):
        return CellReading(())
    return read_cell(str(value))


def detect_csv(
    text: str,
    *,
    filename: str,
    start_columns: tuple[str, ...] = DEFAULT_START_COLUMNS,
    end_columns: tuple[str, ...] = DEFAULT_END_COLUMNS,
    label: str = "POLICY",
    people_by_name: dict[str, str] | None = None,
) -> Detection:
    """One fact per row; validity from the designated columns; findings capped."""
    header, rows = csv_records(text)
    detection = Detection(title=filename, text=text)
    table = Table(header, start_columns, end_columns)
    detect_rows(detection, table, rows, label=label, people_by_name=people_by_name)
    return detection


@dataclass
class Table:
    """A table's header and which of its columns mean what."""

    header: Sequence[str]
    start_columns: tuple[str, ...] = DEFAULT_START_COLUMNS
    end_columns: tuple[str, ...] = DEFAULT_END_COLUMNS
    key_prefix: str = ""

    def column(self, options: tuple[str, ...]) -> str | None:
        return _column(self.header, options)


def _bound_candidates(fact: Fact, finding: Finding) -> None:
    """Give an ambiguous start's candidates the row's end (and the reverse)."""
    for cand in finding.candidates:
        if cand.valid_from is None and cand.valid_to is not None:
            cand.valid_from = (
                fact.valid_from if fact.valid_from and fact.valid_from < cand.valid_to else None
            )
        elif (
            cand.valid_from is not None
            and cand.valid_to is None
            and fact.valid_to
            and fact.valid_to > cand.valid_from
        ):
            cand.valid_to = fact.valid_to


def _owner(raw: str, people_by_name: dict[str, str] | None) -> PersonRef:
    owner = raw.strip()
    if "@" in owner:
        return PersonRef(email=owner.lower())
    return PersonRef(name=owner, email=(people_by_name or {}).get(owner.lower(), ""))


def _row_span(spans: Mapping[str, Span]) -> Span | None:
    if not spans:
        return None
    return min(s for s, _ in spans.values()), max(e for _, e in spans.values())


def detect_rows(
    detection: Detection,
    table: Table,
    rows: Iterable[tuple[Mapping[str, Cell], Mapping[str, Span]]],
    *,
    label: str = "POLICY",
    people_by_name: dict[str, str] | None = None,
) -> None:
    """One fact per row into `detection`; validity from the designated columns. Each row
    comes with its cells' spans in the stored text: a finding's is its cell's, a fact's
    runs over its row."""
    start_col, end_col = table.column(table.start_columns), table.column(table.end_columns)
    id_col, name_col = table.column(ID_COLUMNS), table.column(NAME_COLUMNS)
    owner_col = table.column(OWNER_COLUMNS)
    for number, (row, spans) in enumerate(rows, start=1):
        row_id = cell_text(row.get(id_col)).strip() if id_col else ""
        key = f"{table.key_prefix}row-{row_id or number}"
        fact = Fact(
            key=key,
            labels=[label],
            properties={k: cell_text(v).strip() for k, v in row.items() if k},
            span=_row_span(spans),
        )
        if name_col and cell_text(row.get(name_col)).strip():
            fact.properties["name"] = cell_text(row.get(name_col)).strip()
        finding: Finding | None = None
        for column, is_end in ((start_col, False), (end_col, True)):
            if column is None:
                continue
            raw = cell_text(row.get(column))
            reading = read_value(row.get(column))
            if reading.unambiguous is not None:
                if is_end:
                    fact.valid_to = reading.unambiguous
                else:
                    fact.valid_from = reading.unambiguous
            elif finding is None and len(detection.findings) < MAX_FINDINGS_PER_FILE:
                finding = rule_ambiguous_cell(
                    key, column, raw, reading, is_end
                ) or rule_unreadable_cell(key, column, raw, reading)
                if finding is not None:
                    finding.span = spans.get(column)
        if fact.valid_from and fact.valid_to and fact.valid_from >= fact.valid_to:
            fact.valid_to = None
        if finding is not None:
            _bound_candidates(fact, finding)
            detection.findings.append(finding)
        detection.facts.append(fact)
        if owner_col and cell_text(row.get(owner_col)).strip():
            detection.people.append(
                (key, "OWNED_BY", _owner(cell_text(row.get(owner_col)), people_by_name))
            )
