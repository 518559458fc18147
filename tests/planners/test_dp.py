"""MOSAIC's DP (``dp``) against brute force, on hand-built chains and on random problems."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from hetcc.errors import InfeasibleError, UsageError
from hetcc.planners.dp import dp
from hetcc.planners.problem import Objective, Slice
from hetcc.planners.synthetic import synthetic_problem
from planner_cases import Brute, close, make_problem, problems, uses_only

SETTINGS = settings(max_examples=120, deadline=None)


def test_prefers_one_slice_on_the_faster_device_despite_transfers(chain3):
    plan = dp(chain3.with_objective(Objective("latency")))
    assert plan.slices == (Slice(0, 2, 1),)          # 2 + 3 * 1 + 2 = 7 ms < 3 * 4 ms
    assert plan.latency_ms == pytest.approx(7.0)
    assert plan.planner == "dp"


def test_transfers_make_short_excursions_unprofitable():
    # layer 1 is much faster on device 1, but moving there and back costs 3 ms
    p = make_problem([[1.0, 2.0], [5.0, 3.0], [1.0, 2.0]], t_in=[[0, 1.5]] * 3, t_out=[[0, 1.5]] * 3)
    assert dp(p).slices == (Slice(0, 2, 0),)        # 7 ms; the excursion costs 1 + 6 + 1
    cheap = make_problem([[1.0, 2.0], [5.0, 1.0], [1.0, 2.0]], t_in=[[0, 0.5]] * 3, t_out=[[0, 0.5]] * 3)
    assert dp(cheap).slices == (Slice(0, 0, 0), Slice(1, 1, 1), Slice(2, 2, 0))


def test_memory_capacity_splits_slices():
    p = make_problem([[5.0, 1.0]] * 3, params=[60, 60, 60], capacity=[np.inf, 100])
    plan = dp(p)
    assert all(p.param_bytes[s.first:s.last + 1].sum() <= p.capacity_bytes[s.state] for s in plan.slices)
    assert plan.latency_ms == pytest.approx(3.0)
    assert len(plan.slices) == 3


def test_latency_uses_only_max_frequency_states_and_energy_all():
    # state 0 is a slower DVFS level of the device whose max-frequency state is 1; it is cheaper
    # in energy, and (artificially) faster: MOSAIC's latency DP still considers only state 1
    p = make_problem([[1.0, 2.0]], power=[[100.0, 1000.0]], devices=("gpu", "gpu"),
                     freqs=(300.0, 700.0), fmax=(False, True))
    assert dp(p.with_objective(Objective("latency"))).slices == (Slice(0, 0, 1),)
    assert dp(p.with_objective(Objective("energy"))).slices == (Slice(0, 0, 0),)


@pytest.mark.parametrize("objective", [Objective("edp"), Objective("latency", deadline_ms=5.0),
                                       Objective("energy", power_cap_mw=100.0)])
def test_refuses_what_it_cannot_optimise(chain3, objective):
    with pytest.raises(UsageError, match="use --planner exact"):
        dp(chain3.with_objective(objective))


def test_names_the_layer_no_device_can_run():
    p = make_problem([[1.0, 1.0], [1.0, 1.0]], legal=[[True, True], [False, False]], names=("conv0", "fc1"))
    with pytest.raises(InfeasibleError, match=r"layer 1 \(fc1\) is legal on no device"):
        dp(p)
    big = make_problem([[1.0, 1.0]], params=[500], capacity=[100, 200])
    with pytest.raises(InfeasibleError, match="layer 0 is legal on no device .*memory"):
        dp(big)


def test_synthetic_board_plan_is_legal_and_fast():
    p = synthetic_problem(60, seed=3)
    plan = dp(p)
    p.check_slices(plan.slices)
    fmax = set(np.flatnonzero(p.state_is_fmax))
    assert {s.state for s in plan.slices} <= fmax
    for d in p.devices:   # never slower than any single device at max frequency
        s = max((s for s in range(p.num_states) if p.state_device[s] == d), key=lambda s: p.state_freq_mhz[s])
        if p.slice_legal(0, p.num_layers - 1, s):
            assert plan.latency_ms <= p.slice_cost(0, p.num_layers - 1, s).latency_ms


@SETTINGS
@given(problems())
def test_latency_is_optimal_over_max_frequency_states(problem):
    problem = problem.with_objective(Objective("latency"))
    fmax = np.flatnonzero(problem.state_is_fmax)
    best = Brute.of(problem).best(problem.objective, uses_only(fmax))
    if best is None:
        with pytest.raises(InfeasibleError):
            dp(problem)
        return
    plan = dp(problem)
    assert all(s.state in fmax for s in plan.slices)
    assert close(plan.latency_ms, best)


@SETTINGS
@given(problems())
def test_energy_is_optimal_over_all_states(problem):
    problem = problem.with_objective(Objective("energy"))
    best = Brute.of(problem).best(problem.objective)
    if best is None:
        with pytest.raises(InfeasibleError):
            dp(problem)
        return
    assert close(dp(problem).energy_mj, best)
