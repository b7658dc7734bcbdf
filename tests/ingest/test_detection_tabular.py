"""Table detection rules (spec §14 v0.8 PR-061, tabular addendum): designated validity
columns only; 03/04/2026 has two readings; unreadable cells are weak extractions; at most
5 ambiguities per file; the owner column names the owner."""

from datetime import UTC, date, datetime

import pytest

from ingest.api.serializers import SubmissionInSerializer
from ingest.detection.build import FileInput, detect, to_submission
from ingest.detection.model import day_us
from ingest.detection.tabular import (
    DEFAULT_END_COLUMNS,
    DEFAULT_START_COLUMNS,
    MAX_FINDINGS_PER_FILE,
    detect_csv,
    read_cell,
    rule_ambiguous_cell,
    rule_unreadable_cell,
)
from ingest.services import submission_plan

CELLS = [
    # (id, cell, readings, blank)
    ("iso", "2026-04-03", (date(2026, 4, 3),), False),
    ("textual", "3 April 2026", (date(2026, 4, 3),), False),
    ("textual-us", "April 3, 2026", (date(2026, 4, 3),), False),
    ("padded", "  2026-04-03 ", (date(2026, 4, 3),), False),
    ("slash-two-readings", "03/04/2026", (date(2026, 4, 3), date(2026, 3, 4)), False),
    ("dash-two-readings", "03-04-2026", (date(2026, 4, 3), date(2026, 3, 4)), False),
    ("dot-two-readings", "03.04.2026", (date(2026, 4, 3), date(2026, 3, 4)), False),
    ("no-zero-padding", "3/4/2026", (date(2026, 4, 3), date(2026, 3, 4)), False),
    ("day-above-12", "13/04/2026", (date(2026, 4, 13),), False),
    ("month-first-above-12", "04/13/2026", (date(2026, 4, 13),), False),
    ("same-both-ways", "04/04/2026", (date(2026, 4, 4),), False),
    ("impossible", "31/02/2026", (), False),
    ("both-above-12", "13/13/2026", (), False),
    ("day-zero", "00/04/2026", (), False),
    ("two-digit-year", "3/4/26", (), False),
    ("words", "sometime in Q3", (), False),
    ("blank", "", (), True),
    ("spaces", "   ", (), True),
]


@pytest.mark.parametrize(
    ("cell", "readings", "blank"), [c[1:] for c in CELLS], ids=[c[0] for c in CELLS]
)
def test_read_cell(cell, readings, blank):
    reading = read_cell(cell)
    assert reading.dates == readings
    assert reading.blank is blank
    assert reading.unambiguous == (readings[0] if len(readings) == 1 else None)


def test_ambiguous_cell_rule():
    finding = rule_ambiguous_cell(
        "row-1", "valid_from", "03/04/2026", read_cell("03/04/2026"), False
    )
    assert (finding.rule, finding.node_key, finding.kind) == (
        "ambiguous_cell",
        "row-1",
        "conflicting_dates",
    )
    assert [(c.label, c.valid_from, c.valid_to) for c in finding.candidates] == [
        ("3 April 2026 (reading 03/04/2026 as day/month)", date(2026, 4, 3), None),
        ("4 March 2026 (reading 03/04/2026 as month/day)", date(2026, 3, 4), None),
    ]
    assert (finding.detector_confidence, finding.applied_candidate_confidence) == (0.9, 0.5)
    end = rule_ambiguous_cell("row-1", "valid_to", "03/04/2026", read_cell("03/04/2026"), True)
    assert [(c.valid_from, c.valid_to) for c in end.candidates] == [
        (None, date(2026, 4, 3)),
        (None, date(2026, 3, 4)),
    ]
    for unambiguous in ("13/04/2026", "04/04/2026", "2026-04-03", "", "junk"):
        assert rule_ambiguous_cell("r", "c", unambiguous, read_cell(unambiguous), False) is None


def test_unreadable_cell_rule():
    finding = rule_unreadable_cell(
        "row-4", "valid_from", "sometime in Q3", read_cell("sometime in Q3")
    )
    assert (finding.rule, finding.kind) == ("unreadable_cell", "low_confidence_extraction")
    assert [(c.label, c.valid_from, c.valid_to) for c in finding.candidates] == [
        ("unreadable valid_from: 'sometime in Q3'", None, None)
    ]
    assert (finding.detector_confidence, finding.applied_candidate_confidence) == (0.8, 0.2)
    for fine in ("", "  ", "2026-01-01", "03/04/2026"):
        assert rule_unreadable_cell("r", "c", fine, read_cell(fine)) is None


def csv_of(*rows: str, header: str = "id,name,owner,valid_from,valid_to") -> str:
    return "\n".join([header, *rows]) + "\n"


ROWS = [
    # (id, row, finding (kind, [(validFrom, validTo)]) or None, fact (validFrom, validTo))
    ("unambiguous-iso", "1,A,,2026-01-01,2026-12-31", None, (date(2026, 1, 1), date(2026, 12, 31))),
    ("unambiguous-slash", "1,A,,13/04/2026,", None, (date(2026, 4, 13), None)),
    ("same-both-ways", "1,A,,04/04/2026,", None, (date(2026, 4, 4), None)),
    (
        "ambiguous-start",
        "1,A,,03/04/2026,",
        ("conflicting_dates", [(date(2026, 4, 3), None), (date(2026, 3, 4), None)]),
        (None, None),
    ),
    (
        "ambiguous-start-known-end",
        "1,A,,03/04/2026,2026-12-31",
        (
            "conflicting_dates",
            [(date(2026, 4, 3), date(2026, 12, 31)), (date(2026, 3, 4), date(2026, 12, 31))],
        ),
        (None, date(2026, 12, 31)),
    ),
    (
        "ambiguous-end-known-start",
        "1,A,,2026-01-01,03/04/2026",
        (
            "conflicting_dates",
            [(date(2026, 1, 1), date(2026, 4, 3)), (date(2026, 1, 1), date(2026, 3, 4))],
        ),
        (date(2026, 1, 1), None),
    ),
    (
        "ambiguous-end-before-start-drops-the-start",
        "1,A,,2026-03-20,03/04/2026",
        (
            "conflicting_dates",
            [(date(2026, 3, 20), date(2026, 4, 3)), (None, date(2026, 3, 4))],
        ),
        (date(2026, 3, 20), None),
    ),
    (
        "unparseable",
        "1,A,,sometime in Q3,",
        ("low_confidence_extraction", [(None, None)]),
        (None, None),
    ),
    ("impossible", "1,A,,31/02/2026,", ("low_confidence_extraction", [(None, None)]), (None, None)),
    ("blank", "1,A,,,", None, (None, None)),
    ("end-before-start-is-dropped", "1,A,,2026-12-31,2026-01-01", None, (date(2026, 12, 31), None)),
    (
        "only-the-first-cell-of-a-row",
        "1,A,,03/04/2026,junk",
        ("conflicting_dates", [(date(2026, 4, 3), None), (date(2026, 3, 4), None)]),
        (None, None),
    ),
]


@pytest.mark.parametrize(
    ("row", "finding", "fact"), [c[1:] for c in ROWS], ids=[c[0] for c in ROWS]
)
def test_validity_cells(row, finding, fact):
    detection = detect_csv(csv_of(row), filename="p.csv")
    [only] = detection.facts
    assert (only.key, only.labels, only.properties["name"]) == ("row-1", ["POLICY"], "A")
    assert (only.valid_from, only.valid_to) == fact
    if finding is None:
        assert detection.findings == []
    else:
        [got] = detection.findings
        assert got.node_key == "row-1"
        assert (got.kind, [(c.valid_from, c.valid_to) for c in got.candidates]) == finding


@pytest.mark.parametrize(
    "header",
    [
        "id,name,valid_from,valid_to",
        "ID,Name,Valid_From,Valid_To",
        "id,title,effective_date,expiry_date",
        "policy_id,policy,effective_from,effective_to",
        "ref,description,start_date,end_date",
        " id , name , starts , ends ",
    ],
    ids=["default", "case", "effective-expiry", "effective-from-to", "start-end", "padded"],
)
def test_designated_columns(header):
    detection = detect_csv(
        csv_of("P1,Policy,03/04/2026,2026-12-31", header=header), filename="p.csv"
    )
    [fact] = detection.facts
    assert fact.key == "row-P1" and fact.properties["name"] == "Policy"
    assert fact.valid_to == date(2026, 12, 31)
    [finding] = detection.findings
    assert finding.kind == "conflicting_dates"


def test_other_columns_are_not_validity_columns():
    text = csv_of("1,A,03/04/2026,junk", header="id,name,created,notes")
    detection = detect_csv(text, filename="p.csv")
    assert detection.findings == []
    assert [(f.valid_from, f.valid_to) for f in detection.facts] == [(None, None)]


def test_validity_columns_are_configurable():
    text = csv_of("1,A,03/04/2026,2027-01-01", header="id,name,in_force,lapses")
    assert detect_csv(text, filename="p.csv").findings == []
    detection = detect_csv(
        text, filename="p.csv", start_columns=("in_force",), end_columns=("lapses",)
    )
    [finding] = detection.findings
    assert finding.kind == "conflicting_dates"
    assert detection.facts[0].valid_to == date(2027, 1, 1)
    assert "valid_from" in DEFAULT_START_COLUMNS and "valid_to" in DEFAULT_END_COLUMNS


def test_rows_without_an_id_column_are_numbered():
    text = csv_of("A,2026-01-01", "B,2026-02-01", header="name,valid_from")
    assert [f.key for f in detect_csv(text, filename="p.csv").facts] == ["row-1", "row-2"]


def test_at_most_five_ambiguities_per_file():
    rows = [f"{i},Policy {i},,0{i}/0{i + 1}/2026," for i in range(1, 9)]  # 8 ambiguous rows
    detection = detect_csv(csv_of(*rows), filename="p.csv")
    assert MAX_FINDINGS_PER_FILE == 5
    assert len(detection.facts) == 8
    assert len(detection.findings) == 5
    assert [f.node_key for f in detection.findings] == [f"row-{i}" for i in range(1, 6)]
    data = to_submission(detection, system="files", external_id="p.csv", clarify=True)
    assert len(data["ambiguities"]) == 5
    assert len([n for n in data["nodes"] if n["labels"] == ["POLICY"]]) == 8


def test_the_cap_counts_every_kind():
    rows = [f"{i},P{i},,junk {i}," for i in range(1, 4)] + [
        f"{i},P{i},,03/04/2026," for i in range(4, 9)
    ]
    detection = detect_csv(csv_of(*rows), filename="p.csv")
    kinds = [f.kind for f in detection.findings]
    assert kinds == ["low_confidence_extraction"] * 3 + ["conflicting_dates"] * 2


def test_owner_column_names_the_owner():
    text = csv_of(
        "1,A,Fiona@Acme.test,2026-01-01,",
        "2,B,Olga Owner,2026-01-01,",
        "3,C,Someone Else,2026-01-01,",
        "4,D,,2026-01-01,",
    )
    detection = detect_csv(text, filename="p.csv", people_by_name={"olga owner": "olga@acme.test"})
    assert [(fact, edge, p.name, p.email) for fact, edge, p in detection.people] == [
        ("row-1", "OWNED_BY", "", "fiona@acme.test"),
        ("row-2", "OWNED_BY", "Olga Owner", "olga@acme.test"),
        ("row-3", "OWNED_BY", "Someone Else", ""),
    ]
    data = to_submission(detection, system="files", external_id="p.csv", clarify=True)
    by_ref = {n["ref"]: n for n in data["nodes"]}
    owned = sorted(
        (by_ref[e["from"]]["key"], by_ref[e["to"]]["properties"].get("email", ""))
        for e in data["edges"]
    )
    assert [e["type"] for e in data["edges"]] == ["OWNED_BY"] * 3
    assert owned == [("row-1", "fiona@acme.test"), ("row-2", "olga@acme.test"), ("row-3", "")]


def test_header_only_and_empty_files():
    assert detect_csv("id,name,valid_from\n", filename="p.csv").facts == []
    assert detect_csv("", filename="p.csv").facts == []


# --- to_submission ------------------------------------------------------------------------

CSV_FIXTURES = {
    "demo-like": csv_of(
        "POL-001,Travel,fiona@acme.test,2026-01-01,2026-12-31",
        "POL-002,Retention,ahmed@acme.test,03/04/2026,",
        "POL-003,Remote,fiona@acme.test,1 February 2026,31 January 2027",
        "POL-004,Procurement,fiona@acme.test,sometime in Q3,",
    ),
    "ambiguous-end": csv_of("1,A,,2026-03-20,03/04/2026"),
    "eight-ambiguous": csv_of(*[f"{i},P{i},,0{i}/0{i + 1}/2026," for i in range(1, 9)]),
    "blank-cells": csv_of("1,A,,,", "2,B,,,"),
    "no-validity-columns": "id,name\n1,A\n",
}


@pytest.mark.parametrize("name", list(CSV_FIXTURES))
@pytest.mark.parametrize("clarify", [True, False], ids=["clarify", "no-clarify"])
def test_to_submission_is_a_valid_submission(name, clarify):
    detection = detect(
        FileInput(
            name=f"{name}.csv",
            data=CSV_FIXTURES[name].encode(),
            modified=datetime(2026, 9, 1, tzinfo=UTC),
        )
    )
    data = to_submission(detection, system="files", external_id=f"{name}.csv", clarify=clarify)
    shape = SubmissionInSerializer(data=data)
    assert shape.is_valid(), shape.errors
    plan = submission_plan(shape.validated_data)
    if clarify:
        assert len(plan.ambiguities) == len(detection.findings)
    else:
        assert data["ambiguities"] == [] and plan.ambiguities == {}


def test_to_submission_of_an_ambiguous_cell():
    detection = detect(FileInput(name="p.csv", data=CSV_FIXTURES["demo-like"].encode()))
    data = to_submission(detection, system="files", external_id="p.csv", clarify=True)
    by_key = {n["key"]: n for n in data["nodes"]}
    assert by_key["row-POL-001"]["validFrom"] == day_us(date(2026, 1, 1))
    assert by_key["row-POL-001"]["validTo"] == day_us(date(2026, 12, 31))
    assert data["source"]["text"] == CSV_FIXTURES["demo-like"]
    kinds = {data["nodes"][a["nodeRef"]]["key"]: a for a in data["ambiguities"]}
    assert set(kinds) == {"row-POL-002", "row-POL-004"}
    pol2 = kinds["row-POL-002"]
    assert pol2["kind"] == "conflicting_dates"
    assert [(c["label"], c["validFrom"]) for c in pol2["candidates"]] == [
        ("3 April 2026 (reading 03/04/2026 as day/month)", day_us(date(2026, 4, 3))),
        ("4 March 2026 (reading 03/04/2026 as month/day)", day_us(date(2026, 3, 4))),
    ]
    assert kinds["row-POL-004"]["kind"] == "low_confidence_extraction"
    assert (
        kinds["row-POL-004"]["detectorConfidence"],
        kinds["row-POL-004"]["appliedCandidateConfidence"],
    ) == (0.8, 0.2)
