"""FairBoost's baselines (Sec. 5.3), each a small workload planner scored by the contention model.

- ``all-gpu``: every model whole on the reference device (the GPU): the paper's baseline, the
  denominator of T_norm. A model that cannot run whole there takes the pipeline ``mix.baseline``
  gives it (its fastest whole device, else its fastest pipeline).
- ``rr:cpu`` / ``rr:gpu``: round-robin time slicing (``sharing="slice"``): models whole on the
  CPU clusters (each model to the cluster where the load so far plus its own time is least,
  longest model first: the paper's RR (CPU) uses big and LITTLE) or all on the GPU; each device
  gives its models a quantum in turn and pays its switch cost per quantum. A model that runs whole
  on none of those devices (an operator the GPU lacks) runs as ``all-gpu`` runs it, and the plan's
  stats name it (``not_whole_on_cpu`` / ``not_whole_on_gpu``).
- ``mosaic``: each model's own latency-optimal pipeline, blind to the others (MOSAIC [37] plans
  each DNN as if alone). It is ``dp``'s latency objective restricted to FairBoost's masking rule:
  a dynamic programme over (layer, devices used, last device) minimising the sum of the stages'
  latencies, so it never returns to a device it has left (an unrestricted ``dp`` plan may
  alternate devices, which a pipeline cannot do); where ``dp``'s plan does not revisit a device
  the two coincide (tests/planners/multi/test_baselines.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from hetcc.core.errors import InfeasibleError
from hetcc.planners.context import PlanContext
from hetcc.planners.metrics import Objective
from hetcc.planners.problem import WorkloadPlan, WorkloadProblem
from hetcc.planners.registry import PlannerSpec

from .mix import MixProblem, Pipeline
from .plans import Scorer, mix_of, workload_plan

#: the metrics every workload planner of contention scores (the first is the default objective)
WORKLOAD = ("overall", "throughput", "fairness")


def plan_all_gpu(workload: WorkloadProblem, objective: Objective, ctx: PlanContext) -> WorkloadPlan:
    mix = mix_of(workload)
    pipes = mix.baseline()
    return workload_plan(workload, mix, pipes, Scorer(mix, objective),
                         {"reference": mix.devices[mix.reference]})


@dataclass(frozen=True)
class RoundRobinOptions:
    on: Literal["cpu", "gpu"] = field(default="cpu", metadata={
        "doc": "cpu: models whole on the CPU clusters; gpu: all on the GPU (rr:cpu, rr:gpu)"})
    quantum_ms: float | None = field(default=None, metadata={
        "doc": "the time slice each model gets in turn (none: the contention model's default, 50 ms)"})

    def validate(self) -> str | None:
        if self.quantum_ms is not None and not self.quantum_ms > 0:
            return f"quantum_ms={self.quantum_ms:g}: the time slice must be > 0 ms"
        return None


def round_robin_pipelines(mix: MixProblem, on: str) -> tuple[Pipeline, ...]:
    """Every model whole on one device of kind ``on`` (the GPU: the reference device; CPUs:
    longest model first, each to the CPU where the load so far plus its own time is least)."""
    if on == "gpu":
        devices = [mix.reference]
    else:
        devices = [d for d, k in enumerate(mix.kinds) if k == "cpu"] if mix.kinds else []
        devices = [d for d in devices if d != mix.reference] or [d for d in range(mix.n_devices) if d != mix.reference]
    if not devices:
        raise InfeasibleError(f"rr:{on}: the board has no {on} device besides the reference "
                              f"({', '.join(mix.devices)})")
    whole = np.array([[mix.stage_ms(m, mix.whole(m, d)[0]) if mix.stage_legal(m, mix.whole(m, d)[0]) else math.inf
                       for d in devices] for m in range(mix.n_models)])
    load = np.zeros(len(devices))
    out: list[Pipeline] = list(mix.baseline())     # a model that runs whole on none of them: as all-gpu runs it
    for m in sorted(range(mix.n_models), key=lambda m: -float(np.min(whole[m]))):
        if not np.isfinite(whole[m]).any():
            continue
        i = int(np.argmin(load + whole[m]))
        load[i] += whole[m, i]
        out[m] = mix.whole(m, devices[i])
    return tuple(out)


def plan_round_robin(workload: WorkloadProblem, objective: Objective, ctx: PlanContext) -> WorkloadPlan:
    opts: RoundRobinOptions = ctx.options
    mix = mix_of(workload)
    pipes = round_robin_pipelines(mix, opts.on)
    apart = [n for m, (n, p) in enumerate(zip(mix.names, pipes)) if len(p) > 1 or
             (mix.kinds and (mix.kinds[p[0].device] == "gpu") != (opts.on == "gpu"))]
    return workload_plan(workload, mix, pipes, Scorer(mix, objective, sharing="slice", quantum_ms=opts.quantum_ms),
                         {"quantum_ms": opts.quantum_ms, "not_whole_on_" + opts.on: apart})


def latency_pipeline(mix: MixProblem, m: int) -> Pipeline:
    """Model ``m``'s pipeline of least latency (sum of its stages) under the masking rule
    (``MixProblem.masked_pipeline``)."""
    _, pipeline = mix.masked_pipeline(m, np.add)
    if not pipeline:
        raise InfeasibleError(f"mosaic: model {mix.names[m]!r} has no legal pipeline")
    return pipeline


def plan_mosaic(workload: WorkloadProblem, objective: Objective, ctx: PlanContext) -> WorkloadPlan:
    mix = mix_of(workload)
    pipes = []
    with ctx.progress.task("mosaic", total=mix.n_models) as bar:
        for m, name in enumerate(mix.names):
            pipes.append(latency_pipeline(mix, m))
            bar.update(1, model=name)
    return workload_plan(workload, mix, pipes, Scorer(mix, objective),
                         {"latency_ms": {n: float(mix.stages_ms(m, p).sum()) for m, (n, p) in
                                         enumerate(zip(mix.names, pipes))}})


SPECS = (
    PlannerSpec("all-gpu", "every model whole on the GPU at once (FairBoost's baseline, the T_norm denominator)",
                plan_all_gpu, metrics=WORKLOAD, kind="workload"),
    PlannerSpec("rr", "round-robin time slicing: models whole on the CPU clusters (rr:cpu) or the GPU (rr:gpu), "
                "one quantum each in turn, a switch cost per quantum", plan_round_robin, RoundRobinOptions,
                metrics=WORKLOAD, kind="workload", positional="on"),
    PlannerSpec("mosaic", "each model's own least-latency pipeline (dp under the masking rule), blind to the "
                "others (MOSAIC)", plan_mosaic, metrics=WORKLOAD, kind="workload"),
)
