"""`telha detect PATH... [--tenant SLUG] [--root DIR] [--json]`: what detection finds in
files and folders — facts, ambiguities and every temporal expression — read exactly as
`telha ingest` reads them (the same formats, limits and refusals), writing nothing.

With `--json`, CONTRACT §2.2's `{"results": [...]}`, one result written as soon as its
file is read; without, a readable summary per file. `--tenant` resolves people's names
as ingest does (without it, no directory is read); `--root` is what each file's
`externalId` is relative to (default: the current folder)."""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.times import iso
from ingest.detection.build import detect
from ingest.detection.report import detection_report, refusal_report
from ingest.documents import people_by_name
from ingest.folder import FileRead, files_read, iter_files
from ingest.formats import SUPPORTED_LABEL, Refused
from tenancy.commands import tenant_named


def _result(read: FileRead, names: dict[str, str]) -> dict[str, Any]:
    """One file's §2.2 result (a refusal is a result too). A file outside the root is
    detected all the same (nothing is written, so it needs no identity): its
    `externalId` is null."""
    ident = read.external_id or None
    if read.input is None:
        return refusal_report(file=read.file, external_id=ident, error=read.error)
    try:
        detection = detect(read.input, people_by_name=names)
    except Refused as exc:
        return refusal_report(file=read.file, external_id=ident, error=str(exc))
    modified = read.input.modified
    return detection_report(
        detection,
        file=read.file,
        external_id=ident,
        file_date=modified.date() if modified else None,
    )


def _summary(result: dict[str, Any]) -> Iterator[str]:
    """A result as lines for people."""
    if result["error"]:
        yield f"{result['file']}: refused — {result['error']}"
        return
    yield f"{result['file']} — {result['title']}"
    for fact in result["facts"]:
        span = f"{iso(fact['validFrom'])[:10] if fact['validFrom'] else '?'} → "
        span += iso(fact["validTo"])[:10] if fact["validTo"] else "∞"
        yield f"  fact       {fact['key']}: {span}"
    for amb in result["ambiguities"]:
        options = " | ".join(c["label"] for c in amb["candidates"])
        yield f"  ambiguity  {amb['kind']} on {amb['factKey']}: {options}"
    dates = ", ".join(f"{d['text']!r} {d['type']} {d['value']}" for d in result["dates"])
    yield f"  dates      {len(result['dates'])}" + (f": {dates}" if dates else "")


class Command(BaseCommand):
    help = (
        f"What detection finds in {SUPPORTED_LABEL} files — facts, ambiguities and every "
        "temporal expression — read as `telha ingest` reads them; writes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+")
        parser.add_argument("--tenant", default=None, help="resolve people's names as ingest")
        parser.add_argument("--root", default=".", help="what externalIds are relative to")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        names: dict[str, str] = {}
        if opts["tenant"]:
            tenant = tenant_named(opts["tenant"])
            names = people_by_name(tenant)
        root = Path(opts["root"])
        if not root.is_dir():
            raise CommandError(f"no such folder: {opts['root']}", returncode=2)
        try:
            sum(1 for _ in iter_files(opts["paths"]))  # a missing path is bad usage, up front
        except FileNotFoundError as exc:
            raise CommandError(f"no such file or folder: {exc}", returncode=2) from None
        reads = files_read(opts["paths"], root=root, anywhere=True)
        if opts["json"]:
            self.stdout.write('{"results": [', ending="")
            for n, read in enumerate(reads):
                result = _result(read, names)
                self.stdout.write((", " if n else "") + json.dumps(result), ending="")
            self.stdout.write("]}")
            return
        for read in reads:
            for line in _summary(_result(read, names)):
                self.stdout.write(line)
