"""Incumbents: good feasible plans found fast, before (and to speed up) the exact label search.

The lower hull of all plans in the (T, E) plane is explored with the parametric DP: vertices for a
geometric grid of weights, then, round after round, the weight of the segment between two
neighbouring vertices (it finds the vertex between them, or proves the segment an edge). Only
segments that can matter are refined: those crossing the deadline or the cap, and those whose
triangle (the two vertices and the crossing of their supporting lines) holds a point better
than the incumbent. edp is quasi-concave (its super-level sets are convex), so over the hull
its minimum is at a vertex: without limits this refinement alone is exact.

Infeasible vertices next to a limit are repaired by re-picking slice states one at a time
(``repair``). The best feasible plan so far is the incumbent ``U``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

import numpy as np

from .lagrange import DENSE_LAYERS, DENSE_WEIGHTS, Vertices, forward, weighted_path
from .model import Model
from .pareto import INF

GRID = 2.0 ** np.arange(-10, 10.5, 1.0)    # weights relative to the plans' typical power
ROUNDS = 12
# Energy: the label search finds what further rounds would (they only sharpen the incumbent and
# the bound's lines), and each round is a whole forward pass. Measured 2026-11-24 against 12
# rounds: zoo energy under a deadline 15-30% faster; 250 layers, under a deadline 207 vs 229 ms,
# under a cap 91 vs 137 ms (before the rounds refined the hull past the least-energy vertex: energy
# under a cap alone now has ENERGY_CAP_ROUNDS). Latency under a cap and edp keep all rounds (edp
# without limits: they alone prove the optimum; 250 layers: 128 ms with 12, 219 with 1).
ENERGY_ROUNDS = 1
# Energy under both a deadline and a cap is the exception: the label pass that proves the optimum
# keeps every label the bound cannot cut, and the bound's lines are these rounds' hull weights.
# Measured at 250 layers on the fitted board (least of 3 interleaved, with the weights' midpoints
# added as for energy under a deadline): seed 0 999 -> 494 ms (labels 290k -> 78k), seed 1
# 278 -> 317 ms; 3 rounds 561 / 273 ms, 12 rounds 538 / 381 ms.
ENERGY_BOTH_ROUNDS = 6
# Short models (zoo: 22-56 layers) skip even that round for energy under one limit or none, and
# their bound takes the hull's weights as they are (no midpoints, ``exact._refine``): on the 12
# zoo models of the compile table, energy under HERTI's medium deadline, the same labels (or 2
# more) and 12 % less time at the median (least of 15 interleaved runs; the set-up's Python
# loops over layers are most of a short model's solve). Measured at 250 layers the round pays.
SHORT_LAYERS = 120
# Energy under a cap alone gets every round, on models of any length: it reaches the hull only when
# the least-energy plan draws more than the cap, so every feasible plan is slower and hungrier
# (past the least-energy vertex, where the hull rises), and the bound's lines there come from
# these rounds alone (the opening's grid weights are all >= 0). Measured 2026-11-24 (least of 3
# interleaved): the 12 zoo models under a cap half way between their lowest average power and their
# fastest plan's, 571 -> 346 ms in all (ResNet-50 220 -> 69 ms, 184 k -> 30 k labels); resnetv2_152
# at --max-cut-tensors 2 (411 layers) proved optimal in 16 s, where 30 s left a 3 % gap; the 250-
# layer synthetic cases unchanged (their least-energy plans meet the cap).
ENERGY_CAP_ROUNDS = ROUNDS


@dataclass
class Hull:
    """Vertices found so far: (lam, T, E, path), sorted by lam descending (T ascending); a path
    is a function returning it."""

    lam: list = field(default_factory=list)
    T: list = field(default_factory=list)
    E: list = field(default_factory=list)
    paths: list = field(default_factory=list)
    edges: set = field(default_factory=set)   # pairs of lam proven to bound a hull edge

    def add(self, m: Model, lam: np.ndarray) -> None:
        if lam.size <= DENSE_WEIGHTS and m.L <= DENSE_LAYERS:
            for w in lam:
                path = weighted_path(m, float(w))
                self._put(w, *m.totals(path), lambda p=path: p)
            self._sort()
        else:
            self.take(forward(m, lam))

    def take(self, v: Vertices) -> None:
        """Adds the vertices of a forward pass (those of a pure-latency weight, a = 0, excepted)."""
        for k in range(v.lam.size):
            if np.isfinite(v.T[k]) and v.a[k] > 0:
                self._put(v.lam[k], v.T[k], v.E[k], partial(v.path, k))    # walked back only when asked for
        self._sort()

    def _put(self, lam: float, T: float, E: float, path) -> None:
        self.lam.append(float(lam))
        self.T.append(float(T))
        self.E.append(float(E))
        self.paths.append(path)

    def _sort(self) -> None:
        order = np.argsort(-np.asarray(self.lam), kind="stable")
        for name in ("lam", "T", "E", "paths"):
            setattr(self, name, [getattr(self, name)[i] for i in order])


def _interesting(m: Model, h: Hull, i: int, U: float) -> bool:
    """Whether the segment between vertices i and i+1 may hide a useful vertex. Past the least-energy
    vertex (weights < 0) slower plans draw more energy: a segment there rises, and under a power cap
    it is often the one that matters (when the fastest plan is also the least-energy one, all of the
    cap's trade-off lies there)."""
    Ta, Ea, Tb, Eb = h.T[i], h.E[i], h.T[i + 1], h.E[i + 1]
    if (h.lam[i], h.lam[i + 1]) in h.edges or not Tb > Ta * (1 + 1e-12):
        return False
    if not abs(Ea - Eb) > 1e-12 * max(abs(Ea), abs(Eb)) + 1e-300:
        return False
    fa, fb = bool(m.feasible(Ta, Ea)), bool(m.feasible(Tb, Eb))
    if fa != fb:
        return True
    if not fa:
        return False
    la, lb = h.lam[i], h.lam[i + 1]
    Tc = (Ea + la * Ta - Eb - lb * Tb) / (la - lb) if la != lb else Ta
    Ec = Ea + la * Ta - la * Tc
    best = min(m.value(Ta, Ea), m.value(Tb, Eb), m.value(Tc, max(Ec, 0.0)))
    return best < U * (1 - 1e-12)


def opening(m: Model) -> Vertices:
    """The first forward pass, all weights at once: latency alone (index 0, a = 0), energy alone
    (1), then with a cap the coolest plan (2, E - cap * T) and weights towards it, then the grid,
    scaled by the typical power of the least-energy states (the rounds refine it)."""
    e, t = m.cE.layer, m.cT.layer
    with np.errstate(invalid="ignore"):
        j = np.argmin(np.where(np.isfinite(e) & np.isfinite(t), e, INF), axis=1)
    rows = np.arange(m.L)
    E0, T0 = float(e[rows, j].sum()), float(t[rows, j].sum())
    base = max(E0 / T0, 1e-12) if T0 > 0 and np.isfinite(E0 / T0) else 1.0
    cool = [-m.k] + [-m.k * (1 - 2.0 ** -j) for j in range(1, 6)] if m.has_cap else []
    lam = np.concatenate([[1.0, 0.0], cool, GRID * base])
    a = np.ones_like(lam)
    a[0] = 0.0
    return forward(m, lam, a)


def walks(m: Model) -> bool:
    """Whether ``walk`` replaces ``opening`` + ``hull``: energy under a deadline alone on a short
    model, where the search needs only the hull's edge over the deadline (its weight gives the
    bound's tightest line) and a handful of Eq. 9 runs on the dense tensors find it faster than
    one ``forward`` over the grid. Measured on the 12 zoo models of the compile table, energy under
    HERTI's medium deadline (least of 12 interleaved runs): see ``benchmarks/exact_vs_spine.py``."""
    return m.metric == "energy" and not m.has_cap and np.isfinite(m.deadline) and m.L < SHORT_LAYERS


def walk(m: Model, fast: list, lean: list, rounds: int = ROUNDS) -> Hull:
    """The hull's vertices from the fastest plan ``fast`` (weight +inf) and the least-energy plan
    ``lean`` (weight 0, over the deadline) towards the edge that crosses the deadline: each step
    probes the weight of the segment between the last vertex within the deadline and the last one
    over it (``weighted_path``: E + lam * T) and keeps the probe on its side, until a probe finds
    nothing below its segment (the hull's edge there: its weight is the Lagrange multiplier)."""
    h = Hull()
    Ta, Ea = m.totals(fast)
    Tb, Eb = m.totals(lean)
    h._put(INF, Ta, Ea, lambda p=fast: p)
    h._put(0.0, Tb, Eb, lambda p=lean: p)
    for _ in range(rounds):
        if not Tb > Ta * (1 + 1e-12):
            break
        lam = (Ea - Eb) / (Tb - Ta)
        if not (0 < lam < INF):
            break
        path = weighted_path(m, lam)
        Tc, Ec = m.totals(path)
        h._put(lam, Tc, Ec, lambda p=path: p)
        ref = Ea + lam * Ta
        if Ec + lam * Tc >= ref - 1e-12 * max(1.0, abs(ref)):
            break
        if m.feasible(Tc, Ec):
            Ta, Ea = Tc, Ec
        else:
            Tb, Eb = Tc, Ec
    h._sort()
    return h


def _rounds(m: Model) -> int:
    if m.metric != "energy":
        return ROUNDS
    if m.has_cap and np.isfinite(m.deadline):
        return min(ROUNDS, ENERGY_BOTH_ROUNDS)
    if m.has_cap:
        return ENERGY_CAP_ROUNDS
    return min(ROUNDS, ENERGY_ROUNDS) if m.L >= SHORT_LAYERS else 0


def hull(m: Model, start: Vertices, U: float = INF, out_of_time=lambda: False) -> Hull:
    """Explore the lower hull (see the module docstring) from the ``opening`` pass ``start``;
    ``U`` prunes segments (edp)."""
    h = Hull()
    h.take(start)
    for _ in range(_rounds(m)):
        U = min([U] + [m.value(t, e) for t, e in zip(h.T, h.E) if m.feasible(t, e)])
        probes, pairs = [], []
        for i in range(len(h.lam) - 1):
            if _interesting(m, h, i, U):
                lam = (h.E[i + 1] - h.E[i]) / (h.T[i] - h.T[i + 1])
                if h.lam[i + 1] < lam < h.lam[i]:
                    probes.append(lam)
                    pairs.append((h.lam[i], h.lam[i + 1], h.E[i] + lam * h.T[i]))
                else:
                    h.edges.add((h.lam[i], h.lam[i + 1]))
        if not probes or out_of_time():
            break
        before = len(h.lam)
        h.add(m, np.asarray(probes))
        # a probe that finds nothing below the segment proves it a hull edge
        for (la, lb, ref), lam in zip(pairs, probes):
            j = h.lam.index(lam)
            if h.E[j] + lam * h.T[j] >= ref - 1e-12 * max(1.0, abs(ref)):
                h.edges.add((la, lb))
        if len(h.lam) == before:
            break
    return h


def repair(m: Model, path: list, max_moves: int = 60) -> list | None:
    """A feasible, locally improved version of ``path`` (None if none is found).

    Keeps the slicing and re-picks one slice's state at a time: while the plan violates a limit,
    the move with the least objective increase per unit of violation removed; then, while some
    move lowers the objective and stays feasible, the best one.
    """
    first = np.array([f for f, _, _ in path])
    ends = np.array([last + 1 for _, last, _ in path])
    state = np.array([s for _, _, s in path])
    ct = m.T3[ends, first, :]                     # [n, S]
    ce = m.E3[ends, first, :]
    rows = np.arange(len(path))
    T = float(ct[rows, state].sum())
    E = float(ce[rows, state].sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        for _ in range(max_moves):
            nT = T + ct - ct[rows, state][:, None]
            nE = E + ce - ce[rows, state][:, None]
            ok = np.isfinite(nT) & np.isfinite(nE)
            obj_now = m.value(T, E)
            obj_new = np.where(ok, m.value(nT, nE), INF)
            viol_now = float(m.violation(T, E))
            if viol_now > 0:
                gain = viol_now - np.where(ok, m.violation(nT, nE), INF)
                score = np.where(gain > 0, (obj_new - obj_now) / gain, INF)
            else:
                feasible = ok & m.feasible(nT, nE)
                score = np.where(feasible & (obj_new < obj_now * (1 - 1e-12)), obj_new, INF)
            j = int(np.argmin(score))
            if not np.isfinite(score.flat[j]):
                break
            r, s = divmod(j, score.shape[1])
            T, E = float(nT[r, s]), float(nE[r, s])
            state[r] = s
    if not m.feasible(T, E):
        return None
    return [(int(f), int(e) - 1, int(s)) for f, e, s in zip(first, ends, state)]


def best_feasible(m: Model, h: Hull, repairs: int = 4) -> tuple[float, list | None]:
    """(value, path) of the best feasible plan among the hull's vertices and the repaired
    least-violating ones; (inf, None) when there is none."""
    U, best = INF, None
    scored = [(float(m.violation(T, E)), float(m.value(T, E)), p) for T, E, p in zip(h.T, h.E, h.paths)]
    cands = []
    for s in sorted((s for s in scored if s[0] <= 0), key=lambda s: s[1]):
        p = s[2]()
        if p is not None and m.feasible(*m.totals(p)):
            cands.append(p)
            if len(cands) == 2:
                break
    cands += [s[2]() for s in sorted((s for s in scored if s[0] > 0), key=lambda s: (s[0], s[1]))[:repairs]]
    for p in cands:
        if p is None:
            continue
        q = repair(m, p)
        if q is None:
            continue
        v = float(m.value(*m.totals(q)))
        if v < U:
            U, best = v, q
    return U, best


def lowest_average_power_mw(m: Model) -> float:
    """min over legal plans of energy/latency (Dinkelbach's iteration on E - rho*T)."""
    v = forward(m, np.array([0.0]))
    T, E = float(v.T[0]), float(v.E[0])
    rho = 1000.0 * E / T if T > 0 else 0.0
    for _ in range(100):
        v = forward(m, np.array([-rho / 1000.0]))
        T, E = float(v.T[0]), float(v.E[0])
        if T <= 0 or E - rho * T / 1000.0 >= -1e-12 * max(1.0, E):
            break
        rho = 1000.0 * E / T
    return rho


__all__ = ["SHORT_LAYERS", "Hull", "best_feasible", "hull", "opening", "lowest_average_power_mw", "repair", "walk", "walks"]
