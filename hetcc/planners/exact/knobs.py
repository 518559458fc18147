"""Lower bounds of many hardware configurations at once, so that ``exact`` with ``knobs=search``
solves only the configurations that can still win.

A configuration's tables are a PlanningProblem of their own (``HardwareSpace.apply``); ``exact``
solves one in tens to hundreds of milliseconds, and a board has a few hundred configurations. A
Lagrangian bound is far cheaper: for weights (a, b) >= 0 on (E, T) every plan costs at least the
least a*E + b*T over all plans, one dynamic program over the layers (a slice is open on a state
while it runs, as in ``lagrange.forward``), here for every configuration and every weight in one
vectorised pass. Capacities are ignored (fewer limits, a lower bound still).

For a plan within the limits (T <= D, X = E - k*T <= tol, k the cap in mJ per ms):

* latency: T >= min(T + lam*X) - lam*tol for lam >= 0, i.e. weights (lam, 1 - lam*k);
* energy: E >= min(E + nu*X) - nu*tol (weights (1 + nu, -nu*k)) and E >= min(E + mu*T) - mu*D;
* edp: the product of the two (both are non-negative).

The best weight of each configuration is taken from a fixed grid: a bound, not the LP optimum
(``bounds`` has that, per search point, inside a solve). A configuration whose latency bound
passes the deadline, or whose weights prove the cap unreachable, bounds at +inf.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..dp import CellCosts
from ..metrics import RTOL, Objective
from ..problem import PlanningProblem, StateTable
from .pareto import INF

#: (1 - g) / g for the latency weights g = lam * k: the slope of the hull's edge where it meets the
#: cap line, relative to the cap, on a geometric grid; g slightly above 1 covers the hull's rising part
SLOPES = 2.0 ** np.arange(-12, 12.5, 1.0)
RISING = 1.0 + 2.0 ** -np.arange(1.0, 8.0)
#: weights of T for the energy bound under a deadline (mJ per ms, relative to the typical power)
POWERS = 2.0 ** np.arange(-10, 10.5, 1.0)


def _weights(objective: Objective, typical_mw: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]:
    """Columns (a, b, lam, mu, what): the bound is a*E + b*T minimised, less lam*tol and mu*D;
    ``what`` says per column whether it bounds T ('t') or E ('e')."""
    k = float(objective.power_cap_mw or 0.0) / 1000.0
    cols: list[tuple[float, float, float, float, str]] = [(0.0, 1.0, 0.0, 0.0, "t")]
    if k > 0:
        g = np.concatenate([1.0 / (1.0 + SLOPES), RISING])
        cols += [(gi / k, 1.0 - gi, gi / k, 0.0, "t") for gi in g]
    if objective.metric != "latency":
        cols.append((1.0, 0.0, 0.0, 0.0, "e"))
        if k > 0:
            cols += [(1.0 + nu, -nu * k, nu, 0.0, "e") for nu in 1.0 / SLOPES]
        if objective.deadline_ms is not None:
            cols += [(1.0, mu, 0.0, mu, "e") for mu in POWERS * typical_mw / 1000.0]
    a, b, lam, mu, what = zip(*cols)
    return np.array(a), np.array(b), np.array(lam), np.array(mu), "".join(what)


def _energy_bound(cells: CellCosts) -> float:
    """An upper bound on any plan's energy (as ``model.build`` takes for the cap's tolerance)."""
    return sum(float(np.max(np.where(np.isfinite(x), x, -INF), axis=1).clip(min=0).sum())
               for x in (cells.layer_mj, cells.in_mj, cells.out_mj))


def lower_bounds(cells: Sequence[CellCosts], objective: Objective) -> np.ndarray:
    """[C] lower bounds of the objective's value over the plans within its limits, one per
    configuration's cell costs (+inf: no plan of that configuration meets the limits)."""
    C = len(cells)
    if C == 0:
        return np.zeros(0)

    def stack(name: str) -> np.ndarray:       # [L, C, S]
        return np.ascontiguousarray(np.stack([getattr(c, name) for c in cells], axis=1))

    lay_t, in_t, out_t = stack("layer_ms"), stack("in_ms"), stack("out_ms")
    lay_e, in_e, out_e = stack("layer_mj"), stack("in_mj"), stack("out_mj")
    with np.errstate(invalid="ignore", divide="ignore"):
        typical = float(np.nanmedian(np.where(np.isfinite(lay_t) & (lay_t > 0), lay_e / lay_t, np.nan)) * 1000.0)
    if not np.isfinite(typical) or typical <= 0:
        typical = 1000.0
    a, b, lam, mu, what = _weights(objective, typical)

    def parts(e: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ok = np.isfinite(e) & np.isfinite(t)       # cells hold +inf in both units where illegal
        return np.where(ok, e, 0.0), np.where(ok, t, 0.0), np.where(ok, 0.0, INF)[..., None]

    cells_w = [parts(lay_e, lay_t), parts(in_e, in_t), parts(out_e, out_t)]
    L = lay_t.shape[0]

    def w(which: int, i: int) -> np.ndarray:     # [C, S, K]: a*E + b*T of layer i's cells
        e, t, pen = (x[i] for x in cells_w[which])
        return e[..., None] * a + t[..., None] * b + pen

    W = np.zeros((C, a.size))
    opn = np.full((C, lay_t.shape[2], a.size), INF)
    with np.errstate(invalid="ignore", over="ignore"):
        for i in range(L):
            opn = np.minimum(opn, W[:, None, :] + w(1, i)) + w(0, i)
            W = (opn + w(2, i)).min(axis=1)
        tol = np.array([RTOL * max(1.0, _energy_bound(c)) for c in cells])
        D = float(objective.deadline_ms) if objective.deadline_ms is not None else 0.0
        raw = np.where(np.isfinite(W), W - tol[:, None] * lam - mu * D, INF)
        raw = np.where(np.isnan(raw), INF, raw)
        t_cols = np.array([x == "t" for x in what])
        lb_t = raw[:, t_cols].max(axis=1)
        lb_e = raw[:, ~t_cols].max(axis=1) if (~t_cols).any() else np.zeros(C)
    lb_t = np.maximum(lb_t, 0.0)
    lb_e = np.maximum(lb_e, 0.0)
    if objective.deadline_ms is not None:
        lb_t = np.where(lb_t > objective.deadline_ms * (1 + RTOL), INF, lb_t)
    if objective.metric == "latency":
        out = lb_t
    elif objective.metric == "energy":
        out = np.where(np.isfinite(lb_t), lb_e, INF)
    else:
        out = np.where(np.isfinite(lb_t) & np.isfinite(lb_e), lb_t * lb_e, INF)
    return np.where(np.isnan(out), INF, out)


def single_state(cells: Sequence[CellCosts], objective: Objective) -> tuple[np.ndarray, np.ndarray]:
    """[C, S] value of running the whole model as one slice on each state of each configuration
    (+inf where illegal or outside the limits; capacities are not checked here) and [C, S] bool
    feasibility: EvoSh's hardware space with one device, the knob search's first incumbents."""
    T = np.stack([c.in_ms[0] + c.layer_ms.sum(axis=0) + c.out_ms[-1] for c in cells])
    E = np.stack([c.in_mj[0] + c.layer_mj.sum(axis=0) + c.out_mj[-1] for c in cells])
    ok = np.isfinite(T) & np.isfinite(E)
    value = np.full(T.shape, INF)
    for c, s in zip(*np.nonzero(ok)):
        t, e = float(T[c, s]), float(E[c, s])
        if objective.feasible(t, e):
            value[c, s] = objective.key(t, e)
    return value, np.isfinite(value)


def union(problems: Sequence[PlanningProblem]) -> tuple[PlanningProblem, list[dict[int, int]]]:
    """One problem whose states are the distinct states (columns of every table) of ``problems``,
    configurations of one board that share their base power: a plan of any of them is a plan of
    the union at the same cost, so the union's optimum bounds theirs, and is theirs when every
    column it uses belongs to one configuration. Returns the union and, per problem, its map
    union column -> own state (a state shared by several configurations is one column)."""
    first = problems[0]
    cols: dict[bytes, int] = {}
    picks: list[tuple[int, int]] = []
    maps: list[dict[int, int]] = []
    for i, q in enumerate(problems):
        own: dict[int, int] = {}
        arrays = (q.latency_ms, q.power_mw, q.transfer_in_ms, q.transfer_out_ms, q.transfer_in_mj, q.transfer_out_mj)
        for s in range(q.num_states):
            key = b"".join(np.ascontiguousarray(a[:, s]).tobytes() for a in arrays) + q.legal[:, s].tobytes() + \
                np.array([q.capacity_bytes[s], q.states.freq_mhz[s],
                          0.0 if q.activation_factor is None else q.activation_factor[s]]).tobytes() + \
                f"{q.states.device[s]}|{q.states.kind[s]}|{bool(q.states.is_fmax[s])}".encode()
            if key not in cols:
                cols[key] = len(picks)
                picks.append((i, s))
            own.setdefault(cols[key], s)
        maps.append(own)

    def gather(name: str) -> np.ndarray:
        return np.stack([getattr(problems[i], name)[:, s] for i, s in picks], axis=1)

    st = [problems[i].states for i, _ in picks]
    s_of = [s for _, s in picks]
    states = StateTable(device=tuple(t.device[s] for t, s in zip(st, s_of)), kind=tuple(t.kind[s] for t, s in zip(st, s_of)),
                        freq_mhz=np.array([t.freq_mhz[s] for t, s in zip(st, s_of)]),
                        is_fmax=np.array([t.is_fmax[s] for t, s in zip(st, s_of)]))
    factor = None if first.activation_factor is None else np.array(
        [problems[i].activation_factor[s] for i, s in picks])
    out = first.replace(
        **{k: gather(k) for k in ("latency_ms", "power_mw", "transfer_in_ms", "transfer_out_ms", "transfer_in_mj",
                                  "transfer_out_mj", "legal")},
        capacity_bytes=np.array([problems[i].capacity_bytes[s] for i, s in picks]), states=states,
        activation_factor=factor, communication=None, hardware=None, hardware_config=None)
    return out, maps


__all__ = ["lower_bounds", "single_state", "union"]
