"""Planner speed and quality on synthetic CNNs on a HiKey 970-like board (25 device states).

For each model size L and seed: MOSAIC's ``dp`` on latency and energy, and ``exact`` on
  * energy under a medium deadline (half way between the fastest reachable latency and the
    latency of the unconstrained energy optimum),
  * edp under a deadline half way between the fastest latency and that of the edp optimum,
  * latency under a power cap half way between the lowest reachable average power and the
    average power of the fastest plan.
Prints wall-clock milliseconds (per seed the median over repeats; then the median and worst over
seeds, and the single fastest run, the best estimate on a shared machine) and how much
better exact's plan is than the best feasible baseline (dp plans and single:<device>), and
writes everything to benchmarks/results/planners.json.

    python benchmarks/planners.py            # L = 20, 40, 60; 3 seeds; 5 repeats
    python benchmarks/planners.py --quick    # one small size, once
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from hetcc.errors import InfeasibleError
from hetcc.optimizers import plan
from hetcc.optimizers.exact import lowest_average_power_mw
from hetcc.optimizers.problem import Objective, PlanningProblem
from hetcc.optimizers.synthetic import synthetic_problem

RESULTS = Path(__file__).resolve().parent / "results" / "planners.json"


def timed(problem: PlanningProblem, planner: str, repeats: int):
    """(median wall ms, fastest wall ms, median CPU ms, last plan); on a shared machine the
    fastest repeat is the best estimate of the uncontended time."""
    wall, cpu, result = [], [], None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        result = plan(problem, planner)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall) * 1e3, min(wall) * 1e3, statistics.median(cpu) * 1e3, result


def objectives(problem: PlanningProblem) -> dict[str, Objective]:
    """The three constrained benchmark objectives for one problem (see the module docstring)."""
    fast = plan(problem.with_objective(Objective("latency")), "exact")
    lean = plan(problem.with_objective(Objective("energy")), "exact")
    edp = plan(problem.with_objective(Objective("edp")), "exact")
    p_fast = fast.energy_mj / fast.latency_ms * 1000.0
    p_low = lowest_average_power_mw(problem)
    return {
        "energy, mid deadline": Objective("energy", deadline_ms=(fast.latency_ms + lean.latency_ms) / 2),
        "edp, deadline": Objective("edp", deadline_ms=(fast.latency_ms + edp.latency_ms) / 2),
        "latency, power cap": Objective("latency", power_cap_mw=(p_low + p_fast) / 2),
    }


def best_baseline(problem: PlanningProblem, objective: Objective) -> tuple[str, float] | None:
    """The best feasible plan among MOSAIC's dp plans and the device-preferred baselines."""
    best = None
    candidates = [("dp:latency", "dp", Objective("latency")), ("dp:energy", "dp", Objective("energy"))]
    candidates += [(f"single:{d}", f"single:{d}", objective) for d in problem.devices]
    for label, planner, obj in candidates:
        try:
            p = plan(problem.with_objective(obj), planner)
        except InfeasibleError:
            continue
        if objective.feasible(p.latency_ms, p.energy_mj):
            v = objective.value(p.latency_ms, p.energy_mj)
            if best is None or v < best[1]:
                best = (label, v)
    return best


def run(sizes: list[int], seeds: list[int], repeats: int) -> list[dict]:
    rows = []
    for L in sizes:
        for seed in seeds:
            base = synthetic_problem(L, seed=seed)
            jobs = [("latency", "dp", Objective("latency")), ("energy", "dp", Objective("energy"))]
            jobs += [(name, "exact", obj) for name, obj in objectives(base).items()]
            for case, planner, obj in jobs:
                problem = base.with_objective(obj)
                ms, best_ms, cpu_ms, result = timed(problem, planner, repeats)
                value = obj.value(result.latency_ms, result.energy_mj)
                row = {"layers": L, "states": problem.num_states, "seed": seed, "case": case,
                       "planner": planner, "median_ms": ms, "best_ms": best_ms, "median_cpu_ms": cpu_ms,
                       "repeats": repeats,
                       "deadline_ms": obj.deadline_ms, "power_cap_mw": obj.power_cap_mw,
                       "latency_ms": result.latency_ms, "energy_mj": result.energy_mj, "value": value,
                       "slices": len(result.slices)}
                if planner == "exact":
                    ref = best_baseline(problem, obj)
                    row["best_baseline"] = ref[0] if ref else None
                    row["gain_vs_baseline_pct"] = 100.0 * (1 - value / ref[1]) if ref else None
                rows.append(row)
    return rows


def summarise(rows: list[dict]) -> list[dict]:
    out = []
    keys = dict.fromkeys((r["layers"], r["case"], r["planner"]) for r in rows)
    for L, case, planner in keys:
        sel = [r for r in rows if (r["layers"], r["case"], r["planner"]) == (L, case, planner)]
        gains = [r["gain_vs_baseline_pct"] for r in sel if r.get("gain_vs_baseline_pct") is not None]
        out.append({"layers": L, "case": case, "planner": planner, "seeds": len(sel),
                    "median_ms": statistics.median(r["median_ms"] for r in sel),
                    "worst_ms": max(r["median_ms"] for r in sel),
                    "best_ms": min(r["best_ms"] for r in sel),
                    "median_cpu_ms": statistics.median(r["median_cpu_ms"] for r in sel),
                    "gain_vs_baseline_pct": statistics.median(gains) if gains else None,
                    "baselines_infeasible": sum(1 for r in sel if r["planner"] == "exact"
                                                and r.get("best_baseline") is None)})
    return out


def show(summary: list[dict]) -> None:
    headers = ["L", "objective", "planner", "median ms", "worst ms", "best ms", "vs best baseline"]

    def gain(s: dict) -> str:
        if s["planner"] != "exact":
            return ""
        g = "-" if s["gain_vs_baseline_pct"] is None else f"{s['gain_vs_baseline_pct']:.1f}% better"
        if s["baselines_infeasible"]:
            g += f" ({s['baselines_infeasible']} seed(s): no baseline feasible)"
        return g

    body = [[str(s["layers"]), s["case"], s["planner"], f"{s['median_ms']:.1f}", f"{s['worst_ms']:.1f}",
             f"{s['best_ms']:.1f}", gain(s)]
            for s in summary]
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:   # plain text
        widths = [max(len(r[i]) for r in [headers, *body]) for i in range(len(headers))]
        for r in [headers, *body]:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
        return
    table = Table(title="planner wall time (25 states, synthetic CNNs)")
    for h in headers:
        table.add_column(h, justify="right" if "ms" in h or h == "L" else "left")
    for r in body:
        table.add_row(*r)
    Console().print(table)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one small size, one seed, one repeat")
    ap.add_argument("--sizes", type=int, nargs="+", default=[20, 40, 60])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("-o", "--output", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    sizes, seeds, repeats = args.sizes, list(range(args.seeds)), args.repeats
    if args.quick:
        sizes, seeds, repeats = [20], [0], 1
    rows = run(sizes, seeds, repeats)
    summary = summarise(rows)
    show(summary)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    args.output.write_text(json.dumps({
        "benchmark": "planners", "python": sys.version.split()[0], "machine": platform.machine(),
        "processor": platform.processor(), "cpu_count": os.cpu_count(), "load_average": load,
        "sizes": sizes, "seeds": seeds, "repeats": repeats, "summary": summary, "runs": rows,
    }, indent=2))
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
