"""The artifact manifest (schema ``hetcc.manifest/2``): one definition, as typed dataclasses.

Codegen builds these dataclasses and writes ``Manifest.to_json()``; the runtime reads
``manifest.json`` back with ``parse_manifest`` (structure and types checked field by field,
with the key path in every message) and then the cross-references a type cannot express
(slice inputs come from the model or an earlier slice, every model output is produced exactly
once, paths stay inside the artifact directory). The JSON Schema ``manifest.schema.json`` is
*generated* from the dataclasses (``manifest_schema()``; ``python -m hetcc.runtime.manifest``
prints it) for tools that want one; a test checks the committed file is up to date.

Standard library only: the compiler imports this module for the dataclasses and a board
imports it without onnxruntime.

Why one module of ~850 lines: the dataclasses, the parser that checks them, the schema
generator and the cross-reference checks are one contract; split, a field added in one file
would be forgotten in another (the reason manifest v1 was described in four places).

An artifact is one of two kinds:

* ``kind: "model"``: one model, one or more ``variants`` (name -> plan: slices, planner,
  objective, prediction), a ``default_variant`` and optionally a ``policy`` file that picks
  among the variants at run time. Slice files are shared between variants when identical.
* ``kind: "workload"``: several models; the top manifest holds a ``workload`` block whose
  ``models`` point at ``models/<name>/`` sub-artifacts (each an ordinary model artifact).
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import math
import os
import re
import sys
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Iterable, Literal, Mapping

from .errors import ManifestError

__all__ = [
    "SCHEMA_ID",
    "MANIFEST_NAME",
    "COSTS_NAME",
    "TIMINGS_NAME",
    "NAME_PATTERN",
    "DTYPES",
    "TensorSpec",
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
]

logger = logging.getLogger(__name__)

SCHEMA_ID = "hetcc.manifest/2"
MANIFEST_NAME = "manifest.json"
#: the cost table codegen writes beside the manifest (read by ``hetcc inspect``)
COSTS_NAME = "costs.json"
#: wall-clock times of the compile (planner, passes), written only with ``compile --timings``:
#: everything else in an artifact is identical across compiles of the same inputs and flags
TIMINGS_NAME = "timings.json"
TIMINGS_SCHEMA = "hetcc.timings/1"
SCHEMA_FILE = Path(__file__).with_name("manifest.schema.json")
#: what codegen turns variant and model names into for file and directory names
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
SHA256_PATTERN = r"^[0-9a-f]{64}$"
#: where a hardware control may point: a path under /sys with no '.', '..' or empty parts and no
#: control characters (the runtime writes numbers there as root: nothing else may be a target)
SYSFS_PATTERN = r"^/sys(/(?!\.\.?(/|$))[^/\x00-\x1f\x7f]+)+$"

# Limits checked before a manifest is parsed or validated (docs/limits-artifacts.md), so that a
# hostile or damaged manifest is refused in milliseconds instead of minutes and gigabytes.
#: the largest manifest.json read (a real one is a few hundred KB even with many variants)
MAX_MANIFEST_BYTES = 16 << 20
#: the largest costs.json read (cost tables of a large model on a board with many states)
MAX_COSTS_BYTES = 64 << 20
#: JSON nesting depth (a manifest nests about 9 deep; planner options and stats add a few)
MAX_JSON_DEPTH = 32
#: digits of a JSON integer (a 64-bit value has at most 20)
MAX_INT_DIGITS = 20
#: slices of one variant, variants of a model artifact, models of a workload
MAX_SLICES = 4096
MAX_VARIANTS = 64
MAX_WORKLOAD_MODELS = 64
#: a manifest listing more slice files than this is read only if the artifact holds as many files
FILES_CHECKED_ABOVE = 256
#: runtime.intra_op_num_threads; the runtime also refuses more than 4 x the CPUs it runs on
MAX_THREADS = 1024

DType = Literal["float16", "float32", "float64", "int8", "int16", "int32", "int64",
                "uint8", "uint16", "uint32", "uint64", "bool"]
DTYPES: tuple[str, ...] = typing.get_args(DType)


def _meta(doc: str = "", **constraints: Any) -> dict:
    """Field metadata: a description and JSON Schema constraints of the (non-null) value."""
    out = dict(constraints)
    if doc:
        out["description"] = doc
    return out


_SHA = _meta(pattern=SHA256_PATTERN)
_NONNEG = _meta(minimum=0)
_NONEMPTY = _meta(minLength=1)


# ---------------------------------------------------------------------------------------------
# the dataclasses


class _Record:
    """Base of the manifest dataclasses: ``to_json()`` gives the JSON form (every field)."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        return to_json(self)


@dataclass(frozen=True)
class TensorSpec(_Record):
    """Name, numpy dtype name and static shape of a model or slice input or output."""

    name: str = field(metadata=_NONEMPTY)
    dtype: DType
    shape: tuple[int, ...] = field(metadata=_meta(item={"minimum": 0}))

    @classmethod
    def from_manifest(cls, spec: Any) -> "TensorSpec":
        if isinstance(spec, TensorSpec):
            return cls(spec.name, spec.dtype, tuple(spec.shape))
        return cls(str(spec["name"]), str(spec["dtype"]), tuple(int(d) for d in spec["shape"]))

    def __str__(self) -> str:
        return f"{self.dtype}{list(self.shape)}"


@dataclass(frozen=True)
class SliceInput(_Record):
    """A tensor a slice reads: from the model's inputs ("model") or from an earlier slice (its id)."""

    name: str = field(metadata=_NONEMPTY)
    dtype: DType
    shape: tuple[int, ...] = field(metadata=_meta(item={"minimum": 0}))
    source: Literal["model"] | int = field(metadata=_NONNEG)


@dataclass(frozen=True)
class SlicePredicted(_Record):
    latency_ms: float = field(metadata=_NONNEG)
    energy_mj: float | None = field(metadata=_meta("null when the target has no power model", minimum=0))
    transfer_ms: float = field(metadata=_NONNEG)


@dataclass(frozen=True)
class SliceSpec(_Record):
    """One slice: an ONNX file run on one device state, in list order."""

    id: int = field(metadata=_NONNEG)
    file: str = field(metadata=_meta("path relative to the artifact directory", minLength=1))
    sha256: str = field(metadata=_SHA)
    device: str = field(metadata=_NONEMPTY)
    frequency_mhz: float | None = field(metadata=_NONNEG)
    execution_provider: str = field(metadata=_NONEMPTY)
    provider_options: dict[str, Any]
    affinity: tuple[int, ...] | None = field(metadata=_meta(minItems=1, item={"minimum": 0}))
    link: str | None = field(metadata=_meta("remote devices: the link they are reached by (null = local)"))
    endpoint: str | None = field(metadata=_meta("remote devices: where the slice is served, when known"))
    first_layer: int = field(metadata=_NONNEG)
    last_layer: int = field(metadata=_NONNEG)
    inputs: tuple[SliceInput, ...]
    outputs: tuple[TensorSpec, ...] = field(metadata=_meta(minItems=1))
    predicted: SlicePredicted
    data: FileRef | None = field(default=None, metadata=_meta(
        "a large slice's weights, in a data file beside it (null or absent: embedded in the slice)"))

    @property
    def remote(self) -> bool:
        """Planned for a device reached over a link (the runtime does not run it locally unless told)."""
        return self.link is not None


@dataclass(frozen=True)
class ModelInfo(_Record):
    name: str
    sha256: str = field(metadata=_SHA)
    source_path: str | None
    ir_version: int = field(metadata=_meta(minimum=1))
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...] = field(metadata=_meta(minItems=1))


_SYSFS_PATH = _meta("a path under /sys (no '.' or '..' parts)", pattern=SYSFS_PATTERN)


@dataclass(frozen=True)
class DeviceControl(_Record):
    """How the OS sets a device's DVFS frequency (the target's ``devices.<name>.control``): one of
    ``cpufreq`` (a policy directory; scaling_min_freq / scaling_max_freq in kHz) or ``devfreq``
    (a devfreq device directory; min_freq / max_freq in Hz)."""

    cpufreq: str | None = field(default=None, metadata=_SYSFS_PATH)
    devfreq: str | None = field(default=None, metadata=_SYSFS_PATH)


@dataclass(frozen=True)
class KnobControl(_Record):
    """How the OS sets a hardware knob (the target's ``knobs.<name>.control``): ``hotplug`` (CPU
    ids; a value n puts the first n online through /sys/devices/system/cpu/cpuN/online, the rest
    offline) or ``clock`` (a rate file the value, in MHz, is written to in ``unit``; ``lock``: a
    file written 1 first so the rate holds, as BPMP's mrq_rate_locked)."""

    hotplug: tuple[int, ...] | None = field(default=None, metadata=_meta(minItems=1, item={"minimum": 0}))
    clock: str | None = field(default=None, metadata=_SYSFS_PATH)
    unit: Literal["Hz", "kHz", "MHz"] | None = None
    lock: str | None = field(default=None, metadata=_SYSFS_PATH)


@dataclass(frozen=True)
class HardwareControls(_Record):
    """What the runtime writes to apply a plan's hardware (``hetcc run --apply-hardware``)."""

    devices: dict[str, DeviceControl] = field(metadata=_meta("device name -> how its frequency is set"))
    knobs: dict[str, KnobControl] = field(metadata=_meta("knob name -> how it is set"))


@dataclass(frozen=True)
class TargetInfo(_Record):
    name: str = field(metadata=_NONEMPTY)
    sha256: str
    kind: Literal["modelled", "measured"]
    controls: HardwareControls | None = field(
        default=None, metadata=_meta("how the OS sets the devices' frequencies and the knobs (null or absent: "
                                     "the target has no control tables, nothing is applied)"))


@dataclass(frozen=True)
class RuntimeInfo(_Record):
    """Session settings the runtime applies (DESIGN.md, 'Runtime physics')."""

    allow_spinning: bool = False
    graph_optimization_level: Literal["all", "extended", "basic", "disable"] = "all"
    intra_op_num_threads: int | None = field(default=None, metadata=_meta(minimum=1, maximum=MAX_THREADS))


@dataclass(frozen=True)
class ObjectiveInfo(_Record):
    metric: str = field(metadata=_meta("a registered metric's name (latency, energy, edp, ...)", minLength=1))
    deadline_ms: float | None = field(metadata=_meta("resolved milliseconds", minimum=0))
    deadline_spec: str | None = field(metadata=_meta("what the user wrote when relative (medium, 1.3x)"))
    power_cap_mw: float | None = field(metadata=_NONNEG)


@dataclass(frozen=True)
class PlannerInfo(_Record):
    name: str = field(metadata=_NONEMPTY)
    options: dict[str, Any]
    stats: dict[str, Any] = field(metadata=_meta("planner-specific results (bound, gap, steps); wall-clock "
                                                 "entries are in timings.json"))
    seconds: float | None = field(default=None, metadata=_meta(
        "the planner's wall time: null (or absent) in an artifact hetcc writes now, which keeps manifest.json "
        "identical across compiles (compile --timings writes it to timings.json); a number in older artifacts",
        minimum=0))


@dataclass(frozen=True)
class Predicted(_Record):
    latency_ms: float = field(metadata=_NONNEG)
    energy_mj: float | None = field(metadata=_NONNEG)
    edp_mj_ms: float | None = field(metadata=_NONNEG)
    meets_deadline: bool | None


@dataclass(frozen=True)
class Variant(_Record):
    """One plan of the model: its slices and what it was planned for."""

    objective: ObjectiveInfo
    planner: PlannerInfo
    hardware: dict[str, Any] | None = field(metadata=_meta("knob -> value the plan needs (null: no knobs)"))
    feasible: bool
    violations: tuple[str, ...]
    slices: tuple[SliceSpec, ...] = field(metadata=_meta(minItems=1))
    predicted: Predicted


@dataclass(frozen=True)
class FileRef(_Record):
    file: str = field(metadata=_meta("path relative to the artifact directory", minLength=1))
    sha256: str = field(metadata=_SHA)


@dataclass(frozen=True)
class WorkloadModel(_Record):
    name: str = field(metadata=_NONEMPTY)
    dir: str = field(metadata=_meta("the sub-artifact directory, relative (models/<name>)", minLength=1))
    manifest_sha256: str = field(metadata=_SHA)


@dataclass(frozen=True)
class Workload(_Record):
    objective: ObjectiveInfo
    planner: PlannerInfo
    feasible: bool
    violations: tuple[str, ...]
    models: tuple[WorkloadModel, ...] = field(metadata=_meta(minItems=1))


@dataclass(frozen=True)
class Manifest(_Record):
    """``manifest.json``: a model artifact (``model`` + ``variants``) or a workload (``workload``)."""

    schema: Literal["hetcc.manifest/2"]
    hetcc_version: str = field(metadata=_NONEMPTY)
    kind: Literal["model", "workload"]
    target: TargetInfo
    runtime: RuntimeInfo
    model: ModelInfo | None = field(metadata=_meta("kind model: the model; null for a workload"))
    default_variant: str | None = field(metadata=_meta("kind model: the variant run when none is named"))
    variants: dict[str, Variant] = field(metadata=_meta("kind model: name -> plan; empty for a workload",
                                                        key_pattern=r"^\S"))
    policy: FileRef | None = field(metadata=_meta("optional: the file that picks a variant at run time"))
    workload: Workload | None = field(metadata=_meta("kind workload: the models and how they were planned"))

    # ---- conveniences ----
    @property
    def variant_names(self) -> tuple[str, ...]:
        return tuple(self.variants)

    def variant(self, name: str | None = None) -> Variant:
        """The variant ``name`` (default: ``default_variant``); ManifestError naming the choices."""
        if self.kind != "model":
            raise ManifestError("this is a workload artifact: pick a model (--model) first")
        key = self.default_variant if name is None else name
        if key not in self.variants:
            raise ManifestError(f"no variant {key!r} in this artifact; variants: {', '.join(self.variants)}")
        return self.variants[key]

    @property
    def slices(self) -> tuple[SliceSpec, ...]:
        """The default variant's slices (kind model)."""
        return self.variant().slices

    @property
    def model_names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.workload.models) if self.workload else ()


# ---------------------------------------------------------------------------------------------
# types <-> JSON


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, globalns=vars(sys.modules[__name__]))


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def to_json(obj: Any) -> Any:
    """A dataclass tree as JSON-able data (tuples become lists, every field written)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): to_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_json(v) for v in obj]
    return obj


def _fmt_path(parts: Iterable[Any]) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else str(p)
    return out or "(top level)"


def _short(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value) if not isinstance(value, str) else repr(value)
    except (TypeError, ValueError):
        text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _error(source: str, path: Iterable[Any], clause: str) -> ManifestError:
    return ManifestError(f"{source}: {_fmt_path(path)}: {clause}")


def _expect(tp: Any) -> str:
    """How a type reads in an error message."""
    if tp is type(None):
        return "null"
    if tp is bool:
        return "boolean"
    if tp is int:
        return "integer"
    if tp is float:
        return "number"
    if tp is str:
        return "string"
    if typing.get_origin(tp) is Literal:
        return " or ".join(_short(v) for v in typing.get_args(tp))
    if _is_union(tp):
        return " or ".join(_expect(a) for a in typing.get_args(tp))
    if typing.get_origin(tp) in (tuple, list):
        return "array"
    if typing.get_origin(tp) is dict or tp is dict or dataclasses.is_dataclass(tp):
        return "object"
    return "any"


class _Mismatch(Exception):
    """A value does not have the type (used to try the arms of a union)."""


def _matches(pattern: str, value: str) -> bool:
    """JSON Schema's pattern match, where an end-anchored pattern's '$' does not match before a
    trailing newline (Python's '$' does)."""
    return (re.fullmatch if pattern.endswith("$") else re.search)(pattern, value) is not None


def _check_constraints(value: Any, meta: Mapping[str, Any], source: str, path: list) -> None:
    if isinstance(value, str):
        if "minLength" in meta and len(value) < meta["minLength"]:
            raise _error(source, path, "must not be empty" if meta["minLength"] == 1
                         else f"shorter than {meta['minLength']}")
        pattern = meta.get("pattern")
        if pattern and not _matches(pattern, value):
            if pattern == SHA256_PATTERN:
                raise _error(source, path, f"{_short(value)} is not a lowercase hex sha256 (64 digits)")
            if pattern == SYSFS_PATTERN:
                raise _error(source, path, f"{_short(value)} is not a path under /sys without '.' or '..' "
                             "parts (the runtime writes nowhere else); recompile with a valid target file")
            raise _error(source, path, f"{_short(value)} does not match {pattern}")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in meta and value < meta["minimum"]:
            raise _error(source, path, f"{_short(value)} is below the minimum {meta['minimum']}; recompile")
        if "maximum" in meta and value > meta["maximum"]:
            raise _error(source, path, f"{_short(value)} is above the maximum {meta['maximum']}; recompile")
    elif isinstance(value, (list, tuple)):
        if "minItems" in meta and len(value) < meta["minItems"]:
            raise _error(source, path, f"needs at least {meta['minItems']} item(s), got {len(value)}")


def _parse(tp: Any, value: Any, source: str, path: list, meta: Mapping[str, Any]) -> Any:
    """``value`` (parsed JSON) as type ``tp``; ManifestError naming the key path otherwise."""
    if tp is Any:
        return value
    if _is_union(tp):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        for arm in args:
            if arm is type(None):
                continue
            try:
                return _parse_strict(arm, value, source, path, meta)
            except _Mismatch:
                continue
        raise _error(source, path, f"expected {_expect(tp)}, got {_type_name(value)} {_short(value)}")
    try:
        return _parse_strict(tp, value, source, path, meta)
    except _Mismatch:
        if typing.get_origin(tp) is Literal:
            allowed = typing.get_args(tp)
            if len(allowed) == 1:
                raise _error(source, path, f"expected {_short(allowed[0])}, got {_short(value)}") from None
            raise _error(source, path, f"{_short(value)} is not one of {', '.join(map(_short, allowed))}") from None
        raise _error(source, path, f"expected {_expect(tp)}, got {_type_name(value)} {_short(value)}") from None


def _parse_strict(tp: Any, value: Any, source: str, path: list, meta: Mapping[str, Any]) -> Any:
    """As ``_parse`` but raising _Mismatch when the value's JSON type does not fit ``tp``."""
    origin = typing.get_origin(tp)
    if tp is bool:
        if not isinstance(value, bool):
            raise _Mismatch
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Mismatch
        if isinstance(value, float):
            if not value.is_integer():
                raise _Mismatch
            value = int(value)
        _check_constraints(value, meta, source, path)
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Mismatch
        _check_constraints(value, meta, source, path)
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise _Mismatch
        _check_constraints(value, meta, source, path)
        return value
    if origin is Literal:
        for allowed in typing.get_args(tp):
            if type(value) is type(allowed) and value == allowed:
                return value
        raise _Mismatch
    if origin in (tuple, list):
        if not isinstance(value, list):
            raise _Mismatch
        _check_constraints(value, meta, source, path)
        (item_tp, *_) = typing.get_args(tp)
        item_meta = meta.get("item", {})
        return tuple(_parse(item_tp, v, source, path + [i], item_meta) for i, v in enumerate(value))
    if origin is dict or tp is dict:
        if not isinstance(value, dict):
            raise _Mismatch
        args = typing.get_args(tp)
        val_tp = args[1] if args else Any
        out = {}
        for k, v in value.items():
            if "key_pattern" in meta and not re.search(meta["key_pattern"], k):
                raise _error(source, path + [k], f"{k!r} is not a valid name (it must not be empty or start with a space)")
            out[k] = _parse(val_tp, v, source, path + [k], {})
        return out
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise _Mismatch
        hints = _hints(tp)
        fields = {f.name: f for f in dataclasses.fields(tp)}
        for key in value:
            if key not in fields:
                raise _error(source, path + [key], f"unexpected key (not in {SCHEMA_ID})")
        kwargs = {}
        for name, f in fields.items():
            if name not in value:
                if _required(f):
                    raise _error(source, path + [name], "required key is missing")
                continue
            kwargs[name] = _parse(hints[name], value[name], source, path + [name], f.metadata)
        return tp(**kwargs)
    raise TypeError(f"manifest field type {tp!r} is not supported")  # pragma: no cover


def _required(f: dataclasses.Field) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


# ---------------------------------------------------------------------------------------------
# the JSON Schema, generated


_CONSTRAINT_KEYS = ("minimum", "maximum", "minLength", "minItems", "pattern")


def _schema_of(tp: Any, meta: Mapping[str, Any], defs: dict) -> dict:
    constraints = {k: meta[k] for k in _CONSTRAINT_KEYS if k in meta}
    if tp is Any:
        return {}
    if _is_union(tp):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(tp))
        subs = [_schema_of(a, meta, defs) for a in args]
        if nullable and len(subs) == 1 and "type" in subs[0] and isinstance(subs[0]["type"], str):
            return {**subs[0], "type": [subs[0]["type"], "null"]}
        if nullable:
            subs.append({"type": "null"})
        return {"anyOf": subs}
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if tp in simple:
        return {"type": simple[tp], **constraints}
    origin = typing.get_origin(tp)
    if origin is Literal:
        values = list(typing.get_args(tp))
        return {"const": values[0]} if len(values) == 1 else {"enum": values}
    if origin in (tuple, list):
        (item_tp, *_) = typing.get_args(tp)
        out = {"type": "array", **constraints}
        out["items"] = _schema_of(item_tp, meta.get("item", {}), defs)
        return out
    if origin is dict or tp is dict:
        args = typing.get_args(tp)
        out: dict = {"type": "object"}
        if "key_pattern" in meta:
            out["propertyNames"] = {"pattern": meta["key_pattern"]}
        if args and args[1] is not Any:
            out["additionalProperties"] = _schema_of(args[1], {}, defs)
        return out
    if dataclasses.is_dataclass(tp):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # placeholder against recursion
            defs[name] = _dataclass_schema(tp, defs)
        return {"$ref": f"#/$defs/{name}"}
    raise TypeError(f"manifest field type {tp!r} is not supported")  # pragma: no cover


def _dataclass_schema(cls: type, defs: dict) -> dict:
    hints = _hints(cls)
    props = {}
    for f in dataclasses.fields(cls):
        sub = _schema_of(hints[f.name], f.metadata, defs)
        if "description" in f.metadata:
            sub = {"description": f.metadata["description"], **sub}
        props[f.name] = sub
    out: dict = {"type": "object", "additionalProperties": False,
                 "required": [f.name for f in dataclasses.fields(cls) if _required(f)],
                 "properties": props}
    doc = (cls.__doc__ or "").strip()
    if doc and not doc.startswith(cls.__name__ + "("):  # skip the dataclass-generated signature
        out = {"description": " ".join(doc.split()), **out}
    return out


@functools.lru_cache(maxsize=1)
def _generated_schema() -> str:
    defs: dict = {}
    top = _dataclass_schema(Manifest, defs)
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://hetcc.dev/schemas/hetcc.manifest-2.json",
        "title": SCHEMA_ID,
        "description": "GENERATED from the dataclasses in hetcc/runtime/manifest.py "
                       "(python -m hetcc.runtime.manifest > manifest.schema.json); do not edit. "
                       + top.pop("description", ""),
        **top,
        "$defs": dict(sorted(defs.items())),
    }
    return json.dumps(schema, indent=2) + "\n"


def manifest_schema() -> dict:
    """The manifest JSON Schema (draft 2020-12), generated from the dataclasses."""
    return json.loads(_generated_schema())


def schema_text() -> str:
    """``manifest_schema()`` as the committed ``manifest.schema.json`` holds it."""
    return _generated_schema()


def load_schema() -> dict:
    """The manifest JSON Schema as a fresh dict (the generated one; equal to the shipped file)."""
    return manifest_schema()


# ---------------------------------------------------------------------------------------------
# cross-reference checks


def _check_relative_path(rel: str, source: str, key: list) -> None:
    if re.search(r"[\x00-\x1f\x7f]", rel):
        raise _error(source, key, f"{rel!r} holds a control character (NUL, newline, ...), which no file "
                     "hetcc writes has; the manifest is damaged, recompile")
    bad = (
        "\\" in rel
        or rel.startswith("/")
        or re.match(r"^[A-Za-z]:", rel) is not None
        or os.path.isabs(rel)
        or ".." in PurePosixPath(rel).parts
    )
    if bad:
        raise _error(
            source, key,
            f"{rel!r} must be a relative path inside the artifact directory "
            "(no '/', drive, '\\' or '..' prefix parts); recompile",
        )


def _spec_str(spec: TensorSpec | SliceInput) -> str:
    return f"{spec.dtype}{list(spec.shape)}"


def _check_variant(model: ModelInfo, variant: Variant, source: str, base: list) -> None:
    model_inputs: dict[str, TensorSpec] = {}
    for i, spec in enumerate(model.inputs):
        if spec.name in model_inputs:
            raise _error(source, ["model", "inputs", i, "name"], f"duplicate input {spec.name!r}")
        model_inputs[spec.name] = spec

    producer: dict[str, tuple[int, TensorSpec]] = {}  # tensor name -> (slice id, spec)
    ids_seen: set[int] = set()
    files_seen: set[str] = set()
    for si, sl in enumerate(variant.slices):
        key0 = base + ["slices", si]
        sid = sl.id
        if sid in ids_seen:
            raise _error(source, key0 + ["id"], f"duplicate slice id {sid}")
        _check_relative_path(sl.file, source, key0 + ["file"])
        if sl.data is not None:
            _check_relative_path(sl.data.file, source, key0 + ["data", "file"])
        norm = str(PurePosixPath(sl.file))
        if norm in files_seen:
            raise _error(source, key0 + ["file"], f"{sl.file!r} is used by two slices")
        files_seen.add(norm)
        if sl.first_layer > sl.last_layer:
            raise _error(source, key0 + ["last_layer"],
                         f"last_layer {sl.last_layer} is before first_layer {sl.first_layer}")
        names_in: set[str] = set()
        for ii, spec in enumerate(sl.inputs):
            key = key0 + ["inputs", ii]
            name, src = spec.name, spec.source
            if name in names_in:
                raise _error(source, key + ["name"], f"duplicate input {name!r}")
            names_in.add(name)
            if src == "model":
                ref: Any = model_inputs.get(name)
                if ref is None:
                    raise _error(source, key + ["source"], f"{name!r} is not a model input")
                where = "model input"
            else:
                if src not in ids_seen:
                    raise _error(source, key + ["source"],
                                 f"slice {src} does not run before slice {sid} (slices run in list order)")
                got = producer.get(name)
                if got is None or got[0] != src:
                    raise _error(source, key + ["source"], f"{name!r} is not an output of slice {src}")
                ref = got[1]
                where = f"output of slice {src}"
            if ref.dtype != spec.dtype or tuple(ref.shape) != tuple(spec.shape):
                raise _error(source, key, f"{name!r} is {_spec_str(spec)} here but {_spec_str(ref)} as the {where}")
        for oi, spec in enumerate(sl.outputs):
            name = spec.name
            key = key0 + ["outputs", oi, "name"]
            if name in producer:
                raise _error(source, key, f"{name!r} is already produced by slice {producer[name][0]}")
            if name in model_inputs:
                raise _error(source, key, f"{name!r} is also a model input")
            producer[name] = (sid, spec)
        ids_seen.add(sid)

    out_names: set[str] = set()
    for oi, spec in enumerate(model.outputs):
        key = ["model", "outputs", oi]
        if spec.name in out_names:
            raise _error(source, key + ["name"], f"duplicate output {spec.name!r}")
        out_names.add(spec.name)
        got = producer.get(spec.name)
        if got is None:
            raise _error(source, base + ["slices"], f"model output {spec.name!r} is not produced by any slice")
        if got[1].dtype != spec.dtype or tuple(got[1].shape) != tuple(spec.shape):
            raise _error(source, key,
                         f"{spec.name!r} is {_spec_str(spec)} but slice {got[0]} produces {_spec_str(got[1])}")


def _check_consistency(m: Manifest, source: str) -> None:
    if m.kind == "model":
        for key, what in (("model", m.model), ("default_variant", m.default_variant)):
            if what is None:
                raise _error(source, [key], "a model artifact needs this (it is null)")
        if not m.variants:
            raise _error(source, ["variants"], "a model artifact needs at least one variant")
        if m.workload is not None:
            raise _error(source, ["workload"], "must be null in a model artifact (kind 'model')")
        if m.default_variant not in m.variants:
            raise _error(source, ["default_variant"],
                         f"{m.default_variant!r} is not a variant (variants: {', '.join(m.variants)})")
        file_sha: dict[str, tuple[str, list]] = {}
        for vname, variant in m.variants.items():
            _check_variant(m.model, variant, source, ["variants", vname])
            for si, sl in enumerate(variant.slices):
                key = ["variants", vname, "slices", si, "sha256"]
                norm = str(PurePosixPath(sl.file))
                seen = file_sha.setdefault(norm, (sl.sha256, key))
                if seen[0] != sl.sha256:
                    raise _error(source, key, f"{sl.file!r} has another sha256 at {_fmt_path(seen[1])}")
        if m.policy is not None:
            _check_relative_path(m.policy.file, source, ["policy", "file"])
    else:
        if m.workload is None:
            raise _error(source, ["workload"], "a workload artifact needs this (it is null)")
        for key, value in (("model", m.model), ("default_variant", m.default_variant), ("policy", m.policy)):
            if value is not None:
                raise _error(source, [key], "must be null in a workload artifact (kind 'workload')")
        if m.variants:
            raise _error(source, ["variants"], "must be empty in a workload artifact (kind 'workload')")
        names: set[str] = set()
        for i, wm in enumerate(m.workload.models):
            if wm.name in names:
                raise _error(source, ["workload", "models", i, "name"], f"duplicate model {wm.name!r}")
            names.add(wm.name)
            _check_relative_path(wm.dir, source, ["workload", "models", i, "dir"])


# ---------------------------------------------------------------------------------------------
# parsing and loading


def parse_manifest(doc: Any, source: str = MANIFEST_NAME) -> Manifest:
    """The typed manifest of a parsed ``manifest.json``; ManifestError (naming ``source`` and
    the key path) unless it is a valid ``hetcc.manifest/2`` document."""
    if not isinstance(doc, dict):
        raise ManifestError(f"{source}: expected a JSON object at the top level, got {_type_name(doc)}")
    schema_id = doc.get("schema")
    if schema_id != SCHEMA_ID:
        if schema_id is None:
            raise ManifestError(f"{source}: schema: required key is missing; not a hetcc manifest?")
        if isinstance(schema_id, str) and schema_id.startswith("hetcc.manifest/"):
            raise ManifestError(
                f"{source}: schema: this artifact is {schema_id}, an older or newer format than this "
                f"runtime reads ({SCHEMA_ID}); recompile the model with this hetcc version")
        raise ManifestError(
            f"{source}: schema: {_short(schema_id)} is not supported by this runtime "
            f"(it reads {SCHEMA_ID}); recompile with this hetcc version")
    _check_counts(doc, source)
    manifest = _parse(Manifest, doc, source, [], {})
    _check_consistency(manifest, source)
    return manifest


def _check_counts(doc: dict, source: str) -> None:
    """The cheap limits, before the typed parse: MAX_VARIANTS, MAX_SLICES per variant,
    MAX_WORKLOAD_MODELS (what is not a dict or list here is left to the parse to name)."""
    variants = doc.get("variants")
    if isinstance(variants, dict):
        if len(variants) > MAX_VARIANTS:
            raise _error(source, ["variants"], f"{len(variants)} variants; at most {MAX_VARIANTS} are read "
                         "(hetcc compile --variants writes one per planner); the manifest is damaged, recompile")
        for name, v in variants.items():
            slices = v.get("slices") if isinstance(v, dict) else None
            if isinstance(slices, list) and len(slices) > MAX_SLICES:
                raise _error(source, ["variants", name, "slices"],
                             f"{len(slices)} slices; at most {MAX_SLICES} are read (a plan has at most one "
                             "per layer, and far fewer in practice); the manifest is damaged, recompile")
    workload = doc.get("workload")
    models = workload.get("models") if isinstance(workload, dict) else None
    if isinstance(models, list) and len(models) > MAX_WORKLOAD_MODELS:
        raise _error(source, ["workload", "models"], f"{len(models)} models; at most {MAX_WORKLOAD_MODELS} "
                     "are read; the manifest is damaged, recompile")


def _listed_files(doc: Any) -> set[str]:
    """The slice and data files a raw (unvalidated) manifest lists, as written."""
    out: set[str] = set()
    variants = doc.get("variants") if isinstance(doc, dict) else None
    for v in variants.values() if isinstance(variants, dict) else ():
        for sl in (v.get("slices") if isinstance(v, dict) else None) or ():
            if isinstance(sl, dict):
                out.add(str(sl.get("file")))
                if isinstance(sl.get("data"), dict):
                    out.add(str(sl["data"].get("file")))
    return out


def _count_files(root: Path, enough: int) -> int:
    """Regular files under ``root`` (symlinks not followed), counting no further than ``enough``."""
    n = 0
    for _dirpath, _dirs, files in os.walk(root):
        n += len(files)
        if n >= enough:
            break
    return n


def validate_manifest(doc: Any, source: str = MANIFEST_NAME) -> None:
    """Raise ManifestError (naming ``source`` and the key path) unless ``doc`` is a valid manifest
    (a parsed JSON document or a ``Manifest``)."""
    if isinstance(doc, Manifest):
        doc = doc.to_json()
    parse_manifest(doc, source)


def artifact_root(artifact_dir: str | os.PathLike) -> Path:
    """The artifact directory given as itself or as its manifest.json; ManifestError if absent."""
    root = Path(artifact_dir)
    if root.is_file() and root.name == MANIFEST_NAME:
        root = root.parent
    if not root.exists():
        raise ManifestError(f"{artifact_dir}: no such directory; pass the directory hetcc compile wrote (-o)")
    if not root.is_dir():
        raise ManifestError(f"{artifact_dir}: not a directory; pass the directory hetcc compile wrote (-o)")
    return root


def _resolve_inside(root: str | os.PathLike, rel: str) -> tuple[Path, bool]:
    """(``root/rel`` with every symlink resolved, whether that is inside ``root`` resolved);
    ManifestError-free: a symlink loop or an unreadable component counts as outside."""
    try:
        base = Path(root).resolve()
        full = (base / rel).resolve()
    except (OSError, RuntimeError):  # a symlink loop (RuntimeError before Python 3.13)
        return Path(root) / rel, False
    try:
        full.relative_to(base)
    except ValueError:
        return full, False
    return full, True


def slice_path(root: str | os.PathLike, rel: str, source: str = MANIFEST_NAME, key: str = "file") -> Path:
    """The absolute path of an artifact file, refusing any that leaves the artifact directory."""
    _check_relative_path(rel, source, [key])
    full, inside = _resolve_inside(root, rel)
    if not inside:
        raise ManifestError(
            f"{source}: {key}: {rel!r} resolves outside the artifact directory (a symlink?); recompile"
        )
    return full


def artifact_file(root: str | os.PathLike, name: str, shown: str | None = None) -> Path:
    """The resolved path of a file the runtime or the CLI reads from an artifact directory by a
    fixed name (``manifest.json``, ``costs.json``, a workload model's ``manifest.json``):
    ManifestError naming the file (``shown``) if it resolves outside ``root`` (a symlink out of
    the artifact, a symlink loop). Whether it exists is the caller's question; open the path
    returned, not ``root / name``, so that what was checked is what is read."""
    full, inside = _resolve_inside(root, name)
    if not inside:
        shown = shown if shown is not None else os.path.join(str(root), name)
        raise ManifestError(f"{shown}: resolves outside the artifact directory (a symlink?); "
                            "refusing to read it — recompile")
    return full


class _Refused(ValueError):
    """A JSON value read_json does not accept (not finite, an integer too long)."""


def _finite(text: str) -> float:
    x = float(text)
    if x in (math.inf, -math.inf):
        raise _Refused(f"{text} is out of range for a number (it would read as infinity)")
    return x


def _short_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _constant(text: str) -> Any:
    raise _Refused(f"{text} is not a JSON number (JSON has no NaN or Infinity)")


def _printable(text: str) -> bool:
    """No NUL and no lone surrogate (a JSON escape such as \\ud800 that no encoder can print)."""
    if text.isascii():
        return "\x00" not in text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in text


def _check_tree(doc: Any, shown: str) -> None:
    """Refuse a document nested deeper than MAX_JSON_DEPTH or holding a string with a NUL or a lone
    surrogate (iteratively: no recursion to blow)."""
    stack = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            bad = next((k for k in value if not _printable(k)), None)
            children: Iterable[Any] = value.values()
        elif isinstance(value, list):
            bad, children = None, value
        else:
            continue
        if depth > MAX_JSON_DEPTH:
            raise ManifestError(f"{shown}: nested more than {MAX_JSON_DEPTH} levels deep; no file hetcc "
                                "writes is; the file is damaged, recompile")
        for v in children:
            if isinstance(v, (dict, list)):
                stack.append((v, depth + 1))
            elif isinstance(v, str) and bad is None and not _printable(v):
                bad = v
        if bad is not None:
            raise ManifestError(f"{shown}: the string {_short(bad)} holds a NUL or an unpaired surrogate (\\ud800), "
                                "which hetcc never writes; the file is damaged, recompile")


def read_json(path: Path, shown: str, max_bytes: int | None = None) -> Any:
    """A JSON file of an artifact; ManifestError naming ``shown`` when unreadable, larger than
    ``max_bytes`` (default: MAX_COSTS_BYTES for costs.json, else MAX_MANIFEST_BYTES), not JSON, nested deeper than MAX_JSON_DEPTH, or holding a number that is not
    finite (NaN, Infinity, 1e999: Python's json accepts them) or an integer over MAX_INT_DIGITS."""
    if max_bytes is None:
        max_bytes = MAX_COSTS_BYTES if Path(path).name == COSTS_NAME else MAX_MANIFEST_BYTES
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)   # never more, whatever the file (or /dev/zero) holds
    except OSError as e:
        raise ManifestError(f"{shown}: cannot read ({e.strerror or e}); recompile") from None
    if len(data) > max_bytes:
        raise ManifestError(f"{shown}: larger than {max_bytes >> 20} MiB, far more than hetcc writes; "
                            "the file is damaged or not hetcc's, recompile")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ManifestError(f"{shown}: not UTF-8 text (byte {e.start}); the file is damaged, recompile") from None
    try:
        doc = json.loads(text, parse_float=_finite, parse_int=_short_int, parse_constant=_constant)
    except json.JSONDecodeError as e:
        raise ManifestError(
            f"{shown}: not valid JSON (line {e.lineno} column {e.colno}: {e.msg}); the file is damaged, recompile"
        ) from None
    except _Refused as e:
        raise ManifestError(f"{shown}: {e}; the file is damaged, recompile") from None
    except RecursionError:
        raise ManifestError(f"{shown}: nested more than {MAX_JSON_DEPTH} levels deep; no file hetcc writes is; "
                            "the file is damaged, recompile") from None
    _check_tree(doc, shown)
    return doc


def check_costs(doc: Any, shown: str) -> None:
    """ManifestError naming ``shown`` and the key unless ``doc`` (a parsed ``costs.json``) has what
    ``hetcc inspect`` reads: an object whose ``layers`` is an array of objects, each with an
    ``op_types`` array of strings."""
    if not isinstance(doc, dict):
        raise ManifestError(f"{shown}: expected a JSON object; the file is damaged, recompile")
    layers = doc.get("layers")
    if layers is None:
        raise ManifestError(f"{shown}: layers: required key is missing; the file is damaged, recompile")
    if not isinstance(layers, list):
        raise ManifestError(f"{shown}: layers: expected an array, got {_type_name(layers)}; the file is damaged, "
                            "recompile")
    for i, layer in enumerate(layers):
        if not isinstance(layer, dict):
            raise ManifestError(f"{shown}: layers[{i}]: expected an object, got {_type_name(layer)}; the file is "
                                "damaged, recompile")
        ops = layer.get("op_types")
        if not isinstance(ops, list) or not all(isinstance(op, str) for op in ops):
            raise ManifestError(f"{shown}: layers[{i}].op_types: expected an array of strings; the file is "
                                "damaged, recompile")


def read_timings(root: str | os.PathLike) -> dict[str, float] | None:
    """The planner wall times in an artifact's ``timings.json`` (variant name, or ``"workload"``
    for a workload's own planner -> seconds); None when the artifact has none (the default: only
    ``compile --timings`` writes it). ManifestError naming the file and key when it is a symlink
    out of the artifact, not a regular file, not JSON or not ``hetcc.timings/1``."""
    shown = os.path.join(str(root), TIMINGS_NAME)
    path = artifact_file(root, TIMINGS_NAME, shown)
    if not path.exists():
        return None
    if not path.is_file():
        raise ManifestError(f"{shown}: not a regular file; the artifact is damaged, recompile")
    doc = read_json(path, shown)
    if not isinstance(doc, dict) or doc.get("schema") != TIMINGS_SCHEMA:
        raise ManifestError(f"{shown}: schema: expected {TIMINGS_SCHEMA!r}; the file is damaged or not hetcc's, "
                            "recompile (or delete it: it is optional)")
    seconds = doc.get("planner_seconds")
    if not isinstance(seconds, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in seconds.values()):
        raise ManifestError(f"{shown}: planner_seconds: expected an object of numbers >= 0; the file is damaged, "
                            "recompile (or delete it: it is optional)")
    return {str(k): float(v) for k, v in seconds.items()}


def read_manifest(artifact_dir: str | os.PathLike) -> tuple[Manifest, Path, str]:
    """(manifest, artifact root, the manifest path as shown in messages)."""
    root = artifact_root(artifact_dir)
    shown = os.path.join(str(artifact_dir), MANIFEST_NAME) if Path(artifact_dir) == root else str(artifact_dir)
    mpath = artifact_file(root, MANIFEST_NAME, shown)  # a manifest.json symlinked out is refused
    if not mpath.is_file():
        raise ManifestError(f"{artifact_dir}: no {MANIFEST_NAME}; is this a hetcc compile output directory?")
    doc = read_json(mpath, shown)
    if isinstance(doc, dict):
        _check_counts(doc, shown)
    listed = _listed_files(doc)
    if len(listed) > FILES_CHECKED_ABOVE:   # cheap before the parse: are those files even there?
        present = _count_files(root, len(listed))
        if present < len(listed):
            raise ManifestError(f"{shown}: lists {len(listed)} slice files but the artifact holds {present} "
                                "files; it is damaged or not hetcc's, recompile")
    manifest = parse_manifest(doc, shown)
    for vname, variant in manifest.variants.items():
        for i, sl in enumerate(variant.slices):
            slice_path(root, sl.file, shown, f"variants.{vname}.slices[{i}].file")
    if manifest.policy is not None:
        slice_path(root, manifest.policy.file, shown, "policy.file")
    if manifest.workload is not None:
        for i, wm in enumerate(manifest.workload.models):
            slice_path(root, wm.dir, shown, f"workload.models[{i}].dir")
    logger.debug("loaded %s: %s artifact", shown, manifest.kind)
    return manifest, root, shown


def load_manifest(artifact_dir: str | os.PathLike) -> Manifest:
    """Read and validate the manifest of a compile output directory (paths checked, files not)."""
    return read_manifest(artifact_dir)[0]


def sha256_file(path: str | os.PathLike, chunk_bytes: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes, read in chunks (slices can be hundreds of MB)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            block = f.read(chunk_bytes)
            if not block:
                break
            h.update(block)
    return h.hexdigest()


if __name__ == "__main__":  # python -m hetcc.runtime.manifest > runtime/manifest.schema.json
    sys.stdout.write(schema_text())
