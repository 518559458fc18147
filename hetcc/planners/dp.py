"""MOSAIC's model slicer (PACT'19, Eq. 8-9, Algorithm 1): optimal slicing for an additive metric.

C_tot[0] = 0, C_tot[l] = min over k < l and states s of C_tot[k] + C(k+1..l, s), where C is the
slice cost of problem.py (+inf for an illegal slice). For latency only each device's maximum
frequency is a candidate (MOSAIC's Eq. 6), for energy every state (Eq. 7). O(L^2 S), vectorised:
the costs of every slice come from prefix sums over layers in one numpy expression.

The helpers here (per-cell costs, the [end, start, state] slice-cost tensor, the scalar DP) are
shared with ``exact``.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from ..errors import InfeasibleError
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
        params = np.zeros(L + 1, dtype=np.int64)
        np.cumsum(np.asarray(problem.param_bytes, dtype=np.int64), out=params[1:])
        cap = np.asarray(problem.capacity_bytes, dtype=np.float64)[st]
        ends = np.arange(L + 1)
        ok = (bad[:, None, :] == bad[None, :, :])
        ok &= ((params[:, None] - params[None, :]).astype(np.float64)[:, :, None] <= cap[None, None, :])
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
    alone = np.isfinite(cost[idx + 1, idx, :]).any(axis=1)
    if not alone.all():
        i = int(np.flatnonzero(~alone)[0])
        if not np.asarray(problem.legal, dtype=bool)[i, tables.states].any():
            why = "no device supports it"
        else:
            why = "it exceeds the memory of every device that supports it, or its costs are not finite"
        raise InfeasibleError(f"{problem.layer_label(i)} is legal on no {where} ({why}); "
                              "no plan can run it")


def scalar_dp(cost: np.ndarray) -> tuple[float, list[tuple[int, int, int]]]:
    """MOSAIC's Eq. 9 on a [l, k, s] cost tensor: (optimal total, [(first, last, s)]) or (inf, []).

    Ties go to the smallest k, then the smallest s (the longest last slice, deterministically).
    """
    L = cost.shape[0] - 1
    S = cost.shape[2]
    total, arg = forward_totals(cost)
    if not np.isfinite(total[L]):
        return INF, []
    out = []
    l = L
    while l > 0:
        k, s = divmod(int(arg[l]), S)
        out.append((k, l - 1, s))
        l = k
    out.reverse()
    return float(total[L]), out


def forward_totals(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """C_tot[l] for every boundary l (Eq. 9) and the flat argmin over (k, s) that achieves it."""
    L = cost.shape[0] - 1
    total = np.full(L + 1, INF)
    total[0] = 0.0
    arg = np.zeros(L + 1, dtype=np.int64)
    for l in range(1, L + 1):
        m = total[:l, None] + cost[l, :l, :]
        j = int(np.argmin(m))
        total[l] = m.flat[j]
        arg[l] = j
    return total, arg


def path_sum(cost: np.ndarray, path: list[tuple[int, int, int]]) -> float:
    """Total of ``cost`` ([l, k, s]) along a path from ``scalar_dp``."""
    return float(sum(cost[last + 1, first, s] for first, last, s in path))


def optimal(problem: PlanningProblem, metric: str) -> Plan:
    """MOSAIC Algorithm 1: the optimal plan for latency (max-frequency states) or energy (all)."""
    if metric == "latency":
        states = np.flatnonzero(problem.states.is_fmax)
        where = "device at its maximum frequency"
    else:
        states = np.arange(problem.num_states)
        where = "device"
    tables = SliceTables(problem, cell_costs(problem), states)
    cost = tables.latency() if metric == "latency" else tables.energy()
    require_runnable(problem, tables, cost, where)
    _, path = scalar_dp(cost)
    return problem.evaluate([Slice(first, last, int(states[s])) for first, last, s in path])


def plan_dp(problem: PlanningProblem, objective: Objective, ctx: PlanContext) -> Plan:
    """Deadline- and cap-oblivious (MOSAIC-P / MOSAIC-E); the feasibility policy checks limits."""
    return optimal(problem, objective.metric)


SPECS = (PlannerSpec("dp", "MOSAIC's dynamic program (Alg. 1): optimal latency (max-frequency states) or "
                     "energy (all states), O(L^2 S); ignores deadline and power cap", plan_dp,
                     metrics=("latency", "energy"), exact=True),)
