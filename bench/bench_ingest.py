"""Ingestion throughput and peak memory of `telha ingest` over a folder (issues 7, 22).

A folder of generated documents (about 2 KB each, Markdown and plain text, in four
quarters: a relative date — "effective next quarter", "within 30 days of signature",
"from the start of next month" —, signature/countersignature dates, fixed dates, and
nothing to ask) is ingested through the `telha ingest` code path —
`call_command("ingest", FOLDER, "--tenant", "bench", "--root", PARENT, "--json")`, i.e.
`files_read` then `files_ingest` per batch of files, with clarify on (clarifications are
opened) — at 250 and at 1,500 documents, each folder new (fresh externalIds, no
deduplication):

- in a subprocess of its own (bench settings: production, DEBUG=0; the bench database):
  documents per second (wall time around the command) and the process's peak RSS
  (`ru_maxrss`); then the same folder again in a new subprocess — the re-scan, every
  file unchanged — documents per second and its summary (nothing opened);
- in this process under `tracemalloc`, after a warm-up ingest of WARM_UP documents (so
  first-use imports and caches are not counted): the peak of Python allocations during
  the command, overall and per quarter of the run (slower, so not used for the rate).

Output goes to /dev/null (a captured StringIO would itself grow with the folder). Target:
≥ 200 documents/s at 1,500 documents and ≥ 1,000 documents/s for the re-scan (issue 22);
peak memory stays flat as the folder grows — 1,500 vs 250 documents: tracemalloc peak
within +25 % and RSS within +10 % — and every document ingested without error.

Knobs: BENCH_INGEST_SIZES ("250,1500").
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench import _support

SIZES = [int(s) for s in os.environ.get("BENCH_INGEST_SIZES", "250,1500").split(",")]
RATE_TARGET = 200  # documents/s at the largest size, whole process (issue 22)
RESCAN_TARGET = 1000  # documents/s re-scanning the same, unchanged folder
DOC_BYTES = 2048
TRACEMALLOC_LIMIT = 1.25
WARM_UP = 20
RSS_LIMIT = 1.10

FILLER = (
    "The supplier shall perform the services with reasonable skill and care, in "
    "accordance with good industry practice and the service levels in Schedule 2. "
    "Each party shall keep the other's confidential information secret and use it only "
    "for the purposes agreed between them. Neither party limits its liability for death "
    "or personal injury caused by its negligence, or for fraud. "
)

# Four quarters of the folder (issue 22): a relative date, signature/countersignature
# dates, fixed dates, nothing to ask. Within a quarter the bodies take turns.
QUARTERS: list[list[str]] = [
    [  # relative phrase → relative_date
        "Order form {n}. Signed on 2 March 2026. The services are effective next quarter.",
        "Payment terms {n}: invoices are payable within 30 days of signature. Executed on "
        "1 July 2026.",
        "---\ntitle: Non-disclosure agreement {n}\nauthor: alice@bench.test\ndate: 2026-03-03\n"
        "acl: [group:legal]\n---\nThe obligations apply from the start of next month.",
    ],
    [  # signature vs countersignature → conflicting_dates
        "This Master Services Agreement no. {n} was signed by Alice Author on 12 June 2026 "
        "and countersigned by Sam Steward on\n19 June 2026.",
    ],
    [  # fixed dates: a dated fact, nothing to ask
        "Agreement {n}. The agreement is effective 1 July 2026.",
        "Lease {n}. The lease is effective 1 March 2027.",
    ],
    [  # nothing to ask
        "Notes {n}. The parties met and agreed to keep talking.",
    ],
]

BODIES = [body for quarter in QUARTERS for body in quarter]  # bench_formats reads them


def generate(folder: Path, count: int, seed: int = 7) -> int:
    """`count` documents of about DOC_BYTES each; returns the total size."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    total = 0
    for n in range(count):
        bodies = QUARTERS[n % len(QUARTERS)]
        body = bodies[(n // len(QUARTERS)) % len(bodies)].format(n=n)
        paragraphs = [body]
        while sum(len(p) + 2 for p in paragraphs) < DOC_BYTES:
            words = FILLER.split()
            rng.shuffle(words)
            paragraphs.append(" ".join(words))
        text = "\n\n".join(paragraphs)[:DOC_BYTES] + "\n"
        suffix = ".md" if n % 2 == 0 else ".txt"
        path = folder / f"sub{n % 10}" / f"doc-{n:05d}{suffix}"
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        total += len(text.encode())
    return total


def _summary(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    return {k: data[k] for k in ("files", "facts", "ambiguities", "opened", "deduplicated")} | {
        "errors": len(data["errors"])
    }


CHILD = r"""
import json, os, resource, sys, time
import django
django.setup()
from django.core.management import call_command
folder, out_path = sys.argv[1], sys.argv[2]
with open(out_path, "w") as out, open(os.devnull, "w") as err:
    started = time.perf_counter()
    call_command("ingest", folder, "--tenant", "bench", "--root", os.path.dirname(folder),
                 "--json", stdout=out, stderr=err)
    seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds,
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def _subprocess_run(folder: Path, out_path: Path) -> dict[str, Any]:
    env = {
        **os.environ,
        "DATABASE_URL": _support.DATABASE_URL,
        "DJANGO_SETTINGS_MODULE": _support.SETTINGS,
        "PYTHONPATH": str(_support.REPO),
    }
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(folder), str(out_path)],
        cwd=_support.REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"ingest subprocess failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _tracemalloc_run(folder: Path, out_path: Path, size: int = 0) -> dict[str, Any]:
    """The command under tracemalloc: its overall peak, and the peak of each quarter of
    the run (the traced peak is read and reset every size/4 files), which shows whether
    memory keeps growing through the run or only fills bounded caches early on."""
    from unittest import mock

    from django.core.management import call_command
    from django.db import reset_queries

    import ingest.management.commands.ingest as command

    real = command.files_ingest
    quarter = max(1, size // 4)
    quarters: list[int] = []
    done = 0

    def counted(**kwargs: Any) -> Any:
        nonlocal done
        outcomes = real(**kwargs)
        for _ in outcomes:
            done += 1
            if size and done % quarter == 0:
                quarters.append(tracemalloc.get_traced_memory()[1])
                tracemalloc.reset_peak()
        return outcomes

    reset_queries()
    tracemalloc.start()
    try:
        started = time.perf_counter()
        with (
            mock.patch.object(command, "files_ingest", counted),
            open(out_path, "w") as out,
            open(os.devnull, "w") as err,
        ):
            call_command(
                "ingest",
                str(folder),
                "--tenant",
                "bench",
                "--root",
                str(folder.parent),
                "--json",
                stdout=out,
                stderr=err,
            )
        seconds = time.perf_counter() - started
        _, rest = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return {"seconds": seconds, "peak_bytes": max([rest, *quarters]), "quarters": quarters}


def run() -> dict[str, Any]:
    started = time.perf_counter()
    _support.setup()
    figures: dict[str, Any] = {"document_bytes": DOC_BYTES, "sizes": SIZES, "runs": {}}
    with tempfile.TemporaryDirectory(prefix="telha-bench-ingest-") as tmp:
        root = Path(tmp)
        generate(root / "warm-up", WARM_UP)
        _tracemalloc_run(root / "warm-up", root / "warm-up.json")
        for mode in ("subprocess", "tracemalloc"):
            for size in SIZES:
                entry: dict[str, Any] = figures["runs"].setdefault(str(size), {})
                folder = root / f"{mode}-{size}"
                total = generate(folder, size)
                out_path = root / f"{mode}-{size}.json"
                if mode == "subprocess":
                    measured = _subprocess_run(folder, out_path)
                    entry["docs_per_second"] = round(size / measured["seconds"], 1)
                    entry["seconds"] = round(measured["seconds"], 2)
                    entry["maxrss_mb"] = round(measured["maxrss_kb"] / 1024, 1)
                    entry["mean_document_bytes"] = round(total / size)
                    rescan_path = root / f"{mode}-{size}-rescan.json"
                    again = _subprocess_run(folder, rescan_path)
                    entry["rescan_docs_per_second"] = round(size / again["seconds"], 1)
                    entry["rescan_summary"] = _summary(rescan_path)
                else:
                    measured = _tracemalloc_run(folder, out_path, size)
                    entry["tracemalloc_peak_mb"] = round(measured["peak_bytes"] / 2**20, 2)
                    entry["tracemalloc_peak_by_quarter_mb"] = [
                        round(q / 2**20, 2) for q in measured["quarters"]
                    ]
                    entry["tracemalloc_seconds"] = round(measured["seconds"], 2)
                entry[f"{mode}_summary"] = _summary(out_path)
    small, large = figures["runs"][str(min(SIZES))], figures["runs"][str(max(SIZES))]
    heap_ratio = large["tracemalloc_peak_mb"] / max(small["tracemalloc_peak_mb"], 1e-9)
    rss_ratio = large["maxrss_mb"] / max(small["maxrss_mb"], 1e-9)
    figures["tracemalloc_peak_ratio"] = round(heap_ratio, 3)
    figures["rss_ratio"] = round(rss_ratio, 3)
    errors = sum(
        e[f"{m}_summary"]["errors"]
        for e in figures["runs"].values()
        for m in ("subprocess", "tracemalloc")
    )
    complete = all(
        e[f"{m}_summary"]["files"] == int(size)
        for size, e in figures["runs"].items()
        for m in ("subprocess", "tracemalloc")
    )
    rescan_clean = all(
        e["rescan_summary"]["opened"] == 0 and e["rescan_summary"]["files"] == int(size)
        for size, e in figures["runs"].items()
    )
    fast = (
        large["docs_per_second"] >= RATE_TARGET and large["rescan_docs_per_second"] >= RESCAN_TARGET
    )
    passed = (
        heap_ratio <= TRACEMALLOC_LIMIT
        and rss_ratio <= RSS_LIMIT
        and not errors
        and complete
        and rescan_clean
        and fast
    )
    summary = (
        f"{large['docs_per_second']:.0f} docs/s at {max(SIZES)} docs "
        f"({small['docs_per_second']:.0f} at {min(SIZES)}); re-scan "
        f"{large['rescan_docs_per_second']:.0f} docs/s; peak heap "
        f"{small['tracemalloc_peak_mb']:.1f} → {large['tracemalloc_peak_mb']:.1f} MB "
        f"(x{heap_ratio:.2f}), RSS {small['maxrss_mb']:.0f} → {large['maxrss_mb']:.0f} MB "
        f"(x{rss_ratio:.2f})"
    )
    notes = [
        f"tracemalloc peak per quarter of the run: {min(SIZES)} docs "
        f"{small['tracemalloc_peak_by_quarter_mb']} MB, {max(SIZES)} docs "
        f"{large['tracemalloc_peak_by_quarter_mb']} MB"
    ]
    if errors:
        notes.append(f"{errors} document(s) failed to ingest")
    kinds = large["subprocess_summary"]["ambiguities"]
    notes.append(
        f"{max(SIZES)} docs: {large['subprocess_summary']['facts']} facts, ambiguities "
        + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
        + f", {large['subprocess_summary']['opened']} clarifications opened"
    )
    return _support.result(
        name="ingest",
        title="telha ingest: documents per second, re-scan and peak memory, 250 vs 1,500 documents",
        figures=figures,
        target=(
            f"≥ {RATE_TARGET} docs/s at {max(SIZES)} docs, re-scan ≥ {RESCAN_TARGET} docs/s "
            f"with nothing opened; peak memory flat: {max(SIZES)} vs {min(SIZES)} docs "
            f"tracemalloc peak ≤ x{TRACEMALLOC_LIMIT}, RSS ≤ x{RSS_LIMIT}; no errors"
        ),
        passed=passed,
        summary=summary,
        seconds=time.perf_counter() - started,
        notes=notes,
    )


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
