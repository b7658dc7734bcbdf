"""`telha ingest PATH... --tenant SLUG [--root DIR]`: detect ambiguity in files and
folders and apply the submissions (the same detection and apply as the `ingest:document`
job worker), in batches of BATCH files (`ingest.folder`): each batch's submissions
are applied together, each document still all-or-nothing, and an unchanged file is
recognised by its fingerprint before anything is detected or written. A file's source
is its path under `--root` (default: the current folder), however it was named
(`ingest.folder.source_external_id`); a file outside the root is refused.

Streams, so peak memory stays flat however large the folder: the paths are walked twice
(once to count them for the progress bar, once to ingest), directory by directory,
never held as a list; a batch of files is read, ingested and dropped; the summary is
running totals; with `--json` each file's result is written out as soon as its batch is
done. A progress bar (rich) is drawn on stderr when stdout is a terminal and `--json` is
not given. Each
submission's validation leaves reference cycles behind (DRF serializer trees holding the
validated data, about 15 KB a document) that only a full collection frees, and Python
runs one only when the pending objects reach a quarter of the long-lived heap — so the
command collects every `GC_EVERY` files. What was allocated before the run (Django, the
apps, the directory) is frozen first (`gc.freeze()`), so a full collection walks only
the run's own objects: unfrozen, one cost 100+ ms (the whole heap), more than
applying the 50 files it follows."""

import gc
import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper

from common.codes import JobReason
from graph.services import acl_principal_valid
from ingest.documents import IngestOutcome, people_by_name
from ingest.folder import FileRead, FolderOptions, files_ingest, files_read, iter_files
from ingest.formats import SUPPORTED_LABEL
from tenancy.commands import tenant_named
from tenancy.models import Tenant

GC_EVERY = 100  # files detected between full collections (of the run's objects only)
BATCH = 50  # files applied together


@dataclass
class Totals:
    """Running totals of a run: what the summary table and `--json` report."""

    files: int = 0
    facts: int = 0
    ambiguities: Counter = field(default_factory=Counter)
    opened: int = 0
    deduplicated: int = 0
    errors: list[dict[str, str]] = field(default_factory=list)

    def add(self, outcome: IngestOutcome) -> None:
        self.files += 1
        self.facts += outcome.facts
        self.ambiguities.update(outcome.ambiguities)
        self.opened += outcome.opened
        self.deduplicated += outcome.deduplicated
        if outcome.error:
            self.errors.append({"file": outcome.file, "error": outcome.error})

    def as_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "facts": self.facts,
            "ambiguities": dict(self.ambiguities),
            "opened": self.opened,
            "deduplicated": self.deduplicated,
            "errors": self.errors,
        }


class JsonResults:
    """Writes `{"results": [...], "files": …, …}` incrementally: one result at a time,
    the totals at the end (one JSON document, nothing held back in memory)."""

    def __init__(self, out: OutputWrapper) -> None:
        self.out = out
        self.count = 0
        self.out.write('{"results": [', ending="")

    def add(self, outcome: IngestOutcome) -> None:
        self.out.write((", " if self.count else "") + json.dumps(outcome.as_dict()), ending="")
        self.count += 1

    def close(self, totals: Totals) -> None:
        rest = json.dumps(totals.as_dict())[1:]  # the totals' keys, after the results
        self.out.write("], " + rest)
        self.out.flush()


class ProgressBar:
    """A rich progress bar on stderr: files done of the total, documents per second,
    clarifications opened and errors so far. Draws nothing when not `enabled`."""

    def __init__(self, total: int, *, enabled: bool, file: Any) -> None:
        self.total = total
        self.file = file
        self.enabled = enabled and total > 0
        self.started = time.perf_counter()
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> "ProgressBar":
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            self._progress = Progress(
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn(
                    "files · {task.fields[rate]} docs/s · {task.fields[opened]} "
                    "clarifications opened · {task.fields[errors]} errors"
                ),
                console=Console(file=self.file, force_terminal=True),
                transient=False,
            )
            self._progress.start()
            self._task = self._progress.add_task(
                "ingest", total=self.total, rate="0", opened=0, errors=0
            )
        return self

    def update(self, totals: "Totals") -> None:
        if self._progress is None:
            return
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        self._progress.update(
            self._task,
            completed=totals.files,
            rate=f"{totals.files / elapsed:.0f}",
            opened=totals.opened,
            errors=len(totals.errors),
        )

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()


class Command(BaseCommand):
    help = (
        f"Detect temporal ambiguity in {SUPPORTED_LABEL} files and apply them. A file that "
        "is refused (unsupported, not what its name says, encrypted, corrupt, over a "
        "limit, outside the root) is reported with its reason; the rest are still "
        "ingested. A file's source identity is its path under --root."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+")
        parser.add_argument("--tenant", required=True)
        parser.add_argument(
            "--root",
            default=None,
            help="a file's source identity is its path under this folder (default: the "
            "current folder); files outside it are refused",
        )
        parser.add_argument("--source-system", default="files")
        parser.add_argument(
            "--acl",
            default="",
            help="comma list of principals (default: the front matter's acl, else none)",
        )
        parser.add_argument("--restriction", default=None)
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        tenant = tenant_named(opts["tenant"])
        acl = [p.strip() for p in opts["acl"].split(",") if p.strip()] or None
        if acl and not all(acl_principal_valid(p) for p in acl):
            raise CommandError("--acl takes group:NAME, email:ADDR or aad:OID", returncode=2)
        root = Path(opts["root"] or os.getcwd())
        if not root.is_dir():
            raise CommandError(f"--root: no such folder: {root}", returncode=2)
        # The first pass counts (and finds a missing path before anything is written).
        try:
            total = sum(1 for _ in iter_files(opts["paths"]))
        except FileNotFoundError as exc:
            raise CommandError(f"no such file or folder: {exc}", returncode=2) from None
        options = FolderOptions(
            system=opts["source_system"],
            clarify=bool(settings.CLARIFY["ENABLED"]),
            acl=acl,
            restriction=opts["restriction"],
            names=people_by_name(tenant),
        )
        totals = Totals()
        self._since_gc = 0
        stream = JsonResults(self.stdout) if opts["json"] else None
        tty = stream is None and self.stdout.isatty()
        gc.freeze()  # what exists now outlives the run: not walked by its collections
        try:
            with ProgressBar(total, enabled=tty, file=self.stderr._out) as bar:
                for outcomes in self._batches(
                    tenant, files_read(opts["paths"], root=root), options
                ):
                    for outcome in outcomes:
                        totals.add(outcome)
                        if stream is not None:
                            stream.add(outcome)
                    bar.update(totals)
        finally:
            gc.unfreeze()
        if stream is not None:
            stream.close(totals)
        else:
            self._table(totals.as_dict())
        if totals.errors and len(totals.errors) == totals.files:
            raise CommandError(
                f"{JobReason.INGEST_FAILED}: no file could be ingested", returncode=1
            )

    def _batches(
        self, tenant: Tenant, reads: Iterator[FileRead], options: FolderOptions
    ) -> Iterator[list[IngestOutcome]]:
        """The outcomes of each batch of BATCH files, in path order (a file refused before
        it is read — outside the root, over the size limit — is reported as such)."""
        digest = options.digest()
        batch: list[FileRead] = []
        for read in reads:
            batch.append(read)
            if len(batch) >= BATCH:
                yield self._ingest_batch(tenant, batch, options, digest)
                batch = []
        if batch:
            yield self._ingest_batch(tenant, batch, options, digest)

    def _ingest_batch(
        self, tenant: Tenant, batch: list[FileRead], options: FolderOptions, digest: bytes
    ) -> list[IngestOutcome]:
        """Each file's outcome, named as the command line named it."""
        files = [read.input for read in batch if read.input is not None]
        done = iter(files_ingest(tenant=tenant, files=files, options=options, digest=digest))
        outcomes = []
        for read in batch:
            if read.input is None:
                outcome = IngestOutcome(file=read.file, external_id=read.external_id)
                outcome.error = read.error
            else:
                outcome = next(done)
                outcome.file = read.file
            outcomes.append(outcome)
        self._since_gc += len(batch)
        if self._since_gc >= GC_EVERY:
            gc.collect()
            self._since_gc = 0
        return outcomes

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
