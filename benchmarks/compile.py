"""Compile-time benchmark: per zoo model, the time of each pass, of the planners and of a whole compile.

For every model (the core zoo set by default) on ``hikey970`` (25 device states):

* nodes, layers, and the median wall time of each pass over ``--repeats`` end-to-end compiles
  with an output directory (frontend load + passes + writing the slices);
* ``dp`` planner ms: latency objective (MOSAIC uses each device's max-frequency state only);
* ``exact`` planner ms: energy objective under a medium deadline, halfway between the fastest
  plan's latency and the latency of the unconstrained energy-optimal plan;

both planners timed directly on the PlanningProblem (median of many calls). Targets: dp < 10 ms
and exact < 100 ms for every model, ResNet-50 compile < 5 s end to end.

    python benchmarks/compile.py                 # core set
    python benchmarks/compile.py --all           # every zoo entry
    python benchmarks/compile.py --models resnet50,vgg16
    python benchmarks/compile.py --quick         # squeezenet1_1, few repeats (tests run this)
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if (HERE := str(Path(__file__).resolve().parent)) not in sys.path:  # _common.py lives beside this script
    sys.path.insert(0, HERE)
from _common import (add_io_args, bench_each, machine_info, make_console, median, model_path,  # noqa: E402
                     out_path, print_errors, select_models, utc_now, write_json)

SCRIPT = Path(__file__).stem
PASSES = ("shapes", "constants", "canonical", "layers", "legality", "costs", "partition", "codegen")
TARGET = "hikey970"
DP_TARGET_MS = 10.0
EXACT_TARGET_MS = 100.0
COMPILE_TARGET_S = 5.0
COMPILE_TARGET_MODEL = "resnet50"
QUICK_MODELS = ("squeezenet1_1",)


# ---- the measurements ----

def time_planner(problem: Any, objective: Any, planner: str, repeats: int,
                 min_seconds: float) -> tuple[list[float], Any]:
    """Wall ms of ``plan(problem, objective, planner)``: one warm-up, then ``repeats`` calls (more
    while under ``min_seconds``, at most 10x ``repeats``)."""
    from hetcc.planners import plan as run_planner

    result = run_planner(problem, objective, planner)
    runs: list[float] = []
    t_end = time.perf_counter() + min_seconds
    while len(runs) < repeats or (time.perf_counter() < t_end and len(runs) < 10 * repeats):
        t0 = time.perf_counter()
        run_planner(problem, objective, planner)
        runs.append((time.perf_counter() - t0) * 1e3)
    return runs, result


def plan_summary(plan: Any, problem: Any) -> dict[str, Any]:
    st = problem.states
    return {"latency_ms": plan.latency_ms, "energy_mj": plan.energy_mj, "num_slices": len(plan.slices),
            "slices": [{"first": s.first, "last": s.last, "device": st.device[s.state],
                        "frequency_mhz": float(st.freq_mhz[s.state])} for s in plan.slices]}


def bench_model(name: str, args: argparse.Namespace) -> dict[str, Any]:
    import hetcc
    from hetcc.planners import Objective

    path = model_path(name, args.models_dir)
    compile_runs: list[float] = []
    pass_runs: list[dict[str, float]] = []
    result = None
    for _ in range(args.compile_repeats):
        with tempfile.TemporaryDirectory(prefix=f"hetcc-bench-{name}-") as tmp:
            t0 = time.perf_counter()
            result = hetcc.compile(path, target=TARGET, objective="latency", output_dir=Path(tmp) / "build")
            compile_runs.append(time.perf_counter() - t0)
        pass_runs.append({t.name: t.seconds for t in result.timings})
    assert result is not None
    program = result.program
    session = result.analysis
    problem = session.problem
    pass_median = {p: median([r[p] for r in pass_runs if p in r]) for p in pass_runs[0]}
    frontend = [r.get("load", 0.0) for r in pass_runs]   # the frontend (load + check + shape inference)

    # dp: latency objective (max-frequency states only, MOSAIC Eq. 6)
    dp_runs, dp_plan = time_planner(problem, Objective("latency"), "dp", args.planner_repeats,
                                    args.planner_min_seconds)

    # exact: energy under HERTI's medium deadline (half way between the fastest plan's latency and
    # that of the unconstrained energy optimum), resolved by the analysis (dp at both ends)
    objective = session.objective("energy", deadline="medium")
    fastest_ms, energy_opt_ms = session.reference_latencies()
    deadline = objective.deadline_ms
    exact_runs, exact_plan = time_planner(problem, objective, "exact", args.planner_repeats,
                                          args.planner_min_seconds)

    dp_ms, exact_ms, compile_s = median(dp_runs), median(exact_runs), median(compile_runs)
    return {
        "model": name, "model_path": str(path), "target": TARGET,
        "nodes": len(list(program.graph)), "layers": len(program.get("layers")),
        "states": problem.num_states, "fmax_states": int(problem.states.is_fmax.sum()),
        "passes_s": pass_median, "frontend_s": median(frontend), "compile_s": compile_s,
        "compile_runs_s": compile_runs, "pass_runs_s": pass_runs, "frontend_runs_s": frontend,
        "compile_plan": plan_summary(result.plan, problem),
        "dp": {"objective": "latency", "median_ms": dp_ms, "runs_ms": dp_runs,
               "plan": plan_summary(dp_plan, problem)},
        "exact": {"objective": "energy", "deadline_ms": deadline, "deadline_spec": "medium",
                  "fastest_latency_ms": fastest_ms, "energy_optimal_latency_ms": energy_opt_ms,
                  "median_ms": exact_ms, "runs_ms": exact_runs, "plan": plan_summary(exact_plan, problem)},
        "targets_met": {"dp": dp_ms < DP_TARGET_MS, "exact": exact_ms < EXACT_TARGET_MS,
                        "compile": (compile_s < COMPILE_TARGET_S) if name == COMPILE_TARGET_MODEL else None},
    }


def verdict(ok: bool | None) -> str:
    return "–" if ok is None else ("[green]PASS[/]" if ok else "[red]MISS[/]")


def print_table(rows: list[dict[str, Any]], console: Any) -> None:
    from rich.table import Table

    table = Table(title=f"hetcc compile time on {TARGET} (median; pass columns in ms; "
                        f"targets: dp < {DP_TARGET_MS:g} ms, exact < {EXACT_TARGET_MS:g} ms, "
                        f"{COMPILE_TARGET_MODEL} compile < {COMPILE_TARGET_S:g} s)")
    table.add_column("model")
    for col in ("#nodes", "#layers", "load", *PASSES):
        table.add_column(col, justify="right")
    for col in ("compile s", "dp ms", "dp", "exact ms", "exact", "compile"):
        table.add_column(col, justify="right")
    for r in rows:
        if "error" in r:
            table.add_row(r["model"], *[""] * (3 + len(PASSES)), "[red]error[/]", *[""] * 5)
            continue
        passes = [f"{r['passes_s'][p] * 1e3:.1f}" if p in r["passes_s"] else "" for p in PASSES]
        met = r["targets_met"]
        table.add_row(r["model"], str(r["nodes"]), str(r["layers"]), f"{r['frontend_s'] * 1e3:.0f}", *passes,
                      f"{r['compile_s']:.2f}", f"{r['dp']['median_ms']:.2f}", verdict(met["dp"]),
                      f"{r['exact']['median_ms']:.2f}", verdict(met["exact"]), verdict(met["compile"]))
    console.print(table)
    print_errors(rows, console)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", help="comma-separated zoo names (default: the core set)")
    ap.add_argument("--all", action="store_true", help="every zoo entry, not just the core set")
    ap.add_argument("--quick", action="store_true", help=f"{', '.join(QUICK_MODELS)} with few repeats")
    ap.add_argument("--compile-repeats", type=int, default=None, help="end-to-end compiles per model (3)")
    ap.add_argument("--planner-repeats", type=int, default=None, help="planner calls per model (at least; 15)")
    add_io_args(ap, SCRIPT)
    args = ap.parse_args(argv)
    args.compile_repeats = args.compile_repeats or (2 if args.quick else 3)
    args.planner_repeats = args.planner_repeats or (5 if args.quick else 15)
    args.planner_min_seconds = 0.1 if args.quick else 0.5
    out = out_path(args, SCRIPT)

    console = make_console()
    machine = machine_info()
    started = utc_now()
    rows = bench_each(select_models(args, QUICK_MODELS), lambda name: bench_model(name, args), console)
    print_table(rows, console)
    ok_rows = [r for r in rows if "error" not in r]
    misses = [f"{r['model']}: {k}" for r in ok_rows for k, v in r["targets_met"].items() if v is False]
    console.print(f"targets missed: {', '.join(misses)}" if misses else "all targets met", highlight=False)
    write_json({"script": SCRIPT, "date": started, "machine": machine,
                "args": {"models": [r["model"] for r in rows], "quick": args.quick,
                         "compile_repeats": args.compile_repeats, "planner_repeats": args.planner_repeats},
                "targets": {"dp_ms": DP_TARGET_MS, "exact_ms": EXACT_TARGET_MS,
                            "compile_s": COMPILE_TARGET_S, "compile_model": COMPILE_TARGET_MODEL},
                "results": rows, "misses": misses}, out)
    console.print(f"wrote {out}", highlight=False)
    return 1 if len(ok_rows) < len(rows) else 0


if __name__ == "__main__":
    sys.exit(main())
