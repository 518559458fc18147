"""--allow-infeasible always writes a plan (issue 33, class 11): when no plan meets the limits,
every planner that would refuse returns the plan closest to meeting them, marked infeasible with
the amounts, checked against brute force on small random problems."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings

from hetcc.core.errors import InfeasibleError
from hetcc.planners import Objective, registry
from hetcc.planners.baselines import enumerate_plans
from planner_cases import problems

PLANNERS = ("exact", "brute", "auto")


def _legal(problem) -> list[tuple[float, float]]:
    return [(t, e) for _, t, e in enumerate_plans(problem)]


@settings(max_examples=25, deadline=None)
@given(problems(max_layers=5, max_states=3, allow_infeasible=False))
@pytest.mark.parametrize("planner", PLANNERS)
def test_an_unreachable_deadline_writes_the_fastest_plan(planner, problem):
    plans = _legal(problem)
    if not plans:                       # no legal plan at all: nothing to write, refused either way
        return
    fastest = min(t for t, _ in plans)
    obj = Objective("energy", deadline_ms=fastest / 2 if fastest > 0 else -1.0)
    with pytest.raises(InfeasibleError):
        registry.run(problem, obj, planner)
    plan = registry.run(problem, obj, planner, allow_infeasible=True)
    assert not plan.feasible and plan.violations and "deadline" in plan.violations[0]
    assert plan.latency_ms == pytest.approx(fastest, rel=1e-9, abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(problems(max_layers=5, max_states=3, allow_infeasible=False))
@pytest.mark.parametrize("planner", PLANNERS)
def test_an_unreachable_power_cap_writes_a_plan_of_the_lowest_average_power(planner, problem):
    plans = [(t, e) for t, e in _legal(problem) if t > 0]
    if not plans:
        return
    lowest = min(1000.0 * e / t for t, e in plans)
    if not math.isfinite(lowest) or lowest <= 0:
        return
    obj = Objective("latency", power_cap_mw=lowest / 2)
    plan = registry.run(problem, obj, planner, allow_infeasible=True)
    assert not plan.feasible and "power cap" in plan.violations[0]
    assert 1000.0 * plan.energy_mj / plan.latency_ms == pytest.approx(lowest, rel=1e-6)


def test_the_closest_plan_says_why():
    from planner_cases import make_problem

    problem = make_problem(np.array([[2.0, 1.0], [2.0, 1.0]]))
    plan = registry.run(problem, Objective("energy", deadline_ms=0.5), "exact", allow_infeasible=True)
    assert plan.latency_ms == 2.0 and not plan.feasible
    assert plan.stats["closest"].startswith("the fastest plan") and "0.5" in plan.stats["closest"]
