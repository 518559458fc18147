"""PlanContext: what travels with one planner run besides the problem and the objective.

After TVM's ``PassContext``: one object instead of long parameter lists. It carries the
planner's typed options, the seed (a numpy ``Generator``; torch is seeded from it on request),
a progress reporter, a budget (steps and/or seconds), a cache/checkpoint directory and a logger.
"""
from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Budget:
    """How much a planner may spend: evaluation steps and/or wall-clock seconds (None = no limit).

    An anytime planner (``exact``) returns its best plan so far when the budget runs out, with
    the proven gap to its lower bound in ``Plan.stats``."""

    steps: int | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        if self.steps is not None and self.steps < 1:
            raise ValueError("a step budget must be at least 1")
        if self.seconds is not None and not self.seconds > 0:
            raise ValueError("a time budget must be positive")

    @property
    def limited(self) -> bool:
        return self.steps is not None or self.seconds is not None


class ProgressTask:
    """One progress line: ``update(advance=1, **fields)`` and ``close()``; silent by default."""

    def update(self, advance: float = 1, **fields: Any) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> "ProgressTask":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Progress:
    """A progress reporter. The base class is silent (``--quiet``, not a terminal, tests)."""

    enabled = False

    def task(self, description: str, total: float | None = None) -> ProgressTask:
        return ProgressTask()


class _RichTask(ProgressTask):
    def __init__(self, progress: Any, description: str, total: float | None) -> None:
        self._p = progress
        self._p.start()
        self._id = progress.add_task(description, total=total, info="")

    def update(self, advance: float = 1, **fields: Any) -> None:
        info = "  ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in fields.items())
        self._p.update(self._id, advance=advance, info=info)

    def close(self) -> None:
        self._p.stop()


class RichProgress(Progress):
    """A rich progress bar on stderr (used when stderr is a terminal and not ``--quiet``)."""

    enabled = True

    def task(self, description: str, total: float | None = None) -> ProgressTask:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress as RP, TextColumn, TimeElapsedColumn

        progress = RP(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), TextColumn("{task.fields[info]}"),
                      console=Console(stderr=True), transient=True)
        return _RichTask(progress, description, total)


def default_progress(quiet: bool = False) -> Progress:
    """A rich bar when stderr is a terminal and not ``quiet``, else silence."""
    if quiet or not sys.stderr.isatty():
        return Progress()
    return RichProgress()


class PlanContext:
    """Seed, progress, budget, cache directory, logger and the planner's typed options."""

    def __init__(self, seed: int = 0, *, budget: Budget | None = None, progress: Progress | None = None,
                 cache_dir: str | Path | None = None, logger: logging.Logger | None = None,
                 options: Any = None) -> None:
        self.seed = int(seed)
        self.budget = budget or Budget()
        self.progress = progress or Progress()
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.logger = logger or logging.getLogger("hetcc.planners")
        self.options = options
        self.rng = np.random.default_rng(self.seed)
        self._t0 = time.perf_counter()

    def with_options(self, options: Any) -> "PlanContext":
        """A fresh context for one run: same settings, ``options`` set, new rng and clock."""
        return PlanContext(self.seed, budget=self.budget, progress=self.progress, cache_dir=self.cache_dir,
                           logger=self.logger, options=options)

    def elapsed(self) -> float:
        """Seconds since this context was made (the planner's clock)."""
        return time.perf_counter() - self._t0

    def out_of_budget(self, steps: int = 0) -> bool:
        """True once ``steps`` reached the step budget or the time budget is spent."""
        b = self.budget
        if b.steps is not None and steps >= b.steps:
            return True
        return b.seconds is not None and self.elapsed() >= b.seconds

    def seed_torch(self) -> None:
        """Seed torch from this context's generator (learning planners call it; torch is
        imported only here, never by ``import hetcc``)."""
        import torch

        torch.manual_seed(int(self.rng.integers(0, 2**31 - 1)))


__all__ = ["Budget", "PlanContext", "Progress", "ProgressTask", "RichProgress", "default_progress"]
