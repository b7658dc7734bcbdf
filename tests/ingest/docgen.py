"""Test documents, written by the libraries made for each format: PDF with fpdf2 (and
pypdf's writer for encryption), DOCX with python-docx, XLSX with openpyxl. Outlook
`.msg` is the exception: no permissively licensed Python library writes the OLE
compound file it lives in (olefile only reads and patches, `cfb` only reads, the one
writer on PyPI is AGPL), so `cfb_file` lays out a minimal MS-CFB v3 file — header, FAT,
mini FAT, directory — and `msg_file` fills it with the MAPI property streams an Outlook
message carries ([MS-OXMSG]); extract-msg, the reader under test, then parses it as it
parses any Outlook file."""

import io
import struct
from datetime import UTC, datetime
from typing import Any

import docx
import openpyxl
from fpdf import FPDF
from pypdf import PdfReader, PdfWriter

FREE, END, FATSECT, NOSTREAM = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD, 0xFFFFFFFF


def pdf_file(
    pages: list[str],
    *,
    author: str = "",
    title: str = "",
    created: datetime | None = None,
) -> bytes:
    """A PDF with a text layer, one string per page."""
    pdf = FPDF()
    if author:
        pdf.set_author(author)
    if title:
        pdf.set_title(title)
    pdf.set_creation_date(created or datetime(2026, 1, 5, tzinfo=UTC))
    for text in pages:
        pdf.add_page()
        pdf.set_font("helvetica", size=11)
        pdf.multi_cell(0, 6, text=text)
    return bytes(pdf.output())


def scanned_pdf(
    *, created: datetime | None = None, author: str = "", words: str = "AGREEMENT (scanned)"
) -> bytes:
    """A PDF whose only page is a picture of `words` (no text layer): what a scanner
    writes."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (1200, 200), "white")
    font = ImageFont.load_default(size=48)
    ImageDraw.Draw(image).text((20, 60), words, fill="black", font=font)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    pdf = FPDF()
    if author:
        pdf.set_author(author)
    pdf.set_creation_date(created or datetime(2026, 1, 5, tzinfo=UTC))
    pdf.add_page()
    pdf.image(io.BytesIO(buffer.getvalue()), x=10, y=10, w=180)
    return bytes(pdf.output())


def self_repeating_pdf(levels: int = 22, *, declared: int | None = None) -> bytes:
    """A PDF whose page tree repeats itself (issue 28 item 5): `levels` /Pages nodes, each
    listing the next one twice, over one page — 2**levels pages (4 million at 22) in
    about 2.4 KB. Each node's /Count says so, unless `declared` puts another number on
    them (a tree that lies about its size). Laid out by hand: no PDF library writes one."""
    objects = {1: b"<< /Type /Catalog /Pages 2 0 R >>"}
    for i in range(levels):
        node, parent = 2 + i, b" /Parent %d 0 R" % (1 + i) if i else b""
        count = declared if declared is not None else 2 ** (levels - i)
        kids = b"%d 0 R %d 0 R" % (node + 1, node + 1)
        objects[node] = b"<< /Type /Pages /Kids [%s] /Count %d%s >>" % (kids, count, parent)
    leaf = levels + 2
    objects[leaf] = b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] >>" % (leaf - 1)
    out = io.BytesIO(b"%PDF-1.4\n")
    out.seek(0, io.SEEK_END)
    offsets = {}
    for number, body in objects.items():
        offsets[number] = out.tell()
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref, size = out.tell(), leaf + 1
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % size)
    out.write(b"".join(b"%010d 00000 n \n" % offsets[n] for n in range(1, size)))
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref))
    return out.getvalue()


def encrypted_pdf(text: str = "Secret agreement signed 1 June 2026.") -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_file([text]))))
    writer.encrypt(user_password="s3cret", owner_password="owner", algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def docx_file(
    blocks: list[Any],
    *,
    author: str = "",
    last_modified_by: str = "",
    created: datetime | None = None,
    title: str = "",
) -> bytes:
    """A Word document: a str is a paragraph, a list of rows (lists of cells) a table."""
    document = docx.Document()
    props = document.core_properties
    props.author, props.last_modified_by, props.title = author, last_modified_by, title
    props.created = created or datetime(2026, 1, 5, 9, 0)
    for block in blocks:
        if isinstance(block, str):
            document.add_paragraph(block)
        else:
            table = document.add_table(rows=len(block), cols=len(block[0]))
            for r, row in enumerate(block):
                for c, value in enumerate(row):
                    table.cell(r, c).text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def xlsx_file(sheets: dict[str, list[list[Any]]], *, creator: str = "") -> bytes:
    """A workbook, one sheet per entry: rows of typed values (a `date` is a date cell)."""
    workbook = openpyxl.Workbook()
    workbook.remove(workbook.active)
    for name, rows in sheets.items():
        ws = workbook.create_sheet(name)
        for row in rows:
            ws.append(row)
    workbook.properties.creator = creator
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def _dir_entry(name: str, kind: int, right: int, child: int, start: int, size: int) -> bytes:
    encoded = (name.encode("utf-16-le") + b"\x00\x00") if name else b""
    return struct.pack(
        "<64sHBBIII16sIQQIQ",
        encoded,
        len(encoded),
        kind,
        1,  # black: every storage's children are one right-leaning chain
        NOSTREAM,
        right,
        child,
        b"\x00" * 16,
        0,
        0,
        0,
        start,
        size,
    )


def _chain(fat: list[int], first: int, count: int) -> None:
    for i in range(count):
        fat[first + i] = first + i + 1 if i < count - 1 else END


def cfb_file(streams: dict[str, bytes]) -> bytes:
    """An MS-CFB v3 compound file (512-byte sectors) holding `streams`, keyed by path
    ("__recip_version1.0_#00000000/__substg1.0_3001001F"); storages are made from the
    paths. Streams under 4096 bytes go in the mini stream, as the format requires."""
    tree: dict[str, list[str]] = {"": []}
    for path in sorted(streams):
        parts = path.split("/")
        for depth in range(1, len(parts) + 1):
            node, parent = "/".join(parts[:depth]), "/".join(parts[: depth - 1])
            if node not in tree.setdefault(parent, []):
                tree[parent].append(node)
            if depth < len(parts):
                tree.setdefault(node, [])
    order = [""] + [n for n in sorted(tree) if n] + [p for p in sorted(streams)]
    order = list(dict.fromkeys(order))
    index = {node: i for i, node in enumerate(order)}
    mini, mini_fat, big, placed = bytearray(), [], bytearray(), {}
    for path in sorted(streams):
        data = streams[path]
        if len(data) < 4096:
            first, count = len(mini) // 64, -(-len(data) // 64)
            mini_fat.extend([0] * count)
            _chain(mini_fat, first, count)
            mini += data.ljust(count * 64, b"\x00")
            placed[path] = ("mini", first, len(data))
        else:
            count = -(-len(data) // 512)
            placed[path] = ("big", len(big) // 512, len(data))
            big += data.ljust(count * 512, b"\x00")
    n_dir = -(-len(order) // 4)
    n_minifat = -(-len(mini_fat) * 4 // 512) if mini_fat else 0
    n_mini = -(-len(mini) // 512)
    n_big = len(big) // 512
    n_fat = 1
    while n_fat * 128 < n_fat + n_dir + n_minifat + n_mini + n_big:
        n_fat += 1
    dir_at, minifat_at = n_fat, n_fat + n_dir
    mini_at, big_at = minifat_at + n_minifat, minifat_at + n_minifat + n_mini
    fat = [FREE] * (n_fat * 128)
    for i in range(n_fat):
        fat[i] = FATSECT
    for first, count in ((dir_at, n_dir), (minifat_at, n_minifat), (mini_at, n_mini)):
        _chain(fat, first, count)
    for where, first, size in placed.values():
        if where == "big":
            _chain(fat, big_at + first, -(-size // 512))
    entries = bytearray()
    for node in order:
        siblings = tree.get(node.rsplit("/", 1)[0] if "/" in node else "", [])
        right = (
            index[siblings[siblings.index(node) + 1]]
            if node and siblings.index(node) + 1 < len(siblings)
            else NOSTREAM
        )
        child = index[tree[node][0]] if tree.get(node) else NOSTREAM
        name = node.rsplit("/", 1)[-1]
        if not node:
            entries += _dir_entry(
                "Root Entry", 5, NOSTREAM, child, mini_at if mini else END, len(mini)
            )
        elif node in streams:
            where, first, size = placed[node]
            entries += _dir_entry(
                name, 2, right, NOSTREAM, first + (big_at if where == "big" else 0), size
            )
        else:
            entries += _dir_entry(name, 1, right, child, 0, 0)
    while len(entries) < n_dir * 512:
        entries += _dir_entry("", 0, NOSTREAM, NOSTREAM, 0, 0)
    difat = list(range(n_fat)) + [FREE] * (109 - n_fat)
    header = struct.pack(
        "<8s16sHHHHH6sIIIIIIIII109I",
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
        b"\x00" * 16,
        0x3E,
        3,
        0xFFFE,
        9,
        6,
        b"\x00" * 6,
        0,
        n_fat,
        dir_at,
        0,
        4096,
        minifat_at if n_minifat else END,
        n_minifat,
        END,
        0,
        *difat,
    )
    minifat_bytes = struct.pack(f"<{len(mini_fat)}I", *mini_fat).ljust(n_minifat * 512, b"\xff")
    body = struct.pack(f"<{len(fat)}I", *fat) + bytes(entries) + minifat_bytes
    return header + body + bytes(mini).ljust(n_mini * 512, b"\x00") + bytes(big)


def _filetime(when: datetime) -> int:
    return int((when - datetime(1601, 1, 1, tzinfo=UTC)).total_seconds() * 10_000_000)


def _props(fixed: dict[int, int], header: bytes) -> bytes:
    """A `__properties_version1.0` stream: the header, then fixed-size PT_SYSTIME values."""
    out = header
    for tag, value in fixed.items():
        out += struct.pack("<IIQ", tag, 0x6, value)
    return out


def msg_file(
    *,
    subject: str,
    sender: str,
    sender_email: str,
    to: list[tuple[str, str]],
    body: str,
    sent: datetime | None = None,
    delivered: datetime | None = None,
    headers: str = "",
) -> bytes:
    """An Outlook message (IPM.Note): subject, sender, To recipients, plain body, the
    submit (PR_CLIENT_SUBMIT_TIME) and delivery times, and optional transport headers."""

    def text(value: str) -> bytes:
        return value.encode("utf-16-le")

    fixed = {}
    if sent:
        fixed[0x00390040] = _filetime(sent)
    if delivered:
        fixed[0x0E060040] = _filetime(delivered)
    top = b"\x00" * 8 + struct.pack("<IIII", len(to), 0, len(to), 0) + b"\x00" * 8
    streams = {
        "__properties_version1.0": _props(fixed, top),
        "__substg1.0_001A001F": text("IPM.Note"),
        "__substg1.0_0037001F": text(subject),
        "__substg1.0_1000001F": text(body),
        "__substg1.0_0C1A001F": text(sender),
        "__substg1.0_5D01001F": text(sender_email),
        "__substg1.0_0E04001F": text("; ".join(name for name, _ in to)),
    }
    if headers:
        streams["__substg1.0_007D001F"] = text(headers)
    for i, (name, email) in enumerate(to):
        storage = f"__recip_version1.0_#{i:08X}"
        streams[f"{storage}/__properties_version1.0"] = b"\x00" * 8 + struct.pack(
            "<IIQ", 0x0C150003, 0x6, 1
        )
        streams[f"{storage}/__substg1.0_3001001F"] = text(name)
        streams[f"{storage}/__substg1.0_39FE001F"] = text(email)
        streams[f"{storage}/__substg1.0_3003001F"] = text(email)
    return cfb_file(streams)


def html_file(*, title: str, body: str, author: str = "", published: str = "") -> bytes:
    """An intranet page: a head with title and meta tags, the given body markup."""
    meta = f'<meta name="author" content="{author}">' if author else ""
    if published:
        meta += f'<meta name="dcterms.created" content="{published}">'
    return (
        f"<!DOCTYPE html><html><head><title>{title}</title>{meta}</head><body>{body}</body></html>"
    ).encode()
