"""PDF (pypdf): the text layer page by page, the document information (author,
creation and modification dates, title). A PDF without a text layer is a scan: its page
images go through Tesseract when it is installed (`ocr.py`); otherwise — or when OCR
finds nothing — the result is marked `scanned` and detection asks for its date."""

import io
import logging
from datetime import datetime

from pypdf import PasswordType, PdfReader
from pypdf.errors import PyPdfError

from .base import Extracted, Metadata, OverLimit, Unreadable
from .limits import LIMITS
from .ocr import ocr_pdf_images

log = logging.getLogger(__name__)
PAGE_BREAK = "\n\n"


def open_pdf(data: bytes) -> PdfReader:
    """A reader over a readable, unencrypted (or empty-password) PDF within the page
    limit. Reads the cross-reference table and trailer only, so the upload request can
    afford it."""
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            try:
                opened = reader.decrypt("")
            except (PyPdfError, NotImplementedError) as exc:
                raise Unreadable(f"encrypted: the PDF cannot be decrypted ({exc})") from exc
            if opened == PasswordType.NOT_DECRYPTED:
                raise Unreadable("encrypted: the PDF needs a password to open")
        pages = len(reader.pages)
    except Unreadable:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError, RecursionError) as exc:
        raise Unreadable(f"corrupt: the PDF cannot be read ({exc})") from exc
    if pages > LIMITS.pages:
        raise OverLimit(f"too large: {pages} pages (limit {LIMITS.pages})")
    return reader


def _when(value: object) -> datetime | None:
    return value if isinstance(value, datetime) else None


def _metadata(reader: PdfReader) -> tuple[str, Metadata]:
    try:
        info = reader.metadata
    except (PyPdfError, ValueError, KeyError, TypeError):
        info = None
    if info is None:
        return "", Metadata()
    author = str(info.author or "").strip()
    try:
        created, modified = _when(info.creation_date), _when(info.modification_date)
    except ValueError:  # a malformed date string in the info dictionary
        created = modified = None
    return str(info.title or "").strip(), Metadata(
        authors=[author] if author else [], created=created, modified=modified
    )


def extract(data: bytes, name: str) -> Extracted:
    reader = open_pdf(data)
    pages: list[str] = []
    try:
        for page in reader.pages:
            pages.append((page.extract_text() or "").strip())
            if sum(len(p) for p in pages) > LIMITS.text_chars:
                raise OverLimit(f"too large: over {LIMITS.text_chars} characters of text")
    except OverLimit:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError, RecursionError) as exc:
        raise Unreadable(f"corrupt: a page of the PDF cannot be read ({exc})") from exc
    title, metadata = _metadata(reader)
    text = PAGE_BREAK.join(pages).strip()
    result = Extracted(text=text, title=title, metadata=metadata, pages=len(pages))
    if text:
        return result
    ocr_text = ocr_pdf_images(reader)
    if ocr_text:
        result.text, result.ocr = ocr_text, True
    else:
        result.scanned = True
    return result
