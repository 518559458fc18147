"""How faithful is a board model? MOSAIC's evaluation (PACT'19) replayed on it, beside the paper.

One script of ~900 lines: the parts, the leave-out refits that re-run them and the table share the board, the judge and the printer.

MOSAIC published its HiKey 970 measurements as a handful of numbers (Table I's GPU latencies,
the headline gains of Sec. VI-B/C/E, the plans of Tables III/IV, the 34.1 % of Fig. 5 and the
orderings of Figs. 10/11); ``targets/observations/hikey970-mosaic.csv`` holds the ones a fit can
use, and the built-in board was fitted to them. This script plans MOSAIC's versions on the board
model through hetcc's Python API and prints, per row, ``paper | ours (fitted board) | verdict |
held out | verdict`` (within 20 % relative: ok, else MISS; orderings and yes/no facts: ok when
they hold):

- Table I: each model whole on the GPU at 767 MHz as one slice.
- Sec. VI-B/C/E: MOSAIC (``dp``) against the four device-preferred versions, latency under the
  performance governor (``single:<dev>``), energy under on-demand (``single:<dev> governor=ondemand``),
  1 - the geometric mean over the models of metric(dp) / metric(baseline), large and small models.
- Tables III/IV: the device states the paper's plans use that ours use too; Table IV: which
  energy-optimal plans use the LITTLE cluster, at which frequency.
- Fig. 5: MO-1.4 cut into 3 slices that each prefer the NPU (the NPU-preferred version's rules for
  layers it cannot take), every pair of cut positions: 1 - best / worst latency.
- Figs. 10/11: HCA (``hca``) and HCCA (``hcca``) against MOSAIC and TF-GPU-O: the orderings.
- Held out (never fitted): HERTI's medium-deadline energy saving (Fig. 6) of a deadline-aware
  energy optimiser (``exact``, the proven optimum, in HERTI's slot; ``--herti-planner dqn`` for
  HERTI's own) over MOSAIC-P and AutoScale, judged as ``benchmarks/herti.py`` judges it.

Fitted or held out: a row whose numbers are in the CSV is *fitted* (matching it shows the fit
works, not that the board predicts). Each such row is also predicted by leave-out refits of the
prior board (``--prior``, with ``--refit-args``: how the built-in board was fitted) that did not
see it: by model (``--folds K``: the models split into K folds, each refit without its models'
latency and plan rows) and by kind of row (Table I, Table III, Table IV, latency gains, energy
gains: each refit without that kind). The *held-out* column is the by-model prediction for a
row of one model's numbers (Table I, Tables III/IV, LITTLE) and the by-kind one for the gains (a
gain row spans seven or three models); both are in the JSON. Rows the CSV does not hold (Fig. 5,
Figs. 10/11, HERTI) are held out on the fitted board itself.

Sensitivity: the board's base power (``base_power_mw``, set to 0 in the built-in board) moves
the held-out HERTI rows; ``--base-powers`` refits the prior with it set to each value ("free":
fitted) and reports the HERTI rows and the fit's quality on MOSAIC's rows at each.

A part none of whose models could be analysed reads "n/a" (the error is printed); a part with
some models missing says how many it used; a refit that fails leaves its rows' held-out cells
"n/a" with the error. Writes benchmarks/results/fidelity.json (``--quick``: fidelity-quick.json,
3 small torchvision models, 2 folds each way, one free parameter refitted from the built-in board:
a check of the machinery, not a result).

    python benchmarks/fidelity.py [--quick] [--target hikey970] [--folds 5] [--json OUT]
"""
from __future__ import annotations

import argparse
import csv
import io
import itertools
import math
import shlex
import statistics
import sys
import tempfile
import time
import tomllib
import traceback
from pathlib import Path
from typing import Any, Callable

import numpy as np

if (HERE := str(Path(__file__).resolve().parent)) not in sys.path:  # _common.py lives beside this script
    sys.path.insert(0, HERE)
from _common import MODELS_DIR, RESULTS_DIR, error_text, machine_info, make_console, model_path, utc_now  # noqa: E402
from _common import write_json  # noqa: E402
import herti  # noqa: E402  (HERTI's paper numbers and its saving arithmetic, reused)

SCRIPT = Path(__file__).stem
OBSERVATIONS = Path(__file__).resolve().parents[1] / "targets" / "observations"
MOSAIC_CSV = OBSERVATIONS / "hikey970-mosaic.csv"
PRIOR = OBSERVATIONS / "hikey970-prior.toml"        # the hand-set board the built-in hikey970 was fitted from
REFIT_ARGS = OBSERVATIONS / "hikey970-refit.args"   # the options of that fit
#: --quick's refits: three small models' rows cannot pin down the full set; one free parameter,
#: from the built-in board, checks the machinery (its numbers are no result)
QUICK_PRIOR = Path(__file__).resolve().parents[1] / "targets" / "hikey970.toml"
QUICK_REFIT_ARGS = "--set base_power_mw=0 --free gpu.node_overhead_ms --range 100"
#: the kinds of fitted row, each a by-kind fold: what a table row is fitted from (``row_kind``)
KINDS = {"table1": "Table I latencies", "table3": "Table III plan devices", "table4": "Table IV plan states",
         "gains-latency": "latency gains (Sec. VI-B/E)", "gains-energy": "energy gains (Sec. VI-C/E)"}
#: --quick's by-kind folds (its models have no gain rows of their own, and its plan rows alone, which
#: hold already, pin nothing down): 2 folds
QUICK_KIND_FOLDS = {"table3": ("table3",), "table4": ("table4",)}
#: base_power_mw's plausible range (mW; "free": fitted): 0 is the built-in board's, 2000 the prior's
BASE_POWERS = "0,250,free,1000,2000"
QUICK_BASE_POWERS = "0,1000"
TOLERANCE = 0.20                       # |ours / paper - 1| within this: ok
DEVICES = ("big", "little", "gpu", "npu")
NA = "n/a"
#: MOSAIC's workloads (Table I) -> (zoo model, how it stands in for the paper's)
MODELS = {
    "IN": ("inception_v4", "Inception V4 (timm)"),
    "MN-1.0": ("mnasnet1_0", ""), "MN-1.3": ("mnasnet1_3", ""),
    "MO-1.3": ("mobilenet_v2_1.3", ""), "MO-1.4": ("mobilenet_v2_1.4", ""),
    "RN": ("resnetv2_152", "ResNet-V2-152 stands in (the paper's depth is not stated)"),
    "VGG": ("vgg16", "VGG-16 (the paper says VGG, 16 layers)"),
    "MN-0.5": ("mnasnet0_5", ""), "MO-1.0": ("mobilenet_v2", ""),
    "SN": ("squeezenet1_1", "SqueezeNet 1.1 stands in (the paper's version is not stated)"),
}
LARGE = ("IN", "MN-1.0", "MN-1.3", "MO-1.3", "MO-1.4", "RN", "VGG")
SMALL = ("MN-0.5", "MO-1.0", "SN")
#: --quick: MN-1.0 plays the large set, MO-1.0 Fig. 5's model; no timm
QUICK = {"large": ("MN-1.0",), "small": ("MN-0.5", "MO-1.0"), "fig5": "MO-1.0"}
#: what MOSAIC reports (ms; fractions), with where it stands
PAPER: dict[str, Any] = {
    "table1_gpu_ms": {"IN": 430.0, "MN-1.0": 66.8, "MN-1.3": 81.3, "MO-1.3": 49.1, "MO-1.4": 55.4, "RN": 603.8,
                      "VGG": 218.7, "MN-0.5": 42.7, "MO-1.0": 36.6, "SN": 32.5},
    "table1_layers": {"IN": 20, "MN-1.0": 20, "MN-1.3": 20, "MO-1.3": 18, "MO-1.4": 18, "RN": 53, "VGG": 16,
                      "MN-0.5": 20, "MO-1.0": 18, "SN": 10},   # TFLite's layers (not judged)
    "gains": {  # (set, metric) -> 1 - geomean(dp / TF-<dev>-P|O), Sec. VI-B, VI-C, VI-E
        "large latency": dict(zip(DEVICES, (0.703, 0.861, 0.391, 0.292))),
        "large energy": dict(zip(DEVICES, (0.910, 0.805, 0.834, 0.366))),
        "small latency": dict(zip(DEVICES, (0.588, 0.804, 0.295, 0.092))),
        "small energy": dict(zip(DEVICES, (0.876, 0.745, 0.782, 0.229))),
    },
    # Table III: devices of the latency-optimal plans (all at f_max)
    "table3_devices": {"IN": {"npu", "big"}, "MN-1.0": {"npu", "big", "gpu"}, "MN-1.3": {"npu", "big", "gpu"},
                       "MO-1.3": {"npu", "gpu"}, "MO-1.4": {"npu", "gpu"}, "RN": {"big", "npu"},
                       "VGG": {"npu", "gpu", "big"}},
    # Table IV: device states (device, MHz) of the energy-optimal plans
    "table4_states": {
        "IN": {("npu", 960), ("little", 509)},
        "MN-1.0": {("gpu", 767), ("little", 509), ("gpu", 667)},
        "MN-1.3": {("gpu", 767), ("little", 509), ("gpu", 667)},
        "MO-1.3": {("npu", 960), ("little", 509), ("big", 682), ("little", 1018)},
        "MO-1.4": {("npu", 960), ("little", 1018), ("little", 509), ("little", 1402), ("gpu", 767)},
        "RN": {("big", 682), ("npu", 960), ("little", 1018), ("little", 1210), ("little", 509)},
        "VGG": {("npu", 960), ("gpu", 550), ("gpu", 667), ("big", 682)},
    },
    "fig5_best_vs_worst": 0.341,       # Sec. IV: MO-1.4, 3 NPU-preferred slices
    "fig10_order": ["TF-GPU-O", "HCA", "MOSAIC"],            # latency, highest first
    "fig11_order": ["TF-GPU-O", "HCA", "HCCA", "MOSAIC"],    # energy, highest first
    "herti_fig6_saving_vs": herti.PAPER["fig6_saving_vs"],   # HERTI Sec. V-B (held out)
}


# ---- planning ----------------------------------------------------------------------------------

class Board:
    """The models analysed once for the target (a model that fails is recorded in ``errors``),
    planned on demand."""

    def __init__(self, target: str, models_dir: Path, labels: list[str], console: Any,
                 energy_planner: str = "dp", memory: Path | None = None) -> None:
        from hetcc.compiler.api import analyse
        from hetcc.measure.observations import read_observations, reported_memory
        from hetcc.targets import load_target

        self.mosaic = {"latency": "dp", "energy": energy_planner}   # MOSAIC's plans, per metric

        self.target = load_target(target)
        missing = [d for d in DEVICES if d not in self.target.device_names]
        if missing:
            raise SystemExit(f"target {self.target.name!r} lacks device(s) {', '.join(missing)}: MOSAIC's "
                             "evaluation needs big, little, gpu and npu (e.g. --target hikey970)")
        self.analyses: dict[str, Any] = {}
        self.errors: dict[str, str] = {}
        # the memory rows of ``memory``: the size TensorFlow Lite reports per model (Table I), which
        # the NPU's 100 MB rule charges (PlanningProblem.with_reported_memory), as calibrate applies them
        self.memory = reported_memory(read_observations(memory, self.target, check_files=False) if memory else ())
        for label in labels:
            name = MODELS[label][0]
            console.print(f"[dim]{label} ({name})…[/]", highlight=False)
            try:
                an = analyse(model_path(name, models_dir), self.target)
                for device, nbytes in self.memory.get(name, {}).items():
                    an.problem = an.problem.with_reported_memory(device, nbytes)
                self.analyses[label] = an
            except Exception as exc:  # one model failing must not hide the others' numbers
                traceback.print_exc()
                self.errors[label] = error_text(exc)
        self._plans: dict[tuple, Any] = {}

    def have(self, labels: tuple[str, ...] | list[str]) -> list[str]:
        return [w for w in labels if w in self.analyses]

    def plan(self, label: str, spec: str, metric: str, deadline: str | None = None) -> Any:
        """The plan of planner ``spec`` ("single:gpu governor=ondemand") for ``metric`` (memoised)."""
        key = (label, spec, metric, deadline)
        if key not in self._plans:
            from hetcc.measure.observations import planner_spec

            name, options = planner_spec(spec)
            self._plans[key] = self.analyses[label].plan(metric, deadline=deadline, planner=name, options=options,
                                                         allow_infeasible=True)
        return self._plans[key]

    def states_used(self, label: str, plan: Any) -> set[tuple[str, float]]:
        st = self.analyses[label].problem.states
        return {(st.device[s.state], float(st.freq_mhz[s.state])) for s in plan.slices}


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def verdict(ours: float | None, paper: float) -> tuple[float | None, str]:
    """(ours / paper, ok | MISS | n/a)."""
    if ours is None:
        return None, "n/a"
    r = ours / paper if paper else math.inf
    return (r if math.isfinite(r) else None), ("ok" if abs(r - 1) <= TOLERANCE else "MISS")


def row(part: str, what: str, paper: Any, ours: Any, *, ratio: float | None = None, ok: str = "n/a",
        note: str = "", **extra: Any) -> dict[str, Any]:
    return {"part": part, "what": what, "paper": paper, "ours": ours, "ratio": ratio, "verdict": ok,
            "note": note, **extra}


def numeric_row(part: str, what: str, paper: float, ours: float | None, note: str = "", **extra: Any) -> dict:
    r, ok = verdict(ours, paper)
    return row(part, what, paper, ours, ratio=r, ok=ok, note=note, **extra)


# ---- the parts ---------------------------------------------------------------------------------

def table1(board: Board, labels: list[str]) -> list[dict]:
    """Each model whole on the GPU at 767 MHz (its fastest state where it has no 767) as one slice."""
    rows = []
    for w in labels:
        paper, what = PAPER["table1_gpu_ms"][w], f"Table I: {w} on the GPU, ms"
        if w not in board.analyses:
            rows.append(row("table1", what, paper, None, note=board.errors.get(w, NA)))
            continue
        p = board.analyses[w].problem
        gpu = [int(s) for s in p.states.of("gpu")]
        s = next((s for s in gpu if float(p.states.freq_mhz[s]) == 767.0), p.states.fmax_state("gpu"))
        L = p.num_layers
        if p.slice_legal(0, L - 1, s):
            ms, note = p.slice_cost(0, L - 1, s).latency_ms, MODELS[w][1]
        else:
            ms, note = board.plan(w, "single:gpu", "latency").latency_ms, "the GPU cannot take it whole: single:gpu"
        rows.append(numeric_row("table1", what, paper, ms, note, model=MODELS[w][0], layers=L))
    return rows


def gains(board: Board, sets: dict[str, tuple[str, ...]]) -> list[dict]:
    """1 - geomean(metric(dp) / metric(TF-<dev>-P|O)) per (set, metric, device)."""
    rows = []
    for set_name, labels in sets.items():
        have = board.have(labels)
        note = "" if len(have) == len(labels) else f"{len(have)}/{len(labels)} models ({', '.join(have) or 'none'})"
        for metric in ("latency", "energy"):
            paper = PAPER["gains"][f"{set_name} {metric}"]
            for dev in DEVICES:
                base = f"single:{dev}" + (" governor=ondemand" if metric == "energy" else "")
                tag = f"TF-{dev.upper()}-{'P' if metric == 'latency' else 'O'}"
                what = f"Sec. VI: {set_name} models, {metric} of MOSAIC below {tag}"
                if not have:
                    rows.append(row("gains", what, paper[dev], None, note=NA))
                    continue
                unit = f"{metric}_{'ms' if metric == 'latency' else 'mj'}"
                per = {w: getattr(board.plan(w, board.mosaic[metric], metric), unit)
                       / getattr(board.plan(w, base, metric), unit) for w in have}
                rows.append(numeric_row("gains", what, paper[dev], 1 - geomean(list(per.values())), note,
                                        set=set_name, metric=metric, baseline=base, models=have,
                                        per_model_ratio=per))
    return rows


def plan_states(board: Board, labels: tuple[str, ...]) -> list[dict]:
    """Tables III/IV: the paper's device states that our dp plans use too; LITTLE in Table IV."""
    rows = []
    have = board.have(labels)
    hit3 = [(w, d) for w in have for d in PAPER["table3_devices"][w]]
    found3 = [(w, d) for w, d in hit3 if d in {x for x, _ in board.states_used(w, board.plan(w, "dp", "latency"))}]
    hit4 = [(w, s) for w in have for s in PAPER["table4_states"][w]]
    used4 = {w: board.states_used(w, board.plan(w, board.mosaic["energy"], "energy")) for w in have}
    found4 = [(w, (d, f)) for w, (d, f) in hit4 if (d, float(f)) in used4[w]]
    dev4 = [(w, d) for w, (d, _) in hit4 if d in {x for x, _ in used4[w]}]
    note = "" if len(have) == len(labels) else f"{len(have)}/{len(labels)} models"
    for what, hits, found in (("Table III: devices of the paper's latency plans ours use", hit3, found3),
                              ("Table IV: device states (MHz) of the paper's energy plans ours use", hit4, found4),
                              ("Table IV: devices (any MHz) of the paper's energy plans ours use", hit4, dev4)):
        frac = len(found) / len(hits) if hits else None
        rows.append(numeric_row("plans", what, 1.0, frac, f"{len(found)}/{len(hits)}" + (f"; {note}" if note else ""),
                                missed=[f"{w} {x}" for w, x in hits if (w, x) not in found]))
    n_paper = 0
    for w in labels:
        paper_f = sorted(f for d, f in PAPER["table4_states"][w] if d == "little")
        n_paper += bool(paper_f)
        paper_txt = "yes @" + ",".join(map(str, paper_f)) if paper_f else "no"
        what = f"Table IV: {w}'s energy plan uses LITTLE"
        if w not in have:
            rows.append(row("little", what, paper_txt, None, note=board.errors.get(w, NA)))
            continue
        ours_f = sorted(int(f) for d, f in used4[w] if d == "little")
        ours_txt = "yes @" + ",".join(map(str, ours_f)) if ours_f else "no"
        rows.append(row("little", what, paper_txt, ours_txt, ok="ok" if bool(ours_f) == bool(paper_f) else "MISS",
                        note="judged on yes/no; the MHz are shown", paper_mhz=paper_f, ours_mhz=ours_f))
    n_ours = sum(bool(r["ours_mhz"]) for r in rows if r["part"] == "little" and r["ours"] is not None)
    rows.append(numeric_row("little", "Table IV: energy plans using LITTLE, count", float(n_paper),
                            float(n_ours) if have else None, f"of {len(have)} models" if have else NA))
    return rows


class _Segment:
    """Layers ``first..last`` of a problem, seen as a whole problem by ``device_preferred`` (which
    reads only these members): its plan comes back as absolute Slices instead of a Plan."""

    def __init__(self, problem: Any, first: int, last: int, legal: np.ndarray | None = None,
                 prefix: np.ndarray | None = None) -> None:
        """``legal``, ``prefix``: the whole problem's ``legal`` (bool) and ``memory_prefix()`` when
        the caller has them already (one segment per pair of layers reads them)."""
        self.p, self.a, self.states, self.num_states = problem, first, problem.states, problem.num_states
        self.num_layers = last - first + 1
        self.capacity_bytes = problem.capacity_bytes
        legal = np.asarray(problem.legal, dtype=bool) if legal is None else legal
        prefix = problem.memory_prefix() if prefix is None else prefix
        self.legal = legal[first:last + 1]
        self._prefix = prefix[first:last + 2] - prefix[first]

    def memory_prefix(self) -> np.ndarray:
        return self._prefix

    def layer_label(self, i: int) -> str:
        return self.p.layer_label(self.a + i)

    def evaluate(self, slices: Any) -> tuple:
        from hetcc.planners.problem import Slice

        return tuple(Slice(s.first + self.a, s.last + self.a, s.state) for s in slices)


def three_slice_latencies(problem: Any, preferred: int) -> tuple[list[tuple[int, int]], np.ndarray, np.ndarray]:
    """Fig. 5's plans: for every pair of cuts (c1, c2), layers [0, c1), [c1, c2), [c2, L) each
    planned by the device-preferred rules for state ``preferred`` (``device_preferred`` on the
    segment: its layers on ``preferred``, the ones it cannot take on the fallback path).
    Returns the cuts, each plan's latency and its number of slices (3 unless fallbacks or memory
    splits added some)."""
    from hetcc.planners.baselines import device_preferred

    L = problem.num_layers
    legal, prefix = np.asarray(problem.legal, dtype=bool), problem.memory_prefix()
    seg: dict[tuple[int, int], tuple[float, int]] = {}
    for a in range(L):
        for b in range(a, L):
            slices = device_preferred(_Segment(problem, a, b, legal, prefix), preferred)
            seg[a, b] = (sum(problem.slice_cost(s.first, s.last, s.state).latency_ms for s in slices), len(slices))
    cuts = list(itertools.combinations(range(1, L), 2))
    parts = [(seg[0, c1 - 1], seg[c1, c2 - 1], seg[c2, L - 1]) for c1, c2 in cuts]
    return (cuts, np.array([sum(t for t, _ in p) for p in parts], dtype=np.float64),
            np.array([sum(n for _, n in p) for p in parts], dtype=np.int64))


def fig5(board: Board, label: str) -> list[dict]:
    """Every cut of ``label`` into 3 NPU-preferred segments; 1 - best / worst latency."""
    what = f"Fig. 5: {label}, 3 NPU-preferred slices, best below worst latency"
    paper = PAPER["fig5_best_vs_worst"]
    if label not in board.analyses:
        return [row("fig5", what, paper, None, note=board.errors.get(label, NA))]
    p = board.analyses[label].problem
    cuts, lat, nslices = three_slice_latencies(p, p.states.fmax_state("npu"))
    best, worst = float(lat.min()), float(lat.max())
    b, w = cuts[int(lat.argmin())], cuts[int(lat.argmax())]
    extra = int((nslices > 3).sum())
    note = (f"{len(cuts)} cut pairs over our {p.num_layers} layers (the paper's {PAPER['table1_layers'][label]}); "
            f"best cuts at {b} {best:.1f} ms, worst at {w} {worst:.1f} ms"
            + (f"; {extra} needed fallback/memory slices" if extra else ""))
    return [numeric_row("fig5", what, paper, 1 - best / worst, note, model=MODELS[label][0], best_ms=best,
                        worst_ms=worst, best_cuts=list(b), worst_cuts=list(w), worst_over_best=worst / best - 1,
                        plans_with_more_slices=extra)]


def ablations(board: Board, labels: tuple[str, ...]) -> list[dict]:
    """Figs. 10/11: geomean metric of each version / TF-GPU-O's; the paper's orderings. Fig. 11
    adds one component per step, so its HCA is DVFS-oblivious too (``hca dvfs=false``); the HCA
    with DVFS is recorded beside it, not judged."""
    have = board.have(labels)
    base = "single:gpu governor=ondemand"
    versions = {"fig10": {"TF-GPU-O": base, "HCA": "hca", "MOSAIC": "dp"},
                "fig11": {"TF-GPU-O": base, "HCA": "hca dvfs=false", "HCCA": "hcca",
                          "MOSAIC": board.mosaic["energy"], "HCA with DVFS": "hca"}}
    rows = []
    for fig, metric, unit in (("fig10", "latency", "latency_ms"), ("fig11", "energy", "energy_mj")):
        order, spec = PAPER[f"{fig}_order"], versions[fig]
        what = f"Fig. {fig[3:]}: {metric}, " + " > ".join(order) + " (geomean / TF-GPU-O)"
        if not have:
            rows.append(row(fig, what, "holds", None, note=f"models {NA}"))
            continue
        norm = {v: geomean([getattr(board.plan(w, spec[v], metric), unit)
                            / getattr(board.plan(w, base, metric), unit) for w in have]) for v in spec}
        holds = all(norm[x] > norm[y] * (1 + 1e-9) for x, y in zip(order, order[1:]))
        text = ", ".join(f"{v} {norm[v]:.3f}" for v in order)
        note = ", ".join(f"{v} = {spec[v]}" for v in order if v != "TF-GPU-O")
        rows.append(row(fig, what, "holds", text, ok="ok" if holds else "MISS",
                        note=note + ("" if len(have) == len(labels) else f"; {len(have)}/{len(labels)} models"),
                        normalised=norm, planners=spec, models=have))
    return rows


def herti_saving(board: Board, labels: tuple[str, ...], planner: str) -> list[dict]:
    """HERTI Fig. 6 (held out): 1 - mean over workloads of energy(planner) / energy(ref), medium
    deadline; MOSAIC-P is dp on latency (deadline-oblivious), AutoScale ``autoscale-static``."""
    have = board.have(labels)
    rows = []
    energy: dict[str, dict[str, float]] = {"HERTI": {}, "MOSAIC-P": {}, "AutoScale": {}}
    feasible = []
    for w in have:
        h = board.plan(w, planner, "energy", "medium")
        energy["HERTI"][w], energy["MOSAIC-P"][w] = h.energy_mj, board.plan(w, "dp", "latency").energy_mj
        energy["AutoScale"][w] = board.plan(w, "autoscale-static", "energy", "medium").energy_mj
        feasible.append(h.feasible)
    for ref, paper in PAPER["herti_fig6_saving_vs"].items():
        what = f"held out, HERTI Fig. 6: medium-deadline energy below {ref} ({planner} in HERTI's slot)"
        rel = herti.avg(herti.ratio(energy["HERTI"][w], energy[ref][w]) for w in have)
        note = ("" if len(have) == len(labels) else f"{len(have)}/{len(labels)} models; ") + (
            "meets every deadline" if all(feasible) else "MISSES a deadline")
        rows.append(numeric_row("herti", what, paper, None if rel is None else 1 - rel, note if have else NA,
                                planner=planner, models=have, energy_mj={k: v for k, v in energy.items()}))
    return rows


# ---- leave-out refits --------------------------------------------------------------------------

def row_kind(r: dict) -> str | None:
    """The kind of fitted row (a ``KINDS`` key) a table row or a CSV row stands for; None: never fitted."""
    part = r.get("part")
    if part is None:                                    # a CSV row
        kind = r["kind"]
        if kind == "latency":
            return "table1"
        if kind == "plan_uses":
            return "table3" if r["objective"] == "latency" else "table4"
        return f"gains-{r['objective']}" if kind == "gain" else None     # memory: an input, not fitted
    if part == "table1":
        return "table1"
    if part == "gains":
        return f"gains-{r.get('metric')}"
    if part == "plans":
        return "table3" if r["what"].startswith("Table III") else "table4"
    return "table4" if part == "little" else None


class Observations:
    """The observations CSV as lines: written back with some rows left out, each model named by
    its exported file (so a refit plans the very files this script analyses)."""

    def __init__(self, path: Path) -> None:
        lines = path.read_text(encoding="utf-8").splitlines()
        self.comments = [ln for ln in lines if ln.startswith("#")]
        body = [ln for ln in lines if not ln.startswith("#") and ln.strip()]
        self.fields = next(csv.reader([body[0]]))
        self.rows = [dict(zip(self.fields, next(csv.reader([ln])))) for ln in body[1:]]

    def write(self, path: Path, keep: Callable[[dict], bool], files: dict[str, Path]) -> int:
        """Write the rows ``keep`` accepts (their models all in ``files``); returns how many fitted rows."""
        buf = io.StringIO()
        w = csv.DictWriter(buf, self.fields, lineterminator="\n")
        w.writeheader()
        n = 0
        for r in self.rows:
            models = r["model"].split("+")
            if all(m in files for m in models) and keep(r):
                w.writerow({**r, "model": "+".join(str(files[m]) for m in models)})
                n += r["kind"] != "memory"
        path.write_text("\n".join(self.comments) + "\n" + buf.getvalue(), encoding="utf-8")
        return n


def refit_options(text: str) -> argparse.Namespace:
    """``hetcc calibrate``'s fit options (``--free --fix --set --bound --range``) from ``text``."""
    ap = argparse.ArgumentParser(prog="refit-args", add_help=False)
    for flag, dest in (("--free", "free"), ("--fix", "fix"), ("--set", "sets"), ("--bound", "bounds")):
        ap.add_argument(flag, action="append", default=[], dest=dest)
    ap.add_argument("--range", type=float, default=None, dest="range_factor")
    return ap.parse_args(shlex.split(text))


def with_base_power(opts: argparse.Namespace, value: str) -> argparse.Namespace:
    """``opts`` with base_power_mw set to ``value`` (mW), or fitted (``"free"``)."""
    sets = [s for s in opts.sets if s.partition("=")[0].strip() != "base_power_mw"]
    free = [f for f in opts.free if f != "base_power_mw"]
    if value == "free":
        free.append("base_power_mw")
    else:
        sets.append(f"base_power_mw={float(value):g}")
    return argparse.Namespace(**{**vars(opts), "sets": sets, "free": free})


class Refits:
    """Refits of the prior board to the observations with some rows left out, each written to a
    board file in a temporary folder; a refit that fails is recorded, not raised."""

    def __init__(self, prior: Path, observations: Path, options: argparse.Namespace, files: dict[str, Path],
                 console: Any) -> None:
        self.prior, self.obs, self.options, self.files, self.console = prior, Observations(observations), options, files, console
        self._tmp = tempfile.TemporaryDirectory(prefix="fidelity-refits-")
        self.dir = Path(self._tmp.name)

    def close(self) -> None:
        self._tmp.cleanup()

    def fit(self, name: str, keep: Callable[[dict], bool], options: argparse.Namespace | None = None) -> dict[str, Any]:
        """Refit with the rows ``keep`` accepts: {"name", "target" (the board file; None when it
        failed), "rows", "seconds", "fit" (per kind: hetcc calibrate's summary), ..., "error"}."""
        from hetcc.measure.calibrate import DEFAULT_RANGE, calibrate, summary

        opts = options or self.options
        csv_path, out = self.dir / f"{name}.csv", self.dir / f"{name}.toml"
        n = self.obs.write(csv_path, keep, self.files)
        self.console.print(f"[dim]refit {name}: {n} rows…[/]", highlight=False)
        t = time.perf_counter()
        info: dict[str, Any] = {"name": name, "rows": n, "target": None}
        kept: list[str] = []           # refused parameters, kept at the prior's value
        while True:
            try:
                cal, result, _ = calibrate(self.prior, [csv_path], out, free=opts.free, fix=[*opts.fix, *kept],
                                           bounds=opts.bounds, range_factor=opts.range_factor or DEFAULT_RANGE,
                                           sets=opts.sets)
                break
            except Exception as exc:  # one refit failing must not hide the others' numbers
                # a parameter the fit pushed to a bound: kept at the prior's value and the fit repeated,
                # as hetcc calibrate does for a parameter it cannot fit when it chooses the free set
                drops = [d for d, _ in getattr(exc, "drops", ()) if d not in kept]
                if drops and len(kept) + len(drops) < len(opts.free):
                    self.console.print(f"[dim]refit {name}: {error_text(exc)}; keeping {', '.join(drops)} at the "
                                       "prior's value[/]", highlight=False)
                    kept += drops
                    continue
                traceback.print_exc()
                return {**info, "seconds": time.perf_counter() - t, "kept_at_prior": kept, "error": error_text(exc)}
        base = tomllib.loads(out.read_text(encoding="utf-8")).get("base_power_mw")
        return {**info, "target": str(out), "seconds": time.perf_counter() - t, "free": len(result.free),
                "evaluations": result.nfev, "converged": result.converged, "base_power_mw": base,
                "kept_at_prior": kept, "fit": summary(cal.obs, result.after.predicted)}


    def predict(self, name: str, target: str) -> dict[str, Any]:
        """No refit: board ``target`` (already the fit) on every row, as ``fit`` reports a refit."""
        from hetcc.measure.calibrate import predict_observations, summary
        from hetcc.measure.observations import read_observations
        from hetcc.targets import load_target

        csv_path = self.dir / f"{name}.csv"
        n = self.obs.write(csv_path, lambda r: True, self.files)
        t = time.perf_counter()
        board = load_target(target)
        obs = read_observations(csv_path, board)
        pred = predict_observations(target, obs)
        fitted = [(o, p) for o, p in zip(obs, pred) if o.kind != "memory"]
        return {"name": name, "rows": n, "target": target, "reused": f"{target} (the fit with these options)",
                "seconds": time.perf_counter() - t, "base_power_mw": board.base_power_mw,
                "fit": summary([o for o, _ in fitted], np.array([p for _, p in fitted]))}


def folds_by_model(labels: list[str], k: int) -> list[list[str]]:
    """``labels`` dealt into ``k`` folds (round robin: large and small models spread over them)."""
    k = max(1, min(k, len(labels)))
    return [labels[i::k] for i in range(k)]


def composite(base: Board, boards: list[tuple[Board | None, list[str], str | None]]) -> Board:
    """A Board planning each model ``w`` on the analysis of the refit (of ``boards``: board, its
    models, the refit's error) that left ``w`` out; ``base`` gives the planners and memory rows."""
    out = object.__new__(Board)
    out.mosaic, out.target, out.memory, out._plans = base.mosaic, base.target, base.memory, {}
    out.analyses, out.errors = {}, {}
    for b, labels, error in boards:
        for w in labels:
            if b is not None and w in b.analyses:
                out.analyses[w] = b.analyses[w]
            else:
                out.errors[w] = f"refit failed: {error}" if error else (b.errors.get(w, NA) if b else NA)
    return out


def held_cell(r: dict | None, fold: str, error: str | None = None) -> dict[str, Any]:
    """A held-out prediction of a row: ours, ratio, verdict (n/a with the error when none)."""
    if r is None or r.get("ours") is None:
        return {"ours": None, "ratio": None, "verdict": "n/a", "fold": fold,
                "note": error or (r or {}).get("note") or NA}
    return {"ours": r["ours"], "ratio": r.get("ratio"), "verdict": r["verdict"], "fold": fold}


def attach_held_out(rows: list[dict], by_model: dict[str, tuple[dict | None, str, str | None]],
                    by_kind: dict[str, tuple[dict | None, str, str | None]]) -> None:
    """Mark each row fitted or held out and put its leave-out predictions beside it: ``by_model``
    / ``by_kind`` map a row's ``what`` to (that row from the refit's board, the fold, the error)."""
    for r in rows:
        kind = row_kind(r)
        if kind is None:
            r["fit"] = "held out"
            r["held_out"] = {"ours": r["ours"], "ratio": r["ratio"], "verdict": r["verdict"],
                             "scheme": "never fitted", "fold": None}
            continue
        r["fit"] = "fitted"
        cells = {}
        if r["what"] in by_model:
            cells["by_model"] = r["by_model"] = held_cell(*by_model[r["what"]])
        if r["what"] in by_kind:
            cells["by_kind"] = r["by_kind"] = held_cell(*by_kind[r["what"]])
        scheme = "by_kind" if r["part"] == "gains" or "by_model" not in cells else "by_model"
        r["held_out"] = {**cells.get(scheme, held_cell(None, "", "no refit")), "scheme": scheme.replace("_", " ")}


def run_parts(parts: list[tuple[str, Callable[[], list[dict]]]], only: set[str] | None = None,
              seconds: dict[str, float] | None = None) -> list[dict]:
    """The rows of ``parts`` (those named in ``only``); a part that raises gives one failed row."""
    rows = []
    for name, part in parts:
        if only is not None and name not in only:
            continue
        t = time.perf_counter()
        try:
            rows += part()
        except Exception as exc:  # a part failing must not hide the others' numbers
            traceback.print_exc()
            rows.append(row(name, f"{name}: failed", None, None, note=error_text(exc)))
        if seconds is not None:
            seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - t
    return rows


# ---- output ------------------------------------------------------------------------------------

def fmt_cell(x: Any, percent: bool) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:.1%}" if percent else f"{x:.4g}"
    return str(x)


def show(console: Any, rows: list[dict], folds: int) -> None:
    body = []
    verdict_text = {"ok": "ok", "MISS": "[red]MISS[/]", "n/a": "[dim]n/a[/]"}
    for r in rows:
        pct = r["part"] in ("gains", "fig5", "herti", "plans")
        ours = NA if r["ours"] is None and NA in r["note"] else fmt_cell(r["ours"], pct)
        h = r.get("held_out") or {}
        if r.get("fit") == "held out":
            held, hv, src = "=", verdict_text[r["verdict"]], "never fitted"
        else:
            held, hv = fmt_cell(h.get("ours"), pct), verdict_text[h.get("verdict", "n/a")]
            src = f"{h.get('scheme', '')}: {h.get('fold') or ''}".strip(": ")
            if h.get("ours") is None and h.get("note"):
                src += f" ({h['note']})"
        body.append([r["what"], r.get("fit", ""), fmt_cell(r["paper"], pct), ours, verdict_text[r["verdict"]],
                     held, hv, src, r["note"]])
    herti.table(console, "MOSAIC (PACT'19) on the board model: paper vs ours, fitted board and held out (ok: within 20%)",
                ["what", "row", "paper", "ours (fitted)", "verdict", "held out", "verdict", "held out by", "note"], body)
    s = summarise(rows)
    c = lambda d: f"{d['ok']} ok, {d['MISS']} MISS, {d['n/a']} n/a"     # noqa: E731
    console.print(f"fitted board, all {s['all']['rows']} rows: {c(s['all'])}", highlight=False)
    console.print(f"the {s['fitted']['rows']} fitted rows (their numbers are in the CSV): on the fitted board "
                  f"{c(s['fitted'])}; predicted by refits that did not see them {c(s['held_out_of_fitted'])} "
                  f"(by model, {folds} folds: {c(s['by_model'])}; by kind: {c(s['by_kind'])})", highlight=False)
    console.print(f"the {s['never_fitted']['rows']} rows never fitted: {c(s['never_fitted'])}", highlight=False)
    console.print(f"[bold]held out, every row: {s['held_out']['ok']} of {s['held_out']['rows']} ok[/] "
                  f"({s['held_out']['MISS']} MISS, {s['held_out']['n/a']} n/a)", highlight=False)


def counts(verdicts: list[str]) -> dict[str, int]:
    return {"rows": len(verdicts), **{v: sum(x == v for x in verdicts) for v in ("ok", "MISS", "n/a")}}


def summarise(rows: list[dict]) -> dict[str, Any]:
    """Verdict counts: every row on the fitted board (``all``), the fitted rows on it and by the
    leave-out refits, the rows never fitted, and every row's held-out verdict (``held_out``)."""
    fitted = [r for r in rows if r.get("fit") == "fitted"]
    out = {"all": counts([r["verdict"] for r in rows]),
           "fitted": counts([r["verdict"] for r in fitted]),
           "held_out_of_fitted": counts([r["held_out"]["verdict"] for r in fitted]),
           "by_model": counts([r["by_model"]["verdict"] for r in fitted if "by_model" in r]),
           "by_kind": counts([r["by_kind"]["verdict"] for r in fitted if "by_kind" in r]),
           "never_fitted": counts([r["verdict"] for r in rows if r.get("fit") == "held out"]),
           "held_out": counts([(r.get("held_out") or {}).get("verdict", "n/a") for r in rows])}
    t1 = [r for r in fitted if r["part"] == "table1" and r["ours"] is not None]
    if t1:
        out["table1_mape"] = {"fitted": statistics.fmean(abs(r["ratio"] - 1) for r in t1)}
        held = [r["held_out"]["ratio"] for r in t1 if r["held_out"].get("ratio") is not None]
        out["table1_mape"]["held_out"] = statistics.fmean(abs(x - 1) for x in held) if held else None
    return out


def show_sensitivity(console: Any, sens: list[dict]) -> None:
    body = []
    for s in sens:
        fit = (s["refit"].get("fit") or {})
        lat, gain, uses = fit.get("latency", {}), fit.get("gain", {}), fit.get("plan_uses", {})
        cells = []
        for r in s["rows"]:
            cells += [fmt_cell(r["ours"], True), r["verdict"]]
        body.append([s["base_power"], fmt_cell(s["base_power_mw"], False),
                     herti.fmt(lat.get("mape_pct"), ".1f"), herti.fmt(gain.get("mean_abs_error_pp"), ".1f"),
                     f"{uses['agree']}/{uses['rows']}" if uses else "–", *cells,
                     s["rows"][0]["note"] if s["rows"] else (s["refit"].get("error") or "")])
    refs = list(PAPER["herti_fig6_saving_vs"])
    heads = [h for ref in refs for h in (f"below {ref} (paper {PAPER['herti_fig6_saving_vs'][ref]:.1%})", "verdict")]
    herti.table(console, "Sensitivity: the held-out HERTI rows at each base power (each a refit of the prior to "
                "MOSAIC's rows)", ["base_power_mw", "mW", "Table I MAPE %", "gains |err| pp", "plan states",
                                   *heads, "note"], body)


def finite(doc: Any) -> Any:
    """``doc`` with every non-finite float as None (the JSON stays standard)."""
    if isinstance(doc, float):
        return doc if math.isfinite(doc) else None
    if isinstance(doc, dict):
        return {str(k): finite(v) for k, v in doc.items()}
    if isinstance(doc, (list, tuple, set)):
        return [finite(v) for v in (sorted(doc, key=str) if isinstance(doc, set) else doc)]
    return doc


def make_parts(board: Board, labels: list[str], large: tuple[str, ...], small: tuple[str, ...], fig5_model: str,
               herti_planner: str) -> list[tuple[str, Callable[[], list[dict]]]]:
    return [
        ("table1", lambda: table1(board, labels)),
        ("gains", lambda: gains(board, {"large": large, "small": small})),
        ("plans", lambda: plan_states(board, large)),
        ("fig5", lambda: fig5(board, fig5_model)),
        ("ablations", lambda: ablations(board, large)),
        ("herti", lambda: herti_saving(board, large, herti_planner)),
    ]


#: the parts a by-kind fold re-runs, and the models they need
KIND_PARTS = {"table1": ("table1", "all"), "table3": ("plans", "large"), "table4": ("plans", "large"),
              "gains-latency": ("gains", "all"), "gains-energy": ("gains", "all")}


def leave_out(args: argparse.Namespace, refits: Refits, base: Board, rows: list[dict], labels: list[str],
              large: tuple[str, ...], small: tuple[str, ...], fig5_model: str, folds: int,
              console: Any) -> list[dict]:
    """The by-model and by-kind refits; puts each fitted row's predictions beside it; returns the refits."""
    board_args = (args.models_dir,)
    opts = (args.mosaic_energy, None if args.memory == "none" else Path(args.memory))
    done: list[dict] = []

    def board_of(info: dict, want: list[str]) -> Board | None:
        return Board(info["target"], *board_args, want, console, *opts) if info["target"] else None

    by_model: dict[str, tuple[dict | None, str, str | None]] = {}
    groups = folds_by_model(labels, folds)
    boards: list[tuple[Board | None, list[str], str | None]] = []
    for i, fold in enumerate(groups):
        zoo = {MODELS[w][0] for w in fold}
        info = refits.fit(f"model-{i + 1}", lambda r, z=zoo: not (r["kind"] in ("latency", "plan_uses")
                                                                     and r["model"] in z))
        done.append({**info, "scheme": "by model", "fold": f"{i + 1}/{len(groups)}", "held_out": fold})
        boards.append((board_of(info, fold), fold, info.get("error")))
    fold_of = {w: f"{i + 1}/{len(groups)} ({', '.join(g)})" for i, g in enumerate(groups) for w in g}
    comp = composite(base, boards)
    for r in run_parts(make_parts(comp, labels, large, small, fig5_model, args.herti_planner), {"table1", "plans"}):
        models = [w for w in labels if r["what"].startswith((f"Table I: {w} ", f"Table IV: {w}'s "))]
        by_model[r["what"]] = (r, fold_of[models[0]] if models else f"all {len(groups)} folds", None)

    by_kind: dict[str, tuple[dict | None, str, str | None]] = {}
    kind_folds = QUICK_KIND_FOLDS if args.quick else {k: (k,) for k in KINDS}
    for name, kinds in kind_folds.items():
        info = refits.fit(f"kind-{name}", lambda r, ks=kinds: row_kind(r) not in ks)
        done.append({**info, "scheme": "by kind", "fold": name, "held_out": list(kinds)})
        parts = {KIND_PARTS[k][0] for k in kinds}
        want = labels if any(KIND_PARTS[k][1] == "all" for k in kinds) else [w for w in labels if w in large]
        b = board_of(info, want)
        if b is None:
            for r in rows:
                if row_kind(r) in kinds:
                    by_kind[r["what"]] = (None, name, f"refit failed: {info['error']}")
            continue
        for r in run_parts(make_parts(b, labels, large, small, fig5_model, args.herti_planner), parts):
            if row_kind(r) in kinds:
                by_kind[r["what"]] = (r, name, None)
    attach_held_out(rows, by_model, by_kind)
    return done


def sensitivity(args: argparse.Namespace, refits: Refits, values: list[str], large: tuple[str, ...],
                console: Any, fitted: Board | None = None) -> list[dict]:
    """The HERTI rows (held out) on refits of the prior with base_power_mw at each of ``values``;
    ``fitted``: the board under test when it is the fit with the refit options (the built-in
    hikey970 with the defaults), reused for the value those options set."""
    out = []
    for v in values:
        opts = with_base_power(refits.options, v)
        if fitted is not None and vars(opts) == vars(refits.options):
            info, b = refits.predict(f"base-{v}", args.target), fitted
        else:
            info = refits.fit(f"base-{v}", lambda r: True, opts)
            b = Board(info["target"], args.models_dir, list(large), console, args.mosaic_energy,
                      None if args.memory == "none" else Path(args.memory)) if info["target"] else None
        rows = run_parts([("herti", lambda: herti_saving(b, large, args.herti_planner))]) if b else []
        out.append({"base_power": v, "base_power_mw": info.get("base_power_mw"), "refit": info,
                    "rows": [{k: r.get(k) for k in ("what", "paper", "ours", "ratio", "verdict", "note")} for r in rows]})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="MN-1.0, MN-0.5, MO-1.0 (no timm), 2 folds each way, "
                    "one free parameter: a check of the machinery")
    ap.add_argument("--target", default="hikey970", help="board name or TOML path (default hikey970, the board fitted to MOSAIC; "
                    "targets/observations/hikey970-prior.toml is the hand-set one it was fitted from)")
    ap.add_argument("--json", type=Path, default=None, dest="out",
                    help="JSON path (default benchmarks/results/fidelity[-quick].json)")
    ap.add_argument("--models-dir", type=Path, default=MODELS_DIR, help="exported-model cache")
    ap.add_argument("--mosaic-energy", default="dp",
                    help='the planner of MOSAIC\'s energy plans (default dp: board energy, base power included; '
                         '"dp base_power=false": MOSAIC\'s own estimator, Eq. 4, device power only)')
    ap.add_argument("--memory", default=str(MOSAIC_CSV),
                    help="an observations file whose memory rows (a model's size as the device's runtime reports it) "
                         "the NPU's capacity rule charges; default MOSAIC's (Table I, as the fit used them); "
                         "'none': the board's own rule alone")
    ap.add_argument("--herti-planner", default="exact",
                    help="the planner in HERTI's slot (default exact: the optimum under the deadline; dqn is HERTI's)")
    ap.add_argument("--folds", type=int, default=None, metavar="K",
                    help="leave-out refits by model: the models in K folds (default 5; --quick 2; 0: no leave-out "
                         "refits, by model or by kind)")
    ap.add_argument("--base-powers", default=None, metavar="LIST",
                    help=f"base_power_mw values (mW, or 'free': fitted) to refit at for the HERTI rows' sensitivity "
                         f"(default {BASE_POWERS}; --quick {QUICK_BASE_POWERS}; 'none': no sensitivity)")
    ap.add_argument("--prior", type=Path, default=None, help="the board the refits start from (default the "
                    "hand-set prior the built-in hikey970 was fitted from; --quick: the built-in hikey970)")
    ap.add_argument("--refit-args", type=Path, default=None,
                    help="a file of hetcc calibrate's fit options for the refits (default "
                         "targets/observations/hikey970-refit.args, how hikey970 was fitted; --quick: "
                         f"{QUICK_REFIT_ARGS!r})")
    args = ap.parse_args(argv)
    large, small = (QUICK["large"], QUICK["small"]) if args.quick else (LARGE, SMALL)
    fig5_model = QUICK["fig5"] if args.quick else "MO-1.4"
    labels = list(dict.fromkeys([*large, *small, fig5_model]))
    folds = args.folds if args.folds is not None else (2 if args.quick else 5)
    if folds < 0:
        ap.error(f"--folds {folds}: give 0 (no refits) or a positive number of folds")
    bp_text = args.base_powers or (QUICK_BASE_POWERS if args.quick else BASE_POWERS)
    base_powers = [] if bp_text == "none" else [v.strip() for v in bp_text.split(",") if v.strip()]
    for v in base_powers:
        try:
            ok = v == "free" or float(v) >= 0
        except ValueError:
            ok = False
        if not ok:
            ap.error(f"--base-powers: {v!r} is no power; give mW values >= 0 or 'free', comma-separated")
    refit_text = (args.refit_args.read_text(encoding="utf-8") if args.refit_args
                  else QUICK_REFIT_ARGS if args.quick else REFIT_ARGS.read_text(encoding="utf-8"))
    options = refit_options(refit_text)
    prior = args.prior or (QUICK_PRIOR if args.quick else PRIOR)
    console, date, t0 = make_console(), utc_now(), time.perf_counter()
    out = args.out or RESULTS_DIR / f"{SCRIPT}{'-quick' if args.quick else ''}.json"
    memory = None if args.memory == "none" else Path(args.memory)
    board = Board(args.target, args.models_dir, labels, console, args.mosaic_energy, memory)
    seconds: dict[str, float] = {}
    rows = run_parts(make_parts(board, labels, large, small, fig5_model, args.herti_planner), seconds=seconds)
    files = {MODELS[w][0]: model_path(MODELS[w][0], args.models_dir) for w in labels}
    refits = Refits(prior, MOSAIC_CSV, options, files, console)
    try:
        t = time.perf_counter()
        fold_docs = leave_out(args, refits, board, rows, labels, large, small, fig5_model, folds, console) if folds else []
        if not folds:
            attach_held_out(rows, {}, {})
        seconds["leave_out"] = time.perf_counter() - t
        t = time.perf_counter()
        default = args.target == "hikey970" and args.prior is None and args.refit_args is None and not args.quick
        sens = sensitivity(args, refits, base_powers, large, console, board if default else None)
        seconds["sensitivity"] = time.perf_counter() - t
    finally:
        refits.close()
    show(console, rows, folds)
    if sens:
        show_sensitivity(console, sens)
    for w, e in board.errors.items():
        console.print(f"[yellow]{w}: {e}[/]", highlight=False)
    for f in [*fold_docs, *(s["refit"] for s in sens)]:
        if f.get("error"):
            console.print(f"[yellow]refit {f['name']}: {f['error']}[/]", highlight=False)
    models = {w: {"zoo": MODELS[w][0], "note": MODELS[w][1], "analysed": w in board.analyses,
                  "layers": board.analyses[w].problem.num_layers if w in board.analyses else None,
                  "error": board.errors.get(w)} for w in labels}
    for f in [*fold_docs, *(s["refit"] for s in sens)]:
        f.pop("target", None)                  # a temporary file, gone
    write_json(finite({"script": SCRIPT, "date": date, "machine": machine_info(), "target": board.target.name,
                       "memory_mb": {m: {d: b / 1e6 for d, b in v.items()} for m, v in board.memory.items()},
                       "args": {"quick": args.quick, "herti_planner": args.herti_planner, "memory": args.memory,
                                "mosaic_energy": args.mosaic_energy, "large": list(large),
                                "small": list(small), "fig5": fig5_model, "folds": folds,
                                "base_powers": base_powers, "prior": str(prior),
                                "refit_args": refit_text.strip()},
                       "tolerance": TOLERANCE, "total_s": time.perf_counter() - t0, "part_seconds": seconds,
                       "paper": PAPER, "models": models, "summary": summarise(rows), "refits": fold_docs,
                       "base_power": {"built_in_mw": board.target.base_power_mw,
                                      "values": sens},
                       "rows": rows}), out)
    print(f"wrote {out} ({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
