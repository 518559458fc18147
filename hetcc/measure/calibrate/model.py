"""The predictions: ``Calibration`` (a board and its observations, each model analysed once and
every observation checked against it) prices each observation at any parameter vector with
hetcc's own cost model, nothing new: each prediction is what ``PlanningProblem`` charges (a
slice's ``slice_cost``, a planner's plan through the registry), recomputed from the board
document with the parameters substituted (``targets.schema.build`` -> ``device_params`` ->
``cost_tables`` on each model's cached layer features), so a fitted file gives, when loaded,
exactly the numbers printed. ``Evaluation`` holds one vector's predictions;
``predict_observations`` is the whole of it in one call.

Residuals: log(predicted / observed) x sqrt(weight) for latency, energy and power;
predicted - observed for a gain; for plan_uses a hinge on the margin m = log(best plan that uses
the state / best plan that does not) (exact, by a DP over (layer, used) on the same slice costs:
``forced_optima``): max(0, m + MARGIN) when the plan should use it, max(0, MARGIN - m) when it
should not. ``frozen`` plans (an earlier evaluation's) let a Jacobian hold the plans fixed.

Speed, the numbers unchanged: the tables come from ``tables.StackedTables`` (one ``cost_tables``
call for every model; a Jacobian's step moves one device's states, and only their columns are
recomputed); a slice's cost is kept under the name of the column it reads, so a plan whose states
a step leaves alone is priced from known costs; the plan_uses rows of an evaluation share one DP
(``forced_optima_batch``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from hetcc.core.errors import UsageError
from hetcc.measure.calibrate.params import Board
from hetcc.measure.observations import (MEASURED, Observation, check_model_hash, planner_spec, read_observations,
                                        reported_memory)

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from hetcc.measure.calibrate.tables import Snapshot

#: the hinge's margin (log units): a plan_uses row holds with ~1 % to spare
MARGIN = 0.01


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


def slice_tensor(problem: Any, metric: str, states: np.ndarray) -> np.ndarray:
    """[l, k, j]: the ``metric`` cost of the slice of layers k..l-1 on ``states[j]`` (inf where
    illegal), what ``forced_optima`` searches (one per problem, metric and states: every target
    state of the same rows shares it)."""
    from hetcc.planners.dp import SliceTables, cell_costs

    tables = SliceTables(problem, cell_costs(problem), states)
    return tables.latency() if metric == "latency" else tables.energy()


def forced_optima(problem: Any, metric: str, states: np.ndarray, target: int, *,
                  cost: np.ndarray | None = None) -> tuple[float, list, float, list]:
    """(best cost of a plan using state ``target`` at least once, its slices, best cost of a plan
    never using it, its slices), over ``states``: exact, a DP over (layer boundary, used).
    ``cost``: ``slice_tensor(problem, metric, states)`` when the caller has it already."""
    import numpy as np
    from hetcc.planners.problem import Slice

    if cost is None:
        cost = slice_tensor(problem, metric, states)                         # [l, k, j]
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


def forced_optima_batch(jobs: Sequence[tuple[Any, str, np.ndarray, Sequence[int], np.ndarray | None]]
                        ) -> list[list[tuple[float, list, float, list]]]:
    """``forced_optima`` for each job (problem, metric, states, targets, cost: the slice tensor or
    None) and each of its targets, the same numbers and slices, in one DP over every job and target
    together (one numpy step per layer boundary, not one per target and boundary): a step takes a
    start boundary per DP row, and the state is found only for the slices of the plans returned.
    Floating-point addition is monotonic, so min_j (b + c_j) = b + min_j c_j, and the state is the
    first j reaching it, as ``forced_optima``'s flat argmin finds it; a job's rows read only its own
    tensor (padded with inf past its layers). A tensor holding NaN or -inf (where those identities
    fail) goes through ``forced_optima`` target by target."""
    import numpy as np
    from hetcc.planners.problem import Slice

    out: list[list] = [[] for _ in jobs]
    inf = np.inf
    runs = []                                  # (job, L, states, [target column], cost) for the DP
    for n, (problem, metric, states, targets, cost) in enumerate(jobs):
        if cost is None:
            cost = slice_tensor(problem, metric, states)                     # [l, k, j]
        targets = [int(t) for t in targets]
        if not targets:
            continue
        if np.isnan(cost).any() or np.min(cost, initial=inf) == -inf:
            out[n] = [forced_optima(problem, metric, states, t, cost=cost) for t in targets]
            continue
        runs.append((n, problem.num_layers, states, [int(np.flatnonzero(states == t)[0]) for t in targets], cost))
    if not runs:
        return out
    Lmax = max(L for _, L, _, _, _ in runs)
    T = sum(len(jts) for _, _, _, jts, _ in runs)
    # DP rows: 0..T-1 plans never on the target (best over its other states), T..2T-1 plans that have
    # used it, continued on another state, 2T..3T-1 the best of both, continued on the target
    step = np.full((3 * T, Lmax + 1, Lmax + 1), inf)
    row = 0
    for _, L, _, jts, cost in runs:
        by_state = np.ascontiguousarray(np.moveaxis(cost, 2, 0))             # [j, l, k]
        for jt in jts:
            low = step[row, :L + 1, :L + 1]                                   # best state but jt
            for part in (by_state[:jt], by_state[jt + 1:]):
                if part.shape[0]:
                    np.minimum(low, part.min(axis=0), out=low)
            step[T + row, :L + 1, :L + 1] = low
            step[2 * T + row, :L + 1, :L + 1] = by_state[jt]
            row += 1
    best = np.full((3 * T, Lmax + 1), inf)
    best[:T, 0] = best[2 * T:, 0] = 0.0
    back = np.zeros((3 * T, Lmax + 1), dtype=np.int64)     # the start boundary of each row's last slice
    onto = np.zeros((T, Lmax + 1), dtype=bool)             # the used row's best ends on the target
    rows = np.arange(3 * T)
    for l in range(1, Lmax + 1):
        r = best[:, :l] + step[:, l, :l]
        k = r.argmin(axis=1)
        v = r[rows, k]
        back[:, l] = k
        on = v[2 * T:] < v[T:2 * T]
        onto[:, l] = on
        best[:T, l] = v[:T]
        used = np.where(on, v[2 * T:], v[T:2 * T])
        best[T:2 * T, l] = used
        best[2 * T:, l] = np.minimum(v[:T], used)

    def state(cost: np.ndarray, b: float, l: int, k: int, jt: int) -> int:
        costs = b + cost[l, k, :]
        costs[jt] = inf
        return int(np.argmin(costs))

    def path(t: int, L: int, states: np.ndarray, jt: int, cost: np.ndarray, use: bool) -> list:
        found, l = [], L
        while l > 0:
            if use and onto[t, l]:
                k = int(back[2 * T + t, l])
                j, use = jt, bool(best[T + t, k] < best[t, k])
            elif use:
                k = int(back[T + t, l])
                j = state(cost, best[T + t, k], l, k, jt)
            else:
                k = int(back[t, l])
                j = state(cost, best[t, k], l, k, jt)
            found.append(Slice(k, l - 1, int(states[j])))
            l = k
        return found[::-1]

    t = 0
    for n, L, states, jts, cost in runs:
        for jt in jts:
            use, avoid = float(best[T + t, L]), float(best[t, L])
            out[n].append((use, path(t, L, states, jt, cost, True) if math.isfinite(use) else [], avoid,
                           path(t, L, states, jt, cost, False) if math.isfinite(avoid) else []))
            t += 1
    return out


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
        from hetcc.measure.calibrate.tables import StackedTables

        self.index = {ref: i for i, ref in enumerate(self.models)}
        self.reported_at: dict = {}     # (model, capacity, legality) -> those with its memory rows applied
        self.tables = StackedTables([m.problem.layer_features for m in self.models.values()],
                                    [m.state_legal for m in self.models.values()],
                                    next((m.problem.states for m in self.models.values()), None))
        self.slice_costs: dict = {}      # (model, first, last, column id) -> Cost: ``_slice_cost``
        # plan_uses rows by the slice tensor their margin searches: one DP per tensor finds all its targets
        self.forced_groups: dict[tuple, list[int]] = {}
        for i, o in enumerate(self.obs):
            if o.kind == "plan_uses":
                states = self._dp_states(self.models[o.models[0]].problem, o)
                self.forced_groups.setdefault((o.models[0], o.objective, states.tobytes()), []).append(i)

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
                use, _, avoid, _ = forced_optima(m.problem, o.objective, states, s)
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
        from hetcc.compiler.costmodel import device_params

        snap = self.tables.at(device_params(target))
        return {ref: self._problem(snap, ref) for ref in (self.models if refs is None else refs)}

    def _problem(self, snap: Snapshot, ref: str) -> Any:
        """Model ``ref``'s PlanningProblem with the tables of ``snap``, its memory rows applied
        (``_reported``: what they make of a legality and a capacity is found once for each)."""
        import numpy as np
        from hetcc.planners.hardware import TABLES

        m = self.models[ref]
        t = snap.model(self.index[ref])
        legal, cap = t["legal"], snap.capacity_bytes
        key = None
        if self.reported.get(ref):
            key = (ref, cap.tobytes(), np.asarray(legal).tobytes())
            known = self.reported_at.get(key)
            if known is not None:
                legal, cap = known
                key = None
        p = m.problem.replace(**{k: t[k] for k in TABLES}, legal=legal, communication=t["communication"],
                              capacity_bytes=cap, base_power_mw=snap.base_power_mw)
        if key is not None:
            # with_reported_memory changes the capacity and the legality, nothing else
            p = self._reported(ref, p)
            if len(self.reported_at) > 1000:      # a bound on memory, nothing else
                self.reported_at.clear()
            self.reported_at[key] = (p.legal, p.capacity_bytes)
        return p

    def _slice_cost(self, probs: "_Problems", ref: str, first: int, last: int, state: int) -> Any:
        """``slice_cost`` of model ``ref``'s problem in ``probs`` (``Snapshot.slice_cost``: no problem
        built), kept under the name of the column it reads (``Snapshot.column``: the same numbers at
        another parameter vector give the same cost)."""
        key = (ref, first, last, probs.snap.column[state])
        c = self.slice_costs.get(key)
        if c is None:
            if len(self.slice_costs) > 200_000:          # a bound on a long fit's memory, nothing else
                self.slice_costs.clear()
            c = self.slice_costs[key] = probs.snap.slice_cost(self.index[ref], first, last, state)
        return c

    def _price(self, probs: "_Problems", ref: str, slices: Sequence[Any], metric: str) -> float:
        """The ``metric`` cost of a plan: its slices' costs summed in order (``_slice_cost``, inlined:
        a Jacobian prices every plan once per parameter, most of them at known costs)."""
        column, known = probs.snap.column, self.slice_costs
        costs = []
        for s in slices:
            c = known.get((ref, s.first, s.last, column[s.state]))
            if c is None:
                c = self._slice_cost(probs, ref, s.first, s.last, s.state)
            costs.append(_metric(c, metric))
        return sum(costs)          # as the plain sum did (sum's own float rounding, whatever the Python)

    def _plan(self, probs: "_Problems", ref: str, spec: str, metric: str, frozen: dict, fixed: bool,
              priced: dict) -> tuple[float, Any]:
        """(cost, slices) of ``spec``'s plan of model ``ref`` (``frozen``'s when ``fixed``); ``priced``
        holds the costs of this evaluation's plans (the same plan is priced once per evaluation,
        whatever number of rows read it)."""
        key = ("plan", ref, spec, metric)
        if not fixed and key not in frozen:
            from hetcc.planners import registry
            from hetcc.planners.context import PlanContext
            from hetcc.planners.metrics import Objective

            name, options = planner_spec(spec)
            if probs.ctx is None:         # settings only: registry.run gives each run its own (with_options)
                probs.ctx = PlanContext(0)
            frozen[key] = registry.run(probs[ref], Objective(metric), name, options, probs.ctx,
                                       allow_infeasible=True).slices
        slices = frozen[key]
        if key not in priced:
            priced[key] = self._price(probs, ref, slices, metric)
        return priced[key], slices

    def _forced(self, probs: "_Problems", idx: set, store: dict) -> None:
        """The forced optima of every plan_uses row of ``idx`` not in ``store`` yet, into it: each
        (model, objective, states) searches one slice tensor, all of them in one DP
        (``forced_optima_batch``)."""
        jobs, keys = [], []
        for (ref, objective, _), group in self.forced_groups.items():
            todo: dict[int, list] = {}
            for j in group:
                key = ("forced", ref, objective, self.row_state[j], self.obs[j].planner)
                if j in idx and key not in store:
                    todo.setdefault(self.row_state[j], []).append(key)
            if todo:
                p = probs[ref]
                states = self._dp_states(p, self.obs[group[0]])
                jobs.append((p, objective, states, list(todo), slice_tensor(p, objective, states)))
                keys.append(list(todo.values()))
        for job_keys, found in zip(keys, forced_optima_batch(jobs)):
            for target_keys, (_, use_sl, _, not_sl) in zip(job_keys, found):
                for key in target_keys:
                    store[key] = (list(use_sl), list(not_sl))

    def evaluate(self, values: np.ndarray | None = None, *, target: Any = None, frozen: dict | None = None,
                 rows: Sequence[int] | None = None) -> Evaluation:
        """Predictions at ``values`` (default: the file's; or at a loaded ``target``). ``frozen``
        (an earlier Evaluation's) holds its plans fixed; ``rows`` limits the work to those rows
        (the others are NaN)."""
        import numpy as np
        from hetcc.compiler.costmodel import device_params

        tgt = target if target is not None else self.board.target(self.board.x0 if values is None else values)
        idx = range(len(self.obs)) if rows is None else rows
        probs = _Problems(self, self.tables.at(device_params(tgt)))
        fixed = frozen is not None
        store: dict = frozen if fixed else {}
        n = len(self.obs)
        pred, sig, res = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
        priced: dict = {}                 # this evaluation's plan costs (``_plan``)
        wanted = set(idx)
        for i in idx:
            o = self.obs[i]
            w = math.sqrt(o.weight)
            s = self.row_state[i]
            if o.kind in MEASURED:
                ref = o.models[0]
                a, b = o.layer if o.layer is not None else (0, self.models[ref].num_layers - 1)
                c = self._slice_cost(probs, ref, a, b, s)
                v = {"latency": c.latency_ms, "energy": c.energy_mj,
                     "power": c.energy_mj / c.latency_ms * 1000.0 if c.latency_ms > 0 else math.inf}[o.kind]
                pred[i] = v
                sig[i] = math.log(v) if v > 0 else -math.inf
                res[i] = (sig[i] - math.log(o.value)) * w
            elif o.kind == "gain":
                logs = []
                for ref in o.models:
                    mine, _ = self._plan(probs, ref, o.planner, o.objective, store, fixed, priced)
                    base, _ = self._plan(probs, ref, o.baseline, o.objective, store, fixed, priced)
                    logs.append(math.log(mine / base))
                pred[i] = sig[i] = 1.0 - math.exp(sum(logs) / len(logs))
                res[i] = (pred[i] - o.value) * w
            else:
                ref = o.models[0]
                _, slices = self._plan(probs, ref, o.planner, o.objective, store, fixed, priced)
                pred[i] = float(any(sl.state == s for sl in slices))
                key = ("forced", ref, o.objective, s, o.planner)
                if not fixed and key not in store:
                    self._forced(probs, wanted, store)
                use_sl, not_sl = store[key]
                use = self._price(probs, ref, use_sl, o.objective) if use_sl else math.inf   # [] = no such plan
                avoid = self._price(probs, ref, not_sl, o.objective) if not_sl else math.inf
                margin = math.log(use / avoid) if math.isfinite(use) and math.isfinite(avoid) else (
                    math.inf if not math.isfinite(use) else -math.inf)
                margin = max(-50.0, min(50.0, margin))
                sig[i] = margin
                res[i] = max(0.0, (margin if o.value == 1 else -margin) + MARGIN) * w
        return Evaluation(pred, sig, res, store)


class _Problems(dict):
    """Model ref -> its PlanningProblem at ``snap``, built when first read (an evaluation whose slice
    costs are all known builds none)."""

    def __init__(self, cal: Calibration, snap: Snapshot) -> None:
        super().__init__()
        self.cal = cal
        self.snap = snap
        self.ctx: Any = None           # the PlanContext of this evaluation's planner runs (``_plan``)

    def __missing__(self, ref: str) -> Any:
        p = self[ref] = self.cal._problem(self.snap, ref)
        return p


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

