"""The contention model's closed forms and invariants (hetcc.planners.multi.contention)."""
from __future__ import annotations

import numpy as np
import pytest

from hetcc.planners.multi.contention import predict, service
from hetcc.planners.multi.mix import Stage

from multi_cases import mix_from, random_mix, random_pipelines


@pytest.mark.parametrize("seed", range(20))
def test_one_model_alone_runs_at_its_slowest_stage(seed):
    rng = np.random.default_rng(seed)
    mix = random_mix(rng, n_models=1)
    pipe = random_pipelines(mix, rng)
    stages = mix.stages_ms(0, pipe[0])
    for sharing in ("shared", "slice"):
        pred = predict(mix, pipe, sharing=sharing)
        assert pred.throughput[0] == pytest.approx(1000.0 / stages.max(), rel=1e-12)
        assert pred.alone[0] == pytest.approx(1000.0 / stages.max(), rel=1e-12)
        assert pred.utilisation.max() == pytest.approx(1.0)


@pytest.mark.parametrize("k", [1, 2, 3, 5])
@pytest.mark.parametrize("switch", [0.0, 0.7])
def test_k_identical_models_whole_on_one_device_share_it(k, switch):
    s = 4.0
    mix = mix_from([[[1.0, 9.0], [3.0, 9.0]]] * k, switch=[switch, 0.0])
    pipes = [mix.whole(m, 0) for m in range(k)]
    pred = predict(mix, pipes)
    c = switch if k > 1 else 0.0
    assert pred.alone == pytest.approx([1000.0 / s] * k)
    assert pred.throughput == pytest.approx([1000.0 / (k * (s + c))] * k)
    if switch == 0.0:
        assert pred.throughput == pytest.approx(pred.alone / k)
    assert pred.utilisation[0] == pytest.approx(1.0)
    assert pred.utilisation[1] == 0.0
    assert pred.busy[:, 0] == pytest.approx([1.0 / k] * k)


@pytest.mark.parametrize("k", [1, 2, 4])
def test_time_slicing_k_identical_models(k):
    s, c, q = 4.0, 1.5, 30.0
    mix = mix_from([[[4.0, 1.0]]] * k, switch=[c, 0.0])
    pred = predict(mix, [mix.whole(m, 0) for m in range(k)], sharing="slice", quantum_ms=q)
    expect = 1000.0 / s if k == 1 else 1000.0 * q / ((q + c) * k * s)
    assert pred.throughput == pytest.approx([expect] * k)
    assert pred.utilisation[0] == pytest.approx(1.0)


def test_time_slicing_a_pipeline_takes_its_least_share():
    q, c = 20.0, 1.0
    mix = mix_from([[[2.0, 9.0], [9.0, 3.0]], [[4.0, 9.0]], [[9.0, 5.0]]], switch=[c, c])
    pred = predict(mix, [(Stage(0, 0, 1), Stage(1, 1, 2)), mix.whole(1, 0), mix.whole(2, 1)],
                   sharing="slice", quantum_ms=q)
    share = q / (q + c) / 2
    assert pred.throughput == pytest.approx([1000 * min(share / 2.0, share / 3.0), 1000 * share / 4.0,
                                             1000 * share / 5.0])


@pytest.mark.parametrize("seed", range(40))
def test_no_device_over_full_and_every_model_meets_a_saturated_device(seed):
    """Max-min fairness: each model's rate is set by a saturated device on its pipeline where no
    model runs faster than it (or it runs at its own slowest stage)."""
    rng = np.random.default_rng(seed)
    mix = random_mix(rng)
    pipes = random_pipelines(mix, rng)
    pred = predict(mix, pipes, population=None)      # the pure max-min fluid (no stalls)
    s = service(mix, pipes)
    x = pred.throughput
    assert (pred.utilisation <= 1.0 + 1e-9).all()
    assert (x <= pred.alone * (1 + 1e-9)).all()
    assert (x > 0).all()
    load = (x[:, None] / 1000.0 * s).sum(axis=0)
    assert (load <= pred.utilisation + 1e-9).all()          # switches only add
    assert pred.busy.sum(axis=0) == pytest.approx(pred.utilisation)
    for m in range(mix.n_models):
        devs = [st.device for st in pipes[m]]
        assert any(pred.utilisation[d] > 1 - 1e-9 and x[m] >= x[s[:, d] > 0].max() * (1 - 1e-9) for d in devs)


@pytest.mark.parametrize("seed", range(30))
def test_stalls_only_bind_where_a_model_has_few_inferences_in_flight(seed):
    rng = np.random.default_rng(seed)
    mix = random_mix(rng)
    pipes = random_pipelines(mix, rng)
    deep = predict(mix, pipes, population=10_000).throughput
    assert deep == pytest.approx(predict(mix, pipes, population=None).throughput)
    ring = predict(mix, pipes)
    assert (ring.utilisation <= 1 + 1e-9).all() and (ring.throughput > 0).all()
    load = (ring.throughput[:, None] / 1000.0 * service(mix, pipes)).sum(axis=0)
    assert (load <= 1 + 1e-9).all()


def test_a_long_execution_elsewhere_starves_a_pipelines_bottleneck():
    """Model 0 runs 100 ms executions on the gpu every 400 ms; model 1 (big 8 ms, then gpu 5 ms,
    one inference per stage) has both its inferences stuck in front of the gpu while model 0
    holds it, so its bottleneck (big) idles 100 + switch - 8 ms each time."""
    c = 2.0
    mix = mix_from([[[300.0, 9e3, 9e3], [9e3, 9e3, 100.0]], [[9e3, 8.0, 9e3], [9e3, 9e3, 5.0]]],
                   switch=[0.0, 0.0, c])
    pipes = [(Stage(0, 0, 1), Stage(2, 1, 2)), (Stage(1, 0, 1), Stage(2, 1, 2))]
    x0 = 1 / 300.0
    assert predict(mix, pipes).throughput[0] == pytest.approx(1000 * x0)
    assert predict(mix, pipes).throughput[1] == pytest.approx(1000 * (1 - x0 * (100 + c - 8)) / 8)
    assert predict(mix, pipes, population=2).throughput[1] == pytest.approx(1000 * (1 - x0 * (100 + c - 3 * 8)) / 8)
    assert predict(mix, pipes, population=None).throughput[1] == pytest.approx(1000 / 8)


def test_a_model_limited_elsewhere_leaves_its_share_to_the_others():
    # model 0 alone on device 0 (10 ms); model 1: 1 ms on device 0 then 20 ms on device 1
    mix = mix_from([[[10.0, 50.0]], [[1.0, 50.0], [50.0, 20.0]]], switch=[0.5, 0.0])
    pipes = [mix.whole(0, 0), (Stage(0, 0, 1), Stage(1, 1, 2))]
    pred = predict(mix, pipes)
    assert pred.throughput[1] == pytest.approx(50.0)                 # its 20 ms stage
    # device 0: 10 x0 + 1 x1 + 0.5 (2 x1) = 1 per ms
    assert pred.throughput[0] == pytest.approx((1.0 - 0.05 - 0.5 * 0.1) / 10.0 * 1000.0)


def test_bad_pipelines_and_options_are_refused():
    mix = mix_from([[[1.0, 2.0], [1.0, 2.0]]])
    with pytest.raises(ValueError, match="sharing"):
        predict(mix, [mix.whole(0, 0)], sharing="fair")
    with pytest.raises(ValueError, match="quantum"):
        predict(mix, [mix.whole(0, 0)], sharing="slice", quantum_ms=0)
    with pytest.raises(ValueError, match="m0.*returns to device"):
        predict(mix, [(Stage(0, 0, 1), Stage(0, 1, 2))])
    with pytest.raises(ValueError, match="1 pipelines for 2|2 pipelines for 1"):
        predict(mix, [mix.whole(0, 0)] * 2)
    illegal = mix_from([[[1.0, np.inf], [1.0, 2.0]]])
    with pytest.raises(ValueError, match="cannot run on d1"):
        predict(illegal, [illegal.whole(0, 1)])
