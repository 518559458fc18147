"""``optimum``: the exact best of a block-granular search space, on small mixes.

The space: per model every pipeline of 1..``max_stages`` stages on distinct devices (FairBoost's
masking) whose cuts fall on ``blocks`` evenly spaced block boundaries (layer ``round(i L /
blocks)``, i = 1..blocks-1); every combination of one such pipeline per model is scored by THE
contention model and the best under the objective kept (ties: the first in enumeration order).
Candidates with an illegal stage are dropped first. Per model that is
``sum_k C(blocks - 1, k - 1) x D! / (D - k)!`` pipelines (21 for 3 devices and 3 blocks), so
the space grows as that to the power of the mix size; a mix whose space exceeds ``limit``
combinations is refused in one line naming the bound and the options that shrink it. A budget
(``--budget-steps``: combinations, ``--budget-seconds``) stops it early with the best so far
(``stats["complete"]`` false: not proven).

It is exact over its space, not over every cut (``ga`` searches every layer boundary), so it is
not flagged ``exact``; tests/planners/multi/test_workload_planners.py checks it against plain
enumeration on tiny mixes.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from hetcc.core.errors import InfeasibleError, UsageError
from hetcc.planners.context import PlanContext
from hetcc.planners.metrics import Objective
from hetcc.planners.problem import WorkloadPlan, WorkloadProblem
from hetcc.planners.registry import PlannerSpec

from .baselines import WORKLOAD
from .mix import MixProblem, Pipeline, Stage
from .plans import WORST, Scorer, mix_of, workload_plan


@dataclass(frozen=True)
class OptimumOptions:
    blocks: int = field(default=3, metadata={"doc": "blocks per model: cuts only at its blocks-1 evenly spaced "
                                                     "boundaries (>= 1)"})
    max_stages: int = field(default=3, metadata={"doc": "stages per pipeline at most (1 to the board's devices)"})
    limit: int = field(default=200_000, metadata={"doc": "the most combinations it enumerates; a larger space is "
                                                          "refused"})
    min_jain: float = field(default=0.0, metadata={"doc": "fairness floor (0..1): the exact best among the plans "
                                                          "with Jain J at least this (when none reaches it, the best "
                                                          "of all); 0: off"})

    def validate(self) -> str | None:
        if self.blocks < 1:
            return f"blocks={self.blocks}: a model needs at least 1 block"
        if self.max_stages < 1:
            return f"max_stages={self.max_stages}: a pipeline has at least 1 stage"
        if self.limit < 1:
            return f"limit={self.limit}: enumerate at least 1 combination"
        if not 0.0 <= self.min_jain <= 1.0:
            return f"min_jain={self.min_jain:g}: Jain's index lies in 0..1"
        return None


def boundaries(n_layers: int, blocks: int) -> list[int]:
    """The interior cut points of ``blocks`` evenly spaced blocks (distinct, 0 < b < L)."""
    return sorted({round(i * n_layers / blocks) for i in range(1, blocks)} - {0, n_layers})


def candidates(mix: MixProblem, m: int, blocks: int, max_stages: int) -> list[Pipeline]:
    """Model ``m``'s legal pipelines of the space (enumeration order: stages, cuts, devices)."""
    L, D = mix.n_layers(m), mix.n_devices
    inner = boundaries(L, blocks)
    out: list[Pipeline] = []
    for k in range(1, min(max_stages, D) + 1):
        for cuts in itertools.combinations(inner, k - 1):
            bounds = (0, *cuts, L)
            for devs in itertools.permutations(range(D), k):
                pipe = tuple(Stage(d, bounds[i], bounds[i + 1]) for i, d in enumerate(devs))
                if all(mix.stage_legal(m, st) for st in pipe):
                    out.append(pipe)
    return out


def plan_optimum(workload: WorkloadProblem, objective: Objective, ctx: PlanContext) -> WorkloadPlan:
    opts: OptimumOptions = ctx.options
    mix = mix_of(workload)
    cands = [candidates(mix, m, opts.blocks, opts.max_stages) for m in range(mix.n_models)]
    for m, c in enumerate(cands):
        if not c:
            raise InfeasibleError(f"optimum: model {mix.names[m]!r} has no legal pipeline cut at {opts.blocks} "
                                  f"block(s) on at most {opts.max_stages} stage(s); raise blocks or max_stages, or use ga")
    space = math.prod(len(c) for c in cands)
    if space > opts.limit:
        raise UsageError(f"optimum: {space:,} combinations ({' x '.join(str(len(c)) for c in cands)} pipelines per "
                         f"model) exceed limit={opts.limit:,}; lower --planner-option blocks= or max_stages=, raise "
                         "limit=, or use --planner ga")
    scorer = Scorer(mix, objective)
    best, best_key, seen = None, WORST, 0
    with ctx.progress.task("optimum", total=space) as bar:
        for combo in itertools.product(*cands):
            k = scorer.key(combo, opts.min_jain)
            if k < best_key:
                best, best_key = combo, k
            seen += 1
            if seen % 256 == 0:
                bar.update(256)
                if ctx.out_of_budget(seen):     # a budget stops it: the best so far, not proven
                    break
    if best is None:
        raise InfeasibleError("optimum: no combination of the space can run")
    return workload_plan(workload, mix, best, scorer, {"space": space, "blocks": opts.blocks,
                                                       "max_stages": opts.max_stages, "min_jain": opts.min_jain,
                                                       "enumerated": seen,
                                                       "complete": seen == space})


SPECS = (PlannerSpec("optimum", "the exact best of every combination of pipelines (<= max_stages stages on distinct "
                     "devices, cuts at blocks evenly spaced boundaries per model); small mixes only", plan_optimum,
                     OptimumOptions, metrics=WORKLOAD, kind="workload"),)
