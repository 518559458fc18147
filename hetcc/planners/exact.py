"""exact: the proven optimum for latency, energy or edp under an optional deadline and power cap.

A Pareto-label dynamic program over layer boundaries. With the power cap c (0 when absent) a
partial plan is the label (T, X): T its latency and X = energy - c*T/1000, both additive over
slices. A plan is feasible iff T <= deadline and X <= 0 (average power within the cap), and each
objective (T, energy = X + c*T/1000, edp = energy*T) is non-decreasing in T and X for
non-negative costs, so a label dominated in (T, X) at the same point of the search can never
complete to a better feasible plan: keeping only non-dominated labels is exact.

Search points are the closed boundaries (every slice so far ended) and, for states whose memory
capacity never binds, "open" points (layer i-1 runs on s and its slice may continue), which makes
one step O(S * front) instead of O(L * S * front). States with a binding capacity enumerate their
slices (k..l-1) explicitly.

Everything else only prunes, and only soundly (a label is dropped when no completion of it can
be feasible and better than a bound U):

* lower bounds on the rest of the plan per dimension (backward DPs) and Lagrangian ones whose
  multipliers come from a hull walk on the constraint (a parametric MOSAIC DP);
* with a power cap, relaxed suffix fronts: the backward Pareto fronts in (T, X), each reduced to
  at most FRONT_POINTS ideal points of consecutive groups (so they dominate the true fronts) after
  dropping points no prefix can use; for a label they bound T within its X budget and X within
  its T budget, capturing the trade-off where one multiplier cannot (for edp, the product is
  bounded through every front point);
* the incumbent: the best feasible plan among the walks' plans after a greedy state repair,
  then improved by a narrow beam search (the same pass keeping a few labels per point; under a
  deadline alone only when the incumbent is far from the root bound);
* iterative deepening: when the incumbent is far from the root lower bound, first a pass with
  a guessed bound in between; a pass that finds a feasible plan within its guess is optimal.

``prune=False`` turns all of it off (the plain label DP, for verification).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from ..errors import InfeasibleError
from .dp import INF, SliceTables, cell_costs, forward_totals, path_sum, require_runnable, scalar_dp
from .context import PlanContext
from .metrics import Objective
from .problem import Plan, PlanningProblem, Slice
from .registry import PlannerSpec

logger = logging.getLogger(__name__)

RTOL = 1e-9  # Objective.feasible's tolerance
FRONT_POINTS = 64   # points per relaxed suffix front
BEAM_WIDTH = 8      # labels per search point in the incumbent's beam search
BEAM_SKIP_GAP = 1e-4   # no beam search when the incumbent is this close to the root bound ...
BEAM_MIN_GAP = 0.05    # ... or, under a deadline alone (cheap exact passes), not this far above it
DEEPENING_OF_GAP = (1 / 4,)   # guesses between the root bound and the incumbent ...
DEEPENING_MIN_GAP = 0.05      # ... when the incumbent is this far above the bound
DEEPENING_BLIND = tuple(1e-3 * 4.0 ** np.arange(6))   # relative to the root bound, no incumbent


@dataclass(frozen=True)
class SuffixBounds:
    """Lower bounds on the cost still to pay: from closed boundary i (``closed[i]``, exact) and
    from an open slice on state s whose last layer is i-1 (``open[i, s]``; exact for states
    whose capacity never binds, the only ones with open labels)."""

    closed: np.ndarray   # [L+1]
    open: np.ndarray     # [L+1, S]


def suffix_bounds(layer: np.ndarray, tin: np.ndarray, tout: np.ndarray, cost: np.ndarray) -> SuffixBounds:
    """Backward DP: ``cost`` is the [l, k, s] slice tensor of the per-cell costs (layer, tin, tout)."""
    L, S = layer.shape
    closed = np.zeros(L + 1)
    opn = np.full((L + 1, S), INF)
    opn[L] = tout[L - 1]
    for i in range(L - 1, -1, -1):
        closed[i] = np.min(cost[i + 1:, i, :] + closed[i + 1:, None])
        if i >= 1:
            opn[i] = np.minimum(tout[i - 1] + closed[i], layer[i] + opn[i + 1])
    return SuffixBounds(closed, opn)


def combine(a: np.ndarray, b: np.ndarray, w: float) -> np.ndarray:
    """a + w*b where both are finite, +inf elsewhere (never nan)."""
    with np.errstate(invalid="ignore", over="ignore"):
        out = a + w * b
    out[~(np.isfinite(a) & np.isfinite(b))] = INF
    return out


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


def _best_rows(n: int, score: np.ndarray, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per row, the ``n`` entries with the smallest finite ``score`` (taken from every array);
    ``arrays[0]`` is T, +inf where empty."""
    R, W = arrays[0].shape
    if W <= n:
        return arrays
    score = np.where(arrays[0] < INF, score, INF)
    order = np.argsort(score, axis=1)[:, :n]
    ri = np.arange(R)[:, None]
    return tuple(a[ri, order] for a in arrays)


def _bucket(T: np.ndarray, X: np.ndarray, K: int) -> np.ndarray:
    """(2, R, K): each row's sorted Pareto run (from pareto_rows) cut into K groups of
    consecutive points, each replaced by its ideal point (first T, last X). Rows with fewer
    than K points stay exact, padded by repeating their last point; empty rows are +inf."""
    R, W = T.shape
    out = np.full((2, R, K), INF)
    if W == 0:
        return out
    n = (T < INF).sum(axis=1)[:, None]                       # [R, 1]
    g = np.arange(K)[None, :]
    start = np.where(n > K, (g * n) // K, np.minimum(g, n - 1))
    end = np.where(n > K, ((g + 1) * n) // K - 1, np.minimum(g, n - 1))
    ri = np.arange(R)[:, None]
    ok = n > 0
    out[0] = np.where(ok, T[ri, np.maximum(start, 0)], INF)
    out[1] = np.where(ok, X[ri, np.maximum(end, 0)], INF)
    return out


def _ms(x: float) -> str:
    return f"{x:.1f}" if abs(x) >= 1 else f"{x:.3g}"


def _mw(x: float) -> str:
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}"


class _Search:
    """One exact solve; see the module docstring."""

    def __init__(self, problem: PlanningProblem, objective: Objective, stream: bool = True, prune: bool = True):
        self.problem = problem
        self.prune = prune
        obj = objective
        self.obj = obj
        self.metric = obj.metric
        self.L, self.S = problem.num_layers, problem.num_states
        self.D = INF if obj.deadline_ms is None else float(obj.deadline_ms)
        self.Dtol = self.D * (1 + RTOL)
        self.has_cap = obj.power_cap_mw is not None
        self.c = float(obj.power_cap_mw) if self.has_cap else 0.0
        cells = cell_costs(problem)
        self.tables = SliceTables(problem, cells)
        self.T3 = self.tables.latency()
        self.E3 = self.tables.energy()
        require_runnable(problem, self.tables, self.T3)
        cap = np.asarray(problem.capacity_bytes, dtype=np.float64)
        total = float(np.asarray(problem.param_bytes, dtype=np.int64).sum())
        # states whose capacity never binds stream (open labels); the others enumerate slices
        self.ss = np.flatnonzero(cap >= total) if stream else np.zeros(0, dtype=np.int64)
        self.es = np.setdiff1d(np.arange(self.S), self.ss)
        c = self.c
        self.cT = (cells.layer_ms, cells.in_ms, cells.out_ms)
        self.cE = (cells.layer_mj, cells.in_mj, cells.out_mj)
        self.cX = tuple(combine(e, t, -c / 1000.0) for e, t in zip(self.cE, self.cT))
        self.X3 = combine(self.E3, self.T3, -c / 1000.0)
        # an upper bound on any plan's energy makes the cap tolerance independent of the plan
        ebound = sum(float(np.max(np.where(np.isfinite(a), a, -INF), axis=1).clip(min=0).sum())
                     for a in self.cE)
        self.tolX = RTOL * max(1.0, ebound) if self.has_cap else INF
        self._paths = {}

    # ---- scalar helpers ----
    def best_path(self, cost: np.ndarray) -> list:
        """scalar_dp's path for ``cost``, memoised for the fixed tensors T3, E3 and X3."""
        for name in ("T3", "E3", "X3"):
            if cost is getattr(self, name):
                if name not in self._paths:
                    self._paths[name] = scalar_dp(cost)[1]
                return self._paths[name]
        return scalar_dp(cost)[1]

    def totals(self, path: list) -> tuple[float, float]:
        return path_sum(self.T3, path), path_sum(self.E3, path)

    def value(self, T, E):
        if self.metric == "latency":
            return T
        if self.metric == "energy":
            return E
        return E * T

    def feasible(self, T, E):
        ok = T <= self.Dtol
        if self.has_cap:
            ok = ok & (E - self.c * T / 1000.0 <= RTOL * np.maximum(1.0, E))
        return ok

    def walk(self, P3: np.ndarray, Q3: np.ndarray, q: float) -> tuple[float | None, list]:
        """Hull walk for min P s.t. Q <= q: the Lagrange multiplier and the plans it visits.

        Returns (None, plans) when even min Q exceeds q. The multiplier lam gives the valid bound
        P >= min(P + lam*Q) - lam*q for every plan with Q <= q.
        """
        pa = self.best_path(P3)
        Pa, Qa = path_sum(P3, pa), path_sum(Q3, pa)
        paths = [pa]
        if Qa <= q:
            return 0.0, paths
        pb = self.best_path(Q3)
        Pb, Qb = path_sum(P3, pb), path_sum(Q3, pb)
        paths.append(pb)
        if Qb > q:
            return None, paths
        lam = 0.0
        for _ in range(60):
            if not Qa > Qb:
                break
            lam = (Pb - Pa) / (Qa - Qb)
            if not lam > 0 or not np.isfinite(lam):
                lam = 0.0
                break
            pc = scalar_dp(combine(P3, Q3, lam))[1]
            Pc, Qc = path_sum(P3, pc), path_sum(Q3, pc)
            paths.append(pc)
            ref = Pa + lam * Qa
            if Pc + lam * Qc >= ref - 1e-12 * max(1.0, abs(ref)):
                break
            if Qc <= q:
                pb, Pb, Qb = pc, Pc, Qc
            else:
                pa, Pa, Qa = pc, Pc, Qc
        return lam, paths

    def lowest_average_power_mw(self) -> float:
        """min over legal plans of energy/latency (Dinkelbach's iteration on E - rho*T)."""
        path = self.best_path(self.X3 if self.has_cap else self.E3)
        T, E = self.totals(path)
        rho = 1000.0 * E / T if T > 0 else 0.0
        for _ in range(100):
            path = scalar_dp(combine(self.E3, self.T3, -rho / 1000.0))[1]
            T, E = self.totals(path)
            if T <= 0 or E - rho * T / 1000.0 >= -1e-12 * max(1.0, E):
                break
            rho = 1000.0 * E / T
        return rho

    # ---- infeasibility ----
    def fail(self, deadline_alone_ok: bool, cap_alone_ok: bool, t_min: float) -> None:
        obj = self.obj
        d = f"the {_ms(self.D)} ms deadline" if obj.deadline_ms is not None else ""
        p = f"the {_mw(self.c)} mW power cap" if self.has_cap else ""
        if not deadline_alone_ok:
            also = f", even ignoring {p}" if p else ""
            raise InfeasibleError(f"no plan meets {d}{also}: the fastest reachable latency is "
                                  f"{_ms(t_min)} ms; relax --deadline")
        if not cap_alone_ok:
            also = f", even ignoring {d}" if d else ""
            raise InfeasibleError(f"no plan meets {p}{also}: the lowest reachable average power is "
                                  f"{_mw(self.lowest_average_power_mw())} mW; relax --power-cap")
        if d and p:
            fastest = _Search(self.problem, Objective("latency", power_cap_mw=self.c))
            try:
                t_cap = fastest.run().latency_ms
                within = f": within the cap the fastest plan takes {_ms(t_cap)} ms"
            except InfeasibleError:
                within = ""
            raise InfeasibleError(f"no plan meets both {d} and {p}{within}; relax --deadline or --power-cap")
        raise InfeasibleError(f"no plan meets {d or p}; relax {'--deadline' if d else '--power-cap'}")

    # ---- the search ----
    def run(self) -> Plan:
        obj = self.obj
        metric = self.metric
        T3, E3, X3 = self.T3, self.E3, self.X3
        # additive metric without constraints: MOSAIC's recurrence over all states is exact
        if not obj.constrained and metric != "edp":
            path = self.best_path(T3 if metric == "latency" else E3)
            return self._plan(path)
        fast = self.best_path(T3)
        t_min = path_sum(T3, fast)
        deadline_ok = t_min <= self.Dtol
        cap_ok = True
        if self.has_cap:
            cap_ok = path_sum(X3, self.best_path(X3)) <= self.tolX
        if not (deadline_ok and cap_ok):
            self.fail(deadline_ok, cap_ok, t_min)
        if metric == "latency" and not self.has_cap:
            return self._plan(fast)   # min latency, and it meets the deadline

        # the unconstrained optimum of an additive metric is optimal when it happens to be feasible
        paths = [fast]
        if metric != "edp":
            opt = fast if metric == "latency" else self.best_path(E3)
            if self.feasible(*self.totals(opt)):
                return self._plan(opt)
            paths.append(opt)
        # incumbents (the best feasible plan among those the walks visit) and Lagrange multipliers
        self.lam_d = 0.0
        self.mu = 0.0
        self.cap_on_T = metric == "latency"
        if obj.deadline_ms is not None and metric != "latency":
            lam, ps = self.walk(E3, T3, self.Dtol)
            paths += ps
            self.lam_d = lam or 0.0
        if self.has_cap:
            mu, ps = self.walk(T3 if self.cap_on_T else E3, X3, self.tolX)
            paths += ps
            self.mu = mu or 0.0
        if metric == "edp":
            lam = None
            path = self.best_path(E3)
            for _ in range(6):   # Dinkelbach-like: the hull point where lam = E/T
                paths.append(path)
                T, E = self.totals(path)
                if T <= 0 or lam == E / T:
                    break
                lam = E / T
                path = scalar_dp(combine(E3, T3, lam))[1]
        self.U = INF
        best = None
        for path in self._seeds(paths):
            path = self._local_search(path)
            if path is None:
                continue
            v = self.value(*self.totals(path))
            if v < self.U:
                self.U, best = v, path
        if not self.prune:     # reference mode: the plain Pareto DP, no bounds, no incumbent
            self._dead = lambda T, X, b, ss: (np.zeros(T.shape, dtype=bool), np.zeros(T.shape))
            self.Ucut = INF
            path, _ = self._labels()
            if path is None:
                self.fail(True, True, t_min)
            return self._plan(path)
        self._prepare_bounds()
        root = float(self._lower(np.zeros(1), np.zeros(1), 0, None)[0][0])
        skip_gap = BEAM_SKIP_GAP if self._fronts is not None else BEAM_MIN_GAP
        if np.isfinite(root) and not self.U <= root + skip_gap * abs(root):
            # a narrow beam search usually lands within a fraction of a percent of the optimum:
            # a far better incumbent than the repaired hull points, for the price of one pass
            # (without a cap the exact pass is cheap unless the incumbent is far off)
            self.Ucut = self.U * (1 + 1e-9) if np.isfinite(self.U) else INF
            path, val = self._labels(beam=BEAM_WIDTH)
            if path is not None and val < self.U:
                logger.debug("exact: beam incumbent %.6g (was %.6g)", val, self.U)
                self.U, best = val, path
        for cut in self._cuts(root):
            self.Ucut = cut * (1 + 1e-9) + 1e-300 if np.isfinite(cut) else INF
            path, val = self._labels()
            if path is not None and val <= self.Ucut:
                break
            logger.debug("exact: nothing feasible within %.6g, deepening", cut)
        if path is None or (best is not None and val > self.U):
            path = best
        if path is None:
            self.fail(True, True, t_min)
        return self._plan(path)

    def _cuts(self, root: float) -> list[float]:
        """Iterative deepening: the bounds of the exact passes, the incumbent's value last.

        A pass at a guess g between the root lower bound and the incumbent prunes every plan
        worse than g, so a feasible plan it finds (value <= g) is optimal; if it finds none the
        optimum exceeds g and the next pass runs. Guess only when the incumbent is far from the
        bound: otherwise it is usually near the optimum and a failed guess costs more than it
        saves. Without an incumbent, guess blindly above the root bound, then search unbounded.
        """
        if not np.isfinite(root):
            return [self.U]
        if np.isfinite(self.U):
            gap = self.U - root
            far = gap > DEEPENING_MIN_GAP * abs(root)
            return [root + gap * f for f in DEEPENING_OF_GAP if far] + [self.U]
        return [root + max(abs(root), 1e-12) * r for r in DEEPENING_BLIND] + [INF]

    def _seeds(self, paths: list, infeasible: int = 2) -> list:
        """The paths worth repairing: the best feasible one and the least violating others."""
        unique = list({tuple(p): p for p in paths if p}.values())
        scored = []
        for p in unique:
            T, E = self.totals(p)
            scored.append((float(self._violation(T, E)), float(self.value(T, E)), p))
        feasible = sorted((s for s in scored if s[0] <= 0), key=lambda s: s[1])[:1]
        others = sorted((s for s in scored if s[0] > 0), key=lambda s: (s[0], s[1]))[:infeasible]
        return [s[2] for s in feasible + others]

    def _violation(self, T, E):
        """How far (T, E) is from feasible, relative to the deadline and the allowed energy."""
        v = 0.0
        if np.isfinite(self.Dtol):
            v = v + np.maximum(0.0, T - self.Dtol) / max(self.D, 1e-12)
        if self.has_cap:
            allowed = self.c * T / 1000.0
            v = v + np.maximum(0.0, E - allowed - self.tolX) / np.maximum(1e-12, allowed)
        return v

    def _local_search(self, path: list, max_moves: int = 60) -> list | None:
        """A feasible, locally improved version of ``path`` (None if none is found).

        Keeps the slicing and re-picks one slice's state at a time: while the plan violates
        a constraint, the move with the least objective increase per unit of violation removed;
        then, while some move lowers the objective and stays feasible, the best one.
        """
        first = np.array([f for f, _, _ in path])
        ends = np.array([last + 1 for _, last, _ in path])
        state = np.array([s for _, _, s in path])
        ct = self.T3[ends, first, :]                     # [n, S]
        ce = self.E3[ends, first, :]
        rows = np.arange(len(path))
        T = float(ct[rows, state].sum())
        E = float(ce[rows, state].sum())
        with np.errstate(invalid="ignore", divide="ignore"):
            for _ in range(max_moves):
                nT = T + ct - ct[rows, state][:, None]
                nE = E + ce - ce[rows, state][:, None]
                ok = np.isfinite(nT) & np.isfinite(nE)
                obj_now = self.value(T, E)
                obj_new = np.where(ok, self.value(nT, nE), INF)
                viol_now = float(self._violation(T, E))
                if viol_now > 0:
                    gain = viol_now - np.where(ok, self._violation(nT, nE), INF)
                    score = np.where(gain > 0, (obj_new - obj_now) / gain, INF)
                else:
                    feasible = ok & self.feasible(nT, nE)
                    score = np.where(feasible & (obj_new < obj_now * (1 - 1e-12)), obj_new, INF)
                j = int(np.argmin(score))
                if not np.isfinite(score.flat[j]):
                    break
                r, s = divmod(j, score.shape[1])
                T, E = float(nT[r, s]), float(nE[r, s])
                state[r] = s
        if not self.feasible(T, E):
            return None
        return [(int(f), int(e) - 1, int(s)) for f, e, s in zip(first, ends, state)]

    def _plan(self, path: list) -> Plan:
        return self.problem.evaluate([Slice(int(f), int(l), int(s)) for f, l, s in path])

    def _prepare_bounds(self) -> None:
        self.bT = suffix_bounds(*self.cT, self.T3)
        self.bE = suffix_bounds(*self.cE, self.E3)
        self.bX = suffix_bounds(*self.cX, self.X3) if self.has_cap else None
        # Lagrangian suffix bounds with the walks' multipliers (lists: empty when unused)
        self.bD = []
        if self.lam_d > 0:
            self.bD = [(self.lam_d, self._lagrangian(self.cE, self.E3, self.cT, self.T3, self.lam_d))]
        self.bC = []
        if self.mu > 0:
            P, P3 = (self.cT, self.T3) if self.cap_on_T else (self.cE, self.E3)
            self.bC = [(self.mu, self._lagrangian(P, P3, self.cX, self.X3, self.mu))]
        # the relaxed suffix fronts pay off only with a power cap: under a deadline alone the
        # Lagrangian bound is tight enough that building them costs more than they prune
        self._fronts = None
        if self.has_cap:
            self._suffix_fronts()

    def _suffix_fronts(self, K: int | None = None) -> None:
        """Relaxed Pareto fronts of the rest of the plan, at most K points per search point.

        The exact suffix fronts in (T, X) are computed backwards like the forward search, but
        whenever one has more than K points its sorted run is cut into K groups and each group
        replaced by its ideal point (min T, min X): a point set that dominates the true front, so
        it bounds soundly while capturing the trade-off curve (and its non-convexity) far better
        than one multiplier. ``front_closed[i]`` is (2, K) sorted by T ascending / X descending
        (short fronts padded by repeating their last point, empty ones by +inf);
        ``front_open[i]`` is (2, ns, K) for the streamed states.
        """
        K = K or FRONT_POINTS
        L = self.L
        ss, es = self.ss, self.es
        ns = ss.size
        layT, inT, outT = self.cT
        layX, inX, outX = self.cX
        T3, X3 = self.T3, self.X3
        prefix = self._prefix_bounds()
        closed = np.full((L + 1, 2, K), INF)
        closed[L] = 0.0
        opn = np.full((L + 1, 2, ns, K), INF)
        if ns:
            opn[L, 0] = outT[L - 1, ss][:, None]
            opn[L, 1] = outX[L - 1, ss][:, None]
        for i in range(L - 1, -1, -1):
            partsT, partsX = [], []
            if ns:
                with np.errstate(invalid="ignore"):
                    partsT.append(((inT[i, ss] + layT[i, ss])[:, None] + opn[i + 1, 0]).ravel())
                    partsX.append(((inX[i, ss] + layX[i, ss])[:, None] + opn[i + 1, 1]).ravel())
            if es.size:
                ct = T3[i + 1:, i, :][:, es]                    # [l - i - 1, m]
                cx = X3[i + 1:, i, :][:, es]
                partsT.append((ct[:, :, None] + closed[i + 1:, 0][:, None, :]).ravel())
                partsX.append((cx[:, :, None] + closed[i + 1:, 1][:, None, :]).ravel())
            T = np.concatenate(partsT)[None, :]
            X = np.concatenate(partsX)[None, :]
            bad = ~(np.isfinite(T) & np.isfinite(X)) | self._useless(T, X, prefix, i, None)
            T[bad] = INF
            X[bad] = INF
            closed[i] = _bucket(*pareto_rows(T, X), K)[:, 0]
            if i >= 1 and ns:
                with np.errstate(invalid="ignore"):
                    T = np.concatenate([outT[i - 1, ss][:, None] + closed[i, 0][None, :],
                                        layT[i, ss][:, None] + opn[i + 1, 0]], axis=1)
                    X = np.concatenate([outX[i - 1, ss][:, None] + closed[i, 1][None, :],
                                        layX[i, ss][:, None] + opn[i + 1, 1]], axis=1)
                bad = ~(np.isfinite(T) & np.isfinite(X)) | self._useless(T, X, prefix, i, ss)
                T[bad] = INF
                X[bad] = INF
                opn[i] = _bucket(*pareto_rows(T, X), K)
        # Flattened, row-offset search keys so that one searchsorted serves every row: row r's
        # values live in [5Hr - 2H, 5Hr + 2H] (+-inf mapped to +-2H, queries clipped to
        # +-1.5H), and queries are loosened by far more than the rounding of the offsets, so a
        # search can only ever return a weaker (smaller) bound, never a stronger one.
        finite = [a[np.isfinite(a)] for a in (closed, opn)]
        H = 1.0 + max((float(np.abs(a).max()) for a in finite if a.size), default=0.0)
        self._H = H
        self._slack = 1e-11 * H * max(1, ns)

        def keys(front: np.ndarray, sign: float) -> np.ndarray:   # front [..., R, K]
            v = np.clip(sign * front, -2 * H, 2 * H)
            R = front.shape[-2]
            return (v + (5 * H * np.arange(R))[:, None]).reshape(*front.shape[:-2], R * K)

        self._fronts = {
            True: (keys(closed[:, 0:1], 1.0), keys(closed[:, 1:2], -1.0),
                   closed[:, 0].copy(), closed[:, 1].copy()),
            False: (keys(opn[:, 0], 1.0), keys(opn[:, 1], -1.0),
                    opn[:, 0].reshape(L + 1, ns * K), opn[:, 1].reshape(L + 1, ns * K)),
        }
        self._K = K
        self._front_points = {True: closed, False: opn}   # [L+1, 2, K], [L+1, 2, ns, K]

    def _prefix_bounds(self) -> dict:
        """Lower bounds on the cost of reaching each boundary (forward DPs, capacity included):
        'T', 'X', 'E' and the Lagrangian combinations 'D' (E + lam T) and 'C' (P + mu X)."""
        pre = {"T": forward_totals(self.T3)[0], "E": forward_totals(self.E3)[0]}
        outs = {"T": self.cT[2], "E": self.cE[2]}
        if self.has_cap:
            pre["X"] = forward_totals(self.X3)[0]
            outs["X"] = self.cX[2]
        if self.lam_d > 0:
            pre["D"] = forward_totals(combine(self.E3, self.T3, self.lam_d))[0]
            outs["D"] = combine(self.cE[2], self.cT[2], self.lam_d)
        if self.mu > 0:
            P3, Pout = (self.T3, self.cT[2]) if self.cap_on_T else (self.E3, self.cE[2])
            pre["C"] = forward_totals(combine(P3, self.X3, self.mu))[0]
            outs["C"] = combine(Pout, self.cX[2], self.mu)
        return {"closed": pre, "out": outs}

    def _useless(self, tb: np.ndarray, xb: np.ndarray, prefix: dict, i: int,
                 ss: np.ndarray | None) -> np.ndarray:
        """Suffix points (tb, xb) at boundary i (closed, or open on states ss) that no prefix
        can complete into a feasible plan within the incumbent. Reaching an open point and
        closing its slice reaches boundary i, so an open prefix costs at least the closed
        bound minus that slice's exit cost."""
        def pre(key: str):
            v = prefix["closed"][key][i]
            if ss is None:
                return v
            with np.errstate(invalid="ignore"):
                return (v - prefix["out"][key][i - 1, ss])[:, None]

        c = self.c
        with np.errstate(invalid="ignore", over="ignore"):
            eb = xb + c * tb / 1000.0
            Tt = pre("T") + tb
            if "C" in prefix["closed"] and self.cap_on_T:
                Tt = np.maximum(Tt, pre("C") - self.mu * (self.tolX - xb) + tb)
            useless = Tt > self.Dtol
            Et = pre("E") + eb
            if self.has_cap:
                Xt = pre("X") + xb
                useless |= Xt > self.tolX
                Et = np.maximum(Et, Xt + c * Tt / 1000.0)
            if "D" in prefix["closed"]:
                Et = np.maximum(Et, pre("D") - self.lam_d * (self.Dtol - tb) + eb)
            if "C" in prefix["closed"] and not self.cap_on_T:
                Et = np.maximum(Et, pre("C") - self.mu * (self.tolX - xb) + eb)
            if np.isfinite(self.U):
                cut = self.U * (1 + 1e-9) + 1e-300
                if self.metric == "latency":
                    useless |= Tt > cut
                elif self.metric == "energy":
                    useless |= Et > cut
                else:
                    useless |= np.maximum(Et, 0.0) * Tt > cut
        return useless

    @staticmethod
    def _lagrangian(P: tuple, P3: np.ndarray, Q: tuple, Q3: np.ndarray, lam: float) -> SuffixBounds:
        return suffix_bounds(*(combine(p, q, lam) for p, q in zip(P, Q)), combine(P3, Q3, lam))

    def _front_bounds(self, b: int, closed: bool, budget_t: np.ndarray, budget_x: np.ndarray):
        """Per label: (T bound, X bound, infeasible) from the relaxed suffix front at b."""
        kt, kx, tb, xb = self._fronts[closed]
        kt, kx, tb, xb = kt[b], kx[b], tb[b], xb[b]
        H, K, slack = self._H, self._K, self._slack
        shape = budget_t.shape
        R = 1 if closed else shape[0]
        if closed:
            shape = (1,) + shape
            budget_t = budget_t.reshape(shape)
            budget_x = budget_x.reshape(shape)
        off = (5 * H * np.arange(R))[:, None]
        base = (K * np.arange(R))[:, None]
        lo, hi = -1.5 * H, 1.5 * H
        with np.errstate(invalid="ignore"):
            qt = off + np.minimum(np.maximum(budget_t + slack, lo), hi)
            qx = off + np.minimum(np.maximum(-budget_x - slack, lo), hi)
        it = np.searchsorted(kt, qt.ravel(), side="right").reshape(shape) - base - 1
        ix = np.searchsorted(kx, qx.ravel(), side="left").reshape(shape) - base
        dead = ix > it
        fT = tb[base + np.minimum(np.maximum(ix, 0), K - 1)]
        fX = xb[base + np.minimum(np.maximum(it, 0), K - 1)]
        if closed:
            return fT[0], fX[0], dead[0]
        return fT, fX, dead

    def _dead(self, T: np.ndarray, X: np.ndarray, b: int,
              ss: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(labels that cannot complete to a feasible plan within the current cut, their
        objective lower bounds)."""
        lb, dead = self._lower(T, X, b, ss)
        if np.isfinite(self.Ucut):
            with np.errstate(invalid="ignore"):
                dead |= lb > self.Ucut
            if self.metric == "edp" and self._fronts is not None:
                idx = np.nonzero(~dead & (T < INF))       # only the survivors: K points each
                if idx[0].size:
                    rows = None if ss is None else idx[0]
                    with np.errstate(invalid="ignore", over="ignore"):
                        dead[idx] |= self._front_objective_bound(T[idx], X[idx], b, rows) > self.Ucut
        return dead, lb

    def _lower(self, T: np.ndarray, X: np.ndarray, b: int,
               ss: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(lower bound on the objective of any completion, mask of labels no completion of
        which is feasible) for labels (T, X) at closed boundary b (ss None) or open on ss."""
        def rest(bounds: SuffixBounds):
            return bounds.closed[b] if ss is None else bounds.open[b, ss][:, None]

        c = self.c
        with np.errstate(invalid="ignore", over="ignore"):
            E = X + c * T / 1000.0
            Tlb = T + rest(self.bT)
            if self.cap_on_T:
                for mu, bounds in self.bC:
                    Tlb = np.maximum(Tlb, T + rest(bounds) - mu * (self.tolX - X))
            Elb = E + rest(self.bE)
            dead = Tlb > self.Dtol
            if self.has_cap:
                Xlb = X + rest(self.bX)
                dead |= Xlb > self.tolX
                Elb = np.maximum(Elb, Xlb + c * Tlb / 1000.0)
            for lam, bounds in self.bD:
                Elb = np.maximum(Elb, E + rest(bounds) - lam * (self.Dtol - T))
            if not self.cap_on_T:
                for mu, bounds in self.bC:
                    Elb = np.maximum(Elb, E + rest(bounds) - mu * (self.tolX - X))
            # the relaxed suffix front: the first point within the X budget bounds T, the last
            # point within the T budget bounds X; none in both budgets means infeasible
            if self._fronts is not None:
                fT, fX, fdead = self._front_bounds(b, ss is None, self.Dtol - T, self.tolX - X)
                dead |= fdead
                Tlb = np.maximum(Tlb, T + fT)
                Elb = np.maximum(Elb, X + fX + c * Tlb / 1000.0)
            if self.metric == "latency":
                lb = Tlb
            elif self.metric == "energy":
                lb = Elb
            else:
                lb = np.maximum(Elb, 0.0) * Tlb
        return lb, dead

    def _front_objective_bound(self, T: np.ndarray, X: np.ndarray, b: int,
                               rows: np.ndarray | None) -> np.ndarray:
        """For labels (T, X) (1-D) at closed boundary b (rows None) or open on rows ``rows``:
        the least objective of a completion through any suffix-front point within the label's
        budgets (+inf when none is). Used for edp, where bounding T and energy separately (by
        different front points) is weak: the product needs the whole trade-off."""
        front = self._front_points[rows is None][b]
        tb, xb = (front[0], front[1]) if rows is None else (front[0][rows], front[1][rows])
        Tt = T[:, None] + tb
        Xt = X[:, None] + xb
        ok = (Tt <= self.Dtol) & (Xt <= self.tolX)
        value = self.value(Tt, np.maximum(Xt + self.c * Tt / 1000.0, 0.0))
        return np.where(ok, value, INF).min(axis=-1)

    def _labels(self, beam: int | None = None) -> tuple[list | None, float]:
        """One forward pass at the current cut: (best feasible path, its value) or (None, inf).

        With ``beam`` only that many labels with the smallest lower bounds survive per search
        point: a fast heuristic (for the incumbent), not exact."""
        L = self.L
        cT, cX = self.cT, self.cX
        layT, inT, outT = cT
        layX, inX, outX = cX
        T3, X3 = self.T3, self.X3
        ss, es = self.ss, self.es
        ns = ss.size
        # earliest start boundary of any legal slice ending at boundary b on an enumerated state
        if es.size:
            ok = self.tables.ok[:, :, es].any(axis=2)          # [b, k]
            kmin = np.where(ok.any(axis=1), ok.argmax(axis=1), 0)
        # closed fronts per boundary: T, X, parent index, first layer, state
        fT = [np.zeros(1)]
        fX = [np.zeros(1)]
        fpar = [np.full(1, -1)]
        ffirst = [np.full(1, -1)]
        fstate = [np.full(1, -1)]
        offsets = [0, 1]
        allT, allX = np.zeros(1), np.zeros(1)           # every closed label so far, for enumeration
        allB, allI = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
        oT = np.full((ns, 0), INF)
        oX = np.full((ns, 0), INF)
        opar = np.full((ns, 0), -1, dtype=np.int64)
        ofirst = np.full((ns, 0), -1, dtype=np.int64)
        for i in range(L):
            b = i + 1
            parts = []
            if ns:
                FT, FX = fT[i], fX[i]
                F = FT.size
                with np.errstate(invalid="ignore"):
                    T = np.concatenate([oT, FT[None, :] + inT[i, ss][:, None]], axis=1) + layT[i, ss][:, None]
                    X = np.concatenate([oX, FX[None, :] + inX[i, ss][:, None]], axis=1) + layX[i, ss][:, None]
                par = np.concatenate([opar, np.broadcast_to(np.arange(F), (ns, F))], axis=1)
                first = np.concatenate([ofirst, np.full((ns, F), i)], axis=1)
                bad = ~(np.isfinite(T) & np.isfinite(X))
                T[bad] = INF
                dead, lb = self._dead(T, X, b, ss)
                bad |= dead
                T[bad] = INF
                X[bad] = INF
                if beam:
                    rows = pareto_rows(T, X, par, first, lb)
                    oT, oX, opar, ofirst, _ = _best_rows(beam, rows[-1], *rows)
                else:
                    oT, oX, opar, ofirst = pareto_rows(T, X, par, first)
                with np.errstate(invalid="ignore"):
                    cTc = oT + outT[i, ss][:, None]
                    cXc = oX + outX[i, ss][:, None]
                m = np.isfinite(cTc) & np.isfinite(cXc)
                rows = np.nonzero(m)[0]
                parts.append((cTc[m], cXc[m], opar[m], ofirst[m], ss[rows]))
            if es.size:
                lo = offsets[int(kmin[b])]
                bT = allT[lo:]
                bX = allX[lo:]
                bB = allB[lo:]
                vT = bT[:, None] + T3[b][bB][:, es]
                vX = bX[:, None] + X3[b][bB][:, es]
                m = np.isfinite(vT) & np.isfinite(vX)
                rr, cc = np.nonzero(m)
                parts.append((vT[m], vX[m], allI[lo:][rr], bB[rr], es[cc]))
            if parts:
                T = np.concatenate([p[0] for p in parts])
                X = np.concatenate([p[1] for p in parts])
                par = np.concatenate([p[2] for p in parts]).astype(np.int64)
                first = np.concatenate([p[3] for p in parts]).astype(np.int64)
                state = np.concatenate([p[4] for p in parts]).astype(np.int64)
                bad, lb = self._dead(T, X, b, None)
                T = np.where(bad, INF, T)[None, :]
                X = np.where(bad, INF, X)[None, :]
                rows = pareto_rows(T, X, par[None, :], first[None, :], state[None, :], lb[None, :])
                if beam:
                    rows = _best_rows(beam, rows[-1], *rows)
                T, X, par, first, state = (a[0] for a in rows[:5])
            else:
                T = X = np.zeros(0)
                par = first = state = np.zeros(0, dtype=np.int64)
            fT.append(T)
            fX.append(X)
            fpar.append(par)
            ffirst.append(first)
            fstate.append(state)
            offsets.append(offsets[-1] + T.size)
            if es.size:
                allT = np.concatenate([allT, T])
                allX = np.concatenate([allX, X])
                allB = np.concatenate([allB, np.full(T.size, b, dtype=np.int64)])
                allI = np.concatenate([allI, np.arange(T.size)])
        T, X = fT[L], fX[L]
        logger.debug("exact: final front %d labels, %d labels in all", T.size, offsets[-1])
        if T.size == 0:
            return None, INF
        E = X + self.c * T / 1000.0
        v = np.where(self.feasible(T, E), self.value(T, E), INF)
        j = int(np.argmin(v))
        best = float(v[j])
        if not np.isfinite(best):
            return None, INF
        path = []
        b = L
        while b > 0:
            k = int(ffirst[b][j])
            path.append((k, b - 1, int(fstate[b][j])))
            j = int(fpar[b][j])
            b = k
        path.reverse()
        return path, best


def lowest_average_power_mw(problem: PlanningProblem) -> float:
    """The lowest average power (energy / latency) of any legal plan, in mW."""
    return _Search(problem, Objective("latency")).lowest_average_power_mw()


def exact(problem: PlanningProblem, objective: Objective, stream: bool = True, prune: bool = True) -> Plan:
    """The optimal plan under the cost model, for any metric, deadline and power cap.

    Raises InfeasibleError naming the deadline, cap or layer that no plan can satisfy. For
    verification: ``stream=False`` enumerates every slice explicitly (no open labels) and
    ``prune=False`` runs the plain Pareto DP without bounds (slow, but obviously exact).
    """
    return _Search(problem, objective, stream=stream, prune=prune).run()


SPECS = (PlannerSpec("exact", "ours: Pareto-label DP with sound bounds; the proven optimum for latency, energy "
                     "or edp under a deadline and/or power cap", lambda p, o, ctx: exact(p, o),
                     constraints=("deadline", "power_cap"), exact=True),)
