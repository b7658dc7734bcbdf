"""Content sniffing: is this file what its name says? puremagic names the container
from its magic bytes; ZIP and OLE containers are then told apart by their directory
(`word/document.xml`, `xl/workbook.xml`, an Outlook message's property streams), which
also bounds a ZIP's declared uncompressed size before any reader inflates a byte."""

import functools
import io
import zipfile

import olefile
import puremagic

from .base import OverLimit, Unreadable, Unsupported
from .limits import LIMITS

EXPECTED = {
    ".pdf": {"pdf"},
    ".docx": {"docx"},
    ".xlsx": {"xlsx"},
    ".msg": {"msg"},
    ".html": {"html", "text"},
    ".htm": {"html", "text"},
    ".txt": {"text", "html"},
    ".md": {"text", "html"},
    ".csv": {"text"},
    ".eml": {"text"},
}
OOXML_PARTS = {"docx": "word/document.xml", "xlsx": "xl/workbook.xml"}


@functools.cache
def _signatures() -> tuple[tuple[bool, int, int, frozenset[bytes]], ...]:
    """puremagic's header and footer signatures as (footer?, offset, end, byte strings):
    one slice per place instead of one per signature."""
    rows = [(False, r) for r in puremagic.main.magic_header_array]
    rows += [(True, r) for r in puremagic.main.magic_footer_array]
    by_place: dict[tuple[bool, int, int], set[bytes]] = {}
    for footer, row in rows:
        place = (footer, row.offset, row.offset + len(row.byte_match))
        by_place.setdefault(place, set()).add(row.byte_match)
    return tuple((*place, frozenset(strings)) for place, strings in by_place.items())


def _may_match(data: bytes) -> bool:
    """Whether any of puremagic's header or footer signatures is where puremagic looks
    for it (as its `_identify_all` slices them): without one it finds nothing (its
    multi-part signatures only extend such a match), so most text skips its full scan."""
    head, foot = data[: puremagic.main.max_head], data[-puremagic.main.max_foot :]
    for footer, offset, end, strings in _signatures():
        if footer:
            area = foot[offset:end] if end != 0 else foot[offset:]
        elif end <= len(head):
            area = head[offset:end]
        else:
            continue
        if area in strings:
            return True
    return False


def _magic(data: bytes) -> str:
    """The container puremagic recognises: pdf, zip, ole, html, or "" for none."""
    if data and not _may_match(data[:8192]):
        return ""
    try:
        matches = puremagic.magic_string(data[:8192])
    except puremagic.PureError:
        return ""
    mimes = {m.mime_type for m in matches}
    exts = {m.extension for m in matches}
    if "application/pdf" in mimes:
        return "pdf"
    if data.startswith(b"PK\x03\x04") or ".zip" in exts or ".docx" in exts:
        return "zip"
    if data.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        return "ole"
    if "text/html" in mimes:
        return "html"
    return "binary" if matches and b"\x00" in data[:8192] else ""


def _zip_kind(data: bytes) -> str:
    """docx / xlsx / zip by the parts the archive holds; refuses a bomb by the declared
    sizes (the readers inflate at most what is declared: zipfile stops there)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise Unreadable(f"corrupt: not a readable ZIP container ({exc})") from exc
    if len(members) > LIMITS.zip_members:
        raise OverLimit(f"too large: {len(members)} parts (limit {LIMITS.zip_members})")
    total = sum(m.file_size for m in members)
    if total > LIMITS.uncompressed_bytes:
        raise OverLimit(
            f"too large: {total} bytes uncompressed (limit {LIMITS.uncompressed_bytes})"
        )
    for m in members:
        if m.file_size > 1024 * 1024 and m.file_size > LIMITS.zip_ratio * max(1, m.compress_size):
            raise OverLimit(f"too large: {m.filename} inflates {m.file_size // m.compress_size}x")
    names = {m.filename for m in members}
    return next((kind for kind, part in OOXML_PARTS.items() if part in names), "zip")


def _ole_kind(data: bytes) -> str:
    """msg / encrypted-ooxml / ole by the streams of the compound file."""
    try:
        ole = olefile.OleFileIO(data)
        streams = {"/".join(path) for path in ole.listdir(streams=True, storages=False)}
    except (OSError, ValueError) as exc:
        raise Unreadable(f"corrupt: not a readable OLE compound file ({exc})") from exc
    if "EncryptedPackage" in streams:
        return "encrypted-ooxml"
    if "__properties_version1.0" in streams or any(s.startswith("__substg1.0_") for s in streams):
        return "msg"
    return "ole"


def kind_of(data: bytes) -> str:
    """What the bytes are: pdf, docx, xlsx, msg, html, text, or another container."""
    magic = _magic(data)
    if magic == "zip":
        return _zip_kind(data)
    if magic == "ole":
        return _ole_kind(data)
    if magic:
        return magic
    return "binary" if b"\x00" in data[:8192] else "text"


def sniff_check(data: bytes, suffix: str) -> str:
    """Refuse bytes that are not what the suffix says (415), and an Office file that is
    password-protected (its content is an encrypted package inside an OLE file: 422)."""
    kind = kind_of(data)
    if kind == "encrypted-ooxml" and suffix in (".docx", ".xlsx"):
        raise Unreadable(f"encrypted: the {suffix} file is password-protected")
    if kind not in EXPECTED.get(suffix, set()):
        raise Unsupported(f"mismatch: the name says {suffix} but the content is {kind}")
    return kind
