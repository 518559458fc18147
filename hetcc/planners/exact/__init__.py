"""exact: the proven optimum for latency, energy or edp under an optional deadline and power cap.

A Pareto-label dynamic program over layer boundaries (``search``). With the power cap c (0 when
absent) a partial plan is the label (T, X): T its latency and X = energy - c*T/1000, both additive
over slices. A plan is feasible iff T <= deadline and X <= 0 (average power within the cap), and
each objective (T, energy = X + c*T/1000, edp = energy*T) is non-decreasing in T and X for
non-negative costs, so a label dominated in (T, X) at the same search point can never complete to
a better feasible plan: keeping only non-dominated labels is exact (``pareto``).

Everything else only prunes, and only soundly:

* first, MOSAIC's recurrence (Eq. 9) on the dense slice tensors for the least-energy (or fastest)
  plan: when it meets the limits it is optimal, returned at once;
* ``relax``: a relaxation that drops a limit the hull says is most likely idle (the cap of
  energy under both limits, every limit of edp) is solved first; its optimum, when it meets the
  dropped limits, is optimal, and otherwise its value is a lower bound; under both limits with
  no feasible incumbent, the fastest plan within the cap is one (or proves the limits clash);
* ``incumbent``: the lower hull of all plans in (T, E), explored with parametric DPs, gives
  feasible plans (repaired where a limit is crossed); the best is the incumbent U. For energy
  under a deadline alone on short models (< ``incumbent.SHORT_LAYERS``), a walk of Eq. 9 runs
  from the fastest and the least-energy plan to the hull's edge over the deadline instead;
* ``bounds``: per search point, the suffix's hull as lines E' >= G - lam*T'; per label, the least
  objective of a completion on that relaxation (its LP bound) and whether any is feasible. At
  the root it is the proven lower bound; when U meets it, U is optimal without a search;
* ``dominance`` (edp under a deadline): a label that a faster one beats on every completion goes;
* a narrow beam pass of the label search improves U, then exact passes prune everything whose
  bound exceeds a cut: first a guess between the root bound and U (iterative deepening: a pass
  that finds a feasible plan within its guess is optimal, one that does not raises the bound),
  then U itself.

Hardware knobs (``knobs=search``, the default): on a board with knobs the planner returns the
optimum over knob configurations x slicings (``knobs``: every configuration bounded at once, the
promising ones solved with the best plan so far as a cutoff, ``_solve``'s ``cutoff``);
``knobs=fixed`` plans at the configuration the problem was costed at.

Anytime: with ``ctx.budget`` (seconds, and steps = label-search boundaries) the planner returns
its best plan when the budget runs out, with ``stats`` optimal / lower_bound / gap.
``prune=False`` runs the plain label DP (no bounds, no incumbent), for verification.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Literal

import numpy as np

from hetcc.core.errors import InfeasibleError
from ..context import PlanContext
from ..metrics import Objective
from ..problem import Plan, PlanningProblem, Slice
from ..registry import PlannerSpec
from . import dominance, knobs, relax, suffix
from .bounds import critical, envelope, lower, subset, two_stage
from .incumbent import SHORT_LAYERS, best_feasible, hull, opening, walk, walks
from .incumbent import lowest_average_power_mw as _lowest_power
from .knobs import Beaten
from .lagrange import tensor_dp
from .model import Model, build, ms_text, mw_text
from .pareto import INF, pareto_rows
from .search import no_bound, run_pass

BEAM_WIDTH = 8          # labels per search point in the incumbent's beam pass
BEAM_SKIP_GAP = 1e-4    # no beam pass when the incumbent is this close to the root bound, and
                        # under a deadline alone only on long models with a far incumbent: there the
                        # exact pass is usually cheap and the beam pass was measured to cost more
                        # than it saves (zoo models: 1.2-2.4x; 250 layers, incumbents 0.02-0.17 %
                        # above the root bound: 1.1-1.8x), but an incumbent 1 % above it makes the
                        # exact pass keep every label within that 1 % (250 layers on the board
                        # fitted to MOSAIC, edp under a deadline, seed 1: 3.0 s -> 0.8 s with it)
BEAM_MIN_LAYERS = 120
BEAM_FAR_GAP = 5e-3
# Iterative deepening: exact passes first at these fractions of the gap between the root bound and
# the incumbent, when the incumbent is more than DEEPENING_MIN_GAP above the bound (relative).
# Energy / edp: only far incumbents. Close ones (zoo models under HERTI's deadlines, 250 layers:
# 0.02-1.6 %) had their guesses land below the optimum (wasted passes); far ones are common under a
# cap on zoo models (ResNet-50, energy under a cap: incumbent 39 % above the bound, the optimum at
# 57 % of the gap), where one pass at the incumbent kept every label below it. Measured on 8 zoo
# models x energy / edp x cap / both / short deadline on the fitted board: labels ResNet-50 edp
# under a cap 269 k -> 90 k (687 -> 233 ms), energy 269 k -> 184 k, Inception-v3 energy 183 k ->
# 55 k, MobileNetV2 91 k -> 15 k; GoogLeNet under a cap 24 k -> 32 k (the one that grew by > 10 %).
# Latency under a cap: its incumbents are relatively far and a pass's labels grow steeply with its
# cut, so guessing pays even for small gaps (measured at 250 layers).
DEEPENING_OF_GAP = (1 / 2, 3 / 4)
DEEPENING_MIN_GAP = 0.05
LATENCY_DEEPENING_MIN_GAP = 1e-4
# long models under a power cap (any metric) or edp under a deadline: the last layers completed
# exactly (``suffix``); on shorter ones the plain search is already fast (zoo models: a few ms) and
# the reverse pass would be most of the work
SUFFIX_MIN_LAYERS = 120
OPTIMAL_RTOL = 1e-9     # an incumbent this close to the lower bound is optimal


def _fail(m: Model, deadline_ok: bool, cap_ok: bool, t_min: float, t_cap: float | None = None) -> None:
    d = f"the {ms_text(m.deadline)} ms deadline" if np.isfinite(m.deadline) else ""
    p = f"the {mw_text(m.c)} mW power cap" if m.has_cap else ""
    if not deadline_ok:
        also = f", even ignoring {p}" if p else ""
        raise InfeasibleError(f"no plan meets {d}{also}: the fastest reachable latency is "
                              f"{ms_text(t_min)} ms; relax --deadline")
    if not cap_ok:
        also = f", even ignoring {d}" if d else ""
        raise InfeasibleError(f"no plan meets {p}{also}: the lowest reachable average power is "
                              f"{mw_text(_lowest_power(m))} mW; relax --power-cap")
    if d and p:
        try:
            if t_cap is None:
                t_cap = exact(m.problem, Objective("latency", power_cap_mw=m.c)).latency_ms
            within = f": within the cap the fastest plan takes {ms_text(t_cap)} ms"
        except InfeasibleError:
            within = ""
        raise InfeasibleError(f"no plan meets both {d} and {p}{within}; relax --deadline or --power-cap")
    raise InfeasibleError(f"no plan meets {d or p}; relax {'--deadline' if d else '--power-cap'}")


@dataclass
class _Best:
    """The incumbent and the proven lower bound as the solve goes on."""

    value: float = INF
    path: list | None = None
    bound: float = -INF
    steps: int = 0
    passes: list = field(default_factory=list)

    def offer(self, path: list | None, value: float) -> None:
        if path is not None and value < self.value:
            self.value, self.path = value, path

    @property
    def gap(self) -> float:
        if not np.isfinite(self.value):
            return INF
        return max(0.0, self.value - self.bound) / max(abs(self.value), 1e-300)

    @property
    def optimal(self) -> bool:
        return np.isfinite(self.value) and self.value <= self.bound + OPTIMAL_RTOL * max(1.0, abs(self.value))


def _bound(m: Model, lam) -> tuple:
    """The envelope of ``lam`` and the label bound built on it (``search.Bound``)."""
    env = envelope(m, lam)
    small = subset(env, critical(m, env))
    bound = partial(two_stage, m, small, env)
    if dominance.applies(m):
        bound = partial(dominance.with_dominance, m, small, bound)
    return env, bound


def _suffix_pays(m: Model) -> bool:
    """Whether the last layers are completed exactly (``suffix``): long models under a power cap
    (any metric), or edp under a deadline. Measured at 250 layers: 2-5x fewer labels (under both
    limits 1.1 s -> 0.5 s for energy, 3.0 s -> 0.7 s for edp; latency under a cap, least of 3
    interleaved runs on both boards and seeds 0 and 1: 0.67-1.25 s -> 0.52-0.79 s, once the cap's
    bound was made cheaper); energy under a deadline alone was slower with it (a reverse pass
    costing more than it spares)."""
    return m.L >= SUFFIX_MIN_LAYERS and (dominance.applies(m) or m.has_cap)


def _raise_bound(best: _Best, bound: float, cutoff: float) -> None:
    """``best``'s lower bound raised to ``bound``; Beaten once it passes ``cutoff``."""
    best.bound = max(best.bound, bound)
    if best.bound > cutoff:
        raise Beaten


def _try_relaxed(m: Model, drop: tuple[str, ...], best: _Best, ctx: PlanContext, start=None,
                 cutoff: float = INF) -> Plan | None:
    """The relaxation's optimum when it meets the dropped limits (then optimal); else None, with
    its value as ``best``'s lower bound and its plan, when feasible, offered."""
    if not drop:
        return None
    try:
        r = _solve(relax.without(m, drop), True, ctx, start, cutoff)
    except InfeasibleError:
        return None     # the budget ran out
    path, T, E = _taken(m, best, r)
    if m.feasible(T, E) and r.stats["optimal"]:
        return _plan(m, path, **dict(r.stats), relaxed=" and ".join(drop))
    _raise_bound(best, float(r.stats["lower_bound"]), cutoff)     # a relaxation's bound bounds the problem
    if m.feasible(T, E):
        best.offer(path, float(m.value(T, E)))
    return None


def _taken(m: Model, best: _Best, r: Plan) -> tuple[list, float, float]:
    """A sub-solve's plan as a path with its (T, E) under ``m``; its steps count against the budget."""
    best.steps += int(r.stats.get("steps", 0))
    path = [(s.first, s.last, s.state) for s in r.slices]
    return (path, *m.totals(path))


def _feasible_plan(m: Model, best: _Best, ctx: PlanContext, start) -> Plan | None:
    """Under both limits, when the hull and its repairs found no feasible plan: the fastest plan
    within the cap (latency under the cap alone, exact) is feasible when it meets the deadline and
    is then ``best``'s incumbent (for latency, the optimum: returned); when it misses, no plan meets
    both (InfeasibleError). Measured on resnetv2_152 at --max-cut-tensors 2 (411 layers), where
    the benchmark's deadline is that plan's latency: energy, edp and latency under both limits
    found no feasible plan in 30 s before this step."""
    try:
        r = _solve(relax.fastest_within_cap(m), True, ctx, start)
    except InfeasibleError:
        return None     # the budget ran out
    path, T, E = _taken(m, best, r)
    if m.feasible(T, E):
        if m.metric == "latency" and r.stats["optimal"]:
            return _plan(m, path, **dict(r.stats), relaxed="deadline")
        best.offer(path, float(m.value(T, E)))
    elif r.stats["optimal"]:
        _fail(m, True, True, T, t_cap=T)
    return None


def _plan(m: Model, path: list, **stats) -> Plan:
    return m.problem.evaluate([Slice(int(f), int(l), int(s)) for f, l, s in path], stats=stats)


def _refine(lam: list) -> np.ndarray:
    """The hull's weights and the midpoint of each neighbouring pair: the suffixes' hulls differ
    from the whole plan's, and more lines make their envelopes tighter (measured to pay for energy
    under a deadline, with or without a cap, on long models; elsewhere, and on short ones, the
    extra lines cost more than they prune: ``incumbent.SHORT_LAYERS``)."""
    lam = np.unique(np.asarray(lam, dtype=np.float64))
    lam = lam[np.isfinite(lam)]
    return np.concatenate([lam, (lam[:-1] + lam[1:]) / 2])


def _cuts(root: float, U: float, metric: str = "") -> list[float]:
    """Iterative deepening: the cuts of the exact passes, the incumbent's value last."""
    if not np.isfinite(root):
        return [U]
    if np.isfinite(U):
        gap = U - root
        least = LATENCY_DEEPENING_MIN_GAP if metric == "latency" else DEEPENING_MIN_GAP
        far = gap > least * abs(root)
        return [root + gap * f for f in DEEPENING_OF_GAP if far] + [U]
    return [root + max(abs(root), 1e-12) * r for r in 1e-3 * 4.0 ** np.arange(6)] + [INF]


def exact(problem: PlanningProblem, objective: Objective, stream: bool = True, prune: bool = True,
          ctx: PlanContext | None = None) -> Plan:
    """The optimal plan under the cost model, for any metric, deadline and power cap.

    Raises InfeasibleError naming the deadline, cap or layer that no plan can satisfy, or saying
    that the budget ran out before any feasible plan was found. For verification:
    ``stream=False`` enumerates every slice explicitly (no open labels) and ``prune=False`` runs
    the plain Pareto DP without bounds (slow, but obviously exact).
    """
    return _solve(build(problem, objective, stream), prune, ctx or PlanContext())


def _solve(m: Model, prune: bool, ctx: PlanContext, start=None, cutoff: float = INF) -> Plan:
    """``exact`` on the model ``m``; ``start``: its opening pass when already run (a relaxation's,
    whose extra weights only add hull vertices). ``cutoff``: the solve may stop with Beaten once
    it proves that no plan is worth ``cutoff`` or less."""
    best = _Best()
    if m.metric != "edp":   # the unconstrained optimum of an additive metric, when feasible, is optimal
        lean = tensor_dp(m.T3 if m.metric == "latency" else m.E3)
        T, E = m.totals(lean)
        v = float(m.value(T, E))
        if m.feasible(T, E):
            return _plan(m, lean, optimal=True, lower_bound=v, gap=0.0, passes=0, labels=0)
        if prune and v > cutoff:    # the limits only make it worse
            raise Beaten
    cap_ok = True
    if walks(m):    # energy under a deadline alone, short model: the hull's edge at the deadline
        fast, first = tensor_dp(m.T3), None
        t_min = m.totals(fast)[0]
    else:
        # [0] the fastest plan, [1] the least energy, [2] the coolest
        first = opening(m) if start is None else start
        t_min = float(first.T[0])
        if m.has_cap:
            cap_ok = float(first.E[2] - m.k * first.T[2]) <= m.tolX
    deadline_ok = t_min <= m.Dtol
    if not (deadline_ok and cap_ok):
        _fail(m, deadline_ok, cap_ok, t_min)
    if not prune:
        res = run_pass(m, no_bound, INF)
        if res.path is None:
            _fail(m, True, True, t_min)
        return _plan(m, res.path, optimal=True, lower_bound=res.value, gap=0.0, passes=1, labels=res.labels)

    def out_of_budget() -> bool:
        return ctx.out_of_budget(best.steps)

    if m.metric == "edp":     # edp without limits needs only the hull: try it before this one's
        plan = _try_relaxed(m, relax.droppable(m, first), best, ctx, first, cutoff)
        if plan is not None:
            return plan
    h = walk(m, fast, lean) if first is None else hull(m, first, out_of_time=out_of_budget)
    if m.metric == "energy":
        plan = _try_relaxed(m, relax.droppable(m, h), best, ctx, cutoff=cutoff)
        if plan is not None:
            return plan
    best.offer(*reversed(best_feasible(m, h)))
    if best.path is None and m.has_cap and np.isfinite(m.deadline) and not out_of_budget():
        plan = _feasible_plan(m, best, ctx, first)
        if plan is not None:
            return plan
    if out_of_budget() and best.path is not None and np.isfinite(best.bound):
        # a relaxation used the budget up and left its bound: no set-up of a search that cannot run
        return _plan(m, best.path, optimal=bool(best.optimal), lower_bound=float(best.bound), gap=float(best.gap),
                     passes=0, labels=0, hull_vertices=len(h.lam), steps=best.steps, seconds=ctx.elapsed())
    improve = None
    ceiling = best.value     # the least value of a plan known to exist (the first pass's cut)
    refine = m.metric == "energy" and (not m.has_cap or np.isfinite(m.deadline)) and m.L >= SHORT_LAYERS
    env, bound = _bound(m, _refine(h.lam) if refine else h.lam)
    root = float(lower(m, env, np.zeros(1), np.zeros(1), 0, False)[0][0])
    _raise_bound(best, root, cutoff)
    if _suffix_pays(m) and np.isfinite(best.value) and not best.optimal and not out_of_budget():
        fronts, ceiling = suffix.fronts(m, lambda mr: _bound(mr, h.lam)[1], best.value, path=best.path,
                                        out_of_time=out_of_budget)
        joiner = suffix.Joiner(m, fronts)
        bound = partial(joiner.bound, bound)
        improve = joiner.improver(best.path)
    if not np.isfinite(root):
        _fail(m, True, True, t_min)     # the relaxation has no feasible plan
    ctx.logger.debug("exact: %d hull vertices, incumbent %.6g, root bound %.6g", len(h.lam), best.value, root)

    def stop(b: int) -> bool:
        best.steps += 1
        return ctx.out_of_budget(best.steps)

    def search(cut: float, beam: int | None, label: str):
        with ctx.progress.task(f"exact: {label}", total=m.L) as task:
            def progress(b: int, n: int) -> None:
                task.update(1, labels=n, incumbent=best.value, bound=best.bound)
            res = run_pass(m, bound, cut, beam=beam, stop=stop, progress=progress, improve=improve,
                           sorted_rows=dominance.applies(m))
        best.passes.append({"cut": cut, "beam": beam, "complete": res.complete, "labels": res.labels})
        return res

    # Under a cap with the suffix fronts (whose joins improve the incumbent during the pass) and an
    # incumbent near the root bound, the beam pass was measured to cost more than it spares (250
    # layers, fitted board, seeds 0 and 1, least of 3 interleaved: energy under both limits 895 ->
    # 787 and 307 -> 220 ms, latency under a cap 705 -> 348 and 544 -> 679 ms, the other cap cases
    # equal or faster; incumbents 0.02-0.13 % above the bound). A far incumbent keeps it: vit_b_16
    # at --max-cut-tensors 2 under a 3 W cap (284 layers, incumbent 14 % above the bound) took 53 s
    # without it, 38 M labels in its first exact pass. edp under a deadline keeps it too (seed 1:
    # 0.82 s with it, 2.58 s without).
    far = best.gap > BEAM_FAR_GAP
    beam_pays = (m.has_cap and (improve is None or far)) or (m.L >= BEAM_MIN_LAYERS and far)
    if not best.optimal and not out_of_budget() and best.gap > BEAM_SKIP_GAP and beam_pays:
        res = search(min(best.value, cutoff), BEAM_WIDTH, "beam pass")
        best.offer(res.path, res.value)
    for cut in (_cuts(root, min(ceiling, best.value, cutoff), m.metric) if not best.optimal else []):
        if out_of_budget():
            break
        res = search(cut, None, "exact pass")
        if not res.complete:
            break
        best.offer(res.path, res.value)
        if res.path is not None and res.value <= cut * (1 + 1e-9):
            best.bound = res.value       # the pass kept every plan within its cut: res is optimal
            break
        best.bound = max(best.bound, cut)  # nothing feasible within cut: the optimum exceeds it
        if np.isfinite(cutoff) and cut >= cutoff:
            raise Beaten
        if not np.isfinite(cut):
            break
    if best.path is None:
        if best.passes and best.passes[-1]["complete"] and not np.isfinite(best.passes[-1]["cut"]):
            _fail(m, True, True, t_min)
        budget = ctx.budget
        raise InfeasibleError(f"exact: the budget ({_budget_text(budget)}) ran out before a feasible plan was "
                              "found; none is proved infeasible (raise the budget)")
    if best.optimal:     # proved within the bounds' rounding slack: report it as the optimum
        best.bound = best.value
    return _plan(m, best.path, optimal=bool(best.optimal), lower_bound=float(best.bound), gap=float(best.gap),
                 passes=len(best.passes), labels=int(sum(p["labels"] for p in best.passes)),
                 hull_vertices=len(h.lam), root_bound=root, steps=best.steps, seconds=ctx.elapsed())


def _budget_text(budget) -> str:
    parts = []
    if budget.seconds is not None:
        parts.append(f"{budget.seconds:g} s")
    if budget.steps is not None:
        parts.append(f"{budget.steps} steps")
    return ", ".join(parts) or "none"


def lowest_average_power_mw(problem: PlanningProblem) -> float:
    """The lowest average power (energy / latency) of any legal plan, in mW."""
    return _lowest_power(build(problem, Objective("latency")))


@dataclass(frozen=True)
class ExactOptions:
    knobs: Literal["search", "fixed"] = field(
        default="search", metadata={"doc": "search: the optimum over the board's hardware knobs too (boards with "
                                           "knobs); fixed: the knobs the problem was costed at (--hardware)"})


def search_knobs(problem: PlanningProblem, objective: Objective, ctx: PlanContext | None = None) -> Plan:
    """``exact`` over the board's hardware knobs x the slicings (``knobs.search``); ``exact`` itself
    on a problem without knobs (or with one configuration)."""
    ctx = ctx or PlanContext()
    hw = problem.hardware
    if hw is None or hw.size <= 1:
        return exact(problem, objective, ctx=ctx)
    return knobs.search(problem, objective, ctx, _solve_under)


def _solve_under(m: Model, cutoff: float, ctx: PlanContext) -> Plan:
    """One configuration's solve for ``knobs.search``: knobs.Beaten once no plan is worth ``cutoff``."""
    return _solve(m, True, ctx, cutoff=cutoff)


def _run(problem: PlanningProblem, objective: Objective, ctx: PlanContext) -> Plan:
    if getattr(ctx.options, "knobs", "search") == "search":
        return search_knobs(problem, objective, ctx)
    return exact(problem, objective, ctx=ctx)


SPECS = (PlannerSpec("exact", "ours: Pareto-label DP with sound bounds; the proven optimum for latency, energy "
                     "or edp under a deadline and/or power cap (anytime with a budget: best plan and its gap)",
                     _run, ExactOptions, constraints=("deadline", "power_cap"), exact=True, hardware=True),)

__all__ = ["ExactOptions", "SPECS", "exact", "lowest_average_power_mw", "pareto_rows", "search_knobs"]
