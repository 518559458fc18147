"""Zoo verification: every compiled model reproduces the unsliced model.

For every core zoo model (``--all`` adds the others: shufflenet, densenet, ViT, ConvNeXt, ...)
it compiles on ``hikey970`` with objective latency and energy and on ``host`` with latency,
then checks that

* the hetcc runtime (``hetcc.runtime.verify``) matches the unsliced model run by onnxruntime, and
* the slices run as a plain onnxruntime chain in manifest order (no hetcc code) match it too,

both within a relative difference of 1e-4 (max |diff| / max |reference|). Slices planned for
devices this machine lacks (hikey970's GPU/NPU) run on the CPU provider. Exits 1 if any fails.

    python benchmarks/verify_zoo.py              # core set
    python benchmarks/verify_zoo.py --all        # every zoo entry
    python benchmarks/verify_zoo.py --quick      # squeezenet1_1 (tests run this)
"""
from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

if (HERE := str(Path(__file__).resolve().parent)) not in sys.path:  # _common.py lives beside this script
    sys.path.insert(0, HERE)
from _common import (add_io_args, default_variant, error_text, machine_info, make_console, model_path, out_path,  # noqa: E402
                     rel_diff, select_models, utc_now, write_json)

SCRIPT = Path(__file__).stem
RTOL = 1e-4
CONFIGS = (("hikey970", "latency"), ("hikey970", "energy"), ("host", "latency"))
QUICK_MODELS = ("squeezenet1_1",)
CPU = ["CPUExecutionProvider"]


# ---- the checks ----

def plain_chain(artifact: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run the slices in manifest order with plain onnxruntime (default options, CPU provider)."""
    import onnxruntime as ort

    manifest, variant = default_variant(artifact)
    env = dict(feeds)
    for s in variant["slices"]:
        sess = ort.InferenceSession(str(artifact / s["file"]), providers=CPU)
        outs = [o["name"] for o in s["outputs"]]
        env.update(zip(outs, sess.run(outs, {i["name"]: env[i["name"]] for i in s["inputs"]})))
        del sess
    return {o["name"]: env[o["name"]] for o in manifest["model"]["outputs"]}


def check(name: str, path: Path, target: str, objective: str, args: argparse.Namespace) -> dict[str, Any]:
    import onnxruntime as ort

    import hetcc
    from hetcc.runtime import Executor, random_inputs, verify

    row: dict[str, Any] = {"model": name, "target": target, "objective": objective}
    with tempfile.TemporaryDirectory(prefix=f"hetcc-verify-{name}-") as tmp:
        out = Path(tmp) / "build"
        t0 = time.perf_counter()
        r = hetcc.compile(path, target=target, objective=objective, output_dir=out,
                          profile_repeats=args.profile_repeats)
        row["compile_s"] = time.perf_counter() - t0
        row["planner"] = r.plan.planner
        row["slices"] = len(r.plan.slices)
        row["layers"] = len(r.program.get("layers"))
        row["devices"] = [s["device"] for s in default_variant(out)[1]["slices"]]
        row["predicted_latency_ms"] = r.plan.latency_ms
        row["predicted_energy_mj"] = r.plan.energy_mj

        ex = Executor(out)
        feeds = random_inputs(ex.inputs, seed=0)
        t0 = time.perf_counter()
        report = verify(ex, feeds, rtol=RTOL)
        row["verify_s"] = time.perf_counter() - t0
        row["runtime_rel_diff"] = {o.name: o.rel_diff for o in report.outputs}
        row["runtime_ok"] = bool(report.ok)
        row["sliced_ms"] = report.sliced_ms
        row["reference_ms"] = report.reference_ms
        del ex

        ref = ort.InferenceSession(str(path), providers=CPU)
        names = [o.name for o in ref.get_outputs()]
        want = dict(zip(names, ref.run(names, feeds)))
        del ref
        got = plain_chain(out, feeds)
        row["chain_rel_diff"] = {n: rel_diff(np.asarray(got[n]), np.asarray(want[n])) for n in got}
        row["chain_ok"] = bool(set(got) == set(want) and all(d <= RTOL for d in row["chain_rel_diff"].values()))
    row["max_rel_diff"] = max([*row["runtime_rel_diff"].values(), *row["chain_rel_diff"].values()])
    row["ok"] = row["runtime_ok"] and row["chain_ok"]
    return row


def print_table(rows: list[dict[str, Any]], console: Any) -> None:
    from rich.table import Table

    t = Table(title=f"sliced models vs the unsliced model (random inputs, rtol {RTOL:g})")
    for col in ("model", "target", "objective", "planner", "slices", "devices", "runtime rel diff",
                "plain chain rel diff", "ok"):
        t.add_column(col, justify="right" if col in ("slices", "runtime rel diff", "plain chain rel diff") else "left")
    for r in rows:
        if "error" in r:
            t.add_row(r["model"], r["target"], r["objective"], "", "", "[red]error[/]", "", "", "[red]FAIL[/]")
            continue
        t.add_row(r["model"], r["target"], r["objective"], r["planner"], str(r["slices"]),
                  ",".join(dict.fromkeys(r["devices"])), f"{max(r['runtime_rel_diff'].values()):.2e}",
                  f"{max(r['chain_rel_diff'].values()):.2e}", "[green]ok[/]" if r["ok"] else "[red]FAIL[/]")
    console.print(t)
    for r in rows:
        if "error" in r:
            console.print(f"[red]{r['model']} {r['target']}/{r['objective']}: {r['error']}[/]", highlight=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", help="comma-separated zoo names (default: the core set)")
    ap.add_argument("--all", action="store_true", help="every zoo entry, not just the core set")
    ap.add_argument("--quick", action="store_true", help=f"{', '.join(QUICK_MODELS)} only")
    add_io_args(ap, SCRIPT)
    args = ap.parse_args(argv)
    args.profile_repeats = 1 if args.quick else None
    out = out_path(args, SCRIPT)
    # hikey970's GPU/NPU providers are absent here; the runtime says so once per provider, which
    # is expected for this check
    logging.getLogger("hetcc.runtime").setLevel(logging.ERROR)

    console = make_console()
    machine = machine_info()
    started = utc_now()
    rows = []
    for name in select_models(args, QUICK_MODELS):
        console.print(f"[dim]{name}…[/]", highlight=False)
        try:
            path = model_path(name, args.models_dir)
        except Exception as exc:
            traceback.print_exc()
            rows += [{"model": name, "target": t, "objective": o, "ok": False, "error": f"export: {exc}"}
                     for t, o in CONFIGS]
            continue
        for target, objective in CONFIGS:
            try:
                rows.append(check(name, path, target, objective, args))
            except Exception as exc:  # report it and go on with the rest of the zoo
                traceback.print_exc()
                rows.append({"model": name, "target": target, "objective": objective, "ok": False,
                             "error": error_text(exc)})
    print_table(rows, console)
    failed = [f"{r['model']} {r['target']}/{r['objective']}" for r in rows if not r["ok"]]
    console.print(f"FAILED: {', '.join(failed)}" if failed else f"all {len(rows)} checks ok", highlight=False)
    write_json({"script": SCRIPT, "date": started, "machine": machine,
                "args": {"models": sorted({r['model'] for r in rows}, key=[r['model'] for r in rows].index),
                         "quick": args.quick, "configs": [list(c) for c in CONFIGS]},
                "rtol": RTOL, "results": rows, "failed": failed}, out)
    console.print(f"wrote {out}", highlight=False)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
