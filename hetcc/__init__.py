"""hetcc: a heterogeneity-aware compiler for ONNX models.

Kept light on purpose: ``import hetcc.runtime`` must work on a board with only numpy and
onnxruntime, so the compiler is imported lazily on first use of ``hetcc.compile`` /
``hetcc.analyse``; nothing here imports torch.
"""
from __future__ import annotations

__version__ = "0.2.0"
__all__ = ["analyse", "compile", "compile_workload", "__version__"]


def __getattr__(name: str):
    if name in ("analyse", "compile", "compile_workload"):
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'hetcc' has no attribute {name!r}")
