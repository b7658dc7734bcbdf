"""PDF (pypdf): the text layer page by page, the document information (author,
creation and modification dates, title). A PDF without a text layer is a scan: its page
images go through Tesseract when it is installed (`ocr.py`); otherwise — or when OCR
finds nothing — the result is marked `scanned` and detection asks for its date."""

import io
import logging
from datetime import datetime

from pypdf import PageObject, PasswordType, PdfReader, apply_configuration
from pypdf.errors import LimitReachedError, PyPdfError
from pypdf.generic import DictionaryObject

from .base import Extracted, Metadata, OverLimit, Unreadable
from .limits import LIMITS
from .ocr import ocr_pdf_images

log = logging.getLogger(__name__)
PAGE_BREAK = "\n\n"


# What one PDF may cost to open, in pypdf's own limits (its `Configuration`, applied per
# call): the upload request reads the trailer, the catalog and the root of the page tree,
# each array or dictionary at most REQUEST_ELEMENTS long; the job flattens the page tree
# visiting at most PAGE_TREE_ENTRIES nodes — enough for any tree of LIMITS.pages pages
# that is a tree, not one whose nodes list the same child again and again (2.4 KB of
# those are millions of pages: seconds of a worker before pypdf's own bound).
REQUEST_ELEMENTS = 10_000


def _page_tree_entries() -> int:
    return 2 * LIMITS.pages + 64


def open_pdf(data: bytes) -> PdfReader:
    """A reader over a readable, unencrypted (or empty-password) PDF whose page tree
    declares at most the page limit. Reads the cross-reference table, the trailer, the
    catalog and the page tree's root only — never walks the tree (its nodes are read by
    `pdf_pages`, in the job) — so the upload request can afford it, whatever the file."""
    with apply_configuration(
        array_maximum_element_count=REQUEST_ELEMENTS,
        dictionary_maximum_element_count=REQUEST_ELEMENTS,
    ):
        try:
            reader = PdfReader(io.BytesIO(data), strict=False)
            if reader.is_encrypted:
                _decrypted(reader)
            declared = _declared_pages(reader)
        except Unreadable:
            raise
        except (PyPdfError, ValueError, KeyError, TypeError, OSError, RecursionError) as exc:
            raise Unreadable(f"corrupt: the PDF cannot be read ({exc})") from exc
    if declared > LIMITS.pages:
        raise OverLimit(f"too large: {declared} pages (limit {LIMITS.pages})")
    return reader


def _decrypted(reader: PdfReader) -> None:
    try:
        opened = reader.decrypt("")
    except (PyPdfError, NotImplementedError) as exc:
        raise Unreadable(f"encrypted: the PDF cannot be decrypted ({exc})") from exc
    if opened == PasswordType.NOT_DECRYPTED:
        raise Unreadable("encrypted: the PDF needs a password to open")


def _declared_pages(reader: PdfReader) -> int:
    """The page count the page tree's root declares (`/Count`), read without walking the
    tree; 0 when it declares none (the job counts the pages it finds)."""
    root = reader.root_object.get("/Pages")
    root = root.get_object() if root is not None else None
    count = root.get("/Count") if isinstance(root, DictionaryObject) else None
    return int(count) if isinstance(count, int) and count > 0 else 0


def pdf_pages(reader: PdfReader) -> list[PageObject]:
    """The pages of an opened PDF, its page tree walked within bounds: a tree of more
    nodes than PAGE_TREE_ENTRIES (a tree that repeats itself), or of more pages than the
    limit, is refused `too large: …`; a cyclic or broken one `corrupt: …`."""
    entries = _page_tree_entries()
    try:
        with apply_configuration(page_tree_maximum_entries=entries):
            pages = list(reader.pages)
    except LimitReachedError as exc:
        raise OverLimit(f"too large: the page tree has over {entries} entries") from exc
    except (PyPdfError, ValueError, KeyError, TypeError, OSError, RecursionError) as exc:
        raise Unreadable(f"corrupt: the PDF's pages cannot be read ({exc})") from exc
    if len(pages) > LIMITS.pages:
        raise OverLimit(f"too large: {len(pages)} pages (limit {LIMITS.pages})")
    return pages


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
    tree = pdf_pages(reader)
    try:
        for page in tree:
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
