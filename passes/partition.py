"""Partition: build the PlanningProblem from the cost table and run the chosen planner.

Planners only propose (numbers in, Plan out); codegen applies the plan to the graph."""
from __future__ import annotations

from typing import Any, ClassVar

from hetcc.costtable import CostTable
from hetcc.optimizers import plan as run_planner
from hetcc.optimizers.problem import Objective
from hetcc.passmanager import Pass, PassResult
from hetcc.program import COSTS, PLAN, Program


class Partition(Pass):
    name: ClassVar[str] = "partition"
    requires: ClassVar[tuple[str, ...]] = (COSTS,)
    ensures: ClassVar[tuple[str, ...]] = (PLAN,)

    def __init__(self, objective: Objective, planner: str = "auto", options: dict[str, Any] | None = None) -> None:
        self.objective = objective
        self.planner = planner
        self.options = dict(options or {})

    def run(self, program: Program) -> PassResult:
        costs: CostTable = program.get(COSTS)
        plan = run_planner(costs.problem(self.objective), self.planner, **self.options)
        program.put(PLAN, plan)
        return PassResult(False, f"{plan.planner}: {len(plan.slices)} slices, "
                                 f"{plan.latency_ms:.2f} ms, {plan.energy_mj:.2f} mJ in {plan.seconds * 1e3:.1f} ms")
