"""fairboost's annealed search (``hetcc.planners.fairboost.search``): numbers only, no torch. It never
returns worse than its best start, keeps every pipeline legal, spends no more than its budget, is
fixed by its seed, and finds the exact best of a tiny space that plain enumeration checks."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from hetcc.planners import Objective
from hetcc.planners.fairboost.search import Budget, neighbours, search, whole_assignments
from hetcc.planners.multi.mix import Stage, check_pipeline
from hetcc.planners.multi.plans import Scorer, mix_of

from fairboost_cases import workload


def _scored(seed, sizes):
    mix = mix_of(workload(seed, sizes))
    return mix, Scorer(mix, Objective("overall"))


def test_neighbours_keep_the_masking_rule_and_cover_the_model():
    mix, _ = _scored(3, (7, 5, 6))
    pipe = (Stage(0, 0, 3), Stage(2, 3, 7))
    got = list(neighbours(mix, pipe, pool=[(Stage(1, 0, 7),)]))
    assert len(got) > 10
    for cand in got:
        check_pipeline(cand, 7, 3)                 # contiguous, whole model, distinct devices
        assert len({st.device for st in cand}) == len(cand)
    assert (Stage(1, 0, 7),) in got and (Stage(2, 0, 3), Stage(0, 3, 7)) in got     # pool, swap
    assert (Stage(0, 0, 4), Stage(2, 4, 7)) in got                                     # boundary shift


def test_whole_assignments_are_every_device_choice_up_to_the_limit():
    mix, _ = _scored(4, (3, 4, 5))
    every = whole_assignments(mix, 10**6)
    assert len(every) == 3 ** 3 and len(set(every)) == 27
    assert whole_assignments(mix, 5) == every[:5]


def test_budget_counts_distinct_plans_only():
    calls = []
    b = Budget(lambda p: calls.append(p) or float(len(calls)), 3)
    a = ((Stage(0, 0, 1),),)
    assert b(a) == b(a) == 1.0 and b.spent == 1 and b.left


@pytest.mark.parametrize("seed", [0, 1])
def test_search_is_no_worse_than_its_starts_legal_seeded_and_within_budget(seed):
    mix, scorer = _scored(20 + seed, (6, 5, 7))
    starts = [mix.baseline(), tuple(mix.best_alone(m)[1] for m in range(mix.n_models))]
    best, st = search(mix, starts, scorer.key, evaluations=300, rng=np.random.default_rng(seed))
    assert scorer.key(best) <= min(scorer.key(s) for s in starts)
    assert scorer.key(best) < scorer.key(mix.baseline())          # all on the GPU is never the best here
    for m, pipe in enumerate(best):
        mix.check(m, pipe)
    assert 0 < st["evaluations"] <= 300 and st["start"] in (0, 1) and st["rounds"] >= 1
    again, _ = search(mix, starts, scorer.key, evaluations=300, rng=np.random.default_rng(seed))
    assert again == best


def test_search_finds_the_exact_best_of_a_tiny_space():
    """Two models of 2 layers on 3 devices: every legal combination enumerated against the search."""
    mix, scorer = _scored(31, (2, 2))
    per = []
    for m in range(2):
        c = [mix.whole(m, d) for d in range(3)]
        c += [(Stage(a, 0, 1), Stage(b, 1, 2)) for a, b in itertools.permutations(range(3), 2)]
        per.append(c)
    exact = min(scorer.key(combo) for combo in itertools.product(*per))
    best, _ = search(mix, [mix.baseline()], scorer.key, evaluations=200, rng=np.random.default_rng(0))
    assert scorer.key(best) == pytest.approx(exact)
