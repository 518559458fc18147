"""HERTI's evaluation (Sec. IV-V) on hetcc's ``hikey970`` board model, beside the paper's figures.

HERTI's 13 versions, all through the planner registry: TFL-{BIG,LITTLE,GPU,NPU}-P (``single:<dev>``),
TFL-*-O (the same with the on-demand governor), MOSAIC-P / MOSAIC-E (``dp`` on latency / energy,
deadline-oblivious), AutoScale (``autoscale-static``), exhaustive (``exact``: the proven optimum)
and HERTI (``dqn``; ``--dqn-planner`` puts another planner there). Per workload x deadline
(Eq. 12: short / medium / long): latency / deadline (Fig. 5), energy / MOSAIC-P's (Figs. 6, 7),
each version's gap to the optimum (what the paper could not show: its "exhaustive" search was
cut off after 10 days), the planners' wall seconds; EDP under the medium deadline (Fig. 10);
the board restricted to device subsets (Fig. 8); and HERTI's wall time against the time
measuring every state it evaluated on the board would take (Fig. 11). Plots: <out>-fig*.png.

Why one script of ~490 lines: every figure is a view of one grid of runs (one sweep), and the
paper's numbers, the judging and the printing are kept beside the runs they read.

The grid runs as one ``hetcc sweep`` (``sweep_spec`` builds it: a [[grid]] per kind of cell) on
embedded Ray with ``--workers`` processes; its table is ``<out>-sweep/cells.csv`` and a rerun
resumes it (``--fresh`` plans everything again). This script only judges the rows: a
deadline-oblivious version (MOSAIC-P/E, MOSAIC-EDP) is planned once and judged under each deadline.

    python benchmarks/herti.py                    # 7 workloads x 3 deadlines
    python benchmarks/herti.py --quick            # MN-1.0 and MO-1.3, medium deadline, dqn 200 steps
    python benchmarks/herti.py --dqn-planner random --workloads RN,VGG --deadlines medium,long
"""
from __future__ import annotations

import argparse
import json
import math
import os
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
                       "seed": int(r["seed"]) if name == "HERTI" else None, "deadline_ms": ms}
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


def run_sweep_grid(args: argparse.Namespace, herti: tuple[str, dict], out: Path) -> tuple[list[dict], dict, dict, Path]:
    """Export the workloads once, run the spec through ``hetcc sweep`` (embedded Ray, ``--workers``),
    return its rows, the spec and the sweep's directory (a rerun resumes it unless ``--fresh``)."""
    import shutil

    from hetcc.experiments.sweep import parse_spec, run_sweep

    paths = {w: model_path(WORKLOADS[w][0], args.models_dir).resolve() for w in args.workloads}
    doc = sweep_spec(args, herti, paths)
    root = out.with_name(f"{out.stem}-sweep")
    if args.fresh and root.exists():
        shutil.rmtree(root)
    spec = parse_spec(doc, root / "spec.json")
    result = run_sweep(spec, root, workers=args.workers, progress=sys.stderr.isatty())
    print(f"sweep: {result.cells} cells ({result.ran} planned now, {result.skipped_done} from {root}/cells.csv), "
          f"{result.seconds:.0f} s", file=sys.stderr)
    (root / "spec.json").write_text(json.dumps(doc, indent=1) + "\n")
    return result.rows, doc, paths, root


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

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="MN-1.0 and MO-1.3, medium deadline, dqn 200 steps")
    ap.add_argument("--workloads", default=None, help=f"comma list of {', '.join(WORKLOADS)} (default all)")
    ap.add_argument("--deadlines", default=None, help="comma list of short, medium, long (default all)")
    ap.add_argument("--parts", default="main,edp,subsets",
                    help="comma list of main (Figs. 5-7, 11), edp (Fig. 10), subsets (Fig. 8)")
    ap.add_argument("--seeds", type=int, default=1, help="HERTI runs per case (seeds 0..N-1; mean reported)")
    ap.add_argument("--dqn-steps", type=int, default=None, help="HERTI's training steps (default: the planner's)")
    ap.add_argument("--dqn-planner", default="dqn", help="the planner in HERTI's slot (e.g. random)")
    ap.add_argument("--models-dir", type=Path, default=MODELS_DIR, help="exported-model cache")
    ap.add_argument("--workers", type=int, default=None, help="Ray workers of the sweep (default: every CPU)")
    ap.add_argument("--fresh", action="store_true", help="plan every cell again (default: resume <out>-sweep/)")
    ap.add_argument("--out", type=Path, default=None, help="JSON path (default benchmarks/results/herti[-quick].json)")
    ap.add_argument("--target", default=TARGET, help="board name or an absolute TOML path (default hikey970, the board fitted to "
                    "MOSAIC's measurements)")
    args = ap.parse_args(argv)
    args.workloads = [w.strip() for w in args.workloads.split(",")] if args.workloads else list(
        QUICK_WORKLOADS if args.quick else WORKLOADS)
    args.deadlines = [d.strip() for d in args.deadlines.split(",")] if args.deadlines else (
        ["medium"] if args.quick else list(DEADLINES))
    if args.quick and args.dqn_steps is None:
        args.dqn_steps = 200
    args.parts = [x.strip() for x in args.parts.split(",")]
    bad = [w for w in args.workloads if w not in WORKLOADS] + [d for d in args.deadlines if d not in DEADLINES]
    bad += [x for x in args.parts if x not in ("main", "edp", "subsets")]
    if bad:
        raise SystemExit(f"unknown workload(s)/deadline(s) {', '.join(bad)}")
    args.seed_list = list(range(args.seeds))
    herti = (args.dqn_planner, steps_options(args.dqn_planner, args.dqn_steps))
    console, date, t0 = make_console(), utc_now(), time.perf_counter()
    out = args.out or RESULTS_DIR / f"{SCRIPT}{'-quick' if args.quick else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    table, doc, paths, sweep_dir = run_sweep_grid(args, herti, out)
    infos, rows = judged_rows(table, args, herti, paths)
    add_derived(rows)
    s = summarise(rows, infos, args)
    show(console, infos, s, args)
    for r in (r for r in rows if "error" in r):
        console.print(f"[red]{r['workload']} {r['part']} {r['version']}: {r['error']}[/]", highlight=False)
    plots = plot(out, infos, s, args)
    write_json({"script": SCRIPT, "date": date, "machine": machine_info(), "target": args.target,
                "args": {"quick": args.quick, "workloads": args.workloads, "deadlines": args.deadlines,
                         "seeds": args.seed_list, "dqn_steps": args.dqn_steps, "dqn_planner": args.dqn_planner,
                         "herti_options": herti[1]},
                "sweep": {"dir": str(sweep_dir), "spec": doc, "cells": len(table)},
                "total_s": time.perf_counter() - t0, "paper": PAPER, "workloads": infos, "summary": s,
                "plots": plots, "runs": rows}, out)
    print(f"wrote {out} and {len(plots)} plots ({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
