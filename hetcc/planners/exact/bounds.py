"""Sound lower bounds for a partial plan: the convex hull of what the rest of the plan can cost.

For weights lam_1 > ... > lam_K (the last <= 0) the backward parametric DP gives, at every search
point p, G_k(p) = min over completions of E' + lam_k * T'. So every completion (T', E') lies on or
above each line E' = G_k - lam_k * T' and right of T' = tmin(p): above their upper envelope h_p,
a convex piecewise-linear lower bound on the energy still to pay for a given remaining latency.

A label (T, X) at p (E = X + cap * T / 1000) completes to (T + T', E + E') with
  * T + T' <= deadline: T' <= D - T;
  * E + E' - cap * (T + T') / 1000 <= tolX: on each line, (lam_k + cap/1000) * T' >= G_k - (tolX - X),
    which bounds T' from below (positive slope) or above (negative slope), or kills the label;
so T' lies in an interval [lo, hi] (empty: no feasible completion) and E' >= h_p(T') on it. Each
objective is non-decreasing in T and E and, for edp, the product (T + T') * (E + G_k - lam_k * T')
is concave in T' along one line, so its least value over a piece of the envelope is at an end of
the piece: the bound is the least value over the pieces' ends (each piece bounded by its own line,
which stays sound however rounding orders the breakpoints). This is the LP relaxation of the rest
of the plan, per label.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .lagrange import backward
from .model import Model
from .pareto import INF

SLACK = 1e-10   # relative loosening of every comparison against rounding
FEW_LABELS = 128  # at most this many labels: a bound before the Pareto filter in the label search
                  # (the filter is then one call on fewer labels)
# labels x envelope lines up to which one bound with the full envelope beats ``two_stage``'s cheap
# stages (each a dozen numpy calls and fancy indexing). Measured 2026-11-24 against the former cap
# of 128 labels (least of 9 / 2 interleaved runs): zoo models, energy under HERTI's medium deadline
# (a walk's 4-7 lines), 2 % faster at the median, VGG-16 9.27 -> 8.86 ms; the planners benchmark's
# 24 cases at 250 layers 4.20 -> 4.13 s in all (latency under a cap, seed 1: 424 -> 388 ms)
FEW_WORK = 20_000


@dataclass(frozen=True)
class Envelope:
    """Suffix lines per search point: weights ``lam`` (descending, last <= 0), G, least remaining
    latency; closed points [L+1, ...], open points [L+1, ns, ...]. The breakpoints B and the
    envelope's value H at the inner breakpoints (by the lesser of the two lines meeting there)
    are worked out when first asked for (edp's bound and ``critical`` use them). ``k``: the
    model's mJ per ms of the power cap (0 without one), for ``cap_split``."""

    lam: np.ndarray
    Gc: np.ndarray
    Go: np.ndarray
    tc: np.ndarray
    to: np.ndarray
    k: float = 0.0

    @cached_property
    def cap_split(self) -> tuple[int, int, np.ndarray, np.ndarray]:
        """Under a cap each line bounds T' through mu = lam + k: (P, Z, 1/mu of the first P lines,
        1/mu of the lines from Z on), mu > 0 on [:P], 0 on [P:Z], < 0 on [Z:] (lam descending)."""
        mu = self.lam + self.k
        P, Z = int((mu > 0).sum()), int((mu >= 0).sum())
        return P, Z, 1.0 / mu[:P], 1.0 / mu[Z:]

    @cached_property
    def tc_lo(self) -> np.ndarray:
        """``tc`` and ``to`` loosened by SLACK once, for the energy-within-deadline bound."""
        return _looser(self.tc)

    @cached_property
    def to_lo(self) -> np.ndarray:
        return _looser(self.to)

    @cached_property
    def Bc(self) -> np.ndarray:
        return _breaks(self.Gc, self.lam)

    @cached_property
    def Bo(self) -> np.ndarray:
        return _breaks(self.Go, self.lam)

    @cached_property
    def Hc(self) -> np.ndarray:
        return _at_breaks(self.Gc, self.Bc, self.lam)

    @cached_property
    def Ho(self) -> np.ndarray:
        return _at_breaks(self.Go, self.Bo, self.lam)


def _looser(t: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return t - SLACK * (1.0 + np.abs(t))


def _breaks(G: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """[..., K+1]: -inf, the intersections of consecutive lines (made non-decreasing), +inf."""
    with np.errstate(invalid="ignore", divide="ignore"):
        B = (G[..., :-1] - G[..., 1:]) / (lam[:-1] - lam[1:])
    B = np.where(np.isnan(B), -INF, B)
    B = np.maximum.accumulate(B, axis=-1)
    pad = np.full(G.shape[:-1] + (1,), INF)
    return np.concatenate([-pad, B, pad], axis=-1)


def _at_breaks(G: np.ndarray, B: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """[..., K-1]: the lesser of the two lines meeting at each inner breakpoint, there."""
    Bi = B[..., 1:-1]
    with np.errstate(invalid="ignore", over="ignore"):
        return np.minimum(G[..., :-1] - np.where(lam[:-1] == 0, 0.0, lam[:-1] * Bi),
                          G[..., 1:] - np.where(lam[1:] == 0, 0.0, lam[1:] * Bi))


def envelope(m: Model, lam) -> Envelope:
    """The suffix envelopes for the weights ``lam`` (0 is added; sorted; duplicates dropped)."""
    lam = np.unique(np.append(np.asarray(lam, dtype=np.float64), 0.0))[::-1].copy()
    lam = lam[np.isfinite(lam)]
    K = lam.size
    a = np.append(np.ones(K), 0.0)
    suf = backward(m, np.append(lam, 1.0), a)        # the last weight pair is T alone
    Gc, Go = suf.closed[:, :K], suf.open[:, :, :K]
    return Envelope(lam, Gc, Go, suf.closed[:, K], suf.open[:, :, K], m.k)


def subset(env: Envelope, idx: np.ndarray) -> Envelope:
    """The envelope of some of the lines only (still sound, looser, cheaper)."""
    idx = np.unique(idx)
    lam = env.lam[idx]
    Gc, Go = env.Gc[:, idx], env.Go[:, :, idx]
    return Envelope(lam, Gc, Go, env.tc, env.to, env.k)


def critical(m: Model, env: Envelope, width: int = 1) -> np.ndarray:
    """Indices of the lines that decide the root's bound, with ``width`` neighbours each side
    (the line of weight 0 too): a small envelope that prunes almost as well as the whole."""
    keep = [int(np.flatnonzero(env.lam == 0)[0])]
    G, B, lam = env.Gc[0], env.Bc[0], env.lam
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        if m.has_cap:
            mu = lam + m.k
            need = G - m.tolX
            cand = np.where(mu > 0, need / np.where(mu > 0, mu, 1.0), -INF)
            keep.append(int(np.argmax(cand)))
            cand = np.where(mu < 0, need / np.where(mu < 0, mu, -1.0), INF)
            keep.append(int(np.argmin(cand)))
        if m.metric != "latency":
            lo = env.tc[0]
            hi = m.Dtol
            a = np.maximum(lo, B[:-1])
            z = np.minimum(hi, B[1:])
            keep.append(int(np.argmin(np.where(a <= z, a + z, INF))))
            ok = a <= z
            if ok.any():
                v = np.where(ok, np.minimum(G - np.where(lam == 0, 0, lam * a), G - np.where(lam == 0, 0, lam * z))
                             * (1.0 if m.metric == "energy" else np.maximum(a, 1e-300)), INF)
                keep.append(int(np.argmin(v)))
    idx = {min(max(k + d, 0), lam.size - 1) for k in keep for d in range(-width, width + 1)}
    return np.array(sorted(idx))


BIG = 1e300    # stands for an unbounded remaining latency: every real completion is shorter


def least_energy(G: np.ndarray, lam: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The least E' the lines (G, lam) allow for T' in [lo, hi], per label: each line bounds E'
    by its value at the end where it is least (hi for lam > 0, lo for lam < 0), and the greatest
    of these is the convex envelope's least value on [lo, hi]."""
    lp, ln = np.maximum(lam, 0.0), np.minimum(lam, 0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        return ((G - lp * np.minimum(hi, BIG)[..., None]) - ln * lo[..., None]).max(axis=-1)


def lower(m: Model, env: Envelope, T: np.ndarray, X: np.ndarray, b: int,
          is_open: bool, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(objective lower bound, no feasible completion) for labels (T, X) at closed boundary b
    (1-D arrays) or open on the streamed states (arrays [ns, W], or 1-D on ``rows``).

    Energy: every line k bounds E' on [lo, hi] by its value at the end where it is least (hi for
    lam_k > 0, lo for lam_k < 0); the largest of these is exactly the least of the envelope on
    [lo, hi] (the envelope is convex) and each is sound on its own. edp: the product is concave
    along each line, so per piece of the envelope (clipped to [lo, hi]) its ends bound it.
    """
    def at_point(Ao: np.ndarray, Ac: np.ndarray) -> np.ndarray:
        if not is_open:
            return Ac[b]
        return Ao[b][rows] if rows is not None else Ao[b][:, None]
    G, tm = at_point(env.Go, env.Gc), at_point(env.to, env.tc)
    lam = env.lam
    k = m.k
    if m.metric == "energy" and not m.has_cap and lam[-1] >= 0:     # lam descending
        return _energy_within_deadline(m, G, lam, at_point(env.to_lo, env.tc_lo), T, X)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        E = X + k * T if m.has_cap else X
        lo = tm           # broadcasts against T
        hi = m.Dtol - T
        dead = ~np.isfinite(lo) | ~(T < INF)
        if m.has_cap:
            budget = (m.tolX - X)[..., None]
            P, Z, ip, im = env.cap_split
            if P:                                                 # mu * T' >= G - budget
                lo = np.maximum(lo, ((G[..., :P] - budget) * ip).max(axis=-1))
            if Z < lam.size:
                hi = np.minimum(hi, ((G[..., Z:] - budget) * im).min(axis=-1))
            if Z > P:
                need = G[..., P:Z] - budget
                dead |= np.any(need > SLACK * (1.0 + np.abs(budget) + np.abs(G[..., P:Z])), axis=-1)
        lo = lo - SLACK * (1.0 + np.abs(lo))
        hi = hi + SLACK * (1.0 + np.abs(hi))
        dead |= ~(lo <= hi)
        if m.metric == "latency":
            lb = T + lo
        elif m.metric == "energy":
            lb = E + least_energy(G, lam, lo, hi)
            lb = lb - SLACK * (1.0 + np.abs(lb))
        else:
            # the least product over the ends of the envelope's pieces clipped to [lo, hi], each
            # piece bounded by its own line: at lo and hi by the line of the piece holding them,
            # at an inner breakpoint by the lesser of its two lines. The pieces are those of the
            # breakpoints as computed, so this stays sound however rounding places them (nearly
            # parallel lines put them anywhere: the envelope's value at lo is then no bound on
            # the piece that holds lo)
            B, H = at_point(env.Bo, env.Bc), at_point(env.Ho, env.Hc)
            hf = np.minimum(hi, BIG)
            Bi = B[..., 1:-1]

            def at(t):
                k = (Bi <= t[..., None]).sum(axis=-1)
                g = np.take_along_axis(np.broadcast_to(G, k.shape + G.shape[-1:]), k[..., None], axis=-1)[..., 0]
                return (T + t) * np.maximum(E + g - lam[k] * t, 0.0)

            inner = (Bi > lo[..., None]) & (Bi < hf[..., None])
            v = (T[..., None] + Bi) * np.maximum(E[..., None] + H, 0.0)
            lb = np.minimum(np.minimum(at(lo), at(hf)), np.where(inner & (v == v), v, INF).min(axis=-1))
            lb = np.where(lb == lb, lb, 0.0)
            lb = lb - SLACK * (1.0 + np.abs(lb))
        lb = np.where(dead, INF, lb)
    return lb, dead


def _energy_within_deadline(m: Model, G: np.ndarray, lam: np.ndarray, tm_lo, T: np.ndarray,
                            X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``lower`` for energy without a cap, in few numpy calls (the label search's commonest
    case) when every weight is >= 0 (without a cap the hull's are, their midpoints and 0 too):
    each line's least on [lo, hi] is then at hi and the bound is the envelope at hi; X = E.
    ``tm_lo``: the least remaining latency, loosened (``Envelope.tc_lo``). The latency budget
    hi = D - T is loosened as D + SLACK (1 + D) - T (1 - SLACK), which is never below
    hi + SLACK (1 + |hi|) for D, T >= 0 (two numpy calls instead of five)."""
    with np.errstate(invalid="ignore", over="ignore"):
        hi = (m.Dtol + SLACK * (1.0 + m.Dtol)) - T * (1.0 - SLACK)
        dead = ~(tm_lo <= hi)                       # also T = +inf (hi = -inf), lo = +inf: no completion
        lb = X + (G - lam * np.minimum(hi, BIG)[..., None]).max(axis=-1)
        lb = lb - SLACK * (1.0 + np.abs(lb))
        return np.where(dead, INF, lb), dead


def crude(m: Model, env: Envelope, T: np.ndarray, X: np.ndarray, b: int, is_open: bool) -> np.ndarray:
    """A cheap, weaker bound: the least remaining latency and the least remaining energy taken
    separately (each is a completion's lower bound, whichever completion it is)."""
    zero = int(np.flatnonzero(env.lam == 0)[0])
    tm, g = (env.to[b][:, None], env.Go[b][:, None, zero]) if is_open else (env.tc[b], env.Gc[b][zero])
    with np.errstate(invalid="ignore", over="ignore"):
        T2 = T + tm
        lb = T2 if m.metric == "latency" else X + m.k * T + g
        if m.metric == "edp":
            lb = T2 * np.maximum(lb, 0.0)
        lb = lb - SLACK * (1.0 + np.abs(lb))
        return np.where((T2 <= m.Dtol * (1 + SLACK)) & (lb == lb), lb, INF)


def two_stage(m: Model, small: Envelope, full: Envelope, T: np.ndarray, X: np.ndarray, b: int, is_open: bool,
              limit: float) -> tuple[np.ndarray, np.ndarray]:
    """``crude``, then ``lower`` with the small envelope on the labels that survive it, then with
    the full one on those that survive that; returns (bound, pruned) where pruned includes a
    bound above ``limit``."""
    if T.size * full.lam.size <= FEW_WORK:    # the cheap stages cost more numpy calls than they spare
        lb, dead = lower(m, full, T, X, b, is_open)
        return lb, dead | (lb > limit)
    lb = crude(m, full, T, X, b, is_open)
    dead = lb > limit
    for env in (small, full):
        live = np.nonzero(~dead)
        if not live[0].size:
            break
        rows = live[0] if is_open else None
        lb2, dead2 = lower(m, env, T[live], X[live], b, is_open, rows)
        lb[live] = np.maximum(lb[live], lb2)
        dead[live] = dead2 | (lb[live] > limit)
    return lb, dead


__all__ = ["Envelope", "critical", "crude", "envelope", "least_energy", "lower", "subset", "two_stage"]
