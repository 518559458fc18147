"""Does `hetcc compile` of MOSAIC's models give the plans the fidelity tables report? Each model is compiled through the command line by its zoo name, as a user types it, and compared with the planning of benchmarks/fidelity.py.

The fidelity benchmark charges the NPU the model sizes TensorFlow Lite reports (the memory rows of
targets/observations/hikey970-mosaic.csv, ``PlanningProblem.with_reported_memory``); the built-in
hikey970 applies the same rows to MOSAIC's zoo models by default, so ``hetcc compile mnasnet1_0
--target hikey970`` plans what the fidelity table shows. For each model and objective (latency:
``dp`` at f_max; energy: ``dp``) this script runs ``hetcc compile NAME --target hikey970 --json``
with the board's rows (the default) and with ``--observations none`` (the board's own estimate,
what the command line planned before), and asks fidelity.py's ``Board`` for its plan of the same
model; a row agrees when the slices (layers, device, MHz) are the same. The headline gains of
Sec. VI (1 - geomean of MOSAIC's plan over TF-<device>-P|O, the ``single:<device>`` baselines,
``governor=ondemand`` for energy) are recomputed from the command line's plans, with and without
the rows, beside fidelity.py's.

    python benchmarks/compile_vs_fidelity.py            # MOSAIC's 10 models (needs timm for IN and RN)
    python benchmarks/compile_vs_fidelity.py --quick    # MN-1.0 alone, the large set's gains (the tests run this)
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if (HERE := str(Path(__file__).resolve().parent)) not in sys.path:  # _common.py lives beside this script
    sys.path.insert(0, HERE)
from _common import MODELS_DIR, RESULTS_DIR, machine_info, make_console, utc_now, write_json  # noqa: E402
import fidelity  # noqa: E402  (MOSAIC's models, the paper's gains and the fidelity planning, reused)

SCRIPT = Path(__file__).stem
TARGET = "hikey970"
QUICK = {"large": ("MN-1.0",), "small": ()}
DEVICES = fidelity.DEVICES
#: the command line's settings compared: the board's memory rows (the default) and none
SETTINGS = {"rows": [], "none": ["--observations", "none"]}


def hetcc(args: list[str]) -> dict[str, Any]:
    """``hetcc ARGS --json -q``, the command line's own ``main`` in this process (the parsing, the
    checks and the output a user gets, without a Python start per command): its JSON summary
    (SystemExit with the error)."""
    from hetcc.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([*args, "--json", "-q"])
    if rc != 0:
        raise SystemExit(f"hetcc {' '.join(args)}: exit {rc}: {(err.getvalue() or out.getvalue()).strip()[-500:]}")
    return json.loads(out.getvalue())


def slices_text(slices: list[dict[str, Any]]) -> str:
    """``gpu@767[L0-L10] npu@960[L11-L49]``, as hetcc compile prints a plan."""
    return " ".join(f"{s['device']}" + (f"@{s['frequency_mhz']:g}" if s.get("frequency_mhz") else "")
                    + f"[L{s['first_layer']}-L{s['last_layer']}]" for s in slices)


def board_slices(board: Any, label: str, plan: Any) -> list[dict[str, Any]]:
    st = board.analyses[label].problem.states
    return [{"device": st.device[s.state], "frequency_mhz": float(st.freq_mhz[s.state]) or None,
             "first_layer": s.first, "last_layer": s.last} for s in plan.slices]


def compile_model(name: str, setting: str) -> dict[str, Any]:
    """The command line's plans of zoo model ``name``: MOSAIC's (dp) for latency and energy and the
    single-device baselines (TF-<dev>-P: latency; TF-<dev>-O: energy, governor=ondemand)."""
    extra = SETTINGS[setting]
    lat = hetcc(["compile", name, "--target", TARGET, "--objective", "latency",
                 "--variants", ",".join(["dp", *(f"single:{d}" for d in DEVICES)]), *extra])
    with tempfile.TemporaryDirectory() as tmp:
        energy = hetcc(["compile", name, "--target", TARGET, "--objective", "energy", "--planner", "dp",
                        "-o", str(Path(tmp) / "a"), *extra])
        sha = json.loads((Path(tmp) / "a" / "manifest.json").read_text())["model"]["sha256"]
    out = {"sha256": sha, "reported_memory": energy.get("reported_memory"),
           "latency": {"dp": lat["variants"]["dp"], **{d: lat["variants"][f"single:{d}"] for d in DEVICES}},
           "energy": {"dp": energy}}
    for d in DEVICES:
        out["energy"][d] = hetcc(["compile", name, "--target", TARGET, "--objective", "energy", "--planner",
                                  f"single:{d}", "--planner-option", "governor=ondemand", *extra])
    return out


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def gain(plans: dict[str, dict], labels: tuple[str, ...], metric: str, dev: str) -> float | None:
    unit = "latency_ms" if metric == "latency" else "energy_mj"
    have = [w for w in labels if w in plans]
    if not have:
        return None
    return 1 - geomean([plans[w][metric]["dp"][unit] / plans[w][metric][dev][unit] for w in have])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="MN-1.0 only (the large set's gains; no small set)")
    ap.add_argument("--models-dir", type=Path, default=MODELS_DIR, help="fidelity.py's exported-model cache")
    ap.add_argument("-o", "--out", type=Path, default=None,
                    help="JSON path (default benchmarks/results/compile_vs_fidelity[-quick].json)")
    args = ap.parse_args(argv)
    from hetcc.runtime.manifest import sha256_file

    large, small = (QUICK["large"], QUICK["small"]) if args.quick else (fidelity.LARGE, fidelity.SMALL)
    labels = [*large, *small]
    console, date, t0 = make_console(), utc_now(), time.perf_counter()
    out = args.out or RESULTS_DIR / f"{SCRIPT}{'-quick' if args.quick else ''}.json"

    board = fidelity.Board(TARGET, args.models_dir, labels, console, "dp", fidelity.MOSAIC_CSV)
    cli: dict[str, dict[str, dict]] = {s: {} for s in SETTINGS}
    rows: list[dict[str, Any]] = []
    for w in labels:
        name = fidelity.MODELS[w][0]
        for setting in SETTINGS:
            console.print(f"[dim]{w} ({name}): hetcc compile, {setting}…[/]", highlight=False)
            cli[setting][w] = compile_model(name, setting)
        if w not in board.analyses:
            rows.append({"model": w, "zoo": name, "error": board.errors.get(w, "not analysed")})
            continue
        same_bytes = sha256_file(fidelity.model_path(name, args.models_dir)) == cli["rows"][w]["sha256"]
        for metric in ("latency", "energy"):
            fid = board_slices(board, w, board.plan(w, board.mosaic[metric], metric))
            mine, before = cli["rows"][w][metric]["dp"], cli["none"][w][metric]["dp"]
            unit = "latency_ms" if metric == "latency" else "energy_mj"
            rows.append({"model": w, "zoo": name, "objective": metric, "same": mine["slices"] == fid,
                         "compile": slices_text(mine["slices"]), "fidelity": slices_text(fid),
                         "compile_none": slices_text(before["slices"]),
                         "changed_by_rows": mine["slices"] != before["slices"],
                         "value": mine[unit], "value_none": before[unit], "unit": unit.split("_")[1],
                         "reported_mb": (cli["rows"][w]["reported_memory"] or [{}])[0].get("reported_bytes", 0) / 1e6
                         or None, "same_model_bytes": same_bytes})
    fid_gains = {(r["set"], r["metric"], r["baseline"].split()[0].split(":")[1]): r["ours"]
                 for r in fidelity.gains(board, {"large": large, "small": small}) if r.get("ours") is not None}
    gains: list[dict[str, Any]] = []
    for set_name, set_labels in (("large", large), ("small", small)):
        if not set_labels:               # --quick has no small model
            continue
        for metric in ("latency", "energy"):
            for dev in DEVICES:
                tag = f"TF-{dev.upper()}-{'P' if metric == 'latency' else 'O'}"
                g, g0 = gain(cli["rows"], set_labels, metric, dev), gain(cli["none"], set_labels, metric, dev)
                f = fid_gains.get((set_name, metric, dev))
                gains.append({"set": set_name, "objective": metric, "baseline": tag,
                              "paper": fidelity.PAPER["gains"][f"{set_name} {metric}"][dev],
                              "fidelity": f, "compile": g, "compile_none": g0,
                              "same": f is not None and g is not None and abs(f - g) <= 1e-9})
    agree = sum(bool(r.get("same")) for r in rows)
    g_agree = sum(g["same"] for g in gains)
    console.print(f"plans: {agree} of {len(rows)} compile = fidelity; gains: {g_agree} of {len(gains)} equal")
    for r in rows:
        if "error" in r:
            console.print(f"  {r['model']}: {r['error']}", markup=False)
            continue
        flag = "same" if r["same"] else "DIFFERENT"
        console.print(f"  {r['model']:7} {r['objective']:7} {flag:9} compile: {r['compile']}"
                      + ("" if r["changed_by_rows"] else "  (as without rows)")
                      + ("" if r["same"] else f"\n{'':27}fidelity: {r['fidelity']}"), markup=False)
        if r["changed_by_rows"]:
            console.print(f"{'':27}before (--observations none): {r['compile_none']}", markup=False)
    for g in gains:
        pc = (lambda x: "-" if x is None else f"{100 * x:.1f}%")
        console.print(f"  {g['set']:5} {g['objective']:7} below {g['baseline']:10} paper {pc(g['paper']):>6}  "
                      f"fidelity {pc(g['fidelity']):>6}  compile {pc(g['compile']):>6}  "
                      f"without rows {pc(g['compile_none']):>6}", markup=False)
    write_json({"script": SCRIPT, "date": date, "machine": machine_info(), "target": TARGET,
                "args": {"quick": args.quick}, "total_s": time.perf_counter() - t0,
                "plans_same": agree, "plans": len(rows), "gains_same": g_agree, "gains_compared": len(gains),
                "rows": rows, "gains": gains}, out)
    print(f"wrote {out} ({time.perf_counter() - t0:.1f} s)")
    return 0 if agree == len(rows) and g_agree == len(gains) else 1


if __name__ == "__main__":
    raise SystemExit(main())
