"""``independent``: a workload planned model by model, each with its own optimal plan.

The simplest workload planner, proving the workload path end to end: it ignores contention
(models sharing a device run as if alone), so its plans are each model's optimum under the cost
model and the workload's limits apply to each model on its own.
"""
from __future__ import annotations

from .context import PlanContext
from .metrics import Objective
from .problem import WorkloadPlan, WorkloadProblem
from .registry import PlannerSpec, resolve, run


def plan_independent(workload: WorkloadProblem, objective: Objective, ctx: PlanContext) -> WorkloadPlan:
    name = resolve("auto", objective)
    plans = []
    with ctx.progress.task("independent", total=len(workload.problems)) as bar:
        for model, problem in zip(workload.names, workload.problems):
            plans.append(run(problem, objective, name, ctx=ctx, allow_infeasible=True))
            bar.update(1, model=model)
    return WorkloadPlan(plans=tuple(plans), names=workload.names,
                        stats={"per_model_planner": name,
                               "latency_ms": {n: p.latency_ms for n, p in zip(workload.names, plans)}})


SPECS = (PlannerSpec("independent", "each model's own optimal plan (auto), ignoring contention between models",
                     plan_independent, constraints=("deadline", "power_cap"), kind="workload"),)
