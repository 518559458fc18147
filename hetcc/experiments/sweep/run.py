"""``run_sweep``: run every cell of a spec not yet in ``DIR/cells.csv`` on Ray, one task per
(model, target), appending each row as it arrives; then ``summary.csv`` and the plots.

The driver exports zoo models once and submits one Ray task per (model, target), largest first;
each streams its rows back as they finish (``cells.plan_group``) and the driver appends them to
``cells.csv`` at once, so an interrupted sweep keeps what finished; the same command later skips
every cell already in the table (cells are keyed by a hash of what defines them, the model
file's contents included) and re-runs those that failed with an error.

``workers=0`` plans every group here, in this process, one after the other, without Ray (nor its
start-up of seconds): for small sweeps, and where Ray is not installed."""
from __future__ import annotations

import os
import time
from collections import defaultdict
from typing import Any, Mapping

from hetcc.core.errors import UsageError
from hetcc.experiments.sweep.cells import plan_group, plan_mix_group
from hetcc.experiments.sweep.cluster import init_ray
from hetcc.experiments.sweep.report import SweepResult, preload_plotting, write_summary
from hetcc.experiments.sweep.spec import Cell, SweepSpec
from hetcc.experiments.sweep.table import Table, read_table


def run_sweep(spec: SweepSpec, out: str | os.PathLike, *, address: str | None = None,
              workers: int | None = None, progress: bool = True, console: Any = None) -> SweepResult:
    """Run every cell of ``spec`` not yet in ``out/cells.csv``; see the module docstring."""
    from hetcc.compiler.api import resolve_model
    from hetcc.files.atomic import acquire_lock, release_lock

    from hetcc.files.atomic import check_output_dir_name

    t0 = time.perf_counter()
    root = check_output_dir_name(out)
    if root.exists() and not root.is_dir():
        raise UsageError(f"-o {root}: a file is in the way; name a directory")
    root.mkdir(parents=True, exist_ok=True)
    lock_fd = acquire_lock(root / ".hetcc-sweep.lock", str(root))
    try:
        cells = spec.cells()
        table = Table(root / "cells.csv")
        done = table.done()
        todo = [c for c in cells if c.key not in done]
        table.drop_errors({c.key for c in todo})
        groups: dict[tuple[str, str], list[Cell]] = defaultdict(list)
        for c in todo:
            groups[(c.model, c.target)].append(c)
        paths: dict[str, Any] = {}
        for model in dict.fromkeys(m for m, _ in groups):
            members = spec.mixes.get(model, (model,))
            found = [str(spec.model_paths.get(m) or resolve_model(m, None, 0)) for m in members]
            paths[model] = found if model in spec.mixes else found[0]
        settings = {"max_cut_tensors": spec.max_cut_tensors, "gap_to": spec.gap_to,
                    "workload_gap_to": spec.workload_gap_to, "artifacts": spec.artifacts, "out": str(root.resolve())}
        ran = 0

        def size(model: str) -> int:
            return sum(os.path.getsize(f) for f in ([paths[model]] if isinstance(paths[model], str)
                                                    else paths[model]))
        # largest models first, so that no long task starts last (a shorter tail on few workers)
        order = sorted(groups, key=lambda g: -size(g[0]) * len(groups[g]))

        def record(batch: list[dict]) -> None:
            """Append a finished batch's rows to the table as they arrive (either way of running)."""
            nonlocal ran
            for row in batch:
                table.append(row)
                bar.advance(row)
            ran += len(batch)

        if todo and workers == 0 and not address:     # here, in this process: no Ray
            bar = _Bar(console, len(todo), progress)
            try:
                for m, t in order:
                    group = plan_mix_group if m in spec.mixes else plan_group
                    for batch in group(paths[m], spec._target_arg(t), groups[(m, t)], settings):
                        record(batch)
            finally:
                bar.close()
        elif todo:
            preload_plotting()                        # while Ray starts: its start-up leaves a core idle
            ray = init_ray(address, workers)
            task = ray.remote(num_cpus=1, max_retries=0)(plan_group)
            mix_task = ray.remote(num_cpus=1, max_retries=0)(plan_mix_group)
            pending = [(mix_task if m in spec.mixes else task).remote(paths[m], spec._target_arg(t), groups[(m, t)],
                                                                       settings) for m, t in order]
            bar = _Bar(console, len(todo), progress)
            try:
                while pending:
                    ready, _ = ray.wait(pending, num_returns=1)
                    for gen in ready:
                        try:
                            batch = ray.get(next(gen))
                        except StopIteration:
                            pending.remove(gen)
                            continue
                        record(batch)
            except Exception:                     # the driver failed: stop what still runs
                for gen in pending:
                    ray.cancel(gen, force=True)
                raise
            finally:                              # an interrupt: cmd_sweep stops the whole cluster
                bar.close()
        table.close()
        keys = {c.key for c in cells}
        rows = [r for r in read_table(root / "cells.csv") if r["cell"] in keys]
        write_summary(root, rows)
        return SweepResult(root, len(cells), ran, len(cells) - len(todo), rows, time.perf_counter() - t0)
    finally:
        release_lock(root / ".hetcc-sweep.lock", lock_fd)


class _Bar:
    def __init__(self, console: Any, total: int, show: bool) -> None:
        self.p = None
        self.errors = 0
        if show:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
            from rich.progress import TimeRemainingColumn

            self.p = Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                              TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.fields[note]}"),
                              console=console, transient=False)
            self.p.start()
            self.t = self.p.add_task("sweep", total=total, note="")

    def advance(self, row: Mapping[str, Any]) -> None:
        self.errors += row.get("status") == "error"
        if self.p is not None:
            self.p.update(self.t, advance=1, note=f"{row['model']} {row['planner']}"
                          + (f" [{self.errors} failed]" if self.errors else ""))

    def close(self) -> None:
        if self.p is not None:
            self.p.stop()
