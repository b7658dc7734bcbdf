"""Readers for the document formats the detection worker reads (CONTRACT §3.1b).

One interface: `extract(data, name) -> Extracted` — the text detection runs on (its
offsets are the stored source text's), the document's title and metadata, and for
spreadsheets the typed sheets; `precheck(data, name)` is the cheap part the web request
runs (content sniffing, encryption, declared sizes) so a refused upload is refused
before it is stored. A refusal is a `Refused` with a reason ("encrypted: …").
"""

import contextlib
import logging
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

from .base import (
    OCR_AVAILABLE,
    Extracted,
    Metadata,
    OverLimit,
    Refused,
    Sheet,
    Unreadable,
    Unsupported,
)
from .limits import LIMITS
from .sniff import sniff_check

TEXT_SUFFIXES = {".txt", ".md", ".csv", ".eml"}
DOCUMENT_SUFFIXES = {".pdf", ".docx", ".xlsx", ".html", ".htm", ".msg"}
SUPPORTED = TEXT_SUFFIXES | DOCUMENT_SUFFIXES
SUPPORTED_LABEL = ".txt, .md, .csv, .eml, .pdf, .docx, .xlsx, .html/.htm and .msg"
log = logging.getLogger(__name__)

__all__ = [
    "DOCUMENT_SUFFIXES",
    "LIMITS",
    "OCR_AVAILABLE",
    "SUPPORTED",
    "SUPPORTED_LABEL",
    "TEXT_SUFFIXES",
    "Extracted",
    "Metadata",
    "OverLimit",
    "Refused",
    "Sheet",
    "Unreadable",
    "Unsupported",
    "extract",
    "precheck",
    "precheck_upload",
    "suffix_of",
]


def suffix_of(name: str) -> str:
    return PurePosixPath(name).suffix.lower()


def precheck(data: bytes, name: str) -> str:
    """Refuse what can be refused without parsing the document: an unsupported name, an
    empty file, bytes that are not what the name says, an encrypted or bomb-sized
    container. Returns the suffix. Cheap (headers and directories only): the upload
    request runs it. Whatever a library raises on hostile bytes is a refusal
    (`corrupt: …`), never an error of the caller's."""
    suffix = suffix_of(name)
    if suffix not in SUPPORTED:
        raise Unsupported(f"unsupported: only {SUPPORTED_LABEL} files are read")
    if len(data) > LIMITS.file_bytes:
        raise OverLimit(f"too large: {len(data)} bytes (limit {LIMITS.file_bytes})")
    if not data:
        raise Unreadable("corrupt: the file is empty")
    with _library_failures_refused():
        sniff_check(data, suffix)
        if suffix == ".pdf":  # the trailer: encrypted, corrupt, too many pages declared
            from .pdf import open_pdf

            open_pdf(data)
    return suffix


@contextlib.contextmanager
def _library_failures_refused() -> Iterator[None]:
    """A reader library failing on bytes it was not made for (any exception but our own
    refusals) refuses the file as corrupt, logged with its traceback."""
    try:
        yield
    except Refused:
        raise
    except Exception as exc:
        log.warning("a reader failed on a file; refused as corrupt", exc_info=True)
        raise Unreadable(f"corrupt: the file cannot be read ({type(exc).__name__})") from exc


def precheck_upload(upload: Any, name: str) -> None:
    """`precheck` of an uploaded file object, left rewound for storing."""
    upload.seek(0)
    data = upload.read()
    upload.seek(0)
    precheck(data, name)


def extract(data: bytes, name: str) -> Extracted:
    """The text, title and metadata of a document in one of `DOCUMENT_SUFFIXES`, once
    `precheck` has passed. Raises `Refused` (with its reason) for what cannot or may not
    be read."""
    from . import docx, html, msg, pdf, xlsx

    suffix = suffix_of(name)
    readers = {
        ".pdf": pdf.extract,
        ".docx": docx.extract,
        ".xlsx": xlsx.extract,
        ".html": html.extract,
        ".htm": html.extract,
        ".msg": msg.extract,
    }
    if suffix not in readers:
        raise Unsupported(f"unsupported: {suffix} is read as text, not extracted")
    with _library_failures_refused():
        extracted = readers[suffix](data, name)
    if len(extracted.text) > LIMITS.text_chars:
        raise OverLimit(
            f"too large: {len(extracted.text)} characters of text (limit {LIMITS.text_chars})"
        )
    return extracted
