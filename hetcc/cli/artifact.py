"""The artifact commands of the ``hetcc`` CLI: ``run`` and ``inspect``.

``hetcc.cli.app`` builds the sub-parsers with ``add_run_arguments`` / ``add_inspect_arguments``
and dispatches to ``cmd_run`` / ``cmd_inspect``. Both understand every artifact kind: a
model artifact with one or more variants (``--variant``) and a workload artifact
(``--model``; ``run`` defaults to every model, ``run --verify`` verifies each).

Why one module: ``run`` and ``inspect`` share the artifact loading, the tables
(rich or plain text, for a board without rich) and the JSON output, and ``python -m
hetcc.runtime`` reuses them on a board; the plot lives in ``hetcc.cli.plot``, the why-report's
analysis in ``hetcc.compiler.why``.
"""
from __future__ import annotations

import argparse
import io
import math
import os
import stat
import sys
from pathlib import Path
from typing import Any

from hetcc.core.errors import UsageError
from hetcc.core.limits import SEED_MAX
from hetcc.cli.common import (PlainConsole, finite, float_in, fmt, int_in, json_text, make_console,  # noqa: F401
                              make_table, shown, took)

__all__ = ["add_run_arguments", "add_inspect_arguments", "cmd_run", "cmd_inspect"]

#: exit status of ``hetcc run --verify`` when an output differs from the unsliced model
VERIFY_FAILED = 4
#: command-line limits (docs/limits.md, "Command-line values")
REPEAT_MAX = 100_000
WARMUP_DEFAULT = 3
#: timed runs of ``hetcc run`` without --repeat or --duration
REPEAT_DEFAULT = 10
#: the longest --duration, seconds (1 hour; the runs also stop at BENCHMARK_RUNS_MAX, 1 000 000)
DURATION_MAX_S = 3600.0
VERIFY_INPUTS_MAX = 100
#: the most rounds of ``hetcc run --concurrent --rounds``
ROUNDS_MAX = 100


# ---------------------------------------------------------------- arguments
def add_run_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The arguments of ``hetcc run`` (the caller sets ``func``)."""
    parser.add_argument("dir", help="the artifact directory hetcc compile wrote (-o)")
    parser.add_argument("--input", action="append", metavar="NAME=x.npy",
                        help="feed an input from a .npy file (repeatable); without --input every input is "
                        "random; with it every input must be given unless --random-missing")
    parser.add_argument("--random-missing", action="store_true",
                        help="with --input: fill the inputs not given with random values (--seed)")
    parser.add_argument("--repeat", type=int_in(1, REPEAT_MAX), default=None, metavar="N",
                        help=f"runs to time, 1 to {REPEAT_MAX} (default {REPEAT_DEFAULT}); p50/p90/p99 latency, mean "
                        "throughput and each slice's p50 and mean are shown")
    parser.add_argument("--duration", type=duration_seconds, default=None, metavar="T",
                        help="time runs for T instead of a number of runs: 10s, 500ms, 2m, 1h (at most 1h); "
                        "not with --repeat; Ctrl-C stops early and reports the runs so far")
    parser.add_argument("--timeout", type=duration_seconds, default=None, metavar="T",
                        help="stop an inference that runs longer than T (10s, 500ms, 2m) with a one-line error "
                        "(a runaway or tampered slice cannot hang the run)")
    parser.add_argument("--warmup", type=int_in(0, REPEAT_MAX), default=WARMUP_DEFAULT, metavar="N",
                        help=f"untimed runs first, 0 to {REPEAT_MAX} (default {WARMUP_DEFAULT}): the first runs "
                        "pay for onnxruntime's lazy set-up and cold caches")
    parser.add_argument("--save-outputs", metavar="DIR",
                        help="write each model output of the last run to DIR/NAME.npy (a workload: "
                        "DIR/MODEL/NAME.npy); DIR is created if missing")
    parser.add_argument("--seed", type=int_in(0, SEED_MAX), default=0, help="seed of the random inputs")
    parser.add_argument("--variant", metavar="NAME", help="which plan of a multi-variant artifact to run "
                        "(default: the artifact's default variant)")
    parser.add_argument("--model", metavar="NAME", help="workload artifact: run this model only (default: all)")
    parser.add_argument("--verify", action="store_true", help="compare outputs with the unsliced model "
                        "(every model of a workload)")
    parser.add_argument("--reference", help="the unsliced model (default: the path recorded at compile time)")
    parser.add_argument("--verify-inputs", type=int_in(1, VERIFY_INPUTS_MAX), default=3, metavar="N",
                        help="--verify compares on N input sets: the run's inputs and N-1 random ones (seeds "
                        "--seed+1, ...); the worst difference is shown (default 3)")
    parser.add_argument("--rtol", type=float_in(0.0, 1.0), default=1e-4,
                        help="relative tolerance of --verify, 0 to 1 (default 1e-4)")
    parser.add_argument("--strict-providers", action="store_true",
                        help="fail if a slice's execution provider is missing")
    parser.add_argument("--local-fallback", action="store_true",
                        help="run slices planned for a remote device here, on the CPU (one warning per slice); with "
                        "an http:// endpoint: only when the offload fails (reported, and listed in --json)")
    parser.add_argument("--endpoint", action="append", metavar="NAME=URL",
                        help="send the slices of remote device NAME to the hetcc serve at URL (http://host:port), "
                        "instead of the endpoint in the manifest (repeatable)")
    parser.add_argument("--token", help="bearer token of the endpoints (default: the environment variable "
                        "HETCC_SERVE_TOKEN, which other users cannot see on the command line)")
    parser.add_argument("--rssi", action="append", metavar="LINK=DBM",
                        help="shape the traffic over LINK as the target's link tables give at DBM signal strength "
                        "(bandwidth and round trip; e.g. wifi=-85), client side (repeatable)")
    parser.add_argument("--apply-hardware", action="store_true",
                        help="set the plan's hardware configuration on this board first (knobs, each device's "
                        "frequency; needs root and a target with control tables) and put it back on exit; what "
                        "cannot be set is reported and the run goes on")
    parser.add_argument("--keep-hardware", action="store_true",
                        help="with --apply-hardware: leave the board as set instead of restoring it on exit")
    parser.add_argument("--sysfs-root", default="/", metavar="DIR",
                        help="with --apply-hardware: prefix of every path written (a fake sysfs tree for tests)")
    parser.add_argument("--concurrent", action="store_true",
                        help="workload artifact: run every model's pipeline at the same time (a worker per stage, "
                        "pinned to its device's cores), each alone first, then all at once, for --duration each "
                        "(default 10s); measured throughput, T, J, O beside the planner's prediction "
                        "(docs/concurrent.md)")
    parser.add_argument("--sharing", choices=("queue", "os"), default=None,
                        help="with --concurrent: how stages on one device share it: queue (default; one execution at "
                        "a time, first come first served, as the contention model assumes) or os (the OS time-shares "
                        "the device's cores between the stages' threads)")
    parser.add_argument("--rounds", type=int_in(1, ROUNDS_MAX), default=None, metavar="N",
                        help=f"with --concurrent: run the phases (each model alone, all at once) in turn N times, "
                        f"each for --duration / N, counted together, 1 to {ROUNDS_MAX} (default 1): on a machine "
                        "others use, every phase then sees about the same load")
    parser.add_argument("--json", action="store_true", help="print the timings (and verify results) as JSON")
    parser.add_argument("--policy", action="store_true",
                        help="let the artifact's AutoScale policy pick the variant of every inference (--repeat "
                        "of them) and learn from what it measures; the table is written back into the artifact "
                        "(docs/autoscale-runtime.md)")
    parser.add_argument("--trace", metavar="FILE.csv",
                        help="with --policy: the signal strengths, a CSV t,wifi_dbm,p2p_dbm (a row per inference; "
                        "--policy-option trace_by=time: by time); default /proc/net/wireless")
    parser.add_argument("--policy-option", action="append", metavar="KEY=VALUE",
                        help="with --policy (repeatable): lr, discount, epsilon, alpha, beta (override the policy "
                        "file's), seed, learn=0|1, persist=N, penalty, trace_by, mem_baseline=0|1, meter=0|1, "
                        "unseen=nearest|random, explore_within=X|all")
    return parser


def add_inspect_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The arguments of ``hetcc inspect`` (the caller sets ``func``)."""
    parser.epilog = ("The table's columns, per slice: its layers and their count, device and MHz, predicted latency "
                     "and energy, and transfer: the share of the slice's predicted latency spent moving its input "
                     "in and its output out (the tensors at its two cuts, between devices or sessions).")
    parser.add_argument("dir", help="the artifact directory hetcc compile wrote (-o)")
    parser.add_argument("--variant", metavar="NAME", help="show this variant only (default: all)")
    parser.add_argument("--model", metavar="NAME", help="workload artifact: show this model only (default: all)")
    parser.add_argument("--json", action="store_true", help="print the manifest as JSON")
    parser.add_argument("--costs", action="store_true", help="with --json: include costs.json")
    parser.add_argument("--plot", metavar="FILE", help="draw the schedule: a row per device, a bar per slice with "
                        "its frequency and energy, the deadline; .png, .svg, .pdf, .jpg or .html (needs matplotlib)")
    parser.add_argument("--why", action="store_true",
                        help="say why: the devices each layer cannot use and the reason, and for each slice the "
                        "best other device/frequency with its latency and energy difference (with --json: as JSON)")
    return parser


# ---------------------------------------------------------------- run
#: --duration's units, in seconds
_DURATION_UNITS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def duration_seconds(text: str) -> float:
    """An argparse ``type``: ``--duration`` (``10s``, ``500ms``, ``2m``, ``1.5h``) in seconds, above 0
    and at most DURATION_MAX_S; a bare number is refused (seconds or milliseconds?)."""
    body = text.strip().lower()
    unit = next((u for u in sorted(_DURATION_UNITS, key=len, reverse=True) if body.endswith(u)), None)
    number = body[:-len(unit)].strip() if unit else body
    try:
        value = float(number)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration; give a number and a unit (ms, s, m, h), "
                                         "e.g. 10s, 500ms or 2m") from None
    if unit is None:
        raise argparse.ArgumentTypeError(f"{text!r} has no unit; give e.g. {number}s or {number}ms")
    seconds = value * _DURATION_UNITS[unit]
    if not math.isfinite(seconds) or not 0 < seconds <= DURATION_MAX_S:
        raise argparse.ArgumentTypeError(f"{text!r} is out of range; give a duration above 0 and at most "
                                         f"{DURATION_MAX_S / 3600:g}h (e.g. 10s)")
    return seconds


def _input_args(specs: list[str] | None) -> dict[str, str]:
    """``--input NAME=FILE`` (repeatable) -> {NAME: FILE}; malformed or repeated names refused."""
    out: dict[str, str] = {}
    for spec in specs or ():
        name, sep, file = spec.partition("=")
        name = name.strip()
        if not sep or not name or not file:
            raise UsageError(f"malformed --input {spec!r}; expected NAME=path.npy")
        if name in out:
            raise UsageError(f"--input {name} is given twice ({out[name]!r} and {file!r}); give each input once")
        out[name] = file
    return out


def read_npy(name: str, file: str, spec: Any) -> Any:
    """The array of ``--input name=file`` for the input ``spec`` (a TensorSpec). The header is read
    and checked first: a regular .npy file (format 1.0 or 2.0), no Python objects (never
    unpickled), the input's dtype and shape, and a body of exactly shape x itemsize bytes, so
    a crafted header declaring 1e11 elements is refused without allocating anything."""
    import numpy as np

    fmt = np.lib.format
    where = f"--input {name}={file}"
    try:
        st = os.stat(file)
    except FileNotFoundError:
        raise UsageError(f"{where}: no such file; give the path of a .npy file (numpy.save)") from None
    except OSError as exc:
        raise UsageError(f"{where}: cannot read it ({exc.strerror}); give a readable .npy file") from None
    if stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{where}: is a directory; give a .npy file (numpy.save)")
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"{where}: not a regular file (a pipe or device); save the array with numpy.save")
    want = np.dtype(spec.dtype)
    wanted = f"input {name!r} is {want}{list(spec.shape)}"
    try:
        with open(file, "rb") as f:
            try:
                version = fmt.read_magic(f)
            except ValueError:
                raise UsageError(f"{where}: not a .npy file (no NumPy header); save the array with "
                                 "numpy.save") from None
            readers = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}
            if version not in readers:
                raise UsageError(f"{where}: .npy format version {version[0]}.{version[1]} is not supported; "
                                 "save the array with numpy.save")
            try:
                shape, fortran, dtype = readers[version](f)
            except (ValueError, SyntaxError, TypeError) as exc:
                raise UsageError(f"{where}: damaged .npy header ({' '.join(str(exc).split())}); save the array "
                                 "again with numpy.save") from None
            if dtype.hasobject:
                raise UsageError(f"{where}: holds Python objects (a pickle), which hetcc never loads; "
                                 f"save a numeric array ({wanted})")
            if dtype.newbyteorder("=") != want or dtype.fields is not None:
                raise UsageError(f"{where}: dtype {dtype}, but {wanted}; convert it, e.g. "
                                 f"numpy.save(path, a.astype('{want}'))")
            if tuple(shape) != tuple(spec.shape):
                raise UsageError(f"{where}: shape {list(shape)}, but {wanted}; save an array of that shape")
            need = math.prod(shape) * dtype.itemsize
            have = st.st_size - f.tell()
            if have != need:
                raise UsageError(f"{where}: the header declares {list(shape)} {dtype} ({need} bytes) but "
                                 f"{have} bytes follow it; the file is truncated or damaged, save it again")
            f.seek(0)
            value = fmt.read_array(f, allow_pickle=False)
    except OSError as exc:
        raise UsageError(f"{where}: cannot read it ({exc.strerror or exc}); give a readable .npy file") from None
    return np.ascontiguousarray(value, dtype=want)


def _read_inputs(given: dict[str, str], pipes: list) -> dict[str, Any]:
    """Every ``--input``, checked against the pipelines' inputs (unknown names refused)."""
    specs = {s.name: s for _, p in pipes for s in p.inputs}
    unknown = sorted(set(given) - set(specs))
    if unknown:
        raise UsageError(f"--input {unknown[0]}: no such input (inputs: {', '.join(sorted(specs))})")
    return {name: read_npy(name, file, specs[name]) for name, file in given.items()}


def _feeds(pipe: Any, inputs: dict[str, Any], seed: int, random_missing: bool, model: str | None) -> dict[str, Any]:
    """The feeds of one run: every input from ``inputs``; without ``--input`` all random
    (``seed``); inputs not given are an error unless ``random_missing``."""
    from hetcc.runtime import random_inputs

    missing = [s.name for s in pipe.inputs if s.name not in inputs]
    if inputs and missing and not random_missing:
        whose = f"model {model!r}: " if model is not None else ""
        raise UsageError(f"--input: {whose}input(s) {', '.join(map(repr, missing))} not given; add "
                         f"--input {missing[0]}=FILE.npy (one per input), or --random-missing to fill them "
                         "with random values")
    feeds = random_inputs(pipe.inputs, seed=seed)
    feeds.update({k: v for k, v in inputs.items() if k in feeds})
    return feeds


def _offload_args(args: argparse.Namespace) -> tuple[dict[str, str], dict[str, float]]:
    """``--endpoint NAME=URL`` and ``--rssi LINK=DBM`` (repeatable) as dicts, checked."""
    endpoints: dict[str, str] = {}
    for spec in getattr(args, "endpoint", None) or ():
        name, sep, url = spec.partition("=")
        name, url = name.strip(), url.strip()
        if not sep or not name or not url.lower().startswith(("http://", "https://")):
            raise UsageError(f"malformed --endpoint {spec!r}; expected NAME=http://host:port (the remote device's "
                             "hetcc serve)")
        endpoints[name] = url
    signal_dbm: dict[str, float] = {}
    for spec in getattr(args, "rssi", None) or ():
        link, sep, value = spec.partition("=")
        try:
            dbm = float(value)
        except ValueError:
            dbm = math.nan
        if not sep or not link.strip() or not math.isfinite(dbm) or not -150.0 <= dbm <= 0.0:
            raise UsageError(f"malformed --rssi {spec!r}; expected LINK=DBM with DBM from -150 to 0 (e.g. wifi=-85)")
        signal_dbm[link.strip()] = dbm
    return endpoints, signal_dbm


def _timed_runs(args: argparse.Namespace) -> tuple[int | None, float | None]:
    """(repeat, duration_s) of ``hetcc run``: --duration, else --repeat (default REPEAT_DEFAULT);
    both given is refused."""
    repeat, duration = getattr(args, "repeat", None), getattr(args, "duration", None)
    if repeat is not None and duration is not None:
        raise UsageError("--repeat and --duration both given; time a number of runs (--repeat N) or a span of "
                         "time (--duration 10s), not both")
    return (None, duration) if duration is not None else (repeat or REPEAT_DEFAULT, None)


#: --verify's tolerance for a low-precision variant (AutoScale's FP16/INT8) when --rtol is not given: its
#: outputs differ from the FP32 model by construction; at least this, and 5x the relative error measured
#: at compile time (the manifest's agreement)
PRECISION_RTOL = {"float16": 1e-2, "int8": 5e-2}


def _rtol(args: argparse.Namespace, pipe: Any) -> float:
    """--rtol, or for a low-precision variant with the default --rtol its own (``PRECISION_RTOL``)."""
    variant = getattr(pipe, "variant", None)
    precision = getattr(variant, "precision", "float32")
    if args.rtol != 1e-4 or precision not in PRECISION_RTOL:
        return args.rtol
    agreement = getattr(variant, "agreement", None)
    return min(1.0, max(PRECISION_RTOL[precision], 5 * agreement.rel_error if agreement is not None else 0.0))


def _run_one(pipe: Any, feeds: dict[str, Any], args: argparse.Namespace, given: bool) -> dict[str, Any]:
    from hetcc.runtime import verify

    warmup = getattr(args, "warmup", 0)
    repeat, duration = _timed_runs(args)
    # with --duration, Ctrl-C ends the timed runs and what was measured is reported
    bench = pipe.benchmark(feeds, repeat=repeat, duration_s=duration, warmup=warmup,
                           interruptible=duration is not None)
    report = None
    if args.verify and bench.stopped != "interrupted":
        # without --input the run's feeds are seed's random inputs; verify makes the same ones
        report = verify(pipe, feeds=feeds if given else None, reference_path=args.reference, rtol=_rtol(args, pipe),
                        seed=args.seed, inputs=getattr(args, "verify_inputs", 1),
                        feeds_label="the --input files" + (f" (others seed {args.seed})" if args.random_missing
                                                           else ""))
    return {"pipe": pipe, "bench": bench, "repeat": repeat, "total_ms_median": bench.percentile(50),
            "slices_ms_median": bench.slice_percentile(50), "runs": bench.runs, "warmup": warmup, "report": report,
            "outputs": bench.outputs, "saved": None}


def _latency(b: Any) -> dict[str, float]:
    """The timed runs' latency in ms: p50 (the median), p90, p99, mean, min, max."""
    return {"p50": b.percentile(50), "p90": b.percentile(90), "p99": b.percentile(99), "mean": b.mean_ms,
            "min": float(b.total_ms.min()), "max": float(b.total_ms.max())}


def _run_json(r: dict[str, Any]) -> dict[str, Any]:
    pipe, report, b = r["pipe"], r["report"], r["bench"]
    slices = [{"id": s.id, "device": s.device, "provider": prov, "p50_ms": p50, "mean_ms": mean,
               "predicted_ms": s.predicted.latency_ms}
              for s, prov, p50, mean in zip(pipe.slices, pipe.providers, b.slice_percentile(50), b.slice_mean_ms)]
    return {"variant": pipe.name, "total_ms_median": r["total_ms_median"], "slices_ms_median": r["slices_ms_median"],
            "providers": list(pipe.providers), "repeat": r["repeat"], "duration_s": b.duration_s,
            "warmup": r["warmup"], "runs": b.runs, "stopped": b.stopped, "timed_s": b.wall_s,
            "latency_ms": _latency(b), "throughput_per_s": b.throughput,
            "predicted_ms": pipe.variant.predicted.latency_ms, "slices": slices,
            "saved_outputs": r["saved"],
            **({"offloads": [o.to_json() for o in pipe.last_offloads], "fallbacks": pipe.fallbacks}
               if pipe.offloaded else {}),
            "verify": None if report is None else {"ok": report.ok, "rtol": report.rtol, "inputs": list(report.inputs),
                                                   "outputs": [o.__dict__ for o in report.outputs]}}


def _print_run(console: Any, r: dict[str, Any], rtol: float, title: str | None) -> None:
    pipe, report = r["pipe"], r["report"]
    if title:
        console.print(f"[bold]{shown(title)}[/bold]")
    b = r["bench"]
    table = make_table(console, ["slice", "device", "provider", "p50 ms", "mean ms", "predicted ms"],
                       {"device", "provider"})
    fell_back = {f["slice"] for f in pipe.fallbacks}
    for s, p50, mean, prov in zip(pipe.slices, b.slice_percentile(50), b.slice_mean_ms, pipe.providers):
        offloaded = s.id in pipe.offloaded
        device = (f"{s.device} (remote, run here)" if s.remote and (not offloaded or s.id in fell_back)
                  else f"{s.device} (remote)" if s.remote else s.device)
        table.add_row(str(s.id), device, prov, f"{p50:.3f}", f"{mean:.3f}", fmt(s.predicted.latency_ms))
    console.print(table)
    lat = _latency(b)
    warm = f" after {r['warmup']} warm-up run(s)" if r["warmup"] else " (no warm-up: the first run is slower)"
    predicted = pipe.variant.predicted.latency_ms
    console.print(f"total: p50 {lat['p50']:.3f} ms, p90 {lat['p90']:.3f} ms, p99 {lat['p99']:.3f} ms, mean "
                  f"{lat['mean']:.3f} ms" + (f" (predicted {predicted:.2f} ms)" if predicted is not None else "")
                  + f" over {b.runs} run(s){warm}")
    why = ("" if b.stopped == "repeat" else ", interrupted" if b.stopped == "interrupted"
           else f", --duration {b.duration_s:g} s" if b.stopped == "duration"
           else f", stopped at {b.runs} runs before --duration {b.duration_s:g} s")
    rate = "-" if b.throughput is None else f"{b.throughput:.1f}"
    console.print(f"throughput: {rate} inferences/s ({b.runs} run(s) in {b.wall_s:.3f} s{why})")
    for o in pipe.last_offloads:
        shaped = f", shaped as {o.link} at {o.signal_dbm:g} dBm" if o.signal_dbm is not None else ""
        server = f", server {o.server_ms:.1f} ms" if o.server_ms is not None else ""
        console.print(f"offload: slice {o.slice} ({o.device}) to {o.endpoint}: send {o.t_tx_ms:.1f} ms "
                      f"({o.bytes_sent} B), wait {o.wait_ms:.1f} ms{server}, receive {o.t_rx_ms:.1f} ms "
                      f"({o.bytes_received} B){shaped} (last run)", markup=False)
    for f in pipe.fallbacks:
        console.print(f"fallback: slice {f['slice']} ({f['device']}) ran here in {f['runs']} run(s): {f['reason']}",
                      markup=False)
    if r["saved"]:
        where = os.path.dirname(next(iter(r["saved"].values())))
        console.print(f"outputs: {len(r['saved'])} file(s) in {where}: "
                      + ", ".join(f"{n} -> {os.path.basename(f)}" for n, f in r["saved"].items()), markup=False)
    if report is not None:
        sets = len(report.inputs)
        for o in report.outputs:
            worst = f", worst of {sets} input sets: {o.input}" if sets > 1 else ""
            console.print(f"verify {o.name}: max |diff| {o.max_abs_diff:.3g}, relative {o.rel_diff:.3g} "
                          f"{'ok' if o.ok else 'MISMATCH'} (rtol {rtol:g}{worst})", markup=False)
        console.print(f"verify: outputs match the unsliced model on {sets} input set(s)" if report.ok
                      else "verify: FAILED")


def _print_hardware(console: Any, reports: list, restored: Any, keep: bool) -> None:
    for r in reports:
        title = f" (variant {r.variant})" if r.variant else ""
        console.print(f"hardware{title}" + (f", under {r.root}" if r.root not in ("", "/") else "") + ":")
        for line in r.lines():
            console.print(f"  {line}", markup=False)
    if keep:
        console.print("hardware: left as set (--keep-hardware)")
    elif restored is not None and restored.settings:
        bad = restored.skipped
        console.print(f"hardware: restored {len(restored.settings) - len(bad)} setting(s)"
                      + (f"; could not restore {len(bad)}: " + "; ".join(f"{s.what}: {s.reason}" for s in bad)
                         if bad else ""), markup=False)


def cmd_run(args: argparse.Namespace) -> int:
    """``hetcc run DIR``: run (and with --verify check) a model artifact's variant or a workload's models."""
    from hetcc.runtime import Executor

    if getattr(args, "concurrent", False) or getattr(args, "sharing", None) is not None or \
            getattr(args, "rounds", None) is not None:
        from hetcc.cli.concurrent import cmd_run_concurrent

        return cmd_run_concurrent(args)
    variant = getattr(args, "variant", None)
    model = getattr(args, "model", None)
    _timed_runs(args)          # --repeat with --duration: refused before anything is read
    given = _input_args(args.input)
    save_dir = _save_dir(args.save_outputs) if getattr(args, "save_outputs", None) is not None else None
    if getattr(args, "policy", False):
        from hetcc.cli.run_policy import cmd_run_policy

        endpoints, signal_dbm = _offload_args(args)
        if signal_dbm:
            raise UsageError("--rssi with --policy: give the signal strengths the policy observes as a trace "
                             "(--trace FILE.csv, columns t,wifi_dbm,p2p_dbm)")
        return cmd_run_policy(args, lambda pipe: _feeds(pipe, _read_inputs(given, [(None, pipe)]), args.seed,
                                                        args.random_missing, None),
                              None if save_dir is None else lambda outputs: save_outputs(outputs, save_dir),
                              {"endpoints": endpoints, "token": getattr(args, "token", None)})
    if getattr(args, "trace", None) is not None or getattr(args, "policy_option", None):
        raise UsageError("--trace and --policy-option go with --policy")
    apply_hw = getattr(args, "apply_hardware", False)
    keep = apply_hw and getattr(args, "keep_hardware", False)
    endpoints, signal_dbm = _offload_args(args)
    try:
        ex = Executor(args.dir, strict_providers=args.strict_providers,
                      local_fallback=getattr(args, "local_fallback", False), variant=variant,
                      apply_hardware=apply_hw, sysfs_root=getattr(args, "sysfs_root", "/"), restore_hardware=not keep,
                      timeout=getattr(args, "timeout", None), endpoints=endpoints, token=getattr(args, "token", None),
                      signal_dbm=signal_dbm)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        results = _run_all(ex, args, given, model)
    finally:
        restored = ex.close()
    interrupted = results[-1][1]["bench"].stopped == "interrupted"
    if save_dir is not None and not interrupted:
        for n, r in results:
            r["saved"] = save_outputs(r["outputs"], save_dir if n is None else save_dir / safe_file_name(n))
    failed = any(r["report"] is not None and not r["report"].ok for _, r in results)
    if args.json:
        if ex.kind == "workload":
            doc: dict[str, Any] = {"models": {n: _run_json(r) for n, r in results}}
        else:
            doc = _run_json(results[0][1])
        if apply_hw:
            doc["hardware"] = {"applied": [r.to_json() for r in ex.hardware_reports], "kept": keep,
                               "restored": None if restored is None else restored.to_json()}
        print(json_text(doc))
    else:
        console = make_console()
        if apply_hw:
            _print_hardware(console, ex.hardware_reports, restored, keep)
        for n, r in results:
            title = f"model {n} ({r['pipe'].name})" if n is not None else (
                f"variant {r['pipe'].name}" if len(ex.variants) > 1 else None)
            _print_run(console, r, r["report"].rtol if r["report"] is not None else args.rtol, title)
        if ex.kind == "workload" and args.verify and not interrupted:
            bad = [n for n, r in results if not r["report"].ok]
            console.print(f"verify: all {len(results)} model(s) match" if not bad
                          else f"verify: FAILED for {', '.join(bad)}")
    if interrupted:            # reported above; the caller prints "hetcc: interrupted" (exit 130)
        raise KeyboardInterrupt
    if failed:
        print(f"hetcc: error: {_verify_failure(results)}", file=sys.stderr)
    return VERIFY_FAILED if failed else 0


def safe_file_name(name: str, taken: set[str] | None = None) -> str:
    """``name`` as one file name: letters, digits, ``_ . -`` kept, anything else (``/``, ``:``,
    spaces, control characters) as ``_``; no leading dot, at most 120 characters; a name already
    in ``taken`` (compared case-insensitively, for case-insensitive file systems) gets ``-2``, ``-3``..."""
    base = "".join(c if c.isascii() and (c.isalnum() or c in "_.-") else "_" for c in name)[:120].lstrip(".")
    base = base or "output"
    if taken is None:
        return base
    out, k = base, 2
    while out.lower() in taken:
        out, k = f"{base}-{k}", k + 1
    taken.add(out.lower())
    return out


def _save_dir(text: str) -> Path:
    """The --save-outputs directory, checked before anything runs: an existing directory, or a
    name whose parent directory exists (created after the run); any other existing thing refused."""
    path = Path(text)
    if not text.strip():
        raise UsageError("--save-outputs: give a directory, e.g. --save-outputs outputs/")
    if path.exists() or path.is_symlink():
        if not path.is_dir():
            raise UsageError(f"--save-outputs {text}: exists and is not a directory; name a directory (it is "
                             "created if missing)")
        return path
    if not path.parent.is_dir():
        raise UsageError(f"--save-outputs {text}: no directory {str(path.parent)!r}; create it first or name "
                         "another directory")
    return path


def save_outputs(outputs: dict[str, Any], directory: Path) -> dict[str, str]:
    """Write every output to ``directory/NAME.npy`` (safe file names, each file written whole or
    not at all); returns {output name: file written}."""
    import numpy as np

    from hetcc.files.atomic import check_replaceable_file, write_file

    taken: set[str] = set()
    files = {name: directory / (safe_file_name(name, taken) + ".npy") for name in outputs}
    for path in files.values():
        check_replaceable_file(path, "--save-outputs")
    for name, path in files.items():
        buf = io.BytesIO()
        np.save(buf, np.asarray(outputs[name]), allow_pickle=False)
        write_file(path, buf.getvalue(), "--save-outputs", "name a writable directory")
    return {name: str(path) for name, path in files.items()}


def _verify_failure(results: list) -> str:
    """One line for a failed --verify: the first differing output, by how much, on which input."""
    n, r = next((n, r) for n, r in results if r["report"] is not None and not r["report"].ok)
    report = r["report"]
    o = next(o for o in report.outputs if not o.ok)
    whose = f"model {n!r}: " if n is not None else ""
    how = ("has another shape than the unsliced model's" if o.rel_diff == float("inf") and o.max_abs_diff == float("inf")
           else f"differs from the unsliced model by {o.rel_diff:.3g} relative (rtol {report.rtol:g})")
    return (f"verify: {whose}output {o.name!r} {how} on input {o.input}; the sliced artifact is wrong for that "
            "input: recompile (another --planner, or --max-cut-tensors 1) and report it if it persists")


def _run_all(ex: Any, args: argparse.Namespace, given: dict[str, str], model: str | None) -> list:
    if ex.kind == "workload":
        names = [model] if model is not None else list(ex.models)
        for n in names:
            ex.model_executor(n)  # unknown --model: one-line error naming the models
        if args.reference and len(names) > 1:
            raise UsageError("--reference: a workload has several models; pick one with --model")
        pipes = [(n, ex.pipeline(model=n)) for n in names]
    else:
        pipes = [(None, ex.pipeline(model=model))]
    inputs = _read_inputs(given, pipes)
    feeds = [(n, p, _feeds(p, inputs, args.seed, args.random_missing, n)) for n, p in pipes]  # all checked first
    results = []
    for n, p, f in feeds:
        results.append((n, _run_one(p, f, args, bool(given))))
        if results[-1][1]["bench"].stopped == "interrupted":
            break               # Ctrl-C during --duration: the models so far are reported, the rest not run
    return results


# ---------------------------------------------------------------- inspect
def _costs(root: Path, why: bool = False) -> dict | None:
    """The artifact's ``costs.json`` (None when it has none); one-line ManifestError when it is a
    symlink out of the artifact, not a regular file, or not JSON."""
    from hetcc.runtime.errors import ManifestError
    from hetcc.runtime.manifest import COSTS_NAME, artifact_file, check_costs, read_json

    shown = str(root / COSTS_NAME)
    path = artifact_file(root, COSTS_NAME, shown)  # never follow a symlink out of the artifact
    if not path.exists():
        return None
    if not path.is_file():
        raise ManifestError(f"{shown}: not a regular file; the artifact is damaged, recompile")
    doc = read_json(path, shown)
    check_costs(doc, shown)               # an object whose layers inspect can read, or one line
    if why:                               # and every table --why reads, in its shape
        from hetcc.compiler.why import check_costs_for_why

        check_costs_for_why(doc, shown)
    return doc


def _why(root: Path, costs: dict | None) -> tuple[dict | None, str]:
    """The artifact's ``why.json`` if it belongs to its ``costs.json`` (else None), and a note
    saying why it is not shown; a damaged one is a one-line ManifestError."""
    from hetcc.runtime.errors import ManifestError
    from hetcc.runtime.manifest import COSTS_NAME, artifact_file, read_json, sha256_file
    from hetcc.compiler.why import WHY_NAME, check_why

    shown = str(root / WHY_NAME)
    path = artifact_file(root, WHY_NAME, shown)
    if not path.exists():
        return None, f"no {WHY_NAME} in this artifact (compiled by an older hetcc): the reasons come from the " \
                     "cost tables only; recompile to see every reason"
    if not path.is_file():
        raise ManifestError(f"{shown}: not a regular file; the artifact is damaged, recompile")
    doc = check_why(read_json(path, shown), shown)
    if costs is None or doc["costs_sha256"] != sha256_file(root / COSTS_NAME):
        return None, f"{WHY_NAME} is from another compile than costs.json and is ignored; recompile"
    return doc, ""


def _print_why_layers(console: Any, costs: dict, why: dict | None, note: str) -> None:
    _print_why_blocked(console, costs, why, note)
    _print_why_rewrites(console, why)


def _print_why_rewrites(console: Any, why: dict | None) -> None:
    """The canonical pass's rewrites recorded in ``why.json`` (nothing when there are none)."""
    from hetcc.compiler.why import rewrite_lines

    lines = rewrite_lines(why)
    if lines:
        console.print("[bold]rewritten into the form the devices list[/bold] (hetcc's canonical pass; "
                      "run --verify compares with the source model):")
        for line in lines:
            console.print(f"  {line}", markup=False)


def _print_why_blocked(console: Any, costs: dict, why: dict | None, note: str) -> None:
    from hetcc.compiler.why import layer_runs

    runs = [r for r in layer_runs(costs, why) if r.blocked]
    console.print("[bold]why not other devices[/bold] (layers as in costs.json):")
    if note:
        console.print(f"  note: {note}", markup=False)
    if not runs:
        console.print("  every layer can run on every device")
        return
    table = make_table(console, ["layers", "device", "why not"], {"layers", "device", "why not"})
    for r in runs:
        span = f"L{r.first}" if r.first == r.last else f"L{r.first}-L{r.last}"
        for k, (device, reason) in enumerate(r.blocked):
            table.add_row(span if k == 0 else "", device, reason)
    console.print(table)
    rest = len(costs["layers"]) - sum(r.last - r.first + 1 for r in runs)
    if rest:
        console.print(f"  the other {rest} layer(s) can run on every device")


def _signed(x: float | None) -> str:
    """A difference with its sign, three significant digits (+1.56, -0.000412)."""
    return "-" if x is None else f"{x:+.3g}"


def _print_why_slices(console: Any, v: Any, costs: dict) -> None:
    from hetcc.compiler.why import next_best, slice_alternatives

    alts = slice_alternatives(v, costs)
    limits = v.objective.deadline_ms is not None or v.objective.power_cap_mw is not None
    table = make_table(console, ["slice", "layers", "planned", "best other", "others", "Δ latency ms", "Δ energy mJ",
                             "plan would be"] + (["limits"] if limits else []),
                   {"layers", "planned", "best other", "plan would be", "limits"})
    for a in alts:
        b = a.best
        if b is None:
            table.add_row(str(a.slice_id), f"L{a.first_layer}-L{a.last_layer}", a.planned, a.note, "0", "-", "-", "-",
                          *([""] if limits else []))
            continue
        then = f"{b.latency_ms:.2f} ms" + (f", {b.energy_mj:.2f} mJ" if b.energy_mj is not None else "")
        ok = [w for w, flag in (("deadline", b.meets_deadline), ("power cap", b.within_power_cap)) if flag is False]
        table.add_row(str(a.slice_id), f"L{a.first_layer}-L{a.last_layer}", a.planned, b.state,
                      str(a.legal_alternatives), _signed(b.d_latency_ms), _signed(b.d_energy_mj), then,
                      *([("MISSES " + " and ".join(ok)) if ok else "met"] if limits else []))
    console.print("  next best per slice (only that slice moved; Δ against the plan):")
    console.print(table)
    best = next_best(v, alts)
    if best is not None:
        b = best.best
        console.print(f"  next-best plan: slice {best.slice_id} (L{best.first_layer}-L{best.last_layer}) on {b.state} "
                      f"instead of {best.planned}: {_signed(b.d_latency_ms)} ms"
                      + (f", {_signed(b.d_energy_mj)} mJ" if b.d_energy_mj is not None else "")
                      + ("" if b.meets_deadline is None else
                         ", still meets the deadline" if b.meets_deadline else ", MISSES the deadline"), markup=False)


def _print_variant(console: Any, name: str, v: Any, costs: dict | None, *, default: bool, many: bool,
                   why: bool = False, timed: float | None = None) -> None:
    obj, planner = v.objective, v.planner
    limits = ""
    if obj.deadline_ms is not None:
        spec = f" ({obj.deadline_spec})" if obj.deadline_spec else ""
        limits += f", deadline {obj.deadline_ms:g} ms{spec}"
    if obj.power_cap_mw is not None:
        limits += f", power cap {obj.power_cap_mw / 1e3:g} W"
    head = f"variant [bold]{name}[/bold]{' (default)' if default else ''}: " if many else ""
    console.print(f"{head}objective {obj.metric}{limits}; planner {planner.name}{took(planner, timed)}")
    if v.hardware:
        console.print("  hardware: " + ", ".join(f"{k}={val}" for k, val in v.hardware.items()))
    if getattr(v, "precision", "float32") != "float32":
        ag = v.agreement
        console.print(f"  precision {v.precision}" + (f": agreement with FP32 top-1 {ag.top1:.1%}, mean relative "
                                                      f"error {ag.rel_error:.3g} ({ag.inputs} seeded inputs)"
                                                      if ag is not None else ""))
    if not v.feasible:
        console.print("  [bold]INFEASIBLE[/bold]: " + ("; ".join(v.violations) or "(no reason recorded)"))
    table = make_table(console, ["slice", "layers", "#", "device", "MHz", "latency ms", "energy mJ", "transfer", "ops"],
                   {"device", "ops", "layers"})
    for s in v.slices:
        p = s.predicted
        ops = ""
        if costs:
            names = sorted({op for l in costs["layers"][s.first_layer:s.last_layer + 1] for op in l["op_types"]})
            ops = ",".join(names[:5]) + ("…" if len(names) > 5 else "")
        share = p.transfer_ms / p.latency_ms if p.latency_ms else 0.0
        device = s.device + (f" via {s.link}" + (f" ({s.endpoint})" if s.endpoint else "") if s.remote else "")
        table.add_row(str(s.id), f"L{s.first_layer}-L{s.last_layer}", str(s.last_layer - s.first_layer + 1),
                      device, fmt(s.frequency_mhz, 0) if s.frequency_mhz else "-",
                      fmt(p.latency_ms), fmt(p.energy_mj), f"{share:.0%}", ops)
    console.print(table)
    pr = v.predicted
    line = f"total: {fmt(pr.latency_ms)} ms"
    if pr.energy_mj is not None:
        line += f", {fmt(pr.energy_mj)} mJ, EDP {fmt(pr.edp_mj_ms, 1)} mJ·ms"
    if pr.meets_deadline is not None:
        line += ", meets deadline" if pr.meets_deadline else ", MISSES deadline"
    console.print(line)
    if why and costs is not None:
        _print_why_slices(console, v, costs)


def _timed(root: Path, name: str) -> float | None:
    from hetcc.runtime.manifest import read_timings

    return (read_timings(root) or {}).get(name)


def _print_model(console: Any, m: Any, root: Path, variant: str | None, title: str | None = None,
                 why: bool = False) -> None:
    from hetcc.runtime.manifest import read_timings

    costs = _costs(root, why)
    timed = read_timings(root) or {}   # timings.json: only with compile --timings
    names = [variant] if variant is not None else list(m.variants)
    for n in names:
        m.variant(n)  # unknown --variant: one-line error naming the variants
    if m.policy is not None and variant is None and not why:   # a run-time policy's variants: a line each
        _print_policy_variants(console, m, title)
        return
    console.print(f"[bold]{shown(title or m.model.name)}[/bold] for {shown(m.target.name)} ({m.target.kind})"
                  + (f"; {len(m.variants)} variants: {shown(', '.join(m.variants))}" if len(m.variants) > 1 else "")
                  + (f"; policy {shown(m.policy.file)}" if m.policy else ""))
    for n in names:
        _print_variant(console, n, m.variants[n], costs, default=n == m.default_variant, many=len(m.variants) > 1,
                       why=why, timed=timed.get(n))
    if why:
        if costs is None:
            console.print("why: this artifact has no costs.json; recompile to see why")
        else:
            _print_why_layers(console, costs, *_why(root, costs))


def _print_policy_variants(console: Any, m: Any, title: str | None) -> None:
    """An artifact with a run-time policy (AutoScale: one whole-model variant per action): one line
    per variant (device, MHz, precision, predicted latency and energy, agreement with FP32);
    ``--variant NAME`` shows one variant's slices."""
    first = next(iter(m.variants.values()))
    obj = first.objective
    qos = f", QoS target {obj.deadline_ms:g} ms" if obj.deadline_ms is not None else ""
    console.print(f"[bold]{shown(title or m.model.name)}[/bold] for {shown(m.target.name)} ({m.target.kind}): "
                  f"{len(m.variants)} variants, policy {shown(m.policy.file)}; objective {obj.metric}{qos}; "
                  f"planner {first.planner.name}; default {shown(m.default_variant)}")
    table = make_table(console, ["variant", "device", "MHz", "precision", "latency ms", "energy mJ", "agreement",
                                 "QoS"], {"variant", "device", "precision", "agreement"})
    for name, v in m.variants.items():
        s = v.slices[0]
        devices = sorted({x.device for x in v.slices})
        device = ",".join(devices) + (f" via {s.link}" if s.remote else "")
        ag = v.agreement
        agreement = f"top-1 {ag.top1:.0%}, err {ag.rel_error:.2g}" if ag is not None else "-"
        meets = v.predicted.meets_deadline
        table.add_row(shown(name) + (" *" if name == m.default_variant else ""), shown(device),
                      fmt(s.frequency_mhz, 0) if s.frequency_mhz and len(v.slices) == 1 else "-",
                      getattr(v, "precision", "float32"), fmt(v.predicted.latency_ms), fmt(v.predicted.energy_mj),
                      agreement, "-" if meets is None else "meets" if meets else "MISSES")
    console.print(table)
    console.print("* the default variant (run without a policy); predicted latency includes a remote variant's link "
                  "at its default signal; hetcc inspect DIR --variant NAME shows one variant's slices")


def _why_json(m: Any, root: Path, variant: str | None) -> dict[str, Any]:
    from hetcc.compiler.why import why_report

    costs = _costs(root, True)
    names = [variant] if variant is not None else list(m.variants)
    for n in names:
        m.variant(n)  # unknown --variant: one-line error naming the variants
    doc, note = _why(root, costs) if costs is not None else (None, "")
    out = why_report(m, costs, doc, names)
    if note:
        out["note"] = note
    return out


def cmd_inspect(args: argparse.Namespace) -> int:
    """``hetcc inspect DIR``: which layers run where, at what frequency, predicted cost; for
    every variant of a model artifact and every model of a workload."""
    from hetcc.runtime.manifest import artifact_root, load_manifest

    if getattr(args, "costs", False) and not args.json:
        raise UsageError("--costs adds costs.json to the --json output; add --json, or drop --costs "
                         "(the table already shows each slice's predicted cost)")
    if args.plot is not None:
        from hetcc.cli.plot import plot_path, plot_schedule

        plot_path(args.plot)   # a bad --plot is refused before anything is read
    root = artifact_root(args.dir)
    manifest = load_manifest(args.dir)
    variant = getattr(args, "variant", None)
    model = getattr(args, "model", None)
    subs: list[tuple[str, Path, Any]] = []
    if manifest.kind == "workload":
        if variant is not None and model is None:
            raise UsageError("--variant: a workload artifact has no variants of its own; add --model NAME")
        wanted = [model] if model is not None else list(manifest.model_names)
        by_name = {w.name: w for w in manifest.workload.models}
        for n in wanted:
            if n not in by_name:
                raise UsageError(f"--model {n}: no such model (models: {', '.join(by_name)})")
            sub_root = root / by_name[n].dir
            subs.append((n, sub_root, load_manifest(sub_root)))
    elif model is not None and model != manifest.model.name:
        raise UsageError(f"--model: not a workload artifact; its one model is {manifest.model.name!r}")
    if args.plot is not None:
        plot = plot_path(args.plot)
        if manifest.kind == "workload" and manifest.workload.contention is not None and model is None:
            from hetcc.cli.plot import plot_contention

            plot_contention(manifest, plot)     # a row per device, each model a colour
        elif manifest.kind == "workload":
            if len(subs) != 1:
                raise UsageError("--plot: a workload has several models; pick one with --model")
            plot_schedule(subs[0][2], plot, variant)
        else:
            plot_schedule(manifest, plot, variant)
        print(f"hetcc: wrote the plot {plot}", file=sys.stderr)     # stderr: --json's stdout stays JSON
    why = getattr(args, "why", False)
    if args.json and why:
        if manifest.kind == "workload":
            print(json_text({"models": {n: _why_json(m, r, variant) for n, r, m in subs}}))
        else:
            print(json_text(_why_json(manifest, root, variant)))
        return 0
    if args.json:
        if manifest.kind == "workload":
            doc: dict[str, Any] = {"manifest": manifest.to_json(),
                                   "models": {n: (m.to_json() if not args.costs else
                                                  {"manifest": m.to_json(), "costs": _costs(r)})
                                              for n, r, m in subs}}
            print(json_text(doc))
        else:
            doc = manifest.to_json()
            print(json_text({"manifest": doc, "costs": _costs(root)} if args.costs else doc))
        return 0
    console = make_console()
    if manifest.kind == "workload":
        w = manifest.workload
        obj = w.objective
        console.print(f"[bold]workload[/bold] of {len(w.models)} models for {shown(manifest.target.name)} "
                      f"({manifest.target.kind}), objective {obj.metric}"
                      + (f", deadline {obj.deadline_ms:g} ms" if obj.deadline_ms is not None else "")
                      + (f", power cap {obj.power_cap_mw / 1e3:g} W" if obj.power_cap_mw is not None else "")
                      + f"; planner {w.planner.name}{took(w.planner, _timed(root, 'workload'))}")
        if not w.feasible:
            console.print("  [bold]INFEASIBLE[/bold]: " + ("; ".join(w.violations) or "(no reason recorded)"))
        agent = w.planner.stats.get("agent") if isinstance(w.planner.stats, dict) else None
        if isinstance(agent, dict):          # a learning planner's agent: which file planned it
            console.print(f"  agent {agent.get('file')} (sha256 {str(agent.get('sha256', '?'))[:12]}…"
                          + (f", trained on {agent['target']}" if agent.get("target") else "")
                          + (f", {agent['steps']} steps" if agent.get("steps") else "") + ")", highlight=False)
        if w.contention is not None:
            from hetcc.cli.contention_view import print_contention

            print_contention(console, w.contention)
        for n, sub_root, m in subs:
            console.print("")
            _print_model(console, m, sub_root, variant, title=f"model {n}", why=why)
        return 0
    _print_model(console, manifest, root, variant, why=why)
    return 0
