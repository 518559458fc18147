"""even:<N>: N consecutive slices on one state, balanced by latency."""
from __future__ import annotations

import numpy as np
import pytest

from hetcc.core.errors import UsageError
from hetcc.planners import Objective, PlanningProblem, plan
from planner_cases import make_problem


def flat_problem(n_layers: int) -> PlanningProblem:
    """Every layer 1 ms on state a, 2 ms on state b; 0.1 ms to enter or leave a slice."""
    lat = np.tile([1.0, 2.0], (n_layers, 1))
    return make_problem(lat, power=np.full_like(lat, 100.0), t_in=lat * 0 + 0.1, t_out=lat * 0 + 0.1,
                        devices=("a", "b"))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 8])
def test_even_split_balances_on_fastest_state(n):
    p = plan(flat_problem(8), Objective(), f"even:{n}")
    assert len(p.slices) == n
    assert {s.state for s in p.slices} == {0}
    sizes = [s.last - s.first + 1 for s in p.slices]
    assert max(sizes) - min(sizes) <= 1
    assert p.planner == f"even:{n}"


@pytest.mark.parametrize("name", ["even:0", "even:x", "even:9"])
def test_even_split_errors(name):
    with pytest.raises(UsageError):
        plan(flat_problem(8), Objective(), name)
