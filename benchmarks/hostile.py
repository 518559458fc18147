"""Hostile-input summary: every case of tests/hostile/cases_*.py run as a user would, counted.

    python benchmarks/hostile.py            # all cases (a few minutes)
    python benchmarks/hostile.py --quick    # the first two cases of each area

Prints, per area and in total: cases tried, tracebacks, wrong exit codes, bad messages (not one
``hetcc: error:`` line naming the culprit), files lost, files written or read outside; every
problem is listed under the table. Writes benchmarks/results/hostile[-quick].json. Exit 1 when a
problem was found. The judging rules are tests/hostile/harness.py's (the tests apply the same).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "hostile"))

from _common import RESULTS_DIR, machine_info, make_console, utc_now, write_json  # noqa: E402
from catalogue import all_cases  # noqa: E402
from harness import COUNTS, run_case  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the first two cases of each area")
    ap.add_argument("--area", action="append", help="only these areas (repeatable)")
    ap.add_argument("--out", type=Path, default=None, help="JSON path (default benchmarks/results/hostile[-quick].json)")
    args = ap.parse_args(argv)
    cases = all_cases()
    if args.area:
        cases = [c for c in cases if c.id.split("/")[0] in args.area]
    if args.quick:
        seen: dict[str, int] = defaultdict(int)
        keep = []
        for c in cases:
            area = c.id.split("/")[0]
            if seen[area] < 2:
                keep.append(c)
            seen[area] += 1
        cases = keep
    console = make_console()
    doc = {"script": "hostile", "started": utc_now(), "args": vars(args) | {"out": str(args.out)},
           "machine": machine_info(), "cases": []}
    t0 = time.perf_counter()
    for case in cases:
        with tempfile.TemporaryDirectory(prefix="hetcc-hostile-") as tmp:
            try:
                outcome, found = run_case(case, Path(tmp))
                row = {"id": case.id, "argv": list(case.argv), "expected": case.code, "exit": outcome.code,
                       "seconds": round(outcome.seconds, 3), "child": case.child,
                       "message": (outcome.stderr.strip().splitlines() or [""])[-1][:400],
                       "problems": [{"count": k, "what": w} for k, w in found]}
            except Exception as e:            # a setup that failed is a problem of the suite
                row = {"id": case.id, "argv": list(case.argv), "expected": case.code, "exit": None,
                       "seconds": 0.0, "child": case.child, "message": "",
                       "problems": [{"count": "setup", "what": f"{type(e).__name__}: {e}"}]}
        doc["cases"].append(row)
        mark = "ok" if not row["problems"] else "PROBLEM"
        print(f"{mark:7} {case.id} -> exit {row['exit']} ({row['seconds']:.2f} s)", file=sys.stderr, flush=True)
    doc["seconds"] = round(time.perf_counter() - t0, 1)
    table = summarise(doc["cases"])
    doc["summary"] = table
    print_table(console, table, doc["seconds"])
    bad = [r for r in doc["cases"] if r["problems"]]
    for r in bad:
        for p in r["problems"]:
            console.print(f"[red]{r['id']}[/]: {p['count']}: {p['what']}", markup=True, highlight=False)
    out = args.out or RESULTS_DIR / f"hostile{'-quick' if args.quick else ''}.json"
    write_json(doc, out)
    console.print(f"wrote {out}")
    return 1 if bad else 0


def summarise(rows: list[dict]) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for r in rows:
        for key in (r["id"].split("/")[0], "total"):
            t = table.setdefault(key, {"cases": 0, **{c: 0 for c in COUNTS}, "setup": 0})
            t["cases"] += 1
            for c in {p["count"] for p in r["problems"]}:
                t[c] += 1
    total = table.pop("total", None)
    table = dict(sorted(table.items()))
    if total is not None:
        table["total"] = total
    return table


def print_table(console, table: dict[str, dict[str, int]], seconds: float) -> None:
    from rich.table import Table

    t = Table(title=f"hostile cases ({seconds:.0f} s)")
    heads = {"cases": "cases", "traceback": "tracebacks", "exit code": "wrong exit codes",
             "message": "bad messages", "lost": "files lost", "outside": "written/read outside",
             "setup": "setup failed"}
    t.add_column("area")
    for h in heads.values():
        t.add_column(h, justify="right")
    for area, row in table.items():
        t.add_row(area, *[str(row[k]) for k in heads])
    console.print(t)


if __name__ == "__main__":
    sys.exit(main())
