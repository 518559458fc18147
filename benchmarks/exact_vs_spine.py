"""`exact` and `dp` against the spine's (commit 07a1af3) on the same problems, side by side in one run.

The compile benchmark's "before" columns come from the spine run on its own cost model (its
hikey970 and per-layer overheads), so they time a different problem. This script times both
versions on *today's* problem:

* ``exact``: the spine's search class is read from git history (``git show
  07a1af3:hetcc/optimizers/exact.py``), its package imports replaced by the few helpers it used
  from its ``dp`` module, and it is handed the slice tensors of today's ``exact.model.build`` (the
  same numbers ours searches); energy under HERTI's medium deadline, the compile benchmark's case.
* ``dp``: the spine's planner built the dense [end, start, state] latency tensor over the
  maximum-frequency states (``SliceTables``, still in today's ``dp`` module for ``exact``) and ran
  its ``scalar_dp`` (Eq. 9) over it; today's ``dp.optimal`` runs the O(L S) windowed recurrence.

Each side is its planner function, returning an evaluated ``Plan`` (the spine's did too); the
registry's ``plan()`` adds the same feasibility-policy step to every planner, and its cost is
printed apart (``exact`` through ``plan()``). Both versions must return plans of the same value;
the time of each is the least of ``--repeats`` runs, all of them interleaved (the order rotated
each round), per zoo model.

    python benchmarks/exact_vs_spine.py                 # the 12 zoo models of the compile table
    python benchmarks/exact_vs_spine.py --models resnet50,vgg16 --repeats 31

Needs a git checkout holding commit 07a1af3 (a full clone does); writes
benchmarks/results/exact_vs_spine.json.
"""
from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import MODELS_DIR, RESULTS_DIR, machine_info, make_console, model_path, utc_now, write_json  # noqa: E402

SPINE = "07a1af3"
QUICK_MODEL = "squeezenet1_1"
MODELS = ("resnet50", "mobilenet_v2", "mobilenet_v2_1.3", "mobilenet_v2_1.4", "mnasnet0_5", "mnasnet1_0",
          "mnasnet1_3", "vgg16", "squeezenet1_1", "efficientnet_b0", "inception_v3", "googlenet")


def _git_show(path: str) -> str:
    try:
        return subprocess.run(["git", "show", f"{SPINE}:{path}"], cwd=HERE.parent, check=True,
                              capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        print(f"exact_vs_spine: cannot read {path} at commit {SPINE} (no such commit in this checkout); run it in "
              "a full git clone of hetcc (git fetch --unshallow in a shallow one)", file=sys.stderr)
        raise SystemExit(2) from None


def _grab(name: str, text: str) -> str:
    i = text.index(f"def {name}(")
    return text[i:text.find("\n\n\n", i)] + "\n\n\n"


def spine_module() -> types.ModuleType:
    """The spine's exact.py as a module of its own: its imports of the spine's package swapped for
    the three dp helpers it calls, InfeasibleError from today's hetcc (same meaning)."""
    src = _git_show("hetcc/optimizers/exact.py")
    dp = _git_show("hetcc/optimizers/dp.py")
    helpers = "".join(_grab(n, dp) for n in ("scalar_dp", "forward_totals", "path_sum"))
    src = src.replace("from ..errors import InfeasibleError\n", "from hetcc.core.errors import InfeasibleError\n")
    src = src.replace("from . import register\n", "def register(name):\n    return lambda f: f\n")
    src = re.sub(r"from \.dp import [^\n]*\n", "INF = float('inf')\nSliceTables = cell_costs = require_runnable = None\n",
                 src)
    src = re.sub(r"from \.problem import [^\n]*\n", "Objective = Plan = PlanningProblem = Slice = object\n", src)
    i = src.index("logger = logging.getLogger")
    src = src[:i] + helpers + src[i:]
    module = types.ModuleType("hetcc_spine_exact")
    exec(compile(src, f"{SPINE}:hetcc/optimizers/exact.py", "exec"), module.__dict__)
    return module


def spine_solve(spine: types.ModuleType, problem: Any, objective: Any) -> list:
    """The spine's search on today's tables of ``problem``: its path [(first, last, state)]."""
    from hetcc.planners.exact.model import build
    from hetcc.planners.problem import Slice

    m = build(problem, objective)
    s = spine._Search.__new__(spine._Search)      # its __init__ built the tables from its own problem class
    s.problem, s.prune, s._paths = None, True, {}
    s.obj = types.SimpleNamespace(metric=objective.metric, deadline_ms=objective.deadline_ms,
                                  power_cap_mw=objective.power_cap_mw, constrained=objective.constrained)
    s.metric, s.L, s.S = objective.metric, m.L, m.S
    s.D, s.Dtol, s.has_cap, s.c, s.tolX = m.deadline, m.Dtol, m.has_cap, m.c, m.tolX
    s.tables = types.SimpleNamespace(ok=m.ok)
    s.T3, s.E3, s.X3, s.ss, s.es = m.T3, m.E3, m.X3, m.ss, m.es
    s.cT = (m.cT.layer, m.cT.enter, m.cT.leave)
    s.cE = (m.cE.layer, m.cE.enter, m.cE.leave)
    s.cX = (m.cX.layer, m.cX.enter, m.cX.leave)
    # the spine's planner returned problem.evaluate(path), as ours does (the same Plan builder)
    s._plan = lambda path: problem.evaluate([Slice(int(f), int(l), int(st)) for f, l, st in path])
    return [(sl.first, sl.last, sl.state) for sl in s.run().slices]


def spine_dp(spine: types.ModuleType, problem: Any) -> Any:
    """The spine's ``dp`` for latency on today's problem: the dense tensor over the maximum-frequency
    states, its Eq. 9 (``scalar_dp``), the plan evaluated."""
    import numpy as np

    from hetcc.planners.dp import SliceTables, cell_costs, require_runnable
    from hetcc.planners.problem import Slice

    states = np.flatnonzero(problem.states.is_fmax)
    tables = SliceTables(problem, cell_costs(problem), states)
    cost = tables.latency()
    require_runnable(problem, tables, cost, "device at its maximum frequency")
    _, path = spine.scalar_dp(cost)
    return problem.evaluate([Slice(f, l, int(states[s])) for f, l, s in path])


def bench(name: str, spine: types.ModuleType, args: argparse.Namespace) -> dict[str, Any]:
    from hetcc.compiler.api import analyse
    from hetcc.planners import plan as run_planner
    from hetcc.planners.dp import optimal
    from hetcc.planners.exact import exact
    from hetcc.planners.exact.model import build

    session = analyse(model_path(name, args.models_dir), "hikey970")
    problem, objective = session.problem, session.objective("energy", deadline="medium")
    ours = exact(problem, objective)
    path = spine_solve(spine, problem, objective)
    m = build(problem, objective)
    theirs = float(m.value(*m.totals(path)))
    mine = float(objective.value(ours.latency_ms, ours.energy_mj))
    if abs(theirs - mine) > 1e-6 * abs(mine):
        raise AssertionError(f"{name}: the two exact solvers disagree ({mine} vs {theirs})")
    fast, fast_spine = optimal(problem, "latency").latency_ms, spine_dp(spine, problem).latency_ms
    if abs(fast - fast_spine) > 1e-9 * fast:
        raise AssertionError(f"{name}: the two dp solvers disagree ({fast} vs {fast_spine})")
    runs: dict[str, tuple] = {
        "ours": lambda: exact(problem, objective),
        "spine": lambda: spine_solve(spine, problem, objective),
        "plan": lambda: run_planner(problem, objective, "exact"),
        "dp": lambda: optimal(problem, "latency"),
        "dp_spine": lambda: spine_dp(spine, problem),
    }
    times: dict[str, list[float]] = {k: [] for k in runs}
    keys = list(runs)
    for r in range(args.repeats):
        for k in keys[r % len(keys):] + keys[:r % len(keys)]:
            t = time.perf_counter()
            runs[k]()
            times[k].append((time.perf_counter() - t) * 1e3)
    best = {k: min(v) for k, v in times.items()}
    return {"model": name, "layers": problem.num_layers, "energy_mj": mine, "ours_ms": best["ours"],
            "spine_ms": best["spine"], "ratio": best["ours"] / best["spine"], "plan_ms": best["plan"],
            "dp_ms": best["dp"], "dp_spine_ms": best["dp_spine"], "dp_ratio": best["dp"] / best["dp_spine"],
            "runs_ms": times}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(MODELS), help="comma list of zoo names (default: the compile table's)")
    ap.add_argument("--repeats", type=int, default=15, help="timed runs of each solver per model (least kept)")
    ap.add_argument("--models-dir", type=Path, default=MODELS_DIR)
    ap.add_argument("--out", type=Path, default=None, help="default benchmarks/results/exact_vs_spine.json "
                    "(exact_vs_spine-quick.json with --quick)")
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_MODEL} only, 3 repeats (the tests run it)")
    args = ap.parse_args(argv)
    if args.quick:
        args.models, args.repeats = QUICK_MODEL, 3
    args.out = args.out or RESULTS_DIR / f"exact_vs_spine{'-quick' if args.quick else ''}.json"
    console = make_console()
    spine = spine_module()
    rows = [bench(n, spine, args) for n in args.models.split(",")]
    from rich.table import Table

    table = Table(title=f"exact and dp, today vs the spine ({SPINE}), same problems (hikey970; exact: energy, "
                        "medium deadline; dp: latency)")
    for col in ("model", "layers", "exact ms", "spine ms", "ours / spine", "via plan() ms", "dp ms",
                "spine dp ms", "dp ours / spine"):
        table.add_column(col, justify="left" if col == "model" else "right")
    for r in rows:
        table.add_row(r["model"], str(r["layers"]), f"{r['ours_ms']:.2f}", f"{r['spine_ms']:.2f}", f"{r['ratio']:.2f}",
                      f"{r['plan_ms']:.2f}", f"{r['dp_ms']:.3f}", f"{r['dp_spine_ms']:.3f}", f"{r['dp_ratio']:.2f}")
    console.print(table)
    summary = {}
    for what, key in (("exact", "ratio"), ("dp", "dp_ratio")):
        ratios = [r[key] for r in rows]
        summary[what] = {"median_ratio": statistics.median(ratios), "min_ratio": min(ratios),
                         "max_ratio": max(ratios), "faster": sum(x < 1 for x in ratios), "models": len(ratios)}
        sm = summary[what]
        console.print(f"{what}, ours / spine: median {sm['median_ratio']:.2f}, {sm['min_ratio']:.2f}-"
                      f"{sm['max_ratio']:.2f}; faster on {sm['faster']} of {sm['models']}", highlight=False)
    extra = [r["plan_ms"] - r["ours_ms"] for r in rows]
    summary["plan_overhead_ms"] = statistics.median(extra)
    console.print(f"plan() around exact adds {summary['plan_overhead_ms']:.2f} ms at the median (the registry and "
                  "the feasibility policy, the same for every planner)", highlight=False)
    write_json({"script": "exact_vs_spine", "date": utc_now(), "machine": machine_info(), "spine": SPINE,
                "args": {"models": args.models.split(","), "repeats": args.repeats, "quick": args.quick}, "rows": rows,
                "summary": summary}, args.out)
    console.print(f"wrote {args.out}", highlight=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
