"""hetcc: a heterogeneity-aware compiler for ONNX models.

Kept light on purpose: ``import hetcc.runtime`` must work on a board with only numpy and
onnxruntime, so the public names below are imported lazily on first use (``hetcc.compile``
loads the compiler then); nothing here imports torch.

    hetcc.compile(model, target, objective, deadline=, power_cap=, ...)   -> CompileResult
    hetcc.analyse(model, target, ...)                                     -> Analysis (.plan, .emit)
    hetcc.compile_workload(models, target, ...)                           -> WorkloadResult
"""
from __future__ import annotations

__version__ = "0.2.0"

#: public name -> the module that defines it (imported on first use)
_LAZY = {
    # the API (hetcc.compiler.api)
    "analyse": "compiler.api", "compile": "compiler.api", "compile_workload": "compiler.api",
    "limits": "compiler.api", "Analysis": "compiler.api", "CompileResult": "compiler.api",
    "WorkloadResult": "compiler.api",
    # planning (hetcc.planners)
    "Objective": "planners", "Plan": "planners", "Slice": "planners", "WorkloadPlan": "planners",
    "PlanContext": "planners", "Budget": "planners", "Progress": "planners",
    "RichProgress": "planners.context",
    # errors (hetcc.core.errors)
    "HetccError": "core.errors", "UsageError": "core.errors", "ModelError": "core.errors",
    "TargetError": "core.errors", "InfeasibleError": "core.errors",
    # targets
    "load_target": "targets",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hetcc' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"hetcc.{module}"), name)
    globals()[name] = value      # once: later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
