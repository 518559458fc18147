"""Runtime overhead benchmark: what cutting a model into chained sessions costs on this machine.

On the ``host`` target (measured), per model (ResNet-50 by default):

* the monolithic model in plain onnxruntime (the runtime's session options: no spinning,
  ORT_ENABLE_ALL) against the same model compiled with ``planner="even:N"`` (N = 4, 8), run
  (a) as a plain onnxruntime chain (one session per slice, run in manifest order feeding dicts)
  and (b) through ``hetcc.runtime.Executor.run``;
* the same chains and model at ORT_ENABLE_BASIC (NCHWc layout reorders at every boundary
  disappear), and the largest chain with intra-op spinning on vs off (why the runtime turns it off);
* the boundary fit the ``host`` target's cost model uses (``hetcc.measure.profiler.measure_boundary``).

Variants are interleaved (A, B, C, A, B, C, ...) over many rounds and medians are reported,
with the paired estimate beside them: the median over rounds of (B_i - A_i), relative to median A.
On a shared 2-core machine the load of other processes moves every time by up to 2x within
seconds; a round takes about a second, so the paired figure cancels most of that. Target: the
hetcc runtime within 2% of the plain chain (judged on the paired figure).

    python benchmarks/runtime_overhead.py
    python benchmarks/runtime_overhead.py --models resnet50,mobilenet_v2 --rounds 200
    python benchmarks/runtime_overhead.py --quick     # squeezenet1_1, few rounds (tests run this)
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

if (HERE := str(Path(__file__).resolve().parent)) not in sys.path:  # _common.py lives beside this script
    sys.path.insert(0, HERE)
from _common import (add_io_args, bench_each, default_variant, machine_info, make_console, median, model_path,  # noqa: E402
                     out_path, print_errors, rel_diff, utc_now, write_json)

SCRIPT = Path(__file__).stem
TARGET = "host"
RUNTIME_TARGET_PCT = 2.0
DEFAULT_MODELS = ("resnet50",)
QUICK_MODELS = ("squeezenet1_1",)
CPU = ["CPUExecutionProvider"]


# ---- what is measured ----

class PlainChain:
    """The slices of an artifact as plain onnxruntime sessions, run in manifest order feeding dicts."""

    def __init__(self, artifact: Path, so_factory: Callable[[], Any]) -> None:
        import onnxruntime as ort

        manifest, variant = default_variant(artifact)
        self.steps = [(ort.InferenceSession(str(artifact / s["file"]), so_factory(), providers=CPU),
                       [o["name"] for o in s["outputs"]], [i["name"] for i in s["inputs"]])
                      for s in variant["slices"]]
        self.output_names = [o["name"] for o in manifest["model"]["outputs"]]

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        env = dict(feeds)
        for sess, outs, ins in self.steps:
            env.update(zip(outs, sess.run(outs, {n: env[n] for n in ins})))
        return {n: env[n] for n in self.output_names}


def monolithic(path: Path, so: Any) -> Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]:
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), so, providers=CPU)
    names = [o.name for o in sess.get_outputs()]
    return lambda feeds: dict(zip(names, sess.run(names, feeds)))


def interleaved(variants: dict[str, Callable[[], Any]], rounds: int, warmup: int = 3,
                settle_ms: float = 0.0, block: int = 1) -> dict[str, list[float]]:
    """Wall ms of each variant, measured A, B, C, A, B, C, ... for ``rounds`` rounds after warm-up.

    With ``settle_ms`` each variant first runs untimed for that long whenever it takes its turn:
    the previous variant's spinning threads may still hold the cores for ~0.5 s after it ends.
    (Sleeping instead would time a wake-up from idle, several times slower on this VM.) Then
    ``block`` runs are timed.
    """
    for _ in range(warmup):
        for fn in variants.values():
            fn()
    times: dict[str, list[float]] = {k: [] for k in variants}
    clock = time.perf_counter
    for _ in range(rounds):
        for key, fn in variants.items():
            if settle_ms:
                t_end = clock() + settle_ms / 1e3
                while clock() < t_end:
                    fn()
            for _ in range(block):
                t0 = clock()
                fn()
                times[key].append((clock() - t0) * 1e3)
    return times


def boundaries(variant: dict[str, Any]) -> list[dict[str, Any]]:
    """Each slice boundary with the bytes of the tensors produced by earlier slices that enter it."""
    out = []
    for s in variant["slices"][1:]:
        tensors = [i for i in s["inputs"] if i.get("source", "model") != "model"]
        nbytes = sum(int(np.prod(t["shape"], dtype=np.int64)) * np.dtype(t["dtype"]).itemsize for t in tensors)
        out.append({"slice": s["id"], "tensors": [t["name"] for t in tensors], "bytes": int(nbytes)})
    return out


def summarise(times: dict[str, list[float]]) -> dict[str, dict[str, Any]]:
    return {k: {"median_ms": median(v), "p10_ms": float(np.percentile(v, 10)), "p90_ms": float(np.percentile(v, 90)),
                "runs_ms": v} for k, v in times.items()}


def pct(a: float, b: float) -> float:
    return (a / b - 1.0) * 100.0


def paired_pct(a: list[float], b: list[float]) -> float:
    """Median over rounds of (a_i - b_i), as a % of median(b): robust to slow drift in load."""
    return median([x - y for x, y in zip(a, b)]) / median(b) * 100.0


def bench_model(name: str, args: argparse.Namespace, fit: Any) -> dict[str, Any]:
    path = model_path(name, args.models_dir)
    with tempfile.TemporaryDirectory(prefix=f"hetcc-overhead-{name}-") as tmp:
        return _bench_model(name, path, Path(tmp), args, fit)


def _bench_model(name: str, path: Path, tmp: Path, args: argparse.Namespace, fit: Any) -> dict[str, Any]:
    import hetcc
    from hetcc.measure.profiler import session_options
    from hetcc.runtime import Executor, random_inputs

    plans: dict[int, dict[str, Any]] = {}
    execs: dict[int, Any] = {}
    for n in args.slices:
        out = tmp / f"even{n}"
        t0 = time.perf_counter()
        r = hetcc.compile(path, target=TARGET, objective="latency", planner=f"even:{n}", output_dir=out,
                          profile_repeats=args.profile_repeats)
        cuts = boundaries(default_variant(out)[1])
        plans[n] = {"compile_s": time.perf_counter() - t0, "layers": len(r.program.get("layers")),
                    "slices": [[s.first, s.last] for s in r.plan.slices], "predicted_latency_ms": r.plan.latency_ms,
                    "boundaries": cuts,
                    "fit_predicted_boundary_ms": [fit.delta_ms + fit.beta_ms_per_byte * c["bytes"] for c in cuts]}
        execs[n] = Executor(out)
    feeds = random_inputs(execs[args.slices[0]].inputs, seed=0)

    off = lambda: session_options(spinning=False)  # noqa: E731 - what the runtime uses
    basic = lambda: session_options(spinning=False, level="basic")  # noqa: E731
    spin = lambda: session_options(spinning=True)  # noqa: E731
    fns: dict[str, Callable[[dict[str, np.ndarray]], Any]] = {"mono": monolithic(path, off())}
    for n in args.slices:
        fns[f"chain{n}"] = PlainChain(tmp / f"even{n}", off).run
        fns[f"hetcc{n}"] = execs[n].run
    fns["mono_basic"] = monolithic(path, basic())
    for n in args.slices:
        fns[f"chain{n}_basic"] = PlainChain(tmp / f"even{n}", basic).run

    # every variant computes the model
    want = fns["mono"](feeds)
    diffs = {k: max(rel_diff(np.asarray(fn(feeds)[o]), np.asarray(w), check_shape=False) for o, w in want.items())
             for k, fn in fns.items()}

    print(f"  {name}: {args.rounds} interleaved rounds of {len(fns)} variants", file=sys.stderr, flush=True)
    times = interleaved({k: (lambda fn=fn: fn(feeds)) for k, fn in fns.items()}, args.rounds, args.warmup)

    # spinning on vs off for the largest chain, in its own interleaved group (spinning sessions'
    # threads would disturb the group above), each turn preceded by untimed settling runs
    big = max(args.slices)
    spin_fns = {"mono": fns["mono"], f"chain{big}": fns[f"chain{big}"],
                "mono_spin": monolithic(path, spin()), f"chain{big}_spin": PlainChain(tmp / f"even{big}", spin).run}
    print(f"  {name}: {args.spin_rounds} interleaved rounds, spinning on vs off", file=sys.stderr, flush=True)
    spin_times = interleaved({k: (lambda fn=fn: fn(feeds)) for k, fn in spin_fns.items()}, args.spin_rounds,
                             args.warmup, settle_ms=args.settle_ms, block=args.spin_block)
    del spin_fns

    m = summarise(times)
    s = summarise(spin_times)
    mono = m["mono"]["median_ms"]
    per_n = {}
    for n in args.slices:
        chain, ours = m[f"chain{n}"]["median_ms"], m[f"hetcc{n}"]["median_ms"]
        chain_b = m[f"chain{n}_basic"]["median_ms"]
        pred = plans[n]["fit_predicted_boundary_ms"]
        per_n[str(n)] = {
            "chain_ms": chain, "chain_overhead_pct": pct(chain, mono),
            "chain_overhead_paired_pct": paired_pct(times[f"chain{n}"], times["mono"]),
            "per_boundary_us": (chain - mono) / (n - 1) * 1e3,
            "per_boundary_paired_us": median([c - m for c, m in zip(times[f"chain{n}"], times["mono"])]) / (n - 1) * 1e3,
            "fit_per_boundary_us": float(np.mean(pred)) * 1e3 if pred else 0.0,
            "hetcc_ms": ours, "hetcc_vs_chain_pct": pct(ours, chain),
            "hetcc_vs_chain_paired_pct": paired_pct(times[f"hetcc{n}"], times[f"chain{n}"]),
            "hetcc_target_met": paired_pct(times[f"hetcc{n}"], times[f"chain{n}"]) < RUNTIME_TARGET_PCT,
            "chain_basic_ms": chain_b, "chain_basic_vs_mono_basic_pct": pct(chain_b, m["mono_basic"]["median_ms"]),
            "chain_basic_vs_mono_pct": pct(chain_b, mono),
        }
    spin_doc = {"slices": big, "settle_ms": args.settle_ms, "block": args.spin_block,
                "mono_ms": s["mono"]["median_ms"], "chain_ms": s[f"chain{big}"]["median_ms"],
                "mono_spin_ms": s["mono_spin"]["median_ms"], "chain_spin_ms": s[f"chain{big}_spin"]["median_ms"],
                "chain_overhead_pct": pct(s[f"chain{big}"]["median_ms"], s["mono"]["median_ms"]),
                "chain_spin_overhead_pct": pct(s[f"chain{big}_spin"]["median_ms"], s["mono"]["median_ms"]),
                "chain_spin_vs_mono_spin_pct": pct(s[f"chain{big}_spin"]["median_ms"], s["mono_spin"]["median_ms"]),
                "measurements": s}
    return {"model": name, "model_path": str(path), "target": TARGET, "rounds": args.rounds,
            "mono_ms": mono, "mono_basic_ms": m["mono_basic"]["median_ms"], "slices": per_n, "plans": plans,
            "max_rel_diff": diffs, "spinning": spin_doc, "measurements": m}


def print_tables(rows: list[dict[str, Any]], fit_doc: dict[str, Any], console: Any) -> None:
    from rich.table import Table

    t = Table(title=f"chains vs the monolithic model on {TARGET} (median ms, no spinning, ORT_ENABLE_ALL; "
                    f"(paired): median of per-round differences; target: hetcc < {RUNTIME_TARGET_PCT:g}% over chain, paired)")
    for col in ("model", "slices", "mono ms", "chain ms", "chain vs mono", "(paired)", "µs / boundary", "(paired)",
                "fit µs / boundary", "hetcc ms", "hetcc vs chain", "(paired)", "target"):
        t.add_column(col, justify="left" if col == "model" else "right")
    for r in rows:
        if "error" in r:
            t.add_row(r["model"], "[red]error[/]")
            continue
        for n, d in r["slices"].items():
            t.add_row(r["model"], n, f"{r['mono_ms']:.2f}", f"{d['chain_ms']:.2f}", f"{d['chain_overhead_pct']:+.1f}%",
                      f"{d['chain_overhead_paired_pct']:+.1f}%", f"{d['per_boundary_us']:.0f}",
                      f"{d['per_boundary_paired_us']:.0f}", f"{d['fit_per_boundary_us']:.0f}", f"{d['hetcc_ms']:.2f}",
                      f"{d['hetcc_vs_chain_pct']:+.2f}%", f"{d['hetcc_vs_chain_paired_pct']:+.2f}%",
                      "[green]PASS[/]" if d["hetcc_target_met"] else "[red]MISS[/]")
    console.print(t)
    print_errors(rows, console)

    t = Table(title="session options: chains vs the monolithic model (median ms)")
    for col in ("model", "variant", "mono ms", "chain ms", "chain vs mono (same options)",
                "chain vs mono (runtime options)"):
        t.add_column(col, justify="left" if col in ("model", "variant") else "right")
    for r in [r for r in rows if "error" not in r]:
        for n, d in r["slices"].items():
            t.add_row(r["model"], f"{n} slices, ALL, no spin", f"{r['mono_ms']:.2f}", f"{d['chain_ms']:.2f}",
                      f"{d['chain_overhead_pct']:+.1f}%", f"{d['chain_overhead_pct']:+.1f}%")
            t.add_row(r["model"], f"{n} slices, BASIC, no spin", f"{r['mono_basic_ms']:.2f}", f"{d['chain_basic_ms']:.2f}",
                      f"{d['chain_basic_vs_mono_basic_pct']:+.1f}%", f"{d['chain_basic_vs_mono_pct']:+.1f}%")
        sp = r["spinning"]
        n = sp["slices"]
        t.add_row(r["model"], f"{n} slices, ALL, no spin (spin group)", f"{sp['mono_ms']:.2f}", f"{sp['chain_ms']:.2f}",
                  f"{sp['chain_overhead_pct']:+.1f}%", f"{sp['chain_overhead_pct']:+.1f}%")
        t.add_row(r["model"], f"{n} slices, ALL, [bold]spinning[/]", f"{sp['mono_spin_ms']:.2f}",
                  f"{sp['chain_spin_ms']:.2f}", f"{sp['chain_spin_vs_mono_spin_pct']:+.1f}%",
                  f"{sp['chain_spin_overhead_pct']:+.1f}%")
    console.print(t)

    t = Table(title="boundary fit used by the host target: boundary_ms = delta + beta * bytes")
    for col in ("delta µs", "beta µs/MB", "samples (bytes: ms)"):
        t.add_column(col, justify="right")
    t.add_row(f"{fit_doc['delta_ms'] * 1e3:.1f}", f"{fit_doc['beta_ms_per_byte'] * 1e9:.1f}",
              ", ".join(f"{b / 1e6:.2f} MB: {ms:.3f}" for b, ms in fit_doc["samples"]))
    console.print(t)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", help=f"comma-separated zoo names (default: {','.join(DEFAULT_MODELS)})")
    ap.add_argument("--quick", action="store_true", help=f"{', '.join(QUICK_MODELS)} with few rounds")
    ap.add_argument("--slices", default="4,8", help="even:N slice counts to compare (default 4,8)")
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 100; quick 3)")
    ap.add_argument("--spin-rounds", type=int, default=None, help="rounds of the spinning group (default 8; quick 1)")
    ap.add_argument("--settle-ms", type=float, default=None,
                    help="spinning group: untimed runs of a variant for this long before timing it (1000; quick 50)")
    ap.add_argument("--spin-block", type=int, default=None,
                    help="spinning group: timed runs per variant per round (default 5; quick 1)")
    add_io_args(ap, SCRIPT, with_all=False)
    args = ap.parse_args(argv)
    if args.quick:
        models = list(QUICK_MODELS)
    else:
        models = [m.strip() for m in (args.models or ",".join(DEFAULT_MODELS)).split(",") if m.strip()]
    args.slices = sorted({int(x) for x in args.slices.split(",")})
    if any(n < 2 for n in args.slices):
        ap.error("--slices: each N must be at least 2")
    # --quick only shows that every variant runs and is reported (a test runs it): its numbers are not
    # read, so it takes the fewest rounds that still give each variant a paired difference to report
    args.rounds = args.rounds or (3 if args.quick else 100)
    args.spin_rounds = args.spin_rounds or (1 if args.quick else 8)
    args.settle_ms = args.settle_ms if args.settle_ms is not None else (50.0 if args.quick else 1000.0)
    args.spin_block = args.spin_block or (1 if args.quick else 5)
    args.warmup = 1 if args.quick else 3     # untimed runs of each variant first (checking its output ran it once)
    args.profile_repeats = 1 if args.quick else None
    out = out_path(args, SCRIPT)

    from hetcc.measure.profiler import measure_boundary

    console = make_console()
    machine = machine_info()
    started = utc_now()
    print("measuring the boundary fit", file=sys.stderr, flush=True)
    fit = measure_boundary(min_seconds=0.05 if args.quick else 0.3)
    fit_doc = {"delta_ms": fit.delta_ms, "beta_ms_per_byte": fit.beta_ms_per_byte,
               "samples": [list(s) for s in fit.samples]}
    rows = bench_each(models, lambda name: bench_model(name, args, fit), console)
    print_tables(rows, fit_doc, console)
    ok_rows = [r for r in rows if "error" not in r]
    misses = [f"{r['model']} even:{n}: hetcc runtime {d['hetcc_vs_chain_paired_pct']:+.2f}% (paired) over the plain chain"
              for r in ok_rows for n, d in r["slices"].items() if not d["hetcc_target_met"]]
    console.print(("targets missed: " + "; ".join(misses)) if misses else "all targets met", highlight=False)
    write_json({"script": SCRIPT, "date": started, "machine": machine,
                "args": {"models": models, "quick": args.quick, "slices": args.slices, "rounds": args.rounds,
                         "spin_rounds": args.spin_rounds, "settle_ms": args.settle_ms,
                         "spin_block": args.spin_block},
                "targets": {"hetcc_vs_chain_pct": RUNTIME_TARGET_PCT}, "boundary_fit": fit_doc,
                "results": rows, "misses": misses}, out)
    console.print(f"wrote {out}", highlight=False)
    return 1 if len(ok_rows) < len(rows) else 0


if __name__ == "__main__":
    sys.exit(main())
