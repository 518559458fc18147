"""MOSAIC's device-preferred baseline (``single:<device>``) and the ``brute`` planner."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from hetcc.core.errors import InfeasibleError, UsageError
from hetcc.planners.baselines import brute, count_plans, enumerate_plans, single_device
from hetcc.planners import Objective, Slice
from planner_cases import Brute, close, make_problem, problems

# states: big@1000, big@2000 (fmax), gpu@800 (fmax), npu (fmax)
DEVICES = ("big", "big", "gpu", "npu")
FREQS = (1000.0, 2000.0, 800.0, 960.0)
FMAX = (False, True, True, True)


def board(legal=None, params=None, capacity=None, n=5):
    return make_problem(np.ones((n, 4)), legal=legal, params=params, capacity=capacity,
                        devices=DEVICES, freqs=FREQS, fmax=FMAX, names=tuple(f"l{i}" for i in range(n)))


def test_everything_legal_is_one_slice_at_max_frequency():
    assert single_device(board(), "big").slices == (Slice(0, 4, 1),)
    assert single_device(board(), "gpu").slices == (Slice(0, 4, 2),)


def test_memory_overflow_starts_the_next_slice_on_the_preferred_device():
    p = board(params=[40, 40, 40, 40, 40], capacity=[np.inf, np.inf, 100, 100])
    assert single_device(p, "npu").slices == (Slice(0, 1, 3), Slice(2, 3, 3), Slice(4, 4, 3))


def test_unsupported_layers_run_alone_on_npu_then_gpu_then_big():
    legal = np.ones((5, 4), dtype=bool)
    legal[1, 2] = False                      # gpu cannot run layer 1 -> npu
    legal[2, [2, 3]] = False                 # neither gpu nor npu -> big
    legal[3, 2] = False                      # layers 3 and 4 each alone on the npu
    legal[4, 2] = False
    plan = single_device(board(legal=legal), "gpu")
    assert plan.slices == (Slice(0, 0, 2), Slice(1, 1, 3), Slice(2, 2, 1), Slice(3, 3, 3), Slice(4, 4, 3))


def test_a_layer_too_big_for_the_preferred_device_falls_back():
    p = board(params=[10, 500, 10, 10, 10], capacity=[np.inf, np.inf, np.inf, 100])
    plan = single_device(p, "npu")
    assert plan.slices == (Slice(0, 0, 3), Slice(1, 1, 2), Slice(2, 4, 3))


def test_final_fallback_is_any_max_frequency_state():
    p = make_problem(np.ones((2, 3)), legal=[[True, True, True], [False, True, False]],
                     devices=("little", "mali", "little"), freqs=(500.0, 600.0, 1800.0),
                     fmax=(False, True, True))
    assert single_device(p, "little").slices == (Slice(0, 0, 2), Slice(1, 1, 1))
    blocked = make_problem(np.ones((2, 2)), legal=[[True, True], [False, False]], names=("a", "b"))
    with pytest.raises(InfeasibleError, match=r"layer 1 \(b\) is legal on no device"):
        single_device(blocked, "d0")


def test_unknown_device_lists_the_devices():
    with pytest.raises(UsageError, match="unknown device 'dsp'.*big, gpu, npu"):
        single_device(board(), "dsp")


def test_brute_refuses_large_problems_and_counts_plans():
    assert count_plans(3, 2) == 2 * 3 * 3
    assert len(list(enumerate_plans(make_problem(np.ones((3, 2)))))) == 18
    with pytest.raises(UsageError, match="max_plans"):
        brute(make_problem(np.ones((30, 25))), Objective())


@settings(max_examples=60, deadline=None)
@given(problems(max_layers=5, max_states=3))
def test_brute_planner_agrees_with_enumeration(problem):
    objective = Objective("energy", deadline_ms=20.0)
    best = Brute.of(problem).best(objective)
    if best is None:
        with pytest.raises(InfeasibleError):
            brute(problem, objective)
    else:
        assert close(brute(problem, objective).energy_mj, best)
