"""Pass infrastructure (after onnx-ir's pass infra and torch.fx's): named passes that declare
the analyses they require and ensure; a manager that runs an explicit list in order, checks
prerequisites and records each pass's wall time, showing each as a progress line while it runs."""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from contextlib import contextmanager
from typing import Any, Callable, ClassVar, Iterator, Sequence

from hetcc.core.errors import PipelineError
from hetcc.compiler.program import Program

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PassResult:
    """What a pass did: whether it changed the graph, and a one-line summary for --verbose."""

    modified: bool = False
    summary: str = ""


class Pass:
    """Base class: configuration in ``__init__``, work in ``run(program)``."""

    name: ClassVar[str] = "pass"
    #: what the progress line says while the pass runs (default: the name)
    label: str = ""
    requires: ClassVar[tuple[str, ...]] = ()
    ensures: ClassVar[tuple[str, ...]] = ()

    def run(self, program: Program) -> PassResult:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass
class PassTiming:
    name: str
    seconds: float
    summary: str


@dataclass
class PassManager:
    """Runs passes in list order. ``on_pass`` is called after each (for --verbose); while a
    pass runs, ``progress`` (a ``hetcc.planners.Progress``; silent when None) shows a line for
    it and is the ``current_progress()`` of the pass's helpers."""

    passes: Sequence[Pass]
    on_pass: Callable[[PassTiming], None] | None = None
    dump_after: str | None = None
    dump: Callable[[Program, str], None] | None = None
    progress: Any = None
    timings: list[PassTiming] = field(default_factory=list)

    def run(self, program: Program) -> Program:
        producers = {key: p.name for p in self.passes for key in p.ensures}
        for p in self.passes:
            for key in p.requires:
                if not program.has(key):
                    hint = producers.get(key, "the pass that produces it")
                    raise PipelineError(f"pass {p.name!r} requires analysis {key!r}; run {hint!r} first")
            t0 = time.perf_counter()
            with step(self.progress, p.label or p.name):
                result = p.run(program)
            dt = time.perf_counter() - t0
            for key in p.ensures:
                if not program.has(key):
                    raise PipelineError(f"pass {p.name!r} promised analysis {key!r} but did not produce it")
            timing = PassTiming(p.name, dt, result.summary if result else "")
            self.timings.append(timing)
            logger.debug("pass %s: %.3f s %s", p.name, dt, timing.summary)
            if self.on_pass is not None:
                self.on_pass(timing)
            if self.dump_after == p.name and self.dump is not None:
                self.dump(program, p.name)
        return program


@contextmanager
def step(progress: Any, label: str) -> Iterator[Any]:
    """A progress line ``label`` with its elapsed time while the block runs (nothing when
    ``progress`` is None), and ``progress`` as the block's ``current_progress()``."""
    if progress is None:
        yield None
        return
    from hetcc.planners.context import using_progress

    with progress.task(label) as task, using_progress(progress):
        yield task
