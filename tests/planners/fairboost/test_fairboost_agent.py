"""FairBoost's VQ-VAE, Rainbow training (TorchRL) and planner on tiny synthetic mixes: tiny
networks and a few dozen steps (torch's import is most of the time: marked slow)."""
from __future__ import annotations

import numpy as np
import pytest

from extras import needs
from hetcc.core.errors import UsageError
from hetcc.planners import Objective, PlanContext, plan
from hetcc.planners.multi.plans import mix_of
from fairboost_cases import problem, workload

pytestmark = [pytest.mark.learn, pytest.mark.slow]
needs("learn")


def test_vqvae_codes_are_seeded_and_in_range():
    from hetcc.planners.fairboost.vqvae import Codec, train_vqvae

    rng = np.random.default_rng(0)
    v = rng.integers(0, 500, size=(60, 22)).astype(float)
    a = train_vqvae(v, seed=3, steps=20, codes=8, channels=4)
    b = train_vqvae(v, seed=3, steps=20, codes=8, channels=4)
    ca, cb = Codec(a.state).codes(v), Codec(b.state).codes(v)
    assert ca.shape == (60, 8) and ca.dtype == np.float32 and ca.min() >= 0 and ca.max() <= 1
    assert np.array_equal(ca, cb)
    assert np.isfinite(a.test_mse) and a.perplexity >= 1


@pytest.fixture(scope="module")
def tiny_agent(tmp_path_factory):
    """A tiny agent trained for a few dozen steps on synthetic models, saved to a file."""
    import torch

    from hetcc.planners.fairboost.agent import NetConfig
    from hetcc.planners.fairboost.train import Pool, TrainConfig, train_agent
    from hetcc.planners.fairboost.vqvae import Codec, train_vqvae

    rng = np.random.default_rng(5)
    problems = {f"p{i}": problem(rng, L, f"p{i}") for i, L in enumerate((4, 6, 5, 3))}
    vq = train_vqvae(np.concatenate([p.layer_features.values[:, -22:] for p in problems.values()]),
                     seed=0, steps=10, codes=8, channels=4)
    pool = Pool.build(problems, Codec(vq.state), rows=4)
    net = NetConfig(devices=3, max_models=3, rows=4, channels=4, residual=1, hidden=8)
    path = tmp_path_factory.mktemp("agent") / "agent.pt"
    config = TrainConfig(steps=60, warmup=16, batch=8, min_models=2, max_models=3, checkpoint_every=30,
                         target_period=10)
    seen = []
    state = train_agent(pool, vq.state, config, net, checkpoint=path.with_suffix(".ckpt"),
                        progress=lambda step, info: seen.append(step), meta={"target": "synthetic", "seed": 0})
    torch.save(state, path)
    return path, state, seen, pool, vq, config, net


def test_training_runs_its_steps_learns_and_checkpoints(tiny_agent):
    path, state, seen, *_ = tiny_agent
    assert seen == list(range(1, 61))
    assert state["steps"] == 60 and state["updates"] > 0 and state["episodes"] >= 1
    assert path.with_suffix(".ckpt").is_file()


def test_the_same_seed_trains_the_same_agent(tiny_agent):
    """Seeded: two runs of the same configuration give the same network (the prioritized replay
    samples from the buffer's own seeded generator, not numpy's global one)."""
    import torch

    from hetcc.planners.fairboost.train import train_agent

    _, state, _, pool, vq, config, net = tiny_agent
    np.random.seed(12345)                     # numpy's global generator must not matter
    again = train_agent(pool, vq.state, config, net)
    a, b = state["network"], again["network"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert again["episodes"] == state["episodes"] and again["updates"] == state["updates"]


def test_training_resumes_from_its_checkpoint(tiny_agent, tmp_path):
    from hetcc.planners.fairboost.train import TrainConfig, train_agent

    _, _, _, pool, vq, config, net = tiny_agent
    ckpt = tmp_path / "run.ckpt"
    seen = []
    stopped = train_agent(pool, vq.state, config, net, checkpoint=ckpt, progress=lambda s, i: seen.append(s),
                          should_stop=lambda: len(seen) >= 25)
    assert stopped["steps"] == 25 and ckpt.is_file()
    resumed = train_agent(pool, vq.state, config, net, checkpoint=ckpt, resume=True)
    assert resumed["steps"] == config.steps and resumed["episodes"] >= stopped["episodes"]
    longer = TrainConfig(**{**config.__dict__, "steps": 70})
    with pytest.raises(ValueError, match="another training configuration"):
        train_agent(pool, vq.state, longer, net, checkpoint=ckpt, resume=True)


def test_the_planner_plans_with_an_agent_file_and_records_it(tiny_agent):
    from hetcc.planners.fairboost.agent import sha256_of

    path = tiny_agent[0]
    w = workload(7, (4, 6, 3))
    got = plan(w, Objective("overall"), "fairboost", {"agent": str(path)}, PlanContext(0))
    mix = mix_of(w)
    for m, name in enumerate(w.names):
        pipe = mix.pipeline_of(m, got.plans[m].slices)
        mix.check(m, pipe)
    assert got.stats["agent"]["sha256"] == sha256_of(path) and got.stats["agent"]["file"] == str(path)
    assert got.stats["agent"]["target"] == "synthetic"          # the board it was trained on, from its file
    assert got.stats["score"]["O"] > 0 and got.planner == "fairboost"
    again = plan(w, Objective("overall"), "fairboost", {"agent": str(path)}, PlanContext(0))
    assert [p.slices for p in again.plans] == [p.slices for p in got.plans]


def test_more_models_than_the_observation_holds_is_one_line(tiny_agent):
    path = tiny_agent[0]
    w = workload(8, (3, 3, 3, 3))
    with pytest.raises(UsageError, match="4 models and the agent's observation holds 3"):
        plan(w, Objective("overall"), "fairboost", {"agent": str(path)}, PlanContext(0))


def test_a_file_that_is_no_agent_is_one_line(tmp_path):
    bad = tmp_path / "agent.pt"
    bad.write_bytes(b"not a torch file")
    for path, msg in ((bad, "is not a FairBoost agent"), (tmp_path / "none.pt", "does not exist")):
        with pytest.raises(UsageError, match=msg):
            plan(workload(9), Objective("overall"), "fairboost", {"agent": str(path)}, PlanContext(0))


def test_the_search_beats_the_agent_and_the_baselines_and_honours_its_options(tiny_agent):
    """search=anneal (the default) starts from the agent's mapping and the baselines' plans, so it
    scores no worse than any of them; agent_start=false leaves the agent out; min_jain puts the
    plans at least that fair first."""
    path = tiny_agent[0]
    w = workload(11, (4, 6, 5))
    opts = {"agent": str(path), "evaluations": 600}
    got = plan(w, Objective("overall"), "fairboost", opts, PlanContext(0))
    raw = plan(w, Objective("overall"), "fairboost", {**opts, "polish": False}, PlanContext(0))
    for other in ("all-gpu", "mosaic"):
        base = plan(w, Objective("overall"), other, {}, PlanContext(0))
        assert got.stats["score"]["O"] >= base.stats["score"]["O"] - 1e-12
    assert got.stats["score"]["O"] >= raw.stats["score"]["O"] - 1e-12
    assert got.stats["agent_score"]["O"] == pytest.approx(raw.stats["score"]["O"])
    s = got.stats["search"]
    assert 0 < s["evaluations"] <= 600 // 3 and s["start"] in ("agent", "all-gpu", "best-alone", "mosaic", "whole")
    alone = plan(w, Objective("overall"), "fairboost", {**opts, "agent_start": False}, PlanContext(0))
    assert alone.stats["search"]["starts"] == s["starts"] - 1
    floor = got.stats["score"]["J"] + 0.05      # above the unconstrained plan's fairness, still reachable
    fair = plan(w, Objective("overall"), "fairboost", {**opts, "min_jain": floor}, PlanContext(0))
    assert fair.stats["score"]["J"] >= floor and fair.stats["score"]["O"] <= got.stats["score"]["O"] + 1e-12
    with pytest.raises(UsageError, match="min_jain=1.5"):
        plan(w, Objective("overall"), "fairboost", {**opts, "min_jain": 1.5}, PlanContext(0))
