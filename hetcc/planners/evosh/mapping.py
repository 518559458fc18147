"""The exact optimum of EvoSh's mapping space: the fastest block -> CPU/GPU mapping within a power cap.

The space is the one EvoSh searches (``ConfigSpace`` with ``kind="mapping"``): each block runs on
the CPU or the GPU device at its top level, and consecutive blocks on one device are *one* slice
(``ConfigSpace.runs``). So a plan is a sequence of runs that alternate between the two devices,
each run costed as one slice of the original problem (``slice_cost``, legality and memory by
``slice_legal``): a run can never be cut in two to add transfers that dilute the average power
(the block problem under ``exact`` could, and its optimum was then no EvoSh configuration).

A dynamic program over runs keeps Pareto labels (T, X): T the latency, X = energy - c*T/1000
with c the cap (times 1 + 1e-9, the tolerance every EvoSh search uses), both additive over runs;
a mapping is within the cap iff X <= 0, so a label beaten on both T and X at the same point
(block boundary, device of the run) can never complete to a faster feasible mapping. The
backward pass builds every suffix's front (``_suffixes``) and so the optimum t; the forward pass
(``_tied``) keeps only the prefixes that some suffix completes within the tie window of t
(``TIE_RTOL``) and the cap, and the most capable of those mappings wins
(``hardware.capability``: the most GPU blocks, then the earliest), exactly as
``ConfigSpace.exhaustive`` breaks ties by enumeration. B4 in 34 blocks: about 1 s.
"""
from __future__ import annotations

import numpy as np

from ..hardware import capability
from .space import TIE_RTOL, ConfigSpace

CAP_RTOL = 1e-9     # the searches' tolerance on the cap (search.run: p > cap * (1 + 1e-9) is over)


def _runs(space: ConfigSpace) -> dict[tuple[int, int, int], tuple[float, float]]:
    """(first block, end block, device position) -> (latency ms, energy mJ) of every legal run."""
    prob = space.problem
    L = prob.num_layers
    n = len(space.starts)
    ends = list(space.starts[1:]) + [L]
    cols = [int(prob.states.fmax_state(d)) for d in space.devices]
    out: dict[tuple[int, int, int], tuple[float, float]] = {}
    for d, s in enumerate(cols):
        for b in range(n):
            for j in range(b + 1, n + 1):
                first, last = space.starts[b], ends[j - 1] - 1
                if not bool(np.all(prob.legal[first:last + 1, s])):
                    break                      # a longer run holds the same illegal layer
                if prob.slice_legal(first, last, s):
                    c = prob.slice_cost(first, last, s)
                    out[(b, j, d)] = (c.latency_ms, c.energy_mj)
    return out


def _x(run: tuple[float, float], cap: float) -> float:
    return run[1] - cap * run[0] / 1000.0 if np.isfinite(cap) else 0.0


def _suffixes(n: int, runs: dict, cap: float) -> dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]:
    """(b, d) -> the Pareto front (T ascending, X descending) of the blocks b..n-1 mapped with
    the first run on device d (b = n: the empty suffix, (0, 0))."""
    out = {(n, 0): (np.zeros(1), np.zeros(1)), (n, 1): (np.zeros(1), np.zeros(1))}
    for b in range(n - 1, -1, -1):
        for d in (0, 1):
            labels = []
            for j in range(b + 1, n + 1):
                r = runs.get((b, j, d))
                if r is None:
                    continue
                T, X = out[(j, 1 - d)]
                labels += zip((T + r[0]).tolist(), (X + _x(r, cap)).tolist())
            labels.sort()
            T = []
            X = []
            for t, x in labels:
                if not X or x < X[-1]:
                    T.append(t)
                    X.append(x)
            out[(b, d)] = (np.array(T), np.array(X))
    return out


def _can_finish(front: tuple[np.ndarray, np.ndarray], T: float, X: float, t_max: float) -> bool:
    """Whether a completion on ``front`` ends within ``t_max`` ms and the cap (X <= 0)."""
    Ts, Xs = front
    i = int(np.searchsorted(Ts, t_max - T, side="right")) - 1
    return i >= 0 and X + float(Xs[i]) <= 0.0


def _tied(n: int, runs: dict, cap: float, suffix: dict, t_max: float) -> list:
    """Every mapping within ``t_max`` ms and the cap (as labels (T, X, bits)), but for those a
    faster, leaner and at least as capable one at the same point beats: a forward pass that
    keeps only the prefixes some completion takes within both (``suffix``)."""
    labels: dict[tuple[int, int], list] = {(0, 2): [(0.0, 0.0, ())]}
    finals: list = []
    for b in range(n):
        for prev in (0, 1, 2):
            front = labels.pop((b, prev), None)
            if not front:
                continue
            for d in (0, 1):
                if d == prev:
                    continue
                for j in range(b + 1, n + 1):
                    r = runs.get((b, j, d))
                    if r is None:
                        continue
                    t, x = r[0], _x(r, cap)
                    bucket = labels.setdefault((j, d), []) if j < n else finals
                    for T, X, bits in front:
                        if j < n and not _can_finish(suffix[(j, 1 - d)], T + t, X + x, t_max):
                            continue
                        if j == n and (T + t > t_max or X + x > 0.0):
                            continue
                        bucket.append((T + t, X + x, bits + (d,) * (j - b)))
        for k in [k for k in labels if k[0] == b + 1]:
            labels[k] = _prune(labels[k])
    return finals


def _prune(front: list) -> list:
    """The labels no other beats on T, X and capability at once."""
    front.sort(key=lambda lab: (lab[0], lab[1]))
    keys = [_cap(lab) for lab in front]
    kept: list = []
    for lab, c in zip(front, keys):
        if not any(k[0] <= lab[0] and k[1] <= lab[1] and kc >= c for k, kc in kept):
            kept.append((lab, c))
    return [lab for lab, _ in kept]


def _cap(lab) -> tuple[int, ...]:
    return capability(lab[2])


def best_mapping(space: ConfigSpace, cap_mw: float) -> tuple[tuple[int, ...] | None, float, float]:
    """(mapping, its latency ms, the least average power of any valid mapping in mW) of the fastest
    mapping of ``space`` (kind ``mapping``) within ``cap_mw`` (inf: no cap), ties (within
    ``TIE_RTOL``) to the more capable mapping; mapping None when none is within the cap."""
    n = len(space.starts)
    runs = _runs(space)
    cap = cap_mw * (1 + CAP_RTOL) if np.isfinite(cap_mw) else np.inf
    suffix = _suffixes(n, runs, cap)
    T = np.concatenate([suffix[(0, 0)][0], suffix[(0, 1)][0]])
    X = np.concatenate([suffix[(0, 0)][1], suffix[(0, 1)][1]])
    if T.size == 0:
        return None, np.inf, np.inf
    if not (X <= 0.0).any():
        return None, np.inf, _least_power(n, runs)
    t = float(T[X <= 0.0].min())
    best = max(_tied(n, runs, cap, suffix, t + TIE_RTOL * max(1.0, abs(t))), key=_cap)
    return best[2], best[0], np.nan


def _least_power(n: int, runs: dict) -> float:
    """The least average power (mW) of any valid mapping: the least cap c at which some mapping
    has X(c) <= 0 (bisection; X of one mapping falls as c rises)."""
    def fits(c: float) -> bool:
        return any(bool((_suffixes(n, runs, c)[(0, d)][1] <= 0.0).any()) for d in (0, 1))

    lo, hi = 0.0, 1.0
    while not fits(hi):
        lo, hi = hi, hi * 2.0
        if hi > 1e12:
            return np.inf
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    return hi


__all__ = ["best_mapping"]
