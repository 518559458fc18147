"""MixProblem, pipelines and FairBoost's metrics (hetcc.planners.multi.mix, .scores)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from hetcc.planners.problem import PlanningProblem, StateTable, WorkloadProblem
from hetcc.planners.multi.contention import predict
from hetcc.planners.multi.mix import MixProblem, Stage, check_pipeline
from hetcc.planners.multi.scores import jain, reward, score

from multi_cases import mix_from, random_mix


def problem(lat, legal=None, t_in=None, t_out=None, switch=None, kinds=("cpu", "cpu", "cpu", "gpu", "gpu")):
    """Two frequencies of 'big', one of 'little', two of 'gpu' (ascending)."""
    lat = np.asarray(lat, dtype=np.float64)
    L, S = lat.shape
    z = np.zeros((L, S))
    return PlanningProblem(
        latency_ms=lat, power_mw=np.ones((L, S)), transfer_in_ms=z if t_in is None else np.asarray(t_in),
        transfer_out_ms=z if t_out is None else np.asarray(t_out), transfer_in_mj=z, transfer_out_mj=z,
        legal=np.ones((L, S), bool) if legal is None else np.asarray(legal), param_bytes=np.zeros(L, np.int64),
        capacity_bytes=np.full(S, np.inf), base_power_mw=0.0,
        states=StateTable.build(("big", "big", "little", "gpu", "gpu"), (1000.0, 2000.0, 1500.0, 500.0, 900.0),
                                kind=kinds),
        switch_ms=switch)


def test_from_workload_takes_each_device_at_its_top_state_and_costs_stages_like_slices():
    rng = np.random.default_rng(3)
    lat = rng.uniform(1, 5, size=(4, 5))
    p = problem(lat, t_in=rng.uniform(0, 1, (4, 5)), t_out=rng.uniform(0, 1, (4, 5)),
                switch=[0.1, 0.2, 0.3, 0.4, 0.5])
    q = problem(rng.uniform(1, 5, size=(2, 5)), legal=[[1, 1, 0, 1, 1], [1, 1, 1, 1, 1]])
    mix = MixProblem.from_workload(WorkloadProblem((p, q), ("a", "b")))
    assert mix.devices == ("big", "little", "gpu")
    assert mix.state == (1, 2, 4)
    assert mix.switch_ms.tolist() == [0.2, 0.3, 0.5]
    assert mix.reference == 2                                   # the gpu
    for first, stop, d in itertools.product(range(4), range(1, 5), range(3)):
        if stop > first:
            want = p.slice_cost(first, stop - 1, mix.state[d]).latency_ms
            assert mix.stage_ms(0, Stage(d, first, stop)) == pytest.approx(want)
    assert math.isinf(mix.stage_ms(1, Stage(1, 0, 2)))         # layer 0 of b is illegal on little
    assert not mix.stage_legal(1, Stage(1, 0, 1))
    pipe = (Stage(0, 0, 2), Stage(2, 2, 4))
    assert mix.pipeline_of(0, mix.slices(0, pipe)) == pipe
    other = MixProblem.from_workload(WorkloadProblem((p, q), ("a", "b")), devices=("gpu", "big"),
                                     states={"gpu": 3}, switch_ms={"big": 2.0}, reference="big")
    assert other.state == (3, 1) and other.switch_ms.tolist() == [0.4, 2.0] and other.reference == 1
    with pytest.raises(ValueError, match="unknown device 'npu'"):
        MixProblem.from_workload(WorkloadProblem((p,), ("a",)), devices=("npu",))
    with pytest.raises(ValueError, match="state 2 is not a state of device 'gpu'"):
        MixProblem.from_workload(WorkloadProblem((p,), ("a",)), states={"gpu": 2})


def test_reference_without_a_gpu_is_the_fastest_device_and_ideal_falls_back():
    mix = mix_from([[[1.0, 2.0], [1.0, np.inf]], [[3.0, 1.0]]], reference=1)
    # model 0 cannot run whole on device 1: its t_ideal is its best whole device (0: 2 ms)
    assert mix.ideal() == pytest.approx([500.0, 1000.0])
    assert mix.baseline() == ((Stage(0, 0, 2),), (Stage(1, 0, 1),))
    p = problem([[1.0, 1.0, 2.0, 9.0, 9.0]], kinds=("cpu",) * 5)
    mix = MixProblem.from_workload(WorkloadProblem((p,), ("a",)))
    assert mix.devices[mix.reference] == "big"


def test_best_alone_is_the_brute_force_optimum():
    rng = np.random.default_rng(7)
    for _ in range(15):
        mix = random_mix(rng, n_models=1)
        mix = mix_from([np.where(rng.random(mix.layer_ms[0].shape) < 0.2, np.inf, mix.layer_ms[0])],
                       t_in=mix.in_ms, t_out=mix.out_ms)
        L, D = mix.n_layers(0), mix.n_devices
        best = 0.0
        for k in range(1, D + 1):
            for cuts in itertools.combinations(range(1, L), k - 1):
                for devs in itertools.permutations(range(D), k):
                    b = [0, *cuts, L]
                    pipe = tuple(Stage(devs[i], b[i], b[i + 1]) for i in range(k))
                    best = max(best, mix.alone(0, pipe))
        got, pipe = mix.best_alone(0)
        assert got == pytest.approx(best)
        if pipe:
            check_pipeline(pipe, L, D)
            assert mix.alone(0, pipe) == pytest.approx(best)


@pytest.mark.parametrize("pipe, msg", [
    ((), "at least one stage"),
    ((Stage(3, 0, 4),), "device 3"),
    ((Stage(0, 1, 4),), "start at layer 0"),
    ((Stage(0, 0, 2), Stage(1, 2, 2), Stage(2, 2, 4)), "at least one layer"),
    ((Stage(0, 0, 2), Stage(1, 2, 3), Stage(0, 3, 4)), "returns to device 0"),
    ((Stage(0, 0, 3),), "ends at layer 2"),
])
def test_check_pipeline_names_the_fault(pipe, msg):
    with pytest.raises(ValueError, match=msg):
        check_pipeline(pipe, 4, 3)


def test_scores_follow_table_3():
    assert jain([1, 1, 1], [2, 2, 2]) == pytest.approx(1.0)
    assert jain([1, 0, 0], [1, 1, 1]) == pytest.approx(1 / 3)
    assert jain([0, 0], [1, 1]) == 0.0
    assert jain([2, 1], [4, 1]) == pytest.approx(1.5 ** 2 / (2 * 1.25))
    mix = mix_from([[[2.0, 4.0]], [[8.0, 4.0]]], reference=1)
    base = predict(mix, mix.baseline()).throughput              # both on device 1: 8 ms a round
    assert base == pytest.approx([125.0, 125.0])
    sc = score(mix, np.array([500.0, 250.0]))                   # each alone: 0 on d0, 1 on d1
    assert sc.throughput == pytest.approx(375.0)
    assert sc.normalised == pytest.approx(3.0)
    assert sc.jain == pytest.approx(9 / 10)                      # t_ideal 250 each: ratios 2, 1
    assert sc.overall == pytest.approx(sc.normalised * sc.jain)


def test_jain_uses_the_ideal_ratios():
    mix = mix_from([[[2.0, 4.0]], [[8.0, 4.0]]], reference=1)
    sc = score(mix, np.array([500.0, 250.0]))
    assert mix.ideal() == pytest.approx([250.0, 250.0])
    assert sc.jain == pytest.approx(jain([2.0, 1.0], [1.0, 1.0]))


def test_reward_is_algorithm_1():
    ideal = np.array([10.0, 20.0, 40.0])
    # equal ratios of 1: fairness 2 sig(5) - 1, throughput 2 sig(5) - 1
    top = 2 / (1 + math.exp(-5)) - 1
    assert reward(ideal, ideal) == pytest.approx(top)
    assert reward(ideal, ideal, beta=0.0) == pytest.approx(top)
    assert reward(np.zeros(3), ideal, beta=1.0) == pytest.approx(-top)
    assert reward(np.zeros(3), ideal, beta=0.0) == pytest.approx(top)   # starving all is "fair"
    # ratios [1, 0, 0]: std(100, 0, 0) / 50 = 0.9428
    r = np.array([1.0, 0.0, 0.0])
    ratios = np.std(r * 100) / 50
    fair = 2 / (1 + math.exp(7 * (ratios - 0.5))) - 1
    thr = 2 / (1 + math.exp(-3 * (10 / 70 - 0.5))) - 1
    assert reward(r * ideal, ideal, alpha=7, beta=0.25, gamma=3) == pytest.approx(0.75 * fair + 0.25 * thr)
    assert reward([5.0, 10.0, 20.0], ideal) > reward([10.0, 10.0, 0.0], ideal)
    with pytest.raises(ValueError, match="beta"):
        reward(ideal, ideal, beta=2.0)
