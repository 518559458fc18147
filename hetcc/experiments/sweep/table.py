"""``cells.csv``: its columns, reading it back (a last line cut short by a kill dropped) and
appending to it one flushed row at a time, so an interrupted sweep keeps what finished."""
from __future__ import annotations

import csv
import math
import os
from pathlib import Path
from typing import Any, Mapping

from hetcc.core.text import csv_cell, csv_unquote
from hetcc.core.errors import UsageError

#: the columns of cells.csv, in order
COLUMNS = ("cell", "model", "target", "objective", "deadline", "power_cap", "planner", "options", "seed",
           "status", "feasible", "deadline_ms", "latency_ms", "energy_mj", "edp_mj_ms", "value", "reference",
           "gap_pct", "planner_seconds", "slices", "devices", "artifact", "error", "worker", "finished",
           "device_set", "budget", "layers", "states", "stats", "mix_models", "throughput_ips", "t_norm", "jain",
           "overall")
#: statuses a later run does not redo (``error`` rows are re-run)
FINAL = ("ok", "infeasible", "skipped")


def read_table(path: Path) -> list[dict[str, str]]:
    """The rows of cells.csv; a last line cut short by a kill is dropped."""
    if not path.exists():
        return []
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        rows = [{k: csv_unquote(v) if isinstance(v, str) else v for k, v in r.items()} for r in reader]
        header = reader.fieldnames or []
    if rows and (None in rows[-1] or any(rows[-1].get(c) is None for c in header)):
        rows = rows[:-1]
    unknown = [c for c in header if c not in COLUMNS]
    if unknown or "cell" not in header:
        raise UsageError(f"{path}: not a hetcc sweep table (column {(unknown or ['cell'])[0]!r}); "
                         "name another -o directory")
    for r in rows:                                    # a table from an older hetcc: its new columns empty
        for c in COLUMNS:
            r.setdefault(c, "")
    return rows


class Table:
    """cells.csv, appended one row at a time (flushed, so a kill loses at most the last line)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows = read_table(path)
        exists = path.exists()
        if exists:                                   # rewrite without a cut-short last line
            self._rewrite()
        self._f = open(path, "a", newline="", encoding="utf-8")
        self._w = csv.DictWriter(self._f, fieldnames=COLUMNS, extrasaction="ignore")
        if not exists:
            self._w.writeheader()
            self._f.flush()

    def _rewrite(self) -> None:
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
            w.writeheader()
            w.writerows(self.rows)
        os.replace(tmp, self.path)

    def done(self) -> set[str]:
        return {r["cell"] for r in self.rows if r["status"] in FINAL}

    def drop_errors(self, keys: set[str]) -> None:
        """Forget the error rows of cells about to be re-run."""
        before = len(self.rows)
        self.rows = [r for r in self.rows if not (r["status"] == "error" and r["cell"] in keys)]
        if len(self.rows) != before:
            self._f.close()
            self._rewrite()
            self._f = open(self.path, "a", newline="", encoding="utf-8")
            self._w = csv.DictWriter(self._f, fieldnames=COLUMNS, extrasaction="ignore")

    def append(self, row: Mapping[str, Any]) -> None:
        clean = {k: csv_value(v) for k, v in row.items()}
        self._w.writerow(clean)
        self._f.flush()
        self.rows.append(clean)

    def close(self) -> None:
        self._f.close()


def csv_value(v: Any) -> str:
    """A value as cells.csv and summary.csv write it (a float to 12 digits; None, inf, nan: empty;
    text that a spreadsheet would run as a formula behind an apostrophe: ``csv_cell``)."""
    if isinstance(v, float):
        return "" if not math.isfinite(v) else f"{v:.12g}"
    return "" if v is None else csv_cell(str(v))


def one_line(exc: BaseException) -> str:
    """An exception as the table's ``error`` column (and a one-line message) shows it."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:500]
