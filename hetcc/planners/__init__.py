"""Planners: numbers in, plans out (they see a PlanningProblem, never ONNX).

``plan(problem, objective, planner="auto", options=..., ctx=...)`` runs a registered planner and
applies the feasibility policy; ``hetcc planners`` lists them. See ``registry`` for the contract
and ``random.py`` for a whole planner in one short module.
"""
from __future__ import annotations

from .context import Budget, PlanContext, Progress, default_progress
from .metrics import METRICS, Metric, Objective, Violation, get_metric, register_metric
from .problem import (FEATURES, Cost, LayerFeatures, Plan, PlanningProblem, Slice, StateTable, WorkloadPlan,
                      WorkloadProblem)
from .registry import (PlannerSpec, all_specs, get_spec, parse_option_args, parse_options, planner_names,
                       register, resolve)
from .registry import run as plan

__all__ = ["Budget", "Cost", "default_progress", "FEATURES", "LayerFeatures", "METRICS", "Metric", "Objective", "Plan", "PlanContext",
           "PlannerSpec", "PlanningProblem", "Progress", "Slice", "StateTable", "Violation", "WorkloadPlan",
           "WorkloadProblem", "all_specs", "get_metric", "get_spec", "parse_option_args", "parse_options", "plan",
           "planner_names", "register", "register_metric", "resolve"]
