"""MOSAIC's DP (``dp``) against brute force, on hand-built chains and on random problems."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hetcc.core.errors import InfeasibleError, UsageError
import importlib.util
import sys
from pathlib import Path

from hetcc.planners import Objective, Slice, plan
from hetcc.planners.dp import optimal
from hetcc.planners.exact.lagrange import tensor_dp
from planner_cases import Brute, close, make_problem, problems, uses_only

SETTINGS = settings(max_examples=120, deadline=None)


def _synthetic():
    """benchmarks/synthetic.py (not a package module): its synthetic_problem."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "synthetic.py"
    spec = importlib.util.spec_from_file_location("hetcc_bench_synthetic", path)
    if spec.name not in sys.modules:
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return sys.modules[spec.name].synthetic_problem


synthetic_problem = _synthetic()


def dp(problem, objective=None):
    """The dp planner through the registry (name, options, feasibility policy)."""
    return plan(problem, objective or Objective("latency"), "dp")


def test_prefers_one_slice_on_the_faster_device_despite_transfers(chain3):
    plan = dp(chain3, Objective("latency"))
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
    assert dp(p, Objective("latency")).slices == (Slice(0, 0, 1),)
    assert dp(p, Objective("energy")).slices == (Slice(0, 0, 0),)


def test_refuses_edp_and_leaves_limits_to_the_feasibility_policy(chain3):
    with pytest.raises(UsageError, match="does not optimise edp"):
        dp(chain3, Objective("edp"))
    with pytest.raises(InfeasibleError, match="misses the 5 ms deadline"):
        dp(chain3, Objective("latency", deadline_ms=5.0))


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
    fmax = set(np.flatnonzero(p.states.is_fmax))
    assert {s.state for s in plan.slices} <= fmax
    for d in p.devices:   # never slower than any single device at max frequency
        s = max((s for s in range(p.num_states) if p.states.device[s] == d), key=lambda s: p.states.freq_mhz[s])
        if p.slice_legal(0, p.num_layers - 1, s):
            assert plan.latency_ms <= p.slice_cost(0, p.num_layers - 1, s).latency_ms


@pytest.mark.slow
@SETTINGS
@given(problems())
def test_latency_is_optimal_over_max_frequency_states(problem):
    fmax = np.flatnonzero(problem.states.is_fmax)
    best = Brute.of(problem).best(Objective("latency"), uses_only(fmax))
    if best is None:
        with pytest.raises(InfeasibleError):
            dp(problem)
        return
    plan = dp(problem)
    assert all(s.state in fmax for s in plan.slices)
    assert close(plan.latency_ms, best)


@pytest.mark.slow
@SETTINGS
@given(problems())
def test_energy_is_optimal_over_all_states(problem):
    best = Brute.of(problem).best(Objective("energy"))
    if best is None:
        with pytest.raises(InfeasibleError):
            dp(problem, Objective("energy"))
        return
    assert close(dp(problem, Objective("energy")).energy_mj, best)


@pytest.mark.slow
@SETTINGS
@given(problems())
def test_device_power_only_energy_is_optimal_without_the_base_power_and_priced_with_it(problem):
    # `dp base_power=false` (MOSAIC's estimator, Eq. 4): the plan minimises energy with the board's
    # base power left out; its reported energy is the real one, base power included
    problem = problem.replace(base_power_mw=500.0)
    blind = problem.replace(base_power_mw=0.0)
    best = Brute.of(blind).best(Objective("energy"))
    if best is None:
        return
    got = plan(problem, Objective("energy"), "dp", options={"base_power": False})
    assert close(blind.evaluate(got.slices).energy_mj, best)
    assert close(got.energy_mj, problem.evaluate(got.slices).energy_mj)
    assert got.energy_mj >= dp(problem, Objective("energy")).energy_mj * (1 - 1e-9)   # never below the optimum


def scalar_dp(cost):
    """MOSAIC's Eq. 9 on a dense [l, k, s] cost tensor, as dp ran it before its O(L S) form (now
    ``exact``'s ``tensor_dp``): (optimal total, [(first, last, s)]) or (inf, []); ties to the
    smallest k, then s."""
    path = tensor_dp(cost)
    return (path_sum(cost, path), path) if path else (np.inf, [])


def path_sum(cost, path):
    """Total of ``cost`` ([l, k, s]) along a path from ``scalar_dp``."""
    return float(sum(cost[last + 1, first, s] for first, last, s in path))


def _dense(problem, metric):
    """The dense (L+1)^2 S formulation dp used to run (SliceTables + scalar_dp): the reference.
    Returns (cost tensor, states, optimal total, path)."""
    from hetcc.planners.dp import SliceTables, cell_costs

    states = np.flatnonzero(problem.states.is_fmax) if metric == "latency" else np.arange(problem.num_states)
    tables = SliceTables(problem, cell_costs(problem), states)
    cost = tables.latency() if metric == "latency" else tables.energy()
    total, path = scalar_dp(cost)
    return cost, states, total, path


def _same_as_dense(problem, metric, exact_ties):
    """The linear-memory dp finds the dense optimum; the same slices where sums are exact (integer
    costs), else the same slices up to ties within rounding (both paths optimal by the dense costs)."""
    cost, states, total, path = _dense(problem, metric)
    if not path:
        with pytest.raises(InfeasibleError):
            optimal(problem, metric)
        return
    got = optimal(problem, metric)
    dense = tuple(Slice(first, last, int(states[s])) for first, last, s in path)
    value = got.latency_ms if metric == "latency" else got.energy_mj
    assert close(value, total)
    if exact_ties or got.slices == dense:
        assert got.slices == dense
        return
    column = {int(st): j for j, st in enumerate(states)}
    mine = [(s.first, s.last, column[s.state]) for s in got.slices]
    assert path_sum(cost, mine) == pytest.approx(total, rel=1e-12, abs=1e-12)


@pytest.mark.slow
@SETTINGS
@given(problems(max_layers=9, max_states=5), st.sampled_from(["latency", "energy"]))
def test_linear_memory_dp_equals_the_dense_one(problem, metric):
    _same_as_dense(problem, metric, exact_ties=False)


def test_linear_memory_dp_breaks_ties_like_the_dense_one():
    # integer costs sum exactly: many exact ties (equal layers, two identical devices)
    rng = np.random.default_rng(5)
    for _ in range(60):
        L, S = int(rng.integers(1, 12)), int(rng.integers(1, 4))
        lat = rng.integers(1, 4, size=(L, S)).astype(float)
        p = make_problem(lat.tolist(), legal=(rng.random((L, S)) > 0.2).tolist(),
                         params=rng.integers(0, 50, size=L).tolist(),
                         capacity=rng.choice([np.inf, 60.0, 120.0], size=S).tolist(),
                         t_in=rng.integers(0, 3, size=(L, S)).astype(float).tolist(),
                         t_out=rng.integers(0, 3, size=(L, S)).astype(float).tolist())
        _same_as_dense(p, "latency", exact_ties=True)
        _same_as_dense(p, "energy", exact_ties=True)


@pytest.mark.slow
def test_dp_memory_is_linear_in_layers():
    """5k layers x 8 states: the dense tables would take (L+1)^2 S = 2e8 cells (1.6 GB per tensor)."""
    import tracemalloc

    L, S = 5_000, 8
    rng = np.random.default_rng(1)
    p = make_problem(rng.uniform(1, 2, size=(L, S)).tolist(), t_in=rng.uniform(0, 1, size=(L, S)).tolist(),
                     t_out=rng.uniform(0, 1, size=(L, S)).tolist())
    tracemalloc.start()
    plan = optimal(p, "energy")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert plan.slices[0].first == 0 and plan.slices[-1].last == L - 1
    assert peak < 200 * L * S          # a few [L, S] arrays, not [L, L, S]
