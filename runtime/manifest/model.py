"""The manifest's data model: the schema constants and limits, and the typed dataclasses of
``manifest.json`` (schema ``hetcc.manifest/2``) with the helpers that read their fields' types.

Every other module of the package derives from these dataclasses: the parser (``parse``), the
JSON Schema generator (``schema``), the cross-reference checks (``checks``). A field added here
is parsed, checked against its type and written into the generated schema without another edit.
Field metadata (``_meta``) carries a description and the JSON Schema constraints of the value.
"""
from __future__ import annotations

import dataclasses
import functools
import sys
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping

from ..errors import ManifestError

SCHEMA_ID = "hetcc.manifest/2"
MANIFEST_NAME = "manifest.json"
#: the cost table codegen writes beside the manifest (read by ``hetcc inspect``)
COSTS_NAME = "costs.json"
#: wall-clock times of the compile (planner, passes), written only with ``compile --timings``:
#: everything else in an artifact is identical across compiles of the same inputs and flags
TIMINGS_NAME = "timings.json"
TIMINGS_SCHEMA = "hetcc.timings/1"
SCHEMA_FILE = Path(__file__).parent.with_name("manifest.schema.json")
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
MAX_VARIANTS = 256
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
#: metadata key: the field is left out of the JSON form while it holds its default (fields added
#: after an artifact format settled, so artifacts that do not use them stay byte-identical)
OMIT_DEFAULT = "omit_default"
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
class LinkInfo(_Record):
    """A wireless link to remote devices (the target's ``links.<name>``): bandwidth and radio power
    as functions of the signal strength, interpolated linearly between the tabled levels, so a
    remote slice's cost is computed at the signal strength seen at run time (AutoScale Eq. 4)."""

    kind: str = field(metadata=_NONEMPTY)
    signal_dbm: tuple[float, ...] = field(metadata=_meta("increasing signal levels", minItems=1))
    bandwidth_mbps: tuple[float, ...] = field(metadata=_meta(minItems=1, item={"minimum": 0}))
    tx_power_mw: tuple[float, ...] = field(metadata=_meta(minItems=1, item={"minimum": 0}))
    rx_power_mw: tuple[float, ...] = field(metadata=_meta(minItems=1, item={"minimum": 0}))
    rtt_ms: float = field(metadata=_NONNEG)
    default_signal_dbm: float

    def _at(self, values: tuple[float, ...], signal_dbm: float | None) -> float:
        # the same interpolation as hetcc.targets' Link (the compiler's side): the runtime ships
        # alone and the targets import nothing of it, so each layer keeps its few lines
        s = self.default_signal_dbm if signal_dbm is None else float(signal_dbm)
        xs = self.signal_dbm
        if s <= xs[0]:
            return float(values[0])
        for i in range(1, len(xs)):
            if s <= xs[i]:
                w = (s - xs[i - 1]) / (xs[i] - xs[i - 1])
                return float(values[i - 1] + w * (values[i] - values[i - 1]))
        return float(values[-1])

    def bandwidth_mbps_at(self, signal_dbm: float | None = None) -> float:
        return self._at(self.bandwidth_mbps, signal_dbm)

    def tx_power_mw_at(self, signal_dbm: float | None = None) -> float:
        return self._at(self.tx_power_mw, signal_dbm)

    def rx_power_mw_at(self, signal_dbm: float | None = None) -> float:
        return self._at(self.rx_power_mw, signal_dbm)


@dataclass(frozen=True)
class TargetInfo(_Record):
    name: str = field(metadata=_NONEMPTY)
    sha256: str
    kind: Literal["modelled", "measured"]
    controls: HardwareControls | None = field(
        default=None, metadata=_meta("how the OS sets the devices' frequencies and the knobs (null or absent: "
                                     "the target has no control tables, nothing is applied)"))
    links: dict[str, LinkInfo] | None = field(default=None, metadata=_meta(
        "link name -> its tables, for a target with remote devices (absent: none)", key_pattern=r"^\S",
        omit_default=True))


@dataclass(frozen=True)
class RuntimeInfo(_Record):
    """Session settings the runtime applies."""

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


Precision = Literal["float32", "float16", "int8"]
PRECISIONS: tuple[str, ...] = typing.get_args(Precision)


@dataclass(frozen=True)
class Agreement(_Record):
    """How closely a low-precision variant's outputs follow the FP32 model on a fixed, seeded input
    set (random inputs; with the zoo's random weights this proxy stands in for accuracy)."""

    inputs: int = field(metadata=_meta("how many inputs were compared", minimum=1))
    seed: int = field(metadata=_NONNEG)
    top1: float = field(metadata=_meta("fraction of inputs whose first output has the same argmax", minimum=0,
                                       maximum=1))
    rel_error: float = field(metadata=_meta("mean ||y - y_fp32|| / ||y_fp32|| over the inputs and outputs",
                                            minimum=0))


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
    precision: Precision = field(default="float32", metadata=_meta(
        "the precision its slices compute in (they cast at their boundaries: inputs and outputs keep the "
        "model's types); absent: float32", omit_default=True))
    agreement: Agreement | None = field(default=None, metadata=_meta(
        "a low-precision variant's measured agreement with FP32 (absent: not measured)", omit_default=True))


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
class ContentionDevice(_Record):
    """One device shared by the workload's models: the one state it runs at, its predicted busy
    fraction and the models with a stage on it."""

    state: str = field(metadata=_meta("the device state it runs at (device@MHz), one for every model", minLength=1))
    utilisation: float = field(metadata=_meta("predicted busy fraction while all models run", minimum=0, maximum=1))
    models: tuple[str, ...] = field(metadata=_meta("the models with a stage on this device, in workload order"))
    busy: dict[str, float] = field(default_factory=dict, metadata=_meta(
        "model -> the predicted fraction of this device's time it takes (switches included)", key_pattern=r"^\S"))


@dataclass(frozen=True)
class ContentionStage(_Record):
    """One stage of a model's pipeline: layers first..stop-1 on one device (slice i = stage i)."""

    device: str = field(metadata=_NONEMPTY)
    first: int = field(metadata=_meta("first layer, inclusive (0-based)", minimum=0))
    stop: int = field(metadata=_meta("one past the last layer", minimum=1))


@dataclass(frozen=True)
class ContentionModel(_Record):
    """One model of the workload: its pipeline and its predicted throughputs (inferences/s)."""

    pipeline: tuple[ContentionStage, ...] = field(metadata=_meta(minItems=1))
    throughput_ips: float = field(metadata=_meta("while all models run at once", minimum=0))
    alone_ips: float = field(metadata=_meta("its pipeline alone on the board", minimum=0))
    ideal_ips: float = field(metadata=_meta("whole on the reference device (the GPU) alone: Jain's t_ideal",
                                            minimum=0))


@dataclass(frozen=True)
class ContentionMetrics(_Record):
    """The workload's predicted scores (FairBoost Table 3)."""

    throughput_ips: float = field(metadata=_meta("T_w: mean inferences/s over the models", minimum=0))
    normalised: float = field(metadata=_meta("T_w over T_w of every model whole on the reference device", minimum=0))
    jain: float = field(metadata=_meta("Jain's index of throughput / ideal", minimum=0, maximum=1))
    overall: float = field(metadata=_meta("O = normalised x jain", minimum=0))


@dataclass(frozen=True)
class Contention(_Record):
    """What the contention model predicts for a workload planned for models running at once."""

    devices: dict[str, ContentionDevice] = field(metadata=_meta("device name -> its share of the work",
                                                                key_pattern=r"^\S"))
    models: dict[str, ContentionModel] = field(metadata=_meta("model name -> its pipeline", key_pattern=r"^\S"))
    metrics: ContentionMetrics


@dataclass(frozen=True)
class Workload(_Record):
    objective: ObjectiveInfo
    planner: PlannerInfo
    feasible: bool
    violations: tuple[str, ...]
    models: tuple[WorkloadModel, ...] = field(metadata=_meta(minItems=1))
    contention: Contention | None = field(default=None, metadata=_meta(
        "a workload planned for models running at once (ga, optimum, fairboost, ...): per device and model what "
        "the contention model predicts; null for one planned model by model (independent)"))


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
# the dataclasses' field types, and their JSON form


@functools.lru_cache(maxsize=None)
def field_types(cls: type) -> dict[str, Any]:
    """Field name -> type of a manifest dataclass (the annotations resolved)."""
    return typing.get_type_hints(cls, globalns=vars(sys.modules[__name__]))


def required(f: dataclasses.Field) -> bool:
    """Whether a manifest must hold this field (it has no default)."""
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def is_union(tp: Any) -> bool:
    """Whether a field type is a union (``X | None``, ``Literal[...] | int``)."""
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def to_json(obj: Any) -> Any:
    """A dataclass tree as JSON-able data (tuples become lists, every field written)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)
                if not (f.metadata.get(OMIT_DEFAULT) and getattr(obj, f.name) == f.default)}
    if isinstance(obj, Mapping):
        return {str(k): to_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_json(v) for v in obj]
    return obj
