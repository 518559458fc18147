"""``hetcc sweep SPEC.toml -o DIR``: models x targets x objectives x deadlines x power caps x
planners x seeds, run on Ray, one row per cell in ``DIR/cells.csv``.

The driver validates the whole spec first (one-line errors, exit 2), then runs each cell not yet
in the table; a cell whose planner raises is recorded with its error and the sweep goes on. Ray
starts embedded on this machine (``--workers N`` CPUs, default all) unless ``--address`` names a
cluster (``auto`` or ``HOST:PORT``). At the end: ``summary.csv``, a summary table per planner and
objective, and two plots (gap to the reference and planner time per planner).

The parts, one module each: ``spec`` (the TOML spec and its cells), ``cells`` (one (model,
target) in a Ray worker: a row per cell), ``table`` (``cells.csv``), ``cluster`` (Ray's
start-up, bounded in time, and its clean-up), ``report`` (summary and plots) and ``run``
(``run_sweep``). This package re-exports what the command line, ``hetcc tune``, the benchmarks
and the tests use.
"""
from __future__ import annotations

from hetcc.experiments.sweep.cells import objective_of, plan_group, restrict
from hetcc.experiments.sweep.cluster import (MAX_WORKERS, START_TIMEOUT_ENV, START_TIMEOUT_S, init_ray,
                                             kill_embedded_ray, start_timeout)
from hetcc.experiments.sweep.report import SweepResult, preload_plotting, print_summary, summarise, write_summary
from hetcc.experiments.sweep.run import run_sweep
from hetcc.experiments.sweep.spec import (GRID_KEYS, MAX_CELLS, SPEC_KEYS, Cell, Grid, SweepSpec, load_spec,
                                          parse_spec, planner_entry)
from hetcc.experiments.sweep.table import COLUMNS, FINAL, Table, read_table

__all__ = ["COLUMNS", "FINAL", "GRID_KEYS", "MAX_CELLS", "MAX_WORKERS", "SPEC_KEYS", "START_TIMEOUT_ENV",
           "START_TIMEOUT_S", "Cell", "Grid", "SweepResult", "SweepSpec", "Table", "init_ray", "kill_embedded_ray",
           "load_spec", "objective_of", "parse_spec", "plan_group", "planner_entry", "preload_plotting",
           "print_summary", "read_table", "restrict", "run_sweep", "start_timeout", "summarise", "write_summary"]
