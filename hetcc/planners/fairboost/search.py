"""Annealed local search on THE contention model, seeded from the agent's mapping and the baselines'
plans (beyond FairBoost; the ``fairboost`` planner's default ``search=anneal``).

The agent alone decides block by block from latent codes and lands far from a good mapping, and
one greedy descent from its pipelines (``polish.descend``, ``search=descent``) stops in the first
local optimum it meets. ``search`` explores the same space under the same model further, for a
fixed number of evaluations:

1. **starts** (the caller's, labelled): the agent's pipelines, the paper's baseline (every model
   whole on the GPU), every model's fastest pipeline alone, ``mosaic``'s (each model's
   least-latency pipeline), the models dealt whole round the devices, and every assignment of
   whole models to devices (``whole_assignments``); all are scored, the best is the incumbent;
2. **descent** from it (per model in turn, the first better neighbour in a shuffled order, until
   a whole sweep finds none), with at most ``descent_share`` of the budget;
3. **annealing** from it: a random neighbour of a random model each step, taken when better, or
   when worse by a relative ``d`` with probability ``exp(-d / T)``, ``T`` falling geometrically
   from ``t0`` to ``t1`` over the round; the best seen is kept;
4. a **descent** from the best seen (at least ``final_share`` of what the round had left); while
   budget is left, another round (3-4) starts from the best so far.

A neighbour of a model's pipeline (``neighbours``): a stage moved to a device the model does not
use, two stages' devices swapped, a boundary shifted by 1, 2, 4, ... layers, two neighbouring
stages merged onto either's device, a stage split onto an unused device (at its middle, its
quarters, or one layer from either end), the model whole on one device, or the model's pipeline
in another start. Every candidate keeps FairBoost's masking rule (distinct devices per model);
an illegal one scores ``WORST`` (math.inf).

The budget counts distinct candidates scored by the contention model (a candidate met again is
read from a cache, not counted), and every random choice comes from the caller's generator: the
result depends on the seed and the budget, never on the machine's speed. Numbers only.
"""
from __future__ import annotations

import itertools
import math
from typing import Callable, Iterator, Sequence

import numpy as np

from ..multi.mix import MixProblem, Pipeline, Stage
from .polish import boundary_moves

Pipes = tuple[Pipeline, ...]

#: the annealing temperature, relative to the incumbent's score: from T0 down to T1
T0, T1 = 0.1, 0.002
#: the share of the budget the first descent may take, and the share kept for the last one
DESCENT_SHARE, FINAL_SHARE = 0.3, 0.15
#: annealing steps in a row that meet only plans already scored before a round gives up (a space
#: this small is exhausted)
STALE_STEPS = 500


class Budget:
    """``key`` with a cache; ``spent`` counts the distinct candidates scored, up to ``limit``."""

    def __init__(self, key: Callable[[Pipes], float], limit: int) -> None:
        self._key = key
        self.limit = limit
        self.spent = 0
        self.cache: dict[Pipes, float] = {}

    @property
    def left(self) -> bool:
        return self.spent < self.limit

    def __call__(self, pipes: Pipes) -> float:
        v = self.cache.get(pipes)
        if v is None:
            v = self._key(pipes)
            self.cache[pipes] = v
            self.spent += 1
        return v


def whole_assignments(mix: MixProblem, limit: int) -> list[Pipes]:
    """Every assignment of whole models to devices where each runs whole (enumeration order), at
    most ``limit`` of them (the first ones)."""
    legal = [[d for d in range(mix.n_devices) if mix.stage_legal(m, mix.whole(m, d)[0])] for m in range(mix.n_models)]
    out: list[Pipes] = []
    for combo in itertools.product(*legal):
        if len(out) >= limit:
            break
        out.append(tuple(mix.whole(m, d) for m, d in enumerate(combo)))
    return out


def neighbours(mix: MixProblem, pipe: Pipeline, pool: Sequence[Pipeline] = ()) -> Iterator[Pipeline]:
    """Model pipelines one move from ``pipe`` (the module docstring), the masking rule kept."""
    D, n = mix.n_devices, len(pipe)
    L = pipe[-1].stop
    used = {st.device for st in pipe}
    for i, st in enumerate(pipe):                          # a stage onto an unused device
        for d in range(D):
            if d not in used:
                yield pipe[:i] + (Stage(d, st.first, st.stop),) + pipe[i + 1:]
    for i in range(n):                                     # two stages' devices swapped
        for j in range(i + 1, n):
            out = list(pipe)
            out[i] = Stage(pipe[j].device, pipe[i].first, pipe[i].stop)
            out[j] = Stage(pipe[i].device, pipe[j].first, pipe[j].stop)
            yield tuple(out)
    yield from boundary_moves(pipe)                        # a boundary shifted, two stages merged
    for i, st in enumerate(pipe):                          # split onto an unused device
        size = st.stop - st.first
        if size < 2:
            continue
        cuts = sorted({st.first + size // 2, st.first + 1, st.stop - 1, st.first + size // 4, st.stop - size // 4}
                      - {st.first, st.stop})
        for cut in cuts:
            for d in range(D):
                if d not in used:
                    yield pipe[:i] + (Stage(st.device, st.first, cut), Stage(d, cut, st.stop)) + pipe[i + 1:]
                    yield pipe[:i] + (Stage(d, st.first, cut), Stage(st.device, cut, st.stop)) + pipe[i + 1:]
    for d in range(D):                                     # whole on one device
        yield (Stage(d, 0, L),)
    yield from pool                                        # another start's pipeline


def descend(mix: MixProblem, current: Pipes, value: float, budget: Budget, pools: Sequence[Sequence[Pipeline]],
            rng: np.random.Generator) -> tuple[Pipes, float]:
    """Per model in turn, the first better neighbour (shuffled order) while one exists; ends at a
    local optimum (a whole sweep without a better neighbour) or when ``budget`` is spent."""
    stale, m = 0, 0
    while stale < mix.n_models and budget.left:
        cands = [c for c in neighbours(mix, current[m], pools[m]) if c != current[m]]
        found = False
        for i in rng.permutation(len(cands)):
            trial = current[:m] + (cands[int(i)],) + current[m + 1:]
            v = budget(trial)
            if v < value - 1e-12:
                current, value, found = trial, v, True
                break
            if not budget.left:
                break
        stale = 0 if found else stale + 1
        m = (m + 1) % mix.n_models
    return current, value


def search(mix: MixProblem, starts: Sequence[Sequence[Pipeline]], key: Callable[[Pipes], float], *,
           evaluations: int, rng: np.random.Generator, t0: float = T0, t1: float = T1,
           descent_share: float = DESCENT_SHARE, final_share: float = FINAL_SHARE) -> tuple[Pipes, dict]:
    """(the best pipelines found, stats: ``evaluations`` spent, ``start``: the index of the start
    the search went on from, ``start_value``: its key, ``accepted``: annealing steps taken,
    ``rounds``); ``key`` is minimised (the module docstring). A round that ends at a local optimum
    with budget left is followed by another from the best so far, until the budget is spent."""
    if not starts:
        raise ValueError("search needs at least one start")
    budget = Budget(key, max(1, evaluations))
    starts = [tuple(tuple(p) for p in s) for s in starts]
    pools = [sorted({s[m] for s in starts}, key=repr) for m in range(mix.n_models)]
    values = [budget(s) for s in starts]
    first = int(np.argmin(values))
    best, best_v = starts[first], values[first]
    room = int((1.0 - final_share) * (budget.limit - budget.spent))
    best, best_v = descend(mix, best, best_v, Budget(budget, int(descent_share * room)), pools, rng)
    memo: dict[tuple[int, Pipeline], list[Pipeline]] = {}
    accepted = rounds = 0
    while budget.left and math.isfinite(best_v):
        rounds += 1
        round_start = budget.spent
        anneal_end = budget.spent + int((1.0 - final_share) * (budget.limit - budget.spent))
        span = max(1, anneal_end - budget.spent)
        cur, cur_v = best, best_v
        stale = 0                              # steps in a row that scored no new plan
        while budget.spent < anneal_end and stale < STALE_STEPS:
            stale += 1
            m = int(rng.integers(mix.n_models))
            cands = memo.get((m, cur[m]))
            if cands is None:
                cands = memo[(m, cur[m])] = [c for c in neighbours(mix, cur[m], pools[m]) if c != cur[m]]
            if not cands:
                continue
            trial = cur[:m] + (cands[int(rng.integers(len(cands)))],) + cur[m + 1:]
            before = budget.spent
            v = budget(trial)
            if budget.spent > before:
                stale = 0
            if not math.isfinite(v):
                continue
            d = (v - cur_v) / max(abs(cur_v), 1e-9)
            temp = t0 * (t1 / t0) ** ((budget.spent - round_start) / span)
            if d <= 0 or rng.random() < math.exp(-d / temp):
                cur, cur_v, accepted = trial, v, accepted + 1
                if v < best_v - 1e-12:
                    best, best_v = trial, v
        best, best_v = descend(mix, best, best_v, budget, pools, rng)
        if budget.spent == round_start:       # nothing new to score: the space near here is exhausted
            break
    return best, {"evaluations": budget.spent, "start": first, "start_value": values[first], "accepted": accepted,
                  "rounds": rounds}

__all__ = ["Budget", "DESCENT_SHARE", "FINAL_SHARE", "STALE_STEPS", "T0", "T1", "descend", "neighbours", "search",
           "whole_assignments"]
