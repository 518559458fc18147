"""Does a sweep's table agree with single ``hetcc compile`` runs? Samples cells of a finished
``hetcc sweep`` and compiles each one as a user would (the ``hetcc`` command, ``--json``), then
compares the predicted latency, energy and feasibility with the table's row.

    hetcc sweep examples/sweep.toml -o build/sweep
    python benchmarks/sweep_agreement.py build/sweep --sample 30      # 30 random finished cells
    python benchmarks/sweep_agreement.py --quick                      # a small sweep made here (no Ray), 3 cells

Cells restricted to a device subset (``devices``) have no ``hetcc compile`` flag and are not
sampled. A cell agrees when latency and energy match within ``--rtol`` (default 1e-6; the table
keeps 12 significant digits) and both call it feasible or both infeasible.
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if (HERE := str(Path(__file__).resolve().parent)) not in sys.path:  # _common.py lives beside this script
    sys.path.insert(0, HERE)
from _common import RESULTS_DIR, machine_info, make_console, utc_now, write_json  # noqa: E402

SCRIPT = Path(__file__).stem
# one cell per planner, all three compiled: each `hetcc compile` is a process of its own (2 s of
# CPU), so a second objective would double the check's time and test no other flag
QUICK_SPEC = """models = ["squeezenet1_1"]
targets = ["hikey970"]
objectives = ["energy"]
deadlines = ["medium"]
planners = ["dp", "exact", "single:gpu"]
"""


def compile_flags(row: dict[str, str], spec: dict[str, Any]) -> list[str]:
    """The ``hetcc compile`` arguments of one cell (the sweep's model spelling, relative to its spec)."""
    model = row["model"]
    if model.endswith(".onnx"):
        model = str((Path(spec["path"]).parent / model).resolve())
    target = row["target"]
    if target.endswith(".toml"):
        target = str((Path(spec["path"]).parent / target).resolve())
    flags = [model, "--target", target, "--objective", row["objective"], "--planner", row["planner"],
             "--seed", row["seed"], "--max-cut-tensors", str(spec.get("max_cut_tensors", 1)),
             "--allow-infeasible", "--json", "--quiet"]
    if row["deadline"] != "none":
        flags += ["--deadline", row["deadline"]]
    if row["power_cap"] != "none":
        flags += ["--power-cap", row["power_cap"]]
    for key, value in json.loads(row["options"] or "{}").items():
        flags += ["--planner-option", f"{key}={str(value).lower() if isinstance(value, bool) else value}"]
    for pair in filter(None, row.get("budget", "").split(",")):
        key, value = pair.split("=")
        flags += [f"--budget-{key}", value]
    return flags


def check(rows: list[dict[str, str]], spec: dict[str, Any], rtol: float, console: Any) -> list[dict[str, Any]]:
    hetcc = str(Path(sys.executable).with_name("hetcc"))
    out = []
    with tempfile.TemporaryDirectory(prefix="hetcc-agree-") as tmp:
        for i, row in enumerate(rows):
            art = Path(tmp) / f"a{i}"
            cmd = [hetcc, "compile", *compile_flags(row, spec), "-o", str(art)]
            t0 = time.perf_counter()
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
            wall = time.perf_counter() - t0
            res: dict[str, Any] = {"cell": row["cell"], "command": " ".join(cmd[1:]), "compile_s": wall,
                                   "table": {k: row[k] for k in ("latency_ms", "energy_mj", "feasible")}}
            if p.returncode not in (0, 3):
                res.update(agree=False, error=(p.stderr.strip().splitlines() or ["?"])[-1])
            else:
                doc = json.loads(p.stdout)
                lat, en = float(row["latency_ms"]), float(row["energy_mj"])
                res["compile"] = {"latency_ms": doc["latency_ms"], "energy_mj": doc["energy_mj"],
                                  "feasible": doc["feasible"]}
                res["rel_diff"] = max(abs(doc["latency_ms"] - lat) / lat, abs(doc["energy_mj"] - en) / en)
                res["agree"] = res["rel_diff"] <= rtol and str(doc["feasible"]) == row["feasible"]
            shutil.rmtree(art, ignore_errors=True)
            out.append(res)
            console.print(f"{i + 1}/{len(rows)} {row['model']} {row['target']} {row['objective']} {row['deadline']} "
                          f"{row['planner']}: {'agrees' if res['agree'] else 'DIFFERS'}", highlight=False)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep_dir", nargs="?", type=Path, help="a finished sweep's -o directory")
    ap.add_argument("--spec", type=Path, default=None, help="its spec (default: the spec.toml recorded beside it, "
                    "or examples/sweep.toml)")
    ap.add_argument("--sample", type=int, default=20, help="cells to compile (default 20)")
    ap.add_argument("--seed", type=int, default=0, help="which cells (random.Random(seed))")
    ap.add_argument("--rtol", type=float, default=1e-6)
    ap.add_argument("--quick", action="store_true",
                    help="run a 3-cell sweep (squeezenet1_1) here, without Ray, and check all 3")
    ap.add_argument("--out", type=Path, default=None, help="JSON path (default benchmarks/results/sweep_agreement.json)")
    args = ap.parse_args(argv)
    from hetcc.core.read import read_toml
    from hetcc.experiments.sweep import load_spec, read_table, run_sweep

    console, date, t0 = make_console(), utc_now(), time.perf_counter()
    tmp = None
    if args.quick:
        tmp = Path(tempfile.mkdtemp(prefix="hetcc-agree-sweep-"))
        args.spec = tmp / "spec.toml"
        args.spec.write_text(QUICK_SPEC)
        args.sweep_dir, args.sample = tmp / "out", min(args.sample, 3)
        # in this process (hetcc sweep --workers 0): the check is of the table, and a Ray start would
        # be most of the quick run's time (tests/test_sweep.py checks rows made on Ray)
        run_sweep(load_spec(args.spec), args.sweep_dir, workers=0, progress=False)
    if args.sweep_dir is None:
        ap.error("name a sweep's directory, or --quick")
    spec_path = args.spec or Path(__file__).resolve().parents[1] / "examples" / "sweep.toml"
    spec = dict(read_toml(spec_path, str(spec_path)), path=str(spec_path))
    rows = [r for r in read_table(args.sweep_dir / "cells.csv")
            if r["status"] in ("ok", "infeasible") and r["latency_ms"] and r.get("device_set", "all") in ("", "all")]
    if not rows:
        raise SystemExit(f"{args.sweep_dir}/cells.csv has no finished cell to check")
    sample = random.Random(args.seed).sample(rows, min(args.sample, len(rows)))
    results = check(sample, spec, args.rtol, console)
    agree = sum(r["agree"] for r in results)
    worst = max((r.get("rel_diff", float("inf")) for r in results), default=0.0)
    console.print(f"{agree} of {len(results)} sampled cells (of {len(rows)} finished) agree with hetcc compile; "
                  f"largest relative difference {worst:.3g}", highlight=False)
    out = args.out or RESULTS_DIR / f"{SCRIPT}{'-quick' if args.quick else ''}.json"
    write_json({"script": SCRIPT, "date": date, "machine": machine_info(), "sweep_dir": str(args.sweep_dir),
                "spec": str(spec_path), "finished_cells": len(rows), "sampled": len(results), "agree": agree,
                "max_rel_diff": worst, "rtol": args.rtol, "total_s": time.perf_counter() - t0, "cells": results}, out)
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if agree == len(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
