"""Device capacity counted as parameters + activations (a state's ``activation_factor``): every
planner keeps to ``PlanningProblem.slice_fits`` (the one definition), the exact ones find brute
force's optimum, and the layers pass fills what it needs (the dwconv FLOPs, activation bytes)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcc.core.errors import InfeasibleError
from hetcc.planners import Objective, PlanContext, StateTable, plan
from hetcc.planners.problem import capacity_charge
from planner_cases import Brute, close, make_problem, problems

OBJECTIVES = [Objective("latency"), Objective("energy"), Objective("edp"),
              Objective("energy", deadline_ms=15.0), Objective("latency", power_cap_mw=1500.0)]


@st.composite
def counting_problems(draw):
    """Structured ``problems()`` (a device at f_max is its fastest state, what MOSAIC's latency DP
    assumes) whose devices count activations (factor 0, 0.5, 1 or 2.75 per device) against
    capacities drawn from the charges, so activations decide which slices fit."""
    p = draw(problems(max_layers=6, max_states=4, structured=True, allow_infeasible=False))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    L = p.num_layers
    acts = rng.integers(0, 300, L)
    per_dev = {d: float(rng.choice([0.0, 0.5, 1.0, 2.75])) for d in p.states.devices}
    factor = np.array([per_dev[d] for d in p.states.device])
    charge = capacity_charge(p.param_bytes, acts, factor)
    cap_dev = {d: (np.inf if rng.random() < 0.3 else
                   float(np.floor(rng.uniform(0.2, 1.0) * charge[:, p.states.of(d)[0]].sum())))
               for d in p.states.devices}
    return p.replace(activation_bytes=acts, activation_factor=factor,
                     capacity_bytes=np.array([cap_dev[d] for d in p.states.device]))


@settings(max_examples=60, deadline=None)
@given(counting_problems(), st.sampled_from(OBJECTIVES))
def test_exact_planners_find_brute_forces_optimum(problem, objective):
    brute = Brute.of(problem)
    best = brute.best(objective)
    for name in ("auto", "exact"):
        try:
            got = plan(problem, objective, name, {}, PlanContext(0))
        except InfeasibleError:
            assert best is None, name
            continue
        problem.check_slices(got.slices)
        assert best is not None and close(objective.key(got.latency_ms, got.energy_mj), best), name


@settings(max_examples=40, deadline=None)
@given(counting_problems(), st.integers(0, 1000))
def test_heuristic_planners_propose_slices_that_fit(problem, seed):
    devices = problem.states.devices
    for name, opts in [("random", {"samples": 20}), ("autoscale-static", {}),
                       *((f"single:{d}", {}) for d in devices)]:
        try:
            got = plan(problem, Objective("latency"), name, opts, PlanContext(seed), allow_infeasible=True)
        except InfeasibleError:
            continue
        problem.check_slices(got.slices)      # every slice legal, i.e. fits as slice_fits says


def test_dp_respects_activations_it_would_otherwise_ignore():
    """Parameters alone fit layers 0-2 on the fast state in one slice; with activations counted,
    only two of them do, and the optimum pays a second slice."""
    lat = [[5.0, 1.0], [5.0, 1.0], [5.0, 1.0]]
    p = make_problem(lat, params=[10, 10, 10], capacity=[np.inf, 100.0], t_in=[[0, 1]] * 3, t_out=[[0, 1]] * 3,
                     devices=("big", "npu"))
    whole = plan(p, Objective("latency"), "dp", {}, PlanContext(0))
    assert [(s.first, s.last, s.state) for s in whole.slices] == [(0, 2, 1)]
    q = p.replace(activation_bytes=np.array([40, 40, 40]), activation_factor=np.array([0.0, 1.0]))
    for name in ("dp", "exact"):
        got = plan(q, Objective("latency"), name, {}, PlanContext(0))
        assert len(got.slices) == 2 and all(q.slice_bytes(s.first, s.last, s.state) <= 100 for s in got.slices)
        assert got.latency_ms == pytest.approx(1.0 * 3 + 2 * 2)


def test_evosh_blocks_carry_the_activation_arrays():
    from hetcc.planners.evosh.space import ConfigSpace

    p = make_problem(np.ones((4, 2)), params=[1, 2, 3, 4], capacity=[np.inf, 50.0])
    p = p.replace(states=StateTable(device=("big", "gpu"), kind=("cpu", "gpu"), freq_mhz=np.array([1000.0, 800.0]),
                                    is_fmax=np.ones(2, bool)),
                  activation_bytes=np.array([10, 20, 30, 40]), activation_factor=np.array([0.0, 1.0]))
    block = ConfigSpace.build(p, "mapping", blocks=2).block_problem()
    assert block.num_layers == 2
    assert block.memory_bytes.tolist() == [[3, 33], [7, 77]]
    assert block.slice_fits(0, 0, 1) and not block.slice_fits(1, 1, 1)


def _zeros(n: int) -> str:
    return ", ".join(["0"] * n)


def test_layers_pass_fills_dwconv_flops_and_activation_bytes(analyse):
    program = analyse('''<ir_version: 8, opset_import: ["" : 17]>
        g (float[1, 8, 16, 16] x) => (float[1, 8, 16, 16] y) <float[8, 1, 3, 3] w = {%s}, float[8, 8, 1, 1] v = {%s}> {
            a = Conv <group = 8, pads = [1, 1, 1, 1]> (x, w)
            b = Relu (a)
            y = Conv (b, v)
        }''' % (_zeros(72), _zeros(64)))
    from hetcc.compiler.program import LAYERS

    layers = program.get(LAYERS)
    fc = {c: sum(l.flops_by_class[c] for l in layers) for c in ("conv", "dwconv", "pwconv", "other")}
    assert fc["dwconv"] == 2.0 * 8 * 16 * 16 * 9 and fc["pwconv"] == 2.0 * 8 * 16 * 16 * 8
    assert sum(l.node_classes["dwconv"] for l in layers) == 1
    assert sum(l.activation_bytes for l in layers) == 3 * 8 * 16 * 16 * 4


def test_legality_names_activations_over_the_capacity(analyse):
    from dataclasses import replace

    from hetcc.passes.legality import device_reasons
    from hetcc.compiler.program import LAYERS, TENSORS
    from hetcc.targets import load_target

    program = analyse('''<ir_version: 8, opset_import: ["" : 17]>
        g (float[1, 8, 64, 64] x) => (float[1, 8, 64, 64] y) <float[8, 8, 1, 1] v = {%s}> {
            y = Conv (x, v)
        }''' % _zeros(64))
    layer = program.get(LAYERS)[0]
    npu = load_target("hikey970").device("npu")
    tight = replace(npu, capacity_bytes=100_000, capacity_counts="params+activations", activation_bytes_factor=2.0)
    why = device_reasons(layer, [], program.get(TENSORS), tight)
    assert "parameters 256 B + activations 262.1 kB exceed capacity 100.0 kB" in why
    params_only = replace(npu, capacity_bytes=100_000, capacity_counts="params")
    assert not [r for r in device_reasons(layer, [], program.get(TENSORS), params_only) if "capacity" in r]


def test_inspect_why_names_activations_from_costs_json():
    from hetcc.compiler.why import layer_reasons

    costs = {"layers": [{"id": 0, "param_bytes": 100, "activation_bytes": 1000}],
             "states": [{"device": "npu", "kind": "npu", "frequency_mhz": 960.0}], "legal": [[False]],
             "capacity_bytes": [500], "activation_factor": [2.0]}
    assert layer_reasons(costs, None) == [{"npu": "parameters 100 B + activations 2.0 kB exceed capacity 500 B"}]
    del costs["activation_factor"]                  # an older costs.json: parameters only, which fit
    assert layer_reasons(costs, None)[0]["npu"].startswith("not legal (reason not recorded")
