"""``hetcc sweep SPEC.toml -o DIR``: models x targets x objectives x deadlines x power caps x
planners x seeds, run on Ray, one row per cell in ``DIR/cells.csv``.

The spec (see ``examples/sweep.toml``; every key but ``models`` has a default)::

    models = ["resnet18", "my/model.onnx"]   # zoo names or .onnx paths (relative to the spec)
    targets = ["hikey970"]                   # built-in names, board .toml or measurement .csv paths
    objectives = ["latency"]                 # latency | energy | edp
    deadlines = ["none"]                     # none, short|medium|long, 170ms, 0.17s, 1.3x
    power_caps = ["none"]                    # none, 3W, 3000mW
    planners = ["auto"]                      # any planner; "single:*" = single:<each device>
    seeds = [0]                              # planner seeds (zoo weights always use seed 0)
    max_cut_tensors = 1
    gap_to = "exact"                         # a reference planner for the gap column, or "none"
    artifacts = false                        # write each cell's artifact to DIR/artifacts/<cell>/
    [options.dqn]                            # planner options, per planner name
    steps = 2000

Execution: the driver validates the whole spec first (one-line errors, exit 2), exports zoo
models once, and submits one Ray task per (model, target): it analyses once, then plans each of
its cells and streams one row per cell back as it finishes (a generator task). The driver
appends each row to ``cells.csv`` at once, so an interrupted sweep keeps what finished; the same
command later skips every cell already in the table (cells are keyed by a hash of what defines
them, the model file's contents included) and re-runs those that failed with an error. A cell
whose planner raises is recorded with its error and the sweep goes on; a combination that does
not apply (``dp`` with ``edp``, energy on a target without a power model) is recorded as skipped.

Ray starts embedded on this machine (``--workers N`` CPUs, default all) unless ``--address``
names a cluster (``auto`` or ``HOST:PORT``). At the end: ``summary.csv``, a summary table per
planner and objective, and two plots (gap to the reference and planner time per planner).

Why one module of ~930 lines: the spec, the Ray tasks, the table and the summary are one
command's parts that change together (a new spec key is a Cell field, a column and a summary
line); ``load_spec``/``parse_spec``/``planner_entry`` are what ``hetcc tune`` and the benchmarks
reuse, and Ray is imported only inside ``init_ray``.
"""
from __future__ import annotations

import csv
import functools
import hashlib
import itertools
import json
import math
import os
import socket
import sys
import tempfile
import time
import threading
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from hetcc.core.errors import UsageError
from hetcc.core.limits import SEED_MAX

#: the columns of cells.csv, in order
COLUMNS = ("cell", "model", "target", "objective", "deadline", "power_cap", "planner", "options", "seed",
           "status", "feasible", "deadline_ms", "latency_ms", "energy_mj", "edp_mj_ms", "value", "reference",
           "gap_pct", "planner_seconds", "slices", "devices", "artifact", "error", "worker", "finished",
           "device_set", "budget", "layers", "states", "stats")
#: statuses a later run does not redo (``error`` rows are re-run)
FINAL = ("ok", "infeasible", "skipped")
#: what a grid varies (top level: the defaults of every [[grid]], or the one grid when there is none)
GRID_KEYS = ("models", "targets", "objectives", "deadlines", "power_caps", "planners", "seeds", "devices",
             "budget_steps", "budget_seconds", "options")
SPEC_KEYS = GRID_KEYS + ("max_cut_tensors", "gap_to", "artifacts", "grid")
MAX_CELLS = 1_000_000
#: --workers of the embedded Ray
MAX_WORKERS = 4096


@dataclass(frozen=True)
class Cell:
    """One combination; ``model``/``target`` are as the spec spells them, ``ident`` their
    contents' identity (zoo name or file sha256); ``devices`` the board's devices the plan may
    use (``all`` or ``big+gpu``), ``budget`` the planner's budget (``""``: none)."""

    model: str
    target: str
    objective: str
    deadline: str
    power_cap: str
    planner: str
    options: str          # canonical JSON of the planner's options from the spec
    seed: int
    ident: str = ""
    devices: str = "all"
    budget: str = ""

    @functools.cached_property
    def key(self) -> str:
        doc = asdict(self) | {"model": None, "target": None}     # what the files hold, not their names
        for name, default in (("devices", "all"), ("budget", "")):   # keys of older tables stay valid
            if doc[name] == default:
                del doc[name]
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


@dataclass
class Grid:
    """One product of the spec: every list below times every other."""

    models: list[str]
    targets: list[str]
    objectives: list[str]
    deadlines: list[str]
    power_caps: list[str]
    planners: list[tuple[str, str]]    # (planner name, canonical JSON options); "single:*" expanded per target
    seeds: list[int]
    devices: list[str]
    budget: str


@dataclass
class SweepSpec:
    path: Path
    grids: list[Grid] = field(default_factory=list)
    max_cut_tensors: int = 1
    gap_to: str | None = "exact"
    artifacts: bool = False
    model_paths: dict[str, Path] = field(default_factory=dict)   # spec spelling -> .onnx path
    idents: dict[str, str] = field(default_factory=dict)         # model/target spelling -> identity
    devices: dict[str, list[str]] = field(default_factory=dict)  # target spelling -> its devices

    @property
    def models(self) -> list[str]:
        return list(dict.fromkeys(m for g in self.grids for m in g.models))

    @property
    def targets(self) -> list[str]:
        return list(dict.fromkeys(t for g in self.grids for t in g.targets))

    def cells(self) -> list[Cell]:
        """Every grid's cells, in order, each once."""
        out: dict[str, Cell] = {}
        for g in self.grids:
            for model, target in itertools.product(g.models, g.targets):
                ident = f"{self.idents[model]}@{self.idents[target]}/k{self.max_cut_tensors}"
                for devices in g.devices:
                    allowed = self.devices[target] if devices == "all" else devices.split("+")
                    for planner, opts in g.planners:
                        names = ([f"single:{d}" for d in self.devices[target] if d in allowed]
                                 if planner == "single:*" else [planner])
                        for name, objective, deadline, cap, seed in itertools.product(
                                names, g.objectives, g.deadlines, g.power_caps, g.seeds):
                            cell = Cell(model, target, objective, deadline, cap, name, opts, seed, ident,
                                        devices, g.budget)
                            out.setdefault(cell.key, cell)
        return list(out.values())

    def _target_arg(self, target: str) -> str:
        return str(self.path.parent / target) if _is_file_target(target) else target


# ---------------------------------------------------------------- the spec
def _is_file_target(target: str) -> bool:
    """A board file or a measurement file (``hetcc profile``/``calibrate``), relative to the spec."""
    from hetcc.measure.measured_target import is_measurement_file

    return target.endswith(".toml") or is_measurement_file(target)


def _fail(spec: Path, what: str) -> UsageError:
    return UsageError(f"{spec}: {what}")


def _strings(doc: Mapping[str, Any], key: str, spec: Path, default: list[str] | None, where: str = "") -> list[str]:
    value = doc.get(key, default)
    key = where + key
    if value is None:
        raise _fail(spec, f"no {key!r}: give a list, e.g. {key} = [\"resnet18\"]")
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list) or not value:
        raise _fail(spec, f"{key!r} must be a non-empty list")
    out = []
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise _fail(spec, f"{key}[{i}] must be a string, got {type(v).__name__}")
        out.append(str(v).strip())
    if len(set(out)) != len(out):
        raise _fail(spec, f"{key!r} lists {sorted({v for v in out if out.count(v) > 1})[0]!r} twice")
    return out


def load_spec(path: str | os.PathLike) -> SweepSpec:
    """Read and validate a sweep spec; every problem is a one-line UsageError naming the key."""
    from hetcc.core.read import read_toml

    p = Path(path)
    return parse_spec(read_toml(p, str(p)), p)


def parse_spec(doc: Mapping[str, Any], p: Path) -> SweepSpec:
    """A sweep spec from its TOML document; ``p`` names it in errors and anchors relative paths.

    Without ``[[grid]]`` tables the top level is the one product; with them, each grid is one
    product whose keys replace the top level's (which then only gives defaults)."""
    unknown = sorted(set(doc) - set(SPEC_KEYS))
    if unknown:
        raise _fail(p, f"unknown key {unknown[0]!r}; keys: {', '.join(SPEC_KEYS)}")
    spec = SweepSpec(p)
    k = doc.get("max_cut_tensors", 1)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 8:
        raise _fail(p, f"'max_cut_tensors' must be an integer from 1 to 8, got {k!r}")
    spec.max_cut_tensors = k
    gap = doc.get("gap_to", "exact")
    if not isinstance(gap, str):
        raise _fail(p, "'gap_to' must be a planner name or \"none\"")
    spec.gap_to = None if gap.lower() == "none" else gap
    art = doc.get("artifacts", False)
    if not isinstance(art, bool):
        raise _fail(p, "'artifacts' must be true or false")
    spec.artifacts = art
    grids = doc.get("grid")
    if grids is not None and (not isinstance(grids, list) or not grids or any(not isinstance(g, dict) for g in grids)):
        raise _fail(p, "'grid' must be [[grid]] tables, each a product with its own keys")
    base = {key: doc[key] for key in GRID_KEYS if key in doc}
    for i, g in enumerate(grids or [{}]):
        where = f"grid[{i}]." if grids else ""
        bad = sorted(set(g) - set(GRID_KEYS))
        if bad:
            raise _fail(p, f"{where}{bad[0]}: not a grid key; a grid sets {', '.join(GRID_KEYS)}")
        options = dict(base.get("options", {})) if isinstance(base.get("options", {}), dict) else None
        if options is not None and "options" in g:
            options = {**options, **g["options"]} if isinstance(g["options"], dict) else None
        spec.grids.append(_parse_grid(spec, base | g | {"options": options}, p, where))
    if spec.gap_to:
        planner_entry(spec.gap_to, {}, p, "gap_to: ")
    n = len(spec.cells())
    if n > MAX_CELLS:
        raise _fail(p, f"{n} cells is more than {MAX_CELLS}; split the sweep into several specs")
    return spec


def _parse_grid(spec: SweepSpec, doc: Mapping[str, Any], p: Path, where: str) -> Grid:
    from hetcc.compiler import zoo
    from hetcc.compiler.api import board_of, parse_deadline, parse_power
    from hetcc.core.errors import HetccError
    from hetcc.planners import METRICS
    from hetcc.runtime.manifest import sha256_file

    options = doc["options"]
    if not isinstance(options, dict) or any(not isinstance(v, dict) for v in options.values()):
        raise _fail(p, f"'{where}options' must be tables of planner options, e.g. [options.dqn] steps = 2000")
    models = _strings(doc, "models", p, None, where)
    g = Grid(models, _strings(doc, "targets", p, ["hikey970"], where),
             _strings(doc, "objectives", p, ["latency"], where),
             [d.lower() for d in _strings(doc, "deadlines", p, ["none"], where)],
             [c.lower() for c in _strings(doc, "power_caps", p, ["none"], where)], [], [0],
             _strings(doc, "devices", p, ["all"], where), "")
    seeds = doc.get("seeds", [0])
    if not isinstance(seeds, list) or not seeds or any(
            isinstance(s, bool) or not isinstance(s, int) or not 0 <= s <= SEED_MAX for s in seeds):
        raise _fail(p, f"'{where}seeds' must be a non-empty list of integers in [0, 2**32)")
    g.seeds = list(dict.fromkeys(seeds))
    budget = []
    for key, kind, hi in (("budget_steps", int, 10**9), ("budget_seconds", (int, float), 86400)):
        if key in doc:
            v = doc[key]
            if isinstance(v, bool) or not isinstance(v, kind) or not 0 < v <= hi or not math.isfinite(v):
                raise _fail(p, f"'{where}{key}' must be a positive number of at most {hi:g}, got {v!r}")
            budget.append(f"{key.split('_')[1]}={v}")
    g.budget = ",".join(budget)

    for i, m in enumerate(models):
        if m in spec.idents:
            continue
        if m.endswith(".onnx"):
            f = (p.parent / m).resolve()
            if not f.is_file():
                raise _fail(p, f"{where}models[{i}] {m!r}: no such file (paths are relative to the spec)")
            spec.model_paths[m] = f
            spec.idents[m] = sha256_file(f)[:16]
        elif m in zoo.ZOO:
            spec.idents[m] = f"zoo:{m}"
        else:
            raise _fail(p, f"{where}models[{i}] {m!r}: not a zoo model (hetcc zoo list) or an .onnx path")
    for i, t in enumerate(g.targets):
        if t in spec.devices:
            continue
        try:
            spec.devices[t] = [d.name for d in board_of(spec._target_arg(t))[0].devices]
        except HetccError as e:
            raise _fail(p, f"{where}targets[{i}] {t!r}: {e}") from None
        spec.idents[t] = sha256_file(spec._target_arg(t))[:16] if _is_file_target(t) else f"target:{t}"
    for i, devices in enumerate(g.devices):
        if devices == "all":
            continue
        names = devices.split("+")
        for t in g.targets:
            missing = [d for d in names if d not in spec.devices[t]]
            if missing or len(set(names)) != len(names):
                raise _fail(p, f"{where}devices[{i}] {devices!r}: target {t!r} has no device {missing[0]!r} "
                            f"(its devices: {'+'.join(spec.devices[t])}); give \"all\" or names joined by +"
                            if missing else f"{where}devices[{i}] {devices!r} names a device twice")
    for i, o in enumerate(g.objectives):
        if o not in METRICS:
            raise _fail(p, f"{where}objectives[{i}] {o!r}: choose from {', '.join(METRICS)}")
    for key, parse in (("deadlines", parse_deadline), ("power_caps", parse_power)):
        for i, value in enumerate(getattr(g, key)):
            try:
                parse(None if value == "none" else value)
            except UsageError as e:
                raise _fail(p, f"{where}{key}[{i}]: {e}") from None
    entries = _strings(doc, "planners", p, ["auto"], where)
    for entry in entries:
        g.planners.append(planner_entry(entry, options, p, f"{where}planners: "))
    if len(set(g.planners)) != len(g.planners):
        raise _fail(p, f"'{where}planners' lists one planner with the same options twice")
    for name in options:
        if name not in {e.split()[0].split(":")[0] for e in entries}:
            raise _fail(p, f"[{where}options.{name}]: {name!r} is not in planners")
    return g


def planner_entry(entry: str, options: Mapping[str, dict], p: Path, where: str) -> tuple[str, str]:
    """(name, canonical JSON of its options) of a planners entry ``NAME[:ARG] [key=value ...]``:
    the [options.NAME] table, then the entry's own key=value pairs."""
    from hetcc.planners.registry import parse_options, parse_planner_entry, split_name

    try:
        name, ps, given = parse_planner_entry(entry, options, not_model="; a sweep plans single models",
                                              pair_note=f" in {entry!r}", unknown_with_arg=False)
        opts = split_name("single" if name == "single:*" else name, ps, given)
        if name == "single:*":                # device names come from each target
            opts[ps.positional] = "any"
        typed = parse_options(ps, opts)
    except UsageError as e:
        raise _fail(p, f"{where}{e}") from None
    canonical = {key: getattr(typed, key) for key in given}     # "200" and 200 are one cell
    return name, json.dumps(canonical, sort_keys=True)


# ---------------------------------------------------------------- one (model, target): runs in a Ray worker
def _row(cell: Cell, **values: Any) -> dict[str, Any]:
    row = {c: "" for c in COLUMNS}
    row.update(cell=cell.key, model=cell.model, target=cell.target, objective=cell.objective,
               deadline=cell.deadline, power_cap=cell.power_cap, planner=cell.planner, options=cell.options,
               seed=cell.seed, device_set=cell.devices, budget=cell.budget,
               worker=f"{socket.gethostname()}:{os.getpid()}",
               finished=time.strftime("%Y-%m-%dT%H:%M:%S"))
    row.update({k: v for k, v in values.items() if v is not None})
    return row


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:500]


def plan_group(model_path: str, target: str, cells: list[Cell], settings: dict[str, Any]) -> Iterator[list[dict]]:
    """Analyse ``model_path`` for ``target`` once, then plan each cell; yields the finished rows
    every 0.2 s (one Ray object per row would cost the driver ~1 ms of CPU each)."""
    batch: list[dict] = []
    last = time.monotonic()
    for row in _plan_rows(model_path, target, cells, settings):
        batch.append(row)
        if time.monotonic() - last > 0.2:
            yield batch
            batch, last = [], time.monotonic()
    if batch:
        yield batch


def _plan_rows(model_path: str, target: str, cells: list[Cell], settings: dict[str, Any]) -> Iterator[dict]:
    from hetcc.compiler.api import analyse
    from hetcc.core.errors import HetccError, InfeasibleError

    try:
        whole = analyse(model_path, target, max_cut_tensors=settings["max_cut_tensors"])
    except Exception as e:                            # recorded per cell; the sweep goes on
        for cell in cells:
            yield _row(cell, status="error", error=f"analysis: {_one_line(e)}")
        return
    analyses: dict[str, Any] = {}
    references: dict[tuple, float | None] = {}
    for cell in cells:
        if cell.devices not in analyses:
            analyses[cell.devices] = restrict(whole, cell.devices)
        analysis = analyses[cell.devices]
        size = {"layers": analysis.problem.num_layers, "states": analysis.problem.num_states}
        try:
            obj = objective_of(analysis, cell.objective, cell.deadline, cell.power_cap)
        except HetccError as e:
            yield _row(cell, status="skipped", error=_one_line(e), **size)
            continue
        options, budget = json.loads(cell.options), _budget(cell.budget)
        try:
            _warm_planner(analysis, obj, cell.planner, options)
            plan = analysis.plan(obj, planner=cell.planner, options=options, seed=cell.seed, budget=budget,
                                 allow_infeasible=True)
        except InfeasibleError as e:                  # no plan at all (e.g. nothing meets the cap)
            yield _row(cell, status="infeasible", feasible=False, error=_one_line(e),
                       deadline_ms=obj.deadline_ms, **size)
            continue
        except HetccError as e:                       # the planner does not apply (dp with edp, ...)
            yield _row(cell, status="skipped", error=_one_line(e), **size)
            continue
        except Exception as e:
            yield _row(cell, status="error", error=_one_line(e), **size)
            continue
        value = obj.value(plan.latency_ms, plan.energy_mj)
        ref = _reference(analysis, obj, cell, settings.get("gap_to"), references, plan, value)
        gap = (value - ref) / ref * 100.0 if ref and plan.feasible and math.isfinite(ref) else None
        artifact = None
        if settings.get("artifacts"):
            artifact = str(Path(settings["out"]) / "artifacts" / cell.key)
            analysis.emit(plan, artifact)
        yield _row(cell, status="ok" if plan.feasible else "infeasible", feasible=plan.feasible,
                   deadline_ms=obj.deadline_ms, latency_ms=plan.latency_ms, energy_mj=plan.energy_mj,
                   edp_mj_ms=plan.edp_mj_ms, value=value, reference=ref, gap_pct=gap,
                   planner_seconds=plan.seconds, slices=len(plan.slices),
                   devices=",".join(dict.fromkeys(analysis.problem.states.device[s.state] for s in plan.slices)),
                   artifact=artifact, error="; ".join(plan.violations) or None, stats=_stats(plan.stats), **size)


def restrict(analysis: Any, devices: str) -> Any:
    """``analysis`` with only ``devices`` (``all`` or ``big+gpu``) legal; presets such as
    ``--deadline medium`` are then relative to what those devices can do."""
    if devices == "all":
        return analysis
    import dataclasses

    import numpy as np

    problem = analysis.problem
    mask = np.isin(np.array(problem.states.device), devices.split("+"))
    return dataclasses.replace(analysis, problem=problem.replace(legal=problem.legal & mask[None, :]),
                               _reference=None)


def _budget(text: str) -> Any:
    from hetcc.planners import Budget

    if not text:
        return None
    parts = dict(pair.split("=") for pair in text.split(","))
    return Budget(steps=int(parts["steps"]) if "steps" in parts else None,
                  seconds=float(parts["seconds"]) if "seconds" in parts else None)


#: planners this worker process has run once (their imports and first-call set-up are done)
_WARM: set[str] = set()


def _warm_planner(analysis: Any, obj: Any, planner: str, options: dict) -> None:
    """Run ``planner`` once, untimed, for one step: planner_seconds then measures planning, not
    importing torch (dqn) or first-call set-up."""
    from hetcc.planners import Budget

    base = planner.split(":")[0]
    if base in _WARM:
        return
    _WARM.add(base)
    try:
        analysis.plan(obj, planner=planner, options=options, budget=Budget(steps=1), allow_infeasible=True)
    except Exception:                                 # the timed run reports what goes wrong
        pass


def _stats(stats: Mapping[str, Any]) -> str | None:
    """The plan's numeric statistics as compact JSON: numbers, flags and lists of numbers (a
    list's inf or nan as null, e.g. a search's best-so-far curve before anything fitted)."""
    def number(v: Any) -> bool:
        return isinstance(v, (int, float))

    keep: dict[str, Any] = {}
    for k, v in dict(stats or {}).items():
        if isinstance(v, bool) or (isinstance(v, int) and number(v)) or (isinstance(v, float) and math.isfinite(v)):
            keep[k] = v
        elif isinstance(v, (list, tuple)) and all(number(x) and not isinstance(x, bool) for x in v):
            keep[k] = [x if math.isfinite(x) else None for x in v]
    return json.dumps(keep, sort_keys=True, separators=(",", ":")) if keep else None


def objective_of(analysis: Any, metric: str, deadline: str, power_cap: str) -> Any:
    """The Objective of a spec's (objective, deadline, power cap) for ``analysis`` ("none": no limit)."""
    return analysis.objective(metric, None if deadline == "none" else deadline,
                              None if power_cap == "none" else power_cap)


def _reference(analysis: Any, obj: Any, cell: Cell, gap_to: str | None, cache: dict, plan: Any,
               value: float) -> float | None:
    """The reference planner's value for this objective (cached per objective and seed)."""
    from hetcc.core.errors import HetccError

    if not gap_to:
        return None
    key = (cell.objective, cell.deadline, cell.power_cap, cell.seed)
    if cell.planner == gap_to and plan.feasible:
        cache[key] = value
    if key not in cache:
        try:
            ref = analysis.plan(obj, planner=gap_to, seed=cell.seed)
            cache[key] = obj.value(ref.latency_ms, ref.energy_mj)
        except HetccError:                            # does not apply, or nothing feasible
            cache[key] = None
    return cache[key]


# ---------------------------------------------------------------- the table
def read_table(path: Path) -> list[dict[str, str]]:
    """The rows of cells.csv; a last line cut short by a kill is dropped."""
    if not path.exists():
        return []
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
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
        clean = {k: _fmt(v) for k, v in row.items()}
        self._w.writerow(clean)
        self._f.flush()
        self.rows.append(clean)

    def close(self) -> None:
        self._f.close()


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "" if not math.isfinite(v) else f"{v:.12g}"
    return "" if v is None else str(v)


# ---------------------------------------------------------------- the driver
@dataclass
class SweepResult:
    out: Path
    cells: int
    ran: int
    skipped_done: int
    rows: list[dict[str, str]]
    seconds: float


def _warm() -> int:
    import hetcc.compiler.api  # noqa: F401
    import hetcc.compiler.pipeline  # noqa: F401

    time.sleep(0.2)                                   # hold the CPU so each worker gets one
    return os.getpid()


def _check_reachable(address: str) -> None:
    """Ray waits minutes for a head that is not there; a TCP probe of 5 s tells at once."""
    where = address
    if address == "auto":
        where = os.environ.get("RAY_ADDRESS", "")
        if not where:
            try:
                where = Path(tempfile.gettempdir(), "ray", "ray_current_cluster").read_text().strip()
            except OSError:
                where = ""
        if not where:
            raise UsageError("--address auto: no Ray cluster was started on this machine; start one with "
                             "`ray start --head`, name it as HOST:PORT, or drop --address to run here")
    if where.startswith("ray://"):
        return                                        # Ray Client: its own connection handling
    host, sep, port = where.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--address {address!r}: use auto or HOST:PORT, e.g. --address 10.0.0.1:6379")
    try:
        socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=5).close()
    except OSError as e:
        raise UsageError(f"--address {address}: no Ray head answers at {where} ({e.strerror or e}); start one "
                         "with `ray start --head`, or drop --address to run here") from None


def init_ray(address: str | None, workers: int | None) -> Any:
    """Connect to ``address`` (``auto`` or HOST:PORT) or start Ray embedded with ``workers`` CPUs."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")    # no usage reports to the Ray project
    # Ray's C++ crash handler turns a SIGTERM during ray.init into an abort with a stack dump
    os.environ.setdefault("RAY_DISABLE_FAILURE_SIGNAL_HANDLER", "1")
    try:
        import ray
    except ImportError:
        raise UsageError("hetcc sweep needs Ray: pip install 'hetcc[sweep]'") from None
    if ray.is_initialized():
        return ray
    import signal

    main_thread = threading.current_thread() is threading.main_thread()
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)} if main_thread else {}

    def restore() -> None:                            # ray.init takes SIGTERM over: hetcc's exits 143
        for signum, handler in saved.items():
            if handler is not None:
                signal.signal(signum, handler)

    try:
        _start_ray(ray, address, workers, restore)
    except BaseException:                             # Ctrl-C / SIGTERM during start-up: no orphans
        restore()
        _shutdown_quietly()                           # stops the gcs/raylet this driver started
        raise
    restore()
    return ray


def _start_ray(ray: Any, address: str | None, workers: int | None, restore: Any) -> None:
    import logging

    if address:
        _check_reachable(address)
        try:
            with _own_sigterm(ray):
                ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise UsageError(f"--address {address}: cannot connect to a Ray cluster ({_one_line(e)}); "
                             "start one with `ray start --head` or drop --address to run here") from None
        restore()
    else:
        n = workers or os.cpu_count() or 1
        with _own_sigterm(ray):
            ray.init(address="local", num_cpus=n, include_dashboard=False,
                     logging_level=logging.ERROR, log_to_driver=False,
                     object_store_memory=256 * 1024 * 1024)
        restore()
        # start-up, not sweep time: each worker process imports hetcc's analysis once, now
        ray.get([ray.remote(num_cpus=1)(_warm).remote() for _ in range(n)])


def _shutdown_quietly() -> None:
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        try:
            ray.shutdown()
        except Exception:
            pass


def kill_embedded_ray() -> None:
    """Have the gcs, raylet and helpers of the Ray this process started (none for --address)
    killed just after this process exits: killed before, Ray's core worker threads here crash
    (SIGSEGV) when their connections drop; the workers follow their raylet."""
    import subprocess

    try:
        import ray._private.worker as worker

        node = worker._global_node
        pids = [str(p.process.pid) for procs in node.all_processes.values() for p in procs
                if getattr(p, "process", None) is not None] if node is not None and node.head else []
    except Exception:
        pids = []
    if pids:
        subprocess.Popen(["sh", "-c", f"sleep 0.5; kill -9 {' '.join(pids)} 2>/dev/null"], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class _own_sigterm:
    """While Ray starts, SIGTERM stays hetcc's (an interrupt that ``init_ray`` cleans up): Ray's own
    handlers would ``sys.exit(15)`` from inside ``ray.init`` (exit 15, no message, the half-started
    gcs and raylet left running). Ray installs them through one helper, replaced for the call."""

    def __init__(self, ray: Any) -> None:
        try:
            import ray._private.utils as utils
        except ImportError:                           # another Ray layout: leave it alone
            utils = None
        self.utils = utils if hasattr(utils, "set_sigterm_handler") else None

    def __enter__(self) -> None:
        if self.utils is not None:
            self.saved = self.utils.set_sigterm_handler
            self.utils.set_sigterm_handler = lambda handler: None

    def __exit__(self, *exc: Any) -> None:
        if self.utils is not None:
            self.utils.set_sigterm_handler = self.saved


def run_sweep(spec: SweepSpec, out: str | os.PathLike, *, address: str | None = None,
              workers: int | None = None, progress: bool = True, console: Any = None) -> SweepResult:
    """Run every cell of ``spec`` not yet in ``out/cells.csv``; see the module docstring."""
    from hetcc.compiler.api import resolve_model
    from hetcc.files.atomic import acquire_lock, release_lock

    t0 = time.perf_counter()
    root = Path(out)
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
        paths = {}
        for model in dict.fromkeys(m for m, _ in groups):
            paths[model] = str(spec.model_paths.get(model) or resolve_model(model, None, 0))
        settings = {"max_cut_tensors": spec.max_cut_tensors, "gap_to": spec.gap_to,
                    "artifacts": spec.artifacts, "out": str(root.resolve())}
        ran = 0
        if todo:
            preload_plotting()                        # while Ray starts: its start-up leaves a core idle
            ray = init_ray(address, workers)
            task = ray.remote(num_cpus=1, max_retries=0)(plan_group)
            # largest models first, so that no long task starts last (a shorter tail on few workers)
            order = sorted(groups, key=lambda g: -os.path.getsize(paths[g[0]]) * len(groups[g]))
            pending = [task.remote(paths[m], spec._target_arg(t), groups[(m, t)], settings) for m, t in order]
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
                        for row in batch:
                            table.append(row)
                            ran += 1
                            bar.advance(row)
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


# ---------------------------------------------------------------- summary and plots
def _num(v: str) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def summarise(rows: Sequence[Mapping[str, str]]) -> list[dict[str, Any]]:
    """Per (planner, objective): cells, ok/infeasible/skipped/error counts, median and worst gap,
    median planner milliseconds."""
    import statistics

    by: dict[tuple[str, str], list[Mapping[str, str]]] = defaultdict(list)
    for r in rows:
        planner = "single:*" if r["planner"].startswith("single:") else r["planner"]
        by[(planner, r["objective"])].append(r)
    out = []
    for (planner, objective), rs in sorted(by.items()):
        gaps = [g for g in (_num(r["gap_pct"]) for r in rs) if g is not None]
        secs = [s for s in (_num(r["planner_seconds"]) for r in rs) if s is not None]
        out.append({"planner": planner, "objective": objective, "cells": len(rs),
                    **{s: sum(r["status"] == s for r in rs) for s in ("ok", "infeasible", "skipped", "error")},
                    "median_gap_pct": statistics.median(gaps) if gaps else None,
                    "max_gap_pct": max(gaps) if gaps else None,
                    "median_planner_ms": statistics.median(secs) * 1e3 if secs else None})
    return out


def write_summary(root: Path, rows: Sequence[Mapping[str, str]]) -> list[dict[str, Any]]:
    summary = summarise(rows)
    with open(root / "summary.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(summary[0]) if summary else ["planner"])
        w.writeheader()
        w.writerows([{k: _fmt(v) for k, v in s.items()} for s in summary])
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
    planners = sorted({"single:*" if r["planner"].startswith("single:") else r["planner"] for r in rows})
    for column, name, label in (("gap_pct", "gap.png", "gap to the reference planner (%)"),
                                ("planner_seconds", "planner_time.png", "planner time (s, log)")):
        data = [[v for v in (_num(r[column]) for r in rows
                             if ("single:*" if r["planner"].startswith("single:") else r["planner"]) == p)
                 if v is not None] for p in planners]
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
    heads = ["planner", "objective", "cells", "ok", "infeasible", "skipped", "error", "median gap %",
             "max gap %", "median planner ms"]
    for h in heads:
        t.add_column(h, justify="left" if h in ("planner", "objective") else "right")
    for s in summarise(result.rows):
        t.add_row(s["planner"], s["objective"], *(str(s[k]) for k in ("cells", "ok", "infeasible", "skipped", "error")),
                  *("-" if s[k] is None else f"{s[k]:.2f}" for k in ("median_gap_pct", "max_gap_pct",
                                                                    "median_planner_ms")))
    console.print(t)
    console.print(f"{result.out / 'cells.csv'} (one row per cell), summary.csv, gap.png, planner_time.png")


# ---------------------------------------------------------------- command line


