"""hetcc.runtime: run a compiled artifact (slices/*.onnx + manifest.json).

Imports only numpy, onnxruntime and the standard library, so it installs on a board alone::

    from hetcc.runtime import Executor
    ex = Executor("build/")          # verifies sha256s, opens one session per slice
    outputs = ex.run({"input": x})   # dict name -> numpy array; ex.last_timings per slice

    with Executor("build/", apply_hardware=True) as ex:   # sets the plan's knobs and frequencies
        print("\n".join(ex.hardware_report.lines()))      # what was applied or skipped, and why
        ex.run({"input": x})                              # (leaving the block puts them back)

On the command line, ``python -m hetcc.runtime run DIR`` / ``inspect DIR`` take the options of
``hetcc run`` / ``hetcc inspect`` (docs/runtime-alone.md: installing on a board with
``pip install --no-deps hetcc`` beside numpy and onnxruntime).

Submodules load on first use (PEP 562): ``import hetcc.runtime.manifest`` or
``hetcc.runtime.errors`` (what the compiler needs) does not import onnxruntime.

Importing this package turns onnxruntime's telemetry off for the process
(``ORT_DISABLE_TELEMETRY=1``, unless ``HETCC_ORT_TELEMETRY=1``; see ``onnxrt``), before any
submodule can import onnxruntime.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import onnxrt

onnxrt.configure()

_EXPORTS = {
    "Executor": "executor",
    "Pipeline": "executor", "Benchmark": "executor",
    "TensorSpec": "manifest",
    "ManifestError": "errors",
    "InputError": "errors",
    "RemoteSliceError": "errors",
    "SCHEMA_ID": "manifest",
    "Manifest": "manifest",
    "load_manifest": "manifest",
    "load_schema": "manifest",
    "manifest_schema": "manifest",
    "parse_manifest": "manifest",
    "validate_manifest": "manifest",
    "verify": "verification",
    "VerifyReport": "verification",
    "OutputDiff": "verification",
    "random_inputs": "verification",
    "apply_hardware": "hardware",
    "Hardware": "hardware",
    "HardwareReport": "hardware",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # pragma: no cover
    from .errors import InputError, ManifestError, RemoteSliceError
    from .executor import Executor, Pipeline
    from .hardware import Hardware, HardwareReport, apply_hardware
    from .manifest import (SCHEMA_ID, Manifest, TensorSpec, load_manifest, load_schema, manifest_schema,
                           parse_manifest, validate_manifest)
    from .verification import OutputDiff, VerifyReport, random_inputs, verify


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
