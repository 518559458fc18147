"""Exact completions for the last layers: the suffix fronts of a reverse pass, joined per label.

The envelope bound is the LP relaxation of a plan's rest, and near the end of a long model its
integrality gap is what keeps labels alive: at 250 layers, the labels still alive 10 layers from
the end were measured 0.07-0.22% above the optimum on their true best completion, inside the gap.
So for the last ``depth`` layers the bound is replaced by the truth:

* ``reverse(m)`` is the same problem read backwards (slice k..l-1 becomes L-l..L-k-1; entering
  and leaving a slice swap), and a label pass over its first ``depth`` boundaries, with its own
  envelope and the same cut, keeps at reverse boundary r every suffix plan of layers L-r.. that
  some prefix could complete within the cut (dominated ones only where another does as well);
* a forward label at boundary b >= L - depth completes exactly by one of them: a closed label by a
  closed reverse label at r = L - b; a label whose slice on streamed state s is still open, by
  closing it (its leaving cost, then a closed reverse label) or by a reverse label open on s: the
  two halves of one slice, the forward half paid the entering cost, the reverse half the leaving.

A label whose best join is infeasible or over the cut has no completion within the cut and is
pruned: exact, not a relaxation. Joins are computed by brute force in blocks (labels x suffix
front); they prune nearly every label at the first joined boundary, so the forward search
barely goes past it.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..metrics import RTOL
from . import dominance
from .model import Cells, Model
from .pareto import INF
from .search import run_pass

DEPTH = 60           # at most this many layers completed exactly,
LABELS = 20_000      # and the reverse pass stops once it has kept this many labels (measured at 250
                     # layers x 25 states: its labels grow steeply a few dozen layers from the end, so
                     # the depth adapts to where that happens; each label it keeps spares several
                     # forward labels)
BLOCK = 1 << 21      # label x front pairs per step
GROUP = 32           # labels per block


def reverse(m: Model) -> Model:
    """``m`` read from its last layer to its first (same plans, same totals)."""
    def r3(a: np.ndarray) -> np.ndarray:
        out = np.ascontiguousarray(a[::-1, ::-1].transpose(1, 0, 2))
        out.setflags(write=False)
        return out

    def rc(c: Cells) -> Cells:
        return Cells(c.layer[::-1].copy(), c.leave[::-1].copy(), c.enter[::-1].copy())

    return dataclasses.replace(m, T3=r3(m.T3), E3=r3(m.E3), X3=r3(m.X3), ok=r3(m.ok),
                               cT=rc(m.cT), cE=rc(m.cE), cX=rc(m.cX))


def _blocks(T: np.ndarray, X: np.ndarray, k: float) -> tuple:
    """Labels sorted by T in blocks of ``GROUP`` (padded with +inf): T, X [n, GROUP], each block's
    least T, X and E (a corner no label of the block beats), its greatest E, and the order."""
    order = np.argsort(T, kind="stable")
    n = -(-T.size // GROUP) * GROUP
    Tb, Xb = np.full(n, INF), np.full(n, INF)
    Tb[:T.size], Xb[:T.size] = T[order], X[order]
    Tb, Xb = Tb.reshape(-1, GROUP), Xb.reshape(-1, GROUP)
    with np.errstate(invalid="ignore"):
        Eb = Xb + k * Tb
    fin = np.isfinite(Eb)
    return (Tb, Xb, Tb.min(axis=1), Xb.min(axis=1), np.where(fin, Eb, INF).min(axis=1),
            np.where(fin, Eb, -INF).max(axis=1), order)


def best_join(m: Model, T: np.ndarray, X: np.ndarray, Tr: np.ndarray, Xr: np.ndarray,
              limit: float = INF) -> np.ndarray:
    """Per label (1-D T, X) the least objective of a feasible plan label + suffix label
    (1-D Tr, Xr) where that is <= ``limit``; else a value over ``limit`` (+inf: none feasible).

    Both sides go in blocks of ``GROUP`` labels sorted by T; a pair of blocks whose corners (least
    T, X and E of each) cannot make a feasible plan, or only one over ``limit``, is skipped (every
    objective is non-decreasing in T and E, feasibility in T and X); the pairs left are joined
    label by label. Without ``limit`` every feasible pair of blocks is joined.
    """
    out = np.full(T.shape, INF)
    live = np.isfinite(Tr) & np.isfinite(Xr)
    if not live.any() or not T.size:
        return out
    k = m.k
    fT, fX, fTm, fXm, fEm, fEM, order = _blocks(T, X, k)
    rT, rX, rTm, rXm, rEm, rEM, _ = _blocks(Tr[live], Xr[live], k)
    with np.errstate(invalid="ignore", over="ignore"):
        cT = fTm[:, None] + rTm[None, :]
        cE = fEm[:, None] + rEm[None, :]
        ok = np.isfinite(cT) & (cT <= m.Dtol)
        if m.has_cap:     # as Model.feasible, with the tolerance at the most energy a pair has
            ok &= fXm[:, None] + rXm[None, :] <= RTOL * np.maximum(1.0, fEM[:, None] + rEM[None, :])
        corner = np.where(ok, m.value(cT, cE), INF)
    I, J = np.nonzero(corner <= limit)
    best = np.full(fT.shape, INF)
    step = max(1, BLOCK // GROUP ** 2)
    with np.errstate(invalid="ignore", over="ignore"):
        for a in range(0, I.size, step):
            i, j = I[a:a + step], J[a:a + step]
            Tt = fT[i][:, :, None] + rT[j][:, None, :]
            Xt = fX[i][:, :, None] + rX[j][:, None, :]
            Et = Xt + k * Tt
            v = np.where(m.feasible(Tt, Et), m.value(Tt, Et), INF).min(axis=2)
            np.minimum.at(best, i, v)
    out[order] = best.reshape(-1)[:T.size]
    return out


class Joiner:
    """The exact completion test for labels within ``len(fronts) - 1`` layers of the end."""

    def __init__(self, m: Model, fronts: list):
        self.m, self.fronts = m, fronts

    def applies(self, b: int) -> bool:
        return self.m.L - b < len(self.fronts)

    def best(self, T: np.ndarray, X: np.ndarray, b: int, is_open: bool, limit: float = INF) -> np.ndarray:
        """The least objective of a feasible completion of each label (T, X) at point b (where it
        is <= ``limit``; else a value over ``limit``)."""
        m = self.m
        rT, rX, roT, roX = self.fronts[m.L - b]
        if not is_open:
            return best_join(m, T, X, rT, rX, limit)
        out = np.full(T.shape, INF)
        for si, s in enumerate(m.ss):
            live = np.flatnonzero(np.isfinite(T[si]) & np.isfinite(X[si]))
            if not live.size:
                continue
            t, x = T[si, live], X[si, live]
            best = best_join(m, t + m.cT.leave[b - 1, s], x + m.cX.leave[b - 1, s], rT, rX, limit)
            if roT.shape[1]:
                best = np.minimum(best, best_join(m, t, x, roT[si], roX[si], limit))
            out[si, live] = best
        return out

    def bound(self, bound, T: np.ndarray, X: np.ndarray, b: int, is_open: bool,
              limit: float) -> tuple[np.ndarray, np.ndarray]:
        """``bound`` (as ``bounds.two_stage``); near the end (where there are fronts), the labels it
        keeps are tested by their exact best completion."""
        lb, dead = bound(T, X, b, is_open, limit)
        if not self.applies(b):
            return lb, dead
        live = np.nonzero(~dead)
        if not live[0].size:
            return lb, dead
        if is_open:     # rows are states: the pruned labels stay in place, as +inf
            exact = self.best(np.where(dead, INF, T), X, b, True, limit)[live]
        else:
            exact = self.best(T[live], X[live], b, False, limit)
        lb = lb.copy()
        dead = dead.copy()
        lb[live] = np.maximum(lb[live], exact)
        dead[live] = exact > limit
        return lb, dead

    def improver(self, path: list):
        """``search.run_pass``'s ``improve`` for an incumbent ``path`` [(first, last, state)]:
        at each boundary b1 where the path starts a slice, every closed label there followed by
        the path's slices up to its first start b2 that has a suffix front, then by
        each suffix of the reverse front at b2: the best such plan (a re-optimised head and tail
        of the incumbent, found early, tightens the cut for the rest of the pass)."""
        m = self.m
        head = _heads(m, path)
        tail = [b for b in head if self.applies(b)]
        if not tail:
            return None
        b2 = min(tail)
        rT, rX = self.fronts[m.L - b2][:2]
        t2, x2 = head[b2]

        def improve(b: int, T: np.ndarray, X: np.ndarray, cut: float) -> float:
            if b not in head or b >= b2:
                return INF
            v = best_join(m, T + (t2 - head[b][0]), X + (x2 - head[b][1]), rT, rX, cut)
            return float(v.min()) if v.size else INF
        return improve


def _heads(m: Model, path: list) -> dict[int, tuple[float, float]]:
    """Per boundary b where ``path`` starts a slice: (T, X) of its slices before b."""
    out, T, X = {}, 0.0, 0.0
    for f, l, s in sorted(path):
        out[int(f)] = (T, X)
        T, X = T + float(m.T3[l + 1, f, s]), X + float(m.X3[l + 1, f, s])
    return out


def fronts(m: Model, bound_of, cut: float, depth: int | None = None, path: list | None = None,
           out_of_time=lambda: False) -> tuple[list, float]:
    """The reverse pass's fronts at reverse boundaries 0..depth (``DEPTH``; fewer once it has
    kept ``LABELS`` labels, or when ``out_of_time()``) of the forward model ``m``
    (``bound_of(reverse(m))`` its label bound), keeping suffixes that some prefix could complete
    within ``cut``; and the cut as it ends: with an incumbent ``path``, the pass joins the path's
    head with the suffixes at each of its slice starts, and a better plan found so lowers it."""
    out: list = []
    depth = min(DEPTH if depth is None else depth, m.L)
    improve = None
    if path is not None:
        heads = _heads(m, path)

        def improve(r: int, T: np.ndarray, X: np.ndarray, c: float) -> float:
            if m.L - r not in heads:
                return INF
            th, xh = heads[m.L - r]
            return float(best_join(m, np.array([th]), np.array([xh]), T, X, c)[0])
    mr = reverse(m)
    kept = [0]

    def progress(r: int, n: int) -> None:
        kept[0] = n
    res = run_pass(mr, bound_of(mr), cut, stop=lambda r: r > depth or kept[0] > LABELS or out_of_time(),
                   fronts=out, improve=improve, progress=progress, sorted_rows=dominance.applies(mr))
    return out[:depth + 1], res.cut


__all__ = ["BLOCK", "DEPTH", "GROUP", "LABELS", "Joiner", "best_join", "fronts", "reverse"]
