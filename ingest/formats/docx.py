"""DOCX (python-docx): paragraphs and tables in document order, a table row as its
cells joined by " | "; the core properties (author, last modified by, created,
modified, title)."""

import io
import zipfile
from xml.etree.ElementTree import ParseError

import docx
from docx.opc.exceptions import PackageNotFoundError
from docx.table import Table
from docx.text.paragraph import Paragraph
from lxml.etree import LxmlError

from .base import Extracted, Metadata, Unreadable


def _table_lines(table: Table) -> list[str]:
    lines = []
    for row in table.rows:
        cells: list[str] = []
        for cell in row.cells:
            text = " ".join(cell.text.split())
            if not cells or cells[-1] != text:  # a merged cell repeats itself
                cells.append(text)
        if any(cells):
            lines.append(" | ".join(cells))
    return lines


def extract(data: bytes, name: str) -> Extracted:
    try:
        document = docx.Document(io.BytesIO(data))
        lines: list[str] = []
        for block in document.iter_inner_content():
            if isinstance(block, Paragraph):
                lines.append(block.text.strip())
            elif isinstance(block, Table):
                lines.extend(["", *_table_lines(block), ""])
        props = document.core_properties
    except (
        PackageNotFoundError,
        zipfile.BadZipFile,
        KeyError,
        ValueError,
        LxmlError,
        ParseError,
    ) as exc:
        raise Unreadable(f"corrupt: the Word document cannot be read ({exc})") from exc
    text = "\n".join(lines)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    metadata = Metadata(
        authors=[props.author.strip()] if (props.author or "").strip() else [],
        last_modified_by=(
            [props.last_modified_by.strip()] if (props.last_modified_by or "").strip() else []
        ),
        created=props.created,
        modified=props.modified,
    )
    return Extracted(text=text.strip(), title=(props.title or "").strip(), metadata=metadata)
