"""`telha ingest PATH... --tenant SLUG`: detect ambiguity in files and folders and apply
the submissions (the same code as the `ingest:document` job worker)."""

import json
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from telha.graph.services import acl_principal_valid
from telha.ingest.detection.build import MAX_FILE_BYTES, SUPPORTED, FileInput
from telha.ingest.documents import ingest_file, people_by_name
from telha.tenancy.models import Tenant


def iter_files(paths: list[str]) -> Any:
    """Supported files under the given paths, streamed in a stable order."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                if child.is_file() and child.suffix.lower() in SUPPORTED:
                    yield child, child.relative_to(path.parent)
        elif path.is_file():
            yield path, Path(path.name)
        else:
            raise CommandError(f"no such file or folder: {raw}", returncode=2)


class Command(BaseCommand):
    help = "Detect temporal ambiguity in .txt/.md/.csv/.eml files and apply them."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+")
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--source-system", default="files")
        parser.add_argument("--acl", default="", help="comma list of principals (default: "
                            "the front matter's acl, else none)")
        parser.add_argument("--restriction", default=None)
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        tenant = Tenant.objects.filter(slug=opts["tenant"]).first()
        if tenant is None:
            raise CommandError(f"NOT_FOUND: no tenant {opts['tenant']!r}", returncode=1)
        acl = [p.strip() for p in opts["acl"].split(",") if p.strip()] or None
        if acl and not all(acl_principal_valid(p) for p in acl):
            raise CommandError("--acl takes group:NAME, email:ADDR or aad:OID", returncode=2)
        files = list(iter_files(opts["paths"]))
        names = people_by_name(tenant)
        clarify = bool(settings.CLARIFY["ENABLED"])
        outcomes = []
        for i, (path, relative) in enumerate(files, start=1):
            if not opts["json"]:
                self._progress(i, len(files), str(relative))
            if path.stat().st_size > MAX_FILE_BYTES:
                from telha.ingest.documents import IngestOutcome

                outcomes.append(IngestOutcome(file=str(relative), error="file over 10 MB"))
                continue
            outcomes.append(ingest_file(
                tenant=tenant,
                file=FileInput(name=str(relative), data=path.read_bytes(),
                               modified=datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)),
                system=opts["source_system"], clarify=clarify, acl=acl,
                restriction=opts["restriction"], names=names,
            ))
        if not opts["json"] and files:
            sys.stderr.write("\n")
        by_kind: Counter = Counter()
        for o in outcomes:
            by_kind.update(o.ambiguities)
        summary = {
            "files": len(outcomes),
            "facts": sum(o.facts for o in outcomes),
            "ambiguities": dict(by_kind),
            "opened": sum(o.opened for o in outcomes),
            "deduplicated": sum(o.deduplicated for o in outcomes),
            "errors": [{"file": o.file, "error": o.error} for o in outcomes if o.error],
            "results": [o.as_dict() for o in outcomes],
        }
        if opts["json"]:
            self.stdout.write(json.dumps(summary))
        else:
            self._table(summary)
        if summary["errors"] and len(summary["errors"]) == len(outcomes):
            raise CommandError("INGEST_FAILED: no file could be ingested", returncode=1)

    def _progress(self, done: int, total: int, name: str) -> None:
        width = 30
        filled = int(width * done / max(1, total))
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {name[:40]:40}")
        sys.stderr.flush()

    def _table(self, summary: dict[str, Any]) -> None:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(summary["ambiguities"].items())) or "none"
        rows = [
            ("files", summary["files"]),
            ("facts", summary["facts"]),
            ("ambiguities", kinds),
            ("clarifications opened", summary["opened"]),
            ("deduplicated", summary["deduplicated"]),
            ("errors", len(summary["errors"])),
        ]
        for label, value in rows:
            self.stdout.write(f"{label:24} {value}")
        for err in summary["errors"]:
            self.stdout.write(f"  ! {err['file']}: {err['error']}")
