"""``hetcc calibrate BOARD.toml OBS.csv ... -o FITTED.toml``: the command line of the fit in
``hetcc.measure.calibrate`` (arguments, and the report printed or written as JSON)."""
from __future__ import annotations

import argparse

from hetcc.measure.calibrate import DEFAULT_RANGE, calibrate, print_report, report


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

