"""The compile pipeline: one explicit list of passes, in order (read top to bottom).

Analysis passes run once per model and target (``hetcc.analyse``); the plan and codegen steps
run per plan (``Analysis.plan`` / ``Analysis.emit``), as the two passes at the end when
``hetcc compile`` does everything in one go.
"""
from __future__ import annotations

from typing import Any, Callable, ClassVar

from hetcc.passes.canonicalize import Canonicalize
from hetcc.passes.constants import FindConstants
from hetcc.passes.costs import EstimateCosts, MemoryLookup
from hetcc.passes.layers import GroupLayers
from hetcc.passes.legality import CheckLegality
from hetcc.passes.shapes import AnnotateTensors
from hetcc.compiler.passmanager import Pass, PassResult
from hetcc.planners import PlanningProblem
from hetcc.compiler.program import ARTIFACT, COSTS, LEGALITY, PLAN, Program

#: the passes after the analyses (``--dump-after`` accepts them too)
PLAN_PASSES = ("partition", "codegen")


def analysis_passes(target: Any, *, max_cut_tensors: int = 1, profile_repeats: int | None = None,
                    profile_cache: bool = True, measurements: Any = None,
                    memory: MemoryLookup | None = None) -> list[Pass]:
    """The passes ``hetcc.analyse`` runs, in order. ``measurements`` (``--target FILE.csv``, a
    ``hetcc.measure.measured_target.Measurements``) replaces the costs pass by the file's costs.
    ``memory`` gives the costs pass the memory rows of the program (``--observations``)."""
    if measurements is not None:
        from hetcc.measure.measured_target import MeasuredCosts

        costs: Pass = MeasuredCosts(measurements)
    else:
        costs = EstimateCosts(target, repeats=profile_repeats, use_cache=profile_cache, memory=memory)
    return [
        AnnotateTensors(),
        FindConstants(),
        Canonicalize(target),          # exporter-specific forms -> what the devices support
        GroupLayers(max_cut_tensors),
        CheckLegality(target),
        costs,
    ]


def attach_hardware(problem: PlanningProblem, program: Program, target: Any) -> PlanningProblem:
    """Give the problem the target's hardware space (knobs) at its default configuration; the
    problem is unchanged for a target without knobs or a measured one."""
    from hetcc.compiler import costmodel

    space = costmodel.hardware_space(target, problem.layer_features, program.get(LEGALITY).mask)
    if space is None:
        return problem
    return space.apply(problem.replace(hardware=space), space.default_config())


class Partition(Pass):
    """Runs the planner(s): ``plan_fn() -> {name: Plan}`` (planners propose; codegen applies)."""

    name: ClassVar[str] = "partition"
    requires: ClassVar[tuple[str, ...]] = (COSTS,)
    ensures: ClassVar[tuple[str, ...]] = (PLAN,)

    def __init__(self, plan_fn: Callable[[], dict], label: str = "planning") -> None:
        self.plan_fn = plan_fn
        self.label = label

    def run(self, program: Program) -> PassResult:
        plans = self.plan_fn()
        program.put(PLAN, plans)
        summary = "; ".join(f"{name}: {len(p.slices)} slices, {p.latency_ms:.2f} ms, {p.energy_mj:.2f} mJ "
                            f"in {p.seconds * 1e3:.1f} ms" for name, p in plans.items())
        return PassResult(False, summary)


class Emit(Pass):
    """Writes the artifact: ``emit_fn(plans) -> path`` (passes.codegen)."""

    name: ClassVar[str] = "codegen"
    requires: ClassVar[tuple[str, ...]] = (PLAN,)
    ensures: ClassVar[tuple[str, ...]] = (ARTIFACT,)

    def __init__(self, emit_fn: Callable[[dict], Any], label: str = "writing the artifact") -> None:
        self.emit_fn = emit_fn
        self.label = label

    def run(self, program: Program) -> PassResult:
        path = self.emit_fn(program.get(PLAN))
        program.put(ARTIFACT, path)
        return PassResult(False, f"-> {path}")
