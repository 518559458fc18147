"""FairBoost's layer vectors (Eq. 2) as a planner sees them, and what the VQ-VAE reads.

The analysis computes each layer's 22 numbers from its dominant node (``hetcc.passes.layer_vectors``:
index, type, input / output feature map and weights as 4-D shapes, biases, activation, pad-stride)
and appends them to the problem's ``layer_features`` as the ``eq2_*`` columns, so a planner reads
numbers only. ``scaled`` is the VQ-VAE's input: every number x as log(1 + x) / 10, which puts
channels, feature maps and weight sizes of 1 .. 22026 in 0 .. 1 and keeps small differences
(kernel 3 vs 5, stride 1 vs 2) visible. ``blocks`` groups a model's layers into the runs the agent
decides one at a time.

Numbers only: numpy, no torch.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..problem import FEATURES, PlanningProblem

#: the Eq. 2 columns of ``FEATURES``, in Eq. 2's order
EQ2 = tuple(name for name in FEATURES if name.startswith("eq2_"))
#: numbers per layer vector (Eq. 2)
WIDTH = len(EQ2)
#: ``scaled``'s divisor of log(1 + x)
LOG_SCALE = 10.0


def layer_vectors(problem: PlanningProblem) -> np.ndarray:
    """[L, 22] float64: Eq. 2 of every layer of ``problem`` (ValueError naming the model when the
    problem carries no layer features, e.g. one rebuilt from a costs.json)."""
    feats = problem.layer_features
    if feats is None or not set(EQ2) <= set(feats.names):
        raise ValueError(f"model {problem.name!r} carries no layer vectors (Eq. 2): analyse it "
                         "(hetcc.analyse / hetcc compile), a problem rebuilt from costs.json has none")
    cols = [feats.names.index(n) for n in EQ2]
    return np.array(feats.values[:, cols], dtype=np.float64)


def scaled(vectors: np.ndarray) -> np.ndarray:
    """[..., 22] float32: log(1 + max(x, 0)) / LOG_SCALE, the VQ-VAE's input."""
    v = np.maximum(np.asarray(vectors, dtype=np.float64), 0.0)
    return (np.log1p(v) / LOG_SCALE).astype(np.float32)


def blocks(weights: Sequence[float], n: int) -> tuple[tuple[int, int], ...]:
    """At most ``n`` runs (first, stop) of consecutive layers covering all of ``weights`` (one per
    layer, e.g. its latency on the reference device), cut where the running sum crosses k/n of
    the total, so each run holds about the same weight; every run non-empty. A model of at most
    ``n`` layers gets one run per layer."""
    w = np.maximum(np.nan_to_num(np.asarray(weights, dtype=np.float64), nan=0.0, posinf=0.0), 0.0)
    L = int(w.size)
    if L == 0 or n < 1:
        raise ValueError("blocks needs at least one layer and one block")
    if L <= n:
        return tuple((i, i + 1) for i in range(L))
    total = float(w.sum())
    csum = np.cumsum(w) if total > 0 else np.arange(1, L + 1, dtype=np.float64)
    total = float(csum[-1])
    cuts: list[int] = []
    for k in range(1, n):
        c = int(np.searchsorted(csum, total * k / n, side="left")) + 1      # layers 0..c-1 hold k/n
        lo = (cuts[-1] + 1) if cuts else 1
        hi = L - (n - k)                                                    # room for the runs after
        cuts.append(min(max(c, lo), hi))
    bounds = [0, *cuts, L]
    return tuple((a, b) for a, b in zip(bounds[:-1], bounds[1:]))


__all__ = ["EQ2", "LOG_SCALE", "WIDTH", "blocks", "layer_vectors", "scaled"]
