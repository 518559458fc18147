"""``hetcc calibrate BOARD.toml OBS.csv ... -o FITTED.toml``: the command line of the fit in
``hetcc.measure.calibrate`` (arguments, and the report printed or written as JSON)."""
from __future__ import annotations

import argparse

from pathlib import Path
from typing import Any

from hetcc.cli.common import make_table
from hetcc.measure.calibrate import DEFAULT_RANGE, Calibration, FitResult, calibrate, report
from hetcc.measure.calibrate.reporting import error_text, fmt_value, summary, summary_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("board", help="a modelled board: built-in name (hikey970) or path/to/board.toml")
    parser.add_argument("observations", nargs="+", help="observations files (hetcc.observations/1 CSV)")
    parser.add_argument("-o", "--output", required=True, help="the fitted board file to write")
    parser.add_argument("--free", action="append", default=[], metavar="PATTERN",
                        help="fit only parameters matching (fnmatch, repeatable; default: every parameter some "
                             "observation depends on)")
    parser.add_argument("--fix", action="append", default=[], metavar="PATTERN",
                        help="keep parameters matching at their file value (repeatable)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", dest="sets",
                        help="put a parameter at VALUE (>= 0) and keep it there; the file notes it as set (repeatable)")
    parser.add_argument("--bound", action="append", default=[], metavar="NAME=LO:HI",
                        help="bounds of one parameter (default [x/RANGE, x*RANGE])")
    parser.add_argument("--range", type=float, default=DEFAULT_RANGE, metavar="FACTOR",
                        help=f"default bounds: each parameter within [x / FACTOR, x * FACTOR] (default {DEFAULT_RANGE:g})")
    parser.add_argument("--json", action="store_true", help="print the table and summary as JSON")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress lines")


def cmd_calibrate(args: argparse.Namespace) -> int:
    from hetcc.cli.common import json_text, make_console
    from hetcc.planners import default_progress

    progress = default_progress(quiet=args.quiet)
    cal, result, _ = calibrate(args.board, args.observations, args.output, free=args.free, fix=args.fix,
                               bounds=args.bound, range_factor=args.range, progress=progress, sets=args.sets)
    progress.finish()
    if args.json:
        print(json_text(report(cal, result, str(args.output))))
    else:
        print_report(make_console(), cal, result, str(args.output))
    return 0


def print_report(console: Any, cal: Calibration, result: FitResult, output: str) -> None:
    table = make_table(console, ["#", "where", "kind", "model", "state", "layer", "observed", "predicted", "error"],
                   {"where", "kind", "model", "state", "layer"})
    for i, o in enumerate(cal.obs):
        v = float(result.after.predicted[i])
        model = o.model if len(o.model) <= 40 else o.model[:37] + "..."
        state = o.state_text
        if o.kind == "plan_uses":
            state = f"{o.state_text} ({o.planner}, {o.objective})"
        elif o.kind == "gain":
            state = f"{o.planner} vs {o.baseline} ({o.objective})"
        table.add_row(str(i), f"{Path(o.file).name}:{o.line}", o.kind, model, state, o.layer_text,
                      fmt_value(o, o.value), fmt_value(o, v), error_text(o, v)[0])
    console.print(table)
    b, a = summary(cal.obs, result.before.predicted), summary(cal.obs, result.after.predicted)
    for kind in a:
        console.print(summary_text(kind, b[kind], a[kind]))
    names = cal.board.params
    pt = make_table(console, ["parameter", "before", "after", "x"], {"parameter"})
    for i in result.free:
        p = names[i]
        unit = f" {p.unit}" if p.unit else ""
        pt.add_row(p.name, f"{p.x0:.6g}{unit}", f"{result.values[i]:.6g}{unit}", f"{result.values[i] / p.x0:.3g}")
    console.print(pt)
    if result.kept:
        console.print("not constrained by these observations, kept: " + ", ".join(names[i].name for i in result.kept))
    if cal.memory:
        console.print("memory as reported (each charges its model on that device, slices in proportion; not "
                      "fitted): " + ", ".join(f"{cal.models[o.models[0]].name} on {o.device} {o.value:g} MB (the board "
                                              f"alone: {cal.board_bytes(o.models[0], o.device) / 1e6:.1f} MB)"
                                              for o in cal.memory))
    if result.dropped:
        console.print("kept at the file's value (no --free: the fit left out what these observations cannot pin "
                      "down): "
                      + "; ".join(f"{names[i].name} ({why})" for i, why in result.dropped.items()))
    if result.fixed:
        console.print("fixed: " + ", ".join(names[i].name for i in result.fixed))
    n = len(result.free)
    console.print(f"wrote {output} ({n} parameter{'s' if n != 1 else ''} fitted to {len(cal.obs)} observations; "
                  f"{result.nfev} evaluations, {result.njev} Jacobians, {result.seconds:.1f} s)"
                  + ("" if result.converged else "; the solver stopped at its evaluation limit before converging"))

