"""The compile pipeline: one explicit list of passes, in order (read top to bottom)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from hetcc.optimizers.problem import Objective
from hetcc.passes.codegen import EmitArtifact, RuntimeSettings
from hetcc.passes.constants import FindConstants
from hetcc.passes.costs import EstimateCosts
from hetcc.passes.layers import GroupLayers
from hetcc.passes.legality import CheckLegality
from hetcc.passes.partition import Partition
from hetcc.passes.shapes import AnnotateTensors
from hetcc.passmanager import Pass


def build_pipeline(target: Any, objective: Objective, *, output_dir: str | Path | None,
                   planner: str = "auto", planner_options: dict[str, Any] | None = None,
                   max_cut_tensors: int = 1, runtime: RuntimeSettings | None = None,
                   profile_repeats: int | None = None, profile_cache: bool = True) -> list[Pass]:
    """The passes ``hetcc compile`` runs; without ``output_dir`` it stops after planning."""
    passes: list[Pass] = [
        AnnotateTensors(),
        FindConstants(),
        GroupLayers(max_cut_tensors),
        CheckLegality(target),
        EstimateCosts(target, repeats=profile_repeats, use_cache=profile_cache),
        Partition(objective, planner, planner_options),
    ]
    if output_dir is not None:
        passes.append(EmitArtifact(output_dir, target, objective, runtime, has_power_model=target.has_power_model))
    return passes
