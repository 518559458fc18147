"""edp dominance: a faster label that beats a slower one at the same search point on every
completion that matters, so the slower one can be dropped (edp under a deadline, no power cap).

Labels i and j at one point, T_i < T_j and E_i > E_j (both on the Pareto front). Every completion
(T', E') feasible for j (T_j + T' <= deadline) is feasible for i, and

    (T_i + T')(E_i + E') - (T_j + T')(E_j + E') = T_i E_i - T_j E_j + T' (E_i - E_j) - E' (T_j - T_i)

grows with T' and falls with E'. With T' <= hi_j = deadline - T_j and E' >= e_j, the least energy
the suffix's envelope allows on [least remaining latency, hi_j], the difference is at most its value
at (hi_j, e_j): when that is <= 0, i is at least as good as j on every completion of j, and j goes.
Only i's label is compared, not its liveness: if i is pruned (no completion within the cut, or
none feasible) so is j. Dominance is transitive here (j's completions are a subset of i's), so
labels dropped together always leave one that beats them. Comparing each label with the
``WINDOW`` labels just faster than it was measured to find nearly all (250 layers: 2 neighbours
kept 476k labels of the plain search's 1.06M, 128 neighbours 474k).

With a power cap, i (more energy per ms) may break the cap where j does not; without a deadline
T' is unbounded and i never dominates. Latency and energy have no such trade: a faster label with
more energy is never better than a slower one on every completion.
"""
from __future__ import annotations

import numpy as np

from .bounds import Envelope, least_energy
from .model import Model

WINDOW = 2
TIE = 1e-9     # relative margin: a near-tie is not dominance (rounding must not drop the optimum)


def applies(m: Model) -> bool:
    return m.metric == "edp" and not m.has_cap and np.isfinite(m.Dtol)


def dominated(m: Model, env: Envelope, T: np.ndarray, X: np.ndarray, b: int, is_open: bool) -> np.ndarray:
    """Labels (rows sorted by T, as ``pareto_rows`` leaves them; X = E without a cap) that a
    label just faster than them at the same point dominates."""
    lo = np.broadcast_to(env.to[b][:, None] if is_open else env.tc[b], T.shape)
    hi = m.Dtol - T
    out = np.zeros(T.shape, dtype=bool)
    n = T.shape[-1]
    if n < 2:
        return out
    with np.errstate(invalid="ignore", over="ignore"):
        e = least_energy(env.Go[b][:, None, :] if is_open else env.Gc[b], env.lam, lo, hi)
        ok = np.isfinite(T) & np.isfinite(e) & (hi >= lo)
        worst = (T + hi) * (X + e) * (1.0 - TIE)       # j completed at (hi_j, e_j)
        for w in range(1, min(WINDOW, n - 1) + 1):
            rival = (T[..., :-w] + hi[..., w:]) * (X[..., :-w] + e[..., w:])
            out[..., w:] |= ok[..., :-w] & ok[..., w:] & (rival <= worst[..., w:])
    return out


def with_dominance(m: Model, env: Envelope, bound, T: np.ndarray, X: np.ndarray, b: int, is_open: bool,
                   limit: float) -> tuple[np.ndarray, np.ndarray]:
    """``bound`` (as ``bounds.two_stage``), plus the dominated labels counted as pruned."""
    lb, dead = bound(T, X, b, is_open, limit)
    dom = dominated(m, env, T, X, b, is_open)
    return np.where(dom, np.inf, lb), dead | dom


__all__ = ["WINDOW", "applies", "dominated", "with_dominance"]
