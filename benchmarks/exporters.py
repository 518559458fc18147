"""The exporter should not change the plan: one network exported by torch's legacy exporter and by its dynamo exporter, compiled with and without hetcc's canonical pass.

    python benchmarks/exporters.py           # regnet_y_400mf (torch, torchvision, onnxscript: the corpus extra)
    python benchmarks/exporters.py --quick   # a tiny squeeze-excitation net written as ONNX (no torch)

The dynamo exporter writes ``ReduceMean`` over H, W where the legacy exporter writes
``GlobalAveragePool``; the hikey970 NPU lists only the latter. Both exports hold the same weights
(``hetcc.compiler.zoo.build_module(name, seed=0)``; the quick net: one random draw written both
ways). Each is compiled for ``--target`` (default hikey970) with the latency objective, once with
the canonical pass (``passes/canonicalize.py``) and once without it, and every artifact is checked
with ``hetcc.runtime.verify`` (three input sets against the unsliced source model). Per row: the
plan (device and layers per slice), predicted latency and energy, the (layer, device) cells the
legality pass refused, the rewrites and the verify result. The checks: with the pass, the dynamo
plan runs on the legacy plan's devices with its latency within 1%; every artifact verifies.
Writes benchmarks/results/exporters[-quick].json; exit 1 when a check fails.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np

if (HERE := str(Path(__file__).resolve().parent)) not in sys.path:  # _common.py lives beside this script
    sys.path.insert(0, HERE)
from _common import MODELS_DIR, RESULTS_DIR, default_variant, machine_info, make_console, utc_now, write_json  # noqa: E402

SCRIPT = Path(__file__).stem
MODEL = "regnet_y_400mf"
TARGET = "hikey970"
LATENCY_RTOL = 0.01
QUICK_SHAPE = (1, 16, 28, 28)
#: the quick net's stages, 3x3 convolutions per stage and their channels: many cheap nodes, as a
#: mobile network has (on hikey970 the NPU's low cost per node then outweighs its transfers)
QUICK_STAGES = 16
QUICK_CONVS = 2
QUICK_WIDTH = 32


# ---- the models ----

def quick_models(directory: Path, seed: int = 0) -> dict[str, Path]:
    """A small CNN (stages of 3x3 convolutions, each closed by a squeeze-excitation block) and
    a classifier, written as the legacy exporter writes it (GlobalAveragePool, Flatten) and as the
    dynamo exporter does (ReduceMean over H, W with keepdims=1, Reshape), with the same weights."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    n, c = QUICK_SHAPE[:2]
    weights: dict[str, np.ndarray] = {"axes": np.array([-1, -2], dtype=np.int64)}
    common: list[Any] = []
    form: dict[str, list[Any]] = {"legacy": [], "dynamo": []}
    x = "x"

    def both(node: Any) -> None:
        for nodes in form.values():
            nodes.append(node)

    def conv(i: int, src: str, cin: int, cout: int, k: int) -> str:
        weights[f"w{i}"] = rng.standard_normal((cout, cin, k, k)) * (2.0 / (cin * k * k)) ** 0.5
        both(helper.make_node("Conv", [src, f"w{i}"], [f"c{i}"], name=f"conv{i}", pads=[k // 2] * 4))
        return f"c{i}"

    i = 0
    channels = c
    for stage in range(QUICK_STAGES):
        for _ in range(QUICK_CONVS):
            i += 1
            y = conv(i, x, channels, QUICK_WIDTH, 3)
            channels = QUICK_WIDTH
            both(helper.make_node("Relu", [y], [f"r{i}"], name=f"relu{i}"))
            x = f"r{i}"
        pooled = f"se{stage}_p"
        form["legacy"].append(helper.make_node("GlobalAveragePool", [x], [pooled], name=f"se{stage}_pool"))
        form["dynamo"].append(helper.make_node("ReduceMean", [x, "axes"], [pooled], name=f"se{stage}_pool", keepdims=1))
        i += 1
        s = conv(i, pooled, channels, channels // 4, 1)
        both(helper.make_node("Relu", [s], [f"se{stage}_r"], name=f"se{stage}_relu"))
        i += 1
        s = conv(i, f"se{stage}_r", channels // 4, channels, 1)
        both(helper.make_node("Sigmoid", [s], [f"se{stage}_g"], name=f"se{stage}_gate"))
        both(helper.make_node("Mul", [x, f"se{stage}_g"], [f"se{stage}_m"], name=f"se{stage}_scale"))
        x = f"se{stage}_m"
    form["legacy"] += [helper.make_node("GlobalAveragePool", [x], ["p"], name="pool"),
                       helper.make_node("Flatten", ["p"], ["f"], name="flatten", axis=1)]
    form["dynamo"] += [helper.make_node("ReduceMean", [x, "axes"], ["p"], name="pool", keepdims=1),
                       helper.make_node("Reshape", ["p", "flat"], ["f"], name="view")]
    weights["flat"] = np.array([n, channels], dtype=np.int64)
    weights["fc"] = rng.standard_normal((10, channels)) * 0.1
    weights["fcb"] = rng.standard_normal(10) * 0.1
    both(helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"], name="fc", transB=1))
    inits = [numpy_helper.from_array(v if v.dtype == np.int64 else v.astype(np.float32), k) for k, v in weights.items()]
    out: dict[str, Path] = {}
    for name, nodes in form.items():
        used = {i for node in [*common, *nodes] for i in node.input}
        graph = helper.make_graph([*common, *nodes], f"se_{name}",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(QUICK_SHAPE))],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, 10])],
                                  [t for t in inits if t.name in used])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
        onnx.checker.check_model(model, full_check=True)
        out[name] = directory / f"se-quick-{name}.onnx"
        onnx.save(model, str(out[name]))
    return out


def zoo_models(name: str, directory: Path, seed: int = 0) -> dict[str, Path]:
    """``name`` from hetcc's zoo with the weights of ``seed``, exported by the legacy exporter
    (``hetcc zoo export``) and by ``torch.onnx.export(..., dynamo=True)``; each export is kept in
    ``directory`` and reused."""
    from hetcc.compiler import zoo

    out = {"legacy": directory / f"{name}-seed{seed}.onnx", "dynamo": directory / f"{name}-seed{seed}-dynamo.onnx"}
    directory.mkdir(parents=True, exist_ok=True)
    if not out["legacy"].exists():
        print(f"exporting {name} (legacy) -> {out['legacy']}", file=sys.stderr, flush=True)
        zoo.export(name, out["legacy"], seed=seed)
    if not out["dynamo"].exists():
        import torch

        print(f"exporting {name} (dynamo) -> {out['dynamo']}", file=sys.stderr, flush=True)
        module = zoo.build_module(name, seed=seed)
        shape = zoo.ZOO[name].input_shape
        x = torch.randn(*shape, generator=torch.Generator().manual_seed(seed))
        tmp = out["dynamo"].with_name(f".{out['dynamo'].name}.tmp")
        with contextlib.redirect_stdout(sys.stderr):
            torch.onnx.export(module, (x,), str(tmp), dynamo=True, input_names=["input"], output_names=["output"])
        data = tmp.with_name(tmp.name + ".data")
        if data.exists():     # the weights' file keeps the name the model refers to
            import onnx

            model = onnx.load(str(tmp))
            onnx.save(model, str(out["dynamo"]), save_as_external_data=True,
                      location=f"{out['dynamo'].name}.data")
            tmp.unlink()
            data.unlink()
        else:
            tmp.replace(out["dynamo"])
    return out


# ---- the measurements ----

@contextlib.contextmanager
def canonical_pass(on: bool) -> Iterator[None]:
    """The compile pipeline with (as shipped) or without the canonical pass ("before")."""
    from hetcc.compiler import pipeline

    if on:
        yield
        return
    original = pipeline.analysis_passes
    pipeline.analysis_passes = lambda *a, **k: [p for p in original(*a, **k) if p.name != "canonical"]
    try:
        yield
    finally:
        pipeline.analysis_passes = original


def plan_text(variant: dict[str, Any]) -> str:
    return " ".join(f"{s['device']}[L{s['first_layer']}-L{s['last_layer']}]" for s in variant["slices"])


def measure(model: Path, exporter: str, canonical: bool, target: str, out: Path) -> dict[str, Any]:
    import hetcc
    from hetcc.runtime import verify

    t0 = time.perf_counter()
    with canonical_pass(canonical):
        hetcc.compile(model, target, "latency", output_dir=out)
    seconds = time.perf_counter() - t0
    _, variant = default_variant(out)
    costs = json.loads((out / "costs.json").read_text())
    why = json.loads((out / "why.json").read_text()) if (out / "why.json").exists() else {}
    report = verify(out, inputs=3)
    return {"exporter": exporter, "canonical": canonical, "plan": plan_text(variant),
            "devices": ",".join(dict.fromkeys(s["device"] for s in variant["slices"])),
            "slices": len(variant["slices"]), "layers": len(costs["layers"]),
            "latency_ms": variant["predicted"]["latency_ms"], "energy_mj": variant["predicted"]["energy_mj"],
            "illegal_cells": len(why.get("illegal", [])), "rewrites": len(why.get("rewrites", [])),
            "verify_ok": bool(report.ok), "verify_rel_diff": max((o.rel_diff for o in report.outputs), default=0.0),
            "compile_s": seconds}


def same_network(paths: dict[str, Path], seed: int = 0) -> float:
    """max |legacy - dynamo| / max |legacy| of the two exports' outputs on one random input."""
    import onnxruntime as ort

    outs = []
    for name in ("legacy", "dynamo"):
        sess = ort.InferenceSession(str(paths[name]), providers=["CPUExecutionProvider"])
        inp = sess.get_inputs()[0]
        x = np.random.default_rng(seed).standard_normal(inp.shape).astype(np.float32)
        outs.append(sess.run(None, {inp.name: x})[0].astype(np.float64))
    return float(np.max(np.abs(outs[0] - outs[1])) / max(float(np.max(np.abs(outs[0]))), 1e-30))


def check(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The legacy plan against the dynamo plan, before and after the pass."""
    def row(exporter: str, canonical: bool) -> dict[str, Any]:
        return next(r for r in rows if r["exporter"] == exporter and r["canonical"] == canonical)

    out: dict[str, Any] = {}
    for when, on in (("before", False), ("after", True)):
        leg, dyn = row("legacy", on), row("dynamo", on)
        out[f"same_devices_{when}"] = leg["devices"] == dyn["devices"] and leg["slices"] == dyn["slices"]
        out[f"latency_rel_diff_{when}"] = abs(dyn["latency_ms"] - leg["latency_ms"]) / leg["latency_ms"]
    out["all_verified"] = all(r["verify_ok"] for r in rows)
    out["passed"] = bool(out["same_devices_after"] and out["latency_rel_diff_after"] <= LATENCY_RTOL
                         and out["all_verified"])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a tiny ONNX net instead of the zoo model (no torch)")
    ap.add_argument("--model", default=MODEL, help=f"zoo model (default {MODEL}; not with --quick)")
    ap.add_argument("--target", default=TARGET, help=f"built-in target or board TOML (default {TARGET})")
    ap.add_argument("--models-dir", type=Path, default=MODELS_DIR, help="exported-model cache")
    ap.add_argument("--out", type=Path, default=None,
                    help=f"JSON path (default benchmarks/results/{SCRIPT}.json; {SCRIPT}-quick.json with --quick)")
    args = ap.parse_args(argv)
    console = make_console()
    out = args.out or RESULTS_DIR / f"{SCRIPT}{'-quick' if args.quick else ''}.json"
    started = utc_now()
    with tempfile.TemporaryDirectory(prefix="hetcc-exporters-") as tmp:
        root = Path(tmp)
        paths = quick_models(root) if args.quick else zoo_models(args.model, args.models_dir)
        name = "se-quick" if args.quick else args.model
        rows = []
        for exporter in ("legacy", "dynamo"):
            for canonical in (False, True):
                console.print(f"[dim]{name} {exporter} {'with' if canonical else 'without'} the canonical pass…[/]")
                row = measure(paths[exporter], exporter, canonical, args.target,
                              root / f"{exporter}-{'after' if canonical else 'before'}")
                rows.append({"model": name, **row})
        diff = same_network(paths)
    result = check(rows)
    from rich.table import Table

    table = Table(title=f"{name} on {args.target}, objective latency")
    for col in ("exporter", "pass", "plan", "latency ms", "energy mJ", "illegal", "rewrites", "verify"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["exporter"], "on" if r["canonical"] else "off", r["plan"], f"{r['latency_ms']:.2f}",
                      f"{r['energy_mj']:.2f}", str(r["illegal_cells"]), str(r["rewrites"]),
                      f"{'ok' if r['verify_ok'] else 'FAILED'} ({r['verify_rel_diff']:.1e})")
    console.print(table)
    console.print(f"legacy and dynamo exports: outputs differ by {diff:.1e} (relative)")
    console.print(f"dynamo vs legacy plan: before {'same' if result['same_devices_before'] else 'other'} devices, "
                  f"latency {result['latency_rel_diff_before']:.1%} apart; after "
                  f"{'same' if result['same_devices_after'] else 'other'} devices, "
                  f"{result['latency_rel_diff_after']:.2%} apart; verify "
                  f"{'passed' if result['all_verified'] else 'FAILED'} on every artifact")
    doc = {"script": SCRIPT, "date": started, "machine": machine_info(),
           "args": {"quick": args.quick, **({} if args.quick else {"model": args.model}), "target": args.target},
           "model": name, "target": args.target, "objective": "latency", "exports_rel_diff": diff, **result,
           "rows": rows}
    write_json(doc, out)
    console.print(f"wrote {out}")
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
