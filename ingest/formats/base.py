"""What a reader returns, and how it refuses."""

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from email.utils import parsedate_to_datetime
from typing import Any

from common.codes import ErrorCode

OCR_AVAILABLE = shutil.which("tesseract") is not None


class Refused(ValueError):
    """A file the worker will not read; `str()` is the reason ("encrypted: …").
    `status`/`code` are what `POST /v1/documents` answers (CONTRACT §3.1b)."""

    status = 422
    code = ErrorCode.DOCUMENT_UNREADABLE


class Unsupported(Refused):
    """Not a type we read, or bytes that are not what the name says."""

    status = 415
    code = ErrorCode.UNSUPPORTED_MEDIA_TYPE


class Unreadable(Refused):
    """Encrypted, corrupt or otherwise unreadable."""


class OverLimit(Refused):
    """Over a limit: bytes, pages, characters, uncompressed size."""

    status = 413
    code = ErrorCode.PAYLOAD_TOO_LARGE


@dataclass
class Metadata:
    """Who wrote the document and when, as the file itself says (DOCX core properties,
    PDF info, spreadsheet properties, HTML meta tags, a mail's envelope)."""

    authors: list[str] = field(default_factory=list)
    last_modified_by: list[str] = field(default_factory=list)
    created: datetime | None = None
    modified: datetime | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "authors": self.authors,
            "lastModifiedBy": self.last_modified_by,
            "created": self.created.isoformat() if self.created else None,
            "modified": self.modified.isoformat() if self.modified else None,
        }


Cell = str | date | datetime | int | float | bool | None


def cell_text(value: Cell) -> str:
    """A cell as CSV would hold it: a date cell in ISO form, midnight dropped."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.date().isoformat() if value.time() == time() else value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


@dataclass
class Sheet:
    """One worksheet: the header row and the data rows, cells as typed by the file."""

    name: str
    header: list[str]
    rows: list[list[Cell]]
    offset: int = 0  # where the sheet's rendering starts in `Extracted.text`
    # Per data row, each cell's (start, end) in `Extracted.text` (set by the rendering).
    cell_spans: list[list[tuple[int, int]]] = field(default_factory=list)


@dataclass
class Mail:
    """An Outlook message's envelope, for the same rules as `.eml`."""

    subject: str
    sender: str
    to: str
    cc: str
    raw_date: str | None
    received: list[datetime]
    body: str


@dataclass
class Extracted:
    text: str
    title: str = ""
    metadata: Metadata = field(default_factory=Metadata)
    pages: int = 0
    sheets: list[Sheet] | None = None
    mail: Mail | None = None
    scanned: bool = False  # a PDF without a text layer (OCR found nothing or did not run)
    ocr: bool = False  # the text came from OCR


def header_time(value: str | None) -> datetime | None:
    """A mail header's date (Date, a Received hop's stamp) as an aware datetime (UTC when
    it names no zone), or None when it does not parse."""
    if not value:
        return None
    try:
        parsed = parsedate_to_datetime(str(value))
    except (TypeError, ValueError, IndexError):
        return None
    if parsed is None:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def received_from_headers(headers: Sequence[object]) -> list[datetime]:
    """Times of Received hops (the part after the last ';'), oldest first."""
    out = []
    for header in headers:
        stamp = header_time(str(header).rsplit(";", 1)[-1].strip()) if ";" in str(header) else None
        if stamp is not None:
            out.append(stamp)
    return sorted(out)
