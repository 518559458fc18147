"""Observations a compile plans with: ``--target FILE.csv`` (the per-layer costs of a measurement
file instead of profiling again) and ``--observations`` (memory rows: the size a device's runtime
reports for a model, which its capacity rule then charges).

Why: a profile is worth keeping. ``hetcc profile`` writes one (``hetcc.observations/1``), a
colleague or a paper's supplement can hand one over, and a compile against it is reproducible
(the file is the cost model) and fast (nothing is timed).

The rule for the board: a measurement file is a profile of ``host`` (this module plans for the
board ``hetcc profile`` measures: one device, ``cpu``). Its rows must name device ``cpu``; a
``# hetcc.profile board=NAME`` comment naming another board is refused. A modelled board is
fitted to measurements with ``hetcc calibrate`` instead.

Which rows count: the latency rows of the model being compiled, recognised by ``model_sha256``
(the sha256 of the model's ONNX bytes) or, for rows without one, by the zoo name or the file
path; a row that names the model but gives another sha256 is refused (exit 2: profile the
model again). Every layer 0..L-1 of the compile's layering needs a row (``layer = N``); a row
for a layer beyond L, or a ``layering=`` comment (written by ``hetcc profile``) that differs
from the compile's, is refused: the file was measured with another ``--max-cut-tensors`` or
``--input-shape``. Rows at several CPU frequencies: the top one is used (empty ``freq_mhz`` =
top), as ``host`` has one state; repeated rows of one layer: their median.

The cost table is built by ``hetcc.measure.profiler.costs_from_profile``, the builder behind the
compile's own profile cache: the layers' times, the whole model's (its row with an empty
``layer``; without one the boundary model is not calibrated on the model, scale 1) and the
session-boundary fit from the file's ``boundary_delta_ms`` / ``boundary_beta_ms_per_mb``
comment (absent: ``host``'s ``transfer`` defaults).

``--observations FILE.csv`` (or a built-in file's name, or ``none``): the ``memory`` rows of an
observations file, each the size a device's runtime reports for a whole model (MOSAIC's Table I:
what TensorFlow Lite reports), which that device's capacity rule then charges the model instead
of the board's own estimate, each slice its share (``PlanningProblem.with_reported_memory``).
A row applies to the model being compiled when its ``model_sha256`` is the model's; a row
without one, when it names the model as compiled: the zoo name given as MODEL (or hetcc's own
export of it in the cache, as a sweep compiles it), or the same file. A row that names the model but gives another sha256 is refused (exit 2), as is a second
row for one model and device. By default a built-in board fitted with memory rows
(``BOARD_OBSERVATIONS``: hikey970, to MOSAIC's) applies its own, on the board exactly as shipped
(a copy or a calibrated variant does not: give ``--observations``).
"""
from __future__ import annotations

import hashlib
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Sequence

from hetcc.core.errors import UsageError
from hetcc.compiler.passmanager import Pass, PassResult
from hetcc.compiler.program import COSTS, LAYERS, LEGALITY, TENSORS, Program

logger = logging.getLogger(__name__)

#: the board a measurement file describes, and its one device
BOARD = "host"
DEVICE = "cpu"


def is_measurement_file(target: Any) -> bool:
    """``--target`` names a measurement file (``*.csv``) rather than a board."""
    return isinstance(target, (str, Path)) and str(target).lower().endswith(".csv")


@dataclass
class Measurements:
    """A measurement file read for planning: its latency rows, the board they describe
    (``host``), its label in errors and the key=value of its ``# hetcc.profile`` comments."""

    rows: list[Any]
    board: Any
    label: str = ""
    header: dict[str, str] = field(default_factory=dict)

    def costs(self, program: Program, legal_dev: Any) -> Any:
        """The cost table of ``program`` (after the layers and legality passes) from the file."""
        import numpy as np

        from hetcc.measure.profiler import BoundaryFit, costs_from_profile, layers_fingerprint

        layers = program.get(LAYERS)
        rows = self._rows_of(program)
        top = _top_frequency(rows)
        rows = [r for r in rows if r.freq_mhz == top]
        n = len(layers)
        fp = self.header.get("layering")
        if fp is not None and fp != layers_fingerprint(layers):
            raise UsageError(f"{self.label}: measured on another layering of {program.name} "
                             f"({self.header.get('layers', '?')} layers, --max-cut-tensors "
                             f"{self.header.get('max_cut_tensors', '?')}; this compile has {n} layers); profile "
                             "again with the compile's --max-cut-tensors and --input-shape")
        per_layer: dict[int, list[float]] = {}
        whole: list[float] = []
        for r in rows:
            if r.layer is None:
                whole.append(r.value)
            elif r.layer[0] == r.layer[1]:
                if r.layer[0] >= n:
                    raise UsageError(f"{r.where}: layer {r.layer[0]}, but {program.name} has {n} layers "
                                     f"(0-{n - 1}) in this compile; profile again with the compile's "
                                     "--max-cut-tensors and --input-shape")
                per_layer.setdefault(r.layer[0], []).append(r.value)
        missing = [i for i in range(n) if i not in per_layer]
        if missing:
            shown = ", ".join(str(i) for i in missing[:8]) + (", ..." if len(missing) > 8 else "")
            at = f" at {top:g} MHz" if top is not None else ""
            raise UsageError(f"{self.label}: no latency of layer{'s' if len(missing) > 1 else ''} {shown} of "
                             f"{program.name}{at} ({len(per_layer)} of {n} layers measured); profile the whole "
                             f"model: hetcc profile {program.name} -o {self.label}")
        layer_ms = np.array([float(np.median(per_layer[i])) for i in range(n)])
        model_ms = float(np.median(whole)) if whole else float(layer_ms.sum())
        if not whole:
            logger.info("%s: no whole-model row; the boundary model is not calibrated on the model", self.label)
        fit = self._boundary()
        return costs_from_profile(layers, self.board, legal_dev, layer_ms, model_ms,
                                  BoundaryFit(delta_ms=fit[0], beta_ms_per_byte=fit[1] / 1e6), source="measured")

    def _boundary(self) -> tuple[float, float]:
        """(delta ms, beta ms/MB) of a session boundary: the file's comment, else host's defaults."""
        try:
            return (float(self.header["boundary_delta_ms"]), float(self.header["boundary_beta_ms_per_mb"]))
        except (KeyError, ValueError):
            d = self.board.devices[0]
            return float(d.transfer_delta_ms), float(d.transfer_beta_ms_per_mb)

    def _rows_of(self, program: Program) -> list[Any]:
        """The latency rows of ``program``: by sha256, else by zoo name or path (module doc)."""
        from hetcc.measure.observations import check_model_hash, is_model_path

        sha = program.source_sha256
        src = str(Path(program.source_path).resolve()) if program.source_path else ""
        mine, named = [], []
        for r in self.rows:
            m = r.models[0]
            by_name = m == program.name if not is_model_path(m) else str(Path(m).resolve()) == src
            if r.model_sha256 is not None and r.model_sha256 == sha:
                mine.append(r)
            elif by_name:
                named.append(r)
        for r in named:
            check_model_hash(r, r.models[0], sha)   # a row naming the model with another hash: refused
        mine += named   # (rows naming it without a hash)
        if not mine:
            held = sorted({r.model for r in self.rows})
            raise UsageError(f"{self.label}: no latency measurements of {program.name} (sha256 {sha[:12]}…); the "
                             f"file holds {', '.join(held[:5])}{', ...' if len(held) > 5 else ''}; profile it: "
                             f"hetcc profile {program.name} -o FILE.csv")
        return mine


def _top_frequency(rows: Sequence[Any]) -> float | None:
    """The frequency whose rows are used: None (the top level) when any row leaves it empty,
    else the highest measured."""
    freqs = {r.freq_mhz for r in rows}
    if None in freqs:
        return None
    return max(freqs)


def load_measurements(path: str | Path) -> Measurements:
    """Read a measurement file for ``--target`` (UsageError, one line, for anything wrong)."""
    from hetcc.measure.observations import parse_observations, read_text
    from hetcc.measure.observations import parse_profile_comments
    from hetcc.targets import load_target

    p = Path(path)
    label = str(path)
    board = load_target(BOARD)
    text = read_text(p)
    rows = [r for r in parse_observations(text, label, p.parent, check_files=False) if r.kind == "latency"]
    if not rows:
        raise UsageError(f"{label}: holds no latency rows; --target FILE.csv plans with measured latencies "
                         "(write them with hetcc profile MODEL -o FILE.csv)")
    for r in rows:
        if r.device != DEVICE:
            raise UsageError(f"{r.where}: column 'device': {r.device!r} is not a device of {BOARD} ({DEVICE}); "
                             f"--target FILE.csv plans for {BOARD}, the board hetcc profile measures (fit a "
                             "modelled board to measurements with hetcc calibrate)")
    comments = parse_profile_comments(text)
    header: dict[str, str] = {}
    for c in comments:
        if "" not in c:   # the key=value lines; theta_rho lines carry a leading word
            header.update(c)
    named = header.get("board")
    if named is not None and named != BOARD:
        raise UsageError(f"{label}: a profile of board {named!r}; --target FILE.csv plans for {BOARD} only "
                         "(fit a modelled board with hetcc calibrate)")
    return Measurements(rows=rows, board=board, label=label, header=header)


class MeasuredCosts(Pass):
    """The ``costs`` pass for ``--target FILE.csv``: the table from the file (``Measurements.costs``)."""

    name: ClassVar[str] = "costs"
    requires: ClassVar[tuple[str, ...]] = (TENSORS, LAYERS, LEGALITY)
    ensures: ClassVar[tuple[str, ...]] = (COSTS,)

    def __init__(self, measurements: Measurements) -> None:
        self.measurements = measurements
        self.label = f"reading the measured costs of {measurements.label}"

    def run(self, program: Program) -> PassResult:
        table = self.measurements.costs(program, program.get(LEGALITY).mask)
        program.put(COSTS, table)
        return PassResult(False, f"measured ({self.measurements.label}): {len(table.layers)} layers x "
                          f"{len(table.states)} states")


# ---------------------------------------------------------------- --observations: memory rows
#: ``observations=`` / ``--observations`` values: the board's own memory rows (the default), none
BOARD_ROWS = "board"
NO_ROWS = "none"
#: built-in boards fitted with memory rows -> the built-in observations file whose rows they apply
BOARD_OBSERVATIONS = {"hikey970": "hikey970-mosaic"}
_TARGETS = "hetcc.targets"


@dataclass(frozen=True)
class ReportedSize:
    """A memory row applied: ``device``'s runtime reports the whole model takes ``nbytes``."""

    device: str
    nbytes: float
    row: Any                  # the Observation

    @property
    def source(self) -> str:
        """``hikey970-mosaic.csv line 11``: the row (the file's name only, so artifacts do not
        depend on where it lies)."""
        return f"{Path(self.row.file).name} line {self.row.line}"


@dataclass(frozen=True)
class MemoryRows:
    """The memory rows of one observations file, read for compiling (``load_memory_rows``)."""

    rows: tuple[Any, ...]
    label: str

    def for_model(self, board: Any, sha256: str, zoo_name: str | None = None,
                  source_path: str | Path | None = None) -> dict[str, ReportedSize]:
        """{device: ReportedSize} of the rows that apply to the model with ``sha256`` (given as
        zoo name ``zoo_name``, or read from ``source_path``); the module doc says which apply.
        UsageError naming the row for one naming the model with another sha256, a second row
        for one device, or a device without a capacity (the row would change nothing)."""
        from hetcc.measure.observations import is_model_path

        src = str(Path(source_path).resolve()) if source_path else None
        out: dict[str, ReportedSize] = {}
        for o in self.rows:
            m = o.models[0]
            named = (src is not None and str(Path(m).resolve()) == src) if is_model_path(m) else m == zoo_name
            if o.model_sha256 is not None and o.model_sha256 != sha256:
                if named:
                    raise UsageError(f"{o.where}: the memory row names {o.model} with sha256 {o.model_sha256[:12]}…, "
                                     f"the model compiled has {sha256[:12]}…: the size was reported for another "
                                     "model; fix the model_sha256 column or drop the row")
                continue
            if o.model_sha256 is None and not named:
                continue
            if o.device in out:
                raise UsageError(f"{o.where}: a second memory row for this model on {o.device} (the first is "
                                 f"{out[o.device].source}); keep one")
            cap = board.device(o.device).capacity_bytes
            if cap is None or not math.isfinite(float(cap)):
                raise UsageError(f"{o.where}: {board.name}'s {o.device} has no memory capacity, so the size its "
                                 "runtime reports changes nothing; drop the row (or give the device a capacity)")
            out[o.device] = ReportedSize(o.device, o.value * 1e6, o)
        return out


def observations_file(name: str) -> Path | None:
    """The built-in observations file ``name`` (``hikey970-mosaic``), None when there is none."""
    from importlib import resources

    res = resources.files(_TARGETS).joinpath("observations", f"{name}.csv")
    return Path(str(res)) if res.is_file() else None


def shipped(board: Any) -> bool:
    """``board`` is a built-in board exactly as shipped (its file's bytes, not a copy or a refit)."""
    from importlib import resources

    res = resources.files(_TARGETS).joinpath(f"{board.name}.toml")
    return res.is_file() and hashlib.sha256(res.read_bytes()).hexdigest() == getattr(board, "sha256", None)


def memory_rows_file(spec: str | Path | None, board: Any) -> Path | None:
    """The observations file ``spec`` names for compiling on ``board`` (``load_memory_rows``), or
    None for none; UsageError for a name that is no file and no built-in file."""
    if spec is None or str(spec) == NO_ROWS:
        return None
    if str(spec) == BOARD_ROWS:
        name = BOARD_OBSERVATIONS.get(board.name)
        return observations_file(name) if name is not None and shipped(board) else None
    s = str(spec)
    if isinstance(spec, Path) or s.lower().endswith(".csv") or "/" in s or "\\" in s:
        return Path(spec)
    path = observations_file(s)
    if path is None:
        from importlib import resources

        names = sorted(p.name[:-4] for p in resources.files(_TARGETS).joinpath("observations").iterdir()
                       if p.name.endswith(".csv"))
        raise UsageError(f"--observations {s!r}: no such file; give FILE.csv, a built-in observations file "
                         f"({', '.join(names)}) or none")
    return path


def load_memory_rows(spec: str | Path | None, board: Any) -> MemoryRows | None:
    """The memory rows ``spec`` names for compiling on ``board``: ``BOARD_ROWS`` the board's own
    (None unless it is a built-in board in ``BOARD_OBSERVATIONS``, as shipped), ``None`` or
    ``NO_ROWS`` none, a path an observations file, another word a built-in file
    (targets/observations/NAME.csv). Every row is validated against ``board`` (UsageError naming
    the file, line and column); a file without memory rows is refused."""
    from hetcc.measure.observations import parse_observations, read_text

    path = memory_rows_file(spec, board)
    if path is None:
        return None
    label = str(path)
    rows = tuple(o for o in parse_observations(read_text(path), label, path.parent, board=board, check_files=False)
                 if o.kind == "memory")
    if not rows:
        raise UsageError(f"{label}: holds no memory rows; --observations applies the size a device's runtime "
                         "reports for a model (rows of kind memory, docs/calibration.md)")
    return MemoryRows(rows, label)


__all__ = ["BOARD", "BOARD_OBSERVATIONS", "BOARD_ROWS", "DEVICE", "MeasuredCosts", "Measurements", "MemoryRows",
           "NO_ROWS", "ReportedSize", "is_measurement_file", "load_measurements", "load_memory_rows",
           "memory_rows_file", "observations_file", "shipped"]
