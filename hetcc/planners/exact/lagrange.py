"""Parametric (Lagrangian) dynamic programs: for K weights lam at once, the plans minimising
E + lam * T (forward, with their paths) and the least E + lam * T still to pay from every search
point (backward). O(L * S * K) for streamed states; enumerated states add their slices.

A plan optimal for E + lam * T is a vertex of the lower hull of all plans in the (T, E) plane;
``lam`` may be negative (the part of the hull where slower plans draw more energy, which a power
cap can make the interesting part).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import Model, weighted
from .pareto import INF

#: ``weighted_path`` serves a probe of at most this many weights on a model of at most DENSE_LAYERS layers
DENSE_WEIGHTS = 2
DENSE_LAYERS = 100


@dataclass(frozen=True)
class Vertices:
    """The forward pass: per weight pair (a[k], lam[k]) the optimal plan's T[k], E[k] and its path on demand."""

    lam: np.ndarray
    a: np.ndarray
    T: np.ndarray
    E: np.ndarray
    choice_s: np.ndarray   # [L+1, K] state of the slice ending at boundary b (-1 none)
    choice_k: np.ndarray   # [L+1, K] its first layer, -1 when it was a streamed (open) slice
    cont: np.ndarray       # [L, ns, K] layer i continued the open slice on ss[j]
    ss: np.ndarray

    def path(self, k: int) -> list[tuple[int, int, int]] | None:
        b = self.choice_s.shape[0] - 1
        out = []
        pos = {int(s): j for j, s in enumerate(self.ss)}
        while b > 0:
            s = int(self.choice_s[b, k])
            if s < 0:
                return None
            first = int(self.choice_k[b, k])
            if first < 0:
                j, i = pos[s], b - 1
                while self.cont[i, j, k]:
                    i -= 1
                first = i
            out.append((first, b - 1, s))
            b = first
        out.reverse()
        return out


def forward(m: Model, lam: np.ndarray, a: np.ndarray | None = None) -> Vertices:
    """The plans minimising a[k] * E + lam[k] * T for every k (one pass; a defaults to 1).

    Only T is summed along; E = (W - lam * T) / a afterwards (W the weighted optimum), so E is
    +inf where a = 0 (latency alone: no energy is asked for)."""
    lam = np.asarray(lam, dtype=np.float64)
    a = np.ones_like(lam) if a is None else np.asarray(a, dtype=np.float64)
    K, L = lam.size, m.L
    ss, es = m.ss, m.es
    ns, ne = ss.size, es.size
    ar = np.arange(K)
    lay = weighted(m.cE.layer[:, ss], m.cT.layer[:, ss], lam, a)
    ent = weighted(m.cE.enter[:, ss], m.cT.enter[:, ss], lam, a)
    lea = weighted(m.cE.leave[:, ss], m.cT.leave[:, ss], lam, a)
    # per-state columns picked once, not per layer
    tEnt, tLay, tLea = (x[:, ss][:, :, None] for x in (m.cT.enter, m.cT.layer, m.cT.leave))
    W = np.full((L + 1, K), INF)
    W[0] = 0.0
    cT = np.zeros((L + 1, K))
    cs = np.full((L + 1, K), -1, dtype=np.int64)
    ck = np.full((L + 1, K), -1, dtype=np.int64)
    cont = np.zeros((L, ns, K), dtype=bool)
    T3 = m.T3[:, :, es]
    # the enumerated slices' weighted costs in one go when they fit in a few MB
    W3 = weighted(m.E3[:, :, es], T3, lam, a) if ne and T3.size * K <= 1 << 20 else None
    oW = np.full((ns, K), INF)
    oT = np.zeros((ns, K))
    none = np.full(K, INF)
    with np.errstate(invalid="ignore"):
        for i in range(L):
            b = i + 1
            best, bT = none, none
            if ns:
                start = W[i] + ent[i]
                keep = oW < start
                cont[i] = keep
                oW = np.where(keep, oW, start) + lay[i]
                oT = np.where(keep, oT, cT[i] + tEnt[i]) + tLay[i]
                cand = oW + lea[i]
                j = np.argmin(cand, axis=0)
                best = cand[j, ar]
                bT = oT[j, ar] + tLea[i, j, 0]
                cs[b] = np.where(best < INF, ss[j], -1)
            if ne:
                wb = W3[b, :b] if W3 is not None else weighted(m.E3[b, :b][:, es], T3[b, :b], lam, a)
                flat = (W[:b, None, :] + wb).reshape(b * ne, K)     # [b * ne, K]
                j2 = np.argmin(flat, axis=0)
                v2 = flat[j2, ar]
                k2, e2 = np.divmod(j2, ne)
                better = v2 < best
                best = np.where(better, v2, best)
                bT = np.where(better, cT[k2, ar] + T3[b, k2, e2], bT)
                cs[b] = np.where(better, es[e2], cs[b])
                ck[b] = np.where(better, k2, -1)
            W[b], cT[b] = best, bT
    ok = np.isfinite(W[L])
    with np.errstate(invalid="ignore", divide="ignore"):
        E = np.where(ok & (a > 0), (W[L] - lam * cT[L]) / np.where(a > 0, a, 1.0), INF)
    return Vertices(lam, a, np.where(ok, cT[L], INF), E, cs, ck, cont, ss)


def tensor_dp(cost: np.ndarray) -> list[tuple[int, int, int]] | None:
    """MOSAIC's Eq. 9 on a dense [l, k, s] slice tensor (``Model.T3`` / ``E3``): the path
    [(first, last, state)] of least total, None when no plan is legal. Three numpy calls a layer
    on tensors the model already holds: the cheapest way to one weight's optimum on a zoo model
    (``forward`` makes two dozen calls a layer for any number of weights, ``dense`` loops in Python
    over layers and states)."""
    L, S = cost.shape[0] - 1, cost.shape[2]
    total = np.full(L + 1, INF)
    total[0] = 0.0
    arg = np.zeros(L + 1, dtype=np.int64)
    for b in range(1, L + 1):
        c = total[:b, None] + cost[b, :b, :]
        j = int(np.argmin(c))
        total[b] = c.flat[j]
        arg[b] = j
    if not np.isfinite(total[L]):
        return None
    out = []
    b = L
    while b > 0:
        k, s = divmod(int(arg[b]), S)
        out.append((k, b - 1, s))
        b = k
    out.reverse()
    return out


def weighted_path(m: Model, w: float) -> list[tuple[int, int, int]] | None:
    """The plan minimising E + w * T (w of any sign): ``tensor_dp`` on the model's slice tensors.
    One weight on a short model (a hull probe, a step of ``incumbent.walk``); ``forward`` serves
    many weights at once."""
    with np.errstate(invalid="ignore"):
        cost = m.E3 + w * m.T3
    if w <= 0:     # inf - inf (0 * inf) where a slice is illegal: E3 and T3 are +inf there alike
        cost[np.isnan(cost)] = INF
    return tensor_dp(cost)


@dataclass(frozen=True)
class Suffix:
    """min over completions of a*E + lam*T from closed boundary i ([L+1, K]) and from an open
    slice on ss[j] whose last layer so far is i-1 ([L+1, ns, K])."""

    closed: np.ndarray
    open: np.ndarray


def backward(m: Model, lam: np.ndarray, a: np.ndarray | None = None) -> Suffix:
    lam = np.asarray(lam, dtype=np.float64)
    a = np.ones_like(lam) if a is None else np.asarray(a, dtype=np.float64)
    K, L = lam.size, m.L
    ss, es = m.ss, m.es
    ns = ss.size
    lay = weighted(m.cE.layer[:, ss], m.cT.layer[:, ss], lam, a)
    ent = weighted(m.cE.enter[:, ss], m.cT.enter[:, ss], lam, a)
    lea = weighted(m.cE.leave[:, ss], m.cT.leave[:, ss], lam, a)
    closed = np.full((L + 1, K), INF)
    closed[L] = 0.0
    E3, T3 = m.E3[:, :, es], m.T3[:, :, es]
    # the enumerated slices' weighted costs in one go when they fit in a few MB (as ``forward``)
    W3 = weighted(E3, T3, lam, a) if es.size and E3.size * K <= 1 << 20 else None
    opn = np.full((L + 1, ns, K), INF)
    if ns:
        opn[L] = lea[L - 1]
    with np.errstate(invalid="ignore"):
        el = ent + lay           # starting a slice at layer i and running it there
        for i in range(L - 1, -1, -1):
            best = np.min(el[i] + opn[i + 1], axis=0) if ns else np.full(K, INF)
            if es.size:
                w = W3[i + 1:, i] if W3 is not None else weighted(E3[i + 1:, i], T3[i + 1:, i], lam, a)
                w = w + closed[i + 1:, None, :]
                best = np.minimum(best, w.reshape(-1, K).min(axis=0))
            closed[i] = best
            if i >= 1 and ns:
                opn[i] = np.minimum(lea[i - 1] + closed[i], lay[i] + opn[i + 1])
    return Suffix(closed, opn)


__all__ = ["DENSE_LAYERS", "DENSE_WEIGHTS", "Suffix", "Vertices", "backward", "forward", "tensor_dp", "weighted",
           "weighted_path"]
