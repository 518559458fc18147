"""``exact``'s exact completions for the last layers (``exact.suffix``): the reverse model, the
blocked join and the whole search with them, against brute force and the search without them."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetcc.planners import exact as exact_module
from hetcc.planners.exact import exact, suffix
from hetcc.planners.exact.model import build
from hetcc.planners.exact.pareto import INF
from hetcc.planners.metrics import Objective
from planner_cases import Brute, close, problems
from test_exact import check_against_brute, constrained, synthetic_problem

QUICK = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def edp_under_a_deadline(draw):
    problem = draw(problems(allow_infeasible=False))
    lat = Brute.of(problem).latency_ms
    if not lat.size:      # no legal plan at all (memory): exact must say so
        return problem, Objective("edp", deadline_ms=10.0), draw(st.booleans())
    deadline = draw(st.one_of(st.floats(lat.min(), lat.max()), st.sampled_from(sorted(lat))))
    return problem, Objective("edp", deadline_ms=deadline), draw(st.booleans())


@pytest.mark.slow
@QUICK
@given(case=st.one_of(edp_under_a_deadline(), constrained()), depth=st.integers(1, 4),
       group=st.sampled_from([1, 2, 32]))
def test_suffix_joins_keep_the_optimum(case, depth, group, monkeypatch):
    # on every model, however short, with fronts for the last `depth` layers and blocks of
    # `group` labels, for every metric, deadline and cap (exact joins for energy / edp under a
    # cap and edp under a deadline): the joins prune (and improve the cut) and must never lose
    # the optimum
    problem, objective, stream = case
    monkeypatch.setattr(exact_module, "SUFFIX_MIN_LAYERS", 0)
    monkeypatch.setattr(suffix, "DEPTH", depth)
    monkeypatch.setattr(suffix, "GROUP", group)
    check_against_brute(problem, objective, stream)


def test_the_reverse_model_costs_every_plan_the_same():
    p = synthetic_problem(12, seed=3)
    m = build(p, Objective("edp", deadline_ms=1e9))
    r = suffix.reverse(m)
    plan = [(0, 2, 0), (3, 3, 5), (4, 9, 11), (10, 11, 2)]
    mirrored = [(m.L - 1 - last, m.L - 1 - first, s) for first, last, s in reversed(plan)]
    assert np.allclose(m.totals(plan), r.totals(mirrored))
    # per-cell costs: a slice's entering cost is the mirrored slice's leaving cost
    assert np.array_equal(r.cT.enter, m.cT.leave[::-1]) and np.array_equal(r.cT.leave, m.cT.enter[::-1])


@pytest.mark.parametrize("group", [1, 3, 32])
def test_best_join_is_the_least_feasible_sum(group, monkeypatch):
    monkeypatch.setattr(suffix, "GROUP", group)
    rng = np.random.default_rng(group)
    p = synthetic_problem(4, seed=0)
    for objective in (Objective("edp", deadline_ms=10.0), Objective("energy", deadline_ms=10.0, power_cap_mw=900.0),
                      Objective("latency", power_cap_mw=900.0)):
        m = build(p, objective)
        T, Tr = rng.uniform(0, 6, 50), rng.uniform(0, 6, 70)
        X, Xr = rng.uniform(0, 6, 50) - m.k * T, rng.uniform(0, 6, 70) - m.k * Tr     # E >= 0
        Tr[::9] = INF
        Tt, Xt = T[:, None] + Tr, X[:, None] + Xr
        with np.errstate(invalid="ignore"):
            Et = Xt + m.k * Tt
            truth = np.where(m.feasible(Tt, Et) & np.isfinite(Tt), m.value(Tt, Et), INF).min(axis=1)
        assert np.allclose(suffix.best_join(m, T, X, Tr, Xr), truth)
        limit = float(np.quantile(truth[np.isfinite(truth)], 0.5))
        got = suffix.best_join(m, T, X, Tr, Xr, limit)
        within = truth <= limit
        assert np.allclose(got[within], truth[within])           # exact where it matters
        assert np.all(got[~within] > limit)                      # else only known to be over


@pytest.mark.slow
def test_at_scale_the_joins_find_the_same_optimum_with_fewer_labels(monkeypatch):
    p = synthetic_problem(160, seed=1)
    fast = exact(p, Objective("latency"))
    lean = exact(p, Objective("edp"))
    objective = Objective("edp", deadline_ms=(fast.latency_ms + lean.latency_ms) / 2)
    monkeypatch.setattr(exact_module, "SUFFIX_MIN_LAYERS", 0)
    joined = exact(p, objective)
    enumerated = exact(p, objective, stream=False)
    monkeypatch.setattr(exact_module, "SUFFIX_MIN_LAYERS", 10 ** 9)
    plain = exact(p, objective)
    assert joined.stats["optimal"] and plain.stats["optimal"] and enumerated.stats["optimal"]
    value = objective.value(plain.latency_ms, plain.energy_mj)
    assert close(objective.value(joined.latency_ms, joined.energy_mj), value)
    assert close(objective.value(enumerated.latency_ms, enumerated.energy_mj), value)
    assert joined.stats["labels"] < 0.8 * plain.stats["labels"], (joined.stats, plain.stats)


@pytest.mark.slow
@pytest.mark.parametrize("metric,with_deadline", [("energy", True), ("edp", True), ("latency", True),
                                                  ("latency", False)])
def test_at_scale_under_a_cap_the_joins_find_the_same_optimum(metric, with_deadline, monkeypatch):
    p = synthetic_problem(160, seed=1)
    fast = exact(p, Objective("latency"))
    lean = exact(p, Objective(metric))
    cap = (exact_module.lowest_average_power_mw(p) + fast.energy_mj / fast.latency_ms * 1000.0) / 2
    t_cap = exact(p, Objective("latency", power_cap_mw=cap)).latency_ms     # as benchmarks/planners.py
    deadline = (t_cap + max(lean.latency_ms, t_cap)) / 2 if with_deadline else None
    objective = Objective(metric, deadline_ms=deadline, power_cap_mw=cap)
    joined = exact(p, objective)
    monkeypatch.setattr(exact_module, "SUFFIX_MIN_LAYERS", 10 ** 9)
    plain = exact(p, objective)
    assert joined.stats["optimal"] and plain.stats["optimal"]
    assert close(objective.value(joined.latency_ms, joined.energy_mj),
                 objective.value(plain.latency_ms, plain.energy_mj))
