"""The artifact manifest (schema ``hetcc.manifest/2``): one definition, as typed dataclasses.

Codegen builds these dataclasses and writes ``Manifest.to_json()``; the runtime reads
``manifest.json`` back with ``parse_manifest`` (structure and types checked field by field,
with the key path in every message) and then the cross-references a type cannot express
(slice inputs come from the model or an earlier slice, every model output is produced exactly
once, paths stay inside the artifact directory). The JSON Schema ``manifest.schema.json`` is
*generated* from the dataclasses (``manifest_schema()``; ``python -m hetcc.runtime.manifest``
prints it) for tools that want one; a test checks the committed file is up to date.

Standard library only: the compiler imports this package for the dataclasses and a board
imports it without onnxruntime.

The modules, each derived from the dataclasses so that a field is described in one place:

* ``model``: the constants and limits, the dataclasses, their field types and JSON form;
* ``messages``: how key paths, values and types read in a ManifestError;
* ``parse``: a parsed JSON document into the dataclasses (``parse_manifest``, ``validate_manifest``);
* ``checks``: the cross-reference checks that follow the parse;
* ``schema``: the generated JSON Schema (``manifest_schema``, ``schema_text``, ``load_schema``);
* ``read``: the artifact's files, read confined to its directory (``read_manifest``,
  ``load_manifest``, ``read_json``, ``artifact_file``, ``slice_path``, ``sha256_file``, ...).

This package re-exports their public names: import them from ``hetcc.runtime.manifest``.

An artifact is one of two kinds:

* ``kind: "model"``: one model, one or more ``variants`` (name -> plan: slices, planner,
  objective, prediction), a ``default_variant`` and optionally a ``policy`` file that picks
  among the variants at run time. Slice files are shared between variants when identical.
* ``kind: "workload"``: several models; the top manifest holds a ``workload`` block whose
  ``models`` point at ``models/<name>/`` sub-artifacts (each an ordinary model artifact).
"""
from __future__ import annotations

from .model import (COSTS_NAME, DTYPES, FILES_CHECKED_ABOVE, MANIFEST_NAME, MAX_COSTS_BYTES, MAX_INT_DIGITS,
                    MAX_JSON_DEPTH, MAX_MANIFEST_BYTES, MAX_SLICES, MAX_THREADS, MAX_VARIANTS, MAX_WORKLOAD_MODELS,
                    NAME_PATTERN, SCHEMA_FILE, SCHEMA_ID, SHA256_PATTERN, SYSFS_PATTERN, TIMINGS_NAME, TIMINGS_SCHEMA,
                    Agreement, DeviceControl, DType, FileRef, LinkInfo, PRECISIONS, Precision, HardwareControls, KnobControl, Manifest, ModelInfo, ObjectiveInfo,
                    PlannerInfo, Predicted, RuntimeInfo, SliceInput, SlicePredicted, SliceSpec, TargetInfo,
                    TensorSpec, Variant, Workload, WorkloadModel, to_json)
from .model import Contention, ContentionDevice, ContentionMetrics, ContentionModel, ContentionStage
from .parse import parse_manifest, validate_manifest
from .read import (artifact_file, artifact_root, check_costs, load_manifest, read_json, read_manifest, read_timings,
                   sha256_file, slice_path)
from .schema import load_schema, manifest_schema, schema_text

__all__ = [
    "SCHEMA_ID",
    "MANIFEST_NAME",
    "COSTS_NAME",
    "TIMINGS_NAME",
    "NAME_PATTERN",
    "DTYPES",
    "TensorSpec",
    "Contention",
    "ContentionDevice",
    "ContentionMetrics",
    "ContentionModel",
    "ContentionStage",
    "SliceInput",
    "SlicePredicted",
    "SliceSpec",
    "ModelInfo",
    "TargetInfo",
    "DeviceControl",
    "KnobControl",
    "HardwareControls",
    "RuntimeInfo",
    "ObjectiveInfo",
    "PlannerInfo",
    "Predicted",
    "Variant",
    "Agreement",
    "LinkInfo",
    "Precision",
    "PRECISIONS",
    "FileRef",
    "WorkloadModel",
    "Workload",
    "Manifest",
    "manifest_schema",
    "load_schema",
    "parse_manifest",
    "validate_manifest",
    "load_manifest",
    "read_manifest",
    "read_json",
    "check_costs",
    "read_timings",
    "artifact_root",
    "slice_path",
    "artifact_file",
    "sha256_file",
    # also public, as before the split: the other constants and limits, the types' JSON form,
    # the schema's committed text
    "TIMINGS_SCHEMA",
    "SCHEMA_FILE",
    "SHA256_PATTERN",
    "SYSFS_PATTERN",
    "MAX_MANIFEST_BYTES",
    "MAX_COSTS_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_SLICES",
    "MAX_VARIANTS",
    "MAX_WORKLOAD_MODELS",
    "FILES_CHECKED_ABOVE",
    "MAX_THREADS",
    "DType",
    "to_json",
    "schema_text",
]
