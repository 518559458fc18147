"""hetcc: a heterogeneity-aware compiler for ONNX models.

Kept light on purpose: ``import hetcc.runtime`` must work on a board with only numpy and
onnxruntime, so the compiler is imported lazily on first use of ``hetcc.compile``.
"""
from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["compile", "__version__"]


def __getattr__(name: str):
    if name == "compile":
        from .api import compile as _compile

        return _compile
    raise AttributeError(f"module 'hetcc' has no attribute {name!r}")
