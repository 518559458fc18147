"""EvoSh Alg. 1 (evolution with shaving), the same evolution without shaving, and random search.

Every configuration evaluated is one step (on the board, one benchmark run); shaved
configurations are never evaluated and cost nothing. Shaving (Fig. 2) uses the monotone order of
every dimension: a configuration over the power cap shaves every configuration that dominates it
(>= on every dimension: at least as hungry), one within the cap every configuration it
dominates (at least as slow). The shaved set is kept as its two lists of pivots, so membership is
one vectorised comparison.

Choices where the paper is silent (documented in the README): the initial population's
evaluations count as steps and are shaved like the others; with fewer than two feasible
configurations in the sub-population the parents are the least over the cap; the mutation rate
rises by 0.05 per re-draw of one child and starts again at ``mutation`` for the next; a
configuration already evaluated is never re-drawn by evosh (shaving covers it) but may be by the
plain evolution (the paper's check is "in the population", so re-runs cost steps there).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .space import ConfigSpace

MAX_REDRAWS = 2000     # then a uniformly random unshaved configuration (by rejection)


class Shaved:
    """The shaved part of a space: configurations >= some over-cap pivot or <= some within-cap one.
    The pivots are kept stacked ([n, d] arrays grown on add), so a membership test is two
    vectorised comparisons however many pivots there are."""

    def __init__(self) -> None:
        self.over: list = []
        self.under: list = []
        self._o: np.ndarray | None = None
        self._u: np.ndarray | None = None

    def add(self, config: tuple[int, ...], over_cap: bool) -> None:
        c = np.asarray(config, dtype=np.int64)
        (self.over if over_cap else self.under).append(c)
        if over_cap:
            self._o = c[None] if self._o is None else np.vstack([self._o, c])
        else:
            self._u = c[None] if self._u is None else np.vstack([self._u, c])

    def __contains__(self, config) -> bool:
        c = np.asarray(config, dtype=np.int64)
        if self._o is not None and bool((c >= self._o).all(axis=1).any()):
            return True
        return self._u is not None and bool((c <= self._u).all(axis=1).any())

    def mask(self, configs: np.ndarray) -> np.ndarray:
        """[n] bool: which of ``configs`` [n, d] are shaved (one broadcast comparison per side)."""
        c = np.asarray(configs, dtype=np.int64)
        out = np.zeros(len(c), dtype=bool)
        if self._o is not None:
            out |= (c[:, None, :] >= self._o[None]).all(axis=2).any(axis=1)
        if self._u is not None:
            out |= (c[:, None, :] <= self._u[None]).all(axis=2).any(axis=1)
        return out


@dataclass
class Result:
    best: tuple[int, ...] | None        # the fastest configuration within the cap (None: none found)
    best_latency: float
    curve: list                          # best latency within the cap after each step (inf before any)
    evaluated: dict                      # config -> (latency ms, power mW)
    steps: int
    redraws: int = 0
    exhausted: bool = False              # every configuration was evaluated or shaved
    shaved: Shaved | None = None


def search(space: ConfigSpace, cap_mw: float, steps: int, rng: np.random.Generator, algorithm: str = "evosh",
           population: int = 20, subpopulation: int = 10, crossover: float = 0.5, mutation: float = 0.1,
           on_step: Callable[[int, float], None] = lambda step, best: None,
           stop: Callable[[int], bool] = lambda step: False) -> Result:
    """Run ``algorithm`` (evosh | evolution | random) for ``steps`` evaluations."""
    shave = algorithm == "evosh"
    shaved = Shaved()
    evaluated: dict[tuple[int, ...], tuple[float, float]] = {}
    curve: list[float] = []
    sizes = space.sizes
    res = Result(None, np.inf, curve, evaluated, 0, shaved=shaved)

    def run(c: tuple[int, ...]) -> None:
        t, p, _ = space.evaluate(c)
        evaluated[c] = (t, p)
        over = p > cap_mw * (1 + 1e-9)
        if not over and t < res.best_latency:
            res.best, res.best_latency = c, t
        if shave:
            shaved.add(c, over)
        curve.append(res.best_latency)
        res.steps = len(curve)
        on_step(res.steps, res.best_latency)

    def first_fresh(cands: np.ndarray, pop: list) -> int | None:
        """The index of the first fresh row of ``cands`` [k, d] (None: none is). evosh's evaluated
        configurations are all shaved (each is its own pivot), so one vectorised test decides."""
        if shave:
            ok = np.flatnonzero(~shaved.mask(cands))
            return int(ok[0]) if ok.size else None
        seen = evaluated if algorithm == "random" else set(pop)
        return next((i for i, row in enumerate(cands.tolist()) if tuple(row) not in seen), None)

    def draws(make: Callable[[int, int], np.ndarray], pop: list) -> tuple[tuple[int, ...] | None, int]:
        """Up to MAX_REDRAWS candidates, ``make(first, k)`` drawing the next ``k`` of them in one
        batch (a few first, more when those are all stale): (the first fresh one or None, how
        many were stale before it)."""
        done, k = 0, 4
        while done < MAX_REDRAWS:
            k = min(k, MAX_REDRAWS - done)
            cands = make(done, k)
            i = first_fresh(cands, pop)
            if i is not None:
                return tuple(int(v) for v in cands[i]), done + i
            done, k = done + k, k * 4
        return None, done

    def uniform_fresh(pop: list) -> tuple[int, ...] | None:
        return draws(lambda first, k: rng.integers(0, sizes, size=(k, len(sizes))), pop)[0]

    def rank(c: tuple[int, ...]) -> tuple[float, float]:
        t, p = evaluated[c]
        return max(0.0, p - cap_mw), t

    def breed(pop: list) -> tuple[int, ...] | None:
        """A child of the sub-population's two best, re-drawn with a rising mutation rate while it
        is not fresh; after MAX_REDRAWS a uniformly random fresh configuration (None: none left)."""
        sub = [pop[i] for i in rng.choice(len(pop), size=min(subpopulation, len(pop)), replace=False)]
        w1, w2 = (sorted(sub, key=rank) + sub[:1])[:2]
        a, b = np.asarray(w1), np.asarray(w2)
        d = len(sizes)

        def children(first: int, k: int) -> np.ndarray:
            mu = np.minimum(1.0, mutation + 0.05 * np.arange(first, first + k))[:, None]   # draw j: + 0.05 j
            child = np.where(rng.random((k, d)) < crossover, a, b)
            return np.where(rng.random((k, d)) < mu, rng.integers(0, sizes, size=(k, d)), child)

        child, stale = draws(children, pop)
        res.redraws += stale
        return child if child is not None else uniform_fresh(pop)

    pop: list[tuple[int, ...]] = []
    while len(curve) < steps and not stop(len(curve)):
        c = uniform_fresh(pop) if algorithm == "random" or len(pop) < population else breed(pop)
        if c is None:
            res.exhausted = True
            break
        if algorithm != "random":
            pop.append(c)
        run(c)
        if len(pop) > population:
            pop.pop(0)                     # the oldest goes
    return res


__all__ = ["MAX_REDRAWS", "Result", "Shaved", "search"]
