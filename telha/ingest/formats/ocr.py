"""Optional OCR of scanned PDF pages with Tesseract (Debian `tesseract-ocr`), run as a
program: each page's embedded images (pypdf decodes them with Pillow) go to
`tesseract - -` on stdin, the text comes back on stdout. Without Tesseract nothing is
attempted and the scan is left to the `undated` rule."""

import io
import logging
import shutil
import subprocess

from pypdf import PdfReader
from pypdf.errors import PyPdfError

from .limits import LIMITS

log = logging.getLogger(__name__)


def ocr_image(png: bytes) -> str:
    binary = shutil.which("tesseract")
    if binary is None:
        return ""
    try:
        done = subprocess.run(
            [binary, "-", "-"],
            input=png,
            capture_output=True,
            timeout=LIMITS.ocr_seconds,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("tesseract failed: %s", exc)
        return ""
    return done.stdout.decode("utf-8", errors="replace").strip() if done.returncode == 0 else ""


def ocr_pdf_images(reader: PdfReader) -> str:
    """The text Tesseract reads in the pages' images, pages joined by a blank line;
    "" when Tesseract is not installed or reads nothing."""
    if shutil.which("tesseract") is None:
        return ""
    pages = []
    for page in reader.pages:
        found = []
        try:
            images = list(page.images)
        except (PyPdfError, ValueError, KeyError, OSError) as exc:
            log.info("page images unreadable: %s", exc)
            images = []
        for image in images:
            if image.image is None:
                continue
            buffer = io.BytesIO()
            image.image.save(buffer, format="PNG")
            found.append(ocr_image(buffer.getvalue()))
        pages.append("\n".join(t for t in found if t))
    return "\n\n".join(p for p in pages if p).strip()
