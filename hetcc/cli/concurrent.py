"""``hetcc run DIR --concurrent``: every model of a workload artifact at the same time.

The run itself is ``hetcc.runtime.concurrent.run_concurrent`` (numpy + onnxruntime only); this
module checks the options that make no sense with it, and prints the result as a table or JSON.
Light like ``hetcc.cli.artifact`` (``python -m hetcc.runtime run`` borrows it on a board): the
standard library, rich when installed.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from hetcc.core.errors import UsageError
from hetcc.cli.common import json_text, make_console, make_table

__all__ = ["cmd_run_concurrent", "CONCURRENT_DURATION_DEFAULT_S", "refuse_with_concurrent"]

#: the all-at-once phase (and each model's phase alone) without --duration, seconds
CONCURRENT_DURATION_DEFAULT_S = 10.0

#: ``hetcc run`` options that --concurrent does not take: (attribute, flag, is it set)
_NOT_WITH = (("repeat", "--repeat", lambda v: v is not None), ("input", "--input", bool),
             ("random_missing", "--random-missing", bool), ("save_outputs", "--save-outputs", lambda v: v is not None),
             ("variant", "--variant", lambda v: v is not None), ("model", "--model", lambda v: v is not None),
             ("verify", "--verify", bool), ("reference", "--reference", lambda v: v is not None),
             ("apply_hardware", "--apply-hardware", bool), ("keep_hardware", "--keep-hardware", bool))


def refuse_with_concurrent(args: argparse.Namespace) -> None:
    """UsageError naming the first option given that --concurrent does not take (and --sharing or --rounds
    without it)."""
    for flag in ("sharing", "rounds"):
        if not getattr(args, "concurrent", False) and getattr(args, flag, None) is not None:
            raise UsageError(f"--{flag} is taken with --concurrent only; add --concurrent (a workload artifact), or "
                             f"drop --{flag}")
    for attr, flag, given in _NOT_WITH:
        if given(getattr(args, attr, None)):
            raise UsageError(f"{flag} is not taken with --concurrent, which runs every model of the workload at once "
                             f"on random inputs (--seed) for --duration; drop {flag}, or drop --concurrent")


def cmd_run_concurrent(args: argparse.Namespace) -> int:
    """Run the workload's models at once; print measured vs predicted throughput, T_w, J, O."""
    from hetcc.runtime.concurrent import run_concurrent

    refuse_with_concurrent(args)
    duration = args.duration if args.duration is not None else CONCURRENT_DURATION_DEFAULT_S
    progress = None
    if not args.json and sys.stderr.isatty():
        def progress(label: str) -> None:
            print(f"hetcc: measuring {label.replace(':', ' ')} for {duration:g} s", file=sys.stderr)
    try:
        result = run_concurrent(args.dir, duration, warmup=args.warmup, seed=args.seed,
                                strict_providers=args.strict_providers,
                                local_fallback=getattr(args, "local_fallback", False),
                                sharing=getattr(args, "sharing", None) or "queue",
                                rounds=getattr(args, "rounds", None) or 1, on_phase=progress)
    except ValueError as exc:   # the duration, already checked by argparse: not reached from the CLI
        raise UsageError(str(exc)) from None
    if args.json:
        print(json_text(result.to_json()))
    else:
        print_concurrent(result)
    if result.stopped == "interrupted":   # reported above; the caller prints "hetcc: interrupted" (exit 130)
        raise KeyboardInterrupt
    return 0


def _n(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1%}"


def print_concurrent(r: Any) -> None:
    """The result of ``run_concurrent`` as a table and a few lines."""
    console = make_console()
    n_stages = len(r.stages)
    console.print(f"[bold]concurrent run[/bold] of {r.artifact} ({r.target}): {len(r.models)} models, {n_stages} "
                  f"stage worker(s) sharing each device by {r.sharing}; each model alone for {r.alone_s:g} s, then all "
                  f"at once for {r.duration_s:g} s" + (f", in {r.rounds} rounds" if r.rounds > 1 else "")
                  + (" (interrupted: the phases not reached are shown as -)" if r.stopped == "interrupted" else ""))
    pinned = [s for s in r.stages if s.cores is not None]
    console.print(f"  {len(pinned)} of {n_stages} stage worker(s) pinned to their device's cores "
                  f"(this process may use cores {', '.join(map(str, r.cores))})", markup=False)
    for note in r.notes:
        console.print(f"  {note}", markup=False)
    table = make_table(console, ["model", "stages", "alone inf/s", "predicted", "shared inf/s", "predicted", "error"],
                       {"model", "stages"})
    for m in r.models:
        table.add_row(m.name, " > ".join(m.devices), _n(m.alone_ips), _n(m.predicted_alone_ips), _n(m.shared_ips),
                      _n(m.predicted_ips), _pct(m.error))
    console.print(table)
    me, pr = r.measured, r.predicted
    line = f"T_w {_n(me.throughput_ips)} inf/s, J {_n(me.jain_alone, 3)} (t_ideal = each model alone, measured)"
    if pr is not None:
        line += (f"; predicted T_w {_n(pr.throughput_ips)}, J {_n(pr.jain_alone, 3)}; FairBoost's T_norm, J, O: "
                 f"measured {_n(me.normalised, 3)}, {_n(me.jain, 3)}, {_n(me.overall, 3)}, predicted "
                 f"{_n(pr.normalised, 3)}, {_n(pr.jain, 3)}, {_n(pr.overall, 3)}")
        if r.median_error is not None:
            line += f"; median |error| of the shared throughput {r.median_error:.1%}"
    console.print(line, markup=False)
    console.print(f"prediction: {r.prediction}", markup=False)
    others = r.load.get("others_cores", {})
    busy = ", ".join(f"{k.replace(':', ' ')} {v:.2f}" for k, v in others.items() if v is not None)
    console.print(f"load: other processes used {busy or '? (no /proc/stat)'} core(s) during the phases; load average "
                  f"{r.load.get('loadavg_before')} before, {r.load.get('loadavg_after')} after", markup=False)
