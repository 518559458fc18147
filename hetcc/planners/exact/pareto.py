"""Pareto filtering of labels: per row, the points not dominated in (T, X), both minimised.

The label search keeps, at each search point, only labels no other label beats in both latency T
and X = energy - cap * T / 1000 (see the package docstring for why that is exact). Rows are
padded with T = X = +inf (payload -1) so that many search points filter in one numpy call.
"""
from __future__ import annotations

import numpy as np

INF = np.inf


def pareto_rows(T: np.ndarray, X: np.ndarray, *payload: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per row, the labels not dominated in (T, X) (minimising both), sorted by T, compacted left.

    Rows are padded with T = X = +inf (payload -1). A label survives iff its X is strictly below
    the X of every label sorted before it (smaller T, or equal T and smaller-or-equal X): exact
    duplicates keep one copy, and a strictly better point is never dropped.
    """
    R, N = T.shape
    if N == 0:
        return (T, X, *payload)
    base = (N * np.arange(R))[:, None]      # flat indices: take() is much faster than [ri, order]
    order = np.argsort(T, axis=1) + base    # faster than lexsort; ties are checked for below
    Ts = T.take(order)
    if N > 1 and ((Ts[:, 1:] == Ts[:, :-1]) & (Ts[:, 1:] < INF)).any():
        order = np.lexsort((X, T), axis=1) + base  # equal T: order by X so the better one comes first
        Ts = T.take(order)
    Xs = X.take(order)
    keep = (Ts < INF) & (Xs < INF)
    if N > 1:
        run = np.minimum.accumulate(Xs, axis=1)
        keep[:, 1:] &= Xs[:, 1:] < run[:, :-1]
    if R == 1:
        o = order[keep]
        return (T.take(o)[None], X.take(o)[None], *(p.take(o)[None] for p in payload))
    cnt = np.cumsum(keep, axis=1)
    width = int(cnt[:, -1].max())
    src = order[keep]
    dst = cnt[keep] - 1 + np.nonzero(keep)[0] * width

    def put(a: np.ndarray, fill) -> np.ndarray:
        out = np.full(R * width, fill, dtype=a.dtype)
        out[dst] = a.take(src)
        return out.reshape(R, width)

    return (put(T, INF), put(X, INF), *(put(p, -1) for p in payload))


def compact_rows(T: np.ndarray, X: np.ndarray, *payload: np.ndarray) -> tuple[np.ndarray, ...]:
    """``pareto_rows`` for rows that already are Pareto fronts sorted by T with some labels
    dropped (T = +inf): the rest, compacted left in the same order, without sorting again."""
    R, N = T.shape
    keep = T < INF
    if R == 1:
        k = keep[0]
        return (T[:, k], X[:, k], *(p[:, k] for p in payload))
    cnt = np.cumsum(keep, axis=1)
    width = int(cnt[:, -1].max()) if N else 0
    rows, cols = np.nonzero(keep)
    dst = cnt[rows, cols] - 1 + rows * width

    def put(a: np.ndarray, fill) -> np.ndarray:
        out = np.full(R * width, fill, dtype=a.dtype)
        out[dst] = a[rows, cols]
        return out.reshape(R, width)

    return (put(T, INF), put(X, INF), *(put(p, -1) for p in payload))


def best_rows(n: int, score: np.ndarray, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per row, the ``n`` entries with the smallest ``score`` (taken from every array);
    ``arrays[0]`` is T, +inf where empty. The beam of the incumbent search and the label cap."""
    R, W = arrays[0].shape
    if W <= n:
        return arrays
    score = np.where(arrays[0] < INF, score, INF)
    order = np.argpartition(score, n - 1, axis=1)[:, :n]
    ri = np.arange(R)[:, None]
    return tuple(a[ri, order] for a in arrays)


__all__ = ["INF", "best_rows", "compact_rows", "pareto_rows"]
