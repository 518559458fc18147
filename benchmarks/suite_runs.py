"""The test suite run again and again, quiet or beside busy processes: does it pass every time, and how long does it take?

    python benchmarks/suite_runs.py --runs 20 --busy 2 tests/hostile     # the hostile and signal suites under load
    python benchmarks/suite_runs.py --runs 3 --out benchmarks/results/suite_runs-full.json    # the README's test command
    python benchmarks/suite_runs.py --runs 3 -m "not slow" --out benchmarks/results/suite_runs-not-slow.json  # the fast loop
    python benchmarks/suite_runs.py --quick                                # one short run, no xdist (a test runs it)
    python benchmarks/suite_runs.py --quick --busy 1                       # the same beside one busy process

Each run is ``python -m pytest -q -n 2 -p no:cacheprovider [PATHS]`` (``--workers``) in a fresh process, with
``--busy`` processes spinning beside it (``while True`` loops, started before the first run and
stopped after the last: the "two busy processes" of a loaded machine). A run's exit code, its
passed / failed / error counts (from pytest's summary line) and its wall seconds are recorded;
the summary says how many runs passed in a row and the median, least and most seconds. The JSON
is written after every run (to OUT.partial, moved to OUT when the series ends or is stopped: the
suite checks the pages of benchmarks/results/), so a series stopped early keeps the runs it finished. Writes benchmarks/results/suite_runs[-quick].json (``--out`` to name another).
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _common import RESULTS_DIR, machine_info, make_console, start_busy, stop_busy, utc_now, write_json  # noqa: E402

QUICK_PATHS = ["tests/profile/test_busy_clock.py"]
#: pytest's last line: "12 passed, 1 failed, 2 errors in 3.4s" (any subset, any order)
COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|deselected)")


def counts(tail: str) -> dict[str, int]:
    """The counts of pytest's summary line (the last line that has any)."""
    for line in reversed(tail.strip().splitlines()):
        found = COUNT.findall(line)
        if found:
            out: dict[str, int] = {}
            for n, what in found:
                out["errors" if what.startswith("error") else what] = int(n)
            return out
    return {}


def pytest_args(paths: list[str], workers: int, marker: str | None) -> list[str]:
    """What follows ``python -m pytest`` in one run."""
    return ["-q", "-n", str(workers), "-p", "no:cacheprovider", *(["-m", marker] if marker else []), *paths]


def one_run(paths: list[str], workers: int, timeout: float, marker: str | None = None) -> dict:
    cmd = [sys.executable, "-m", "pytest", *pytest_args(paths, workers, marker)]
    t0 = time.perf_counter()
    # its own process group: stopping this script (or a timeout) stops pytest's workers and what they started
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    code: int | None = None
    try:
        out, _ = p.communicate(timeout=timeout)
        code = p.returncode
    except subprocess.TimeoutExpired:
        code, out = 124, f"timed out after {timeout:g} s"
    finally:
        if p.poll() is None:      # timed out, or this script was stopped
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
    wall = time.perf_counter() - t0
    got = counts(out)
    failed = [line for line in out.splitlines() if line.startswith(("FAILED ", "ERROR "))][:20]
    return {"exit_code": code, "seconds": round(wall, 2), **got, "failures": failed}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", help="test paths (default: the whole suite, as the README runs it)")
    ap.add_argument("--runs", type=int, default=None, help="how many runs (default 3; quick 1)")
    ap.add_argument("--busy", type=int, default=0, help="busy processes beside the runs (default 0)")
    ap.add_argument("--workers", type=int, default=None,
                    help="pytest-xdist workers (default 2, as the README; 0: in pytest's own process, as --quick)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds one run may take (default 3600)")
    ap.add_argument("-m", "--marker", default=None, help="pytest -m EXPR: e.g. 'not slow' (the fast loop)")
    ap.add_argument("--quick", action="store_true", help=f"one run of {' '.join(QUICK_PATHS)} with -n 0")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    paths = args.paths or (QUICK_PATHS if args.quick else [])
    runs = args.runs or (1 if args.quick else 3)
    busy = args.busy
    # --quick checks this script's machinery, not xdist: -n 0 spares a worker process that would
    # import the suite's conftest a second time (2 s of CPU)
    args.workers = args.workers if args.workers is not None else 0 if args.quick else 2
    if runs < 1 or busy < 0 or args.workers < 0:
        ap.error("--runs must be >= 1, --workers and --busy >= 0")
    out = args.out or RESULTS_DIR / f"suite_runs{'-quick' if args.quick else ''}.json"
    # the runs so far go to OUT.partial, moved to OUT when the series ends or is stopped: a JSON
    # appearing in benchmarks/results/ mid-series would fail the suite's own check of the pages
    partial = out.with_name(out.name + ".partial")
    started, machine = utc_now(), machine_info()
    console = make_console()
    # SIGTERM (kill, a CI's stop) ends the series like Ctrl-C: the spinners and the run in flight are stopped
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    spinners = start_busy(busy)
    rows: list[dict] = []

    def summary() -> dict:
        """The document so far (written after every run: a long series stopped early keeps its runs)."""
        secs = [r["seconds"] for r in rows]
        ok = [r["exit_code"] == 0 and not r.get("failed") and not r.get("errors") for r in rows]
        streak = best = 0
        for good in ok:
            streak = streak + 1 if good else 0
            best = max(best, streak)
        return {"script": "suite_runs", "started": started, "machine": machine,
                "argv": sys.argv[1:] if argv is None else argv,
                "command": shlex.join(["python", "-m", "pytest", *pytest_args(paths, args.workers, args.marker)]),
                "marker": args.marker,
                "paths": paths or ["(the whole suite)"], "busy_processes": busy, "runs_asked": runs,
                "runs": len(rows), "passed_runs": sum(ok), "longest_passing_streak": best,
                "all_passed": bool(rows) and all(ok), "seconds_median": statistics.median(secs),
                "seconds_min": min(secs), "seconds_max": max(secs), "results": rows, "cpu_count": os.cpu_count()}

    try:
        for i in range(runs):
            row = one_run(paths, args.workers, args.timeout, args.marker)
            rows.append(row)
            console.print(f"run {i + 1}/{runs}: exit {row['exit_code']}, {row.get('passed', 0)} passed, "
                          f"{row.get('failed', 0)} failed, {row.get('errors', 0)} errors, {row['seconds']:.1f} s")
            for line in row["failures"]:
                console.print(f"  {line}", markup=False, highlight=False)
            write_json(summary(), partial)
    finally:
        stop_busy(spinners)
        if partial.exists():               # the runs finished, or those before a stop
            os.replace(partial, out)
        signal.signal(signal.SIGTERM, previous)
    doc = summary()
    console.print(f"{doc['passed_runs']} of {len(rows)} runs passed ({doc['longest_passing_streak']} in a row) beside "
                  f"{busy} busy process(es); median {doc['seconds_median']:.1f} s (least {doc['seconds_min']:.1f}, "
                  f"most {doc['seconds_max']:.1f}); wrote {out}")
    return 0 if doc["all_passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
