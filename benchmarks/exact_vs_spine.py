"""`exact` against the spine's `exact` (commit 07a1af3) on the same problems, side by side in one run.

The compile benchmark's "before" columns come from the spine run on its own cost model (its
hikey970 and per-layer overheads), so they time a different problem. This script times both
solvers on *today's* problem: the spine's search class is read from git history (``git show
07a1af3:hetcc/optimizers/exact.py``), its package imports replaced by the few helpers it used from
its ``dp`` module, and it is handed the slice tensors of today's ``exact.model.build`` (the same
numbers ours searches). Both must return plans of the same value; the time of each is the least
of ``--repeats`` runs, the two interleaved, per zoo model: energy under HERTI's medium deadline,
the compile benchmark's ``exact`` case.

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
MODELS = ("resnet50", "mobilenet_v2", "mobilenet_v2_1.3", "mobilenet_v2_1.4", "mnasnet0_5", "mnasnet1_0",
          "mnasnet1_3", "vgg16", "squeezenet1_1", "efficientnet_b0", "inception_v3", "googlenet")


def _git_show(path: str) -> str:
    try:
        return subprocess.run(["git", "show", f"{SPINE}:{path}"], cwd=HERE.parent, check=True,
                              capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(f"exact_vs_spine: cannot read {path} at commit {SPINE} ({exc}); run it in a full git "
                         "clone of hetcc") from None


def _grab(name: str, text: str) -> str:
    i = text.index(f"def {name}(")
    return text[i:text.find("\n\n\n", i)] + "\n\n\n"


def spine_module() -> types.ModuleType:
    """The spine's exact.py as a module of its own: its imports of the spine's package swapped for
    the three dp helpers it calls, InfeasibleError from today's hetcc (same meaning)."""
    src = _git_show("hetcc/optimizers/exact.py")
    dp = _git_show("hetcc/optimizers/dp.py")
    helpers = "".join(_grab(n, dp) for n in ("scalar_dp", "forward_totals", "path_sum"))
    src = src.replace("from ..errors import InfeasibleError\n", "from hetcc.errors import InfeasibleError\n")
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


def bench(name: str, spine: types.ModuleType, args: argparse.Namespace) -> dict[str, Any]:
    from hetcc.api import analyse
    from hetcc.planners import plan as run_planner
    from hetcc.planners.exact.model import build

    session = analyse(model_path(name, args.models_dir), "hikey970")
    problem, objective = session.problem, session.objective("energy", deadline="medium")
    ours = run_planner(problem, objective, "exact")
    path = spine_solve(spine, problem, objective)
    m = build(problem, objective)
    theirs = float(m.value(*m.totals(path)))
    mine = float(objective.value(ours.latency_ms, ours.energy_mj))
    if abs(theirs - mine) > 1e-6 * abs(mine):
        raise AssertionError(f"{name}: the two solvers disagree ({mine} vs {theirs})")
    t_ours, t_spine = [], []
    for _ in range(args.repeats):
        t = time.perf_counter()
        run_planner(problem, objective, "exact")
        t_ours.append((time.perf_counter() - t) * 1e3)
        t = time.perf_counter()
        spine_solve(spine, problem, objective)
        t_spine.append((time.perf_counter() - t) * 1e3)
    return {"model": name, "layers": problem.num_layers, "energy_mj": mine, "ours_ms": min(t_ours),
            "spine_ms": min(t_spine), "ratio": min(t_ours) / min(t_spine), "ours_runs_ms": t_ours,
            "spine_runs_ms": t_spine}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(MODELS), help="comma list of zoo names (default: the compile table's)")
    ap.add_argument("--repeats", type=int, default=15, help="timed runs of each solver per model (least kept)")
    ap.add_argument("--models-dir", type=Path, default=MODELS_DIR)
    ap.add_argument("--out", type=Path, default=RESULTS_DIR / "exact_vs_spine.json")
    args = ap.parse_args(argv)
    console = make_console()
    spine = spine_module()
    rows = [bench(n, spine, args) for n in args.models.split(",")]
    from rich.table import Table

    table = Table(title=f"exact, today vs the spine ({SPINE}), same problems (energy, medium deadline, hikey970)")
    for col in ("model", "layers", "ours ms", "spine ms", "ours / spine"):
        table.add_column(col, justify="left" if col == "model" else "right")
    for r in rows:
        table.add_row(r["model"], str(r["layers"]), f"{r['ours_ms']:.1f}", f"{r['spine_ms']:.1f}", f"{r['ratio']:.2f}")
    console.print(table)
    ratios = [r["ratio"] for r in rows]
    summary = {"median_ratio": statistics.median(ratios), "min_ratio": min(ratios), "max_ratio": max(ratios),
               "faster": sum(x < 1 for x in ratios), "models": len(ratios)}
    console.print(f"ours / spine: median {summary['median_ratio']:.2f}, {summary['min_ratio']:.2f}-"
                  f"{summary['max_ratio']:.2f}; faster on {summary['faster']} of {summary['models']}", highlight=False)
    write_json({"script": "exact_vs_spine", "date": utc_now(), "machine": machine_info(), "spine": SPINE,
                "args": {"models": args.models.split(","), "repeats": args.repeats}, "rows": rows,
                "summary": summary}, args.out)
    console.print(f"wrote {args.out}", highlight=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
