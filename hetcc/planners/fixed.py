"""``even:<N>``: N slices of about equal latency, all on one device state.

Not an optimiser: it exists to measure what cutting costs (benchmarks/runtime_overhead.py, the
many-slice end-to-end tests). The state is the fastest max-frequency state on which the whole
model is legal as one slice."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hetcc.core.errors import InfeasibleError, UsageError
from .problem import Plan, PlanningProblem, Slice
from .registry import PlannerSpec


@dataclass(frozen=True)
class EvenOptions:
    slices: int = field(default=1, metadata={"doc": "number of slices (even:<N>)"})


def even_split(problem: PlanningProblem, slices: int, state: int | None = None) -> Plan:
    n_layers = problem.num_layers
    if slices < 1 or slices > n_layers:
        raise UsageError(f"even:{slices}: the model has {n_layers} layers; choose 1..{n_layers} slices")
    if state is None:
        candidates = [s for s in range(problem.num_states)
                      if problem.states.is_fmax[s] and problem.slice_legal(0, n_layers - 1, s)]
        if not candidates:
            raise InfeasibleError("even:N needs a device that can run the whole model; none can")
        state = min(candidates, key=lambda s: float(problem.latency_ms[:, s].sum()))
    cum = np.cumsum(problem.latency_ms[:, state])
    total = float(cum[-1])
    cuts: list[int] = []
    for k in range(1, slices):
        # last layer of slice k-1: where the running latency is nearest k/slices of the total
        idx = int(np.argmin(np.abs(cum - total * k / slices)))
        lo = (cuts[-1] + 1) if cuts else 0
        hi = n_layers - 1 - (slices - k)  # leave at least one layer for each remaining slice
        cuts.append(min(max(idx, lo), hi))
    bounds = [-1] + cuts + [n_layers - 1]
    return problem.evaluate([Slice(bounds[i] + 1, bounds[i + 1], state) for i in range(slices)])


SPECS = (PlannerSpec("even", "N slices of equal latency on the fastest device that runs the whole model "
                     "(measures what cutting costs)", lambda p, o, ctx: even_split(p, ctx.options.slices),
                     EvenOptions, positional="slices"),)
