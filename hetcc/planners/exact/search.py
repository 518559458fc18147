"""The label search: one forward pass over the layer boundaries keeping Pareto labels (T, X).

Search points are the closed boundaries b (every slice so far ended at layer b-1) and, for each
streamed state s, the open point "layer b-1 runs on s and its slice may continue". A label is a
partial plan's (T, X). At every point only labels that (1) no other label there dominates in
(T, X) and (2) may still complete into a feasible plan whose objective is within ``cut`` (by the
bounds of ``bounds.lower``) survive. Both rules drop only labels that cannot lead to a plan better
than what survives or than ``cut``: a pass with every label kept is exact for plans within cut.

With ``beam`` only that many labels with the least lower bounds survive per point: a heuristic
for incumbents, not exact. A pass stops early (``Pass.complete`` False) when ``stop()`` says so.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .bounds import FEW_LABELS
from .model import Model
from .pareto import INF, best_rows, compact_rows, pareto_rows

logger = logging.getLogger(__name__)

NONE_F = np.zeros(0)                    # an empty front (read-only: shared)
NONE_I = np.zeros(0, dtype=np.int64)
NONE_F.setflags(write=False)
NONE_I.setflags(write=False)


@dataclass(frozen=True)
class Pass:
    """What one pass found: the best feasible path within its cut (None) and its value, whether
    it ran to the end, how many labels it kept, and its cut as it ended (``improve`` lowers it)."""

    path: list | None
    value: float
    complete: bool
    labels: int
    cut: float


#: bound(T, X, b, is_open, limit) -> (objective lower bound, pruned: no feasible completion or
#: none within limit), as bounds.two_stage
Bound = Callable[[np.ndarray, np.ndarray, int, bool, float], tuple[np.ndarray, np.ndarray]]


def no_bound(T: np.ndarray, X: np.ndarray, b: int, is_open: bool, limit: float) -> tuple[np.ndarray, np.ndarray]:
    """The plain label DP: nothing is pruned but dominated labels."""
    return np.zeros(T.shape), np.zeros(T.shape, dtype=bool)


@np.errstate(invalid="ignore")     # inf - inf in the label sums: such labels are dropped
def run_pass(m: Model, bound: Bound, cut: float, beam: int | None = None,
             stop: Callable[[int], bool] = lambda b: False,
             progress: Callable[[int, int], None] = lambda b, n: None,
             fronts: list | None = None,
             improve: Callable[[int, np.ndarray, np.ndarray, float], float] | None = None,
             sorted_rows: bool = False) -> Pass:
    """One pass; with ``fronts`` (a list) the labels kept at every boundary b are appended to it
    as (closed T, closed X, open T [ns, W], open X [ns, W]), b = 0, 1, ... (for ``suffix``).
    ``improve(b, T, X, cut)`` sees the closed labels kept at b and returns the value of a feasible
    plan it found (a value over ``cut``: none better); a lower value becomes the cut (the pass
    still keeps every plan within it, so it stays exact). ``sorted_rows``: the bound needs each
    row's labels Pareto-filtered and sorted by T (``dominance``)."""
    L = m.L
    ss, es = m.ss, m.es
    # the streamed states' columns, picked once
    layT, outT = (a[:, ss][:, :, None] for a in (m.cT.layer, m.cT.leave))     # [L, ns, 1]
    layX, outX = (a[:, ss][:, :, None] for a in (m.cX.layer, m.cX.leave))
    startT = (m.cT.enter + m.cT.layer)[:, ss][:, :, None]       # a slice started at layer i
    startX = (m.cX.enter + m.cX.layer)[:, ss][:, :, None]
    T3, X3 = m.T3[:, :, es], m.X3[:, :, es]          # the enumerated states' slices
    ns = ss.size

    def limit_of(cut: float) -> float:
        return cut * (1 + 1e-9) + 1e-300 if np.isfinite(cut) else INF

    limit = limit_of(cut)

    def bounded(T, X, b, is_open):
        """(bound, T, X with the pruned labels +inf) of rows [R, N] (closed points: R = 1)."""
        lb, dead = bound(T if is_open else T[0], X if is_open else X[0], b, is_open, limit)
        if not is_open:
            lb, dead = lb[None, :], dead[None, :]
        return lb, np.where(dead, INF, T), np.where(dead, INF, X)

    def keep(T, X, payload, b, is_open):
        """The labels of rows (T, X) [R, N] that survive the Pareto filter and the bound, sorted by
        T per row and compacted left, with their payload. Few labels are bounded first and
        filtered once (fewer numpy calls); many are filtered first (fewer labels to bound)."""
        if T.size <= FEW_LABELS and not (beam or sorted_rows):
            _, T, X = bounded(T, X, b, is_open)
            return pareto_rows(T, X, *payload)
        T, X, *payload = pareto_rows(T, X, *payload)
        lb, T, X = bounded(T, X, b, is_open)
        if beam:
            return pareto_rows(*best_rows(beam, lb, T, X, *payload))
        return compact_rows(T, X, *payload)

    if es.size:   # earliest start boundary of any legal slice ending at b on an enumerated state
        ok = m.ok[:, :, es].any(axis=2)
        kmin = np.where(ok.any(axis=1), ok.argmax(axis=1), 0)
    # A label's way back is one int64: an open label's code is (parent index at its slice's first
    # boundary) * B + that boundary, a closed label's is that code * S + the slice's state (one
    # payload array instead of three: fewer numpy calls per step on the zoo's few labels)
    B, S = L + 1, m.S
    fT, fX, fcode = [np.zeros(1)], [np.zeros(1)], [np.full(1, -1)]
    offsets = [0, 1]
    allT, allX = np.zeros(1), np.zeros(1)          # every closed label so far, for enumeration
    allC = np.zeros(1, dtype=np.int64)            # their open codes (index at b) * B + b
    oT = np.full((ns, 0), INF)
    oX = np.full((ns, 0), INF)
    ocode = np.full((ns, 0), -1, dtype=np.int64)
    kept = 1
    if fronts is not None:
        fronts.append((fT[0], fX[0], oT, oX))
    for i in range(L):
        b = i + 1
        if stop(b):
            return Pass(None, INF, False, kept, cut)
        parts = []
        FT, FX = fT[i], fX[i]
        F = FT.size
        W = oT.shape[1]
        if ns and (F or W):     # no labels closed at i nor open: nothing streams on
            # open labels continue on layer i, closed ones start a slice there; costs are finite
            # or +inf (cleaned cells) with T and X +inf alike, so sums never make nan
            T = np.empty((ns, W + F))
            X = np.empty((ns, W + F))
            code = np.empty((ns, W + F), dtype=np.int64)
            np.add(oT, layT[i], out=T[:, :W])
            np.add(FT, startT[i], out=T[:, W:])
            np.add(oX, layX[i], out=X[:, :W])
            np.add(FX, startX[i], out=X[:, W:])
            code[:, :W] = ocode
            code[:, W:] = np.arange(i, F * B + i, B)
            oT, oX, ocode = keep(T, X, (code,), b, True)
            cTc = oT + outT[i]
            mk = cTc < INF
            rows = np.nonzero(mk)[0]
            parts.append((cTc[mk], (oX + outX[i])[mk], ocode[mk] * S + ss[rows]))
            kept += int((oT < INF).sum())
        lo = offsets[int(kmin[b])] if es.size else 0
        if es.size and allT.size > lo:
            bT, bX, bC = allT[lo:], allX[lo:], allC[lo:]
            bB = bC % B
            vT = bT[:, None] + T3[b, bB]
            vX = bX[:, None] + X3[b, bB]
            mk = vT < INF
            rr, cc = np.nonzero(mk)
            parts.append((vT[mk], vX[mk], bC[rr] * S + es[cc]))
        if len(parts) == 1:
            T, X, code = (a[None, :] for a in parts[0])
        elif parts:
            T, X, code = (np.concatenate([p[n] for p in parts])[None, :] for n in range(3))
        if parts and T.size:
            T, X, code = (a[0] for a in keep(T, X, (code,), b, False))
        else:
            T = X = NONE_F
            code = NONE_I
        fT.append(T)
        fX.append(X)
        fcode.append(code)
        offsets.append(offsets[-1] + T.size)
        kept += T.size
        if fronts is not None:
            fronts.append((T, X, oT, oX))
        if improve is not None and T.size:
            found = improve(b, T, X, cut)
            if found < cut:
                cut, limit = found, limit_of(found)
        if es.size:
            allT = np.concatenate([allT, T])
            allX = np.concatenate([allX, X])
            allC = np.concatenate([allC, np.arange(b, T.size * B + b, B)])
        progress(b, kept)
    T, X = fT[L], fX[L]
    logger.debug("exact: final front %d labels, %d labels in all", T.size, kept)
    if T.size == 0:
        return Pass(None, INF, True, kept, cut)
    E = X + m.k * T
    v = np.where(m.feasible(T, E), m.value(T, E), INF)
    j = int(np.argmin(v))
    best = float(v[j])
    if not np.isfinite(best):
        return Pass(None, INF, True, kept, cut)
    path = []
    b = L
    while b > 0:
        rest, state = divmod(int(fcode[b][j]), S)
        j, k = divmod(rest, B)
        path.append((k, b - 1, state))
        b = k
    path.reverse()
    return Pass(path, best, True, kept, cut)


__all__ = ["Bound", "Pass", "no_bound", "run_pass"]
