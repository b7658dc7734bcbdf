"""Optional OCR of scanned PDF pages with Tesseract (Debian `tesseract-ocr`), run as a
program: each page's embedded images (pypdf decodes them with Pillow) go to
`tesseract - -` on stdin, the text comes back on stdout. Without Tesseract nothing is
attempted and the scan is left to the `undated` rule. One image may take at most
`LIMITS.ocr_seconds`, the whole document `LIMITS.ocr_total_seconds`: a scan whose OCR
runs over that budget is read as having no text found (the `undated` rule again), never
as the text of its first pages, and the log says so."""

import io
import logging
import shutil
import subprocess
import time
from typing import Any

from pypdf import PdfReader
from pypdf.errors import PyPdfError

from .limits import LIMITS

log = logging.getLogger(__name__)
_clock = time.monotonic


class OverBudget(Exception):
    """The document's OCR ran past `LIMITS.ocr_total_seconds`."""


def ocr_image(png: bytes, *, timeout: float | None = None) -> str:
    binary = shutil.which("tesseract")
    if binary is None:
        return ""
    try:
        done = subprocess.run(
            [binary, "-", "-"],
            input=png,
            capture_output=True,
            timeout=LIMITS.ocr_seconds if timeout is None else timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("tesseract failed: %s", exc)
        return ""
    return done.stdout.decode("utf-8", errors="replace").strip() if done.returncode == 0 else ""


def ocr_pdf_images(reader: PdfReader) -> str:
    """The text Tesseract reads in the pages' images, pages joined by a blank line;
    "" when Tesseract is not installed, reads nothing or runs over the document's OCR
    budget (`LIMITS.ocr_total_seconds`)."""
    if shutil.which("tesseract") is None:
        return ""
    deadline = _clock() + LIMITS.ocr_total_seconds
    try:
        pages = [_page_text(page, deadline) for page in reader.pages]
    except OverBudget:
        log.warning(
            "OCR stopped: over the budget of %s s per document; the scan is read as having"
            " no text found (its date is asked for)",
            LIMITS.ocr_total_seconds,
        )
        return ""
    return "\n\n".join(p for p in pages if p).strip()


def _page_text(page: Any, deadline: float) -> str:
    """The text of one page's images; raises `OverBudget` once `deadline` is past."""
    try:
        images = list(page.images)
    except (PyPdfError, ValueError, KeyError, OSError) as exc:
        log.info("page images unreadable: %s", exc)
        images = []
    found = []
    for image in images:
        if image.image is None:
            continue
        if (left := deadline - _clock()) <= 0:
            raise OverBudget
        buffer = io.BytesIO()
        image.image.save(buffer, format="PNG")
        found.append(ocr_image(buffer.getvalue(), timeout=min(LIMITS.ocr_seconds, left)))
        if _clock() > deadline:
            raise OverBudget
    return "\n".join(t for t in found if t)
