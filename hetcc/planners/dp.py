"""MOSAIC's model slicer (PACT'19, Eq. 8-9, Algorithm 1): optimal slicing for an additive metric.

C_tot[0] = 0, C_tot[l] = min over k < l and states s of C_tot[k] + C(k+1..l, s), where C is the
slice cost of problem.py (+inf for an illegal slice). For latency only each device's maximum
frequency is a candidate (MOSAIC's Eq. 6), for energy every state (Eq. 7).

``optimal`` runs in O(L S) time and memory: with prefix sums P over layers a slice k..l-1 on s
costs (P[l] - P[k]) + in[k] + out[l-1], so C_tot[l] = min_s (P[l, s] + out[l-1, s] + min_k A[k, s])
with A[k, s] = C_tot[k] - P[k, s] + in[k, s], over the legal starts k of a slice ending at l on
s: a window [lo(l, s), l-1] whose left end never moves back (no unusable layer inside, parameters
within the capacity), so a monotone queue per state gives each minimum in amortised O(1). The
dense [end, start, state] tensors (``SliceTables``: (L+1)^2 S cells, 3.9 GB at 3000 layers) stay
for ``exact`` and ``dqn``, which need every slice's cost.
"""
from __future__ import annotations

import logging
import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from hetcc.core.errors import InfeasibleError
from .context import PlanContext
from .metrics import Objective
from .problem import Plan, PlanningProblem, Slice
from .registry import PlannerSpec

logger = logging.getLogger(__name__)

INF = np.inf


@dataclass(frozen=True)
class CellCosts:
    """The per-cell parts of the slice cost formula, base power folded into the energies.

    A slice k..l-1 on s costs in_x[k, s] + sum(layer_x[k:l, s]) + out_x[l-1, s] for x in
    (ms, mj). Cells that are illegal or hold a non-finite number are +inf in both units, so a
    slice containing one is never chosen.
    """

    layer_ms: np.ndarray   # [L, S]
    layer_mj: np.ndarray
    in_ms: np.ndarray
    in_mj: np.ndarray
    out_ms: np.ndarray
    out_mj: np.ndarray
    usable: np.ndarray     # [L, S] bool: legal, with finite layer costs


def cell_costs(problem: PlanningProblem) -> CellCosts:
    legal = np.asarray(problem.legal, dtype=bool)
    base = float(problem.base_power_mw) / 1000.0
    with np.errstate(invalid="ignore", over="ignore"):
        lat = np.asarray(problem.latency_ms, dtype=np.float64)
        lay_mj = lat * np.asarray(problem.power_mw, dtype=np.float64) / 1000.0 + base * lat
        in_ms = np.asarray(problem.transfer_in_ms, dtype=np.float64)
        out_ms = np.asarray(problem.transfer_out_ms, dtype=np.float64)
        in_mj = np.asarray(problem.transfer_in_mj, dtype=np.float64) + base * in_ms
        out_mj = np.asarray(problem.transfer_out_mj, dtype=np.float64) + base * out_ms
    usable = legal & np.isfinite(lat) & np.isfinite(lay_mj)
    enter = legal & np.isfinite(in_ms) & np.isfinite(in_mj)
    leave = legal & np.isfinite(out_ms) & np.isfinite(out_mj)

    def clean(a: np.ndarray, ok: np.ndarray) -> np.ndarray:
        return np.where(ok, a, INF)

    return CellCosts(layer_ms=clean(lat, usable), layer_mj=clean(lay_mj, usable),
                     in_ms=clean(in_ms, enter), in_mj=clean(in_mj, enter),
                     out_ms=clean(out_ms, leave), out_mj=clean(out_mj, leave), usable=usable)


class SliceTables:
    """Costs of every slice as dense [end boundary l, start boundary k, state] tensors.

    Entry [l, k, s] (k < l) is the slice of layers k..l-1 on ``states[s]``; +inf when the slice is
    illegal (an unusable layer or more parameters than the state's capacity) or k >= l. The
    leading axis is the end boundary so that the DP reads one contiguous [k, s] block per step.
    """

    def __init__(self, problem: PlanningProblem, cells: CellCosts, states: np.ndarray | None = None):
        L = problem.num_layers
        self.states = np.arange(problem.num_states) if states is None else np.asarray(states, dtype=int)
        self.cells = cells
        st = self.states
        bad = np.zeros((L + 1, st.size), dtype=np.int64)
        np.cumsum(~cells.usable[:, st], axis=0, out=bad[1:])
        mem = problem.memory_prefix(st)          # [L+1, S'] bytes held against each state's capacity
        cap = np.asarray(problem.capacity_bytes, dtype=np.float64)[st]
        ends = np.arange(L + 1)
        ok = (bad[:, None, :] == bad[None, :, :])
        ok &= (mem[:, None, :] - mem[None, :, :]) <= cap[None, None, :]    # int64 vs float64: no copy
        ok &= (ends[None, :] < ends[:, None])[:, :, None]
        self.ok = ok                # [L+1, L+1, S'] bool

    def tensor(self, layer: np.ndarray, tin: np.ndarray, tout: np.ndarray) -> np.ndarray:
        """[l, k, s] cost of each slice for per-cell costs (layer, in, out) given as [L, S]."""
        st = self.states
        L = layer.shape[0]
        lay = layer[:, st]
        prefix = np.zeros((L + 1, st.size))
        np.cumsum(np.where(np.isfinite(lay), lay, 0.0), axis=0, out=prefix[1:])
        tin_k = np.full((L + 1, st.size), INF)
        tin_k[:L] = tin[:, st]
        tout_l = np.full((L + 1, st.size), INF)
        tout_l[1:] = tout[:, st]
        with np.errstate(invalid="ignore"):
            cost = (prefix[:, None, :] - prefix[None, :, :]) + tin_k[None, :, :] + tout_l[:, None, :]
        cost[~self.ok] = INF
        cost[np.isnan(cost)] = INF
        return cost

    def latency(self) -> np.ndarray:
        c = self.cells
        return self.tensor(c.layer_ms, c.in_ms, c.out_ms)

    def energy(self) -> np.ndarray:
        c = self.cells
        return self.tensor(c.layer_mj, c.in_mj, c.out_mj)


def require_runnable(problem: PlanningProblem, tables: SliceTables, cost: np.ndarray,
                     where: str = "device") -> None:
    """Raise InfeasibleError naming the first layer that no state can run as a slice on its own.

    Single-layer slices compose, so when every layer runs alone somewhere a legal plan exists.
    """
    L = problem.num_layers
    if L == 0:
        raise InfeasibleError("the model has no layers to plan")
    idx = np.arange(L)
    require_alone(problem, np.isfinite(cost[idx + 1, idx, :]).any(axis=1), tables.states, where)


def require_alone(problem: PlanningProblem, alone: np.ndarray, states: np.ndarray, where: str = "device") -> None:
    """``require_runnable`` given ``alone[l]``: whether some state runs layer l as a slice."""
    if problem.num_layers == 0:
        raise InfeasibleError("the model has no layers to plan")
    if not alone.all():
        i = int(np.flatnonzero(~alone)[0])
        if not np.asarray(problem.legal, dtype=bool)[i, states].any():
            why = "no device supports it"
        else:
            why = "it exceeds the memory of every device that supports it, or its costs are not finite"
        raise InfeasibleError(f"{problem.layer_label(i)} is legal on no {where} ({why}); "
                              "no plan can run it")


def optimal(problem: PlanningProblem, metric: str) -> Plan:
    """MOSAIC Algorithm 1: the optimal plan for latency (max-frequency states) or energy (all),
    in O(L S) memory (see the module docstring); ties go to the smallest start, then state."""
    if metric == "latency":
        states = np.flatnonzero(problem.states.is_fmax)
        where = "device at its maximum frequency"
    else:
        states = np.arange(problem.num_states)
        where = "device"
    cells = cell_costs(problem)
    if metric == "latency":
        layer, tin, tout = cells.layer_ms, cells.in_ms, cells.out_ms
    else:
        layer, tin, tout = cells.layer_mj, cells.in_mj, cells.out_mj
    path = _windowed_dp(problem, cells, states, layer, tin, tout, where)
    return problem.evaluate([Slice(first, last, int(states[s])) for first, last, s in path])


def _windowed_dp(problem: PlanningProblem, cells: CellCosts, states: np.ndarray, layer: np.ndarray,
                 tin: np.ndarray, tout: np.ndarray, where: str) -> list[tuple[int, int, int]]:
    """The optimal path [(first, last, column of ``states``)] of Eq. 9 with a monotone queue per
    state over the legal slice starts (the same costs and tie order as the dense Eq. 9 over
    ``SliceTables``, which tests/planners/test_dp.py keeps as the reference)."""
    L, S = problem.num_layers, states.size
    usable = cells.usable[:, states]
    lay = layer[:, states]
    prefix = np.zeros((L + 1, S))
    np.cumsum(np.where(np.isfinite(lay), lay, 0.0), axis=0, out=prefix[1:])
    tin_k = np.full((L + 1, S), INF)
    tin_k[:L] = tin[:, states]
    tout_l = np.full((L + 1, S), INF)
    tout_l[1:] = tout[:, states]
    mem = problem.memory_prefix(states)          # [L+1, S] bytes held against each state's capacity
    cap = np.asarray(problem.capacity_bytes, dtype=np.float64)[states]
    # lo[l, s]: the first legal start of a slice ending at boundary l on s (after the last unusable
    # layer before l, and late enough that what the slice holds fits the capacity: slice_fits)
    bad_at = np.where(~usable, np.arange(L)[:, None] + 1, 0)
    lo = np.zeros((L + 1, S), dtype=np.int64)
    np.maximum.accumulate(bad_at, axis=0, out=lo[1:])
    for j in range(S):
        if np.isfinite(cap[j]):
            # the smallest k with mem[l] - mem[k] <= cap, i.e. mem[k] >= mem[l] - cap
            need = mem[:, j].astype(np.float64) - cap[j]
            lo[:, j] = np.maximum(lo[:, j], np.searchsorted(mem[:, j].astype(np.float64), need, side="left"))
    idx = np.arange(L)
    with np.errstate(invalid="ignore"):
        alone = (lo[idx + 1] <= idx[:, None]) & np.isfinite(tin_k[:L] + lay + tout_l[1:]) & usable
    require_alone(problem, alone.any(axis=1), states, where)

    # the loop runs L x S times: Python floats and lists there (numpy scalar indexing is 3x slower)
    total = [INF] * (L + 1)
    total[0] = 0.0
    arg = [(0, 0)] * (L + 1)
    queues: list[deque[int]] = [deque() for _ in range(S)]
    a: list[list[float]] = [[]] * (L + 1)         # a[k][s] = C_tot[k] - P[k, s] + in[k, s]
    for l in range(1, L + 1):
        k = l - 1
        with np.errstate(invalid="ignore"):
            a[k] = (total[k] - prefix[k] + tin_k[k]).tolist()
        a_k, first_at, tail = a[k], lo[l].tolist(), (prefix[l] + tout_l[l]).tolist()
        best, best_k, best_s = INF, 0, 0
        for j in range(S):
            q = queues[j]
            ak = a_k[j]
            if ak < INF:                    # finite (NaN and +inf never start a slice)
                while q and a[q[-1]][j] > ak:
                    q.pop()
                q.append(k)
            first = first_at[j]
            while q and q[0] < first:
                q.popleft()
            if q:
                v = a[q[0]][j] + tail[j]
                if v < best or (v == best and q[0] < best_k):
                    best, best_k, best_s = v, q[0], j
        total[l] = best
        arg[l] = (best_k, best_s)
    if not math.isfinite(total[L]):  # pragma: no cover - every layer runs alone (checked above)
        raise InfeasibleError(f"no plan runs every layer on a {where}")
    path = []
    l = L
    while l > 0:
        k, j = arg[l]
        path.append((k, l - 1, j))
        l = k
    path.reverse()
    return path


@dataclass(frozen=True)
class DpOptions:
    base_power: bool = field(default=True, metadata={
        "doc": "false: plan energy as MOSAIC's estimator does (Eq. 4: each device's static and dynamic "
               "power, not the board's base power); the plan is then priced with it"})


def plan_dp(problem: PlanningProblem, objective: Objective, ctx: PlanContext) -> Plan:
    """Deadline- and cap-oblivious (MOSAIC-P / MOSAIC-E); the feasibility policy checks limits."""
    if objective.metric == "energy" and not ctx.options.base_power:
        # energy as MOSAIC's power estimator sees it (no board base power), priced on the real problem
        return problem.evaluate(optimal(problem.replace(base_power_mw=0.0), "energy").slices)
    return optimal(problem, objective.metric)


SPECS = (PlannerSpec("dp", "MOSAIC's dynamic program (Alg. 1): optimal latency (max-frequency states) or "
                     "energy (all states), O(L S); ignores deadline and power cap", plan_dp, DpOptions,
                     metrics=("latency", "energy"), exact=True),)
