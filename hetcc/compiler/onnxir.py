"""onnx_ir, imported without sympy: ``from hetcc.compiler.onnxir import ir`` instead of ``import onnx_ir as ir``.

onnx-ir imports sympy at its own import only to hold it for symbolic dimension expressions
(``SymbolicDim`` arithmetic and ``"N+1"``-style dim params), which hetcc's static-shape models never
evaluate; importing sympy is about half of a ``hetcc compile`` process's start-up (0.4-0.6 s of
CPU here, every compile, every Ray worker of a sweep). So onnx-ir is imported with a stand-in
``sympy`` module in ``sys.modules``:

- while onnx-ir's modules run their top level, the stand-in hands out deferred callables for the
  few functions onnx-ir tabulates there (``_DEFERRED``: its expression parser's ``max``, ``min``,
  ``floor``, ``sqrt``, ``mod``), each calling the real function when called;
- once onnx-ir is imported the stand-in leaves ``sys.modules`` (a later ``import sympy`` anywhere
  gets the real package), and onnx-ir's own references to it import the real sympy on their first
  attribute access, so ``SymbolicDim`` behaves exactly as without the stand-in.

Anything else asked of the stand-in during the import (a future onnx-ir that uses sympy at its top
level) raises, and onnx-ir is imported again the plain way, with sympy. If sympy or onnx_ir is
already imported (torch imports sympy), nothing is done.
"""
from __future__ import annotations

import importlib
import sys
import types
from typing import Any

#: the sympy names onnx-ir's modules read at their top level (onnx_ir._symbolic_shapes' table of
#: the functions its expression parser allows)
_DEFERRED = frozenset({"Max", "Min", "floor", "sqrt", "Mod"})


class _Deferred:
    """sympy.NAME, looked up when first called."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module("sympy"), self.name)(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<sympy.{self.name}, imported on first call>"


class _StandIn(types.ModuleType):
    """The ``sympy`` that onnx-ir's modules see (see the module's docstring); ``done()`` once
    onnx-ir is imported."""

    def __init__(self) -> None:
        super().__init__("sympy", "stand-in for sympy while onnx_ir is imported (hetcc.compiler.onnxir)")
        self.__dict__["_hetcc_importing"] = True

    def done(self) -> None:
        self.__dict__["_hetcc_importing"] = False

    def __getattr__(self, name: str) -> Any:
        if self.__dict__["_hetcc_importing"]:
            if name.startswith("__"):             # the import system's questions (__path__, ...)
                raise AttributeError(name)
            if name in _DEFERRED:
                return _Deferred(name)
            raise _NeedsSympy(name)
        real = importlib.import_module("sympy")
        self.__dict__.update(real.__dict__)          # later lookups are plain attribute reads
        return getattr(real, name)


class _NeedsSympy(Exception):
    """onnx-ir asked the stand-in for more than it holds: import it with sympy (not an
    AttributeError, which ``hasattr`` or ``from sympy import NAME`` would swallow or rename)."""


def _import_onnx_ir() -> types.ModuleType:
    if "onnx_ir" in sys.modules or "sympy" in sys.modules:
        return importlib.import_module("onnx_ir")
    stand_in = _StandIn()
    sys.modules["sympy"] = stand_in
    try:
        return importlib.import_module("onnx_ir")
    except _NeedsSympy:
        pass
    finally:
        stand_in.done()
        if sys.modules.get("sympy") is stand_in:
            del sys.modules["sympy"]
    for name in [m for m in sys.modules if m == "onnx_ir" or m.startswith("onnx_ir.")]:
        del sys.modules[name]                       # the half-imported onnx_ir: again, with sympy
    return importlib.import_module("onnx_ir")


ir = _import_onnx_ir()
