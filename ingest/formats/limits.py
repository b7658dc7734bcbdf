"""Bounds on what one file may cost to read (refused as `too large: …`, 413)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    file_bytes: int = 10 * 1024 * 1024  # the upload limit (CONTRACT §3.1b)
    pages: int = 500  # PDF pages
    text_chars: int = 2_000_000  # extracted characters (the stored source text)
    uncompressed_bytes: int = 100 * 1024 * 1024  # a ZIP container's members, declared
    zip_members: int = 5000
    zip_ratio: int = 200  # a member over 1 MB compressed more than this → a bomb
    sheet_cells: int = 500_000  # XLSX cells read, all sheets
    ocr_seconds: int = 60  # one page image's OCR
    ocr_total_seconds: int = 300  # all the OCR of one document; past it: no text found


LIMITS = Limits()
