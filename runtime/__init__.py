"""hetcc.runtime: run a compiled artifact (slices/*.onnx + manifest.json).

Imports only numpy, onnxruntime and the standard library, so it installs on a board alone::

    from hetcc.runtime import Executor
    ex = Executor("build/")          # verifies sha256s, opens one session per slice
    outputs = ex.run({"input": x})   # dict name -> numpy array; ex.last_timings per slice
"""
from __future__ import annotations

from .errors import InputError, ManifestError
from .executor import Executor, TensorSpec
from .manifest import SCHEMA_ID, load_manifest, load_schema, validate_manifest
from .verify import OutputDiff, VerifyReport, random_inputs, verify

__all__ = [
    "Executor",
    "TensorSpec",
    "ManifestError",
    "InputError",
    "SCHEMA_ID",
    "load_manifest",
    "load_schema",
    "validate_manifest",
    "verify",
    "VerifyReport",
    "OutputDiff",
    "random_inputs",
]
