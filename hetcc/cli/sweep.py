"""``hetcc sweep SPEC.toml -o DIR``: the command line of ``hetcc.experiments.sweep``."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from hetcc.core.errors import UsageError
from hetcc.experiments.sweep import MAX_WORKERS, kill_embedded_ray, load_spec, print_summary, run_sweep


def add_arguments(parser: Any) -> Any:
    parser.add_argument("spec", help="the sweep spec (TOML; see examples/sweep.toml)")
    parser.add_argument("-o", "--output", required=True, help="results directory (cells.csv, summary.csv, plots)")
    parser.add_argument("--address", help="a Ray cluster to run on: auto or HOST:PORT (default: start Ray here)")
    from hetcc.cli.common import int_in

    parser.add_argument("--workers", type=int_in(0, MAX_WORKERS),
                        help="CPUs of the embedded Ray (default: all of this machine's); 0: plan here, in this "
                             "process, without Ray")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    return parser


def cmd_sweep(args: Any) -> int:
    from rich.console import Console

    if args.workers is not None and args.address:
        raise UsageError("--workers sizes the embedded Ray (0: none); a cluster given by --address has its own CPUs")
    spec = load_spec(args.spec)
    err = Console(stderr=True)
    try:
        result = run_sweep(spec, args.output, address=args.address, workers=args.workers,
                           progress=not args.quiet and err.is_terminal, console=err)
    except KeyboardInterrupt:
        print(f"hetcc: sweep interrupted; finished cells are in {Path(args.output) / 'cells.csv'}: "
              "run the same command to resume", file=sys.stderr)
        if "ray" not in sys.modules or not sys.modules["ray"].is_initialized():
            raise
        # leave at once, no ray.shutdown and no interpreter teardown: Ray's core worker threads
        # crashed the process there (SIGSEGV, exit 139) when the interrupt came while tasks were
        # starting; the processes an embedded Ray started are killed once this one is gone
        kill_embedded_ray()
        from hetcc.cli.signals import interrupted

        code = interrupted()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    out = Console(width=None if Console().is_terminal else 160)
    print_summary(out, result)
    failed = sum(r["status"] == "error" for r in result.rows)
    if failed:
        print(f"hetcc: warning: {failed} cell(s) failed; their error is in the table's error column "
              "(the next run retries them)", file=sys.stderr)
    return 0

