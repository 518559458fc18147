"""Planner speed on synthetic CNNs on a HiKey 970-like board (25 device states).

For each model size L and seed: MOSAIC's ``dp`` on latency and energy, and ``exact`` on every
objective (latency, energy, edp) x every constraint case:
  * none;
  * deadline: half way between the fastest reachable latency and the latency of the metric's
    unconstrained optimum (for latency: that of the energy optimum);
  * power cap: half way between the lowest reachable average power and that of the fastest plan;
  * both: that cap, and a deadline half way between the fastest latency within the cap and the
    energy optimum's latency.
Prints wall-clock ms (per seed the median over repeats; then the median and worst over seeds)
with the target (every L = 250 case under 1 s), and the anytime mode: with a 0.05 s budget at
the largest L, the gap between the plan returned and its proven lower bound. Writes
benchmarks/results/planners.json.

    python benchmarks/planners.py            # L = 20, 40, 60, 250; 2 seeds; 3 repeats
    python benchmarks/planners.py --quick    # L = 20 and 250, one seed, once
    python benchmarks/planners.py --target jetson-tx2 --out /tmp/planners-tx2.json
    python benchmarks/planners.py --sizes 250 --graphs benchmarks/.models/vit_b_16-seed0.onnx  # + a real graph

The board is the built-in hikey970 (``synthetic.TARGET``) unless ``--target`` says otherwise.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

if (HERE := str(Path(__file__).resolve().parent)) not in sys.path:  # _common.py lives beside this script
    sys.path.insert(0, HERE)
from _common import RESULTS_DIR, machine_info, utc_now, write_json  # noqa: E402
from synthetic import TARGET as SYNTHETIC_TARGET, synthetic_problem  # noqa: E402

from hetcc.core.errors import InfeasibleError  # noqa: E402
from hetcc.planners import Budget, Objective, PlanContext, PlanningProblem, plan  # noqa: E402
from hetcc.planners.exact import lowest_average_power_mw  # noqa: E402

SCRIPT = Path(__file__).stem
TARGET_LAYERS = 250
TARGET_S = 1.0
ANYTIME_S = 0.05
CONSTRAINTS = ("none", "deadline", "power cap", "both")


def objectives(problem: PlanningProblem) -> dict[tuple[str, str], Objective]:
    """The 12 benchmark objectives for one problem (see the module docstring)."""
    opt = {m: plan(problem, Objective(m), "exact") for m in ("latency", "energy", "edp")}
    fast, lean = opt["latency"], opt["energy"]
    p_fast = fast.energy_mj / fast.latency_ms * 1000.0
    cap = (lowest_average_power_mw(problem) + p_fast) / 2
    t_cap = plan(problem, Objective("latency", power_cap_mw=cap), "exact").latency_ms
    both = (t_cap + max(lean.latency_ms, t_cap)) / 2
    out = {}
    for m in ("latency", "energy", "edp"):
        ref = opt["energy" if m == "latency" else m]
        out[(m, "none")] = Objective(m)
        out[(m, "deadline")] = Objective(m, deadline_ms=(fast.latency_ms + ref.latency_ms) / 2)
        out[(m, "power cap")] = Objective(m, power_cap_mw=cap)
        out[(m, "both")] = Objective(m, deadline_ms=both, power_cap_mw=cap)
    return out


def timed(problem: PlanningProblem, objective: Objective, planner: str, repeats: int, budget=None):
    wall, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = plan(problem, objective, planner, ctx=PlanContext(budget=budget))
        wall.append(time.perf_counter() - t0)
    return wall, result


def run(sizes: list[int], seeds: list[int], repeats: int, log=print,
        target: str = SYNTHETIC_TARGET) -> tuple[list[dict], list[dict]]:
    rows, anytime = [], []
    for L in sizes:
        for seed in seeds:
            problem = synthetic_problem(L, seed=seed, target=target)
            jobs = [(("latency", "none"), "dp", Objective("latency")), (("energy", "none"), "dp", Objective("energy"))]
            objs = objectives(problem)
            jobs += [(key, "exact", obj) for key, obj in objs.items()]
            for (metric, constraint), planner, obj in jobs:
                wall, result = timed(problem, obj, planner, repeats)
                rows.append({"layers": L, "states": problem.num_states, "seed": seed, "metric": metric,
                             "constraint": constraint, "planner": planner,
                             "median_ms": statistics.median(wall) * 1e3, "best_ms": min(wall) * 1e3,
                             "runs_ms": [w * 1e3 for w in wall], "deadline_ms": obj.deadline_ms,
                             "power_cap_mw": obj.power_cap_mw, "latency_ms": result.latency_ms,
                             "energy_mj": result.energy_mj, "value": obj.value(result.latency_ms, result.energy_mj),
                             "slices": len(result.slices),
                             "stats": {k: v for k, v in dict(result.stats).items() if k != "seconds"}})
                log(f"L={L} seed={seed} {planner} {metric}/{constraint}: {statistics.median(wall) * 1e3:.1f} ms")
            if L == max(sizes):
                for (metric, constraint), obj in objs.items():
                    if constraint == "none" and metric != "edp":
                        continue
                    optimum = next(r["value"] for r in rows if (r["layers"], r["seed"], r["metric"], r["constraint"],
                                                                r["planner"]) == (L, seed, metric, constraint, "exact"))
                    try:
                        wall, result = timed(problem, obj, "exact", 1, Budget(seconds=ANYTIME_S))
                        st = dict(result.stats)
                        value = obj.value(result.latency_ms, result.energy_mj)
                        entry = {"gap": st["gap"], "optimal": st["optimal"], "lower_bound": st["lower_bound"],
                                 "value": value, "excess_over_optimum": value / optimum - 1}
                    except InfeasibleError as err:
                        wall, entry = [float("nan")], {"error": str(err)}
                    anytime.append({"layers": L, "seed": seed, "metric": metric, "constraint": constraint,
                                    "budget_s": ANYTIME_S, "wall_ms": wall[0] * 1e3, **entry})
    return rows, anytime


def _solve_within(problem: PlanningProblem, obj: Objective, seconds: float) -> dict:
    """``exact`` once with a budget: ms, value, labels, optimal and gap, or ms and the error when
    the budget ran out before any feasible plan was found."""
    t0 = time.perf_counter()
    try:
        wall, result = timed(problem, obj, "exact", 1, Budget(seconds=seconds))
    except InfeasibleError as err:
        return {"ms": (time.perf_counter() - t0) * 1e3, "value": None, "labels": None, "optimal": False, "gap": None,
                "error": str(err)}
    st = dict(result.stats)
    return {"ms": wall[0] * 1e3, "value": obj.value(result.latency_ms, result.energy_mj), "labels": st.get("labels"),
            "optimal": st.get("optimal"), "gap": st.get("gap")}


def run_graphs(graphs: list[str], target: str, max_cut_tensors: int, limit_s: float, log=print) -> list[dict]:
    """The 12 ``exact`` cases on real graphs (ONNX files or zoo names) at ``--max-cut-tensors``, once
    each, stopped at ``limit_s`` (its best plan and proven gap then); a case over the target also
    runs with a budget of TARGET_S (the plan it gives, its gap, or that it found none)."""
    from hetcc.compiler.api import analyse

    out = []
    for graph in graphs:
        problem = analyse(graph, target, max_cut_tensors=max_cut_tensors).problem
        name = Path(graph).stem if graph.endswith(".onnx") else graph
        for (metric, constraint), obj in objectives(problem).items():
            row = {"graph": name, "layers": problem.num_layers, "states": problem.num_states, "metric": metric,
                   "constraint": constraint, **_solve_within(problem, obj, limit_s)}
            row["target_met"] = row["ms"] <= TARGET_S * 1e3 and bool(row["optimal"])
            if "error" in row:
                note = f"no feasible plan in {limit_s:g} s"
            else:
                note = f"{row['ms']:.0f} ms" + ("" if row["optimal"] else " (stopped, gap %.3f%%)" % (100 * row["gap"]))
                if not row["target_met"]:
                    b = _solve_within(problem, obj, TARGET_S)
                    row["budgeted"] = {"budget_s": TARGET_S, "ms": b["ms"], "error": b["error"]} if "error" in b else {
                        "budget_s": TARGET_S, "ms": b["ms"], "gap": b["gap"], "excess_over_best": b["value"] / row["value"] - 1}
            out.append(row)
            log(f"{name} ({problem.num_layers} layers) exact {metric}/{constraint}: {note}")
    return out


def show_graphs(rows: list[dict], limit_s: float) -> None:
    print(f"\nexact on real graphs (target < {TARGET_S:g} s; a case still searching at {limit_s:g} s is stopped there "
          f"with its proven gap; over the target, a run with a {TARGET_S:g} s budget: its gap and its excess over the "
          "first run's plan)")
    for r in rows:
        if "error" in r:
            print(f"  {r['graph']} L={r['layers']} {r['metric']}/{r['constraint']}: no feasible plan found in "
                  f"{limit_s:g} s, MISS")
            continue
        line = (f"  {r['graph']} L={r['layers']} {r['metric']}/{r['constraint']}: {r['ms']:.0f} ms, "
                f"{r['labels']} labels, " + ("optimal" if r["optimal"] else f"stopped, proven gap {100 * r['gap']:.3f}%")
                + f", {'PASS' if r['target_met'] else 'MISS'}")
        b = r.get("budgeted")
        if b and "error" in b:
            line += f"; with {b['budget_s']:g} s: no feasible plan found"
        elif b:
            line += (f"; with {b['budget_s']:g} s: {b['ms']:.0f} ms, proven gap {100 * b['gap']:.3f}%, "
                     f"{100 * b['excess_over_best']:.3f}% above")
        print(line)


def summarise(rows: list[dict]) -> list[dict]:
    out = []
    keys = dict.fromkeys((r["layers"], r["metric"], r["constraint"], r["planner"]) for r in rows)
    for key in keys:
        sel = [r for r in rows if (r["layers"], r["metric"], r["constraint"], r["planner"]) == key]
        L, metric, constraint, planner = key
        worst = max(r["median_ms"] for r in sel)
        out.append({"layers": L, "metric": metric, "constraint": constraint, "planner": planner,
                    "seeds": len(sel), "median_ms": statistics.median(r["median_ms"] for r in sel),
                    "worst_ms": worst, "best_ms": min(r["best_ms"] for r in sel),
                    "target_met": (worst <= TARGET_S * 1e3) if L == TARGET_LAYERS and planner == "exact" else None})
    return out


def show(summary: list[dict], anytime: list[dict]) -> None:
    headers = ["L", "objective", "constraint", "planner", "median ms", "worst ms", "target"]
    body = [[str(s["layers"]), s["metric"], s["constraint"], s["planner"], f"{s['median_ms']:.1f}",
             f"{s['worst_ms']:.1f}", {True: "PASS (<1 s)", False: "MISS (>=1 s)", None: ""}[s["target_met"]]]
            for s in summary]
    widths = [max(len(r[i]) for r in [headers, *body]) for i in range(len(headers))]
    print("planner wall time (25 states, synthetic CNNs)")
    for r in [headers, *body]:
        print("  ".join(c.rjust(w) if i in (0, 4, 5) else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))
    if anytime:
        print(f"\nanytime: exact with a {ANYTIME_S:g} s budget")
        for a in anytime:
            if "error" in a:
                print(f"  L={a['layers']} seed={a['seed']} {a['metric']}/{a['constraint']}: {a['error']}")
            else:
                print(f"  L={a['layers']} seed={a['seed']} {a['metric']}/{a['constraint']}: {a['wall_ms']:.0f} ms, "
                      f"proven gap {100 * a['gap']:.4f}%{' (optimal)' if a['optimal'] else ''}, "
                      f"{100 * a['excess_over_optimum']:.4f}% above the optimum")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="L = 20 and 250, one seed, one repeat")
    ap.add_argument("--sizes", type=int, nargs="+", default=[20, 40, 60, TARGET_LAYERS])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--models-dir", type=Path, default=None, help="unused (synthetic problems); for the test harness")
    ap.add_argument("--out", "-o", type=Path, default=None, help="JSON path (default benchmarks/results/planners.json)")
    ap.add_argument("--graphs", nargs="+", default=[], metavar="MODEL",
                    help="also time the 12 exact cases on these real graphs (ONNX files or zoo names), e.g. "
                         "benchmarks/.models/vit_b_16-seed0.onnx")
    ap.add_argument("--max-cut-tensors", type=int, default=2, help="layer grouping of --graphs (default 2)")
    ap.add_argument("--graph-limit", type=float, default=120.0, metavar="SECONDS",
                    help="stop a --graphs case still searching after this long (its best plan and gap; default 120)")
    ap.add_argument("--target", default=SYNTHETIC_TARGET,
                    help="the board the synthetic CNNs are costed on (default hikey970, the board fitted to "
                         "MOSAIC's measurements; a name or a TOML path)")
    args = ap.parse_args(argv)
    sizes, seeds, repeats = args.sizes, list(range(args.seeds)), args.repeats
    if args.quick:
        sizes, seeds, repeats = [20, TARGET_LAYERS], [0], 1
    date = utc_now()
    rows, anytime = run(sizes, seeds, repeats, log=lambda s: print(s, file=sys.stderr, flush=True), target=args.target)
    summary = summarise(rows)
    show(summary, anytime)
    graphs = run_graphs(args.graphs, args.target, args.max_cut_tensors, args.graph_limit,
                        log=lambda s: print(s, file=sys.stderr, flush=True)) if args.graphs else []
    if graphs:
        show_graphs(graphs, args.graph_limit)
    out = args.out or RESULTS_DIR / (f"{SCRIPT}-quick.json" if args.quick else f"{SCRIPT}.json")
    write_json({"script": SCRIPT, "date": date, "machine": machine_info(),
                "args": {"quick": args.quick, "sizes": sizes, "seeds": seeds, "repeats": repeats,
                         "target": args.target, "graphs": args.graphs, "max_cut_tensors": args.max_cut_tensors,
                         "graph_limit_s": args.graph_limit},
                "target": {"layers": TARGET_LAYERS, "seconds": TARGET_S}, "summary": summary,
                "anytime": anytime, "graphs": graphs, "runs": rows}, out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
