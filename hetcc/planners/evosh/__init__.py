"""``evosh``: EvoSh (evolution with shaving) — the fastest block mapping and/or hardware
configuration within a power cap, one evaluated configuration per step.

``space=mapping`` searches N blocks x {CPU, GPU} at the top frequencies, ``hardware`` the board's
knobs and DVFS levels for a fixed mapping, ``joint`` both (``space.py``). ``search=`` picks the
algorithm: ``evosh`` (the paper), ``evolution`` (the same without shaving), ``random``, or
``optimum`` — the exact optimum of the space: a dynamic program over runs of same-device blocks
for mappings (any N; ``mapping.py``), enumeration for the hardware space (vectorised over DVFS
levels); the joint space has no optimum here (2^N x 308,880 configurations).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from hetcc.core.errors import InfeasibleError, UsageError
from ..context import PlanContext
from ..metrics import Objective
from ..problem import Plan, PlanningProblem
from ..registry import PlannerSpec
from .mapping import best_mapping
from .search import search
from .space import ConfigSpace


@dataclass(frozen=True)
class EvoShOptions:
    space: Literal["mapping", "hardware", "joint"] = field(
        default="mapping", metadata={"doc": "what is searched: block->CPU/GPU mapping, hardware knobs + DVFS levels, or both"})
    blocks: int = field(default=9, metadata={"doc": "consecutive blocks of near-equal work the mapping assigns"})
    steps: int = field(default=200, metadata={"doc": "configurations evaluated (each is a run on the board in EvoSh)"})
    search: Literal["evosh", "evolution", "random", "optimum"] = field(
        default="evosh", metadata={"doc": "evosh; evolution (no shaving); random; optimum (exact, no steps)"})
    population: int = field(default=20, metadata={"doc": "population size (the initial random draws count as steps)",
                                                  "tune": ("choice", [10, 20, 40])})
    subpopulation: int = field(default=10, metadata={"doc": "sampled from the population to pick the two parents",
                                                     "tune": ("choice", [4, 6, 10])})
    crossover: float = field(default=0.5, metadata={"doc": "probability of taking each parameter from the first parent",
                                                    "tune": ("uniform", 0.2, 0.8)})
    mutation: float = field(default=0.1, metadata={"doc": "per-parameter mutation probability (+0.05 per re-draw)",
                                                   "tune": ("uniform", 0.02, 0.3)})
    cpu: str = field(default="", metadata={"doc": "the CPU device blocks map to (default: the fastest CPU)"})
    gpu: str = field(default="", metadata={"doc": "the GPU device (default: the fastest GPU)"})
    mapping: str = field(default="gpu", metadata={"doc": "space=hardware: the fixed mapping, gpu, cpu or c/g per block"})

    def validate(self) -> str | None:
        if self.blocks < 1 or self.steps < 1 or self.population < 2 or not 2 <= self.subpopulation:
            return "blocks and steps must be >= 1, population and subpopulation >= 2"
        if not (0.0 <= self.crossover <= 1.0 and 0.0 <= self.mutation <= 1.0):
            return "crossover and mutation are probabilities in [0, 1]"
        return None


def _run(problem: PlanningProblem, objective: Objective, ctx: PlanContext) -> Plan:
    o = ctx.options
    space = ConfigSpace.build(problem, o.space, o.blocks, o.cpu, o.gpu, o.mapping)
    cap = objective.power_cap_mw if objective.power_cap_mw is not None else np.inf
    base = {"space": o.space, "blocks": len(space.starts), "space_size": space.size, "devices": list(space.devices)}
    if o.search == "optimum":
        return optimum(space, cap, base)
    # wall and CPU seconds (this thread's) in space.evaluate: what a run on the board would replace
    inside = [0.0, 0.0]
    evaluate = space.evaluate

    def timed(config):
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            return evaluate(config)
        finally:
            inside[0] += time.perf_counter() - t0
            inside[1] += time.thread_time() - c0

    space.evaluate = timed
    cpu0 = time.thread_time()
    with ctx.progress.task(f"evosh ({o.search}, {o.space})", total=o.steps) as bar:
        res = search(space, cap, o.steps, ctx.rng, o.search, o.population, min(o.subpopulation, o.population),
                     o.crossover, o.mutation, on_step=lambda step, best: bar.update(1, best_ms=best),
                     stop=lambda step: ctx.out_of_budget(step))
    search_cpu = time.thread_time() - cpu0
    space.evaluate = evaluate
    stats = dict(base, steps=res.steps, redraws=res.redraws, exhausted=res.exhausted, eval_s=inside[0],
                 search_cpu_s=search_cpu, eval_cpu_s=inside[1],
                 curve_ms=[float(x) for x in res.curve],
                 shaved_pivots=len(res.shaved.over) + len(res.shaved.under))
    if res.best is None:
        # nothing within the cap: the least hungry configuration seen (the policy reports the miss)
        valid = [c for c, (t, _) in res.evaluated.items() if np.isfinite(t)]
        if not valid:
            raise InfeasibleError(f"evosh: none of the {res.steps} configurations tried can run the model "
                                  "(every one switches off a device a block needs); raise steps")
        pick = min(valid, key=lambda c: (res.evaluated[c][1], res.evaluated[c][0]))
    else:
        pick = res.best
    _, _, plan = space.evaluate(pick)
    return plan.replace(stats=dict(stats, config=space.describe(pick)))


def optimum(space: ConfigSpace, cap: float, base: dict | None = None) -> Plan:
    """The space's fastest configuration within ``cap`` mW as a plan (``search=optimum``; the
    benchmark's reference); ``base`` goes into its stats."""
    base = dict(base or {})
    if space.kind == "mapping":
        config, _, least = best_mapping(space, cap)
        if config is None:
            if not np.isfinite(least):
                raise InfeasibleError("no block mapping can run the model: some block has layers neither "
                                      f"{space.devices[0]} nor {space.devices[1]} can run; use other blocks")
            raise InfeasibleError(f"no block mapping meets the {cap:g} mW power cap: the lowest average "
                                  f"power of any mapping is {least:.0f} mW; relax --power-cap")
        stats = dict(base, method="dp over runs of blocks", optimal=True)
    elif space.kind == "hardware":
        config, _ = space.exhaustive(cap)
        if config is None:
            raise InfeasibleError(f"no configuration of the hardware space meets the {cap:g} mW power cap; "
                                  "relax --power-cap")
        stats = dict(base, method="enumeration", optimal=True)
    else:
        raise UsageError("search=optimum has no method for space=joint (2^N mappings x every hardware "
                         "configuration); use space=mapping or space=hardware")
    _, _, plan = space.evaluate(config)
    return plan.replace(stats=dict(stats, config=space.describe(config)))


SPECS = (PlannerSpec("evosh", "EvoSh: evolution with shaving over block->CPU/GPU mappings and hardware knobs; "
                     "min latency under a power cap (search=evolution|random|optimum for its baselines)",
                     _run, EvoShOptions, metrics=("latency",), constraints=("power_cap",), hardware=True),)

__all__ = ["EvoShOptions", "SPECS", "optimum"]
