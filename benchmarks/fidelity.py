"""How faithful is a board model? MOSAIC's evaluation (PACT'19) replayed on it, beside the paper.

MOSAIC published its HiKey 970 measurements as a handful of numbers (Table I's GPU latencies,
the headline gains of Sec. VI-B/C/E, the plans of Tables III/IV, the 34.1 % of Fig. 5 and the
orderings of Figs. 10/11); ``targets/observations/hikey970-mosaic.csv`` holds the ones a fit can
use. This script plans MOSAIC's versions on the board model through hetcc's Python API and prints
``what | paper | ours | ratio | verdict`` (within 20 % relative: ok, else MISS; orderings and
yes/no facts: ok when they hold):

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

A part none of whose models could be analysed reads "n/a" (the error is printed); a part with
some models missing says how many it used. Writes benchmarks/results/fidelity.json
(``--quick``: fidelity-quick.json, 3 small torchvision models, a few seconds once exported).

Why one script of ~450 lines: each part is a dozen lines of planning plus its paper figures, and
all of them share the board, the model list, the judge and the table printer.

    python benchmarks/fidelity.py [--quick] [--target hikey970] [--json OUT]
"""
from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
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
MOSAIC_CSV = Path(__file__).resolve().parents[1] / "targets" / "observations" / "hikey970-mosaic.csv"
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

    def __init__(self, problem: Any, first: int, last: int) -> None:
        self.p, self.a, self.states, self.num_states = problem, first, problem.states, problem.num_states
        self.num_layers = last - first + 1

    def slice_legal(self, i: int, j: int, s: int) -> bool:
        return self.p.slice_legal(self.a + i, self.a + j, s)

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
    seg: dict[tuple[int, int], tuple[float, int]] = {}
    for a in range(L):
        for b in range(a, L):
            slices = device_preferred(_Segment(problem, a, b), preferred)
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


# ---- output ------------------------------------------------------------------------------------

def fmt_cell(x: Any, percent: bool) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:.1%}" if percent else f"{x:.4g}"
    return str(x)


def show(console: Any, rows: list[dict]) -> None:
    body = []
    for r in rows:
        pct = r["part"] in ("gains", "fig5", "herti", "plans")
        ok = {"ok": "ok", "MISS": "[red]MISS[/]", "n/a": "[dim]n/a[/]"}[r["verdict"]]
        ours = NA if r["ours"] is None and NA in r["note"] else fmt_cell(r["ours"], pct)
        body.append([r["what"], fmt_cell(r["paper"], pct), ours, herti.fmt(r["ratio"], ".3f"), ok, r["note"]])
    herti.table(console, "MOSAIC (PACT'19) on the board model: paper vs ours (ok: within 20%)",
                ["what", "paper", "ours", "ratio", "verdict", "note"], body)
    n = {v: sum(r["verdict"] == v for r in rows) for v in ("ok", "MISS", "n/a")}
    console.print(f"{n['ok']} ok, {n['MISS']} MISS, {n['n/a']} n/a", highlight=False)


def finite(doc: Any) -> Any:
    """``doc`` with every non-finite float as None (the JSON stays standard)."""
    if isinstance(doc, float):
        return doc if math.isfinite(doc) else None
    if isinstance(doc, dict):
        return {str(k): finite(v) for k, v in doc.items()}
    if isinstance(doc, (list, tuple, set)):
        return [finite(v) for v in (sorted(doc, key=str) if isinstance(doc, set) else doc)]
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="MN-1.0, MN-0.5, MO-1.0 (no timm), a few seconds")
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
    args = ap.parse_args(argv)
    large, small = (QUICK["large"], QUICK["small"]) if args.quick else (LARGE, SMALL)
    fig5_model = QUICK["fig5"] if args.quick else "MO-1.4"
    labels = list(dict.fromkeys([*large, *small, fig5_model]))
    console, date, t0 = make_console(), utc_now(), time.perf_counter()
    out = args.out or RESULTS_DIR / f"{SCRIPT}{'-quick' if args.quick else ''}.json"
    memory = None if args.memory == "none" else Path(args.memory)
    board = Board(args.target, args.models_dir, labels, console, args.mosaic_energy, memory)
    parts: list[tuple[str, Callable[[], list[dict]]]] = [
        ("table1", lambda: table1(board, labels)),
        ("gains", lambda: gains(board, {"large": large, "small": small})),
        ("plans", lambda: plan_states(board, large)),
        ("fig5", lambda: fig5(board, fig5_model)),
        ("ablations", lambda: ablations(board, large)),
        ("herti", lambda: herti_saving(board, large, args.herti_planner)),
    ]
    rows, seconds = [], {}
    for name, part in parts:
        t = time.perf_counter()
        try:
            rows += part()
        except Exception as exc:  # a part failing must not hide the others' numbers
            traceback.print_exc()
            rows.append(row(name, f"{name}: failed", None, None, note=error_text(exc)))
        seconds[name] = time.perf_counter() - t
    show(console, rows)
    for w, e in board.errors.items():
        console.print(f"[yellow]{w}: {e}[/]", highlight=False)
    models = {w: {"zoo": MODELS[w][0], "note": MODELS[w][1], "analysed": w in board.analyses,
                  "layers": board.analyses[w].problem.num_layers if w in board.analyses else None,
                  "error": board.errors.get(w)} for w in labels}
    write_json(finite({"script": SCRIPT, "date": date, "machine": machine_info(), "target": board.target.name,
                       "memory_mb": {m: {d: b / 1e6 for d, b in v.items()} for m, v in board.memory.items()},
                       "args": {"quick": args.quick, "herti_planner": args.herti_planner, "memory": args.memory,
                                "mosaic_energy": args.mosaic_energy, "large": list(large),
                                "small": list(small), "fig5": fig5_model},
                       "tolerance": TOLERANCE, "total_s": time.perf_counter() - t0, "part_seconds": seconds,
                       "paper": PAPER, "models": models, "rows": rows}), out)
    print(f"wrote {out} ({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
