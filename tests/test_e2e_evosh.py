"""EvoSh end to end on the jetson-tx2 board model: CLI and API, its spaces against enumeration."""
from __future__ import annotations

import json

import numpy as np
import pytest

from extras import needs

import hetcc
from hetcc.core.errors import UsageError
from hetcc.planners import Objective, PlanContext, plan
from hetcc.planners.evosh import optimum
from hetcc.planners.evosh.space import ConfigSpace
from hetcc.runtime import verify

pytestmark = [pytest.mark.zoo, pytest.mark.slow, pytest.mark.timeout(900)]
torch = needs("zoo", "torchvision", "torch")


@pytest.fixture(scope="module")
def squeezenet(tmp_path_factory):
    from hetcc.compiler import zoo

    path = tmp_path_factory.mktemp("evosh-models") / "squeezenet1_1.onnx"
    zoo.export("squeezenet1_1", path, seed=0)
    return path


@pytest.fixture(scope="module")
def problem(squeezenet):
    return hetcc.analyse(squeezenet, "jetson-tx2").problem


def _mid_cap(space: ConfigSpace) -> float:
    lo = space.evaluate(tuple([0] * len(space.dims)))[1]
    hi = space.evaluate(tuple(d.size - 1 for d in space.dims))[1]
    return (lo + hi) / 2


def test_cli_and_api_evosh_plan_carries_its_hardware_and_verifies(squeezenet, problem, tmp_path):
    from hetcc.cli import main

    space = ConfigSpace.build(problem, "joint", blocks=6)
    cap = _mid_cap(ConfigSpace.build(problem, "mapping", blocks=6))
    out = tmp_path / "evosh"
    argv = ["compile", str(squeezenet), "--target", "jetson-tx2", "--objective", "latency",
            "--power-cap", f"{cap:.0f}mW", "--planner", "evosh", "--seed", "1", "--planner-option", "space=joint",
            "--planner-option", "blocks=6", "--planner-option", "steps=60", "-o", str(out), "-q"]
    assert main(argv) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    variant = manifest["variants"][manifest["default_variant"]]
    assert variant["planner"]["name"] == "evosh" and variant["feasible"] is True
    assert set(variant["hardware"]) == set(problem.hardware.names)
    stats = variant["planner"]["stats"]
    assert stats["steps"] <= 60 and stats["space_size"] == space.size
    assert verify(out).ok
    api = hetcc.analyse(squeezenet, "jetson-tx2").plan(Objective("latency", power_cap_mw=float(f"{cap:.0f}")),
                                                       planner="evosh", seed=1,
                                                       options={"space": "joint", "blocks": 6, "steps": 60})
    assert [(s["first_layer"], s["last_layer"]) for s in variant["slices"]] == [(s.first, s.last) for s in api.slices]
    assert api.hardware == variant["hardware"]
    # exact at layer granularity (every DVFS state, the default hardware) is never slower
    best = plan(problem, Objective("latency", power_cap_mw=float(f"{cap:.0f}")), "exact")
    mapping_opt = optimum(ConfigSpace.build(problem, "mapping", blocks=6), float(f"{cap:.0f}"), {})
    assert best.latency_ms <= mapping_opt.latency_ms * (1 + 1e-9)


def test_mapping_optimum_by_exact_equals_enumeration(problem):
    space = ConfigSpace.build(problem, "mapping", blocks=8)
    for frac in (0.2, 0.5, 0.8):
        lo = space.evaluate(tuple([0] * 8))[1]
        hi = space.evaluate(tuple([1] * 8))[1]
        cap = lo + frac * (hi - lo)
        config, latency = space.exhaustive(cap)
        opt = optimum(space, cap, {})
        assert config is not None and opt.latency_ms == pytest.approx(latency, rel=1e-9)
        assert opt.average_power_mw <= cap * (1 + 1e-9)


def test_hardware_enumeration_is_the_vectorised_cost_of_every_configuration(problem):
    space = ConfigSpace.build(problem, "hardware", blocks=6, mapping="ccgggg")
    assert space.size == 308_880
    rng = np.random.default_rng(0)
    sample = [space.random(rng) for _ in range(150)]
    costs = [space.evaluate(c)[:2] for c in sample]
    cap = float(np.median([p for t, p in costs if np.isfinite(t)]))
    config, latency = space.exhaustive(cap)
    t, p, plan_ = space.evaluate(config)
    assert t == pytest.approx(latency, rel=1e-9) and p <= cap * (1 + 1e-9)
    assert plan_.hardware == {k: v for k, v in space.describe(config).items() if k in problem.hardware.names}
    for (tc, pc) in costs:                       # nothing sampled within the cap beats it
        if pc <= cap:
            assert tc >= latency * (1 - 1e-9)


def test_evosh_on_the_hardware_space_reaches_near_the_optimum(problem):
    space = ConfigSpace.build(problem, "hardware", blocks=6)
    cap = _mid_cap(space)
    _, opt = space.exhaustive(cap)
    from hetcc.planners.evosh.search import search
    found = [search(space, cap, 200, np.random.default_rng(s), "evosh").best_latency for s in range(5)]
    assert np.mean(found) <= opt * 1.05, (found, opt)


def test_spaces_and_options_that_cannot_work_are_usage_errors(problem):
    with pytest.raises(UsageError, match="joint"):
        plan(problem, Objective("latency", power_cap_mw=4000.0), "evosh", {"space": "joint", "search": "optimum"})
    with pytest.raises(UsageError, match="mapping"):
        plan(problem, Objective("latency", power_cap_mw=4000.0), "evosh", {"space": "hardware", "mapping": "cgx"})
    with pytest.raises(UsageError, match="blocks"):
        plan(problem, Objective("latency", power_cap_mw=4000.0), "evosh", {"blocks": 10_000})
    with pytest.raises(UsageError):
        plan(problem, Objective("energy", power_cap_mw=4000.0), "evosh", ctx=PlanContext(seed=0))
