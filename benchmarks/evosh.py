"""EvoSh's experiments (Sec. V, Figs. 4-7) on hetcc's ``jetson-tx2`` board model, beside the exact optimum.

Three searches of the ``evosh`` planner (``hetcc.planners.evosh.search``): ``evosh`` (evolution with
shaving, the paper), ``evolution`` (the same without shaving) and ``random``, each run for 200
evaluated configurations (steps) under a power cap, beside the space's exact optimum (a DP over
runs of same-device blocks for the mapping space, enumeration for the hardware space) and, for context, the
layer-granularity optimum with a DVFS level per slice (``--planner exact``: what no block-level
search can beat).

* Fig. 4: mapping space (blocks -> CPU/GPU at top clocks), EfficientNet-B0 / B2 / B4 in 18 / 20 / 34
  blocks, two caps each (1/3 and 2/3 of the way from the all-CPU to the all-GPU mapping's average
  power), 5 seeds: mean and 95% Student-t interval of the best latency (ms) and FPS = 1000 / ms at
  steps 25 / 50 / 100 / 200.
* Fig. 5: B0 in 9 blocks (512 mappings), the same two caps, 20 runs each: how many reach the optimum.
* Fig. 6: hardware space (A57 / Denver cores, EMC clock, A57 / Denver / GPU DVFS levels: 308,880
  configurations; all-GPU mapping), B0 and B4, 100 runs, mean best latency vs steps (the sweep's
  cap at 5/12 of the power range).
* Fig. 7: power-cap sweep on the hardware space: 6 caps at the middles of six equal slices of the
  enumerated power range; mean over 100 runs at 200 steps vs the optimum.

Targets (PASS / MISS with the numbers): (1) every evosh run reaches the 9-block optimum within the
steps; (2) hardware space: evosh's mean within 2% of the optimum at every cap; (3) evosh's mean
best latency at the last step is no worse than evolution's and random's on every space and cap
(ties counted apart); (4) evosh's own time per run (the CPU time of the planner's thread minus its
CPU time inside ``space.evaluate``: a busy machine does not inflate it) under 1 s, median over the
runs of each case; the wall-time overhead is reported beside it. Plots: <out>-fig4/5/6/7.png.

A run that stops before its steps ("stopped early") is one whose search gave up drawing a fresh
configuration (``search.MAX_REDRAWS`` random draws all shaved or evaluated): its best is final and
its curve is padded with it.

    python benchmarks/evosh.py                   # everything (~9 min on 2 cores)
    python benchmarks/evosh.py --quick           # B0 in 9 blocks, 3 seeds, 50 steps, 2 hardware runs at 2 caps
    python benchmarks/evosh.py --parts fig5 --fig5-runs 50 --markdown /tmp/evosh.md
    python benchmarks/evosh.py --parts fig4 --models B4   # Fig. 4's B4 rows only

The runs (and the time-boxed layer-level ``exact`` plans) are the cells of one ``hetcc sweep``
(embedded Ray, ``--workers``; ``--quick``: in this process, without Ray; its table
``<out>-sweep/cells.csv``, resumed by a rerun unless
``--fresh``); this script computes the references (caps, optima, enumerations) and judges the rows.
A run's time inside ``space.evaluate`` is the planner's ``eval_s`` statistic.

Why one script of ~750 lines: four experiments share one set of runs, one table printer and one
JSON writer; split apart they would each repeat the set-up (models, spaces, caps, optima).
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

if (HERE := str(Path(__file__).resolve().parent)) not in sys.path:  # _common.py lives beside this script
    sys.path.insert(0, HERE)
from _common import MODELS_DIR, RESULTS_DIR, machine_info, make_console, model_path, utc_now, write_json  # noqa: E402

from hetcc.planners.evosh import optimum as space_optimum  # noqa: E402
from hetcc.planners.evosh.space import ConfigSpace  # noqa: E402

SCRIPT = Path(__file__).stem
TARGET = "jetson-tx2"
ALGORITHMS = ("evosh", "evolution", "random")
MODELS = {"B0": "efficientnet_b0", "B2": "efficientnet_b2", "B4": "efficientnet_b4"}
FIG4_BLOCKS = {"B0": 18, "B2": 20, "B4": 34}         # EvoSh Sec. V-A
FIG5_BLOCKS = 9
HW_MODELS = ("B0", "B4")                              # EvoSh Sec. V-B
MAPPING_FRACTIONS = (1 / 3, 2 / 3)                    # of the way from all-CPU to all-GPU power
TABLE_STEPS = (25, 50, 100, 200)
SUMMARY_STEPS = (1, 5, 10, 25, 50, 100, 150, 200)     # each run's curve kept at these steps (and its last)
GAP_TARGET = 0.02
OVERHEAD_TARGET_S = 1.0
RTOL = 1e-9                                           # "reached the optimum" / "tie"
PAPER = {
    "board": "NVIDIA Jetson TX2 (measured on the board; TensorFlow)",
    "fig4": {"blocks": FIG4_BLOCKS, "seeds": 5, "caps_per_model": 2, "steps": 200, "interval": "95% CI of 5 runs",
             "claim": "EvoSh consistently outperforms evolution and random"},
    "fig5": {"blocks": 9, "configurations": 512, "cap_mw": 5000, "runs": 20,
             "claim": "EvoSh converges to the optimal configuration; the others to suboptimal ones"},
    "fig6": {"configurations": 308_880, "models": ["B0", "B4"], "runs": 100,
             "claim": "EvoSh outperforms the others and reaches very close to the optimum in 200 steps"},
    "fig7": {"claim": "EvoSh outperforms the others at every cap and gets very close to the optimum"},
    "discussion": "improvements of 1-2 FPS, 10-30%",
}

# Student t quantiles t_{0.975, df}, df = 1..30 (beyond: the Cornish-Fisher expansion below)
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)


def t975(df: int) -> float:
    if df <= 30:
        return _T975[df - 1]
    z = 1.959963985
    return (z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
            + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * df ** 3))


def interval(xs: Any) -> dict[str, Any]:
    """Mean and 95% Student-t interval (mean +- t * s / sqrt(n)); half = 0 for n = 1."""
    x = np.asarray(list(xs), dtype=float)
    n, mean = len(x), float(np.mean(x))
    half = float(t975(n - 1) * np.std(x, ddof=1) / math.sqrt(n)) if n > 1 else 0.0
    return {"n": n, "mean": mean, "lo": mean - half, "hi": mean + half, "half": half}


def num(x: Any, digits: int = 6) -> Any:
    """A float for JSON: None for inf / nan, ``digits`` significant digits."""
    if x is None:
        return None
    x = float(x)
    return None if not math.isfinite(x) else float(f"{x:.{digits}g}")


def fps(ms: float) -> float:
    return 1000.0 / ms if math.isfinite(ms) and ms > 0 else 0.0


def pct(gap: float | None) -> str:
    """A relative gap as +x.xx% (rounding noise of a mean of equal values is 0)."""
    if gap is None:
        return "–"
    return f"{(0.0 if abs(gap) < 1e-9 else gap) * 100:+.2f}%"


_SCALAR = r'(?:-?[0-9][0-9.eE+-]*|null|true|false)'
_LIST = re.compile(r'\[\n\s*(' + _SCALAR + r'(?:,\n\s*' + _SCALAR + r')*)\n\s*\]')


def compact_json(path: Path) -> None:
    """Put each list of numbers of the written JSON on one line (write_json's indent=1 gives every
    number its own line: the per-run lists would take most of the file)."""
    text = path.read_text()
    path.write_text(_LIST.sub(lambda m: "[" + re.sub(r',\n\s*', ', ', m.group(1)) + "]", text))


# ---- running the searches ----------------------------------------------------------------------

def run_of_row(row: dict, steps: int, opt_ms: float) -> dict:
    """One search run from its sweep row: best latency within the cap (inf when none), the
    best-so-far curve padded to ``steps`` (a run that evaluated or shaved the whole space stops
    early: its best is final), the seconds inside ``space.evaluate`` (the board's share) and the rest."""
    st = json.loads(row["stats"]) if row.get("stats") else {}
    raw = [math.inf if v is None else float(v) for v in st.get("curve_ms", [])]
    curve = raw + [raw[-1] if raw else math.inf] * (steps - len(raw))
    best = float(row["latency_ms"]) if row["status"] == "ok" else math.inf
    reached = next((i + 1 for i, v in enumerate(curve) if v <= opt_ms * (1 + RTOL)), None)
    first_best = next((i + 1 for i, v in enumerate(curve) if v == best), None) if math.isfinite(best) else None
    wall = float(row["planner_seconds"]) if row["planner_seconds"] else math.nan
    inside = float(st.get("eval_s", 0.0))
    # CPU seconds of the planner's thread in the search and in space.evaluate: what the search itself
    # costs, not what the other processes of a busy machine took from it (wall - inside is both)
    own_cpu = (float(st["search_cpu_s"]) - float(st.get("eval_cpu_s", 0.0))) if "search_cpu_s" in st else math.nan
    return {"seed": int(row["seed"]), "best_ms": best, "steps_run": int(st.get("steps", 0)),
            "exhausted": bool(st.get("exhausted", False)), "redraws": int(st.get("redraws", 0)),
            "reached_optimum_step": reached, "first_best_step": first_best, "wall_s": wall, "eval_s": inside,
            "overhead_s": wall - inside, "overhead_cpu_s": own_cpu, "curve": curve, "error": row["error"] if row["status"] == "error" else None}


def summarise_runs(runs: dict[str, list[dict]], opt_ms: float, steps: int) -> dict[str, Any]:
    summary = {}
    for alg, rows in runs.items():
        curves = np.array([r["curve"] for r in rows], dtype=float)                 # [runs, steps]
        f = np.where(np.isfinite(curves) & (curves > 0), 1000.0 / np.where(curves > 0, curves, 1), 0.0)
        at = {}
        for k in (s for s in TABLE_STEPS if s <= steps):
            col = curves[:, k - 1]
            ok = np.isfinite(col)
            at[str(k)] = {"found": int(ok.sum()), "ms": interval(col) if ok.all() else None,
                          "fps": interval(f[:, k - 1])}
        n = len(rows)
        fmean = f.mean(axis=0)
        if n > 1:
            fhalf = t975(n - 1) * f.std(axis=0, ddof=1) / math.sqrt(n)
        else:
            fhalf = np.zeros(steps)
        best = np.array([r["best_ms"] for r in rows])
        reached = [r["reached_optimum_step"] for r in rows if r["reached_optimum_step"] is not None]
        final = interval(best) if np.isfinite(best).all() else None
        summary[alg] = {
            "runs": n, "at": at, "final_ms": final, "final_fps": interval(f[:, -1]),
            "found": int(np.isfinite(best).sum()),
            "gap_mean": (final["mean"] / opt_ms - 1) if final else None,
            "gap_worst": float(best.max() / opt_ms - 1) if final else None,
            "reached_optimum": len(reached),
            "reached_step_median": statistics.median(reached) if reached else None,
            "reached_step_max": max(reached) if reached else None,
            "exhausted": sum(r["exhausted"] for r in rows),
            "steps_run_median": statistics.median(r["steps_run"] for r in rows),
            "overhead_s_median": statistics.median(r["overhead_s"] for r in rows),
            "overhead_s_max": max(r["overhead_s"] for r in rows),
            "overhead_cpu_s_median": statistics.median(r["overhead_cpu_s"] for r in rows),
            "overhead_cpu_s_max": max(r["overhead_cpu_s"] for r in rows),
            "eval_s_median": statistics.median(r["eval_s"] for r in rows),
            "wall_s_median": statistics.median(r["wall_s"] for r in rows),
            "redraws_median": statistics.median(r["redraws"] for r in rows),
            "curve_fps": {"mean": [num(x, 5) for x in fmean], "half": [num(x, 3) for x in fhalf]},
        }
    return summary


def compact_runs(runs: dict[str, list[dict]], steps: int, opt_ms: float) -> dict[str, Any]:
    """Each run's numbers for the JSON, one list per field; its curve as the best latency's gap to
    the optimum (best / optimum - 1, 6 decimals; null before anything within the cap) at ``curve_steps``.
    wall s = eval_s + overhead_s."""
    keep = sorted({s for s in SUMMARY_STEPS if s <= steps} | {steps})
    gap = lambda ms: round(ms / opt_ms - 1, 6) if math.isfinite(ms) else None  # noqa: E731
    out = {"curve_steps": keep}
    for alg, rows in runs.items():
        out[alg] = {"seed": [r["seed"] for r in rows], "best_ms": [num(r["best_ms"], 12) for r in rows],
                    "steps_run": [r["steps_run"] for r in rows], "redraws": [r["redraws"] for r in rows],
                    "reached_optimum_step": [r["reached_optimum_step"] for r in rows],
                    "first_best_step": [r["first_best_step"] for r in rows],
                    "eval_s": [num(r["eval_s"], 4) for r in rows],
                    "overhead_s": [num(r["overhead_s"], 4) for r in rows],
                    "overhead_cpu_s": [num(r["overhead_cpu_s"], 4) for r in rows],
                    "curve_gap": [[gap(r["curve"][s - 1]) for s in keep] for r in rows]}
    return out


# ---- spaces, caps and optima -------------------------------------------------------------------

def optimum(space: ConfigSpace, cap: float) -> dict[str, Any]:
    t0 = time.perf_counter()
    p = space_optimum(space, cap)
    return {"latency_ms": p.latency_ms, "fps": fps(p.latency_ms), "power_mw": p.average_power_mw,
            "method": p.stats["method"], "config": p.stats["config"], "seconds": time.perf_counter() - t0}


def enumerate_hardware(space: ConfigSpace) -> tuple[np.ndarray, np.ndarray]:
    """Latency and average power of every configuration of the hardware space (per knob
    configuration, every DVFS combination at once: ``ConfigSpace._grid``, what ``exhaustive`` uses)."""
    knob_dims = [d for d in space.dims if d.device is None]
    freq_dims = [d for d in space.dims if d.device is not None]
    shape = tuple(d.size for d in freq_dims)
    Ts, Ps = [], []
    for kpos in itertools.product(*(range(d.size) for d in knob_dims)):
        prob = space.problem_at({d.name: d.values[p] for d, p in zip(knob_dims, kpos)})
        T, E = space._grid(prob, space.mapping, freq_dims)
        T, E = np.broadcast_to(T, shape), np.broadcast_to(E, shape)
        with np.errstate(invalid="ignore", divide="ignore"):
            Ts.append(T.ravel())
            Ps.append(np.where(np.isfinite(T) & (T > 0), E / T * 1000.0, 0.0).ravel())
    return np.concatenate(Ts), np.concatenate(Ps)


def distinct_pairs(T: np.ndarray, P: np.ndarray) -> int:
    """How many distinct (latency to 9 decimals, power to 6) pairs: ``len({(round(t, 9), round(p, 6)) ...})``
    computed on the arrays (numpy's rounding, what ``round`` of a numpy float does)."""
    if T.size == 0:
        return 0
    return int(np.unique(np.stack([np.round(T, 9), np.round(P, 6)], axis=1), axis=0).shape[0])


def enumerate_mapping(space: ConfigSpace) -> tuple[np.ndarray, np.ndarray]:
    vals = np.array([space.evaluate(c)[:2] for c in itertools.product((0, 1), repeat=len(space.starts))])
    return vals[:, 0], vals[:, 1]


def cap_text(cap_mw: float) -> str:
    """A cap as the sweep spec spells it (6 decimals of mW: the value every run and optimum uses)."""
    return f"{cap_mw:.6f}mW"


class Bench:
    """Phase 1 here: each case's space, caps, optimum and enumeration (the references); phase 2:
    every search run (and the time-boxed layer-level exact plans) as the cells of one ``hetcc sweep``;
    phase 3 (``attach``): the sweep's rows back into the cases."""

    def __init__(self, args: argparse.Namespace, log: Callable[[str], None]) -> None:
        import hetcc

        self.args, self.log, self._hetcc = args, log, hetcc
        self.problems: dict[str, Any] = {}
        self.paths: dict[str, str] = {}
        self.models: list[dict] = []
        self.grids: list[dict] = []
        self.layer_caps: dict[str, list[str]] = {}

    def problem(self, label: str):
        if label not in self.problems:
            t0 = time.perf_counter()
            name = MODELS[label]
            path = model_path(name, self.args.models_dir).resolve()
            p = self._hetcc.analyse(path, target=TARGET).problem
            self.problems[label], self.paths[label] = p, str(path)
            self.models.append({"label": label, "model": name, "layers": p.num_layers, "states": p.num_states,
                                "devices": list(p.devices), "analyse_s": time.perf_counter() - t0})
        return self.problems[label]

    def _runs(self, case: dict, label: str, options: str, runs: int) -> None:
        """The case's search runs as one grid of the sweep: each algorithm x seeds 0..runs-1."""
        case["_planners"] = {alg: f"evosh {options} steps={self.args.steps} search={alg}" for alg in ALGORITHMS}
        case["_runs"] = runs
        self.grids.append({"models": [self.paths[label]], "power_caps": [case["_cap"]],
                           "planners": list(case["_planners"].values()), "seeds": list(range(runs))})
        if self.args.layer_exact_seconds > 0:
            self.layer_caps.setdefault(label, [])
            if case["_cap"] not in self.layer_caps[label]:
                self.layer_caps[label].append(case["_cap"])

    def mapping_case(self, part: str, label: str, blocks: int, runs: int) -> list[dict]:
        space = ConfigSpace.build(self.problem(label), "mapping", blocks=blocks)
        n = len(space.starts)
        p_cpu, p_gpu = space.evaluate((0,) * n)[1], space.evaluate((1,) * n)[1]
        enum = enumerate_mapping(space) if n <= 12 else None
        cases = []
        for frac in MAPPING_FRACTIONS:
            text = cap_text(p_cpu + frac * (p_gpu - p_cpu))
            cap = float(text[:-2])
            self.log(f"{part}: {label} {n} blocks, cap {cap:.0f} mW: optimum")
            case = {"part": part, "model": label, "space": "mapping", "blocks": n, "space_size": space.size,
                    "power_all_cpu_mw": p_cpu, "power_all_gpu_mw": p_gpu, "cap_fraction": frac, "cap_mw": cap,
                    "optimum": optimum(space, cap), "_label": label, "_cap": text}
            if enum is not None:
                T, P = enum
                ok = np.isfinite(T) & (P <= cap * (1 + RTOL))
                case.update(feasible_configs=int(ok.sum()), enumerated_optimum_ms=float(T[ok].min()),
                            power_range_mw=[float(P[np.isfinite(T)].min()), float(P[np.isfinite(T)].max())])
            self._runs(case, label, f"space=mapping blocks={blocks}", runs)
            cases.append(case)
        return cases

    def hardware_cases(self, label: str) -> list[dict]:
        space = ConfigSpace.build(self.problem(label), "hardware")
        t0 = time.perf_counter()
        T, P = enumerate_hardware(space)
        enum_s = time.perf_counter() - t0
        valid = np.isfinite(T)
        lo, hi = float(P[valid].min()), float(P[valid].max())
        distinct = distinct_pairs(T[valid], P[valid])
        k = self.args.hw_caps
        cases = []
        for i in range(k):
            frac = (2 * i + 1) / (2 * k)
            text = cap_text(lo + frac * (hi - lo))
            cap = float(text[:-2])
            self.log(f"hardware: {label}, cap {cap:.0f} mW ({i + 1}/{k}): optimum")
            ok = valid & (P <= cap * (1 + RTOL))
            case = {"part": "hardware", "model": label, "space": "hardware", "mapping": "gpu", "space_size": space.size,
                    "dims": {d.name: d.size for d in space.dims}, "distinct_latency_power": distinct,
                    "power_range_mw": [lo, hi], "enumeration_s": enum_s, "cap_index": i, "cap_fraction": frac,
                    "cap_mw": cap, "feasible_configs": int(ok.sum()), "enumerated_optimum_ms": float(T[ok].min()),
                    "optimum": optimum(space, cap), "_label": label, "_cap": text}
            self._runs(case, label, "space=hardware", self.args.hw_runs)
            cases.append(case)
        return cases

    def sweep(self, out: Path) -> tuple[dict, list[dict], Path]:
        """Every run as one ``hetcc sweep`` (embedded Ray, ``--workers``); a rerun resumes the table
        in ``<out>-sweep/`` unless ``--fresh``."""
        import shutil

        from hetcc.experiments.sweep import parse_spec, run_sweep

        grids = list(self.grids)
        for label, caps in self.layer_caps.items():   # the layer-granularity optimum, time-boxed (anytime)
            grids.append({"models": [self.paths[label]], "power_caps": caps, "planners": ["exact"],
                          "budget_seconds": self.args.layer_exact_seconds})
        doc = {"models": [self.paths[m["label"]] for m in self.models], "targets": [TARGET],
               "objectives": ["latency"], "gap_to": "none", "grid": grids}
        root = out.with_name(f"{out.stem}-sweep")
        if self.args.fresh and root.exists():
            shutil.rmtree(root)
        cells = sum(len(g["planners"]) * len(g.get("seeds", [0])) * len(g["power_caps"]) for g in grids)
        where = "in this process" if self.args.workers == 0 else f"on {self.args.workers or 'every'} Ray worker(s)"
        self.log(f"sweep: {cells} cells {where}")
        result = run_sweep(parse_spec(doc, root / "spec.json"), root, workers=self.args.workers,
                           progress=sys.stderr.isatty())
        (root / "spec.json").write_text(json.dumps(doc, indent=1) + "\n")
        self.log(f"sweep: {result.ran} planned now, {result.skipped_done} from {root}/cells.csv")
        return doc, result.rows, root

    def attach(self, cases: list[dict], rows: list[dict]) -> None:
        from hetcc.experiments.sweep import planner_entry

        label_of = {path: label for label, path in self.paths.items()}
        by: dict[tuple, list[dict]] = {}
        for r in rows:
            by.setdefault((label_of.get(r["model"]), r["power_cap"], r["planner"], r["options"]), []).append(r)
        for c in cases:
            label, cap, opt_ms = c.pop("_label"), c.pop("_cap").lower(), c["optimum"]["latency_ms"]
            runs_ = {}
            for alg, entry in c.pop("_planners").items():
                sel = sorted(by.get((label, cap, *planner_entry(entry, {}, Path("evosh"), "")), []),
                             key=lambda r: int(r["seed"]))
                runs_[alg] = [run_of_row(r, self.args.steps, opt_ms) for r in sel]
                if len(sel) != c["_runs"] or any(r["error"] for r in runs_[alg]):
                    raise SystemExit(f"{case_name(c)} {alg}: {len(sel)} of {c['_runs']} runs in the sweep; "
                                     f"errors: {[r['error'] for r in runs_[alg] if r['error']][:3]}")
            c.pop("_runs")
            c["summary"] = summarise_runs(runs_, opt_ms, self.args.steps)
            c["runs"] = compact_runs(runs_, self.args.steps, opt_ms)
            le = by.get((label, cap, "exact", "{}"), [])
            c["layer_exact"] = layer_exact_of(le[0]) if le else {"error": "skipped (--layer-exact-seconds 0)"}


def layer_exact_of(row: dict) -> dict[str, Any]:
    """The layer-granularity optimum with a DVFS level per slice, time-boxed (exact is anytime:
    past the budget it returns its best plan and the proven gap)."""
    if row["status"] != "ok":
        return {"error": row["error"] or row["status"], "seconds": float(row["planner_seconds"] or 0)}
    st = json.loads(row["stats"]) if row["stats"] else {}
    lat = float(row["latency_ms"])
    return {"latency_ms": lat, "power_mw": float(row["energy_mj"]) / lat * 1000.0, "slices": int(row["slices"]),
            "optimal": bool(st.get("optimal", False)), "gap": st.get("gap"),
            "seconds": float(row["planner_seconds"])}


# ---- targets -----------------------------------------------------------------------------------

def case_name(c: dict) -> str:
    where = f"{c['blocks']} blocks" if c["space"] == "mapping" else "hardware"
    return f"{c['part']} {c['model']} {where} @ {c['cap_mw']:.0f} mW"


def targets(cases: list[dict], args: argparse.Namespace) -> list[dict]:
    out = []
    s = args.steps
    fig5 = [c for c in cases if c["part"] == "fig5"]
    if fig5:
        parts = [f"{c['summary']['evosh']['reached_optimum']}/{c['summary']['evosh']['runs']} at "
                 f"{c['cap_mw']:.0f} mW (latest step {c['summary']['evosh']['reached_step_max']})" for c in fig5]
        ok = all(c["summary"]["evosh"]["reached_optimum"] == c["summary"]["evosh"]["runs"] for c in fig5)
        out.append({"id": 1, "name": f"every evosh run reaches the {FIG5_BLOCKS}-block optimum within {s} steps",
                    "pass": ok, "measured": "; ".join(parts)})
    hw = [c for c in cases if c["part"] == "hardware"]
    if hw:
        gaps = [(c["summary"]["evosh"]["gap_mean"], c) for c in hw]
        worst = max(gaps, key=lambda g: math.inf if g[0] is None else g[0])
        per = []
        for m in dict.fromkeys(c["model"] for c in hw):
            mine = [g for g, c in gaps if c["model"] == m]
            per.append(f"{m}: worst {max(mine) * 100:.2f}%" if None not in mine else f"{m}: a run found nothing")
        per = ", ".join(per)
        ok = all(g is not None and g <= GAP_TARGET for g, _ in gaps)
        out.append({"id": 2, "name": f"hardware space: evosh's mean ({args.hw_runs} runs, {s} steps) within "
                    f"{GAP_TARGET:.0%} of the optimum at every cap", "pass": ok,
                    "measured": f"{per} (worst case {case_name(worst[1])})"})
    if cases:
        wins, ties, losses = [], [], []
        for c in cases:
            e = c["summary"]["evosh"]["final_ms"]
            for other in ("evolution", "random"):
                o = c["summary"][other]["final_ms"]
                ev = math.inf if e is None else e["mean"]
                ov = math.inf if o is None else o["mean"]
                label = f"{case_name(c)} vs {other}"
                if ev == ov or (math.isfinite(ov) and abs(ev - ov) <= RTOL * ov):
                    ties.append(label)
                elif ev < ov:
                    wins.append(label)
                else:
                    sig = ("95% intervals overlap: not significant" if e is None or o is None or e["lo"] <= o["hi"]
                           else "significant: the 95% intervals do not overlap")
                    losses.append(f"{label} ({ev:.3f} vs {ov:.3f} ms; {sig})")
        total = len(wins) + len(ties) + len(losses)
        meas = f"{len(wins)} wins, {len(ties)} ties (equal means), {len(losses)} losses of {total}"
        if losses:
            meas += "; losses: " + "; ".join(losses)
        out.append({"id": 3, "name": f"evosh's mean best latency at {s} steps no worse than evolution's and random's "
                    "on every space and cap", "pass": not losses, "measured": meas, "wins": wins, "ties": ties,
                    "losses": losses})
        med = [(c["summary"]["evosh"]["overhead_cpu_s_median"], c) for c in cases]
        worst = max(med, key=lambda m: m[0])
        top = max(c["summary"]["evosh"]["overhead_cpu_s_max"] for c in cases)
        out.append({"id": 4, "name": f"evosh's own CPU time (its thread's, minus space.evaluate's) under "
                    f"{OVERHEAD_TARGET_S:g} s per "
                    f"{s}-step run, median over each case's runs", "pass": worst[0] < OVERHEAD_TARGET_S,
                    "measured": f"worst median {worst[0]:.3f} s ({case_name(worst[1])}); longest single run "
                    f"{top:.3f} s; median of the medians {statistics.median(m for m, _ in med):.3f} s"})
    return out


# ---- printing ----------------------------------------------------------------------------------

class Report:
    """Rich tables on the console, the same as markdown for ``--markdown``."""

    def __init__(self, console: Any) -> None:
        self.console, self.md = console, []

    def table(self, title: str, headers: list[str], body: list[list[str]]) -> None:
        from rich.table import Table

        self.console.print(f"\n[bold]{title}[/]", highlight=False)
        t = Table()
        for i, h in enumerate(headers):
            t.add_column(h, justify="left" if i == 0 else "right")
        for row in body:
            t.add_row(*row)
        self.console.print(t)
        self.md += [f"**{title}**", "", "| " + " | ".join(headers) + " |",
                    "|" + "|".join("---" if i == 0 else "---:" for i in range(len(headers))) + "|",
                    *("| " + " | ".join(r) + " |" for r in body), ""]

    def line(self, text: str) -> None:
        self.console.print(text, highlight=False, markup=False)
        self.md += [text, ""]


def cell(st: dict | None, spec: str = ".2f", found: tuple[int, int] | None = None) -> str:
    if st is None:
        return f"– ({found[0]}/{found[1]} found)" if found else "–"
    return f"{st['mean']:{spec}} ±{st['half']:{spec}}"


def layer_cell(le: dict) -> str:
    if "error" in le:
        return "infeasible" if "Infeasible" in le["error"] else "–"
    return f"{le['latency_ms']:.2f}" + ("" if le["optimal"] else f" (gap ≤{le['gap'] * 100:.1f}%)")


def checkpoint_table(rep: Report, title: str, cases: list[dict], steps: int) -> None:
    ks = [k for k in TABLE_STEPS if k <= steps]
    body = []
    for c in cases:
        where = f"{c['model']} {c['blocks']}b" if c["space"] == "mapping" else c["model"]
        for alg in ALGORITHMS:
            s = c["summary"][alg]
            row = [where, f"{c['cap_mw']:.0f}", alg]
            for k in ks:
                a = s["at"][str(k)]
                row.append(f"{cell(a['ms'], found=(a['found'], s['runs']))} ms · {cell(a['fps'], '.1f')} fps")
            body.append(row)
        o = c["optimum"]
        body.append([where, f"{c['cap_mw']:.0f}", "optimum", *([f"{o['latency_ms']:.2f} ms · {o['fps']:.1f} fps"]
                                                             * len(ks))])
    rep.table(title, ["model", "cap mW", "search", *(f"step {k}" for k in ks)], body)


def show(rep: Report, cases: list[dict], args: argparse.Namespace, tg: list[dict]) -> None:
    n = {p: {c["summary"]["evosh"]["runs"] for c in cases if c["part"] == p} for p in ("fig4", "fig5", "hardware")}
    body, seen = [], set()
    for c in cases:
        if (c["part"], c["model"]) in seen:
            continue
        seen.add((c["part"], c["model"]))
        space = f"mapping, {c['blocks']} blocks" if c["space"] == "mapping" else (
            f"hardware ({', '.join(f'{k} {v}' for k, v in c['dims'].items())}; all-GPU)")
        power = (f"{c['power_all_cpu_mw']:.0f} (all-CPU) – {c['power_all_gpu_mw']:.0f} (all-GPU)"
                 if c["space"] == "mapping" else f"{c['power_range_mw'][0]:.0f} – {c['power_range_mw'][1]:.0f}")
        caps = [x for x in cases if x["part"] == c["part"] and x["model"] == c["model"]]
        distinct = str(c.get("distinct_latency_power", "–"))
        body.append([c["part"], c["model"], space, f"{c['space_size']:,}", distinct, power,
                     ", ".join(f"{x['cap_mw']:.0f}" for x in caps)])
    rep.table("Spaces and caps (mW; mapping caps at 1/3 and 2/3 of all-CPU -> all-GPU power; hardware caps at the "
              "middles of 6 equal slices of the enumerated power range)",
              ["part", "model", "space", "configurations", "distinct (latency, power)", "power range mW", "caps mW"],
              body)
    body = []
    for c in cases:
        o = c["optimum"]
        enum = c.get("enumerated_optimum_ms")
        body.append([c["part"], c["model"], "mapping" if c["space"] == "mapping" else "hardware",
                     str(c.get("blocks", "–")), f"{c['cap_mw']:.0f}", f"{o['latency_ms']:.2f}", f"{o['fps']:.1f}",
                     o["method"], "–" if enum is None else f"{enum:.2f}",
                     str(c.get("feasible_configs", "–")), layer_cell(c["layer_exact"])])
    rep.table("Optima (ms): the space's (DP over runs of blocks / enumeration), cross-checked by enumeration where "
              "small enough, and the layer-granularity optimum with DVFS per slice (`exact`, the problem's knobs)",
              ["part", "model", "space", "blocks", "cap mW", "optimum ms", "FPS", "method", "enumerated ms",
               "feasible configs", "layer exact ms"], body)
    ci = "mean ±half-width of the 95% Student-t interval"
    fig4 = [c for c in cases if c["part"] == "fig4"]
    if fig4:
        checkpoint_table(rep, f"Fig. 4: mapping space, best latency and FPS within the cap ({ci}; {max(n['fig4'])} "
                         "seeds)", fig4, args.steps)
    fig5 = [c for c in cases if c["part"] == "fig5"]
    if fig5:
        body = []
        for c in fig5:
            for alg in ALGORITHMS:
                s = c["summary"][alg]
                body.append([f"{c['model']} {c['blocks']}b", f"{c['cap_mw']:.0f}", alg,
                             f"{s['reached_optimum']}/{s['runs']}",
                             "–" if s["reached_step_median"] is None else f"{s['reached_step_median']:g}",
                             "–" if s["reached_step_max"] is None else str(s["reached_step_max"]),
                             cell(s["final_ms"]), cell(s["final_fps"], ".1f"),
                             pct(s["gap_mean"]),
                             f"{s['exhausted']}/{s['runs']}"])
            body.append([f"{c['model']} {c['blocks']}b", f"{c['cap_mw']:.0f}", "optimum", "", "", "",
                         f"{c['optimum']['latency_ms']:.2f}", f"{c['optimum']['fps']:.1f}", "", ""])
        rep.table(f"Fig. 5: {FIG5_BLOCKS} blocks ({fig5[0]['space_size']} mappings), {max(n['fig5'])} runs: reaching "
                  f"the optimum within {args.steps} steps ({ci})",
                  ["model", "cap mW", "search", "at optimum", "median step", "latest step", f"best ms @{args.steps}",
                   f"FPS @{args.steps}", "mean above optimum", "stopped early"], body)
        checkpoint_table(rep, f"Fig. 5: best latency and FPS vs steps ({ci})", fig5, args.steps)
    hw = [c for c in cases if c["part"] == "hardware"]
    if hw:
        fig6 = [c for c in hw if c["cap_index"] == args.fig6_cap]
        checkpoint_table(rep, f"Fig. 6: hardware space (308,880 configurations, all-GPU mapping), the sweep's cap "
                         f"{args.fig6_cap + 1} of {args.hw_caps}, {max(n['hardware'])} runs ({ci})", fig6, args.steps)
        body = []
        for c in hw:
            row = [c["model"], f"{c['cap_mw']:.0f}", f"{c['feasible_configs']:,}", f"{c['optimum']['latency_ms']:.2f}",
                   layer_cell(c["layer_exact"])]
            for alg in ALGORITHMS:
                s = c["summary"][alg]
                row.append("– (found in " + f"{s['found']}/{s['runs']})" if s["final_ms"] is None else
                           f"{cell(s['final_ms'])} ({pct(s['gap_mean'])})")
            e = c["summary"]["evosh"]
            row += [f"{e['reached_optimum']}/{e['runs']}", f"{e['overhead_cpu_s_median']:.3f}",
                    f"{e['exhausted']}/{e['runs']}"]
            body.append(row)
        rep.table(f"Fig. 7: hardware-space cap sweep, mean best latency (ms) at {args.steps} steps over "
                  f"{max(n['hardware'])} runs ({ci}; % above the optimum)",
                  ["model", "cap mW", "feasible configs", "optimum", "layer exact", *ALGORITHMS, "evosh at optimum",
                   "evosh own CPU s (median)", "evosh stopped early"],
                  body)
    body = []
    for part in ("fig4", "fig5", "hardware"):
        sel = [c for c in cases if c["part"] == part]
        for alg in ALGORITHMS if sel else ():
            ss = [c["summary"][alg] for c in sel]
            body.append([part, alg, f"{len(ss)} x {ss[0]['runs']}",
                         f"{statistics.median(s['overhead_cpu_s_median'] for s in ss) * 1e3:.1f}",
                         f"{max(s['overhead_cpu_s_median'] for s in ss) * 1e3:.1f}",
                         f"{max(s['overhead_cpu_s_max'] for s in ss) * 1e3:.1f}",
                         f"{statistics.median(s['overhead_s_median'] for s in ss) * 1e3:.1f}",
                         f"{statistics.median(s['eval_s_median'] for s in ss) * 1e3:.1f}",
                         f"{statistics.median(s['redraws_median'] for s in ss):g}",
                         f"{statistics.median(s['steps_run_median'] for s in ss):g}"])
    rep.table(f"Search overhead per {args.steps}-step run: the search's CPU time minus the CPU time inside "
              "space.evaluate (ms; per case the median over its runs), and the same in wall time",
              ["part", "search", "cases x runs", "CPU median", "CPU worst case median", "CPU longest run",
               "wall median", "inside evaluate (wall, median)", "re-draws (median)", "steps run (median)"], body)
    for t in tg:
        rep.line(f"{'PASS' if t['pass'] else 'MISS'} ({t['id']}) {t['name']}: {t['measured']}")


# ---- plots -------------------------------------------------------------------------------------

COLORS = {"evosh": "tab:red", "evolution": "tab:blue", "random": "tab:gray"}


def _curves(ax, c: dict, title: str) -> None:
    x = np.arange(1, len(c["summary"]["evosh"]["curve_fps"]["mean"]) + 1)
    for alg in ALGORITHMS:
        cf = c["summary"][alg]["curve_fps"]
        m, h = (np.array([np.nan if v is None else v for v in cf[k]]) for k in ("mean", "half"))
        ax.plot(x, m, color=COLORS[alg], lw=1.2, label=alg)
        ax.fill_between(x, m - h, m + h, color=COLORS[alg], alpha=0.2, lw=0)
    ax.axhline(c["optimum"]["fps"], color="k", ls="--", lw=0.8, label="optimum")
    ax.set_title(title, fontsize=8)
    ax.set_xlabel("step", fontsize=7)
    ax.set_ylabel("best FPS within the cap", fontsize=7)
    ax.tick_params(labelsize=6)
    top = c["optimum"]["fps"]
    lows = [v for alg in ALGORITHMS for v in c["summary"][alg]["curve_fps"]["mean"][len(x) // 10:] if v]
    if lows:
        ax.set_ylim(max(0.0, min(lows) - 0.1 * (top - min(lows) + 1e-9)), top + 0.08 * (top - min(lows) + 1e-9))


def plot(out: Path, cases: list[dict], args: argparse.Namespace) -> list[str]:
    try:
        import matplotlib
    except ImportError:
        return []
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []

    def save(fig, axes, title: str, name: str) -> None:
        axes[0][0].legend(fontsize=6)
        fig.suptitle(title, fontsize=9)
        fig.tight_layout()
        paths.append(str(out.with_name(f"{out.stem}-{name}.png")))
        fig.savefig(paths[-1], dpi=90, bbox_inches="tight")
        plt.close(fig)

    fig4 = [c for c in cases if c["part"] == "fig4"]
    if fig4:
        models = list(dict.fromkeys(c["model"] for c in fig4))
        fig, axes = plt.subplots(len(models), 2, figsize=(8, 2.6 * len(models)), squeeze=False)
        for c in fig4:
            ax = axes[models.index(c["model"])][MAPPING_FRACTIONS.index(c["cap_fraction"])]
            _curves(ax, c, f"{c['model']}, {c['blocks']} blocks, cap {c['cap_mw']:.0f} mW")
        save(fig, axes, f"Fig. 4: mapping space (mean, 95% interval, {fig4[0]['summary']['evosh']['runs']} seeds)",
             "fig4")
    fig5 = [c for c in cases if c["part"] == "fig5"]
    if fig5:
        fig, axes = plt.subplots(2, len(fig5), figsize=(4 * len(fig5), 5), squeeze=False)
        for j, c in enumerate(fig5):
            _curves(axes[0][j], c, f"{c['model']}, {c['blocks']} blocks, cap {c['cap_mw']:.0f} mW")
            for alg in ALGORITHMS:
                reach = c["runs"][alg]["reached_optimum_step"]
                x = np.arange(1, args.steps + 1)
                frac = [sum(1 for r in reach if r is not None and r <= k) / len(reach) for k in x]
                axes[1][j].plot(x, frac, color=COLORS[alg], label=alg)
            axes[1][j].set_xlabel("step", fontsize=7)
            axes[1][j].set_ylabel("share of runs at the optimum", fontsize=7)
            axes[1][j].set_ylim(-0.02, 1.02)
            axes[1][j].tick_params(labelsize=6)
        save(fig, axes, f"Fig. 5: {FIG5_BLOCKS}-block mapping space, {fig5[0]['summary']['evosh']['runs']} runs",
             "fig5")
    hw = [c for c in cases if c["part"] == "hardware"]
    if hw:
        models = list(dict.fromkeys(c["model"] for c in hw))
        fig, axes = plt.subplots(1, len(models), figsize=(4 * len(models), 3), squeeze=False)
        for c in hw:
            if c["cap_index"] == args.fig6_cap:
                _curves(axes[0][models.index(c["model"])], c, f"{c['model']}, hardware space, cap {c['cap_mw']:.0f} mW")
        save(fig, axes, f"Fig. 6: hardware space (mean, 95% interval, {hw[0]['summary']['evosh']['runs']} runs)",
             "fig6")
        fig, axes = plt.subplots(1, len(models), figsize=(4 * len(models), 3), squeeze=False)
        for j, m in enumerate(models):
            sel = [c for c in hw if c["model"] == m]
            caps = [c["cap_mw"] for c in sel]
            ax = axes[0][j]
            ax.plot(caps, [c["optimum"]["fps"] for c in sel], "k--", marker="o", ms=3, lw=0.8, label="optimum")
            for k, alg in enumerate(ALGORITHMS):
                st = [c["summary"][alg]["final_fps"] for c in sel]
                ax.errorbar(np.array(caps) + (k - 1) * 0.006 * (caps[-1] - caps[0]), [s["mean"] for s in st],
                            yerr=[s["half"] for s in st], color=COLORS[alg], marker="o", ms=3, lw=1, capsize=2,
                            label=alg)
            ax.set_xlabel("power cap (mW)", fontsize=7)
            ax.set_ylabel(f"mean best FPS at {args.steps} steps", fontsize=7)
            ax.set_title(m, fontsize=8)
            ax.tick_params(labelsize=6)
        save(fig, axes, "Fig. 7: hardware-space cap sweep", "fig7")
    return paths


# ---- main --------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="B0 only, 9 blocks, 3 seeds / runs, 50 steps, hardware space with 2 runs at 2 caps, "
                         "layer-granularity exact plans time-boxed to 1 s")
    ap.add_argument("--parts", default="fig4,fig5,hardware", help="comma list of fig4, fig5, hardware (Figs. 6-7)")
    ap.add_argument("--models", default=None,
                    help="comma list of B0, B2, B4: only these in Fig. 4 and the hardware space (default: all)")
    ap.add_argument("--steps", type=int, default=None, help="steps per run (default 200; quick 50)")
    ap.add_argument("--fig4-seeds", type=int, default=None, help="runs per algorithm and case in Fig. 4 (default 5)")
    ap.add_argument("--fig5-runs", type=int, default=None, help="runs per algorithm and cap in Fig. 5 (default 20)")
    ap.add_argument("--hw-runs", type=int, default=None,
                    help="runs per algorithm and cap, hardware space (default 100; quick 2)")
    ap.add_argument("--hw-caps", type=int, default=None, help="caps of the hardware sweep (Fig. 7; default 6, quick 2)")
    ap.add_argument("--layer-exact-seconds", type=float, default=None,
                    help="time box of each layer-granularity exact plan (default 10; quick 1; 0: skip them)")
    ap.add_argument("--models-dir", type=Path, default=MODELS_DIR, help="exported-model cache")
    ap.add_argument("--workers", type=int, default=None,
                    help="Ray workers of the sweep (default: every CPU; quick: 0, in this process)")
    ap.add_argument("--fresh", action="store_true", help="run every cell again (default: resume <out>-sweep/)")
    ap.add_argument("--out", type=Path, default=None, help="JSON path (default benchmarks/results/evosh[-quick].json)")
    ap.add_argument("--markdown", type=Path, default=None, help="also write the tables and targets as markdown here")
    args = ap.parse_args(argv)
    q = args.quick
    args.workers = args.workers if args.workers is not None else 0 if q else None
    args.steps = args.steps or (50 if q else 200)
    args.fig4_seeds = args.fig4_seeds or (3 if q else 5)
    args.fig5_runs = args.fig5_runs or (3 if q else 20)
    # --quick's hardware space: the fewest runs (2: an interval) and caps (2: a sweep) that still
    # exercise every table, target and plot
    args.hw_runs = args.hw_runs or (2 if q else 100)
    args.hw_caps = args.hw_caps if args.hw_caps is not None else (2 if q else 6)
    if args.layer_exact_seconds is None:
        args.layer_exact_seconds = 1.0 if q else 10.0
    args.parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    if bad := [p for p in args.parts if p not in ("fig4", "fig5", "hardware")]:
        raise SystemExit(f"unknown part(s) {', '.join(bad)}; choose fig4, fig5, hardware")
    if args.steps < 2 or args.hw_caps < 1 or min(args.fig4_seeds, args.fig5_runs, args.hw_runs) < 1:
        raise SystemExit("--steps must be >= 2, --hw-caps and the run counts >= 1")
    args.fig6_cap = (args.hw_caps - 1) // 2
    fig4_models = {"B0": FIG5_BLOCKS} if q else FIG4_BLOCKS
    hw_models = ("B0",) if q else HW_MODELS
    if args.models is not None:
        keep = [m.strip() for m in args.models.split(",") if m.strip()]
        if not keep or any(m not in MODELS for m in keep):
            raise SystemExit(f"--models {args.models!r}: give a comma list of {', '.join(MODELS)}")
        fig4_models = {m: b for m, b in fig4_models.items() if m in keep}
        hw_models = tuple(m for m in hw_models if m in keep)
    console, date, t0, machine = make_console(), utc_now(), time.perf_counter(), machine_info()
    log = lambda m: print(f"[{time.perf_counter() - t0:6.1f} s] {m}", file=sys.stderr, flush=True)  # noqa: E731
    bench, cases, part_s = Bench(args, log), [], {}
    for part in ("fig4", "fig5", "hardware"):
        if part not in args.parts:
            continue
        tp = time.perf_counter()
        if part == "fig4":
            for label, blocks in fig4_models.items():
                cases += bench.mapping_case("fig4", label, blocks, args.fig4_seeds)
        elif part == "fig5":
            cases += bench.mapping_case("fig5", "B0", FIG5_BLOCKS, args.fig5_runs)
        else:
            for label in hw_models:
                cases += bench.hardware_cases(label)
        part_s[part] = time.perf_counter() - tp
    out = args.out or RESULTS_DIR / f"{SCRIPT}{'-quick' if q else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    tp = time.perf_counter()
    spec, rows, sweep_dir = bench.sweep(out)
    part_s["sweep"] = time.perf_counter() - tp
    bench.attach(cases, rows)
    tg = targets(cases, args)
    rep = Report(console)
    show(rep, cases, args, tg)
    plots = plot(out, cases, args)
    total = time.perf_counter() - t0
    write_json({"script": SCRIPT, "date": date, "machine": machine, "target": TARGET,
                "args": {"quick": q, "parts": args.parts, "steps": args.steps, "fig4_seeds": args.fig4_seeds,
                         "fig5_runs": args.fig5_runs, "hw_runs": args.hw_runs, "hw_caps": args.hw_caps,
                         "fig6_cap": args.fig6_cap, "layer_exact_seconds": args.layer_exact_seconds,
                         "fig4_blocks": fig4_models, "hw_models": list(hw_models)},
                "interval": "95% Student-t interval over runs: mean +- t(0.975, n-1) * s / sqrt(n)",
                "seeds": "run i of every algorithm uses numpy.random.default_rng(i)",
                "sweep": {"dir": str(sweep_dir), "cells": len(rows), "spec": spec},
                "total_s": total, "part_s": part_s, "paper": PAPER, "models": bench.models, "targets": tg,
                "plots": plots, "cases": cases}, out)
    compact_json(out)
    if args.markdown:
        load = machine.get("loadavg_at_start")
        head = [f"Measured {date[:10]} (`python benchmarks/{SCRIPT}.py{' --quick' if q else ''}`, "
                f"{total / 60:.1f} min on {machine['usable_cpus']} CPUs"
                + (f", load average {load[0]:.1f} at the start" if load else "") + ").", ""]
        args.markdown.write_text("\n".join(head + rep.md) + "\n")
    print(f"wrote {out} and {len(plots)} plots ({total:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
