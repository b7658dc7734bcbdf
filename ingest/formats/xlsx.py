"""XLSX (openpyxl, read-only): each sheet as a table — the first non-empty row is the
header — with its cells as the file types them (a date cell is a `datetime`, a text
cell stays text). The text stored for the spans is each sheet rendered as CSV under a
`# sheet: NAME` line; the workbook properties give author, last editor and dates."""

import csv
import io
import zipfile
from xml.etree.ElementTree import ParseError

import openpyxl
from openpyxl.utils.exceptions import InvalidFileException

from .base import Cell, Extracted, Metadata, OverLimit, Sheet, Unreadable, cell_text
from .limits import LIMITS


def _read_sheets(workbook: openpyxl.Workbook) -> list[Sheet]:
    sheets, cells = [], 0
    for ws in workbook.worksheets:
        rows: list[list[Cell]] = []
        for row in ws.iter_rows(values_only=True):
            cells += len(row)
            if cells > LIMITS.sheet_cells:
                raise OverLimit(f"too large: over {LIMITS.sheet_cells} cells")
            if any(v not in (None, "") for v in row):
                rows.append(list(row))
        if rows:
            header = [cell_text(v).strip() for v in rows[0]]
            sheets.append(Sheet(name=ws.title, header=header, rows=rows[1:]))
    return sheets


def _field(cell: str) -> str:
    """One cell as a CSV field (quoted when it must be)."""
    if not cell:
        return ""
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow([cell])
    return out.getvalue()


def _line(cells: list[str], at: int) -> tuple[str, list[tuple[int, int]]]:
    """A CSV line of `cells` written at offset `at`, and each cell's span inside it (a
    quoted cell's inside its quotes)."""
    fields, spans = [_field(c) for c in cells], []
    for cell, field in zip(cells, fields, strict=True):
        quoted = int(field != cell)
        spans.append((at + quoted, at + len(field) - quoted))
        at += len(field) + 1
    return ",".join(fields), spans


def render(sheets: list[Sheet]) -> str:
    """The sheets as CSV text, each under `# sheet: NAME`; sets each sheet's offset and
    where each of its cells is (`Sheet.cell_spans`)."""
    out = io.StringIO()
    for sheet in sheets:
        sheet.offset = out.tell()
        out.write(f"# sheet: {sheet.name}\n")
        out.write(_line(sheet.header, out.tell())[0] + "\n")
        sheet.cell_spans = []
        for row in sheet.rows:
            line, spans = _line([cell_text(v) for v in row], out.tell())
            sheet.cell_spans.append(spans)
            out.write(line + "\n")
        out.write("\n")
    return out.getvalue().strip()


def extract(data: bytes, name: str) -> Extracted:
    try:
        workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except (InvalidFileException, zipfile.BadZipFile, KeyError, ValueError, ParseError) as exc:
        raise Unreadable(f"corrupt: the workbook cannot be read ({exc})") from exc
    try:
        sheets = _read_sheets(workbook)
        props = workbook.properties
    except (KeyError, ValueError, ParseError, zipfile.BadZipFile) as exc:
        raise Unreadable(f"corrupt: a sheet of the workbook cannot be read ({exc})") from exc
    finally:
        workbook.close()
    metadata = Metadata(
        authors=[props.creator.strip()] if (props.creator or "").strip() else [],
        last_modified_by=[props.lastModifiedBy.strip()]
        if (props.lastModifiedBy or "").strip()
        else [],
        created=props.created,
        modified=props.modified,
    )
    return Extracted(
        text=render(sheets), title=(props.title or "").strip(), metadata=metadata, sheets=sheets
    )
