"""``hetcc calibrate BOARD.toml OBS.csv ... -o FITTED.toml``: fit a modelled board to observations.

Why: a board file's throughputs, overheads and powers are first guesses from data sheets; the
observations (``hetcc.measure.observations``: what ``hetcc profile`` measured, or numbers a paper
published) say what the board really does. This module fits the file's numbers to them by least
squares with hetcc's own cost model, nothing new: each prediction is what ``PlanningProblem``
charges (a slice's ``slice_cost``, a planner's plan through the registry), recomputed from the
board document with the parameters substituted (``targets.schema.build`` -> ``device_params``
-> ``cost_tables`` on each model's cached layer features), so the fitted file gives, when loaded,
exactly the numbers printed.

Parameters (``board_parameters``) are the document's numeric leaves under known keys, named
``base_power_mw``, ``DEV.peak_gflops.CLASS``, ``DEV.int8_peak_gops.CLASS``,
``DEV.mem_bandwidth_gbps``, ``DEV.layer_overhead_ms``, ``DEV.node_overhead_ms``,
``DEV.transfer.KEY``, ``DEV.dynamic_power_mw``, ``DEV.static_power_mw`` (one factor on every DVFS
level's static power; its value is the top level's) and ``DEV@MHZ.transfer.KEY`` (a level's own
transfer): keys a file adds (an op class) are parameters without code changes. The fit runs in
log space (every parameter is a positive scale) within ``[x0 / range, x0 * range]``. A device's
``int8_peak_gops.CLASS`` that is not free follows its ``peak_gflops.CLASS`` when that is fitted
(``int8_ties``): the file's int8 speed-up over float is what it states about the hardware, the
float rate is what the observations calibrate.

Residuals: log(predicted / observed) x sqrt(weight) for latency, energy and power;
predicted - observed for a gain; for plan_uses a hinge on the margin m = log(best plan that uses
the state / best plan that does not) (exact, by a DP over (layer, used) on the same slice
costs): max(0, m + MARGIN) when the plan should use it, max(0, MARGIN - m) when it should not.
The Jacobian is by central differences with the plans of the current point held fixed (the
optimum's cost moves with the parameters at a fixed plan: the envelope theorem), so a Jacobian
costs cost tables, not planner runs.

Why ~900 lines: the parameter table, the prediction of five kinds of observation, the fit, its
refusals (a parameter at its bound, parameters the data cannot separate) and the comment-keeping
writer belong together; scipy and tomlkit are imported inside the functions that need them.
"""
from __future__ import annotations

import fnmatch
import math
import time
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from hetcc.core.errors import UsageError
from hetcc.measure.observations import (MEASURED, Observation, check_model_hash, planner_spec, read_observations,
                           reported_memory)

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

#: the hinge's margin (log units): a plan_uses row holds with ~1 % to spare
MARGIN = 0.01
#: default bounds: [x0 / RANGE, x0 * RANGE]
DEFAULT_RANGE = 20.0
#: a fitted parameter this close (relative) to a bound is at it
BOUND_RTOL = 1e-6
#: ... and one this close (1 %) whose cost gradient points past the bound too (trf's iterates stay
#: strictly inside the box, so a parameter the data push out stops a little short of its bound)
BOUND_NEAR = 0.01
#: singular values below this x the largest make the Jacobian rank-deficient
RANK_RTOL = 1e-8
#: central-difference step in log space
STEP = 1e-5
#: significant digits written to the fitted file
DIGITS = 6
_MISSING = "hetcc calibrate needs scipy and tomlkit: pip install 'hetcc[calibrate]'"
_DEVICE_SCALARS = ("mem_bandwidth_gbps", "layer_overhead_ms", "node_overhead_ms", "dynamic_power_mw")
_DEVICE_TABLES = ("peak_gflops", "int8_peak_gops", "transfer")


# ------------------------------------------------------------------------------- the parameters
@dataclass(frozen=True)
class Param:
    """One fittable number: its name, unit, value in the file (``x0``) and where it is written
    (``slots``: document paths with the factor each holds of the value; static power scales every
    DVFS level)."""

    name: str
    unit: str
    x0: float
    slots: tuple[tuple[tuple[Any, ...], float], ...]


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _unit(name: str) -> str:
    last = name.rsplit(".", 1)[-1]
    if ".peak_gflops." in name:
        return "GFLOP/s"
    if ".int8_peak_gops." in name:
        return "GOP/s"
    for suffix, unit in (("_ms_per_mb", "ms/MB"), ("_gbps", "GB/s"), ("_ms", "ms"), ("_mw", "mW")):
        if last.endswith(suffix):
            return unit
    return ""


def board_parameters(doc: Mapping[str, Any]) -> list[Param]:
    """Every parameter of a parsed board document (see the module docstring), in file order."""
    out: list[Param] = []

    def add(name: str, path: tuple[Any, ...], value: Any) -> None:
        if _is_number(value):
            out.append(Param(name, _unit(name), float(value), ((path, 1.0),)))

    add("base_power_mw", ("base_power_mw",), doc.get("base_power_mw"))
    devices = doc.get("devices")
    for dev, d in (devices.items() if isinstance(devices, dict) else ()):
        if not isinstance(d, dict):
            continue
        for key in _DEVICE_TABLES:
            if isinstance(d.get(key), dict):
                for k, v in d[key].items():
                    add(f"{dev}.{key}.{k}", ("devices", dev, key, k), v)
        for key in _DEVICE_SCALARS:
            add(f"{dev}.{key}", ("devices", dev, key), d.get(key))
        levels = d.get("dvfs")
        if isinstance(levels, list) and levels:
            idx = [i for i, lvl in enumerate(levels) if isinstance(lvl, dict) and _is_number(lvl.get("static_power_mw"))]
            if idx and idx[-1] == len(levels) - 1:
                top = float(levels[-1]["static_power_mw"])
                slots = tuple((("devices", dev, "dvfs", i, "static_power_mw"),
                               (float(levels[i]["static_power_mw"]) / top) if top > 0 else 1.0) for i in idx)
                out.append(Param(f"{dev}.static_power_mw", "mW", top, slots))
            for i, lvl in enumerate(levels):
                if isinstance(lvl, dict) and isinstance(lvl.get("transfer"), dict) and _is_number(lvl.get("freq_mhz")):
                    for k, v in lvl["transfer"].items():
                        add(f"{dev}@{float(lvl['freq_mhz']):g}.transfer.{k}", ("devices", dev, "dvfs", i, "transfer", k), v)
        else:
            add(f"{dev}.static_power_mw", ("devices", dev, "static_power_mw"), d.get("static_power_mw"))
    return out


def _put(doc: Any, path: tuple[Any, ...], value: float) -> None:
    _walk(doc, path[:-1])[path[-1]] = value


# ------------------------------------------------------------------------------- the board
@dataclass
class Board:
    """A modelled board file: its text, parsed document (a working copy the fit writes into) and
    parameters."""

    text: str
    label: str
    path: Path
    doc: dict
    params: list[Param]

    @classmethod
    def load(cls, name_or_path: str | Path) -> "Board":
        """A built-in board by name (``hikey970``) or a board file by path."""
        from hetcc.targets.loader import load_bytes, target_source

        data, path, label = target_source(name_or_path)   # the loader's own checks and one-line errors
        target = load_bytes(data, path, label)
        if target.kind != "modelled":
            raise UsageError(f"{label}: target {target.name!r} is {target.kind}, not modelled: calibrate fits an "
                             "analytical board (kind = \"modelled\"), e.g. a copy of hikey970.toml")
        text = data.decode("utf-8")
        doc = tomllib.loads(text)
        return cls(text=text, label=label, path=path, doc=doc, params=board_parameters(doc))

    def target(self, values: np.ndarray | None = None) -> Any:
        """The Target with ``values`` (one per parameter) substituted (built without re-validating:
        the values stay positive, and the written file is validated by the loader)."""
        from hetcc.targets.schema import build

        for p, x in zip(self.params, self.x0 if values is None else values):
            for path, scale in p.slots:
                _put(self.doc, path, float(x) * scale)
        return build(self.doc, self.path, "0" * 64)

    @property
    def x0(self) -> np.ndarray:
        import numpy as np
        return np.array([p.x0 for p in self.params], dtype=np.float64)

    def index(self, name: str) -> int:
        for i, p in enumerate(self.params):
            if p.name == name:
                return i
        import difflib

        close = difflib.get_close_matches(name, [p.name for p in self.params], n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UsageError(f"{self.label} has no parameter {name!r}{hint}; docs/calibration.md lists the names")


# ------------------------------------------------------------------------------- the models
@dataclass
class _Model:
    ref: str
    name: str
    problem: Any                 # the PlanningProblem at the board's file values; its layer_features are re-priced
    state_legal: np.ndarray      # [L, S] legality before capacity
    sha256: str
    reasons: Mapping[Any, str]
    layer_ids: tuple[int, ...]

    @property
    def num_layers(self) -> int:
        return self.problem.num_layers


@dataclass
class Evaluation:
    """Predictions at one parameter vector: ``predicted`` (observation units; plan_uses 1/0),
    ``signal`` (the smooth quantity each residual is made of: log prediction, gain, margin),
    ``residual``; ``frozen``: the plans found, to hold fixed for a Jacobian."""

    predicted: np.ndarray
    signal: np.ndarray
    residual: np.ndarray
    frozen: dict = field(default_factory=dict)


def _metric(cost: Any, metric: str) -> float:
    return float(cost.latency_ms if metric == "latency" else cost.energy_mj)


def _price(problem: Any, slices: Sequence[Any], metric: str) -> float:
    return sum(_metric(problem.slice_cost(s.first, s.last, s.state), metric) for s in slices)


def _forced(problem: Any, metric: str, states: np.ndarray, target: int) -> tuple[float, list, float, list]:
    """(best cost of a plan using state ``target`` at least once, its slices, best cost of a plan
    never using it, its slices), over ``states``: exact, a DP over (layer boundary, used)."""
    import numpy as np
    from hetcc.planners.dp import SliceTables, cell_costs
    from hetcc.planners.problem import Slice

    tables = SliceTables(problem, cell_costs(problem), states)
    cost = tables.latency() if metric == "latency" else tables.energy()      # [l, k, j]
    L = problem.num_layers
    jt = int(np.flatnonzero(states == target)[0])
    inf = np.inf
    best_not = np.full(L + 1, inf)
    best_use = np.full(L + 1, inf)
    best_not[0] = 0.0
    back_not: list[tuple[int, int]] = [(0, 0)] * (L + 1)
    back_use: list[tuple[int, int, bool]] = [(0, 0, False)] * (L + 1)
    S = states.size
    for l in range(1, L + 1):
        c = cost[l, :l, :]
        cn = best_not[:l, None] + c
        cn[:, jt] = inf
        i = int(np.argmin(cn))
        best_not[l] = cn.flat[i]
        back_not[l] = divmod(i, S)
        cu = best_use[:l, None] + c
        cu[:, jt] = inf
        i = int(np.argmin(cu))
        prev = np.minimum(best_not[:l], best_use[:l])
        ct = prev + c[:, jt]
        k = int(np.argmin(ct))
        if ct[k] < cu.flat[i]:
            best_use[l] = ct[k]
            back_use[l] = (k, jt, bool(best_use[k] < best_not[k]))
        else:
            best_use[l] = cu.flat[i]
            k2, j2 = divmod(i, S)
            back_use[l] = (k2, j2, True)

    def path(use: bool) -> list:
        out, l = [], L
        while l > 0:
            if use:
                k, j, use = back_use[l]
            else:
                k, j = back_not[l]
            out.append(Slice(k, l - 1, int(states[j])))
            l = k
        return out[::-1]

    use_slices = path(True) if math.isfinite(best_use[L]) else []
    not_slices = path(False) if math.isfinite(best_not[L]) else []
    return float(best_use[L]), use_slices, float(best_not[L]), not_slices


class Calibration:
    """A board and its observations, ready to predict at any parameter vector.

    Analyses each model once (``hetcc.analyse``) and checks every observation against it (model
    hash, layer range, the slice being runnable, the state existing); ``evaluate(values)`` then
    recomputes the cost tables and every prediction."""

    def __init__(self, board: Board, observations: Sequence[Observation], *, progress: Any = None,
                 max_cut_tensors: int = 1) -> None:
        from hetcc.compiler.api import analyse
        from hetcc.compiler.costmodel import state_legal
        from hetcc.compiler.passmanager import step
        from hetcc.compiler.program import LAYERS, LEGALITY

        self.board = board
        # memory rows are not fitted: each sets the size a device's capacity rule charges a model
        self.memory = [o for o in observations if o.kind == "memory"]
        self.obs = [o for o in observations if o.kind != "memory"]
        self.target0 = board.target()
        self._check_board_rows()
        self.states = self.target0.states()
        self.models: dict[str, _Model] = {}
        for ref in dict.fromkeys(m for o in [*self.obs, *self.memory] for m in o.models):
            shown = Path(ref).name if "/" in ref or "\\" in ref else ref
            with step(progress, f"analysing {shown} for {self.target0.name}"):
                a = analyse(ref, self.target0, max_cut_tensors=max_cut_tensors)
            leg = a.program.get(LEGALITY)
            self.models[ref] = _Model(
                ref=ref, name=a.name, problem=a.problem.replace(hardware=None, hardware_config=None),
                state_legal=state_legal(self.target0, leg.mask, a.problem.num_layers),
                sha256=a.program.source_sha256, reasons=dict(leg.reasons),
                layer_ids=tuple(int(l.id) for l in a.program.get(LAYERS)))
        for o in self.memory:
            check_model_hash(o, o.models[0], self.models[o.models[0]].sha256)
        self.reported = reported_memory(self.memory)     # model ref -> device -> bytes
        for ref, m in self.models.items():
            m.problem = self._reported(ref, m.problem)
        self.row_state: list[int | None] = [self._state(o) for o in self.obs]
        self._check_rows()

    def board_bytes(self, ref: str, device: str) -> float:
        """What the board's own capacity rule charges model ``ref`` whole on ``device`` (bytes;
        ``with_reported_memory`` scales the capacity, never this charge)."""
        p = self.models[ref].problem
        return float(p.memory_bytes[:, p.states.device.index(device)].sum())

    def _reported(self, ref: str, problem: Any) -> Any:
        """``problem`` with the memory rows of model ``ref`` applied (``with_reported_memory``)."""
        for device, nbytes in self.reported.get(ref, {}).items():
            problem = problem.with_reported_memory(device, nbytes)
        return problem

    # -- checks against the models ---------------------------------------------------------------
    def _check_board_rows(self) -> None:
        from hetcc.measure.observations import check_board

        for o in [*self.obs, *self.memory]:
            check_board(o, self.target0)

    def _state(self, o: Observation) -> int | None:
        if o.device is None:
            return None
        s = self.target0.state_index(o.device, o.freq_mhz)
        if s is not None:
            return s
        raise UsageError(f"{o.where}: {o.state_text} is not a state of {self.target0.name}")  # pragma: no cover

    def _check_rows(self) -> None:
        for o, s in zip(self.obs, self.row_state):
            for ref in o.models:
                check_model_hash(o, ref, self.models[ref].sha256)
            if o.kind in MEASURED:
                m = self.models[o.models[0]]
                L = m.num_layers
                a, b = o.layer if o.layer is not None else (0, L - 1)
                if b >= L:
                    raise UsageError(f"{o.where}: column 'layer': {o.layer_text!r} is out of range; {m.name} has {L} "
                                     f"layers (0-{L - 1}) on {self.target0.name} (hetcc compile --dump-after layers "
                                     "lists them)")
                if not m.problem.slice_legal(a, b, s):
                    raise UsageError(f"{o.where}: {m.name} {self._what(o)} cannot run as one slice on "
                                     f"{o.state_text}: {self._why_illegal(m, a, b, s)}; drop the row or fix the "
                                     "board's legality")
            elif o.kind == "plan_uses":
                m = self.models[o.models[0]]
                states = self._dp_states(m.problem, o)
                if s not in states:
                    raise UsageError(f"{o.where}: {o.planner} plans latency on each device's top frequency only, so "
                                     f"{o.state_text} is never in its plan; leave freq_mhz empty")
                use, _, avoid, _ = _forced(m.problem, o.objective, states, s)
                if o.value == 1 and not math.isfinite(use):
                    raise UsageError(f"{o.where}: no plan of {m.name} can use {o.state_text} (illegal for every "
                                     "layer there); the row can never hold")
                if o.value == 0 and not math.isfinite(avoid):
                    raise UsageError(f"{o.where}: every plan of {m.name} uses {o.state_text} (some layer runs "
                                     "nowhere else); the row can never hold")

    @staticmethod
    def _what(o: Observation) -> str:
        if o.layer is None:
            return "(the whole model)"
        return f"layer{'s' if o.layer[0] != o.layer[1] else ''} {o.layer_text}"

    def _why_illegal(self, m: _Model, a: int, b: int, s: int) -> str:
        import numpy as np
        legal = np.asarray(m.problem.legal, dtype=bool)
        for i in range(a, b + 1):
            if not legal[i, s]:
                reason = m.reasons.get((m.layer_ids[i], self.states[s].device))
                return f"{m.problem.layer_label(i)} is illegal there" + (f" ({reason})" if reason else "")
        held = m.problem.slice_bytes(a, b, s)         # parameters, plus activations where the state counts them
        what = "parameters and activations" if m.problem.counts_activations else "parameters"
        cap = float(np.asarray(m.problem.capacity_bytes)[s])
        reported = self.reported.get(m.ref, {}).get(self.states[s].device)
        if reported is not None:                      # with_reported_memory: a share of the reported size
            total = self.board_bytes(m.ref, self.states[s].device)
            return (f"its share of the {reported / 1e6:g} MB a memory row reports for the model "
                    f"({held * reported / total / 1e6:.1f} MB) exceeds the device's capacity "
                    f"({cap * reported / total / 1e6:.1f} MB)")
        return f"its {what} ({held / 1e6:.1f} MB) exceed the device's capacity ({cap / 1e6:.1f} MB)"

    @staticmethod
    def _dp_states(problem: Any, o: Observation) -> np.ndarray:
        import numpy as np
        name = planner_spec(o.planner or "dp")[0]
        if name == "dp" and o.objective == "latency":
            return np.flatnonzero(problem.states.is_fmax)
        return np.arange(problem.num_states)

    # -- predictions -----------------------------------------------------------------------------
    def problems(self, target: Any, refs: Sequence[str] | None = None) -> dict[str, Any]:
        """Each model's PlanningProblem on ``target`` (cost tables recomputed)."""
        import numpy as np
        from hetcc.compiler.costmodel import device_params
        from hetcc.planners.hardware import TABLES, cost_tables

        params = device_params(target)
        out = {}
        for ref in (self.models if refs is None else refs):
            m = self.models[ref]
            t = cost_tables(m.problem.layer_features, params, m.state_legal)
            out[ref] = self._reported(ref, m.problem.replace(
                **{k: t[k] for k in TABLES}, legal=t["legal"], communication=t["communication"],
                capacity_bytes=np.asarray(params.capacity_bytes, dtype=np.float64),
                base_power_mw=float(params.base_power_mw)))
        return out

    def _plan(self, problem: Any, ref: str, spec: str, metric: str, frozen: dict, fixed: bool) -> tuple[float, Any]:
        key = ("plan", ref, spec, metric)
        if not fixed and key not in frozen:
            from hetcc.planners import registry
            from hetcc.planners.context import PlanContext
            from hetcc.planners.metrics import Objective

            name, options = planner_spec(spec)
            frozen[key] = registry.run(problem, Objective(metric), name, options, PlanContext(0),
                                       allow_infeasible=True).slices
        slices = frozen[key]
        return _price(problem, slices, metric), slices

    def evaluate(self, values: np.ndarray | None = None, *, target: Any = None, frozen: dict | None = None,
                 rows: Sequence[int] | None = None) -> Evaluation:
        """Predictions at ``values`` (default: the file's; or at a loaded ``target``). ``frozen``
        (an earlier Evaluation's) holds its plans fixed; ``rows`` limits the work to those rows
        (the others are NaN)."""
        import numpy as np
        tgt = target if target is not None else self.board.target(self.board.x0 if values is None else values)
        idx = range(len(self.obs)) if rows is None else rows
        refs = list(dict.fromkeys(m for i in idx for m in self.obs[i].models))
        probs = self.problems(tgt, refs)
        fixed = frozen is not None
        store: dict = frozen if fixed else {}
        n = len(self.obs)
        pred, sig, res = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
        for i in idx:
            o = self.obs[i]
            w = math.sqrt(o.weight)
            s = self.row_state[i]
            if o.kind in MEASURED:
                p = probs[o.models[0]]
                a, b = o.layer if o.layer is not None else (0, p.num_layers - 1)
                c = p.slice_cost(a, b, s)
                v = {"latency": c.latency_ms, "energy": c.energy_mj,
                     "power": c.energy_mj / c.latency_ms * 1000.0 if c.latency_ms > 0 else math.inf}[o.kind]
                pred[i] = v
                sig[i] = math.log(v) if v > 0 else -math.inf
                res[i] = (sig[i] - math.log(o.value)) * w
            elif o.kind == "gain":
                logs = []
                for ref in o.models:
                    mine, _ = self._plan(probs[ref], ref, o.planner, o.objective, store, fixed)
                    base, _ = self._plan(probs[ref], ref, o.baseline, o.objective, store, fixed)
                    logs.append(math.log(mine / base))
                pred[i] = sig[i] = 1.0 - math.exp(sum(logs) / len(logs))
                res[i] = (pred[i] - o.value) * w
            else:
                ref = o.models[0]
                p = probs[ref]
                _, slices = self._plan(p, ref, o.planner, o.objective, store, fixed)
                pred[i] = float(any(sl.state == s for sl in slices))
                key = ("forced", ref, o.objective, s, o.planner)
                if not fixed and key not in store:
                    _, use_sl, _, not_sl = _forced(p, o.objective, self._dp_states(p, o), s)
                    store[key] = (use_sl, not_sl)
                use_sl, not_sl = store[key]
                use = _price(p, use_sl, o.objective) if use_sl else math.inf      # [] = no such plan
                avoid = _price(p, not_sl, o.objective) if not_sl else math.inf
                margin = math.log(use / avoid) if math.isfinite(use) and math.isfinite(avoid) else (
                    math.inf if not math.isfinite(use) else -math.inf)
                margin = max(-50.0, min(50.0, margin))
                sig[i] = margin
                res[i] = max(0.0, (margin if o.value == 1 else -margin) + MARGIN) * w
        return Evaluation(pred, sig, res, store)


# ------------------------------------------------------------------------------- the fit
@dataclass
class FitResult:
    """What ``fit`` found: the values (file units, every parameter; free ones rounded to DIGITS
    significant digits), which were free, the evaluations before and after, solver stats."""

    values: np.ndarray
    free: list[int]
    kept: list[int]              # not constrained by the observations
    fixed: list[int]             # excluded by --fix or by being zero in the file
    before: Evaluation
    after: Evaluation
    nfev: int
    njev: int
    seconds: float
    message: str
    bounds: tuple[np.ndarray, np.ndarray]
    converged: bool = True
    tied: dict[int, int] = field(default_factory=dict)   # int8 parameter -> the float one it follows
    #: with no --free: parameters the fit could not pin down, kept at the file's value -> why
    dropped: dict[int, str] = field(default_factory=dict)


class _Refusal(UsageError):
    """A fit refused for parameters the observations cannot pin down; ``drops`` names them, each
    with why, so that a fit over the default free set can keep them at the file's value instead."""

    def __init__(self, message: str, drops: Sequence[tuple[str, str]]):
        super().__init__(message)
        self.drops = list(drops)


def _pattern_matches(names: Sequence[str], pattern: str, flag: str) -> list[int]:
    hit = [i for i, n in enumerate(names) if fnmatch.fnmatchcase(n, pattern)]
    if not hit:
        raise UsageError(f"{flag} {pattern!r} matches no parameter of this board; the parameters are "
                         f"{', '.join(names)} (docs/calibration.md)")
    return hit


def _is_pattern(text: str) -> bool:
    return any(c in text for c in "*?[")


def parse_bound(text: str) -> tuple[str, float, float]:
    """``NAME=LO:HI`` -> (name, lo, hi), refused unless 0 < lo < hi, finite."""
    name, eq, rng = text.partition("=")
    lo_s, colon, hi_s = rng.partition(":")
    try:
        lo, hi = float(lo_s), float(hi_s)
    except ValueError:
        lo = hi = math.nan
    if not eq or not colon or not name.strip() or not (math.isfinite(lo) and math.isfinite(hi)):
        raise UsageError(f"malformed --bound {text!r}; write NAME=LO:HI, e.g. --bound gpu.node_overhead_ms=0.01:1")
    if not 0 < lo < hi:
        raise UsageError(f"--bound {text!r}: need 0 < LO < HI (parameters are positive; the fit runs in log space)")
    return name.strip(), lo, hi


def parse_set(text: str) -> tuple[str, float]:
    """``NAME=VALUE`` -> (name, value), refused unless VALUE is a finite number >= 0."""
    name, eq, val = text.partition("=")
    try:
        value = float(val)
    except ValueError:
        value = math.nan
    if not eq or not name.strip() or not math.isfinite(value):
        raise UsageError(f"malformed --set {text!r}; write NAME=VALUE, e.g. --set base_power_mw=0")
    if value < 0:
        raise UsageError(f"--set {text!r}: a board's numbers are >= 0; give a value of 0 or more")
    return name.strip(), value


def _check_range(range_factor: float) -> None:
    """UsageError unless the --range factor is finite and above 1 (bounds [x / F, x * F])."""
    if not (math.isfinite(range_factor) and range_factor > 1):
        raise UsageError(f"--range {range_factor:g}: give a factor above 1 (default {DEFAULT_RANGE:g}: "
                         "each parameter within [x / F, x * F])")


def _dependence(cal: Calibration, x: np.ndarray, base: Evaluation, candidates: Sequence[int]) -> dict[int, list[int]]:
    """Rows whose signal moves when each candidate parameter is scaled by 1.1 (plans held)."""
    import numpy as np
    out = {}
    for j in candidates:
        v = x.copy()
        v[j] *= 1.1
        e = cal.evaluate(v, frozen=base.frozen)
        moved = np.abs(e.signal - base.signal) > 1e-12 * (1.0 + np.abs(base.signal))
        moved |= np.isfinite(e.signal) != np.isfinite(base.signal)
        out[j] = [int(r) for r in np.flatnonzero(moved)]
    return out


def select_free(cal: Calibration, free: Sequence[str] = (), fix: Sequence[str] = (), *,
                base: Evaluation | None = None,
                known: dict[int, list[int]] | None = None) -> tuple[list[int], list[int], list[int], dict]:
    """(free, kept, fixed, dependence): the free set from the patterns (default: every parameter
    some observation depends on); refusals for explicitly freed parameters nothing depends on.
    ``base``: the evaluation at the file's values, when the caller has it (else computed);
    ``known``: dependences already found at those values (read, and filled with the new ones)."""
    params = cal.board.params
    names = [p.name for p in params]
    x0 = cal.board.x0
    if base is None:
        base = cal.evaluate(x0)
    if free:
        chosen = sorted({i for pat in free for i in _pattern_matches(names, pat, "--free")})
    else:
        chosen = list(range(len(params)))
    fixed = sorted({i for pat in fix for i in _pattern_matches(names, pat, "--fix")})
    explicit = {names.index(p) for p in free if not _is_pattern(p)}
    for i in chosen:
        if i in explicit and i not in fixed and not x0[i] > 0:
            raise UsageError(f"--free {names[i]}: it is {x0[i]:g} in {cal.board.label}; the fit runs in log space "
                             "from a positive value: write a small positive guess there first")
    zero = [i for i in chosen if not x0[i] > 0 and i not in fixed]
    cand = [i for i in chosen if i not in fixed and x0[i] > 0]
    known = {} if known is None else known
    known.update(_dependence(cal, x0, base, [i for i in cand if i not in known]))
    dep = {i: known[i] for i in cand}
    for i in cand:
        if i in explicit and not dep[i]:
            raise UsageError(f"--free {names[i]}: no observation depends on it (its rows would not move); drop it, "
                             "or add observations that run on that device or use what it prices")
    free_idx = [i for i in cand if dep[i]]
    kept = [i for i in cand if not dep[i]]
    return free_idx, kept, sorted(set(fixed) | set(zero)), dep


def int8_ties(params: Sequence[Param], free: Sequence[int]) -> list[tuple[int, int, float]]:
    """(int8 parameter, float parameter, int8 / float in the file) for every free
    ``DEV.peak_gflops.CLASS`` whose ``DEV.int8_peak_gops.CLASS`` exists and is not free."""
    index = {p.name: i for i, p in enumerate(params)}
    out = []
    for i in free:
        name = params[i].name
        if ".peak_gflops." not in name:
            continue
        j = index.get(name.replace(".peak_gflops.", ".int8_peak_gops."))
        if j is not None and j not in free and params[i].x0 > 0:
            out.append((j, i, params[j].x0 / params[i].x0))
    return out


def fit(cal: Calibration, *, free: Sequence[str] = (), fix: Sequence[str] = (),
        bounds: Mapping[str, tuple[float, float]] | None = None, range_factor: float = DEFAULT_RANGE,
        progress: Any = None) -> FitResult:
    """Least squares over the free parameters (see the module docstring); raises UsageError for
    the refusals: too few observations, a parameter at its bound, parameters not separated.

    With ``free`` given, the set is the caller's and those refusals stand. Without it the fit
    chooses: it starts from every parameter some observation moves and, where the fit pushes
    some to a bound or cannot separate them, keeps those at the file's value (``dropped``, with
    why) and fits the rest again, until a fit holds or nothing is left to drop. A parameter given
    a ``--bound`` is one the caller wants fitted: its refusal stands."""
    if free:
        return _fit(cal, free=free, fix=fix, bounds=bounds, range_factor=range_factor, progress=progress)
    names = [p.name for p in cal.board.params]
    fix = list(fix)
    dropped: dict[int, str] = {}
    before, known = cal.evaluate(cal.board.x0), {}     # the same in every round: found once
    while True:
        try:
            result = _fit(cal, free=free, fix=fix, bounds=bounds, range_factor=range_factor, progress=progress,
                          before=before, known=known)
        except _Refusal as refusal:
            # a parameter given a --bound is one the caller wants fitted: never dropped
            new = [(n, why) for n, why in refusal.drops if names.index(n) not in dropped and n not in (bounds or {})]
            if not new:
                raise
            last = refusal
            for n, why in new:
                dropped[names.index(n)] = why
                fix.append(n)
            continue
        except UsageError:
            if dropped:                    # dropping left nothing to fit: the refusal that began it says why
                raise last from None
            raise
        result.dropped = dropped
        result.fixed = [i for i in result.fixed if i not in dropped]
        return result


def _fit(cal: Calibration, *, free: Sequence[str], fix: Sequence[str],
         bounds: Mapping[str, tuple[float, float]] | None, range_factor: float, progress: Any,
         before: Evaluation | None = None, known: dict[int, list[int]] | None = None) -> FitResult:
    """One least-squares fit over the set ``free`` / ``fix`` give (``fit``'s docstring);
    ``before`` and ``known``: the evaluation and dependences at the file's values, when found."""
    import numpy as np
    try:
        from scipy.optimize import least_squares
    except ImportError:
        raise UsageError(_MISSING) from None
    _check_range(range_factor)
    params = cal.board.params
    names = [p.name for p in params]
    x0 = cal.board.x0
    before = cal.evaluate(x0) if before is None else before
    free_idx, kept, fixed, dep = select_free(cal, free, fix, base=before, known=known)
    n_obs = len(cal.obs)
    if not free_idx:
        raise UsageError("nothing to fit: no free parameter moves any observation (--free / --fix leave none)")
    if len(free_idx) > n_obs:
        raise UsageError(f"{len(free_idx)} free parameters but {n_obs} observations: a least-squares fit needs at "
                         f"least as many observations as parameters; fix some with --fix (e.g. --fix "
                         f"'{names[free_idx[-1]].split('.')[0]}.*') or add observations")
    lo = x0 / range_factor
    hi = x0 * range_factor
    for name, (b_lo, b_hi) in (bounds or {}).items():
        i = cal.board.index(name)
        lo[i], hi[i] = b_lo, b_hi
    F = np.array(free_idx)
    zlo, zhi = np.log(lo[F]), np.log(hi[F])
    z0 = np.clip(np.log(x0[F]), zlo + 1e-9 * (zhi - zlo), zhi - 1e-9 * (zhi - zlo))
    # a measured row prices one fixed slice: what it depends on never changes; a gain or plan_uses row
    # depends on plans, which the fit may change, so every Jacobian column recomputes those rows
    plan_rows = [i for i, o in enumerate(cal.obs) if o.kind not in MEASURED]
    rows_of = {j: sorted(set(dep[j]) | set(plan_rows)) for j in free_idx}
    cache: dict[bytes, Evaluation] = {}
    counts = {"fev": 0, "jev": 0}
    task = progress.task(f"fitting {len(free_idx)} parameters to {n_obs} observations") if progress else None

    ties = int8_ties(params, free_idx)

    def tie(v: np.ndarray) -> np.ndarray:
        for j, i, ratio in ties:
            v[j] = v[i] * ratio
        return v

    def values(z: np.ndarray) -> np.ndarray:
        v = x0.copy()
        v[F] = np.exp(z)
        return tie(v)

    def point(z: np.ndarray) -> Evaluation:
        key = np.asarray(z, dtype=np.float64).tobytes()
        if key not in cache:
            if len(cache) > 4:
                cache.clear()
            cache[key] = cal.evaluate(values(z))
            counts["fev"] += 1
            if task is not None:
                task.update(1)
        return cache[key]

    def fun(z: np.ndarray) -> np.ndarray:
        return point(z).residual

    def jac(z: np.ndarray) -> np.ndarray:
        return jacobian(z, point(z))

    def jacobian(z: np.ndarray, base: Evaluation) -> np.ndarray:
        counts["jev"] += 1
        J = np.zeros((n_obs, len(free_idx)))
        for col, j in enumerate(free_idx):
            rows = rows_of[j]
            if not rows:
                continue
            zp, zm = z.copy(), z.copy()
            zp[col] += STEP
            zm[col] -= STEP
            rp = cal.evaluate(values(zp), frozen=base.frozen, rows=rows).residual
            rm = cal.evaluate(values(zm), frozen=base.frozen, rows=rows).residual
            J[rows, col] = (rp[rows] - rm[rows]) / (2 * STEP)
        return J

    t0 = time.perf_counter()
    try:
        res = least_squares(fun, z0, jac=jac, bounds=(zlo, zhi), method="trf", x_scale=1.0,
                            xtol=1e-12, ftol=1e-12, gtol=1e-10, max_nfev=200 * (len(free_idx) + 1))
    finally:
        if task is not None:
            task.close()
    seconds = time.perf_counter() - t0
    z = res.x
    x_fit = values(z)

    # refusal 1: parameters at their bounds (all of them named, so one run says what to widen)
    J = jacobian(z, point(z))
    r = point(z).residual
    grad = J.T @ r                                   # d(cost)/d(log parameter); > 0: the fit wants it lower
    push = 1e-6 * max(1.0, float(r @ r))
    hits = []
    for col, j in enumerate(free_idx):
        at_lo = (res.active_mask[col] < 0 or z[col] - zlo[col] <= BOUND_RTOL
                 or (z[col] - zlo[col] <= BOUND_NEAR and grad[col] > push))
        at_hi = (res.active_mask[col] > 0 or zhi[col] - z[col] <= BOUND_RTOL
                 or (zhi[col] - z[col] <= BOUND_NEAR and grad[col] < -push))
        if at_lo or at_hi:
            unit = f" {params[j].unit}" if params[j].unit else ""
            hits.append((names[j], f"{lo[j] if at_lo else hi[j]:.6g}{unit}", "lower" if at_lo else "higher"))
    drops = [(n, f"the fit pushed it to its bound {b}: the observations want it {way}") for n, b, way in hits]
    if len(hits) == 1:
        n, b, way = hits[0]
        raise _Refusal(f"the fit pushed {n} to its bound {b}: the observations want it {way}; widen it with "
                       f"--bound {n}=LO:HI or fix it with --fix {n}", drops)
    if hits:
        raise _Refusal("the fit pushed " + ", ".join(f"{n} to its bound {b} (the observations want it {way})"
                                                     for n, b, way in hits)
                       + ": widen them with --bound NAME=LO:HI or fix them with "
                       + " ".join(f"--fix {n}" for n, _, _ in hits), drops)
    # refusal 2: parameters the observations cannot separate (at the solution)
    _check_rank(J, [names[j] for j in free_idx])

    x_out = x0.copy()
    x_out[F] = [float(f"{v:.{DIGITS}g}") for v in x_fit[F]]
    x_out = tie(x_out)                     # an int8 rate follows its float rate as written
    x_out[[j for j, _, _ in ties]] = [float(f"{x_out[j]:.{DIGITS}g}") for j, _, _ in ties]
    after = cal.evaluate(x_out)
    return FitResult(values=x_out, free=free_idx, kept=kept, fixed=fixed, before=before, after=after,
                     nfev=counts["fev"], njev=counts["jev"], seconds=seconds, message=str(res.message),
                     bounds=(lo, hi), converged=bool(res.status != 0), tied={j: i for j, i, _ in ties})


def _check_rank(J: np.ndarray, names: Sequence[str]) -> None:
    """UsageError naming the parameters of the weakest direction when J is rank-deficient."""
    import numpy as np
    if J.size == 0:
        return
    norms = np.linalg.norm(J, axis=0)
    top = float(norms.max()) if norms.size else 0.0
    flat = [names[c] for c in np.flatnonzero(norms <= RANK_RTOL * max(top, 1e-300))]
    if flat:
        listed = _listing(flat)
        raise _Refusal(f"{listed} {'is' if len(flat) == 1 else 'are'} not constrained by these observations at the "
                       "fitted point (the rows that depend on it only hold already: plan_uses rows with their "
                       f"margin): fix {'it' if len(flat) == 1 else 'them'} with "
                       + " ".join(f"--fix {n}" for n in flat[:8]) + (" ..." if len(flat) > 8 else "")
                       + ", or add observations that measure it",
                       [(n, "not constrained by these observations at the fitted point") for n in flat])
    _, s, vt = np.linalg.svd(J, full_matrices=False)
    weak = [k for k in range(s.size) if s[k] < RANK_RTOL * s[0]]
    groups: list[list[str]] = []
    seen: set[str] = set()
    for k in weak[::-1][:5]:                      # the weakest directions first
        v = np.abs(vt[k])
        who = [names[i] for i in np.argsort(-v) if v[i] >= 0.1 * v.max()][:4]
        if not set(who) <= seen:
            groups.append(who)
            seen |= set(who)
    if not groups:
        return
    parts = [f"{g[0]} is not determined by these observations (the rows barely move with it)" if len(g) == 1 else
             f"{_listing(g)} are not separated by these observations (only a combination of them is)" for g in groups]
    fixes = " ".join(f"--fix {g[-1]}" for g in groups)
    one = len(groups) == 1 and len(groups[0]) == 1
    raise _Refusal("; ".join(parts) + f": fix {'it' if one else 'one of each' if len(groups) > 1 else 'one'} "
                   f"with {fixes}, or add observations that tell them apart (single layers, other models, other "
                   "frequencies)",
                   [(g[-1], "not determined by these observations" if len(g) == 1 else
                     f"not separated from {_listing(g[:-1])} by these observations") for g in groups])


def _listing(names: Sequence[str], most: int = 8) -> str:
    shown = list(names[:most]) + ([f"{len(names) - most} more"] if len(names) > most else [])
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


# ------------------------------------------------------------------------------- the fitted file
def _note(sources: str, n_obs: int) -> str:
    return f"fitted by hetcc calibrate from {sources} ({n_obs} observations)"


def _old_comment(text: str) -> str:
    """A trailing comment's text without its '#' and without an earlier fit's note."""
    t = text.lstrip("#").strip()
    if t.startswith("fitted by hetcc calibrate"):
        t = t.split(" -- ", 1)[1] if " -- " in t else ""
    return t


def _set_comment(item: Any, note: str) -> None:
    old = _old_comment(item.trivia.comment or "")
    item.trivia.comment = "# " + note + (f" -- {old}" if old else "")
    if not item.trivia.comment_ws:
        item.trivia.comment_ws = "  "


def fitted_text(board: Board, values: np.ndarray, changed: Sequence[int], sources: str, n_obs: int,
                scaled: Mapping[int, str] | None = None, given: Mapping[int, float] | None = None) -> str:
    """The board file with ``values`` of the ``changed`` parameters written in, every comment kept,
    each changed number (or the line holding it) annotated with the fit and its old value;
    ``scaled``: parameters that followed another (int8 rates: ``int8_ties``), by its name;
    ``given``: parameters set by ``--set`` (their old value), annotated as set, not fitted."""
    try:
        import tomlkit
        from tomlkit.items import Array, Comment, InlineTable
    except ImportError:
        raise UsageError(_MISSING) from None
    doc = tomlkit.parse(board.text)
    note = _note(sources, n_obs)
    # anchor id -> (item holding the comment, [fragments], the note: fitted or set)
    anchors: dict[int, tuple[Any, list[str], str]] = {}
    groups: dict[tuple[int, int], list[str]] = {}
    given = given or {}

    def anchor(item: Any, frag: str, why: str) -> None:
        anchors.setdefault(id(item), (item, [], why))[1].append(frag)

    for j in changed:
        p = board.params[j]
        x = float(values[j])
        why = f"set by hetcc calibrate --set {p.name}={x:g}" if j in given else note
        old_x = given.get(j, p.x0)

        for path, scale in p.slots:
            new_v = float(f"{x * scale:.{DIGITS}g}")
            node = _walk(doc, path[:-1])
            old = node[path[-1]]
            new = tomlkit.item(new_v)
            if hasattr(old, "trivia"):
                new.trivia.indent, new.trivia.comment_ws = old.trivia.indent, old.trivia.comment_ws
                new.trivia.comment, new.trivia.trail = old.trivia.comment, old.trivia.trail
            node[path[-1]] = new
            old_v = old.as_string().strip() if hasattr(old, "as_string") else f"{float(old):g}"
            # where the note goes: the number's own line if it sits in a table, else the line of
            # the key holding the inline table / array (and an array element's own comment)
            holder_i = next((i for i in range(len(path) - 1)
                             if isinstance(_walk(doc, path[:i + 1]), (InlineTable, Array))), None)
            if holder_i is None:
                anchor(node[path[-1]], f"was {old_v}", why)
                continue
            holder = _walk(doc, path[:holder_i + 1])
            inner = ".".join(str(k) for k in path[holder_i + 1:] if not isinstance(k, int))
            if isinstance(holder, Array) and p.name.endswith(".static_power_mw"):
                how = f"x{x / old_x:.4g}" if old_x > 0 else f"set from {x:g}"
                anchor(holder, f"static_power_mw {how} on every level ({p.name} was {old_x:g})", why)
            elif isinstance(holder, Array):
                anchor(holder, f"{p.name} was {old_v}", why)
            elif scaled and j in scaled:
                anchor(holder, f"{inner} was {old_v}, scaled with {scaled[j]} (the int8 speed-up kept)", why)
            else:
                anchor(holder, f"{inner} was {old_v}", why)
            if isinstance(holder, Array):
                groups.setdefault((id(holder), int(path[holder_i + 1])), []).append(f"{inner} was {old_v}")
    for item, frags, why in anchors.values():
        frags = list(dict.fromkeys(frags))
        if len(frags) == 1 and frags[0].startswith("was "):
            _set_comment(item, f"{why}, {frags[0]}")
        else:
            _set_comment(item, f"{why}: {', '.join(frags)}")
    # an array element's own trailing comment (a dvfs level on its own line) says its old value too
    for (arr_id, i), frags in groups.items():
        arr = anchors[arr_id][0]
        try:
            grp = [g for g in arr._value if getattr(g, "value", None) is not None and not g.is_whitespace()][i]
        except (AttributeError, IndexError, TypeError):   # another tomlkit layout: the array's note says it
            continue
        com = getattr(grp, "comment", None)
        if isinstance(com, Comment) and com.trivia.comment:
            old = _old_comment(com.trivia.comment)
            com.trivia.comment = "# fitted: " + ", ".join(frags) + (f" -- {old}" if old else "")
    return tomlkit.dumps(doc)


def _walk(doc: Any, path: Sequence[Any]) -> Any:
    node = doc
    for k in path:
        node = node[k]
    return node


# ------------------------------------------------------------------------------- reporting
def _fmt_value(o: Observation, v: float) -> str:
    if not math.isfinite(v):
        return "n/a"
    if o.kind == "gain":
        return f"{v * 100:.1f}%"
    if o.kind == "plan_uses":
        return "uses" if v >= 0.5 else "not"
    return f"{v:.4g}"


def _error(o: Observation, v: float) -> tuple[str, float | None]:
    if o.kind in MEASURED:
        e = (v / o.value - 1.0) * 100.0
        return f"{e:+.1f}%", e
    if o.kind == "gain":
        e = (v - o.value) * 100.0
        return f"{e:+.1f} pp", e
    return ("ok" if (v >= 0.5) == (o.value >= 0.5) else "WRONG"), None


def summary(obs: Sequence[Observation], pred: np.ndarray) -> dict[str, dict[str, float]]:
    """Per kind: rows and MAPE % (latency/energy/power), mean |error| in points (gain), rows that
    agree (plan_uses)."""
    import numpy as np
    out: dict[str, dict[str, float]] = {}
    for kind in ("latency", "energy", "power", "gain", "plan_uses"):
        idx = [i for i, o in enumerate(obs) if o.kind == kind]
        if not idx:
            continue
        if kind in MEASURED:
            errs = [abs(pred[i] / obs[i].value - 1.0) * 100 for i in idx]
            out[kind] = {"rows": len(idx), "mape_pct": float(np.mean(errs))}
        elif kind == "gain":
            out[kind] = {"rows": len(idx), "mean_abs_error_pp": float(np.mean([abs(pred[i] - obs[i].value) * 100
                                                                                 for i in idx]))}
        else:
            out[kind] = {"rows": len(idx), "agree": int(sum((pred[i] >= 0.5) == (obs[i].value >= 0.5) for i in idx))}
    return out


def _summary_text(kind: str, b: Mapping[str, float], a: Mapping[str, float]) -> str:
    if "mape_pct" in a:
        return f"{kind}: {a['rows']} rows, MAPE {b['mape_pct']:.1f}% -> {a['mape_pct']:.1f}%"
    if "mean_abs_error_pp" in a:
        return (f"{kind}: {a['rows']} rows, mean |error| {b['mean_abs_error_pp']:.1f} -> "
                f"{a['mean_abs_error_pp']:.1f} points")
    return f"{kind}: {a['rows']} rows, {b['agree']} -> {a['agree']} agree"


def report(cal: Calibration, result: FitResult, output: str | None) -> dict[str, Any]:
    """The table and summary as a JSON-able document."""
    rows = []
    for i, o in enumerate(cal.obs):
        v = float(result.after.predicted[i])
        text, err = _error(o, v)
        rows.append({"file": o.file, "line": o.line, "kind": o.kind, "model": o.model, "state": o.state_text or None,
                     "layer": o.layer_text or None, "objective": o.objective, "planner": o.planner,
                     "baseline": o.baseline, "unit": o.unit, "observed": o.value, "predicted": v,
                     "predicted_before": float(result.before.predicted[i]), "error": err, "agrees":
                     (None if o.kind != "plan_uses" else text == "ok"), "weight": o.weight})
    params = []
    free, kept = set(result.free), set(result.kept)
    for i, p in enumerate(cal.board.params):
        # kept: no observation moves it; scaled: an int8 rate following its fitted float rate
        # dropped: with no --free, a parameter the fit could not pin down, kept at the file's value
        status = ("fitted" if i in free else "scaled" if i in result.tied else "kept" if i in kept
                  else "dropped" if i in result.dropped else "fixed")
        params.append({"name": p.name, "unit": p.unit, "before": p.x0, "after": float(result.values[i]),
                       "status": status, "lo": float(result.bounds[0][i]),
                       "hi": float(result.bounds[1][i]), **({"why": result.dropped[i]} if i in result.dropped else {})})
    return {"board": cal.board.label, "output": output, "observations": rows,
            "summary": {"before": summary(cal.obs, result.before.predicted),
                        "after": summary(cal.obs, result.after.predicted)},
            "parameters": params,
            "memory": [{"file": o.file, "line": o.line, "model": o.model, "device": o.device, "reported_mb": o.value,
                        "board_mb": cal.board_bytes(o.models[0], o.device) / 1e6} for o in cal.memory],
            "fit": {"free": len(result.free), "observations": len(cal.obs), "evaluations": result.nfev,
                    "jacobians": result.njev, "seconds": result.seconds, "solver": result.message,
                    "converged": result.converged}}


def print_report(console: Any, cal: Calibration, result: FitResult, output: str) -> None:
    from hetcc.cli.common import make_table

    table = make_table(console, ["#", "where", "kind", "model", "state", "layer", "observed", "predicted", "error"],
                   {"where", "kind", "model", "state", "layer"})
    for i, o in enumerate(cal.obs):
        v = float(result.after.predicted[i])
        model = o.model if len(o.model) <= 40 else o.model[:37] + "..."
        state = o.state_text
        if o.kind == "plan_uses":
            state = f"{o.state_text} ({o.planner}, {o.objective})"
        elif o.kind == "gain":
            state = f"{o.planner} vs {o.baseline} ({o.objective})"
        table.add_row(str(i), f"{Path(o.file).name}:{o.line}", o.kind, model, state, o.layer_text,
                      _fmt_value(o, o.value), _fmt_value(o, v), _error(o, v)[0])
    console.print(table)
    b, a = summary(cal.obs, result.before.predicted), summary(cal.obs, result.after.predicted)
    for kind in a:
        console.print(_summary_text(kind, b[kind], a[kind]))
    names = cal.board.params
    pt = make_table(console, ["parameter", "before", "after", "x"], {"parameter"})
    for i in result.free:
        p = names[i]
        unit = f" {p.unit}" if p.unit else ""
        pt.add_row(p.name, f"{p.x0:.6g}{unit}", f"{result.values[i]:.6g}{unit}", f"{result.values[i] / p.x0:.3g}")
    console.print(pt)
    if result.kept:
        console.print("not constrained by these observations, kept: " + ", ".join(names[i].name for i in result.kept))
    if cal.memory:
        console.print("memory as reported (each charges its model on that device, slices in proportion; not "
                      "fitted): " + ", ".join(f"{cal.models[o.models[0]].name} on {o.device} {o.value:g} MB (the board "
                                              f"alone: {cal.board_bytes(o.models[0], o.device) / 1e6:.1f} MB)"
                                              for o in cal.memory))
    if result.dropped:
        console.print("kept at the file's value (no --free: the fit left out what these observations cannot pin "
                      "down): "
                      + "; ".join(f"{names[i].name} ({why})" for i, why in result.dropped.items()))
    if result.fixed:
        console.print("fixed: " + ", ".join(names[i].name for i in result.fixed))
    n = len(result.free)
    console.print(f"wrote {output} ({n} parameter{'s' if n != 1 else ''} fitted to {len(cal.obs)} observations; "
                  f"{result.nfev} evaluations, {result.njev} Jacobians, {result.seconds:.1f} s)"
                  + ("" if result.converged else "; the solver stopped at its evaluation limit before converging"))


# ------------------------------------------------------------------------------- one call
def predict_observations(board: str | Path, observations: Sequence[Observation] | str | Path, *,
                         progress: Any = None) -> list[float]:
    """What ``board`` predicts for each observation, in its unit (plan_uses: 1.0 / 0.0; a memory
    row: what the board's own capacity rule charges the whole model, in MB): the numbers
    ``hetcc calibrate`` compares (its one prediction code, for benchmarks and tests)."""
    b = Board.load(board)
    obs = read_observations(observations, b.target()) if isinstance(observations, (str, Path)) else list(observations)
    cal = Calibration(b, obs, progress=progress)
    fitted = iter(float(v) for v in cal.evaluate().predicted)
    return [cal.board_bytes(o.models[0], o.device) / 1e6 if o.kind == "memory" else next(fitted) for o in obs]


def calibrate(board: str | Path, observation_files: Sequence[str | Path], output: str | Path, *,
              free: Sequence[str] = (), fix: Sequence[str] = (), bounds: Sequence[str] = (),
              range_factor: float = DEFAULT_RANGE, progress: Any = None,
              sets: Sequence[str] = ()) -> tuple[Calibration, FitResult, str]:
    """Fit ``board`` to the observation files and write the fitted board to ``output``
    atomically; returns the calibration, the result and the text written. ``sets``
    (``NAME=VALUE``) put those parameters at a value before the fit and keep them there."""
    import numpy as np
    import importlib.util

    if importlib.util.find_spec("scipy") is None or importlib.util.find_spec("tomlkit") is None:
        raise UsageError(_MISSING)
    from hetcc.files.atomic import check_replaceable_file, write_file
    from hetcc.targets.loader import load_bytes

    out = Path(output)
    check_replaceable_file(out, "-o")
    _check_range(range_factor)
    parsed_bounds = dict((n, (lo, hi)) for n, lo, hi in (parse_bound(t) for t in bounds))
    parsed_sets = dict(parse_set(t) for t in sets)
    b = Board.load(board)
    for name in parsed_bounds:
        b.index(name)
    given: dict[int, float] = {}
    for name, value in parsed_sets.items():
        i = b.index(name)
        if name in parsed_bounds:
            raise UsageError(f"--set {name} and --bound {name}: a set parameter is not fitted; drop one of them")
        given[i] = b.params[i].x0
        b.params[i] = replace(b.params[i], x0=value)
    fix = [*fix, *parsed_sets]
    target0 = b.target()
    obs: list[Observation] = []
    for f in observation_files:
        obs.extend(read_observations(f, target0))
    cal = Calibration(b, obs, progress=progress)
    result = fit(cal, free=free, fix=fix, bounds=parsed_bounds, range_factor=range_factor, progress=progress)
    changed = [i for i in [*result.free, *result.tied] if result.values[i] != b.params[i].x0]
    changed += [i for i, old in given.items() if b.params[i].x0 != old]
    sources = ", ".join(Path(f).name for f in observation_files)
    text = fitted_text(b, result.values, changed, sources, len(obs),
                       {j: b.params[i].name for j, i in result.tied.items()}, given)
    fitted = load_bytes(text.encode("utf-8"), out, str(out))       # the loader's checks, as a user loads it
    after = cal.evaluate(target=fitted)
    # a fitted static power is written on every DVFS level, each level's number at DIGITS significant
    # digits: a level's power (and so an energy) may differ from the fit's by that rounding, no more
    if not np.allclose(after.predicted, result.after.predicted, rtol=10.0 ** (1 - DIGITS), atol=1e-12,
                       equal_nan=True):
        raise RuntimeError("the fitted file predicts other numbers than the fit; please report this")  # pragma: no cover
    result.after = after
    write_file(out, text, "-o", "choose a writable path")
    return cal, result, text


# ------------------------------------------------------------------------------- the command




__all__ = ["Board", "Calibration", "DEFAULT_RANGE", "Evaluation", "FitResult", "MARGIN", "Param",
           "board_parameters", "calibrate", "fit", "fitted_text", "parse_bound", "parse_set",
           "predict_observations", "report", "select_free", "summary"]
