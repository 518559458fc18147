"""``random``: always a legal plan, never better than the optimum, reproducible from the seed."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcc.core.errors import InfeasibleError
from hetcc.planners import Budget, Objective, PlanContext, plan
from planner_cases import Brute, make_problem, problems

OBJECTIVES = [Objective("latency"), Objective("energy"), Objective("edp"),
              Objective("energy", deadline_ms=15.0), Objective("latency", power_cap_mw=1500.0)]


@settings(max_examples=40, deadline=None)
@given(problems(max_layers=5, max_states=3), st.sampled_from(OBJECTIVES), st.integers(0, 1000))
def test_never_better_than_the_optimum_and_always_legal(problem, objective, seed):
    brute = Brute.of(problem)
    try:
        result = plan(problem, objective, "random", {"samples": 30}, PlanContext(seed), allow_infeasible=True)
    except InfeasibleError:
        assert len(brute) == 0          # only when no legal plan exists
        return
    problem.check_slices(result.slices)                       # legal, consecutive, complete
    best = brute.best(objective)
    if result.feasible:
        assert best is not None
        assert objective.key(result.latency_ms, result.energy_mj) >= best - 1e-9 * max(1.0, abs(best))


def test_draws_are_uniform_over_legal_plans():
    problem = make_problem(np.ones((2, 2)))           # 2 * 3 = 6 legal plans
    seen = {}
    for seed in range(600):
        r = plan(problem, Objective(), "random", {"samples": 1}, PlanContext(seed))
        seen[r.slices] = seen.get(r.slices, 0) + 1
    assert len(seen) == 6
    assert max(seen.values()) / min(seen.values()) < 2.0


def test_same_seed_same_plan_and_budget_stops_early():
    problem = make_problem(np.random.default_rng(0).uniform(1, 5, (8, 3)))
    a = plan(problem, Objective(), "random", {"samples": 20}, PlanContext(5))
    b = plan(problem, Objective(), "random", {"samples": 20}, PlanContext(5))
    assert a.slices == b.slices
    short = plan(problem, Objective(), "random", {"samples": 500}, PlanContext(5, budget=Budget(steps=3)))
    assert short.stats["samples"] == 3


def test_no_legal_plan_is_infeasible():
    with pytest.raises(InfeasibleError, match="no legal plan"):
        plan(make_problem(np.ones((2, 2)), legal=[[True, True], [False, False]]), Objective(), "random")
