"""A sweep's spec: the TOML keys, validated at once (each problem a one-line UsageError naming
the key), and the cells its grids make.

The spec (see ``examples/sweep.toml``; every key but ``models`` has a default)::

    models = ["resnet18", "my/model.onnx"]   # zoo names or .onnx paths (relative to the spec);
                                             # a list in the list is a mix: ["resnet18", "googlenet"]
    targets = ["hikey970"]                   # built-in names, board .toml or measurement .csv paths
    objectives = ["latency"]                 # latency | energy | edp; a mix also throughput|fairness|overall
    deadlines = ["none"]                     # none, short|medium|long, 170ms, 0.17s, 1.3x
    power_caps = ["none"]                    # none, 3W, 3000mW
    planners = ["auto"]                      # any planner; "single:*" = single:<each device>
    seeds = [0]                              # planner seeds (zoo weights always use seed 0)
    max_cut_tensors = 1
    gap_to = "exact"                         # reference planner(s) for the gap column, or "none"
    artifacts = false                        # write each cell's artifact to DIR/artifacts/<cell>/
    [options.dqn]                            # planner options, per planner name
    steps = 2000

A mix (several models planned at once by a workload planner: ``independent``, ``ga``,
``optimum``, ...) is a cell's ``model`` spelled ``a+b+c``; a grid may not give a mix a model
planner or a single model a workload planner (``auto`` plans either). Its gap compares with
``optimum`` unless ``gap_to`` names another workload planner.

``load_spec``/``parse_spec``/``planner_entry`` are also what ``hetcc tune`` and the benchmarks use.
"""
from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

from hetcc.core.errors import UsageError
from hetcc.core.limits import SEED_MAX

#: what a grid varies (top level: the defaults of every [[grid]], or the one grid when there is none)
GRID_KEYS = ("models", "targets", "objectives", "deadlines", "power_caps", "planners", "seeds", "devices",
             "budget_steps", "budget_seconds", "options")
SPEC_KEYS = GRID_KEYS + ("max_cut_tensors", "gap_to", "artifacts", "grid")
MAX_CELLS = 1_000_000


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
    workload_gap_to: str | None = "optimum"                      # the reference of a mix's gap
    artifacts: bool = False
    model_paths: dict[str, Path] = field(default_factory=dict)   # spec spelling -> .onnx path
    mixes: dict[str, tuple[str, ...]] = field(default_factory=dict)   # "a+b" -> its models' spellings
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
    gaps = [gap] if isinstance(gap, str) else gap
    if not isinstance(gaps, list) or not gaps or not all(isinstance(g, str) for g in gaps):
        raise _fail(p, "'gap_to' must be a planner name, a list of them (one per kind: model, workload) or \"none\"")
    if [g.lower() for g in gaps] == ["none"]:
        spec.gap_to = spec.workload_gap_to = None
    else:
        kinds = {}
        for g in gaps:
            kind = _planner_kind(g, p, "gap_to: ")
            if kind in kinds:
                raise _fail(p, f"gap_to names two {kind} planners ({kinds[kind]!r}, {g!r}); give one per kind")
            kinds[kind] = g
        spec.gap_to = kinds.get("model", "exact" if isinstance(gap, str) else None)
        spec.workload_gap_to = kinds.get("workload", "optimum" if isinstance(gap, str) else None)
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
    for ref in (spec.gap_to, spec.workload_gap_to):
        if ref:
            planner_entry(ref, {}, p, "gap_to: ")
    n = len(spec.cells())
    if n > MAX_CELLS:
        raise _fail(p, f"{n} cells is more than {MAX_CELLS}; split the sweep into several specs")
    return spec


def _parse_grid(spec: SweepSpec, doc: Mapping[str, Any], p: Path, where: str) -> Grid:
    from hetcc.compiler import zoo
    from hetcc.compiler.api import board_of, parse_deadline, parse_power
    from hetcc.core.errors import HetccError
    from hetcc.planners import METRICS
    from hetcc.planners.metrics import WORKLOAD_METRICS
    from hetcc.runtime.manifest import sha256_file

    options = doc["options"]
    if not isinstance(options, dict) or any(not isinstance(v, dict) for v in options.values()):
        raise _fail(p, f"'{where}options' must be tables of planner options, e.g. [options.dqn] steps = 2000")
    models = _models(spec, doc, p, where)
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

    for i, m in [(i, m) for i, entry in enumerate(models) for m in spec.mixes.get(entry, (entry,))]:
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
    for m in models:
        if m in spec.mixes:
            spec.idents[m] = "mix:" + "+".join(spec.idents[x] for x in spec.mixes[m])
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
    mixes = [m for m in models if m in spec.mixes]
    singles = [m for m in models if m not in spec.mixes]
    for i, o in enumerate(g.objectives):
        if o in WORKLOAD_METRICS and singles:
            raise _fail(p, f"{where}objectives[{i}] {o!r} scores several models at once and models lists "
                        f"{singles[0]!r}, one model: give it mixes only (models = [[\"a\", \"b\"]]) or "
                        f"{'|'.join(METRICS)}")
        if o not in METRICS and o not in WORKLOAD_METRICS:
            raise _fail(p, f"{where}objectives[{i}] {o!r}: choose from {', '.join(METRICS)}"
                        + (f" (a mix also {', '.join(WORKLOAD_METRICS)})" if mixes else ""))
    for key, parse in (("deadlines", parse_deadline), ("power_caps", parse_power)):
        for i, value in enumerate(getattr(g, key)):
            try:
                parse(None if value == "none" else value)
            except UsageError as e:
                raise _fail(p, f"{where}{key}[{i}]: {e}") from None
    entries = _strings(doc, "planners", p, ["auto"], where)
    for i, entry in enumerate(entries):
        kind = _planner_kind(entry, p, f"{where}planners: ")
        if kind == "model" and mixes:
            raise _fail(p, f"{where}planners[{i}] {entry.split()[0]!r} plans one model and models lists the mix "
                        f"{mixes[0]!r}: give mixes workload planners (independent, ga, optimum, ...: hetcc planners), "
                        "in a [[grid]] of their own")
        if kind == "workload" and singles:
            raise _fail(p, f"{where}planners[{i}] {entry.split()[0]!r} plans several models at once and models "
                        f"lists {singles[0]!r}, one model: give it mixes (models = [[\"a.onnx\", \"b.onnx\"]]), "
                        "in a [[grid]] of their own")
        g.planners.append(planner_entry(entry, options, p, f"{where}planners: "))
    if len(set(g.planners)) != len(g.planners):
        raise _fail(p, f"'{where}planners' lists one planner with the same options twice")
    for name in options:
        if name not in {e.split()[0].split(":")[0] for e in entries}:
            raise _fail(p, f"[{where}options.{name}]: {name!r} is not in planners")
    return g


def _models(spec: SweepSpec, doc: Mapping[str, Any], p: Path, where: str) -> list[str]:
    """The models entries as cells spell them: a string is one model, a list of two or more a mix
    (spelled ``a+b``, its members in ``spec.mixes``)."""
    value = doc.get("models")
    if not isinstance(value, list) or not any(isinstance(v, list) for v in value):
        return _strings(doc, "models", p, None, where)
    out = []
    for i, v in enumerate(value):
        if not isinstance(v, list):
            if isinstance(v, bool) or not isinstance(v, (str, int, float)):
                raise _fail(p, f"{where}models[{i}] must be a model or a list of models (a mix), got {type(v).__name__}")
            out.append(str(v).strip())
            continue
        members = _strings({"models": v}, "models", p, [], f"{where}models[{i}].")
        if len(members) < 2:
            raise _fail(p, f"{where}models[{i}] {v!r}: a mix is two or more models; give one model as a string")
        name = "+".join(members)
        spec.mixes[name] = tuple(members)
        out.append(name)
    if len(set(out)) != len(out):
        raise _fail(p, f"{where}'models' lists {sorted({v for v in out if out.count(v) > 1})[0]!r} twice")
    return out


def _planner_kind(entry: str, p: Path, where: str) -> str:
    """What a planners entry plans: ``model``, ``workload`` (``auto``: ``any``); unknown: one line."""
    from hetcc.planners.registry import get_spec

    name = entry.split()[0].split(":")[0] if entry.split() else entry
    if name == "auto":
        return "any"
    try:
        return get_spec(name).kind
    except UsageError as e:
        raise _fail(p, f"{where}{e}") from None


def planner_entry(entry: str, options: Mapping[str, dict], p: Path, where: str) -> tuple[str, str]:
    """(name, canonical JSON of its options) of a planners entry ``NAME[:ARG] [key=value ...]``:
    the [options.NAME] table, then the entry's own key=value pairs. ``auto`` takes no options."""
    from hetcc.planners.registry import parse_options, parse_planner_entry, split_name

    if entry.split() and entry.split()[0] == "auto":
        if len(entry.split()) > 1 or options.get("auto"):
            raise _fail(p, f"{where}planner 'auto' takes no options (it stands for the planner it picks)")
        return "auto", "{}"
    try:
        name, ps, given = parse_planner_entry(entry, options, not_model="; a sweep plans models and mixes",
                                              pair_note=f" in {entry!r}", unknown_with_arg=False,
                                              kinds=("model", "workload"))
        opts = split_name("single" if name == "single:*" else name, ps, given)
        if name == "single:*":                # device names come from each target
            opts[ps.positional] = "any"
        typed = parse_options(ps, opts)
    except UsageError as e:
        raise _fail(p, f"{where}{e}") from None
    canonical = {key: getattr(typed, key) for key in given}     # "200" and 200 are one cell
    return name, json.dumps(canonical, sort_keys=True)
