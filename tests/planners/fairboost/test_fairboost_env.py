"""FairBoost's environment (gymnasium, no torch) on tiny synthetic mixes: the masking rule, the
Eq. 3 observation, the shaped reward that telescopes to Alg. 1's, the result cache."""
from __future__ import annotations

import numpy as np
import pytest

from extras import needs
from hetcc.planners.multi.plans import mix_of
from fairboost_cases import workload

pytestmark = pytest.mark.learn
needs("learn", "gymnasium")


def test_episode_places_every_block_under_the_masking_rule_and_its_return_telescopes():
    from hetcc.planners.fairboost.env import FairBoostEnv, prepare

    w = workload(1, (7, 3, 5))
    mix = mix_of(w)
    rng = np.random.default_rng(0)
    wl = prepare(mix, [rng.random((p.num_layers, 8)).astype(np.float32) for p in w.problems], rows=4)
    assert [len(r) for r in wl.runs] == [4, 3, 4]
    env = FairBoostEnv(3, rows=4, noise=0.0)
    for seed in range(5):
        obs, info = env.reset(seed=seed, options={"workload": wl})
        assert obs.shape == ((3 + 5) * 8, 4) and obs.min() >= 0 and obs.max() <= 1
        total, steps = 0.0, 0
        while not env.done:
            mask = info["action_mask"]
            assert mask.any()
            obs, r, term, _, info = env.step(int(rng.choice(np.flatnonzero(mask))))
            total += r
            steps += 1
        assert steps == 11 and term
        assert total == pytest.approx(env.scale * (info["final_reward"] - info["baseline_reward"]), abs=1e-9)
        for m, pipe in enumerate(env.final_pipelines()):
            mix.check(m, pipe)               # legal, distinct devices: never back to a device it left
        assert not env.observation()[3 * 8:].any()    # every block placed: no queued rows left


def test_a_device_left_is_masked_and_an_invalid_action_changes_nothing():
    from hetcc.planners.fairboost.env import FairBoostEnv, prepare

    w = workload(2, (6, 2))
    mix = mix_of(w)
    wl = prepare(mix, [np.full((p.num_layers, 8), 0.5, np.float32) for p in w.problems], rows=6)
    env = FairBoostEnv(3, rows=6, noise=0.0)
    _, info = env.reset(options={"workload": wl})
    assert info["action_mask"].all()
    _, _, _, _, info = env.step(0)
    _, _, _, _, info = env.step(1)          # left big for little
    assert list(info["action_mask"]) == [False, True, True]
    before = env.observation()
    obs, r, _, _, info = env.step(0)        # back to big: refused
    assert info["invalid_action"] and r == 0.0 and np.array_equal(obs, before)


def test_the_result_cache_answers_permutation_equivalent_mappings_with_noise():
    from hetcc.planners.fairboost.env import Cache, FairBoostEnv, prepare

    w = workload(3, (3, 3))
    mix = mix_of(w)
    wl = prepare(mix, [np.zeros((3, 8), np.float32)] * 2, rows=3)
    cache = Cache()
    env = FairBoostEnv(3, rows=3, noise=0.05, cache=cache)
    env.reset(seed=0, options={"workload": wl})
    misses = cache.misses
    env.reset(seed=1, options={"workload": wl})     # the same start: a hit, with noise
    assert cache.misses == misses and cache.hits >= 1
    assert env.phi != pytest.approx(next(iter(cache.table.values())), abs=1e-9)


def test_polish_never_worsens_the_mapping_and_keeps_it_legal():
    from hetcc.planners import Objective
    from hetcc.planners.fairboost.polish import descend
    from hetcc.planners.multi.plans import Scorer

    for seed in range(3):
        w = workload(10 + seed, (6, 5, 7))
        mix = mix_of(w)
        scorer = Scorer(mix, Objective("overall"))
        start = mix.baseline()
        end, moves = descend(mix, start, scorer.key, max_moves=50)
        assert scorer.key(end) <= scorer.key(start)
        assert moves >= 1        # all on the GPU is never a local optimum of these mixes
        for m, pipe in enumerate(end):
            mix.check(m, pipe)
        again, _ = descend(mix, start, scorer.key, max_moves=50)
        assert again == end


def test_the_overall_reward_is_log_o_of_the_planners_scores_and_telescopes():
    """reward="overall": a state's potential is log O of its completed mapping, O as every workload
    planner scores it (hetcc.planners.multi.scores.score), so an episode's return is scale x log of the
    final O over the baseline's."""
    from hetcc.planners.fairboost.env import SCALES, FairBoostEnv, prepare
    from hetcc.planners.multi.contention import predict
    from hetcc.planners.multi.scores import score

    w = workload(2, (6, 4, 5))
    mix = mix_of(w)
    rng = np.random.default_rng(1)
    wl = prepare(mix, [rng.random((p.num_layers, 8)).astype(np.float32) for p in w.problems], rows=4)
    env = FairBoostEnv(3, rows=4, noise=0.0, reward="overall")
    assert env.scale == SCALES["overall"]
    obs, info = env.reset(seed=0, options={"workload": wl})
    base = score(mix, predict(mix, mix.baseline()).throughput)
    assert info.get("baseline_reward", env.start_phi) == pytest.approx(np.log(base.overall))
    total = 0.0
    while not env.done:
        obs, r, _, _, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        total += r
    final = score(mix, predict(mix, env.final_pipelines()).throughput)
    assert info["final_reward"] == pytest.approx(np.log(final.overall))
    assert total == pytest.approx(env.scale * np.log(final.overall / base.overall))
    with pytest.raises(ValueError, match="reward must be one of alg1, overall"):
        FairBoostEnv(3, reward="throughput")


def test_training_takes_either_reward_and_refuses_another():
    from hetcc.planners.fairboost.train import TrainConfig

    assert TrainConfig().reward == "overall" and TrainConfig(reward="alg1").validate() is None
    assert TrainConfig(reward="x").validate() == "reward must be one of alg1, overall"
