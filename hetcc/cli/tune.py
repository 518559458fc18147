"""``hetcc tune PLANNER SPEC.toml -o BEST.toml``: the command line of ``hetcc.experiments.tune``."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hetcc.core.errors import UsageError
from hetcc.experiments.tune import MAX_SAMPLES, load_tune_spec, run_tune, write_best


def add_arguments(parser: Any) -> Any:
    parser.add_argument("planner", help="the planner whose options to tune (dqn, evosh, random, ...; a workload planner such as "
                        "ga over the spec's mixes)")
    parser.add_argument("spec", help="problems and search space (TOML; see examples/tune.toml)")
    parser.add_argument("-o", "--output", required=True, help="where to write the best options (TOML)")
    from hetcc.cli.common import int_in
    from hetcc.experiments.sweep import MAX_WORKERS

    parser.add_argument("--samples", type=int_in(1, MAX_SAMPLES), help="trials (overrides the spec's samples)")
    parser.add_argument("--address", help="a Ray cluster: auto or HOST:PORT (default: start Ray here)")
    parser.add_argument("--workers", type=int_in(1, MAX_WORKERS), help="CPUs of the embedded Ray (default: all)")
    return parser


def cmd_tune(args: Any) -> int:
    from rich.console import Console

    from hetcc.files.atomic import check_not_an_input, check_replaceable_file

    if not str(args.output).strip():
        raise UsageError("-o '': name the TOML file to write, e.g. -o best.toml")
    check_replaceable_file(Path(args.output), "-o")
    check_not_an_input(args.output, "-o", [args.spec])
    spec = load_tune_spec(args.planner, args.spec)
    if args.samples is not None:
        spec.samples = args.samples
    out = Path(args.output)
    if out.is_dir():
        raise UsageError(f"-o {out}: a directory; name the TOML file to write")
    result = run_tune(spec, address=args.address, workers=args.workers)
    write_best(out, spec.planner, result)
    Console(stderr=False).print(
        f"{spec.planner}: median gap to {spec.reference} {result.best_gap:.3f}% with the best options "
        f"(defaults {result.default_gap:.3f}%) over {result.problems} problems; {result.trials} trials, "
        f"{result.stopped_early} stopped early by {spec.scheduler}; {result.seconds:.1f} s\nwrote {out}: "
        + ", ".join(f"{k}={v}" for k, v in sorted(result.best.items())), highlight=False)
    models = "MODEL" if spec.kind == "model" else "MODEL MODEL ..."
    print(f"use it: hetcc compile {models} --planner {spec.planner} --planner-option @{out}", file=sys.stderr)
    return 0

