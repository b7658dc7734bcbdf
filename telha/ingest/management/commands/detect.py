"""`telha detect PATH... [--tenant SLUG] [--root DIR] [--json]`: what detection finds in
files and folders — facts, ambiguities and every temporal expression — read exactly as
`telha ingest` reads them (the same formats, limits and refusals), writing nothing.

With `--json`, CONTRACT §2.2's `{"results": [...]}`, one result written as soon as its
file is read; without, a readable summary per file. `--tenant` resolves people's names
as ingest does (without it, no directory is read); `--root` is what each file's
`externalId` is relative to (default: the current folder)."""

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from telha.common.times import iso
from telha.ingest.detection.build import MAX_FILE_BYTES, FileInput, detect
from telha.ingest.detection.report import detection_report, refusal_report
from telha.ingest.documents import people_by_name
from telha.ingest.formats import SUPPORTED_LABEL, Refused
from telha.tenancy.models import Tenant

from .ingest import iter_files


def external_id(path: Path, root: Path) -> str:
    """A file's source identity: its path under `root`, whatever path named it; a file
    outside `root` keeps the path it was named by.

    LOCAL STAND-IN: `telha ingest` is getting one such function in
    `telha.ingest.folder`; this should call it once that lands."""
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix()
    except ValueError:
        return path.as_posix()


def _read(path: Path, name: str, names: dict[str, str], root: Path) -> dict[str, Any]:
    """One file's §2.2 result (a refusal is a result too)."""
    ident = external_id(path, root)
    stat = path.stat()
    if stat.st_size > MAX_FILE_BYTES:
        return refusal_report(file=name, external_id=ident, error="too large: file over 10 MB")
    modified = datetime.fromtimestamp(stat.st_mtime, tz=UTC)
    try:
        detection = detect(FileInput(ident, path.read_bytes(), modified), people_by_name=names)
    except Refused as exc:
        return refusal_report(file=name, external_id=ident, error=str(exc))
    return detection_report(detection, file=name, external_id=ident, file_date=modified.date())


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
            tenant = Tenant.objects.filter(slug=opts["tenant"]).first()
            if tenant is None:
                raise CommandError(f"NOT_FOUND: no tenant {opts['tenant']!r}", returncode=1)
            names = people_by_name(tenant)
        root = Path(opts["root"])
        if not root.is_dir():
            raise CommandError(f"no such folder: {opts['root']}", returncode=2)
        sum(1 for _ in iter_files(opts["paths"]))  # a missing path is bad usage, up front
        files = iter_files(opts["paths"])
        if opts["json"]:
            self.stdout.write('{"results": [', ending="")
            for n, (path, _) in enumerate(files):
                result = _read(path, path.as_posix(), names, root)
                self.stdout.write((", " if n else "") + json.dumps(result), ending="")
            self.stdout.write("]}")
            return
        for path, _ in files:
            for line in _summary(_read(path, path.as_posix(), names, root)):
                self.stdout.write(line)
