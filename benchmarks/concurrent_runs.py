"""The contention model against real concurrent runs on this machine's cores (FairBoost, issue 31 §5).

On ``host-cores`` (this machine's cores as devices core0 and core1, one onnxruntime thread pinned
to each; costs profiled with one pinned thread), mixes of 2-3 small zoo models, four with a fixed
pipeline per model over the two cores (whole on one core, or cut in two where the profiled latency
halves) and two whose pipelines the ``ga`` and ``optimum`` workload planners choose (objective
``overall``), compiled into one workload artifact and run with
``hetcc.runtime.concurrent.run_concurrent`` (each model alone, then all at once, ``--duration``
each, in ``--rounds`` turns). Beside each model's measured throughput:

* ``analytical``: ``hetcc.planners.multi.contention.predict`` on the profiled costs (the planners' view);
* ``des``: ``hetcc.planners.multi.simulate.simulate`` (SimPy) on the same costs;
* ``calibrated``: ``predict`` with each stage's cost replaced by its wall time measured in the
  run's alone phase: the contention model's own error, without the profile's;
* ``structure``: ``predict`` with each stage's cost replaced by its mean wall time per execution
  measured while all models ran: under ``queue`` sharing, whether the model's queueing (who waits
  for which device, max-min fair rates) holds, whatever slowed the executions down.

Errors are (predicted - measured) / measured per model; the summary gives the median |error| per
predictor and device sharing (``queue``: one stage execution per device at a time, first come
first served, what the model describes; ``os``: the OS time-shares a core between the stages'
threads). Target: the analytical model within 15% (median) of the ``queue`` runs. The machine's
load (CPU used by other processes during each phase) is recorded beside every number.

    python benchmarks/concurrent_runs.py                       # 6 mixes, 10 s per phase in 5 rounds, both sharings
    python benchmarks/concurrent_runs.py --duration 5 --sharing queue
    python benchmarks/concurrent_runs.py --quick               # two tiny generated models, 0.3 s phases (a test runs this)
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

if (HERE := str(Path(__file__).resolve().parent)) not in sys.path:  # _common.py lives beside this script
    sys.path.insert(0, HERE)
from _common import add_io_args, machine_info, make_console, model_path, out_path, utc_now, write_json  # noqa: E402

SCRIPT = Path(__file__).stem
TARGET = "host-cores"
TARGET_MEDIAN_ERROR = 0.15

#: (mix name, [(model, pipeline)]): a pipeline is devices joined by '>' (cut where the profiled latency halves)
MIXES = (
    ("2 models, one core", [("squeezenet1_1", "core0"), ("mobilenet_v3_small", "core0")]),
    ("2 models, split + whole", [("squeezenet1_1", "core0>core1"), ("mobilenet_v3_small", "core1")]),
    ("3 models", [("squeezenet1_1", "core0"), ("mobilenet_v3_small", "core1"), ("shufflenet_v2_x1_0", "core0>core1")]),
    ("3 models, two split", [("resnet18", "core0>core1"), ("squeezenet1_1", "core1>core0"),
                             ("mobilenet_v3_small", "core0")]),
)
QUICK_MIXES = (("tiny pair", [("tiny_a", "core0"), ("tiny_b", "core0>core1")]),)
#: mixes whose pipelines a workload planner chooses (objective overall): (mix name, planner)
PLANNED = (("3 models, planned by ga", "ga"), ("2 models, planned by optimum", "optimum"))
PLANNED_MODELS = {"3 models, planned by ga": ("squeezenet1_1", "mobilenet_v3_small", "shufflenet_v2_x1_0"),
                  "2 models, planned by optimum": ("squeezenet1_1", "mobilenet_v3_small")}


# ---------------------------------------------------------------- models
def tiny_model(path: Path, layers: int, width: int) -> Path:
    """A chain of ``layers`` MatMul + Relu on [64, width] (a few ms on one core): --quick's models."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(layers)
    nodes, inits, prev = [], [], "x"
    for i in range(layers):
        w = numpy_helper.from_array((rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32), f"w{i}")
        inits.append(w)
        nodes += [helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"]), helper.make_node("Relu", [f"m{i}"], [f"r{i}"])]
        prev = f"r{i}"
    graph = helper.make_graph(nodes, path.stem, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, width])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [64, width])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def source(name: str, args: argparse.Namespace, tmp: Path) -> Path:
    if name == "tiny_a":
        return tiny_model(tmp / "tiny_a.onnx", 4, 384)
    if name == "tiny_b":
        return tiny_model(tmp / "tiny_b.onnx", 6, 256)
    return model_path(name, args.models_dir)


# ---------------------------------------------------------------- pipelines and predictions
def stages_of(mix: Any, m: int, spec: str) -> tuple:
    """The pipeline ``spec`` ('core0', 'core0>core1') of model ``m``: a cut where the first
    device's cumulative cost is nearest half of the model's on it (each stage at least one layer)."""
    from hetcc.planners.multi import Stage

    devs = [mix.devices.index(d) for d in spec.split(">")]
    n = mix.n_layers(m)
    if len(devs) == 1:
        return (Stage(devs[0], 0, n),)
    if len(devs) != 2:
        raise SystemExit(f"pipeline {spec!r}: one device or two (a>b)")
    cost = np.asarray(mix.layer_ms[m])[:, devs[0]]
    cum = np.cumsum(cost)
    cut = int(np.clip(np.argmin(np.abs(cum - cum[-1] / 2)) + 1, 1, n - 1))
    return (Stage(devs[0], 0, cut), Stage(devs[1], cut, n))


def calibrated(mix: Any, pipelines: list, measured_ms: list[list[float | None]]) -> Any:
    """``mix`` with each stage's cost scaled to its measured wall time alone (rows of the stage's
    layers on its device: layer, transfer in and out, all by one factor, so stage_ms follows)."""
    layer, t_in, t_out = [np.array(a) for a in mix.layer_ms], [np.array(a) for a in mix.in_ms], \
        [np.array(a) for a in mix.out_ms]
    for m, pipe in enumerate(pipelines):
        for st, want in zip(pipe, measured_ms[m]):
            have = mix.stage_ms(m, st)
            if want is None or not have > 0:
                continue
            f = want / have
            for a in (layer, t_in, t_out):
                a[m][st.first:st.stop, st.device] *= f
    return dataclasses.replace(mix, layer_ms=tuple(layer), in_ms=tuple(t_in), out_ms=tuple(t_out))


def rel(pred: float | None, meas: float | None) -> float | None:
    return None if pred is None or meas is None or not meas > 0 else float((pred - meas) / meas)


# ---------------------------------------------------------------- one mix
def bench_mix(name: str, members: list, args: argparse.Namespace, analyses: dict, tmp: Path,
              console: Any) -> list[dict[str, Any]]:
    import hetcc
    from hetcc.passes.codegen import emit_workload
    from hetcc.planners import Objective, WorkloadPlan
    from hetcc.planners.multi import MixProblem, predict
    from hetcc.planners.problem import WorkloadProblem
    from hetcc.runtime.concurrent import run_concurrent

    planner = members if isinstance(members, str) else None
    if planner is not None:          # ("planned by ga", "ga", [models]): the workload planner cuts the pipelines
        models = list(PLANNED_MODELS[name])
    else:
        models = [m for m, _ in members]
    for m in models:
        if m not in analyses:
            console.print(f"[dim]analysing {m} on {TARGET} (profiled with one pinned thread)…[/]", highlight=False)
            analyses[m] = hetcc.analyse(source(m, args, tmp), TARGET, profile_repeats=args.profile_repeats)
    an = [analyses[m] for m in models]
    mix = MixProblem.from_workload(WorkloadProblem(tuple(a.problem for a in an), tuple(models)))
    out = tmp / f"mix{abs(hash(name)) % 10**8}"
    if planner is None:
        pipelines = [stages_of(mix, i, spec) for i, (_, spec) in enumerate(members)]
        plans = [an[i].problem.evaluate(list(mix.slices(i, p)), planner="fixed") for i, p in enumerate(pipelines)]
        wplan = WorkloadPlan(plans=tuple(plans), names=tuple(models), planner="fixed", objective=Objective("latency"))
        emit_workload(out, an[0].target, [(m, a.program, p) for m, a, p in zip(models, an, plans)], wplan)
    else:
        from hetcc.planners.multi import Stage

        console.print(f"[dim]{name}: planning with {planner} (objective overall)…[/]", highlight=False)
        compiled = hetcc.compile_workload([source(m, args, tmp) for m in models], TARGET, objective="overall",
                                     planner=planner, output_dir=out, profile_repeats=args.profile_repeats)
        stats = compiled.plan.stats["pipelines"]
        pipelines = [tuple(Stage(mix.devices.index(st["device"]), int(st["first"]), int(st["stop"]))
                           for st in stats[n]) for n in compiled.plan.names]   # workload order: models' order
    analytical = predict(mix, pipelines)
    des = None
    try:
        from hetcc.planners.multi.simulate import simulate

        des = simulate(mix, pipelines, seed=0).throughput
    except ImportError as exc:   # the 'sim' extra (SimPy) is not installed
        console.print(f"[yellow]no DES: {exc}[/]", highlight=False)
    rows = []
    for sharing in args.sharing:
        console.print(f"[dim]{name}: running ({sharing}), {args.duration:g} s per phase in {args.rounds} round(s)…[/]",
                      highlight=False)
        r = run_concurrent(out, args.duration, warmup=args.warmup, sharing=sharing, rounds=args.rounds)
        stage_ms = [[s.alone_ms for s in r.stages if s.model == rm.name] for rm in r.models]
        cal = predict(calibrated(mix, pipelines, stage_ms), pipelines) if all(
            all(x is not None for x in ms) for ms in stage_ms) else None
        shared_ms = [[s.shared_ms for s in r.stages if s.model == rm.name] for rm in r.models]
        structure = predict(calibrated(mix, pipelines, shared_ms), pipelines) if all(
            all(x is not None for x in ms) for ms in shared_ms) else None
        per_model = []
        for i, (m, res) in enumerate(zip(models, r.models)):
            pred = {"analytical": float(analytical.throughput[i]), "des": None if des is None else float(des[i]),
                    "calibrated": None if cal is None else float(cal.throughput[i]),
                    "structure": None if structure is None else float(structure.throughput[i])}
            manifest = res.predicted_ips   # the planner's contention block (the same model's answer), if any
            per_model.append({
                "model": m, "pipeline": [{"device": mix.devices[st.device], "first": st.first, "stop": st.stop}
                                         for st in pipelines[i]],
                "stage_ms": {"profiled": [float(mix.stage_ms(i, st)) for st in pipelines[i]],
                             "alone": stage_ms[i],
                             "shared": [s.shared_ms for s in r.stages if s.model == res.name]},
                "measured": {"alone_ips": res.alone_ips, "shared_ips": res.shared_ips,
                             "alone_runs": res.alone_runs, "shared_runs": res.shared_runs},
                "predicted": pred, "manifest_predicted_ips": manifest,
                "predicted_alone": {"analytical": float(analytical.alone[i]),
                                    "calibrated": None if cal is None else float(cal.alone[i])},
                "error": {k: rel(v, res.shared_ips) for k, v in pred.items()},
                "alone_error": {"analytical": rel(float(analytical.alone[i]), res.alone_ips),
                                "calibrated": None if cal is None else rel(float(cal.alone[i]), res.alone_ips)},
            })
        rows.append({"mix": name, "sharing": sharing, "planner": planner or "fixed", "prediction": r.prediction,
                     "models": per_model, "stopped": r.stopped,
                     "measured": r.measured.to_json(), "load": r.load, "notes": list(r.notes),
                     "window_s": r.window_s})
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for sharing in sorted({r["sharing"] for r in rows}):
        mine = [m for r in rows if r["sharing"] == sharing for m in r["models"]]
        s: dict[str, Any] = {"models": len(mine)}
        for k in ("analytical", "des", "calibrated", "structure"):
            errs = [abs(m["error"][k]) for m in mine if m["error"][k] is not None]
            s[k] = {"median_abs_error": float(np.median(errs)) if errs else None,
                    "max_abs_error": float(np.max(errs)) if errs else None, "n": len(errs)}
        alone = [abs(m["alone_error"]["analytical"]) for m in mine if m["alone_error"]["analytical"] is not None]
        s["profile_alone_median_abs_error"] = float(np.median(alone)) if alone else None
        others = [v for r in rows if r["sharing"] == sharing for v in r["load"]["others_cores"].values()
                  if v is not None]
        s["others_cores_mean"] = float(np.mean(others)) if others else None
        med = s["analytical"]["median_abs_error"]
        s["target_met"] = None if med is None else bool(med <= TARGET_MEDIAN_ERROR)
        out[sharing] = s
    return out


def pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1%}"


def print_table(console: Any, rows: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    from rich.table import Table

    t = Table(title=f"{TARGET}: measured vs predicted inferences/s (all models at once)")
    for c in ("mix", "sharing", "model", "pipeline", "alone", "shared", "analytical", "err", "DES", "err",
              "calibrated", "err", "structure", "err", "others' cores"):
        t.add_column(c, justify="left" if c in ("mix", "sharing", "model", "pipeline") else "right")
    for r in rows:
        busy = r["load"]["others_cores"].get("shared")
        for k, m in enumerate(r["models"]):
            p, e, me = m["predicted"], m["error"], m["measured"]
            f = lambda x: "-" if x is None else f"{x:.1f}"  # noqa: E731
            t.add_row(r["mix"] if k == 0 else "", r["sharing"] if k == 0 else "", m["model"],
                      ">".join(s["device"] for s in m["pipeline"]), f(me["alone_ips"]), f(me["shared_ips"]),
                      f(p["analytical"]), pct(e["analytical"]), f(p["des"]), pct(e["des"]), f(p["calibrated"]),
                      pct(e["calibrated"]), f(p.get("structure")), pct(e.get("structure")),
                      "" if k or busy is None else f"{busy:.2f}")
    console.print(t)
    for sharing, s in summary.items():
        a, d, c, st = (s[k]["median_abs_error"] for k in ("analytical", "des", "calibrated", "structure"))
        f = lambda x: "-" if x is None else f"{x:.1%}"  # noqa: E731
        console.print(f"{sharing}: median |error| over {s['models']} models: analytical {f(a)} (target "
                      f"{TARGET_MEDIAN_ERROR:.0%}: {'met' if s['target_met'] else 'MISSED' if s['target_met'] is False else '-'}), "
                      f"DES {f(d)}, calibrated {f(c)}, structure {f(st)}; the profile's alone throughput {f(s['profile_alone_median_abs_error'])}; "
                      f"other processes used {'-' if s['others_cores_mean'] is None else format(s['others_cores_mean'], '.2f')} "
                      "core(s) on average", highlight=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="two tiny generated models, 0.3 s phases, queue sharing")
    ap.add_argument("--duration", type=float, default=None, help="seconds per phase (default 10; --quick 0.3)")
    ap.add_argument("--sharing", default=None, help="comma-separated: queue,os (default both; --quick queue)")
    ap.add_argument("--mixes", default=None, help="comma-separated mix numbers, 1-based (default all)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs of each model first (default 3)")
    ap.add_argument("--rounds", type=int, default=None, help="the phases take turns this many times, each for "
                    "duration / rounds (default 5; --quick 1): the load of other programs falls on every phase alike")
    ap.add_argument("--profile-repeats", type=int, default=None, help="profiling effort (default adaptive; --quick 1)")
    add_io_args(ap, SCRIPT, with_all=False)
    args = ap.parse_args(argv)
    args.models = None
    args.duration = args.duration if args.duration is not None else (0.3 if args.quick else 10.0)
    args.sharing = [s.strip() for s in (args.sharing or ("queue" if args.quick else "queue,os")).split(",") if s.strip()]
    args.rounds = args.rounds or (1 if args.quick else 5)
    if args.quick and args.profile_repeats is None:
        args.profile_repeats = 1
    mixes = list(QUICK_MIXES if args.quick else MIXES + PLANNED)
    if args.mixes:
        mixes = [mixes[int(k) - 1] for k in args.mixes.split(",")]
    console = make_console()
    doc: dict[str, Any] = {"script": SCRIPT, "date": utc_now(), "machine": machine_info(),
                           "argv": list(sys.argv[1:] if argv is None else argv),
                           "args": {"quick": args.quick, "duration_s": args.duration, "sharing": args.sharing,
                                    "warmup": args.warmup, "rounds": args.rounds,
                                    "profile_repeats": args.profile_repeats},
                           "target": TARGET, "target_median_error": TARGET_MEDIAN_ERROR}
    rows: list[dict[str, Any]] = []
    analyses: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="hetcc-concurrent-") as tmp:
        for name, members in mixes:
            rows += bench_mix(name, members, args, analyses, Path(tmp), console)
    doc["results"] = rows
    doc["summary"] = summarise(rows)
    print_table(console, rows, doc["summary"])
    out = out_path(args, SCRIPT)
    write_json(doc, out)
    console.print(f"wrote {out}", highlight=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
