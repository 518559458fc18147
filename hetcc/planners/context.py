"""PlanContext: what travels with one planner run besides the problem and the objective.

After TVM's ``PassContext``: one object instead of long parameter lists. It carries the
planner's typed options, the seed (a numpy ``Generator``; torch is seeded from it on request),
a progress reporter, a budget (steps and/or seconds), a cache/checkpoint directory and a logger.
"""
from __future__ import annotations

import logging
import math
import os
import sys
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

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

    def describe(self) -> str:
        """``10 s``, ``1000 steps``, ``10 s, 1000 steps`` or ``none``."""
        parts = ([f"{self.seconds:g} s"] if self.seconds is not None else []) + \
            ([f"{self.steps} steps"] if self.steps is not None else [])
        return ", ".join(parts) or "none"


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
    """A progress reporter. The base class is silent (``--quiet``, tests)."""

    enabled = False

    def task(self, description: str, total: float | None = None) -> ProgressTask:
        return ProgressTask()

    def finish(self) -> None:
        """Take the display off the terminal (before a summary prints); nothing to do here."""


class _RichTask(ProgressTask):
    def __init__(self, owner: "RichProgress", description: str, total: float | None) -> None:
        self._owner = owner
        self._id = owner._open(description, total)
        self._closed = False

    def update(self, advance: float = 1, **fields: Any) -> None:
        info = "  ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in fields.items())
        self._owner._bar.update(self._id, advance=advance, info=info)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._owner._close(self._id)


class RichProgress(Progress):
    """Rich progress lines on stderr (used when stderr is a terminal and not ``--quiet``).

    One display for all: a step (loading, a pass, planning) and the tasks opened inside it (a
    planner's search passes, the profiler's layers) show as lines under each other, each with its
    elapsed time; a line goes when its task closes, the display when the last one does."""

    enabled = True

    def __init__(self, console: Any = None) -> None:
        self._console = console
        self._bar: Any = None
        self._live = 0

    def task(self, description: str, total: float | None = None) -> ProgressTask:
        return _RichTask(self, description, total)

    def _open(self, description: str, total: float | None) -> Any:
        if self._bar is None:
            from rich.console import Console
            from rich.progress import BarColumn, Progress as RP, ProgressColumn, SpinnerColumn, TextColumn
            from rich.progress import TimeElapsedColumn
            from rich.text import Text

            class Count(ProgressColumn):      # "3/17", or nothing for a step without a total
                def render(self, task: Any) -> Any:
                    return Text("" if task.total is None else f"{task.completed:g}/{task.total:g}")

            console = self._console or Console(stderr=True)
            self._bar = RP(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(bar_width=24), Count(),
                           TimeElapsedColumn(), TextColumn("{task.fields[info]}"),
                           console=console, transient=True,
                           # a live display on a file or pipe is blank lines: none off a terminal
                           disable=not console.is_terminal,
                           # stdout's lines go above the display when both share the terminal;
                           # stdout sent to a file or pipe is left alone (its lines stay there)
                           redirect_stdout=_isatty(sys.stdout))
        task_id = self._bar.add_task(description, total=total, info="")
        self._live += 1
        if self._live == 1:
            self._bar.start()
        return task_id

    def finish(self) -> None:
        if self._bar is not None and self._live:
            self._live = 0
            self._bar.stop()

    def _close(self, task_id: Any) -> None:
        self._bar.remove_task(task_id)
        if self._live > 0:
            self._live -= 1
            if self._live == 0:
                self._bar.stop()


class _LineTask(ProgressTask):
    def __init__(self, owner: "LineProgress", description: str, total: float | None) -> None:
        self._owner = owner
        self._description = description
        self._total = total
        self._done = 0.0
        self._tenths = 0          # tenths of the total passed so far
        self._fields: dict[str, Any] = {}
        self._t0 = time.perf_counter()
        self._closed = False

    def update(self, advance: float = 1, **fields: Any) -> None:
        self._done += advance
        self._fields.update(fields)
        if not self._total or self._total <= 0:
            return
        tenths = min(int(self._done * 10 // self._total), 10)
        if tenths > self._tenths:
            self._tenths = tenths
            self._line(f"{tenths * 10}% ({self._done:g}/{self._total:g})")

    def _line(self, where: str) -> None:
        elapsed = time.perf_counter() - self._t0
        if elapsed < self._owner.after:
            return
        info = "".join(f", {k} {v:.4g}" if isinstance(v, float) else f", {k} {v}" for k, v in self._fields.items())
        self._owner.write(f"hetcc: {self._description}: {where}, {format_duration(elapsed)}{info}")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._total and self._total > 0 and self._tenths < 10:   # ended before its total (a budget, patience)
            self._line(f"ended at {self._done:g}/{self._total:g}")


class LineProgress(Progress):
    """Plain progress lines for a stderr that is not a terminal (a log file, CI, a pipe): a task
    with a total writes one line each time it passes another tenth of it, once it has run
    ``after`` seconds (a task that ends sooner, a compile's own steps, and tasks without a total
    write nothing), so a search of minutes (``dqn``) says how far it got:
    ``hetcc: dqn: 30% (3000/10000), 57.2 s``."""

    enabled = True

    def __init__(self, stream: Any = None, after: float = 5.0) -> None:
        self._stream = stream
        self.after = after

    def task(self, description: str, total: float | None = None) -> ProgressTask:
        return _LineTask(self, description, total)

    def write(self, line: str) -> None:
        stream = self._stream or sys.stderr      # looked up now: the one in use
        try:
            print(line, file=stream, flush=True)
        except (OSError, ValueError):            # a closed stderr: progress is not worth an error
            pass


def format_duration(seconds: float) -> str:
    """A wall time as a person reads it: ``812.4 ms`` under 10 s, ``189.5 s`` from 10 s on."""
    return f"{seconds * 1e3:.1f} ms" if seconds < 10 else f"{seconds:.1f} s"


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def default_progress(quiet: bool = False) -> Progress:
    """Silence with ``quiet``; else a rich bar when stderr is a terminal, plain lines every tenth
    of a long task's total when it is not (``LineProgress``)."""
    if quiet:
        return Progress()
    return RichProgress() if _isatty(sys.stderr) else LineProgress(after=_lines_after())


def _lines_after() -> float:
    """Seconds a task runs before ``LineProgress`` writes its first line: 5, or
    ``$HETCC_PROGRESS_AFTER`` (seconds, or ``never``; the test suite sets ``never`` so that what a
    command prints does not depend on how busy the machine is)."""
    text = os.environ.get("HETCC_PROGRESS_AFTER", "").strip().lower()
    if text == "never":
        return math.inf
    try:
        value = float(text)
    except ValueError:
        return 5.0
    return value if value >= 0 else 5.0


_current: ContextVar[Progress | None] = ContextVar("hetcc_progress", default=None)


def current_progress() -> Progress:
    """The progress of the step being run (``PassManager`` sets it, like TVM's
    ``PassContext.current()``), so a pass's helpers (the host profiler) can show their own
    lines without a parameter through every call; silent outside a step."""
    return _current.get() or Progress()


@contextmanager
def using_progress(progress: Progress | None) -> Iterator[None]:
    """Make ``progress`` the ``current_progress()`` inside the block."""
    token = _current.set(progress)
    try:
        yield
    finally:
        _current.reset(token)


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


__all__ = ["Budget", "LineProgress", "PlanContext", "Progress", "ProgressTask", "RichProgress", "current_progress",
           "default_progress", "format_duration", "using_progress"]
