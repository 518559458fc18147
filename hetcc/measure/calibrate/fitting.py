"""The fit: least squares over the free parameters (``fit``), in log space within each
parameter's bounds, by scipy's trust-region reflective solver on the residuals of
``Calibration.evaluate``; which parameters are free (``select_free``: those some observation
moves), int8 rates that follow their fitted float rate (``int8_ties``: the file's int8 speed-up
over float is what it states about the hardware, the float rate is what the observations
calibrate), and the refusals: too few observations, a parameter at its bound, parameters the
observations cannot separate (the Jacobian's rank), which a fit over the default free set turns
into parameters kept at the file's value (``FitResult.dropped``).

The Jacobian is by forward differences with the plans of the current point held fixed (the
optimum's cost moves with the parameters at a fixed plan: the envelope theorem), so a Jacobian
costs cost tables, not planner runs: one evaluation per free parameter, of the rows it moves (central
differences cost twice that; on the hikey970 fit both give the same values to five digits).
"""
from __future__ import annotations

import fnmatch
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from hetcc.core.errors import UsageError
from hetcc.measure.calibrate.model import Calibration, Evaluation
from hetcc.measure.calibrate.params import DEFAULT_RANGE, DIGITS, MISSING_EXTRA, Param, check_range
from hetcc.measure.observations import MEASURED

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

#: a fitted parameter this close (relative) to a bound is at it
BOUND_RTOL = 1e-6
#: ... and one this close (1 %) whose cost gradient points past the bound too (trf's iterates stay
#: strictly inside the box, so a parameter the data push out stops a little short of its bound)
BOUND_NEAR = 0.01
#: singular values below this x the largest make the Jacobian rank-deficient
RANK_RTOL = 1e-8
#: forward-difference step in log space
STEP = 1e-5


@dataclass
class FitResult:
    """What ``fit`` found: the values (file units, every parameter; free ones rounded to DIGITS
    significant digits), which were free, the evaluations before and after, solver stats."""

    values: np.ndarray
    free: list[int]
    kept: list[int]              # not constrained by the observations
    fixed: list[int]             # excluded by --fix or by being zero in the file
    before: Evaluation
    after: Evaluation
    nfev: int
    njev: int
    seconds: float
    message: str
    bounds: tuple[np.ndarray, np.ndarray]
    converged: bool = True
    tied: dict[int, int] = field(default_factory=dict)   # int8 parameter -> the float one it follows
    #: with no --free: parameters the fit could not pin down, kept at the file's value -> why
    dropped: dict[int, str] = field(default_factory=dict)


class _Refusal(UsageError):
    """A fit refused for parameters the observations cannot pin down; ``drops`` names them, each
    with why, so that a fit over the default free set can keep them at the file's value instead."""

    def __init__(self, message: str, drops: Sequence[tuple[str, str]]):
        super().__init__(message)
        self.drops = list(drops)


def _pattern_matches(names: Sequence[str], pattern: str, flag: str) -> list[int]:
    hit = [i for i, n in enumerate(names) if fnmatch.fnmatchcase(n, pattern)]
    if not hit:
        raise UsageError(f"{flag} {pattern!r} matches no parameter of this board; the parameters are "
                         f"{', '.join(names)} (docs/calibration.md)")
    return hit


def _is_pattern(text: str) -> bool:
    return any(c in text for c in "*?[")


def _dependence(cal: Calibration, x: np.ndarray, base: Evaluation, candidates: Sequence[int]) -> dict[int, list[int]]:
    """Rows whose signal moves when each candidate parameter is scaled by 1.1 (plans held)."""
    import numpy as np
    out = {}
    for j in candidates:
        v = x.copy()
        v[j] *= 1.1
        e = cal.evaluate(v, frozen=base.frozen)
        moved = np.abs(e.signal - base.signal) > 1e-12 * (1.0 + np.abs(base.signal))
        moved |= np.isfinite(e.signal) != np.isfinite(base.signal)
        out[j] = [int(r) for r in np.flatnonzero(moved)]
    return out


def select_free(cal: Calibration, free: Sequence[str] = (), fix: Sequence[str] = (), *,
                base: Evaluation | None = None,
                known: dict[int, list[int]] | None = None) -> tuple[list[int], list[int], list[int], dict]:
    """(free, kept, fixed, dependence): the free set from the patterns (default: every parameter
    some observation depends on); refusals for explicitly freed parameters nothing depends on.
    ``base``: the evaluation at the file's values, when the caller has it (else computed);
    ``known``: dependences already found at those values (read, and filled with the new ones)."""
    params = cal.board.params
    names = [p.name for p in params]
    x0 = cal.board.x0
    if base is None:
        base = cal.evaluate(x0)
    if free:
        chosen = sorted({i for pat in free for i in _pattern_matches(names, pat, "--free")})
    else:
        chosen = list(range(len(params)))
    fixed = sorted({i for pat in fix for i in _pattern_matches(names, pat, "--fix")})
    explicit = {names.index(p) for p in free if not _is_pattern(p)}
    for i in chosen:
        if i in explicit and i not in fixed and not x0[i] > 0:
            raise UsageError(f"--free {names[i]}: it is {x0[i]:g} in {cal.board.label}; the fit runs in log space "
                             "from a positive value: write a small positive guess there first")
    zero = [i for i in chosen if not x0[i] > 0 and i not in fixed]
    cand = [i for i in chosen if i not in fixed and x0[i] > 0]
    known = {} if known is None else known
    known.update(_dependence(cal, x0, base, [i for i in cand if i not in known]))
    dep = {i: known[i] for i in cand}
    for i in cand:
        if i in explicit and not dep[i]:
            raise UsageError(f"--free {names[i]}: no observation depends on it (its rows would not move); drop it, "
                             "or add observations that run on that device or use what it prices")
    free_idx = [i for i in cand if dep[i]]
    kept = [i for i in cand if not dep[i]]
    return free_idx, kept, sorted(set(fixed) | set(zero)), dep


def int8_ties(params: Sequence[Param], free: Sequence[int]) -> list[tuple[int, int, float]]:
    """(int8 parameter, float parameter, int8 / float in the file) for every free
    ``DEV.peak_gflops.CLASS`` whose ``DEV.int8_peak_gops.CLASS`` exists and is not free."""
    index = {p.name: i for i, p in enumerate(params)}
    out = []
    for i in free:
        name = params[i].name
        if ".peak_gflops." not in name:
            continue
        j = index.get(name.replace(".peak_gflops.", ".int8_peak_gops."))
        if j is not None and j not in free and params[i].x0 > 0:
            out.append((j, i, params[j].x0 / params[i].x0))
    return out


def fit(cal: Calibration, *, free: Sequence[str] = (), fix: Sequence[str] = (),
        bounds: Mapping[str, tuple[float, float]] | None = None, range_factor: float = DEFAULT_RANGE,
        progress: Any = None) -> FitResult:
    """Least squares over the free parameters (see the module docstring); raises UsageError for
    the refusals: too few observations, a parameter at its bound, parameters not separated.

    With ``free`` given, the set is the caller's and those refusals stand. Without it the fit
    chooses: it starts from every parameter some observation moves and, where the fit pushes
    some to a bound or cannot separate them, keeps those at the file's value (``dropped``, with
    why) and fits the rest again, until a fit holds or nothing is left to drop. A parameter given
    a ``--bound`` is one the caller wants fitted: its refusal stands."""
    if free:
        return _fit(cal, free=free, fix=fix, bounds=bounds, range_factor=range_factor, progress=progress)
    names = [p.name for p in cal.board.params]
    fix = list(fix)
    dropped: dict[int, str] = {}
    before, known = cal.evaluate(cal.board.x0), {}     # the same in every round: found once
    while True:
        try:
            result = _fit(cal, free=free, fix=fix, bounds=bounds, range_factor=range_factor, progress=progress,
                          before=before, known=known)
        except _Refusal as refusal:
            # a parameter given a --bound is one the caller wants fitted: never dropped
            new = [(n, why) for n, why in refusal.drops if names.index(n) not in dropped and n not in (bounds or {})]
            if not new:
                raise
            last = refusal
            for n, why in new:
                dropped[names.index(n)] = why
                fix.append(n)
            continue
        except UsageError:
            if dropped:                    # dropping left nothing to fit: the refusal that began it says why
                raise last from None
            raise
        result.dropped = dropped
        result.fixed = [i for i in result.fixed if i not in dropped]
        return result


def _fit(cal: Calibration, *, free: Sequence[str], fix: Sequence[str],
         bounds: Mapping[str, tuple[float, float]] | None, range_factor: float, progress: Any,
         before: Evaluation | None = None, known: dict[int, list[int]] | None = None) -> FitResult:
    """One least-squares fit over the set ``free`` / ``fix`` give (``fit``'s docstring);
    ``before`` and ``known``: the evaluation and dependences at the file's values, when found."""
    import numpy as np
    try:
        from scipy.optimize import least_squares
    except ImportError:
        raise UsageError(MISSING_EXTRA) from None
    check_range(range_factor)
    params = cal.board.params
    names = [p.name for p in params]
    x0 = cal.board.x0
    before = cal.evaluate(x0) if before is None else before
    free_idx, kept, fixed, dep = select_free(cal, free, fix, base=before, known=known)
    n_obs = len(cal.obs)
    if not free_idx:
        raise UsageError("nothing to fit: no free parameter moves any observation (--free / --fix leave none)")
    if len(free_idx) > n_obs:
        raise UsageError(f"{len(free_idx)} free parameters but {n_obs} observations: a least-squares fit needs at "
                         f"least as many observations as parameters; fix some with --fix (e.g. --fix "
                         f"'{names[free_idx[-1]].split('.')[0]}.*') or add observations")
    lo = x0 / range_factor
    hi = x0 * range_factor
    for name, (b_lo, b_hi) in (bounds or {}).items():
        i = cal.board.index(name)
        lo[i], hi[i] = b_lo, b_hi
    F = np.array(free_idx)
    zlo, zhi = np.log(lo[F]), np.log(hi[F])
    z0 = np.clip(np.log(x0[F]), zlo + 1e-9 * (zhi - zlo), zhi - 1e-9 * (zhi - zlo))
    # a measured row prices one fixed slice: what it depends on never changes; a gain or plan_uses row
    # depends on plans, which the fit may change, so every Jacobian column recomputes those rows
    plan_rows = [i for i, o in enumerate(cal.obs) if o.kind not in MEASURED]
    rows_of = {j: sorted(set(dep[j]) | set(plan_rows)) for j in free_idx}
    cache: dict[bytes, Evaluation] = {}
    counts = {"fev": 0, "jev": 0}
    task = progress.task(f"fitting {len(free_idx)} parameters to {n_obs} observations") if progress else None

    ties = int8_ties(params, free_idx)

    def tie(v: np.ndarray) -> np.ndarray:
        for j, i, ratio in ties:
            v[j] = v[i] * ratio
        return v

    def values(z: np.ndarray) -> np.ndarray:
        v = x0.copy()
        v[F] = np.exp(z)
        return tie(v)

    def point(z: np.ndarray) -> Evaluation:
        key = np.asarray(z, dtype=np.float64).tobytes()
        if key not in cache:
            if len(cache) > 4:
                cache.clear()
            cache[key] = cal.evaluate(values(z))
            counts["fev"] += 1
            if task is not None:
                task.update(1)
        return cache[key]

    def fun(z: np.ndarray) -> np.ndarray:
        return point(z).residual

    def jac(z: np.ndarray) -> np.ndarray:
        return jacobian(z, point(z))

    def jacobian(z: np.ndarray, base: Evaluation) -> np.ndarray:
        counts["jev"] += 1
        J = np.zeros((n_obs, len(free_idx)))
        for col, j in enumerate(free_idx):
            rows = rows_of[j]
            if not rows:
                continue
            zp = z.copy()
            zp[col] += STEP
            rp = cal.evaluate(values(zp), frozen=base.frozen, rows=rows).residual
            J[rows, col] = (rp[rows] - base.residual[rows]) / STEP
        return J

    t0 = time.perf_counter()
    try:
        res = least_squares(fun, z0, jac=jac, bounds=(zlo, zhi), method="trf", x_scale=1.0,
                            xtol=1e-12, ftol=1e-12, gtol=1e-10, max_nfev=200 * (len(free_idx) + 1))
    finally:
        if task is not None:
            task.close()
    seconds = time.perf_counter() - t0
    z = res.x
    x_fit = values(z)

    # refusal 1: parameters at their bounds (all of them named, so one run says what to widen)
    J = jacobian(z, point(z))
    r = point(z).residual
    grad = J.T @ r                                   # d(cost)/d(log parameter); > 0: the fit wants it lower
    push = 1e-6 * max(1.0, float(r @ r))
    hits = []
    for col, j in enumerate(free_idx):
        at_lo = (res.active_mask[col] < 0 or z[col] - zlo[col] <= BOUND_RTOL
                 or (z[col] - zlo[col] <= BOUND_NEAR and grad[col] > push))
        at_hi = (res.active_mask[col] > 0 or zhi[col] - z[col] <= BOUND_RTOL
                 or (zhi[col] - z[col] <= BOUND_NEAR and grad[col] < -push))
        if at_lo or at_hi:
            unit = f" {params[j].unit}" if params[j].unit else ""
            hits.append((names[j], f"{lo[j] if at_lo else hi[j]:.6g}{unit}", "lower" if at_lo else "higher"))
    drops = [(n, f"the fit pushed it to its bound {b}: the observations want it {way}") for n, b, way in hits]
    if len(hits) == 1:
        n, b, way = hits[0]
        raise _Refusal(f"the fit pushed {n} to its bound {b}: the observations want it {way}; widen it with "
                       f"--bound {n}=LO:HI or fix it with --fix {n}", drops)
    if hits:
        raise _Refusal("the fit pushed " + ", ".join(f"{n} to its bound {b} (the observations want it {way})"
                                                     for n, b, way in hits)
                       + ": widen them with --bound NAME=LO:HI or fix them with "
                       + " ".join(f"--fix {n}" for n, _, _ in hits), drops)
    # refusal 2: parameters the observations cannot separate (at the solution)
    _check_rank(J, [names[j] for j in free_idx])

    x_out = x0.copy()
    x_out[F] = [float(f"{v:.{DIGITS}g}") for v in x_fit[F]]
    x_out = tie(x_out)                     # an int8 rate follows its float rate as written
    x_out[[j for j, _, _ in ties]] = [float(f"{x_out[j]:.{DIGITS}g}") for j, _, _ in ties]
    after = cal.evaluate(x_out)
    return FitResult(values=x_out, free=free_idx, kept=kept, fixed=fixed, before=before, after=after,
                     nfev=counts["fev"], njev=counts["jev"], seconds=seconds, message=str(res.message),
                     bounds=(lo, hi), converged=bool(res.status != 0), tied={j: i for j, i, _ in ties})


def _check_rank(J: np.ndarray, names: Sequence[str]) -> None:
    """UsageError naming the parameters of the weakest direction when J is rank-deficient."""
    import numpy as np
    if J.size == 0:
        return
    norms = np.linalg.norm(J, axis=0)
    top = float(norms.max()) if norms.size else 0.0
    flat = [names[c] for c in np.flatnonzero(norms <= RANK_RTOL * max(top, 1e-300))]
    if flat:
        listed = _listing(flat)
        raise _Refusal(f"{listed} {'is' if len(flat) == 1 else 'are'} not constrained by these observations at the "
                       "fitted point (the rows that depend on it only hold already: plan_uses rows with their "
                       f"margin): fix {'it' if len(flat) == 1 else 'them'} with "
                       + " ".join(f"--fix {n}" for n in flat[:8]) + (" ..." if len(flat) > 8 else "")
                       + ", or add observations that measure it",
                       [(n, "not constrained by these observations at the fitted point") for n in flat])
    _, s, vt = np.linalg.svd(J, full_matrices=False)
    weak = [k for k in range(s.size) if s[k] < RANK_RTOL * s[0]]
    groups: list[list[str]] = []
    seen: set[str] = set()
    for k in weak[::-1][:5]:                      # the weakest directions first
        v = np.abs(vt[k])
        who = [names[i] for i in np.argsort(-v) if v[i] >= 0.1 * v.max()][:4]
        if not set(who) <= seen:
            groups.append(who)
            seen |= set(who)
    if not groups:
        return
    parts = [f"{g[0]} is not determined by these observations (the rows barely move with it)" if len(g) == 1 else
             f"{_listing(g)} are not separated by these observations (only a combination of them is)" for g in groups]
    fixes = " ".join(f"--fix {g[-1]}" for g in groups)
    one = len(groups) == 1 and len(groups[0]) == 1
    raise _Refusal("; ".join(parts) + f": fix {'it' if one else 'one of each' if len(groups) > 1 else 'one'} "
                   f"with {fixes}, or add observations that tell them apart (single layers, other models, other "
                   "frequencies)",
                   [(g[-1], "not determined by these observations" if len(g) == 1 else
                     f"not separated from {_listing(g[:-1])} by these observations") for g in groups])


def _listing(names: Sequence[str], most: int = 8) -> str:
    shown = list(names[:most]) + ([f"{len(names) - most} more"] if len(names) > most else [])
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]

