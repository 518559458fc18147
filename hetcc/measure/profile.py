"""``hetcc profile MODEL --target host -o FILE.csv``: measure a model on this machine, as
MOSAIC's inference workload profiler does, and write the measurements as observations
(``hetcc.observations/1``) for ``hetcc calibrate`` and ``--target FILE.csv``.

Why a command of its own (``hetcc compile --target host`` profiles too, into a private cache):
the numbers become a file a person can read, keep beside a paper's, and fit a model to. What is
measured is what the compiler plans with: the model is loaded and layered as ``hetcc compile``
loads it (same passes, so layer N means the same layer), each layer run alone in its own
onnxruntime session (a one-layer slice: its cost, the session's fixed cost and its boundary
tensors; ``hetcc.profiler``) and the whole model in one session, timed in rounds (every session
once per round: a burst of load from other programs touches a few runs of each, and the least
run of each, which is what a measurement keeps, escapes it), at each CPU frequency the OS
lets it set (``hetcc.power.CpuFrequency``; the settings are put back afterwards, also on
Ctrl-C or SIGTERM), with the power a meter reads where one exists (``hetcc.power``).

With two or more frequencies each layer's ``T = theta/f + rho`` (MOSAIC Eq. 3) is fitted
through the lowest and highest (``hetcc.costmodel.fit_theta_rho``) and written as comment
lines of the file (``# hetcc.profile theta_rho layer=N theta_ms_mhz=X rho_ms=Y``), beside two
more a reader may use: the layering (``layers=L max_cut_tensors=K layering=FP``, checked by
``--target FILE.csv``) and this machine's session-boundary cost (``boundary_delta_ms``,
``boundary_beta_ms_per_mb``: how ``--target FILE.csv`` splits a layer's time into compute and
transfer, as the compile's own profile does). docs/profiling.md has the details.
"""
from __future__ import annotations

import argparse
import atexit
import datetime as _dt
import os
import platform
import re
import sys
from pathlib import Path
from typing import Any, Sequence

from .cli_artifact import int_in
from .errors import UsageError
from .limits import SEED_MAX

#: --repeats: timed runs per measurement (the least is kept: ``profiler.typical``)
REPEATS_MAX = 10_000
#: the prefix of the machine-readable comment lines (``parse_profile_comments`` reads them)
COMMENT_TAG = "hetcc.profile"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="an .onnx file or a zoo name (hetcc zoo list)")
    p.add_argument("--target", "-t", default="host",
                   help="the measured board: host (this machine's CPU, the default) or a measured .toml with one cpu device")
    p.add_argument("-o", "--output", required=True, metavar="FILE.csv", help="the observations file to write")
    p.add_argument("--freqs", default="minmax", metavar="all|minmax|current|MHZ,...",
                   help="CPU frequencies to profile at: every level cpufreq offers, its lowest and highest "
                        "(MOSAIC's two; the default), the current one only, or a list in MHz")
    p.add_argument("--repeats", type=int_in(1, REPEATS_MAX), default=None, metavar="N",
                   help=f"timed runs per measurement, 1 to {REPEATS_MAX} (the least is kept; default adaptive: "
                        "at least 5 runs and 50 ms, at most 200)")
    p.add_argument("--threads", type=int_in(1, 1024), default=None, metavar="N",
                   help="onnxruntime intra-op threads (default: the runtime's, one per core)")
    p.add_argument("--layers", action="store_true", help="print the per-layer table (ms per frequency, theta/rho)")
    p.add_argument("--input-shape", action="append", metavar="NAME=1x3x224x224", help="fix a dynamic input shape")
    p.add_argument("--max-cut-tensors", type=int_in(1, 1024), default=1, metavar="K",
                   help="as hetcc compile's (layer N must mean the same layer): tensors a cut may carry (default 1)")
    p.add_argument("--seed", type=int_in(0, SEED_MAX), default=0, help="seed of a zoo model's random weights")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines")


def _note(text: str) -> None:
    print(f"hetcc: {text}", file=sys.stderr, flush=True)


def _check_output(path: Path) -> None:
    """Refuse an output that cannot be written before minutes of profiling, not after."""
    from .fsutil import check_replaceable_file

    if not str(path).strip():
        raise UsageError("-o '': give a file name, e.g. -o measurements.csv")
    check_replaceable_file(path, "-o")
    parent = path.parent
    if not parent.is_dir():
        raise UsageError(f"-o {path}: the directory {parent} does not exist; create it or choose another path")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"-o {path}: the directory {parent} is not writable; choose another path")


def _check_target(target: Any) -> None:
    cpus = [d for d in target.devices if d.execution_provider == "CPUExecutionProvider"]
    if target.kind != "measured" or len(target.devices) != 1 or not cpus:
        raise UsageError(f"hetcc profile measures this machine's CPU: target {target.name!r} is {target.kind} "
                         f"with {len(target.devices)} device(s); use --target host (a modelled board is fitted "
                         "to measurements with hetcc calibrate)")


def load_program(model: str, target: Any, *, input_shapes: Any = None, max_cut_tensors: int = 1, seed: int = 0,
                 progress: Any = None) -> Any:
    """The model loaded and layered exactly as ``hetcc compile`` does (every analysis pass but
    the costs, which is what this command measures)."""
    from . import api
    from .passmanager import PassManager
    from .pipeline import analysis_passes

    program = api.load_program(model, input_shapes, seed, progress=progress)
    passes = [p for p in analysis_passes(target, max_cut_tensors=max_cut_tensors) if p.name != "costs"]
    PassManager(passes, progress=progress).run(program)
    return program


def _model_column(model: str, program: Any, out: Path) -> str:
    """A zoo name as given; a file as a path relative to the CSV's directory (absolute if none)."""
    from . import zoo

    if model in zoo.ZOO and not Path(model).exists():
        return model
    try:
        rel = os.path.relpath(program.source_path, out.resolve().parent)
    except ValueError:   # another drive (Windows)
        return str(program.source_path)
    rel = rel.replace(os.sep, "/")
    return rel if "/" in rel or rel.endswith(".onnx") else "./" + rel


def _levels(spec: str, cpu: Any) -> list[float | None]:
    """The frequencies to profile at (None: the current one, not set); one note when cpufreq
    cannot be set and the spec did not name frequencies."""
    from .power import choose_levels, current_mhz

    s = spec.strip().lower()
    if s == "current":
        return [None]
    if not cpu.writable:
        if s not in ("all", "minmax"):
            raise UsageError(f"--freqs {spec}: cpufreq is not writable here ({cpu.reason}); profile with "
                             "--freqs current (or run where it is, e.g. as root on a board)")
        now = current_mhz()
        shown = f"{now:.0f} MHz" if now else "unknown"
        _note(f"cpufreq is not writable here ({cpu.reason}): profiling at the current frequency only, {shown}; "
              "θ/ρ need two frequencies")
        return [None]
    try:
        return list(choose_levels(cpu.levels_mhz, s))
    except ValueError as exc:
        raise UsageError(f"--freqs {spec}: {exc}; or use all, minmax or current") from None


def cmd_profile(args: argparse.Namespace) -> int:
    from .frontend import parse_input_shapes
    from .planners import default_progress
    from .power import CpuFrequency, find_power_meter
    from .targets import load_target

    out = Path(args.output)
    _check_output(out)
    target = load_target(args.target)
    _check_target(target)
    device = target.devices[0].name
    progress = default_progress(quiet=args.quiet)
    program = load_program(args.model, target, input_shapes=parse_input_shapes(args.input_shape),
                           max_cut_tensors=args.max_cut_tensors, seed=args.seed, progress=progress)
    cpu = CpuFrequency()
    levels = _levels(args.freqs, cpu)
    meter, why = find_power_meter()
    if meter is None:
        _note(f"no power source readable (RAPL, hwmon, INA rails): latency only ({why})")
    result = profile(program, levels, cpu=cpu, meter=meter, repeats=args.repeats, threads=args.threads,
                     progress=progress)
    progress.finish()
    rows, comments = observations(result, model=_model_column(args.model, program, out), device=device,
                                  max_cut_tensors=args.max_cut_tensors, board=target.name)
    from .observations import write_observations

    write_observations(out, rows, comments)
    _report(result, out, len(rows), per_layer=args.layers)
    return 0


# ---------------------------------------------------------------- measuring

class ProfileResult:
    """What ``profile`` measured: per frequency (MHz, None = current) the layers' and the whole
    model's ``Timing``; the program, the power meter's name, the threads and the boundary fit."""

    def __init__(self, program: Any, threads: int, meter: str | None, boundary: Any) -> None:
        self.program = program
        self.threads = threads
        self.meter = meter
        self.boundary = boundary
        self.layers: dict[float | None, list[Any]] = {}
        self.model: dict[float | None, Any] = {}
        self.when = _dt.datetime.now().astimezone().replace(microsecond=0).isoformat()

    @property
    def freqs(self) -> list[float | None]:
        return list(self.layers)

    def theta_rho(self) -> tuple[Any, Any, Any, Any] | None:
        """(theta [L], rho [L], theta_model, rho_model) through the lowest and highest frequency
        (MOSAIC Eq. 3, ``fit_theta_rho``), or None with fewer than two known frequencies."""
        import numpy as np

        from .costmodel import fit_theta_rho

        known = sorted(f for f in self.freqs if f is not None)
        if len(known) < 2:
            return None
        lo, hi = known[0], known[-1]
        t_lo = np.array([t.ms for t in self.layers[lo]])
        t_hi = np.array([t.ms for t in self.layers[hi]])
        th, rh = fit_theta_rho(t_lo, t_hi, lo, hi)
        thm, rhm = fit_theta_rho(self.model[lo].ms, self.model[hi].ms, lo, hi)
        return th, rh, float(thm), float(rhm)


def profile(program: Any, levels: Sequence[float | None], *, cpu: Any = None, meter: Any = None,
            repeats: int | None = None, threads: int | None = None, progress: Any = None) -> ProfileResult:
    """Time every layer alone and the whole model at each of ``levels`` (MHz set through ``cpu``,
    a ``hetcc.power.CpuFrequency``; None = as it is). Whatever ``cpu`` changed is restored before
    this returns or raises (Ctrl-C and SIGTERM included: the CLI turns both into
    KeyboardInterrupt), and at interpreter exit should even that be cut short."""
    from dataclasses import replace

    from .passmanager import step
    from .profiler import (boundary_fit, interleaved_timings, layer_session, measure_session, model_session,
                           session_options)
    from .program import LAYERS

    layers = program.get(LAYERS)
    so = session_options(threads)
    kw: dict[str, Any] = (dict(min_runs=5, min_seconds=0.05, max_runs=200) if repeats is None
                          else dict(min_runs=repeats, min_seconds=0.0, max_runs=repeats))
    result = ProfileResult(program, int(so.intra_op_num_threads), getattr(meter, "name", None), None)
    restore = cpu.restore if cpu is not None else None
    if restore is not None:
        atexit.register(restore)
    try:
        for want in levels:
            at = cpu.set_mhz(want) if want is not None else None
            label = f" at {at:g} MHz" if at is not None else ""
            with step(progress, f"loading {len(layers)} layers alone and the whole model into onnxruntime"):
                sessions = [layer_session(program, l, so) for l in layers] + [model_session(program, so)]
            with step(progress, f"timing {len(layers)} layers and the whole model{label}, in rounds"):
                ts = interleaved_timings(sessions, label="rounds", **kw)
            if meter is not None:   # power needs a sustained stretch of one session: a block each
                with step(progress, f"reading the power of each{label}"):
                    ts = [replace(t, power_mw=measure_session(s, f, meter=meter, **kw).power_mw)
                          for t, (s, f) in zip(ts, sessions)]
            result.layers[at], result.model[at] = ts[:-1], ts[-1]
            del sessions
    finally:
        if restore is not None:
            failed = restore()
            atexit.unregister(restore)
            if failed:
                _note("could not put back the CPU frequency settings: " + "; ".join(failed))
    with step(progress, "measuring the session-boundary cost (once per machine)"):
        result.boundary = boundary_fit()
    return result


# ---------------------------------------------------------------- the file

def _sig(x: float) -> float:
    return float(f"{x:.6g}")


def source_text(result: ProfileResult) -> str:
    """The ``source`` column: ``hetcc profile on <cpu>, <ISO date>, onnxruntime <ver>, <n> threads``."""
    from .profiler import cpu_model
    from .runtime import _ort

    return (f"hetcc profile on {cpu_model() or platform.machine()}, {result.when}, "
            f"onnxruntime {_ort.load().__version__}, {result.threads} threads")


def observations(result: ProfileResult, *, model: str, device: str, max_cut_tensors: int = 1,
                 board: str = "host") -> tuple[list[dict[str, Any]], list[str]]:
    """(rows, comment lines) of the observations file: per frequency one latency row per layer
    (and a power row beside it where a meter was read) and one for the whole model, whose
    ``weight`` is the number of layers: in a least-squares fit (``hetcc calibrate``) it then counts
    as much as the layers together, so they do not outvote the one row that says what the whole
    model, the thing a plan is judged by, costs."""
    from .profiler import layers_fingerprint
    from .program import LAYERS

    program = result.program
    layers = program.get(LAYERS)
    src = source_text(result)
    rows: list[dict[str, Any]] = []
    for f in result.freqs:
        entries = [(str(i), t, None) for i, t in enumerate(result.layers[f])]
        entries.append(("", result.model[f], float(len(layers)) if len(layers) > 1 else None))
        for layer, t, weight in entries:
            base = dict(model=model, model_sha256=program.source_sha256, device=device, freq_mhz=f,
                        layer=layer, weight=weight, source=src)
            rows.append(dict(base, kind="latency", value=_sig(t.ms), unit="ms"))
            if t.power_mw is not None and t.power_mw > 0:
                rows.append(dict(base, kind="power", value=_sig(t.power_mw), unit="mW"))
    b = result.boundary
    comments = [
        f"{COMMENT_TAG} board={board} layers={len(layers)} max_cut_tensors={max_cut_tensors} "
        f"layering={layers_fingerprint(layers)}",
        f"{COMMENT_TAG} boundary_delta_ms={_sig(b.delta_ms)} boundary_beta_ms_per_mb={_sig(b.beta_ms_per_byte * 1e6)}",
        f"{COMMENT_TAG} power={'none' if result.meter is None else result.meter.replace(' ', '_')}",
    ]
    fit = result.theta_rho()
    if fit is not None:
        th, rh, thm, rhm = fit
        comments.append(f"{COMMENT_TAG} theta_rho layer=model theta_ms_mhz={_sig(thm)} rho_ms={_sig(rhm)}")
        comments += [f"{COMMENT_TAG} theta_rho layer={i} theta_ms_mhz={_sig(a)} rho_ms={_sig(r)}"
                     for i, (a, r) in enumerate(zip(th.tolist(), rh.tolist()))]
    return rows, comments


_TOKEN = re.compile(r"(\w+)=(\S+)")


def parse_profile_comments(text: str) -> list[dict[str, str]]:
    """The ``# hetcc.profile KEY=VALUE ...`` comment lines of an observations file's text, each as
    a dict (a bare word after the tag, e.g. ``theta_rho``, is under the key ``""``)."""
    out = []
    for line in text.splitlines():
        s = line.strip()
        if not s.startswith("#"):
            continue
        body = s[1:].strip()
        if not body.startswith(COMMENT_TAG + " "):
            continue
        body = body[len(COMMENT_TAG):].strip()
        entry = dict(_TOKEN.findall(body))
        words = [w for w in body.split() if "=" not in w]
        if words:
            entry[""] = words[0]
        out.append(entry)
    return out


def _report(result: ProfileResult, out: Path, n_rows: int, per_layer: bool) -> None:
    from .program import LAYERS

    layers = result.program.get(LAYERS)
    fit = result.theta_rho()
    now = None
    if None in result.freqs:
        from .power import current_mhz

        now = current_mhz()
    shown = [f"{f:g} MHz" if f is not None else (f"{now:.0f} MHz (current, not set)" if now else "current clock")
             for f in result.freqs]
    print(f"{result.program.name}: {len(layers)} layers on this machine's CPU ({result.threads} thread{'s' if result.threads != 1 else ''}), "
          f"{', '.join(shown)}")
    for f, s in zip(result.freqs, shown):
        alone = sum(t.ms for t in result.layers[f])
        m = result.model[f]
        power = f", {m.power_mw / 1e3:.2f} W" if m.power_mw is not None else ""
        print(f"  {s}: whole model {m.ms:.3f} ms{power}; layers alone sum to {alone:.3f} ms "
              f"({len(layers) - 1} extra session boundaries)")
    if fit is not None:
        print(f"  whole model: T = {fit[2]:.4g}/f + {fit[3]:.4g} ms (theta ms*MHz, rho ms; MOSAIC Eq. 3)")
    if per_layer:
        head = f"  {'layer':>5}  {'ops':<28}" + "".join(f"{s:>14}" for s in shown)
        if fit is not None:
            head += f"{'theta ms*MHz':>14}{'rho ms':>10}"
        print(head)
        for i, l in enumerate(layers):
            ops = ",".join(dict.fromkeys(l.op_types))
            ops = ops if len(ops) <= 28 else ops[:25] + "..."
            line = f"  {i:>5}  {ops:<28}" + "".join(f"{result.layers[f][i].ms:>14.4f}" for f in result.freqs)
            if fit is not None:
                line += f"{fit[0][i]:>14.4g}{fit[1][i]:>10.4f}"
            print(line)
    print(f"wrote {out} ({n_rows} observations{', theta/rho in its comments' if fit is not None else ''})")


__all__ = ["COMMENT_TAG", "ProfileResult", "add_arguments", "cmd_profile", "load_program", "observations",
           "parse_profile_comments", "profile", "source_text"]
