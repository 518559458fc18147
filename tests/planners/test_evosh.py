"""EvoSh's search (``hetcc.planners.evosh.search``) on small monotone spaces, against enumeration."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetcc.core.errors import UsageError
from hetcc.planners import get_spec, parse_options
from hetcc.planners.evosh.search import Shaved, search


class MonotoneSpace:
    """A grid where a higher position on any dimension is faster and hungrier (EvoSh Sec. III)."""

    def __init__(self, sizes, w_lat, w_pow, base_lat=100.0, base_pow=1000.0):
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.w_lat, self.w_pow = np.asarray(w_lat), np.asarray(w_pow)
        self.base_lat, self.base_pow = base_lat, base_pow
        self.calls = []

    def random(self, rng):
        return tuple(int(v) for v in rng.integers(0, self.sizes))

    def cost(self, c):
        c = np.asarray(c)
        return self.base_lat / (1.0 + float(self.w_lat @ c)), self.base_pow + float(self.w_pow @ c)

    def evaluate(self, c):
        self.calls.append(tuple(c))
        t, p = self.cost(c)
        return t, p, None

    def all(self):
        return list(itertools.product(*(range(int(n)) for n in self.sizes)))


@st.composite
def spaces(draw):
    d = draw(st.integers(2, 4))
    sizes = [draw(st.integers(2, 5)) for _ in range(d)]
    w_lat = [draw(st.floats(0.0, 2.0)) for _ in range(d)]
    w_pow = [draw(st.floats(0.0, 500.0)) for _ in range(d)]
    space = MonotoneSpace(sizes, w_lat, w_pow)
    powers = sorted(space.cost(c)[1] for c in space.all())
    cap = draw(st.sampled_from(powers)) + draw(st.sampled_from([-1.0, 0.0, 1.0]))
    return space, cap, draw(st.integers(0, 2**16)), draw(st.integers(3, 60))


@pytest.mark.slow
@pytest.mark.timeout(1200)
@settings(max_examples=120, deadline=None)
@given(spaces())
def test_shaving_never_removes_a_configuration_better_than_the_best_feasible_one(case):
    space, cap, seed, steps = case
    res = search(space, cap, steps, np.random.default_rng(seed), "evosh", population=4, subpopulation=3)
    configs = np.array(space.all())
    shaved = res.shaved.mask(configs)
    cost = {c: space.cost(c) for c in space.all()}           # each configuration's (latency, power), once
    for c, gone in zip(map(tuple, configs), shaved):
        t, p = cost[c]
        if gone and p <= cap * (1 + 1e-9):      # the search's tolerance
            assert t >= res.best_latency - 1e-12, (c, t, res.best_latency)
    # and the optimum is found whenever every configuration was shaved (evaluated ones shave themselves)
    feasible = [t for t, p in cost.values() if p <= cap * (1 + 1e-9)]
    if shaved.all():
        assert res.best_latency == (min(feasible) if feasible else np.inf)


@pytest.mark.slow
@pytest.mark.timeout(1200)
@settings(max_examples=80, deadline=None)
@given(spaces())
def test_children_are_never_duplicates_or_shaved(case):
    space, cap, seed, steps = case
    res = search(space, cap, steps, np.random.default_rng(seed), "evosh", population=4, subpopulation=3)
    assert len(space.calls) == len(set(space.calls)) == res.steps == len(res.curve)
    replay = Shaved()
    for c in space.calls:                 # in evaluation order: never inside what was shaved before
        assert c not in replay
        replay.add(c, space.cost(c)[1] > cap * (1 + 1e-9))      # the search's tolerance


def test_the_curve_is_the_best_within_the_cap_so_far_and_never_rises():
    space = MonotoneSpace([4, 4, 4], [1.0, 0.5, 0.2], [300.0, 100.0, 50.0])
    res = search(space, 1600.0, 40, np.random.default_rng(3), "evosh", population=6, subpopulation=4)
    assert all(b <= a for a, b in zip(res.curve, res.curve[1:]))
    best = min((space.cost(c)[0] for c in res.evaluated if space.cost(c)[1] <= 1600.0), default=np.inf)
    assert res.curve[-1] == best == res.best_latency


@pytest.mark.parametrize("algorithm", ["evosh", "evolution", "random"])
def test_same_seed_same_search(algorithm):
    def run(seed):
        space = MonotoneSpace([5, 5, 3, 4], [1.0, 0.5, 0.2, 0.1], [300.0, 100.0, 50.0, 20.0])
        return search(space, 1700.0, 50, np.random.default_rng(seed), algorithm).curve, space.calls
    assert run(7) == run(7)
    assert run(7)[1] != run(8)[1]


def test_plain_evolution_may_rerun_a_configuration_but_evosh_never_does():
    space = MonotoneSpace([2, 2, 2], [1.0, 0.5, 0.2], [300.0, 100.0, 50.0])
    evo = search(space, 1400.0, 60, np.random.default_rng(0), "evolution", population=3, subpopulation=2)
    assert evo.steps == 60 and len(set(space.calls)) < 60        # 8 configurations, 60 runs
    space.calls.clear()
    sh = search(space, 1400.0, 60, np.random.default_rng(0), "evosh", population=3, subpopulation=2)
    assert len(space.calls) == len(set(space.calls)) <= 8 and sh.exhausted


@pytest.mark.parametrize("raw, culprit", [({"space": "both"}, "space"), ({"crossover": "1.5"}, "probabilities"),
                                          ({"steps": "0"}, "steps"), ({"search": "annealing"}, "search"),
                                          ({"population": "1"}, "population")])
def test_bad_options_are_usage_errors_naming_the_option(raw, culprit):
    with pytest.raises(UsageError, match=culprit):
        parse_options(get_spec("evosh"), raw)
