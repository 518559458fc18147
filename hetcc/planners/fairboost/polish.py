"""Greedy descent from the agent's pipelines on THE contention model (beyond FairBoost; the
``fairboost`` planner's ``search=descent``; the default ``search=anneal`` is ``search.py``).

The agent decides block by block from latent codes alone; its mapping often lies a few moves from
a better one. ``descend`` takes, while one exists, the move that most lowers ``key`` (the
objective's score negated, ``multi.plans.Scorer.key``): for one model, a stage moved to a device
the model does not use, a stage boundary shifted by 1, 2, 4, ... layers, a stage split at its
middle onto an unused device, or two neighbouring stages merged onto either's device. Every
candidate keeps the masking rule (distinct devices per model) and is scored by the contention
model; illegal ones score worst. It stops when no move improves, after ``max_moves`` moves or
when ``out_of_time()`` says so (the planner's time budget only: the result does not depend on the
machine's speed). Numbers only.
"""
from __future__ import annotations

from typing import Callable, Iterator, Sequence

from ..multi.mix import MixProblem, Pipeline, Stage


def boundary_moves(pipe: Pipeline) -> Iterator[Pipeline]:
    """The moves at each boundary between two stages: shifted by 1, 2, 4, ... layers either way,
    and the two stages merged onto either's device (the descent's and the search's, ``search``)."""
    for i in range(len(pipe) - 1):
        a, b = pipe[i], pipe[i + 1]
        step = 1
        while step < b.stop - a.first:
            for cut in (a.stop - step, a.stop + step):
                if a.first < cut < b.stop:
                    yield pipe[:i] + (Stage(a.device, a.first, cut), Stage(b.device, cut, b.stop)) + pipe[i + 2:]
            step *= 2
        for d in (a.device, b.device):
            yield pipe[:i] + (Stage(d, a.first, b.stop),) + pipe[i + 2:]


def _moves(mix: MixProblem, pipe: Pipeline) -> Iterator[Pipeline]:
    D = mix.n_devices
    used = {st.device for st in pipe}
    for i, st in enumerate(pipe):                          # a stage onto an unused device
        for d in range(D):
            if d not in used:
                yield pipe[:i] + (Stage(d, st.first, st.stop),) + pipe[i + 1:]
    yield from boundary_moves(pipe)
    for i, st in enumerate(pipe):                          # split at the middle onto an unused device
        if st.stop - st.first < 2:
            continue
        mid = (st.first + st.stop) // 2
        for d in range(D):
            if d not in used:
                yield pipe[:i] + (Stage(st.device, st.first, mid), Stage(d, mid, st.stop)) + pipe[i + 1:]
                yield pipe[:i] + (Stage(d, st.first, mid), Stage(st.device, mid, st.stop)) + pipe[i + 1:]


def descend(mix: MixProblem, pipelines: Sequence[Pipeline], key: Callable[[Sequence[Pipeline]], float], *,
            max_moves: int = 200, out_of_time: Callable[[], bool] = lambda: False) -> tuple[tuple[Pipeline, ...], int]:
    """(the pipelines at the end of the descent, the number of moves taken); see the module docstring."""
    current = tuple(tuple(p) for p in pipelines)
    value = key(current)
    moves = 0
    while moves < max_moves and not out_of_time():
        best, best_value = None, value
        for m in range(mix.n_models):
            for cand in _moves(mix, current[m]):
                trial = current[:m] + (cand,) + current[m + 1:]
                v = key(trial)
                if v < best_value - 1e-12:
                    best, best_value = trial, v
            if out_of_time():
                break
        if best is None:
            break
        current, value = best, best_value
        moves += 1
    return current, moves


__all__ = ["descend"]
