"""Run every benchmark in bench/ (`make bench`).

Each `bench/bench_*.py` exposes `run() -> dict` (see `_support.result`); they are
discovered by file name, run in name order in one process (sharing one fresh database),
printed as a table and written to var/bench-results.json.

    .venv/bin/python bench/run_all.py              # all of them
    .venv/bin/python bench/run_all.py asof answers # only bench_asof.py and bench_answers.py

Exit status 1 if a benchmark errored or missed its target.
"""

from __future__ import annotations

import importlib
import json
import os
import platform
import signal
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import _support  # noqa: E402

RESULTS = REPO / "var" / "bench-results.json"


def discover(selected: list[str]) -> list[str]:
    names = sorted(p.stem for p in (REPO / "bench").glob("bench_*.py"))
    if selected:
        wanted = {s.removeprefix("bench_").removesuffix(".py") for s in selected}
        unknown = wanted - {n.removeprefix("bench_") for n in names}
        if unknown:
            raise SystemExit(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
        names = [n for n in names if n.removeprefix("bench_") in wanted]
    return names


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def run_one(module_name: str) -> dict[str, Any]:
    started = time.perf_counter()
    load_before = _load()
    try:
        module = importlib.import_module(f"bench.{module_name}")
        outcome = module.run()
    except Exception as exc:
        traceback.print_exc()
        outcome = _support.result(
            name=module_name.removeprefix("bench_"),
            title=module_name,
            figures={},
            target=None,
            passed=False,
            summary=f"ERROR: {exc!r}"[:300],
            seconds=time.perf_counter() - started,
        )
        outcome["error"] = traceback.format_exc()
    finally:
        _support.stop_all_servers()
    outcome.setdefault("seconds", round(time.perf_counter() - started, 1))
    # Everything here shares the machine (and PostgreSQL) with whatever else runs on it.
    outcome["loadavg_1m"] = {"before": load_before, "after": _load()}
    if max(load_before, _load()) > (os.cpu_count() or 1):
        outcome.setdefault("notes", []).append(
            f"machine busy (1-min load {load_before} → {_load()} on {os.cpu_count()} CPUs): "
            "absolute figures are unreliable; ratios measured in the same run less so"
        )
    return outcome


def verdict(outcome: dict[str, Any]) -> str:
    if outcome.get("error"):
        return "ERROR"
    return {True: "PASS", False: "FAIL", None: "—"}[outcome.get("passed")]


def print_table(outcomes: list[dict[str, Any]]) -> None:
    rows = [("benchmark", "result", "target", "verdict", "time")]
    rows += [
        (
            o["name"],
            o["summary"],
            o.get("target") or "(report only)",
            verdict(o),
            f"{o.get('seconds', 0):.0f}s",
        )
        for o in outcomes
    ]
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    line = "+".join("-" * (w + 2) for w in widths)
    print()
    for n, row in enumerate(rows):
        print(" | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)))
        if n == 0:
            print(line)
    for o in outcomes:
        for note in o.get("notes", []):
            print(f"  [{o['name']}] {note}")


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    names = discover(argv)
    started = time.perf_counter()
    outcomes: list[dict[str, Any]] = []
    try:
        for name in names:
            print(f"== {name}", flush=True)
            outcome = run_one(name)
            line = f"   {verdict(outcome)}: {outcome['summary']} ({outcome['seconds']}s)"
            print(line, flush=True)
            outcomes.append(outcome)
    finally:
        _support.stop_all_servers()
    total = time.perf_counter() - started
    print_table(outcomes)
    print(f"\ntotal {total:.0f}s")
    report = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "database": _support.DATABASE_URL,
        "total_seconds": round(total, 1),
        "results": outcomes,
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"wrote {RESULTS.relative_to(REPO)}")
    return 0 if all(verdict(o) in ("PASS", "—") for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
