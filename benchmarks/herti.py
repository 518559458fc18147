"""HERTI's evaluation (Sec. IV-V) on hetcc's ``hikey970`` board model, beside the paper's figures.

Why one script: every table (the figures, the ablation, the claims) is a view of the same sweeps,
and the paper's numbers and their judging are kept beside the runs they read.

HERTI's 13 versions, all through the planner registry: TFL-{BIG,LITTLE,GPU,NPU}-P (``single:<dev>``),
TFL-*-O (the same with the on-demand governor), MOSAIC-P / MOSAIC-E (``dp`` on latency / energy,
deadline-oblivious), AutoScale (``autoscale-static``), exhaustive (``exact``: the proven optimum)
and HERTI (``dqn``; ``--dqn-planner`` puts another planner there). Per workload x deadline
(Eq. 12: short / medium / long): latency / deadline (Fig. 5), energy / MOSAIC-P's (Figs. 6, 7),
each version's gap to the optimum (what the paper could not show: its "exhaustive" search was
cut off after 10 days), the planners' wall seconds; EDP under the medium deadline (Fig. 10);
the board restricted to device subsets (Fig. 8); and HERTI's wall time against the time
measuring every state it evaluated on the board would take (Fig. 11). Plots: <out>-fig*.png.

The ablation (part ``ablation``, its own sweep ``<out>-ablation-sweep/`` and JSON
``<out>-ablation.json``) runs ``dqn`` under the medium deadline as HERTI's Alg. 1 alone (one walk
from MOSAIC-P, no restarts, no MOSAIC-E start, no polish), then with hetcc's search additions
switched on one at a time, all with the same step budget, each judged by its energy above
``exact``. The claim table beside it checks every claim of the paper's evaluation against the
figures' results (``<out>``) and the ablation: the paper's words and place, its value, ours, the
verdict and, for a miss, the cause. When the figures' results lack Figs. 8 and 10 (a run of
``--parts main``), the claims plan those cells in ``<out>-ablation-figs-sweep/`` under the medium
deadline, with ``exact`` in HERTI's slot (``FIGURES_SLOT``), and say so.

The grid runs as one ``hetcc sweep`` (``sweep_spec`` builds it: a [[grid]] per kind of cell) on
embedded Ray with ``--workers`` processes (``--quick``: in this process, without Ray); its table
is ``<out>-sweep/cells.csv`` and a rerun resumes it (``--fresh`` plans everything again). This
script only judges the rows: a deadline-oblivious version (MOSAIC-P/E, MOSAIC-EDP) is planned
once and judged under each deadline.

    python benchmarks/herti.py                    # 7 workloads x 3 deadlines, the ablation on all 7
    python benchmarks/herti.py --quick            # MN-1.0 and MO-1.3, medium deadline, dqn 200 steps;
                                                  # the ablation on MN-1.0
    python benchmarks/herti.py --parts ablation   # the ablation and the claims (from the last herti.json)
    python benchmarks/herti.py --dqn-planner random --workloads RN,VGG --deadlines medium,long
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

if (HERE := str(Path(__file__).resolve().parent)) not in sys.path:  # _common.py lives beside this script
    sys.path.insert(0, HERE)
from _common import MODELS_DIR, RESULTS_DIR, machine_info, make_console, model_path, utc_now, write_json  # noqa: E402

from hetcc.planners import Objective, get_spec  # noqa: E402
from hetcc.experiments.sweep import planner_entry  # noqa: E402
from hetcc.planners.registry import option_fields  # noqa: E402

os.environ.setdefault("RL_LOGGING_LEVEL", "WARNING")  # torchrl logs each replay buffer it makes on stdout
SCRIPT = Path(__file__).stem
TARGET = "hikey970"
DEADLINES = ("short", "medium", "long")
DEVICES = ("big", "little", "gpu", "npu")
#: HERTI's workloads (Table III) -> (zoo model, how it differs from the paper's)
WORKLOADS = {
    "IN": ("inception_v3", "Inception V3 stands in for V4 (torchvision has no Inception V4)"),
    "MN-1.0": ("mnasnet1_0", ""), "MN-1.3": ("mnasnet1_3", ""),
    "MO-1.3": ("mobilenet_v2_1.3", ""), "MO-1.4": ("mobilenet_v2_1.4", ""),
    "RN": ("resnet50", "ResNet-50 V1 stands in for ResNet V2 (torchvision has no V2)"),
    "VGG": ("vgg16", "VGG-16"),
}
QUICK_WORKLOADS = ("MN-1.0", "MO-1.3")
#: Fig. 8: the device subsets (CPU = big + little)
SUBSETS = {"CPU": ("big", "little"), "CPU+GPU": ("big", "little", "gpu"), "CPU+NPU": ("big", "little", "npu"),
           "all": DEVICES}
#: what the paper reports (Table III deadlines in ms; fractions; minutes)
PAPER = {
    "deadlines_ms": {"IN": (190, 210, 250), "MN-1.0": (85, 100, 130), "MN-1.3": (105, 120, 150),
                     "MO-1.3": (75, 90, 120), "MO-1.4": (85, 100, 130), "RN": (155, 170, 200),
                     "VGG": (135, 150, 180)},
    "fig5_meet_every_deadline": ["TFL-NPU-P", "MOSAIC-P", "AutoScale", "HERTI"],
    "fig6_saving_vs": {"MOSAIC-P": 0.280, "AutoScale": 0.284},
    "fig7_gain_growth_short_to_long": 0.141, "fig7_long_equals_mosaic_e": True,
    "fig8_saving_vs": {"CPU+GPU": {"MOSAIC-P": 0.206, "AutoScale": 0.118},
                       "CPU+NPU": {"MOSAIC-P": 0.217, "AutoScale": 0.133}},
    "fig10_herti_edp_vs_mosaic_edp": 1.0,
    "fig11_minutes": {"estimated": 48, "measured": 15088, "ratio": 314},
}


# ---- versions ----------------------------------------------------------------------------------

def steps_options(planner: str, steps: int | None) -> dict[str, int]:
    """``{"steps": n}`` for the HERTI slot (``samples`` for ``random``); {} for the planner's default."""
    if steps is None:
        return {}
    names = [f[0] for f in option_fields(get_spec(planner))]
    key = next((k for k in ("steps", "samples") if k in names), None)
    return {key: steps} if key else {}


def herti_entry(herti: tuple[str, dict]) -> str:
    """The sweep's planners entry of HERTI's slot: ``dqn`` or ``dqn steps=200``."""
    return " ".join([herti[0], *(f"{k}={v}" for k, v in sorted(herti[1].items()))])


def main_versions(herti: tuple[str, dict]) -> list[tuple[str, str, str | None]]:
    """HERTI's 13 versions: (name, sweep planners entry, metric planned for; None = the judge's,
    with its deadline; a metric = deadline-oblivious)."""
    v = [(f"TFL-{d.upper()}-{g[0].upper()}", f"single:{d}" + (" governor=ondemand" if g == "ondemand" else ""),
          None) for g in ("performance", "ondemand") for d in DEVICES]
    return v + [("MOSAIC-P", "dp", "latency"), ("MOSAIC-E", "dp", "energy"),
                ("AutoScale", "autoscale-static", None), ("exhaustive", "exact", None),
                ("HERTI", herti_entry(herti), None)]


def edp_versions(herti: tuple[str, dict]) -> list[tuple[str, str, str | None]]:
    return [("MOSAIC-P", "dp", "latency"), ("AutoScale", "autoscale-static", None), ("exhaustive", "exact", None),
            ("MOSAIC-EDP", "exact", "edp"), ("HERTI", herti_entry(herti), None)]


def sweep_spec(args: argparse.Namespace, herti: tuple[str, dict], paths: dict[str, Path]) -> dict[str, Any]:
    """The evaluation as one ``hetcc sweep`` spec: a [[grid]] per kind of cell (the versions
    judged under each deadline; the deadline-oblivious ones planned once; HERTI's seeds)."""
    subsets = [s for s in SUBSETS if s != "all"] if "subsets" in args.parts else []
    dev = {s: "+".join(SUBSETS[s]) for s in subsets}
    oblivious = [{"planners": ["dp"], "objectives": ["latency", "energy"], "deadlines": ["none"],
                  "devices": ["all", *(dev[s] for s in subsets)]}]
    grids = []
    if "main" in args.parts:
        grids += [{"planners": [p for n, p, m in main_versions(herti) if m is None and n != "HERTI"],
                   "deadlines": args.deadlines},
                  {"planners": [herti_entry(herti)], "deadlines": args.deadlines, "seeds": args.seed_list}]
    if "edp" in args.parts:
        grids += [{"planners": ["autoscale-static", "exact"], "objectives": ["edp"], "deadlines": ["medium"]},
                  {"planners": ["exact"], "objectives": ["edp"], "deadlines": ["none"]},
                  {"planners": [herti_entry(herti)], "objectives": ["edp"], "deadlines": ["medium"],
                   "seeds": args.seed_list}]
    if subsets:
        grids += [{"planners": ["autoscale-static", "exact"], "deadlines": ["medium"],
                   "devices": [dev[s] for s in subsets]},
                  {"planners": [herti_entry(herti)], "deadlines": ["medium"], "devices": [dev[s] for s in subsets],
                   "seeds": args.seed_list}]
    return {"models": [str(paths[w]) for w in args.workloads], "targets": [args.target], "objectives": ["energy"],
            "gap_to": "none", "grid": oblivious + grids}


def judged_rows(table: list[dict], args: argparse.Namespace, herti: tuple[str, dict],
                paths: dict[str, Path]) -> tuple[list[dict], list[dict]]:
    """The sweep's rows as the evaluation's: each version judged by (metric, deadline) of its part;
    the per-workload facts (layers, Eq. 12's references and deadlines) from the same rows."""
    label_of = {str(paths[w]): w for w in args.workloads}
    by: dict[tuple, list[dict]] = {}
    for r in table:
        by.setdefault((label_of[r["model"]], r["planner"], r["options"], r["objective"], r["deadline"],
                       r["device_set"]), []).append(r)
    num = lambda v: float(v) if v not in ("", None) else None  # noqa: E731

    def cells(label: str, entry: str, objective: str, deadline: str, devices: str = "all") -> list[dict]:
        name, options = planner_entry(entry, {}, Path("herti"), "")     # the sweep's own canonical options
        return by.get((label, name, options, objective, deadline, devices), [])

    def deadline_ms(label: str, d: str, devices: str = "all") -> float | None:
        found = [num(r["deadline_ms"]) for k, rs in by.items() if k[0] == label and k[4] == d and k[5] == devices
                 for r in rs if r["deadline_ms"]]
        return found[0] if found else None

    def judge_all(label: str, versions: list, metric: str, d: str, devices: str, **key: Any) -> list[dict]:
        ms = deadline_ms(label, d, devices)
        judge = Objective(metric, deadline_ms=ms, deadline_spec=d)
        out = []
        for name, entry, planned in versions:
            sel = cells(label, entry, planned or metric, "none" if planned else d, devices)
            if not sel:
                out.append({**key, "version": name, "planner": entry, "error": "no such cell in the sweep"})
            for r in sel:
                row = {**key, "version": name, "planner": entry.split()[0], "options": json.loads(r["options"]),
                       "seed": int(r["seed"]) if name == "HERTI" else None, "deadline_ms": ms,
                       "slices": int(r["slices"]) if r["slices"] else None, "devices": r["devices"]}
                lat, en = num(r["latency_ms"]), num(r["energy_mj"])
                if lat is None or en is None:
                    out.append({**row, "error": r["error"] or r["status"]})
                    continue
                out.append({**row, "latency_ms": lat, "energy_mj": en, "edp": lat * en,
                            "value": judge.value(lat, en), "latency_norm": lat / ms,
                            "feasible": judge.feasible(lat, en), "wall_s": num(r["planner_seconds"]),
                            "stats": json.loads(r["stats"]) if r["stats"] else {}})
        return out

    infos, rows = [], []
    for label in args.workloads:
        zoo_name, note = WORKLOADS[label]
        fast, frugal = cells(label, "dp", "latency", "none"), cells(label, "dp", "energy", "none")
        any_row = next(r for k, rs in by.items() if k[0] == label for r in rs)
        infos.append({"workload": label, "model": zoo_name, "note": note, "layers": int(any_row["layers"] or 0),
                      "states": int(any_row["states"] or 0), "devices": list(DEVICES),
                      "t_best_ms": num(fast[0]["latency_ms"]) if fast else None,
                      "t_energy_opt_ms": num(frugal[0]["latency_ms"]) if frugal else None,
                      "deadlines_ms": {d: deadline_ms(label, d) for d in DEADLINES}})
        for d in (args.deadlines if "main" in args.parts else ()):
            rows += judge_all(label, main_versions(herti), "energy", d, "all", part="main", workload=label, deadline=d)
        if "edp" in args.parts:
            rows += judge_all(label, edp_versions(herti), "edp", "medium", "all", part="edp", workload=label,
                              deadline="medium")
        names = ("MOSAIC-P", "AutoScale", "exhaustive", "HERTI")
        for sub, devices in (SUBSETS.items() if "subsets" in args.parts else ()):
            versions = [v for v in main_versions(herti) if v[0] in names]
            rows += judge_all(label, versions, "energy", "medium", "all" if sub == "all" else "+".join(devices),
                              part="subset", workload=label, subset=sub)
    return infos, rows


def workload_paths(args: argparse.Namespace, workloads: list[str]) -> dict[str, Path]:
    """Each workload's exported model (exported once into ``--models-dir``)."""
    return {w: model_path(WORKLOADS[w][0], args.models_dir).resolve() for w in workloads}


def run_sweep_grid(args: argparse.Namespace, doc: dict[str, Any], root: Path) -> list[dict]:
    """Run the spec through ``hetcc sweep`` (embedded Ray, ``--workers``) in ``root`` and return its
    rows (a rerun resumes it unless ``--fresh``)."""
    import shutil

    from hetcc.experiments.sweep import parse_spec, run_sweep

    if args.fresh and root.exists():
        shutil.rmtree(root)
    spec = parse_spec(doc, root / "spec.json")
    result = run_sweep(spec, root, workers=args.workers, progress=sys.stderr.isatty())
    print(f"sweep: {result.cells} cells ({result.ran} planned now, {result.skipped_done} from {root}/cells.csv), "
          f"{result.seconds:.0f} s", file=sys.stderr)
    (root / "spec.json").write_text(json.dumps(doc, indent=1) + "\n")
    return result.rows


# ---- ablation: Alg. 1 alone, then hetcc's additions one at a time -----------------------------

#: dqn's options per ablation row, cumulative: HERTI's Alg. 1 (one walk from MOSAIC-P, s_best as
#: the answer), then each search addition beyond the paper switched on (the last row is dqn's default)
ABLATION = (
    ("Alg. 1 alone", {"episode": 0, "elite": 1, "mosaic_e": False, "polish": False}),
    ("+ restarts", {"episode": 50, "elite": 1, "mosaic_e": False, "polish": False}),
    ("+ elite pool", {"episode": 50, "elite": 8, "mosaic_e": False, "polish": False}),
    ("+ MOSAIC-E start", {"episode": 50, "elite": 8, "mosaic_e": True, "polish": False}),
    ("+ polish", {"episode": 50, "elite": 8, "mosaic_e": True, "polish": True}),
)
ABLATION_DEADLINE = "medium"
#: the learned part's target: Alg. 1 alone within this much of the optimum (median over the workloads)
DQN_ALONE_TARGET = 0.05
#: HERTI's slot in Figs. 8 and 10's cells when the figures' results lack them (the claims need them):
#: the proven optimum, which dqn's default reaches within 0.3% on the main grid, for a fraction of the time
FIGURES_SLOT = "exact"


def ablation_entries(steps: dict[str, int]) -> list[tuple[str, str]]:
    """(row name, the sweep's planners entry) of each ablation row, all with the same step budget."""
    text = lambda v: str(v).lower() if isinstance(v, bool) else str(v)  # noqa: E731
    return [(name, " ".join(["dqn", *(f"{k}={text(v)}" for k, v in sorted({**opts, **steps}.items()))]))
            for name, opts in ABLATION]


def ablation_spec(args: argparse.Namespace, entries: list[tuple[str, str]], paths: dict[str, Path],
                  target_paths: dict[str, Path] | None = None) -> dict[str, Any]:
    """The ablation as one ``hetcc sweep`` spec: exact (the optimum) beside each row's dqn, all
    under the medium deadline; the first row (Alg. 1 alone) also on ``target_paths``' workloads."""
    every = {**(target_paths or {}), **paths}
    models = lambda ps: [str(p) for p in ps.values()]  # noqa: E731
    return {"models": models(every), "targets": [args.target], "objectives": ["energy"], "gap_to": "none",
            "grid": [{"planners": ["exact"], "deadlines": [ABLATION_DEADLINE]},
                     {"planners": [entries[0][1]], "deadlines": [ABLATION_DEADLINE], "seeds": args.seed_list,
                      "models": models(every)},
                     {"planners": [e for _, e in entries[1:]], "deadlines": [ABLATION_DEADLINE],
                      "seeds": args.seed_list, "models": models(paths)}]}


def ablation_rows(table: list[dict], entries: list[tuple[str, str]], paths: dict[str, Path]) -> list[dict]:
    """One row per (workload, ablation row, seed): energy, latency, feasibility and the gap to exact."""
    label_of = {str(p): w for w, p in paths.items()}
    num = lambda v: float(v) if v not in ("", None) else None  # noqa: E731
    key = lambda entry: planner_entry(entry, {}, Path("herti"), "")  # noqa: E731
    rows = []
    for w in paths:
        mine = [r for r in table if label_of.get(r["model"]) == w]
        exact = [r for r in mine if (r["planner"], r["options"]) == key("exact") and r["deadline"] == ABLATION_DEADLINE]
        best = num(exact[0]["energy_mj"]) if exact and exact[0]["status"] == "ok" else None
        ms = num(exact[0]["deadline_ms"]) if exact else None
        judge = Objective("energy", deadline_ms=ms, deadline_spec=ABLATION_DEADLINE)
        for name, entry in entries:
            sel = [r for r in mine if (r["planner"], r["options"]) == key(entry)]
            if not sel:
                rows.append({"workload": w, "config": name, "error": "no such cell in the sweep"})
            for r in sel:
                row = {"workload": w, "config": name, "options": json.loads(r["options"]), "seed": int(r["seed"]),
                       "deadline_ms": ms, "optimum_mj": best}
                lat, en = num(r["latency_ms"]), num(r["energy_mj"])
                if lat is None or en is None or best is None:
                    rows.append({**row, "error": r["error"] or r["status"] or "exact found no plan"})
                    continue
                feasible = judge.feasible(lat, en)
                rows.append({**row, "latency_ms": lat, "energy_mj": en, "feasible": feasible,
                             "gap_to_exact": en / best - 1 if feasible else None,
                             "wall_s": num(r["planner_seconds"]), "stats": json.loads(r["stats"]) if r["stats"] else {}})
    return rows


def ablation_summary(rows: list[dict], workloads: list[str]) -> list[dict]:
    """Per ablation row: the gap to exact (median and worst over the workloads, each the mean over
    its seeds; a missed deadline counts as no plan), deadlines met, the runs whose walk found a
    better state than its starts (MOSAIC-P; MOSAIC-E, lifted to meet the deadline, when on)."""
    out = []
    for name, opts in ABLATION:
        mine = [r for r in rows if r.get("config") == name]
        gaps = {w: avg(r.get("gap_to_exact") for r in mine if r["workload"] == w) for w in workloads}
        found = [g for g in gaps.values() if g is not None]
        ok = [r for r in mine if "error" not in r]
        out.append({"config": name, "options": opts, "workloads": len(workloads), "runs": len(mine),
                    "gap_by_workload": gaps,
                    "median_gap": statistics.median(found) if found else None,
                    "worst_gap": max(found) if len(found) == len(workloads) else None,
                    "feasible": sum(bool(r.get("feasible")) for r in mine),
                    "walk_improved": sum(r["stats"].get("improvements", 0) > 0 for r in ok),
                    "polish_moves": sum(r["stats"].get("polish_moves", 0) for r in ok),
                    "steps": avg(r["stats"].get("steps") for r in ok),
                    "explored": avg(r["stats"].get("explored") for r in ok),
                    "wall_s": avg(r.get("wall_s") for r in ok)})
    return out


# ---- summaries ---------------------------------------------------------------------------------

def pick(rows: list[dict], **key: Any) -> list[dict]:
    return [r for r in rows if "error" not in r and all(r.get(k) == v for k, v in key.items())]


def avg(xs: Any) -> float | None:
    """The mean of the values that are not None (None when none is)."""
    vals = [x for x in xs if x is not None]
    return statistics.fmean(vals) if vals else None


def mean_of(rows: list[dict], field: str) -> float | None:
    return avg(r.get(field) for r in rows)


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def add_derived(rows: list[dict]) -> None:
    """energy / MOSAIC-P's and gap to exact (same part, workload, deadline or subset)."""
    for r in rows:
        if "error" in r:
            continue
        same = {k: r.get(k) for k in ("part", "workload", "deadline", "subset")}
        r["energy_norm"] = ratio(r["energy_mj"], mean_of(pick(rows, **same, version="MOSAIC-P"), "energy_mj"))
        best = ratio(r["value"], mean_of(pick(rows, **same, version="exhaustive"), "value"))
        r["gap_to_exact"] = None if best is None else best - 1


def summarise(rows: list[dict], infos: list[dict], args: argparse.Namespace) -> dict[str, Any]:
    labels, versions = [i["workload"] for i in infos], [v[0] for v in main_versions(("", {}))]

    def cell(version, workload, field, part="main", **key):
        """The mean over seeds of ``field`` (None when the version failed)."""
        return mean_of(pick(rows, part=part, version=version, workload=workload, **key), field)

    def feasible(part, version, workload=None, **key):
        sel = [r for r in rows if r["part"] == part and r["version"] == version and all(
            r.get(k) == v for k, v in key.items()) and workload in (None, r["workload"])]
        return bool(sel) and all(r.get("feasible") for r in sel)

    def saving(version, ref, part="main", **key):
        """HERTI's mean energy saving over ``ref`` across workloads."""
        rel = avg(ratio(cell(version, w, "energy_mj", part, **key), cell(ref, w, "energy_mj", part, **key))
                  for w in labels)
        return None if rel is None else 1 - rel

    fields = ("latency_norm", "energy_norm", "gap_to_exact", "wall_s")
    s: dict[str, Any] = {"deadlines": {d: {v: {w: {**{f: cell(v, w, f, deadline=d) for f in fields},
                                                   "feasible": feasible("main", v, w, deadline=d)}
                                               for w in labels} for v in versions} for d in args.deadlines}}
    s["meet_every_deadline"] = {d: [v for v in versions if feasible("main", v, deadline=d)] for d in args.deadlines}
    s["saving_vs"] = {d: {ref: saving("HERTI", ref, deadline=d) for ref in ("MOSAIC-P", "AutoScale", "MOSAIC-E")}
                      for d in args.deadlines}
    if {"short", "long"} <= set(args.deadlines):
        s["gain_growth_short_to_long"] = s["saving_vs"]["long"]["MOSAIC-P"] - s["saving_vs"]["short"]["MOSAIC-P"]
    if "long" in args.deadlines:
        s["long_equals_mosaic_e"] = {w: math.isclose(cell("HERTI", w, "energy_mj", deadline="long") or 0,
                                                     cell("MOSAIC-E", w, "energy_mj", deadline="long") or 1,
                                                     rel_tol=1e-9) for w in labels}
    s["subsets"] = {}
    for sub in SUBSETS:
        s["subsets"][sub] = {"energy_vs_all": {v: avg(ratio(cell(v, w, "energy_mj", "subset", subset=sub),
                                                            cell(v, w, "energy_mj", "subset", subset="all"))
                                                      for w in labels) for v in ("HERTI", "exhaustive")},
                             "saving_vs": {ref: saving("HERTI", ref, "subset", subset=sub)
                                           for ref in ("MOSAIC-P", "AutoScale")},
                             "herti_gap_to_exact": mean_of(pick(rows, part="subset", version="HERTI", subset=sub),
                                                           "gap_to_exact"),
                             "herti_feasible": feasible("subset", "HERTI", subset=sub)}
    edp = {}
    for v in [e[0] for e in edp_versions(("", {}))]:
        vals = [ratio(cell(v, w, "edp", "edp"), cell("MOSAIC-EDP", w, "edp", "edp")) for w in labels]
        edp[v] = math.exp(statistics.fmean(math.log(x) for x in vals)) if vals and all(vals) else None
    s["edp_geomean_vs_mosaic_edp"] = edp
    s["edp_feasible"] = {v: feasible("edp", v) for v in edp}
    s["training"] = {}
    for w in labels:
        sel = [r for r in pick(rows, part="main", version="HERTI", workload=w) if "measured_ms" in r["stats"]]
        if sel:
            wall, measured = sum(r["wall_s"] for r in sel) / 60, sum(r["stats"]["measured_ms"] for r in sel) / 6e4
            s["training"][w] = {"runs": len(sel), "wall_min": wall, "measured_min": measured,
                                "ratio": measured / wall, "explored": sum(r["stats"].get("explored", 0) for r in sel)}
    return s


# ---- the paper's claims -------------------------------------------------------------------------

#: HERTI's Table IV: the device of each slice of its plans (medium deadline, energy), in order
TABLE_IV = {"IN": "NNL", "MN-1.0": "NLNL", "MN-1.3": "NBGBGB", "MO-1.3": "NGLN", "MO-1.4": "NGLN",
            "RN": "BNLNBNB", "VGG": "NGGB"}
#: a number reproduces within this share of the paper's value; a count or a yes/no must be equal
CLAIM_RTOL = 0.20
#: a claim that reproduces now and misses in a later run: its cause was not looked into
UNANALYSED = "not analysed: it reproduced when this table was written"


def implied_best_ms(label: str) -> tuple[float, float]:
    """(T_best, T_energy_opt) in ms that Table III's short and long deadlines imply through Eq. 12."""
    short, _, long = PAPER["deadlines_ms"][label]
    spread = (long - short) / 0.75
    return long - spread, long


def claims(ev: dict[str, Any], ablation: list[dict] | None = None) -> list[dict[str, Any]]:
    """Every checked claim of HERTI's evaluation (Sec. V, with Sec. I's EDP number and Tables III-IV):
    where it is, its own words, the paper's value, ours (from ``ev``, the figures' results, and the
    ablation), the verdict and, for a miss, its cause in one line."""
    s, runs = ev["summary"], [r for r in ev["runs"] if "error" not in r]
    labels = [i["workload"] for i in ev["workloads"]]
    n, per = len(labels), s["deadlines"]
    out: list[dict[str, Any]] = []

    def add(cid: str, where: str, words: str, paper: str, ours: str | None, ok: bool | None, cause: str = "") -> None:
        verdict = "not checked" if ok is None or ours is None else "reproduced" if ok else "missed"
        if ours is None:
            cause = "not in these results: run the parts and deadlines it reads"
        out.append({"id": cid, "where": where, "claim": words, "paper": paper, "ours": ours if ours is not None else "–",
                    "verdict": verdict, "cause": "" if verdict == "reproduced" else cause})

    def close(ours: float | None, paper: float) -> bool | None:
        return None if ours is None else abs(ours - paper) <= CLAIM_RTOL * abs(paper)

    def pct(x: float | None) -> str | None:
        return None if x is None else f"{x:.1%}"

    slot = ev.get("figures_slot")       # Figs. 8 and 10 planned with another planner in HERTI's slot

    def noted(text: str | None) -> str | None:
        return text if text is None or not slot else f"{text} ({slot} in HERTI's slot)"

    def met(version: str, d: str = "medium") -> list[str] | None:
        return [w for w in labels if per[d][version][w]["feasible"]] if d in per else None

    def count(ws: list[str] | None, of: int = n) -> str | None:
        return None if ws is None else f"{len(ws)}/{of}"

    def row(version: str, w: str, d: str = "medium", part: str = "main", **key: Any) -> dict | None:
        return next((r for r in runs if r["part"] == part and r["version"] == version and r["workload"] == w
                     and r.get("deadline", d) == d and all(r.get(k) == v for k, v in key.items())), None)

    # Eq. 12's deadlines: how far the medium one lies above the best-case latency, ours and the paper's
    info = {i["workload"]: i for i in ev["workloads"]}
    saving = {d: s["saving_vs"].get(d, {}).get("MOSAIC-P") for d in DEADLINES}
    front = (f"on the board model the first slack buys most of the saving: the short deadline already saves "
             f"{fmt(saving['short'], '.1%')} of MOSAIC-P's energy, the long one {fmt(saving['long'], '.1%')}")

    close_d = sum(abs(info[w]["deadlines_ms"][d] / PAPER["deadlines_ms"][w][k] - 1) <= CLAIM_RTOL
                  for w in labels for k, d in enumerate(DEADLINES) if info[w]["deadlines_ms"].get(d))
    have_d = sum(1 for w in labels for d in DEADLINES if info[w]["deadlines_ms"].get(d))
    add("table3-deadlines", "Sec. IV, Table III", "short/medium/long deadlines in milliseconds (Eq. 12 with "
        "zeta = 0.25, 0.5, 1.0)", f"{have_d} deadlines", f"{close_d}/{have_d} within {CLAIM_RTOL:.0%}",
        close_d == have_d, "Eq. 12 over the board model's MOSAIC-P/E latencies, fitted to MOSAIC's measurements, not "
        f"HERTI's: best-case {avg(info[w]['t_best_ms'] for w in labels):.0f} ms on average vs "
        f"{avg(implied_best_ms(w)[0] for w in labels):.0f} ms implied by Table III")

    herti_met = met("HERTI")
    all_met = sum(len(met("HERTI", d)) for d in per)
    add("fig5-herti", "Sec. V-B, Fig. 5", "HERTI robustly satisfies the deadline constraint across all the "
        "evaluated inference workloads", f"{n}/{n}", f"{count(herti_met)} (all deadlines run: {all_met}/{n * len(per)})",
        herti_met is not None and len(herti_met) == n, UNANALYSED)

    slack = [w for w in labels if per["medium"]["HERTI"][w]["latency_norm"] <= 0.99] if "medium" in per else None
    at_edge = [w for w in labels if w not in (slack or [])]
    add("fig5-slack", "Sec. V-B, Fig. 5", "HERTI chooses states that lead to the inference latency lower than the "
        "deadline (i.e., the normalized latency is lower than 1)", f"{n}/{n} below the deadline",
        None if slack is None else f"{len(slack)}/{n} at least 1% below", slack is not None and len(slack) == n,
        "the optimum itself lies at the deadline on " + ", ".join(
            f"{w} (exact at {per['medium']['exhaustive'][w]['latency_norm']:.3f})" for w in at_edge)
        + ": on the board model a slower, lower-frequency plan keeps saving energy up to the deadline")

    def why_missed(version: str, ws: list[str]) -> str:
        """Per workload the version misses: its latency and the medium deadline, both over MOSAIC-P's."""
        parts = []
        for w in ws:
            c, i = per["medium"][version][w], info[w]
            dl = i["deadlines_ms"]["medium"] / i["t_best_ms"]
            paper = PAPER["deadlines_ms"][w][1] / implied_best_ms(w)[0]
            parts.append(f"{w} {c['latency_norm'] * dl:.2f} vs {dl:.2f} (Table III's deadline {paper:.2f})")
        return (f"latency vs medium deadline, both in MOSAIC-P latencies: {'; '.join(parts)}: the board model's "
                "single-device plans are slower, or its deadlines tighter, than on HERTI's board")

    for version in ("TFL-NPU-P", "AutoScale", "MOSAIC-P"):
        ok = met(version)
        cause = UNANALYSED if version == "MOSAIC-P" else why_missed(version, [w for w in labels if w not in (ok or labels)])
        add(f"fig5-{version.lower()}", "Sec. V-B, Fig. 5", "only the TFL-NPU-P, MOSAIC-P, and AutoScale versions meet "
            f"the deadlines across the evaluated inference workloads ({version})", f"{n}/{n}", count(ok),
            ok is not None and len(ok) == n, cause)

    others = [f"TFL-{d}-P" for d in ("BIG", "LITTLE", "GPU")] + [f"TFL-{d}-O" for d in ("BIG", "LITTLE", "GPU", "NPU")]
    missing = [v for v in others if not met(v)] if "medium" in per else None
    same_npu = "medium" in per and all(per["medium"]["TFL-NPU-O"][w]["energy_norm"]
                                       == per["medium"]["TFL-NPU-P"][w]["energy_norm"] for w in labels)
    add("fig5-others", "Sec. V-B, Fig. 5", "The big core cluster-, little core cluster-, and GPU-preferred and "
        "TFL-NPU-O versions fail to meet the inference deadline", f"{len(others)}/{len(others)} versions miss",
        None if missing is None else f"{len(missing)}/{len(others)} miss on every workload",
        missing is not None and len(missing) == len(others),
        ("the board model's NPU has no DVFS, so the on-demand governor leaves TFL-NPU-O equal to TFL-NPU-P, which "
         "meets some deadlines" if same_npu else UNANALYSED) + " (" + ", ".join(
            f"{v} meets {len(met(v))}/{n}" for v in others if v not in (missing or [])) + ")")

    e_met = met("MOSAIC-E")
    add("fig6-mosaic-e-misses", "Sec. V-B, Figs. 5-6", "the MOSAIC-E version fails to meet the deadlines of all the "
        "inference workloads", f"misses {n}/{n}", None if e_met is None else f"misses {n - len(e_met)}/{n}",
        e_met is not None and not e_met, UNANALYSED)

    for ref, paper in PAPER["fig6_saving_vs"].items():
        ours = s["saving_vs"].get("medium", {}).get(ref)
        add(f"fig6-vs-{ref.lower()}", "Sec. V-B, Fig. 6", "HERTI consumes 28.0% and 28.4% lower energy than the "
            f"MOSAIC-P and AutoScale versions ({ref})", pct(paper), pct(ours), close(ours, paper), UNANALYSED)

    def lowest(w: str) -> bool:
        mine = per["medium"]["HERTI"][w]
        rivals = [c["energy_norm"] for v, by in per["medium"].items() if v not in ("HERTI", "exhaustive")
                  for ww, c in by.items() if ww == w and c["feasible"]]
        return mine["feasible"] and all(mine["energy_norm"] <= x * (1 + 1e-9) for x in rivals)
    best = [w for w in labels if lowest(w)] if "medium" in per else None
    add("fig6-best", "Sec. V-B, Fig. 6", "HERTI significantly outperforms other versions in terms of energy "
        "efficiency", f"lowest of the versions meeting the deadline on {n}/{n}", count(best),
        best is not None and len(best) == n, UNANALYSED)

    if "medium" in per:
        above = {w: per["medium"]["HERTI"][w]["energy_norm"] / per["medium"]["MOSAIC-E"][w]["energy_norm"] - 1
                 for w in labels}
        lower = [w for w, x in above.items() if x > 1e-9]
        ours_e = f"lower on {len(lower)}/{n}, HERTI {avg(above.values()):.1%} above it on average"
        ok_e = len(lower) == n and avg(above.values()) <= 0.10
    else:
        ours_e, ok_e = None, None
    add("fig6-mosaic-e-lower", "Sec. V-B, Fig. 6", "the MOSAIC-E version exhibits slightly lower energy consumption "
        "than the HERTI version when the inference deadline is set to the medium one", f"lower on {n}/{n}, slightly",
        ours_e, ok_e, UNANALYSED)

    firsts = {w: (row("HERTI", w) or {}).get("devices") for w in labels}
    if all(firsts.values()):
        ours_npu = [w for w in labels if firsts[w].split(",")[0] == "npu"]
        exact_npu = [w for w in labels if ((row("exhaustive", w) or {}).get("devices") or "").split(",")[0] == "npu"]
        paper_npu = [w for w in labels if TABLE_IV[w][0] == "N"]
        slices = avg((row("HERTI", w) or {}).get("slices") for w in labels)
        ours_first, ok_first = f"{len(ours_npu)}/{n}" + (f" ({', '.join(ours_npu)})" if ours_npu else ""), \
            ours_npu == paper_npu
        gpu_first = [w for w in labels if ((row("MOSAIC-P", w) or {}).get("devices") or "").startswith("gpu")]
        exact_slices = avg((row("exhaustive", w) or {}).get("slices") for w in labels)
        first_cause = (f"the board model's own optimum (exact) starts on the NPU on {len(exact_npu)}/{n} too, and "
                       f"even its fastest plan (MOSAIC-P) starts on the GPU on {', '.join(gpu_first) or 'none'}: "
                       "the first layers are faster and cheaper on its GPU than on its NPU")
        slices_cause = (f"the board model's optimum (exact) itself uses {fmt(exact_slices, '.1f')} slices on "
                        "average: on it, every further cut costs more in transfers than it saves")
    else:
        paper_npu, ours_first, ok_first, slices = [w for w in labels if TABLE_IV[w][0] == "N"], None, None, None
        first_cause = slices_cause = ""
    add("table4-first-npu", "Sec. V-B, Table IV", "Model slicing and execution plans (the first slice's device)",
        f"NPU on {len(paper_npu)}/{n}", ours_first, ok_first, first_cause)
    paper_slices = avg(len(TABLE_IV[w]) for w in labels)
    add("table4-slices", "Sec. V-B, Table IV", "Model slicing and execution plans (slices per plan)",
        f"{paper_slices:.1f} on average", None if slices is None else f"{slices:.1f} on average",
        close(slices, paper_slices), slices_cause)

    if {"short", "medium", "long"} <= set(per):
        norm = {d: {w: per[d]["HERTI"][w]["energy_norm"] for w in labels} for d in DEADLINES}
        grows = [w for w in labels if norm["short"][w] >= norm["medium"][w] * (1 - 1e-9) >= norm["long"][w] * (1 - 1e-9)
                 and norm["short"][w] > norm["long"][w] * (1 + 1e-9)]
        ours_g = f"{len(grows)}/{n}"
    else:
        grows, ours_g = None, None
    add("fig7-grows", "Sec. V-C, Fig. 7", "as the inference deadline increases, the energy efficiency gains of HERTI "
        "increase across all the inference workloads", f"{n}/{n}", ours_g, grows is not None and len(grows) == n,
        "no gain from short to long where the board model's MOSAIC-E is barely slower than MOSAIC-P, so Eq. 12's "
        "deadlines coincide: " + ", ".join(f"{w} {info[w]['t_energy_opt_ms'] / info[w]['t_best_ms'] - 1:.0%} (Table "
                                           f"III implies {implied_best_ms(w)[1] / implied_best_ms(w)[0] - 1:.0%})"
                                           for w in labels if w not in (grows or [])))
    growth = s.get("gain_growth_short_to_long")
    add("fig7-growth", "Sec. V-C, Fig. 7", "the average energy efficiency gain increases by 14.1% as the inference "
        "deadline increases from the short deadline to the long deadline",
        pct(PAPER["fig7_gain_growth_short_to_long"]), pct(growth), close(growth, PAPER["fig7_gain_growth_short_to_long"]),
        front)
    eq = s.get("long_equals_mosaic_e")
    add("fig7-long-mosaic-e", "Sec. V-C, Fig. 7", "with the long deadline, HERTI achieves the same energy efficiency "
        "as the MOSAIC-E version across all the inference workloads", f"{n}/{n}",
        None if eq is None else f"{sum(eq.values())}/{n}", eq is not None and all(eq.values()), UNANALYSED)

    sub = s.get("subsets", {})

    def subset_row(version: str, w: str, name: str) -> dict | None:
        return next((r for r in runs if r["part"] == "subset" and r["version"] == version and r["workload"] == w
                     and r.get("subset") == name), None)

    def fig8_cause(name: str, ref: str, ours: float | None, paper: float) -> str:
        """Why a subset's saving over ``ref`` misses, from the subset's own rows."""
        pairs = {w: (subset_row(ref, w, name), subset_row("HERTI", w, name)) for w in labels}
        pairs = {w: (a, b) for w, (a, b) in pairs.items() if a and b}
        if ours is not None and ours > paper:
            fast = {w: subset_row("MOSAIC-P", w, name) for w in pairs}
            room = avg(b["deadline_ms"] / fast[w]["latency_ms"] for w, (_, b) in pairs.items() if fast[w])
            return (f"Eq. 12's medium deadline on {name} lies {fmt(room, '.1f')}x MOSAIC-P's latency on average (the "
                    "subset's MOSAIC-E is far slower than its MOSAIC-P), so slow low-power plans meet it")
        flat = [w for w, (a, b) in pairs.items() if b["energy_mj"] >= a["energy_mj"] * 0.99]
        return (f"{ref} is already within 1% of the cheapest plan meeting the deadline on {', '.join(flat) or 'none'}: "
                f"on {name} the board model's NPU plan is both the fastest and nearly the most frugal there")

    vs_all = {k: (sub.get(k) or {}).get("energy_vs_all", {}).get("HERTI") for k in ("CPU", "CPU+GPU", "CPU+NPU")}
    more_cause = UNANALYSED
    if all(v is not None for v in vs_all.values()):
        ours_h = ", ".join(f"{k} {v:.3f}x" for k, v in vs_all.items())
        ok_h = vs_all["CPU"] >= max(vs_all["CPU+GPU"], vs_all["CPU+NPU"]) and min(vs_all["CPU+GPU"],
                                                                                 vs_all["CPU+NPU"]) >= 1 - 1e-9
        below = [(w, a, b) for w in labels if (a := subset_row("HERTI", w, "CPU+NPU")) and
                 (b := subset_row("HERTI", w, "all")) and a["energy_mj"] < b["energy_mj"] * (1 - 1e-9)]
        if below:
            w, a, b = max(below, key=lambda x: x[2]["energy_mj"] / x[1]["energy_mj"])
            more_cause = (f"each subset has its own Eq. 12 deadline (as in the paper); the GPU makes the full board's "
                          f"MOSAIC-P faster and so its deadline tighter, costing more than the GPU saves: on "
                          f"{len(below)}/{n} workloads CPU+NPU's plan spends less (e.g. {w}: deadline "
                          f"{a['deadline_ms']:.0f} vs {b['deadline_ms']:.0f} ms, energy "
                          f"{a['energy_mj'] / b['energy_mj']:.3f}x the full board's)")
    else:
        ours_h, ok_h = None, None
    add("fig8-more-devices", "Sec. V-C, Fig. 8", "HERTI continues to achieve higher energy efficiency with more "
        "heterogeneous computing devices", "CPU > CPU+GPU, CPU+NPU > all (energy)",
        noted(None if ours_h is None else f"energy / all devices': {ours_h}"), ok_h, more_cause)
    for name in ("CPU+GPU", "CPU+NPU"):
        for ref in ("MOSAIC-P", "AutoScale"):
            paper = PAPER["fig8_saving_vs"][name][ref]
            ours = (sub.get(name) or {}).get("saving_vs", {}).get(ref)
            add(f"fig8-{name.lower()}-vs-{ref.lower()}", "Sec. V-C, Fig. 8 (footnote 3)", "HERTI outperforms "
                "MOSAIC-P and AutoScale by 20.6% and 11.8% when only CPU and GPU are used and by 21.7% and 13.3% "
                f"when only CPU and NPU are used ({name}, {ref})", pct(paper), noted(pct(ours)), close(ours, paper),
                fig8_cause(name, ref, ours, paper) if ours is not None else "")

    worst_default = max((c["gap_to_exact"] for c in per.get("medium", {}).get("HERTI", {}).values()
                         if c["gap_to_exact"] is not None), default=None)
    add("fig9-generality", "Sec. V-D, Fig. 9", "the average energy consumption of the HERTI-C version is 2.9% lower "
        "than the default version of HERTI", "2.9% (HERTI-C below HERTI)",
        None if worst_default is None else f"at most {worst_default:.2%} possible (default dqn's worst gap to the "
        "optimum, medium)", None, "not run: HERTI-C needs a tuning per workload and deadline (hetcc tune); no tuning "
        "can beat the optimum, so it could save at most the default's gap")

    edp = s.get("edp_geomean_vs_mosaic_edp", {})
    add("fig10-optimal", "Sec. V-E, Fig. 10", "HERTI achieves the optimal EDP efficiency (i.e., same as the "
        "MOSAIC-EDP version)", "1.000", noted(None if edp.get("HERTI") is None else f"{edp['HERTI']:.3f}"),
        close(edp.get("HERTI"), 1.0) if edp.get("HERTI") is None else abs(edp["HERTI"] - 1) <= 0.01,
        "MOSAIC-EDP (deadline-oblivious) misses the medium deadline on " + (", ".join(
            f"{w} ({r['latency_norm']:.2f}x it)" for w in labels if (r := row("MOSAIC-EDP", w, part="edp"))
            and not r["feasible"]) or "none") + ", where no plan meeting the deadline reaches its EDP")
    edp_met = [w for w in labels if (row("HERTI", w, part="edp") or {}).get("feasible")]
    has_edp = any(r["part"] == "edp" for r in runs)
    add("fig10-deadlines", "Sec. V-E, Fig. 10", "HERTI robustly satisfies the deadline constraint across all the "
        "inference workloads when it is configured to perform EDP optimizations", f"{n}/{n}",
        noted(f"{len(edp_met)}/{n}" if has_edp else None), len(edp_met) == n, UNANALYSED)
    h_vs_a = ratio(edp.get("HERTI"), edp.get("AutoScale"))
    add("intro-edp-autoscale", "Sec. I (and Fig. 10)", "outperforms the deadline-conscious state-of-the-art "
        "technique (i.e., AutoScale [29]) in multiple metrics (i.e., energy (i.e., 28.4%) and energy-delay product "
        "(i.e., 29.2%))", "29.2%", noted(pct(None if h_vs_a is None else 1 - h_vs_a)),
        close(None if h_vs_a is None else 1 - h_vs_a, 0.292), "AutoScale's single-device plans are further from "
        "the EDP optimum on the board model, whose GPU and CPU plans are slow at EDP")

    tr = s.get("training", {})
    if tr:
        wall, measured = (statistics.fmean(t[k] for t in tr.values()) for k in ("wall_min", "measured_min"))
        x = measured / wall
        ours_t = f"{x:.0f}x ({wall:.2g} min vs {measured:,.3g} min per workload)"
        ranked = sorted(tr, key=lambda w: tr[w]["ratio"], reverse=True)
        top = [w for w in ("IN", "RN") if w in tr]
        ok_top = bool(top) and all(ranked.index(w) < len(ranked) / 2 for w in top)
    else:
        x, ours_t, ranked, top, ok_top = None, None, [], [], None
    add("fig11-ratio", "Sec. V-F, Fig. 11", "the estimation-based approach (i.e., 48 minutes) incurs 314 times "
        "shorter training time than the measurement-based approach (i.e., 15,088 minutes (251 hours))",
        f"{PAPER['fig11_minutes']['ratio']}x", ours_t, close(x, PAPER["fig11_minutes"]["ratio"]),
        "the ratio is the explored states' summed latency over the planner's wall time: the board model's "
        f"latencies are lower than HERTI's (best case {avg(info[w]['t_best_ms'] for w in labels):.0f} ms on average, "
        f"Table III implies {avg(implied_best_ms(w)[0] for w in labels):.0f} ms), and the wall time is this host's")
    add("fig11-in-rn", "Sec. V-F, Fig. 11", "the estimation-based approach leads to more significant reduction in "
        "training time with some inference workloads such as IN and RN", "IN, RN among the largest",
        ", ".join(f"{w} #{ranked.index(w) + 1}" for w in top) + f" of {len(ranked)}" if top else None,
        ok_top if top else None, UNANALYSED)

    add("exhaustive-misses", "Sec. V-B, Fig. 5", "Despite the extensive search conducted for each workload for 10 "
        "days, the exhaustive version still fails to meet the deadline", "misses",
        count(met("exhaustive")) and f"meets {count(met('exhaustive'))}", None,
        "not comparable: hetcc's exhaustive is exact, a proven constrained optimum in milliseconds, not a "
        "truncated empirical search")

    alone = ablation[0] if ablation else None
    if alone and alone["median_gap"] is not None:
        last = ablation[-1]
        ours_o = (f"Alg. 1 alone on the ablation's {alone['workloads']} workloads: median {alone['median_gap']:.2%}, worst "
                  f"{fmt(alone['worst_gap'], '.2%')}; dqn with its additions: worst {fmt(last['worst_gap'], '.2%')}")
        ok_o = alone["worst_gap"] is not None and alone["worst_gap"] <= 0.01
    else:
        ours_o, ok_o = None, None
    add("fig6-optimal", "Sec. V-B, Fig. 6", "HERTI robustly finds the optimal state that minimizes the energy "
        "consumption of each inference workload with a strong deadline guarantee", "optimal on every workload",
        ours_o, ok_o, f"Alg. 1's one epsilon-greedy walk found a better state than its start (MOSAIC-P) in "
        f"{alone['walk_improved'] if alone else 0}/{alone['runs'] if alone else 0} runs; hetcc's dqn reaches the "
        "optimum through its search additions (the MOSAIC-E start, the polish: see the ablation)")
    return out


def claim_counts(rows: list[dict]) -> dict[str, int]:
    """How many claims were checked, reproduced, missed and left unchecked."""
    got = [r["verdict"] for r in rows]
    return {"claims": len(rows), "checked": len(rows) - got.count("not checked"), "reproduced": got.count("reproduced"),
            "missed": got.count("missed"), "not_checked": got.count("not checked")}


def show_claims(console: Any, rows: list[dict]) -> None:
    if not rows:
        console.print("no claim table: the figures' results (the main part's JSON) are missing", highlight=False)
        return
    table(console, "HERTI's claims on the board model (verdict: within 20% for a number, equal for a count)",
          ["where", "claim", "paper", "ours", "verdict", "cause of a miss"],
          [[r["where"], r["claim"], r["paper"], r["ours"], r["verdict"], r["cause"]] for r in rows])
    c = claim_counts(rows)
    console.print(f"{c['reproduced']} of {c['checked']} checked claims reproduce ({c['not_checked']} not checked)",
                  highlight=False)


# ---- printing and plotting ---------------------------------------------------------------------

def fmt(x: Any, spec: str = ".3f", bad: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    text = format(x, spec) if isinstance(x, (int, float)) else str(x)
    return f"[red]{text}*[/]" if bad else text


def table(console: Any, title: str, headers: list[str], body: list[list[str]]) -> None:
    from rich.table import Table

    console.print(f"\n[bold]{title}[/]", highlight=False)
    t = Table()
    for i, h in enumerate(headers):
        t.add_column(h, justify="left" if i == 0 else "right")
    for row in body:
        t.add_row(*row)
    console.print(t)


def show(console: Any, infos: list[dict], s: dict, args: argparse.Namespace) -> None:
    labels = [i["workload"] for i in infos]
    table(console, "Table III: workloads and deadlines (Eq. 12), ms: ours vs paper",
          ["workload", "zoo model", "layers", "short", "medium", "long", "paper s/m/l", "note"],
          [[i["workload"], i["model"], str(i["layers"]), *(fmt(i["deadlines_ms"][d], ".1f") for d in DEADLINES),
            "/".join(map(str, PAPER["deadlines_ms"][i["workload"]])), i["note"]] for i in infos])
    for d in args.deadlines:
        per = s["deadlines"][d]
        for field, title in (("latency_norm", "Fig. 5: latency / deadline"), ("energy_norm", "Figs. 6-7: energy / "
                             "MOSAIC-P's"), ("gap_to_exact", "new: energy above the proven optimum (exact)")):
            body = [[v, *(fmt(c[field], ".2%" if field == "gap_to_exact" else ".3f", not c["feasible"])
                          for c in (per[v][w] for w in labels)),
                     fmt(mean_of([per[v][w] for w in labels], field), ".2%" if field == "gap_to_exact" else ".3f"),
                     fmt(mean_of([per[v][w] for w in labels], "wall_s"), ".3g")] for v in per]
            table(console, f"{title}, {d} deadline (*: misses it)", ["version", *labels, "mean", "wall s"], body)
    claims = [["Fig. 5 versions meeting every medium deadline", ", ".join(PAPER["fig5_meet_every_deadline"]),
               ", ".join(s["meet_every_deadline"].get("medium", []))]]
    for d in args.deadlines:
        for ref in ("MOSAIC-P", "AutoScale"):
            paper = fmt(PAPER["fig6_saving_vs"][ref], ".1%") if d == "medium" else ""
            claims.append([f"Fig. 6/7 HERTI energy below {ref}, {d}", paper, fmt(s["saving_vs"][d][ref], ".1%")])
    if "gain_growth_short_to_long" in s:
        claims.append(["Fig. 7 saving vs MOSAIC-P, long minus short (points)",
                       fmt(PAPER["fig7_gain_growth_short_to_long"], ".1%"), fmt(s["gain_growth_short_to_long"], ".1%")])
    if "long_equals_mosaic_e" in s:
        claims.append(["Fig. 7 HERTI = MOSAIC-E at long", "all", ", ".join(w for w, ok in s["long_equals_mosaic_e"]
                                                                          .items() if ok) or "none"])
    for sub in ("CPU+GPU", "CPU+NPU"):
        for ref in ("MOSAIC-P", "AutoScale"):
            claims.append([f"Fig. 8 HERTI energy below {ref}, {sub}", fmt(PAPER["fig8_saving_vs"][sub][ref], ".1%"),
                           fmt(s["subsets"][sub]["saving_vs"][ref], ".1%")])
    claims.append(["Fig. 10 HERTI EDP / MOSAIC-EDP (geomean)", "1.000",
                   fmt(s["edp_geomean_vs_mosaic_edp"]["HERTI"], ".3f", not s["edp_feasible"]["HERTI"])])
    tr = s["training"]
    if tr:
        w, m = (statistics.fmean(t[k] for t in tr.values()) for k in ("wall_min", "measured_min"))
        p = PAPER["fig11_minutes"]
        claims.append(["Fig. 11 training min: estimated / measured (ratio)",
                       f"{p['estimated']} / {p['measured']:,} ({p['ratio']}x)", f"{w:.3g} / {m:.3g} ({m / w:.0f}x)"])
    table(console, "paper vs hetcc (hikey970 board model)", ["claim", "paper", "ours"], claims)
    table(console, "Fig. 8: energy / all devices' (own medium deadline per subset); HERTI's gap to exact",
          ["subset", "HERTI", "exact", "HERTI above exact"],
          [[sub, fmt(v["energy_vs_all"]["HERTI"], ".3f", not v["herti_feasible"]),
            fmt(v["energy_vs_all"]["exhaustive"]), fmt(v["herti_gap_to_exact"], ".2%")]
           for sub, v in s["subsets"].items()])
    table(console, "Fig. 10: EDP / MOSAIC-EDP's (geometric mean), medium deadline (*: misses one)",
          ["version", "EDP"], [[v, fmt(x, ".3f", not s["edp_feasible"][v])]
                               for v, x in s["edp_geomean_vs_mosaic_edp"].items()])
    table(console, "Fig. 11: HERTI planning minutes vs measuring each evaluated state on the board",
          ["workload", "runs", "states", "wall min", "measured min", "ratio"],
          [[w, str(t["runs"]), str(t["explored"]), fmt(t["wall_min"], ".3g"), fmt(t["measured_min"], ".3g"),
            fmt(t["ratio"], ".0f")] for w, t in tr.items()])


def show_ablation(console: Any, summary: list[dict], args: argparse.Namespace, target: dict,
                  steps: dict[str, int]) -> None:
    labels = args.ablation_workloads
    budget = f"{steps['steps']} steps" if steps else "dqn's default steps"
    table(console, f"ablation: dqn's energy above the proven optimum (exact), {ABLATION_DEADLINE} deadline, "
          f"{budget} each (*: a missed deadline)",
          ["dqn", *labels, "median", "worst", "met", "walk beat its start", "polish moves", "wall s"],
          [[a["config"], *(fmt(a["gap_by_workload"][w], ".2%") for w in labels), fmt(a["median_gap"], ".2%"),
            fmt(a["worst_gap"], ".2%", a["worst_gap"] is None), f"{a['feasible']}/{a['runs']}",
            str(a["walk_improved"]), str(a["polish_moves"]), fmt(a["wall_s"], ".3g")] for a in summary])
    verdict = "met" if target["met"] else "missed"
    console.print(f"DQN alone (Alg. 1, every addition off) on {', '.join(target['workloads'])}: median "
                  f"{fmt(target['alg1_alone_median_gap'], '.2%')} above the optimum; target <= "
                  f"{target['median_gap_at_most']:.0%}: {verdict}", highlight=False)


def bars(path: Path, title: str, groups: list[str], series: dict[str, list], ylabel: str,
         hline: float | None = None, log: bool = False) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6, len(groups) * len(series) * 0.22 + 2), 3.6))
    width = 0.8 / max(1, len(series))
    for k, (name, vals) in enumerate(series.items()):
        ax.bar(np.arange(len(groups)) + (k - (len(series) - 1) / 2) * width, [np.nan if v is None else v for v in vals],
               width, label=name, color=plt.get_cmap("tab20")(k % 20))
    if hline is not None:
        ax.axhline(hline, color="k", lw=0.8, ls="--")
    ax.set_xticks(range(len(groups)), groups)
    ax.set(ylabel=ylabel, title=title, yscale="log" if log else "linear")
    ax.legend(fontsize=6, ncol=min(len(series), 7), loc="upper center", bbox_to_anchor=(0.5, -0.12))
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)


def plot(out: Path, infos: list[dict], s: dict, args: argparse.Namespace) -> list[str]:
    labels, d = [i["workload"] for i in infos], "medium" if "medium" in args.deadlines else args.deadlines[0]
    per, paths = s["deadlines"][d], []

    def save(name: str, *a: Any, **kw: Any) -> None:
        paths.append(str(out.with_name(f"{out.stem}-{name}.png")))
        bars(Path(paths[-1]), *a, **kw)

    save("fig5", f"latency / deadline ({d})", labels, {v: [c["latency_norm"] for c in per[v].values()]
                                                       for v in per}, "latency / deadline", hline=1)
    save("fig6", f"energy / MOSAIC-P ({d})", labels, {v: [c["energy_norm"] for c in per[v].values()] for v in per},
         "normalised energy", hline=1)
    save("fig7", "HERTI energy / MOSAIC-P by deadline", labels,
         {**{f"HERTI {x[0].upper()}": [c["energy_norm"] for c in s["deadlines"][x]["HERTI"].values()]
             for x in args.deadlines}, "MOSAIC-E": [c["energy_norm"] for c in per["MOSAIC-E"].values()]},
         "normalised energy")
    save("gap", "energy above the proven optimum, mean over workloads", [x[0].upper() for x in args.deadlines],
         {v: [100 * (mean_of(list(s["deadlines"][x][v].values()), "gap_to_exact") or math.nan)
              for x in args.deadlines] for v in per}, "% above exact")
    if "subsets" in args.parts:
        save("fig8", "energy / full board's", list(SUBSETS), {v: [s["subsets"][sub]["energy_vs_all"][v] for sub in SUBSETS]
                                                              for v in ("HERTI", "exhaustive")}, "normalised energy")
    edp = s["edp_geomean_vs_mosaic_edp"]
    if "edp" in args.parts:
        save("fig10", "EDP / MOSAIC-EDP (geomean)", ["EDP"], {v: [x] for v, x in edp.items()}, "normalised EDP", hline=1)
    tr = s["training"]
    save("fig11", "HERTI training: estimated vs measured", list(tr),
         {name: [t[f"{k}_min"] for t in tr.values()] for k, name in (("wall", "estimated (planner wall)"),
                                                                      ("measured", "measured (sum of latencies)"))},
         "minutes", log=True)
    return paths


# ---- main --------------------------------------------------------------------------------------

def run_evaluation(args: argparse.Namespace, herti: tuple[str, dict], out: Path, console: Any) -> dict[str, Any]:
    """The paper's figures (parts main, edp, subsets): one sweep, judged, printed, plotted, written to ``out``."""
    t0 = time.perf_counter()
    paths = workload_paths(args, args.workloads)
    doc, sweep_dir = sweep_spec(args, herti, paths), out.with_name(f"{out.stem}-sweep")
    table = run_sweep_grid(args, doc, sweep_dir)
    infos, rows = judged_rows(table, args, herti, paths)
    add_derived(rows)
    s = summarise(rows, infos, args)
    show(console, infos, s, args)
    for r in (r for r in rows if "error" in r):
        console.print(f"[red]{r['workload']} {r['part']} {r['version']}: {r['error']}[/]", highlight=False)
    plots = plot(out, infos, s, args)
    result = {"script": SCRIPT, "date": utc_now(), "machine": machine_info(), "target": args.target,
              "args": {"quick": args.quick, "workloads": args.workloads, "deadlines": args.deadlines,
                       "seeds": args.seed_list, "dqn_steps": args.dqn_steps, "dqn_planner": args.dqn_planner,
                       "herti_options": herti[1]},
              "sweep": {"dir": str(sweep_dir), "spec": doc, "cells": len(table)},
              "total_s": time.perf_counter() - t0, "paper": PAPER, "workloads": infos, "summary": s,
              "plots": plots, "runs": rows}
    write_json(result, out)
    print(f"wrote {out} and {len(plots)} plots ({time.perf_counter() - t0:.0f} s)")
    return result


def with_plans(evaluation: dict[str, Any]) -> dict[str, Any]:
    """``evaluation`` with each row's plan (slices, devices in order) when it predates them: the rows
    judged again from its own sweep table (the same cells), their plans copied over."""
    from hetcc.experiments.sweep import read_table

    table_path = Path(evaluation["sweep"]["dir"]) / "cells.csv"
    if all("devices" in r for r in evaluation["runs"]) or not table_path.is_file():
        return evaluation
    a = evaluation["args"]
    have = {r["part"] for r in evaluation["runs"]}
    ev_args = argparse.Namespace(workloads=a["workloads"], deadlines=a["deadlines"], seed_list=a["seeds"],
                                 parts=[p for p, q in (("main", "main"), ("edp", "edp"), ("subsets", "subset")) if q in have])
    paths = dict(zip(a["workloads"], map(Path, evaluation["sweep"]["spec"]["models"])))
    _, again = judged_rows(read_table(table_path), ev_args, (a["dqn_planner"], a["herti_options"]), paths)
    key = lambda r: tuple(r.get(k) for k in ("part", "workload", "deadline", "subset", "version", "seed"))  # noqa: E731
    plans = {key(r): {"slices": r.get("slices"), "devices": r.get("devices")} for r in again}
    return {**evaluation, "runs": [{**plans.get(key(r), {}), **r} for r in evaluation["runs"]]}


def run_ablation(args: argparse.Namespace, out: Path, console: Any, evaluation: dict | None) -> dict[str, Any]:
    """The ablation (its own sweep) and the claim table (from ``evaluation``, the figures' results),
    printed and written to ``<out>-ablation.json``."""
    t0 = time.perf_counter()
    steps = steps_options("dqn", args.dqn_steps)
    entries, paths = ablation_entries(steps), workload_paths(args, args.ablation_workloads)
    target_paths = workload_paths(args, args.workloads)     # the DQN-alone target: Alg. 1 on every workload
    doc, sweep_dir = ablation_spec(args, entries, paths, target_paths), out.with_name(f"{out.stem}-ablation-sweep")
    table = run_sweep_grid(args, doc, sweep_dir)
    rows = ablation_rows(table, entries, paths)
    summary = ablation_summary(rows, args.ablation_workloads)
    target_rows = ablation_rows(table, entries[:1], target_paths)
    alone = ablation_summary(target_rows, args.workloads)[0]
    target = {"median_gap_at_most": DQN_ALONE_TARGET, "workloads": args.workloads,
              "gap_by_workload": alone["gap_by_workload"], "alg1_alone_median_gap": alone["median_gap"],
              "alg1_alone_worst_gap": alone["worst_gap"],
              "met": alone["median_gap"] is not None and alone["median_gap"] <= DQN_ALONE_TARGET}
    missing: list[str] = []
    if evaluation:
        evaluation = with_plans(evaluation)
    if evaluation:          # Figs. 8 and 10 when the figures' results lack them: their cells, medium deadline
        have = {r.get("part") for r in evaluation["runs"]}
        missing = [p for p, row_part in (("edp", "edp"), ("subsets", "subset")) if row_part not in have]
    if missing:
        herti = (FIGURES_SLOT, {})
        fig_args = argparse.Namespace(**{**vars(args), "parts": missing, "workloads": evaluation["args"]["workloads"],
                                         "deadlines": [ABLATION_DEADLINE]})
        fig_paths = workload_paths(args, fig_args.workloads)      # the figures' workloads, not the ablation's
        fig_doc, fig_dir = sweep_spec(fig_args, herti, fig_paths), out.with_name(f"{out.stem}-ablation-figs-sweep")
        infos, fig_rows = judged_rows(run_sweep_grid(args, fig_doc, fig_dir), fig_args, herti, fig_paths)
        if "subsets" in missing:    # Fig. 8's "all devices" are the figures' own medium-deadline cells
            fig_rows = [r for r in fig_rows if not (r["part"] == "subset" and r.get("subset") == "all")]
            fig_rows += [{k: v for k, v in r.items() if k not in ("deadline", "energy_norm", "gap_to_exact")}
                         | {"part": "subset", "subset": "all"} for r in evaluation["runs"]
                         if r["part"] == "main" and r.get("deadline") == ABLATION_DEADLINE and "error" not in r
                         and r["workload"] in fig_paths and r["version"] in ("MOSAIC-P", "AutoScale", "exhaustive",
                                                                             "HERTI")]
        add_derived(fig_rows)
        fig_s = summarise(fig_rows, infos, fig_args)
        keys = (["subsets"] if "subsets" in missing else []) + (
            ["edp_geomean_vs_mosaic_edp", "edp_feasible"] if "edp" in missing else [])
        evaluation = {**evaluation, "summary": {**evaluation["summary"], **{k: fig_s[k] for k in keys}},
                      "runs": evaluation["runs"] + fig_rows, "figures_slot": FIGURES_SLOT}
    claim_rows = claims(evaluation, summary) if evaluation else []
    show_ablation(console, summary, args, target, steps)
    show_claims(console, claim_rows)
    for r in (r for r in rows if "error" in r):
        console.print(f"[red]{r['workload']} {r['config']}: {r['error']}[/]", highlight=False)
    ab_out = out.with_name(f"{out.stem}-ablation.json")
    result = {"script": SCRIPT, "part": "ablation", "command": shlex.join(["python", "benchmarks/herti.py", *args.argv]),
              "date": utc_now(), "machine": machine_info(), "target": args.target,
              "args": {"quick": args.quick, "workloads": args.ablation_workloads, "deadline": ABLATION_DEADLINE,
                       "seeds": args.seed_list, "dqn_steps": args.dqn_steps, "steps_options": steps,
                       "steps_per_row": steps.get("steps") or next(f[2] for f in option_fields(get_spec("dqn"))
                                                                   if f[0] == "steps"),
                       "left_out": [w for w in WORKLOADS if w not in args.ablation_workloads]},
              "note": args.note,
              "sweep": {"dir": str(sweep_dir), "spec": doc, "cells": len(table)},
              "total_s": time.perf_counter() - t0, "ablation": summary, "dqn_alone_target": target,
              "claims_from": str(out) if evaluation else None,
              "figures_here": {"parts": missing, "deadline": ABLATION_DEADLINE, "herti_slot": FIGURES_SLOT,
                               "sweep_dir": str(out.with_name(f"{out.stem}-ablation-figs-sweep"))} if missing else None,
              "claims": claim_rows,
              "claim_counts": claim_counts(claim_rows), "runs": rows, "target_runs": target_rows}
    write_json(result, ab_out)
    print(f"wrote {ab_out} ({time.perf_counter() - t0:.0f} s)")
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="MN-1.0 and MO-1.3, medium deadline, dqn 200 steps; "
                    "the ablation on MN-1.0 only")
    ap.add_argument("--workloads", default=None, help=f"comma list of {', '.join(WORKLOADS)} (default all)")
    ap.add_argument("--ablation-workloads", default=None,
                    help="comma list of the ablation's workloads (default: --workloads; --quick: MN-1.0)")
    ap.add_argument("--note", default=None, help="a line the ablation's JSON and page carry (e.g. why workloads "
                    "were left out of it)")
    ap.add_argument("--deadlines", default=None, help="comma list of short, medium, long (default all)")
    ap.add_argument("--parts", default="main,edp,subsets,ablation",
                    help="comma list of main (Figs. 5-7, 11), edp (Fig. 10), subsets (Fig. 8), ablation (dqn's "
                    "additions one at a time, and the claim table; written to <out>-ablation.json)")
    ap.add_argument("--seeds", type=int, default=1, help="HERTI runs per case (seeds 0..N-1; mean reported)")
    ap.add_argument("--dqn-steps", type=int, default=None, help="HERTI's training steps (default: the planner's)")
    ap.add_argument("--dqn-planner", default="dqn", help="the planner in HERTI's slot (e.g. random)")
    ap.add_argument("--models-dir", type=Path, default=MODELS_DIR, help="exported-model cache")
    ap.add_argument("--workers", type=int, default=None,
                    help="Ray workers of the sweep (default: every CPU; quick: 0, in this process)")
    ap.add_argument("--fresh", action="store_true", help="plan every cell again (default: resume <out>-sweep/)")
    ap.add_argument("--out", type=Path, default=None, help="JSON path (default benchmarks/results/herti[-quick].json)")
    ap.add_argument("--target", default=TARGET, help="board name or an absolute TOML path (default hikey970, the board fitted to "
                    "MOSAIC's measurements)")
    args = ap.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    args.workloads = [w.strip() for w in args.workloads.split(",")] if args.workloads else list(
        QUICK_WORKLOADS if args.quick else WORKLOADS)
    args.ablation_workloads = ([w.strip() for w in args.ablation_workloads.split(",")] if args.ablation_workloads
                               else [QUICK_WORKLOADS[0]] if args.quick else list(args.workloads))
    args.deadlines = [d.strip() for d in args.deadlines.split(",")] if args.deadlines else (
        ["medium"] if args.quick else list(DEADLINES))
    if args.quick and args.dqn_steps is None:
        args.dqn_steps = 200
    if args.quick and args.workers is None:
        args.workers = 0
    args.parts = [x.strip() for x in args.parts.split(",")]
    bad = [w for w in args.workloads + args.ablation_workloads if w not in WORKLOADS]
    bad += [d for d in args.deadlines if d not in DEADLINES]
    bad += [x for x in args.parts if x not in ("main", "edp", "subsets", "ablation")]
    if bad:
        raise SystemExit(f"unknown workload(s)/deadline(s)/part(s) {', '.join(dict.fromkeys(bad))}")
    args.seed_list = list(range(args.seeds))
    herti = (args.dqn_planner, steps_options(args.dqn_planner, args.dqn_steps))
    console = make_console()
    out = args.out or RESULTS_DIR / f"{SCRIPT}{'-quick' if args.quick else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    evaluation = None
    if set(args.parts) & {"main", "edp", "subsets"}:
        evaluation = run_evaluation(args, herti, out, console)
    elif out.exists():               # the ablation alone: the claims come from the figures' last results
        evaluation = json.loads(out.read_text())
    if "ablation" in args.parts:
        run_ablation(args, out, console, evaluation)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
