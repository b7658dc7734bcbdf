"""Detection quality on the labelled corpus, and ingest throughput by format (issue 21).

1. Quality: `bench/corpus.py` scores the detection worker (its readers and rules, no
   database) on every document of tests/fixtures/corpus/ — PDF (text layer and scans),
   DOCX, XLSX, HTML, Outlook .msg and the text formats, with negatives, tables and
   metadata-only authors — as precision and recall of the ambiguity kinds and of the
   candidate dates. Target: each ≥ 0.9.
2. Throughput: the same document bodies (bench_ingest.BODIES, about 2 KB each) written
   as Markdown, as PDF (fpdf2) and as DOCX (python-docx), N of each (BENCH_FORMATS_DOCS,
   default 100), ingested by `telha ingest --json` in this process, clarify on; documents
   per second for each format, and the milliseconds per document of reading and
   detecting alone (no database), reported beside one another (no target: the cost of
   reading a PDF or a Word file next to plain text).
3. A hostile PDF (issue 28 item 5): the upload request's check of 2.4 KB whose page tree
   repeats itself (4 million pages), and the job's refusal of the same tree declaring one
   page. Target: the request's check ≤ HOSTILE_REQUEST_MS (median).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import _support
from bench.bench_ingest import BODIES, FILLER

DOCS = int(os.environ.get("BENCH_FORMATS_DOCS", "100"))
TARGET = 0.9
HOSTILE_REQUEST_MS = 50  # median, the upload request's check of the self-repeating PDF
WARM_UP = 20


def _bodies(count: int) -> list[str]:
    return [f"{BODIES[n % len(BODIES)].format(n=n)}\n\n{FILLER * 4}" for n in range(count)]


def _write(folder: Path, fmt: str, bodies: list[str]) -> None:
    from tests.ingest.docgen import docx_file, pdf_file

    folder.mkdir(parents=True)
    for n, body in enumerate(bodies):
        if fmt == "md":
            data = body.encode()
        elif fmt == "pdf":
            data = pdf_file([body.replace("---", "- - -")])
        else:
            data = docx_file(body.split("\n\n"))
        (folder / f"doc-{n:05d}.{fmt}").write_bytes(data)


def _read_ms(folder: Path) -> float:
    """Milliseconds per document to read and detect (`detect`, no database): the part of
    ingesting that depends on the format."""
    from ingest.detection.build import FileInput, detect

    paths = sorted(folder.iterdir())
    started = time.perf_counter()
    for path in paths:
        detect(FileInput(name=path.name, data=path.read_bytes()))
    return round((time.perf_counter() - started) * 1000 / len(paths), 2)


def _throughput(root: Path) -> dict[str, Any]:
    from django.core.management import call_command

    figures: dict[str, Any] = {}
    bodies = _bodies(DOCS)
    _write(root / "warm-up", "md", _bodies(WARM_UP))  # first-use imports and caches
    with open(os.devnull, "w") as sink:
        call_command(
            "ingest",
            str(root / "warm-up"),
            "--tenant",
            "bench",
            "--root",
            str(root),
            stdout=sink,
            stderr=sink,
        )
    for fmt in ("md", "pdf", "docx"):
        folder = root / fmt
        _write(folder, fmt, bodies)
        out_path = root / f"{fmt}.json"
        read_ms = _read_ms(folder)
        started = time.perf_counter()
        with open(out_path, "w") as out, open(os.devnull, "w") as err:
            call_command(
                "ingest",
                str(folder),
                "--tenant",
                "bench",
                "--root",
                str(root),
                "--json",
                stdout=out,
                stderr=err,
            )
        seconds = time.perf_counter() - started
        summary = json.loads(out_path.read_text())
        figures[fmt] = {
            "docs": DOCS,
            "seconds": round(seconds, 2),
            "docs_per_second": round(DOCS / seconds, 1),
            "read_and_detect_ms_per_doc": read_ms,
            "errors": len(summary["errors"]),
            "opened": summary["opened"],
        }
    return figures


def _hostile_pdf(runs: int = 20) -> dict[str, Any]:
    """What a 2.4 KB PDF whose page tree repeats itself (4 million pages) costs: the
    upload request's check (`precheck`: milliseconds, the tree never walked) and the
    job's extraction of the same tree declaring one page (refused within the page-tree
    bound), best and median of `runs`. Before issue 28 item 5: 1-3 s of a web worker."""
    from statistics import median

    from ingest.formats import Refused, precheck
    from ingest.formats.pdf import extract
    from tests.ingest.docgen import self_repeating_pdf

    def timed(call: Any, data: bytes) -> list[float]:
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            with contextlib.suppress(Refused):
                call(data, "loop.pdf")
            times.append((time.perf_counter() - started) * 1000)
        return times

    request = timed(precheck, self_repeating_pdf(22))
    hidden = timed(precheck, self_repeating_pdf(22, declared=1))
    job = timed(extract, self_repeating_pdf(22, declared=1))
    return {
        "bytes": len(self_repeating_pdf(22)),
        "request_ms": {"best": round(min(request), 2), "median": round(median(request), 2)},
        "request_ms_hidden_size": {
            "best": round(min(hidden), 2),
            "median": round(median(hidden), 2),
        },
        "job_ms": {"best": round(min(job), 2), "median": round(median(job), 2)},
    }


def run() -> dict[str, Any]:
    from bench.corpus import score

    started = time.perf_counter()
    quality = score()
    _support.setup()
    with tempfile.TemporaryDirectory(prefix="telha-bench-formats-") as tmp:
        throughput = _throughput(Path(tmp))
    hostile = _hostile_pdf()
    ratios = [
        quality["kinds"]["precision"],
        quality["kinds"]["recall"],
        quality["candidate_dates"]["precision"],
        quality["candidate_dates"]["recall"],
    ]
    errors = sum(f["errors"] for f in throughput.values())
    worst_request = max(
        hostile["request_ms"]["median"], hostile["request_ms_hidden_size"]["median"]
    )
    passed = min(ratios) >= TARGET and not errors and worst_request <= HOSTILE_REQUEST_MS
    rates = ", ".join(
        f"{fmt} {f['docs_per_second']:.0f} ({f['read_and_detect_ms_per_doc']:.1f} ms to read)"
        for fmt, f in throughput.items()
    )
    summary = (
        f"{quality['documents']} labelled documents: kinds P {ratios[0]:.2f} R {ratios[1]:.2f}, "
        f"candidate dates P {ratios[2]:.2f} R {ratios[3]:.2f}; ingest docs/s {rates}; "
        f"a self-repeating {hostile['bytes']} B PDF: request {worst_request:.1f} ms, "
        f"job {hostile['job_ms']['median']:.0f} ms"
    )
    notes = [f"corpus by format: {quality['by_format']}"]
    notes += [f"miss {name}: {json.dumps(m)}" for name, m in quality["misses"].items()]
    if errors:
        notes.append(f"{errors} document(s) failed to ingest")
    return _support.result(
        name="formats",
        title="Detection precision/recall on the labelled corpus; ingest docs/s by format",
        figures={"quality": quality, "throughput": throughput, "hostile_pdf": hostile},
        target=(
            f"precision and recall of kinds and candidate dates ≥ {TARGET}; no errors; "
            f"the upload request's check of a self-repeating PDF ≤ {HOSTILE_REQUEST_MS} ms"
        ),
        passed=passed,
        summary=summary,
        seconds=time.perf_counter() - started,
        notes=notes,
    )


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
