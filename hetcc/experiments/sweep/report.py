"""What a sweep reports at the end: ``summary.csv`` (per planner and objective: cells, statuses,
median and worst gap, median planner time), two plots (``gap.png``, ``planner_time.png``) and
the summary table the command prints."""
from __future__ import annotations

import csv
import functools
import math
import threading
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from hetcc.experiments.sweep.table import csv_value


@dataclass
class SweepResult:
    """A finished run: ``cells`` in the spec, ``ran`` now, ``skipped_done`` already in the table."""

    out: Path
    cells: int
    ran: int
    skipped_done: int
    rows: list[dict[str, str]]
    seconds: float


def _num(v: str) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _label(r: Mapping[str, str]) -> str:
    """A row's planner as the summary groups it: ``single:*`` for every single device, `` (mix)``
    after a planner of mixes (``auto`` plans both)."""
    planner = "single:*" if r["planner"].startswith("single:") else r["planner"]
    return planner + (" (mix)" if r.get("mix_models") else "")


def summarise(rows: Sequence[Mapping[str, str]]) -> list[dict[str, Any]]:
    """Per (planner, objective): cells, ok/infeasible/skipped/error counts, median and worst gap,
    median planner milliseconds; with mixes in the table also the medians of T_norm, J and O."""
    import statistics

    by: dict[tuple[str, str], list[Mapping[str, str]]] = defaultdict(list)
    for r in rows:
        by[(_label(r), r["objective"])].append(r)
    mixes = any(r.get("mix_models") for r in rows)
    out = []
    for (planner, objective), rs in sorted(by.items()):
        gaps = [g for g in (_num(r["gap_pct"]) for r in rs) if g is not None]
        secs = [s for s in (_num(r["planner_seconds"]) for r in rs) if s is not None]
        out.append({"planner": planner, "objective": objective, "cells": len(rs),
                    **{s: sum(r["status"] == s for r in rs) for s in ("ok", "infeasible", "skipped", "error")},
                    "median_gap_pct": statistics.median(gaps) if gaps else None,
                    "max_gap_pct": max(gaps) if gaps else None,
                    "median_planner_ms": statistics.median(secs) * 1e3 if secs else None})
        if mixes:
            for col in ("t_norm", "jain", "overall"):
                vals = [v for v in (_num(r.get(col, "")) for r in rs if r["status"] == "ok") if v is not None]
                out[-1][f"median_{col}"] = statistics.median(vals) if vals else None
    return out


def write_summary(root: Path, rows: Sequence[Mapping[str, str]]) -> list[dict[str, Any]]:
    summary = summarise(rows)
    with open(root / "summary.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(summary[0]) if summary else ["planner"])
        w.writeheader()
        w.writerows([{k: csv_value(v) for k, v in s.items()} for s in summary])
    _plots(root, rows)
    return summary


@functools.cache
def preload_plotting() -> None:
    """Import matplotlib (0.5 s of CPU) for the summary's plots in a background thread, once: run
    before Ray starts, it uses the CPU that Ray's start-up leaves idle instead of the tasks'."""
    threading.Thread(target=_plotting, daemon=True, name="hetcc-import-matplotlib").start()


def _plotting() -> Any:
    """matplotlib's Figure class (drawn by the Agg canvas; no pyplot), or None without the plot extra."""
    try:
        from matplotlib.backends import backend_agg  # noqa: F401  (savefig's PNG canvas)
        from matplotlib.figure import Figure
    except ImportError:                                  # the plot extra is optional
        return None
    return Figure


def _plots(root: Path, rows: Sequence[Mapping[str, str]]) -> None:
    Figure = _plotting()
    if Figure is None:
        return
    planners = sorted({_label(r) for r in rows})
    for column, name, label in (("gap_pct", "gap.png", "gap to the reference planner (%)"),
                                ("planner_seconds", "planner_time.png", "planner time (s, log)")):
        data = [[v for v in (_num(r[column]) for r in rows if _label(r) == p) if v is not None] for p in planners]
        keep = [(p, d) for p, d in zip(planners, data) if d]
        width, height = max(4, 1.2 * len(keep) + 2), 3.5
        fig = Figure(figsize=(width, height))
        # fixed margins in inches: tight_layout would measure every label, half the drawing time
        fig.subplots_adjust(left=0.85 / width, right=1 - 0.15 / width, bottom=0.45 / height, top=1 - 0.35 / height)
        ax = fig.add_subplot()
        if keep:
            ax.boxplot([d for _, d in keep], tick_labels=[p for p, _ in keep], showfliers=True)
        if column == "planner_seconds" and keep:
            ax.set_yscale("log")
        ax.set_ylabel(label)
        ax.set_title(f"{len(rows)} cells")
        fig.savefig(root / name, dpi=100)


def print_summary(console: Any, result: SweepResult) -> None:
    from rich.table import Table as RichTable

    t = RichTable(title=f"sweep: {result.cells} cells ({result.ran} run now, {result.skipped_done} "
                  f"already in the table), {result.seconds:.1f} s")
    summary = summarise(result.rows)
    extra = [k for k in ("median_t_norm", "median_jain", "median_overall") if summary and k in summary[0]]
    heads = ["planner", "objective", "cells", "ok", "infeasible", "skipped", "error", "median gap %",
             "max gap %", "median planner ms", *(f"median {k.split('_', 1)[1].replace('t_norm', 'T_norm')}"
                                                 .replace("jain", "J").replace("overall", "O") for k in extra)]
    for h in heads:
        t.add_column(h, justify="left" if h in ("planner", "objective") else "right")
    for s in summary:
        t.add_row(s["planner"], s["objective"], *(str(s[k]) for k in ("cells", "ok", "infeasible", "skipped", "error")),
                  *("-" if s[k] is None else f"{s[k]:.2f}" for k in ("median_gap_pct", "max_gap_pct",
                                                                    "median_planner_ms")),
                  *("-" if s[k] is None else f"{s[k]:.3f}" for k in extra))
    console.print(t)
    console.print(f"{result.out / 'cells.csv'} (one row per cell), summary.csv, gap.png, planner_time.png")
