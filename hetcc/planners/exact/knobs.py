"""``exact`` with ``knobs=search``: the proven optimum over a board's hardware knobs x the slicings.

A knob configuration's tables are a PlanningProblem of their own (``HardwareSpace.apply``);
``exact`` solves one in tens to hundreds of milliseconds, and a board has a few hundred
configurations (``jetson-tx2``: 165). ``search`` solves only those that can still win:

* every configuration is bounded at once (``lower_bounds``): for weights (a, b) on (E, T) every
  plan costs at least the least a*E + b*T over all plans, one dynamic program over the layers (a
  slice is open on a state while it runs, as in ``lagrange.forward``), here for every
  configuration and every weight in one vectorised pass; capacities are ignored (fewer limits, a
  lower bound still);
* the best plan of one slice over every configuration (``single_state``: EvoSh's one-device
  hardware space) is the first incumbent;
* configurations that share their base power are solved as one problem over their distinct states
  (``union``: a core count changes only its cluster's states), in order of their bound, with the
  incumbent as a cutoff (the solve stops with ``Beaten`` once it proves nothing better); when the
  union's plan mixes configurations, they are solved one by one the same way.

Ties go to the more capable configuration (``HardwareSpace.capability``).

For a plan within the limits (T <= D, X = E - k*T <= tol, k the cap in mJ per ms):

* latency: T >= min(T + lam*X) - lam*tol for lam >= 0, i.e. weights (lam, 1 - lam*k);
* energy: E >= min(E + nu*X) - nu*tol (weights (1 + nu, -nu*k)) and E >= min(E + mu*T) - mu*D;
* edp: the product of the two (both are non-negative).

The best weight of each configuration is taken from a fixed grid: a bound, not the LP optimum
(``bounds`` has that, per search point, inside a solve). A configuration whose latency bound
passes the deadline bounds at +inf.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from hetcc.core.errors import InfeasibleError, UsageError
from ..context import PlanContext
from ..dp import CellCosts, cell_costs
from ..metrics import RTOL, Objective
from ..problem import Plan, PlanningProblem, Slice, StateTable
from .incumbent import lowest_average_power_mw
from .lagrange import tensor_dp
from .model import Model, build, ms_text, mw_text
from .pareto import INF

#: ``search(..., solve)``: exact on one model under a cutoff (raises Beaten when none is worth it)
Solve = Callable[[Model, float, Any], Plan]
MAX_KNOB_CONFIGS = 4096   # knobs=search enumerates at most this many hardware configurations
UNION_MAX_STATES = 4      # a group of configurations is solved as one problem when it has fewer than this
                          # many times one configuration's states (jetson-tx2: 85 for 15 core counts, 37 each)
TIE_RTOL = 1e-9           # plans of two configurations this close are a tie (the more capable one wins)

#: (1 - g) / g for the latency weights g = lam * k: the slope of the hull's edge where it meets the
#: cap line, relative to the cap, on a geometric grid; g slightly above 1 covers the hull's rising part
SLOPES = 2.0 ** np.arange(-12, 12.5, 1.0)
RISING = 1.0 + 2.0 ** -np.arange(1.0, 8.0)
#: weights of T for the energy bound under a deadline (mJ per ms, relative to the typical power)
POWERS = 2.0 ** np.arange(-10, 10.5, 1.0)


def _weights(objective: Objective, typical_mw: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]:
    """Columns (a, b, lam, mu, what): the bound is a*E + b*T minimised, less lam*tol and mu*D;
    ``what`` says per column whether it bounds T ('t') or E ('e')."""
    k = float(objective.power_cap_mw or 0.0) / 1000.0
    cols: list[tuple[float, float, float, float, str]] = [(0.0, 1.0, 0.0, 0.0, "t")]
    if k > 0:
        g = np.concatenate([1.0 / (1.0 + SLOPES), RISING])
        cols += [(gi / k, 1.0 - gi, gi / k, 0.0, "t") for gi in g]
    if objective.metric != "latency":
        cols.append((1.0, 0.0, 0.0, 0.0, "e"))
        if k > 0:
            cols += [(1.0 + nu, -nu * k, nu, 0.0, "e") for nu in 1.0 / SLOPES]
        if objective.deadline_ms is not None:
            cols += [(1.0, mu, 0.0, mu, "e") for mu in POWERS * typical_mw / 1000.0]
    a, b, lam, mu, what = zip(*cols)
    return np.array(a), np.array(b), np.array(lam), np.array(mu), "".join(what)


def _energy_bound(cells: CellCosts) -> float:
    """An upper bound on any plan's energy (as ``model.build`` takes for the cap's tolerance)."""
    return sum(float(np.max(np.where(np.isfinite(x), x, -INF), axis=1).clip(min=0).sum())
               for x in (cells.layer_mj, cells.in_mj, cells.out_mj))


def lower_bounds(cells: Sequence[CellCosts], objective: Objective) -> np.ndarray:
    """[C] lower bounds of the objective's value over the plans within its limits, one per
    configuration's cell costs (+inf: no plan of that configuration meets the limits)."""
    C = len(cells)
    if C == 0:
        return np.zeros(0)

    def stack(name: str) -> np.ndarray:       # [L, C, S]
        return np.ascontiguousarray(np.stack([getattr(c, name) for c in cells], axis=1))

    lay_t, in_t, out_t = stack("layer_ms"), stack("in_ms"), stack("out_ms")
    lay_e, in_e, out_e = stack("layer_mj"), stack("in_mj"), stack("out_mj")
    with np.errstate(invalid="ignore", divide="ignore"):
        typical = float(np.nanmedian(np.where(np.isfinite(lay_t) & (lay_t > 0), lay_e / lay_t, np.nan)) * 1000.0)
    if not np.isfinite(typical) or typical <= 0:
        typical = 1000.0
    a, b, lam, mu, what = _weights(objective, typical)

    def parts(e: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ok = np.isfinite(e) & np.isfinite(t)       # cells hold +inf in both units where illegal
        return np.where(ok, e, 0.0), np.where(ok, t, 0.0), np.where(ok, 0.0, INF)[..., None]

    cells_w = [parts(lay_e, lay_t), parts(in_e, in_t), parts(out_e, out_t)]
    L = lay_t.shape[0]

    def w(which: int, i: int) -> np.ndarray:     # [C, S, K]: a*E + b*T of layer i's cells
        e, t, pen = (x[i] for x in cells_w[which])
        return e[..., None] * a + t[..., None] * b + pen

    W = np.zeros((C, a.size))
    opn = np.full((C, lay_t.shape[2], a.size), INF)
    with np.errstate(invalid="ignore", over="ignore"):
        for i in range(L):
            opn = np.minimum(opn, W[:, None, :] + w(1, i)) + w(0, i)
            W = (opn + w(2, i)).min(axis=1)
        tol = np.array([RTOL * max(1.0, _energy_bound(c)) for c in cells])
        D = float(objective.deadline_ms) if objective.deadline_ms is not None else 0.0
        raw = np.where(np.isfinite(W), W - tol[:, None] * lam - mu * D, INF)
        raw = np.where(np.isnan(raw), INF, raw)
        t_cols = np.array([x == "t" for x in what])
        lb_t = raw[:, t_cols].max(axis=1)
        lb_e = raw[:, ~t_cols].max(axis=1) if (~t_cols).any() else np.zeros(C)
    lb_t = np.maximum(lb_t, 0.0)
    lb_e = np.maximum(lb_e, 0.0)
    if objective.deadline_ms is not None:
        lb_t = np.where(lb_t > objective.deadline_ms * (1 + RTOL), INF, lb_t)
    if objective.metric == "latency":
        out = lb_t
    elif objective.metric == "energy":
        out = np.where(np.isfinite(lb_t), lb_e, INF)
    else:
        out = np.where(np.isfinite(lb_t) & np.isfinite(lb_e), lb_t * lb_e, INF)
    return np.where(np.isnan(out), INF, out)


def single_state(cells: Sequence[CellCosts], objective: Objective) -> tuple[np.ndarray, np.ndarray]:
    """[C, S] value of running the whole model as one slice on each state of each configuration
    (+inf where illegal or outside the limits; capacities are not checked here) and [C, S] bool
    feasibility: EvoSh's hardware space with one device, the knob search's first incumbents."""
    T = np.stack([c.in_ms[0] + c.layer_ms.sum(axis=0) + c.out_ms[-1] for c in cells])
    E = np.stack([c.in_mj[0] + c.layer_mj.sum(axis=0) + c.out_mj[-1] for c in cells])
    ok = np.isfinite(T) & np.isfinite(E)
    value = np.full(T.shape, INF)
    for c, s in zip(*np.nonzero(ok)):
        t, e = float(T[c, s]), float(E[c, s])
        if objective.feasible(t, e):
            value[c, s] = objective.key(t, e)
    return value, np.isfinite(value)


def union(problems: Sequence[PlanningProblem]) -> tuple[PlanningProblem, list[dict[int, int]]]:
    """One problem whose states are the distinct states (columns of every table) of ``problems``,
    configurations of one board that share their base power: a plan of any of them is a plan of
    the union at the same cost, so the union's optimum bounds theirs, and is theirs when every
    column it uses belongs to one configuration. Returns the union and, per problem, its map
    union column -> own state (a state shared by several configurations is one column)."""
    first = problems[0]
    cols: dict[bytes, int] = {}
    picks: list[tuple[int, int]] = []
    maps: list[dict[int, int]] = []
    for i, q in enumerate(problems):
        own: dict[int, int] = {}
        arrays = (q.latency_ms, q.power_mw, q.transfer_in_ms, q.transfer_out_ms, q.transfer_in_mj, q.transfer_out_mj)
        for s in range(q.num_states):
            key = b"".join(np.ascontiguousarray(a[:, s]).tobytes() for a in arrays) + q.legal[:, s].tobytes() + \
                np.array([q.capacity_bytes[s], q.states.freq_mhz[s],
                          0.0 if q.activation_factor is None else q.activation_factor[s]]).tobytes() + \
                f"{q.states.device[s]}|{q.states.kind[s]}|{bool(q.states.is_fmax[s])}".encode()
            if key not in cols:
                cols[key] = len(picks)
                picks.append((i, s))
            own.setdefault(cols[key], s)
        maps.append(own)

    def gather(name: str) -> np.ndarray:
        return np.stack([getattr(problems[i], name)[:, s] for i, s in picks], axis=1)

    st = [problems[i].states for i, _ in picks]
    s_of = [s for _, s in picks]
    states = StateTable(device=tuple(t.device[s] for t, s in zip(st, s_of)), kind=tuple(t.kind[s] for t, s in zip(st, s_of)),
                        freq_mhz=np.array([t.freq_mhz[s] for t, s in zip(st, s_of)]),
                        is_fmax=np.array([t.is_fmax[s] for t, s in zip(st, s_of)]))
    factor = None if first.activation_factor is None else np.array(
        [problems[i].activation_factor[s] for i, s in picks])
    out = first.replace(
        **{k: gather(k) for k in ("latency_ms", "power_mw", "transfer_in_ms", "transfer_out_ms", "transfer_in_mj",
                                  "transfer_out_mj", "legal")},
        capacity_bytes=np.array([problems[i].capacity_bytes[s] for i, s in picks]), states=states,
        activation_factor=factor, communication=None, hardware=None, hardware_config=None)
    return out, maps


class Beaten(Exception):
    """A solve proved that no plan is worth its cutoff or less: another hardware configuration's
    plan is at least as good."""


def search(problem: PlanningProblem, objective: Objective, ctx: PlanContext, solve: Solve) -> Plan:
    """``exact`` over the board's hardware knobs x the slicings: the proven optimum over every
    knob configuration of ``problem.hardware`` (DVFS stays per slice).

    Every configuration is bounded first (``lower_bounds``, all at once). Configurations
    that share their base power form a group, solved as one problem over their distinct states
    (``union``: knobs that touch other devices leave the states a plan uses unchanged); when
    the union's optimum mixes states of different configurations, its members are solved one by
    one. Groups and members go in order of their bound, each solve with the best plan so far as a
    cutoff, and one whose bound cannot beat it is never solved. Ties go to the more capable
    configuration (``HardwareSpace.capability``). ``solve(model, cutoff, ctx)``: ``exact`` on one
    model, raising Beaten once it proves no plan is worth ``cutoff`` or less."""
    hw = problem.hardware
    if hw.size > MAX_KNOB_CONFIGS:
        raise UsageError(f"exact: the board has {hw.size} hardware configurations, over the {MAX_KNOB_CONFIGS} that "
                         "knobs=search enumerates; use --planner-option knobs=fixed (with --hardware)")
    own = hw.validate(problem.hardware_config or {})
    configs = list(hw.configs())
    problems = [problem if c == own else hw.apply(problem, c) for c in configs]
    runs = [i for i, q in enumerate(problems) if np.asarray(q.legal).any(axis=1).all()]
    lb = np.full(len(configs), INF)
    cells = [cell_costs(problems[i]) for i in runs]
    lb[runs] = lower_bounds(cells, objective)
    key = [hw.capability(c) for c in configs]
    s = _Search(objective, ctx, key, solve)
    one, _ = single_state(cells, objective)        # the best plan of one slice: the first incumbent
    del cells
    for r, st in sorted(zip(*np.nonzero(np.isfinite(one))), key=lambda x: (one[x], _neg(key[runs[x[0]]])))[:1]:
        try:
            first = problems[runs[r]].evaluate([Slice(0, problem.num_layers - 1, int(st))], stats={"single_slice": True})
        except ValueError:      # over the state's capacity
            continue
        s.offer(first, runs[r], -INF)
    groups: dict[float, list[int]] = {}
    for i in sorted((i for i in runs if np.isfinite(lb[i])), key=lambda i: (lb[i], _neg(key[i]))):
        groups.setdefault(float(problems[i].base_power_mw), []).append(i)
    for members in sorted(groups.values(), key=lambda g: (lb[g[0]], _neg(max(key[i] for i in g)))):
        if s.out_of_budget():
            s.open_bounds += [float(lb[i]) for i in members]
            continue
        if len(members) > 1 and s.worth(float(lb[members[0]]), max(key[i] for i in members)):
            members = s.union([problems[i] for i in members], members)
        for i in members:
            if s.out_of_budget():
                s.open_bounds.append(float(lb[i]))
            elif s.worth(float(lb[i]), key[i]):
                s.solve(problems[i], i, float(lb[i]))
    if s.plan is None:
        _fail_knobs(problem, objective, hw, configs, ctx, s.out_of_budget())
    return s.result(len(configs))


class _Steps:
    """``ctx`` for one configuration's solve: the steps of those before it count against the budget."""

    def __init__(self, ctx: PlanContext, before: int) -> None:
        self.ctx, self.before = ctx, before
        self.budget, self.progress, self.logger = ctx.budget, ctx.progress, ctx.logger

    def out_of_budget(self, steps: int = 0) -> bool:
        return self.ctx.out_of_budget(self.before + steps)

    def elapsed(self) -> float:
        return self.ctx.elapsed()


def _beats(value: float, key: tuple, best_value: float, best_key: tuple) -> bool:
    """A plan worth ``value`` on a configuration of capability ``key`` replaces the best so far:
    it is better, or as good (within TIE_RTOL) on more capable hardware."""
    tol = TIE_RTOL * max(1.0, abs(best_value)) if np.isfinite(best_value) else 0.0
    return value < best_value - tol or (value <= best_value + tol and key > best_key)


class _Search:
    """The state of ``search``: the best plan so far, its value and capability, counts."""

    def __init__(self, objective: Objective, ctx: PlanContext, key: list, solve: Solve) -> None:
        self.objective, self.ctx, self.key, self._solve = objective, ctx, key, solve
        self.value, self.plan, self.best_key = INF, None, None
        self.steps = self.solved = self.cut_off = 0
        self.open_bounds: list[float] = []

    def out_of_budget(self) -> bool:
        return self.ctx.out_of_budget(self.steps)

    def cutoff(self, key: tuple) -> float:
        """The value a configuration of capability ``key`` must reach to replace the best."""
        if self.plan is None:
            return INF
        tol = TIE_RTOL * max(1.0, abs(self.value))
        return self.value + tol if key > self.best_key else self.value - tol

    def worth(self, bound: float, key: tuple) -> bool:
        return not bound * (1 - 1e-12) > self.cutoff(key)

    def _run(self, q: PlanningProblem, key: tuple) -> Plan | None:
        """``q`` solved under the cutoff for ``key``; None when cut off or infeasible."""
        try:
            plan = self._solve(build(q, self.objective), self.cutoff(key), _Steps(self.ctx, self.steps))
        except Beaten:
            self.cut_off += 1
            return None
        except InfeasibleError:
            return None
        self.solved += 1
        self.steps += int(plan.stats.get("steps", 0))
        return plan

    def offer(self, plan: Plan, i: int, bound: float) -> None:
        if not plan.stats.get("optimal", True) and np.isfinite(bound):
            self.open_bounds.append(float(plan.stats.get("lower_bound", bound)))
        value = float(self.objective.key(plan.latency_ms, plan.energy_mj))
        if self.plan is None or _beats(value, self.key[i], self.value, self.best_key):
            self.value, self.plan, self.best_key = value, plan, self.key[i]

    def solve(self, q: PlanningProblem, i: int, bound: float) -> None:
        plan = self._run(q, self.key[i])
        if plan is None:
            if self.out_of_budget():
                self.open_bounds.append(bound)
            return
        self.offer(plan, i, bound)

    def union(self, problems: list, members: list[int]) -> list[int]:
        """The group ``members`` solved as one problem (``knobs.union``); the members still to
        solve one by one: none when the union's plan runs on one of them (the most capable one it
        runs on takes it), all when it mixes them (or the budget ran out)."""
        u, maps = union(problems)
        if u.num_states >= UNION_MAX_STATES * problems[0].num_states:
            return members
        plan = self._run(u, max(self.key[i] for i in members))
        if plan is None:
            return [] if not self.out_of_budget() else members
        cols = {sl.state for sl in plan.slices}
        fits = [j for j, m in enumerate(maps) if cols <= set(m)]
        if not fits:
            return members
        j = max(fits, key=lambda j: self.key[members[j]])
        own = problems[j].evaluate([Slice(sl.first, sl.last, maps[j][sl.state]) for sl in plan.slices])
        self.offer(own.replace(stats=plan.stats), members[j], -INF)
        return [] if plan.stats.get("optimal", True) else members

    def result(self, n: int) -> Plan:
        best = self.value
        bound = min([best, *self.open_bounds])
        optimal = bound >= best - TIE_RTOL * max(1.0, abs(best))
        gap = 0.0 if optimal else max(0.0, best - bound) / max(abs(best), 1e-300)
        stats = dict(self.plan.stats, optimal=bool(optimal), lower_bound=float(best if optimal else bound),
                     gap=float(gap), steps=self.steps, seconds=self.ctx.elapsed(),
                     knobs={"configurations": n, "solved": self.solved, "cut_off": self.cut_off})
        return self.plan.replace(stats=stats)


def _neg(key: tuple) -> tuple:
    return tuple(-x for x in key)


def _fail_knobs(problem: PlanningProblem, objective: Objective, hw, configs: list, ctx: PlanContext,
                spent: bool) -> None:
    """No configuration has a plan within the limits (or the budget was ``spent`` first): the
    one-line error of the most capable configuration for a deadline, of the least hungry for the cap."""
    if spent:
        raise InfeasibleError(f"exact: the budget ({ctx.budget.describe()}) ran out before a feasible plan was "
                              "found on any hardware configuration; none is proved infeasible (raise the budget)")
    n = len(configs)
    runs = [c for c in configs if np.asarray(hw.apply(problem, c).legal).any(axis=1).all()]
    if not runs:
        raise InfeasibleError(f"no hardware configuration runs every layer ({n} tried); no plan can run the model")
    top = hw.apply(problem, max(runs, key=hw.capability))
    fastest = build(top, Objective("latency"))
    t_min = fastest.totals(tensor_dp(fastest.T3))[0]
    if objective.deadline_ms is not None and t_min > objective.deadline_ms * (1 + 1e-9):
        raise InfeasibleError(f"no plan meets the {ms_text(objective.deadline_ms)} ms deadline on any of the {n} hardware "
                              f"configurations: the fastest reachable latency is {ms_text(t_min)} ms; relax --deadline")
    if objective.power_cap_mw is not None:
        p_min = min(lowest_average_power_mw(build(hw.apply(problem, c), Objective("latency"))) for c in runs)
        if p_min > objective.power_cap_mw * (1 + 1e-9):
            raise InfeasibleError(f"no plan meets the {mw_text(objective.power_cap_mw)} mW power cap on any of the {n} "
                                  f"hardware configurations: the lowest reachable average power is {mw_text(p_min)} mW; "
                                  "relax --power-cap")
    if objective.deadline_ms is not None and objective.power_cap_mw is not None:
        raise InfeasibleError(f"no plan meets both the {ms_text(objective.deadline_ms)} ms deadline and the "
                              f"{mw_text(objective.power_cap_mw)} mW power cap on any of the {n} hardware "
                              "configurations; relax --deadline or --power-cap")
    raise InfeasibleError(f"no plan meets the limits on any of the {n} hardware configurations; "
                          "relax --deadline or --power-cap")


__all__ = ["Beaten", "MAX_KNOB_CONFIGS", "Solve", "TIE_RTOL", "UNION_MAX_STATES", "lower_bounds", "search", "single_state",
           "union"]

