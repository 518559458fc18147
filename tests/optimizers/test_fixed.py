"""even:<N>: N consecutive slices on one state, balanced by latency."""
from __future__ import annotations

import numpy as np
import pytest

from hetcc.errors import UsageError
from hetcc.optimizers import plan
from hetcc.optimizers.problem import Objective, PlanningProblem


def flat_problem(n_layers: int, n_states: int = 2) -> PlanningProblem:
    lat = np.tile(np.array([[1.0], [2.0]]).T, (n_layers, 1))[:, :n_states]
    z = np.zeros_like(lat)
    return PlanningProblem(latency_ms=lat, power_mw=z + 100, transfer_in_ms=z + 0.1, transfer_out_ms=z + 0.1,
                           transfer_in_mj=z, transfer_out_mj=z, legal=np.ones_like(lat, dtype=bool),
                           param_bytes=np.zeros(n_layers, dtype=np.int64), capacity_bytes=np.full(n_states, np.inf),
                           base_power_mw=0.0, objective=Objective("latency"),
                           state_device=("a", "b")[:n_states], state_freq_mhz=(1.0, 1.0)[:n_states],
                           state_is_fmax=np.ones(n_states, dtype=bool))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 8])
def test_even_split_balances_on_fastest_state(n):
    p = plan(flat_problem(8), f"even:{n}")
    assert len(p.slices) == n
    assert {s.state for s in p.slices} == {0}
    sizes = [s.last - s.first + 1 for s in p.slices]
    assert max(sizes) - min(sizes) <= 1
    assert p.planner == f"even:{n}"


@pytest.mark.parametrize("name", ["even:0", "even:x", "even:9"])
def test_even_split_errors(name):
    with pytest.raises(UsageError):
        plan(flat_problem(8), name)
