"""The numbers one exact solve works on, built once and frozen: slice tensors, per-cell costs in
latency T, energy E and X = E - cap * T / 1000, the limits, and the objective's arithmetic.

A slice k..l-1 on state s costs in_x[k, s] + sum(layer_x[k:l, s]) + out_x[l-1, s] (x in T, E, X).
States whose memory capacity never binds are *streamed* (``ss``): a search may keep a slice on
them open from layer to layer. The others (``es``) enumerate their slices from the dense
[end, start, state] tensors.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hetcc.core.errors import InfeasibleError
from ..dp import INF, SliceTables, cell_costs, require_runnable
from ..metrics import RTOL, Objective
from ..problem import PlanningProblem


def weighted(e: np.ndarray, t: np.ndarray, lam: np.ndarray, a: np.ndarray | None = None) -> np.ndarray:
    """a*e + lam*t broadcast over a trailing K axis; +inf wherever e or t is not finite."""
    a = np.ones_like(lam) if a is None else a
    with np.errstate(invalid="ignore", over="ignore"):
        out = e[..., None] * a + t[..., None] * lam
    out[~(np.isfinite(e) & np.isfinite(t))] = INF
    return out


def combine(a: np.ndarray, b: np.ndarray, w: float) -> np.ndarray:
    """a + w*b where both are finite, +inf elsewhere (never nan): ``weighted`` for one weight."""
    return weighted(a, b, np.array([w]))[..., 0]


@dataclass(frozen=True)
class Cells:
    """Per-cell costs of one quantity: layer [L, S], entering a slice [L, S], leaving it [L, S]."""

    layer: np.ndarray
    enter: np.ndarray
    leave: np.ndarray


@dataclass(frozen=True)
class Model:
    """One problem and one objective as the exact planner sees them (read-only)."""

    problem: PlanningProblem
    metric: str
    deadline: float        # +inf when absent
    Dtol: float            # the deadline with Objective.feasible's tolerance
    has_cap: bool
    c: float               # power cap in mW (0 when absent)
    tolX: float            # X <= tolX is within the cap (+inf when absent)
    T3: np.ndarray         # [l, k, s] slice latencies (+inf illegal)
    E3: np.ndarray
    X3: np.ndarray
    cT: Cells
    cE: Cells
    cX: Cells
    ok: np.ndarray         # [l, k, s] legal slices
    ss: np.ndarray         # streamed states
    es: np.ndarray         # enumerated states

    @property
    def L(self) -> int:
        return self.problem.num_layers

    @property
    def S(self) -> int:
        return self.problem.num_states

    @property
    def k(self) -> float:
        """mJ per ms of the cap: X = E - k * T."""
        return self.c / 1000.0

    def value(self, T, E):
        if self.metric == "latency":
            return T
        if self.metric == "energy":
            return E
        return E * T

    def feasible(self, T, E):
        ok = T <= self.Dtol
        if self.has_cap:
            ok = ok & (E - self.k * T <= RTOL * np.maximum(1.0, E))
        return ok

    def violation(self, T, E):
        """How far (T, E) is from feasible, relative to the deadline and the allowed energy."""
        v = 0.0
        if np.isfinite(self.Dtol):
            v = v + np.maximum(0.0, T - self.Dtol) / max(self.deadline, 1e-12)
        if self.has_cap:
            allowed = self.k * T
            v = v + np.maximum(0.0, E - allowed - self.tolX) / np.maximum(1e-12, allowed)
        return v

    def totals(self, path: list) -> tuple[float, float]:
        """(T, E) of a path [(first, last, state)] summed from the slice tensors."""
        T = sum(float(self.T3[last + 1, first, s]) for first, last, s in path)
        E = sum(float(self.E3[last + 1, first, s]) for first, last, s in path)
        return T, E


def ms_text(x: float) -> str:
    """Milliseconds as the planner's messages print them."""
    return f"{x:.1f}" if abs(x) >= 1 else f"{x:.3g}"


def mw_text(x: float) -> str:
    """Milliwatts as the planner's messages print them."""
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}"


def build(problem: PlanningProblem, objective: Objective, stream: bool = True) -> Model:
    """The Model of ``problem`` for ``objective``; InfeasibleError when a layer runs nowhere."""
    if problem.num_layers == 0:
        raise InfeasibleError("the model has no layers to plan")
    cells = cell_costs(problem)
    tables = SliceTables(problem, cells)
    T3, E3 = tables.latency(), tables.energy()
    require_runnable(problem, tables, T3)
    has_cap = objective.power_cap_mw is not None
    c = float(objective.power_cap_mw) if has_cap else 0.0
    cT = Cells(cells.layer_ms, cells.in_ms, cells.out_ms)
    cE = Cells(cells.layer_mj, cells.in_mj, cells.out_mj)
    tolX = INF
    if has_cap:
        cX = Cells(*(combine(e, t, -c / 1000.0) for e, t in ((cE.layer, cT.layer), (cE.enter, cT.enter),
                                                             (cE.leave, cT.leave))))
        X3 = combine(E3, T3, -c / 1000.0)
        # an upper bound on any plan's energy makes the cap tolerance independent of the plan
        ebound = sum(float(np.max(np.where(np.isfinite(a), a, -INF), axis=1).clip(min=0).sum())
                     for a in (cE.layer, cE.enter, cE.leave))
        tolX = RTOL * max(1.0, ebound)
    else:
        cX, X3 = cE, E3       # X = E when no cap
    cap = np.asarray(problem.capacity_bytes, dtype=np.float64)
    total = problem.memory_bytes.sum(axis=0)      # [S] the whole model's bytes per state
    streamed = cap >= total if stream else np.zeros(problem.num_states, dtype=bool)
    D = INF if objective.deadline_ms is None else float(objective.deadline_ms)
    arrays = dict(T3=T3, E3=E3, X3=X3, ok=tables.ok)
    for a in arrays.values():
        a.setflags(write=False)
    return Model(problem=problem, metric=objective.metric, deadline=D, Dtol=D * (1 + RTOL), has_cap=has_cap,
                 c=c, tolX=tolX, cT=cT, cE=cE, cX=cX, ss=np.flatnonzero(streamed), es=np.flatnonzero(~streamed),
                 **arrays)


__all__ = ["Cells", "Model", "build", "combine", "ms_text", "mw_text", "weighted"]
