"""``hetcc profile MODEL --target host -o FILE.csv``: the command line of ``hetcc.measure.profile``
(arguments, the checks made before minutes of profiling, and the report)."""
from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from hetcc.cli.common import check_output_file, int_in
from hetcc.core.errors import UsageError
from hetcc.core.limits import SEED_MAX
from hetcc.measure.profile import (REPEATS_MAX, ProfileResult, choose_levels, load_program, note, observations,
                                   profile)


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
    p.add_argument("--reprofile", action="store_true",
                   help="measure this machine's session-boundary cost again too, instead of using the cached one "
                        "(the layers are always measured afresh; the new figure replaces the cached one, which "
                        "hetcc compile --target host then uses), as hetcc compile --reprofile does")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines")


def _check_target(target: Any) -> None:
    cpus = [d for d in target.devices if d.execution_provider == "CPUExecutionProvider"]
    if target.kind != "measured" or len(target.devices) != 1 or not cpus:
        raise UsageError(f"hetcc profile measures this machine's CPU: target {target.name!r} is {target.kind} "
                         f"with {len(target.devices)} device(s); use --target host (a modelled board is fitted "
                         "to measurements with hetcc calibrate)")


def _model_column(model: str, program: Any, out: Path) -> str:
    """A zoo name as given; a file as a path relative to the CSV's directory (absolute if none)."""
    from hetcc.compiler import zoo

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
    from hetcc.runtime.power import current_mhz

    s = spec.strip().lower()
    if s == "current":
        return [None]
    if not cpu.writable:
        if s not in ("all", "minmax"):
            raise UsageError(f"--freqs {spec}: cpufreq is not writable here ({cpu.reason}); profile with "
                             "--freqs current (or run where it is, e.g. as root on a board)")
        now = current_mhz()
        shown = f"{now:.0f} MHz" if now else "unknown"
        note(f"cpufreq is not writable here ({cpu.reason}): profiling at the current frequency only, {shown}; "
              "θ/ρ need two frequencies")
        return [None]
    try:
        return list(choose_levels(cpu.levels_mhz, s))
    except ValueError as exc:
        raise UsageError(f"--freqs {spec}: {exc}; or use all, minmax or current") from None


def cmd_profile(args: argparse.Namespace) -> int:
    from hetcc.compiler.frontend import parse_input_shapes
    from hetcc.planners import default_progress
    from hetcc.runtime.power import CpuFrequency, find_power_meter
    from hetcc.targets import load_target

    out = check_output_file(args.output, "measurements.csv")
    from hetcc.files.atomic import check_not_an_input

    check_not_an_input(out, "-o", [args.model, args.target])
    target = load_target(args.target)
    _check_target(target)
    device = target.devices[0].name
    progress = default_progress(quiet=args.quiet)
    program = load_program(args.model, target, input_shapes=parse_input_shapes(args.input_shape),
                           max_cut_tensors=args.max_cut_tensors, seed=args.seed, progress=progress)
    check_not_an_input(out, "-o", [program.source_path])      # a zoo model's export in the cache, too
    cpu = CpuFrequency()
    levels = _levels(args.freqs, cpu)
    meter, why = find_power_meter()
    if meter is None:
        note(f"no power source readable (RAPL, hwmon, INA rails): latency only ({why})")
    if args.reprofile:
        _remeasure_boundary(progress)
    result = profile(program, levels, cpu=cpu, meter=meter, repeats=args.repeats, threads=args.threads,
                     progress=progress)
    progress.finish()
    rows, comments = observations(result, model=_model_column(args.model, program, out), device=device,
                                  max_cut_tensors=args.max_cut_tensors, board=target.name)
    from hetcc.measure.observations import write_observations

    write_observations(out, rows, comments)
    _report(result, out, len(rows), per_layer=args.layers)
    return 0


def _remeasure_boundary(progress: Any) -> None:
    """--reprofile: the one cached figure ``profile`` uses, this machine's session-boundary cost,
    measured again and written over the cached one (``profile`` then reads it from there)."""
    from hetcc.compiler.passmanager import step
    from hetcc.measure.profiler import boundary_fit

    with step(progress, "measuring the session-boundary cost again (--reprofile)"):
        boundary_fit(use_cache=False)


def _report(result: ProfileResult, out: Path, n_rows: int, per_layer: bool) -> None:
    from hetcc.compiler.program import LAYERS

    layers = result.program.get(LAYERS)
    fit = result.theta_rho()
    now = None
    if None in result.freqs:
        from hetcc.runtime.power import current_mhz

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

