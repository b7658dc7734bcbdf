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


def render(sheets: list[Sheet]) -> str:
    """The sheets as CSV text, each under `# sheet: NAME`; sets each sheet's offset."""
    out = io.StringIO()
    for sheet in sheets:
        sheet.offset = out.tell()
        out.write(f"# sheet: {sheet.name}\n")
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(sheet.header)
        for row in sheet.rows:
            writer.writerow([cell_text(v) for v in row])
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
