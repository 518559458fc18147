"""Codegen: apply plans to the graph — one ONNX file per slice, ``manifest.json``
(``hetcc.manifest/2``, built from the runtime's own dataclasses) and ``costs.json`` (with the
capacity rule of any memory row applied, ``passes.costs.costs_document``) — written
through ``hetcc.files.atomic.atomic_directory``, so a failed or interrupted compile leaves nothing
behind and an existing output is replaced only on success.

Every slice is self-contained, whatever the source model keeps as external data: its weights are
embedded, or, for a slice with more than ``EMBED_LIMIT_BYTES`` of them, kept in a data file beside
it (``slices/<slice>.onnx.data``, a bare relative location); nothing refers outside the artifact.

``emit_artifact`` writes one model with one or more named plans (variants; identical slice
files are stored once); ``emit_workload`` writes several models as ``models/<name>/``
sub-artifacts under a top manifest with a ``workload`` block. The pass that calls
them is ``hetcc.compiler.pipeline.Emit``.

Over 600 lines as one module: a model artifact and a workload artifact share every piece of it
(the slice writer and its external-data handling, the manifest's info blocks, the slice store that
keeps identical files once, the one atomic swap); split, each half would import the other's privates.

Reproducible (docs/build-systems.md): every file is a function of the inputs alone, so two
compiles of the same inputs write the same bytes; wall times (the planners' ``seconds``, clock
readings in their stats) go only to the optional ``timings.json`` (``timings=``).
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import onnx
from hetcc.compiler.onnxir import ir

from hetcc import __version__
from hetcc.core.errors import ModelError, UsageError
from hetcc.compiler.frontend import (embed_external, external_base_dir, external_info, external_nbytes, external_path,
                            iter_tensor_protos)
from hetcc.files.atomic import atomic_directory
from hetcc.compiler.program import COSTS, LAYERS, TENSORS, Layer, Program, TensorInfo
from hetcc.compiler.costtable import JSONText
from hetcc.compiler.why import write_why
from hetcc.passes.costs import costs_document
from hetcc.runtime.manifest import (COSTS_NAME, MANIFEST_NAME, SCHEMA_ID, TIMINGS_NAME, TIMINGS_SCHEMA, DeviceControl,
                                    FileRef, HardwareControls, LinkInfo, KnobControl, Manifest, ModelInfo, ObjectiveInfo,
                                    PlannerInfo, Predicted, RuntimeInfo, SliceInput, SlicePredicted, SliceSpec,
                                    TargetInfo, TensorSpec, Variant, Workload, WorkloadModel, parse_manifest,
                                    sha256_file)
from hetcc.runtime.manifest import (Contention, ContentionDevice, ContentionMetrics, ContentionModel,
                                    ContentionStage)

logger = logging.getLogger(__name__)

MANIFEST = MANIFEST_NAME
COSTS_FILE = COSTS_NAME
TIMINGS_FILE = TIMINGS_NAME
#: the session settings the runtime applies; the manifest's own type
RuntimeSettings = RuntimeInfo

__all__ = ["RuntimeSettings", "SliceBoundary", "emit_artifact", "emit_workload",
           "slice_boundaries", "write_slice", "relocate_data", "MANIFEST", "COSTS_FILE", "TIMINGS_FILE",
           "EMBED_LIMIT_BYTES"]


def _spec(info: TensorInfo) -> TensorSpec:
    return TensorSpec(name=info.name, dtype=info.dtype, shape=tuple(info.shape))


def _slug(name: str) -> str:
    """``name`` as a file or directory name (letters, digits, '_', '.', '-')."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", str(name)).strip("-.") or "x"
    return slug if slug[0].isalnum() else f"x{slug}"


def _jsonable(value: Any) -> Any:
    """Planner options and stats as plain JSON (tuples -> lists, numpy scalars -> numbers,
    anything else -> its str; inf and nan -> null)."""
    def clean(x: Any) -> Any:
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, Mapping):
            return {str(k): clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        return x
    return clean(json.loads(json.dumps(value, default=lambda o: o.item() if hasattr(o, "item") else str(o))))


def _dumps_tables(doc: Mapping[str, Any]) -> str:
    """``json.dumps(doc, allow_nan=False)`` of a document whose top-level values may be JSON text
    already (``JSONText``: ``costs_document(program, encoded=True)``'s tables), written as they are."""
    return "{" + ", ".join(f"{json.dumps(k)}: {v if isinstance(v, JSONText) else json.dumps(v, allow_nan=False)}"
                           for k, v in doc.items()) + "}"


def _out_dir(out_dir: str | Path) -> Path:
    """``out_dir`` as a Path; UsageError for an empty one (Path("") would be the cwd)."""
    if not str(out_dir):
        raise UsageError("the output directory is empty (-o ''); name a directory, e.g. -o out")
    return Path(out_dir)


@dataclass(frozen=True)
class SliceBoundary:
    """Which tensors a slice reads from outside (and from where) and which it must export."""

    nodes: tuple[str, ...]
    inputs: tuple[tuple[str, str | int], ...]   # (tensor, "model" | producing slice id)
    outputs: tuple[str, ...]


def slice_boundaries(layers: tuple[Layer, ...], plan: Any, model_outputs: list[str]) -> list[SliceBoundary]:
    slice_of_layer = {}
    for sid, sl in enumerate(plan.slices):
        for l in range(sl.first, sl.last + 1):
            slice_of_layer[l] = sid
    producer_slice: dict[str, int] = {}
    for layer in layers:
        for out in layer.outputs:
            producer_slice[out] = slice_of_layer[layer.id]
    needed_later: dict[str, int] = {}
    for layer in layers:
        for name in layer.inputs:
            needed_later[name] = max(needed_later.get(name, -1), slice_of_layer[layer.id])
    result = []
    for sid, sl in enumerate(plan.slices):
        members = layers[sl.first:sl.last + 1]
        inputs: dict[str, str | int] = {}
        for layer in members:
            for name in layer.inputs:
                src = producer_slice.get(name)
                if src is None:
                    inputs.setdefault(name, "model")
                elif src != sid:
                    inputs.setdefault(name, src)
        outputs = [name for layer in members for name in layer.outputs
                   if needed_later.get(name, -1) > sid or name in model_outputs]
        result.append(SliceBoundary(nodes=tuple(n for layer in members for n in layer.nodes),
                                    inputs=tuple(inputs.items()), outputs=tuple(dict.fromkeys(outputs))))
    return result


#: a slice whose initializers total more than this many bytes keeps them in a data file beside it
#: (``slices/<slice>.onnx.data``) instead of in its protobuf: far below protobuf's 2 GiB limit, and
#: onnxruntime can map such a file instead of copying a huge protobuf. Smaller slices embed every
#: weight, so the sha256 the runtime checks covers them.
EMBED_LIMIT_BYTES = 100 * 2**20
#: in a slice with a data file, tensors up to this many bytes stay in the protobuf
EXTERNAL_MIN_BYTES = 1024
#: tensors of at least _ALIGN_FROM bytes start at a multiple of _ALIGN in a data file (mappable)
_ALIGN, _ALIGN_FROM = 1 << 16, 1 << 20


def write_slice(program: Program, bnd: SliceBoundary, path: Path, name: str) -> str | None:
    """Extract one slice's subgraph and save it (keeping the source IR version and functions),
    self-contained: no tensor refers to the source model's external data. Weights are embedded
    unless they total more than ``EMBED_LIMIT_BYTES``; then the initializers over
    ``EXTERNAL_MIN_BYTES`` go to ``<path name>.data`` beside it, referred to by that bare name
    (``relocate_data`` renames it). Returns the data file's name, or None when everything is
    embedded."""
    src = program.model
    graph = ir.convenience.extract(src.graph, [n for n, _ in bnd.inputs], list(bnd.outputs))
    extracted = {n.name for n in graph}
    missing = set(bnd.nodes) - extracted
    if missing:  # the layer analysis and the extractor must agree on what a slice holds
        raise RuntimeError(f"slice {name}: extractor dropped nodes {sorted(missing)[:3]}")
    graph.name = name
    canonical_initializers(graph, src.graph)
    model = ir.Model(graph, ir_version=src.ir_version, producer_name="hetcc", producer_version=__version__,
                     functions=list(src.functions.values()))
    proto = ir.to_proto(model)  # external tensors still point into the source model's data files
    base_dir = _source_base_dir(program)
    tensors = list(iter_tensor_protos(proto))
    weights = sum(_nbytes(t, base_dir) for t, is_init in tensors if is_init)
    data_name, moved = None, set()
    if weights > EMBED_LIMIT_BYTES:
        data_name, moved = _write_external(tensors, base_dir, path, f"{path.name}.data")
    for t, _ in tensors:  # what stays in the protobuf is embedded
        if id(t) not in moved and external_info(t) is not None:
            embed_external(t, base_dir)
    with open(path, "wb") as f:
        f.write(proto.SerializeToString(deterministic=True))  # the same bytes for the same slice, always
    return data_name


def canonical_initializers(graph: ir.Graph, source: ir.Graph) -> None:
    """Put ``graph``'s initializers in the source model's order. onnx-ir's extractor collects them
    in a set of values, whose order follows memory addresses: without this, two compiles of the
    same inputs could write the same slice with its weights in another order (other bytes)."""
    order = {n: i for i, n in enumerate(source.initializers)}
    values = sorted(graph.initializers.values(), key=lambda v: (order.get(v.name, len(order)), v.name or ""))
    graph.initializers.clear()
    for v in values:
        graph.register_initializer(v)


def _source_base_dir(program: Program) -> str:
    """The directory the source model's external data locations are relative to."""
    base = external_base_dir(program.model)
    if base is not None:
        return base
    return str(program.source_path.parent) if program.source_path else ""


def _nbytes(t: Any, base_dir: str) -> int:
    return external_nbytes(t, base_dir) if external_info(t) is not None else t.ByteSize()


def _write_external(tensors: list, base_dir: str, path: Path, data_file: str) -> tuple[str | None, set[int]]:
    """Move every initializer over EXTERNAL_MIN_BYTES (external in the source, or raw bytes in
    the protobuf) into the data file ``data_file`` beside ``path``; returns its name (None:
    nothing to move) and the ids of the tensors moved."""
    data = path.parent / data_file
    moved = []
    with open(data, "wb") as out:
        for t, is_init in tensors:
            if not is_init or t.data_type == onnx.TensorProto.STRING:
                continue
            info = external_info(t)
            if info is None and (not t.HasField("raw_data") or len(t.raw_data) <= EXTERNAL_MIN_BYTES):
                continue  # small, or typed fields (no raw bytes): stays in the protobuf
            size = len(t.raw_data) if info is None else external_nbytes(t, base_dir)
            if size <= EXTERNAL_MIN_BYTES:
                continue  # embedded below
            if size >= _ALIGN_FROM and out.tell() % _ALIGN:
                out.write(b"\0" * (-out.tell() % _ALIGN))
            offset = out.tell()
            if info is None:
                out.write(t.raw_data)
                t.ClearField("raw_data")
            else:
                _copy_range(external_path(info[0], base_dir), info[1], size, out)
            moved.append((t, offset, size))
    if not moved:  # nothing over EXTERNAL_MIN_BYTES: no data file
        data.unlink()
        return None, set()
    for t, offset, size in moved:
        del t.external_data[:]
        t.data_location = onnx.TensorProto.EXTERNAL
        for key, value in (("location", data_file), ("offset", str(offset)), ("length", str(size))):
            t.external_data.add(key=key, value=value)
    return data_file, {id(t) for t, _, _ in moved}


def _copy_range(src: Path, offset: int, size: int, out: Any, chunk: int = 1 << 24) -> None:
    with open(src, "rb") as f:
        f.seek(offset)
        left = size
        while left:
            block = f.read(min(chunk, left))
            if not block:
                raise ModelError(f"{src}: external data ends before offset {offset} + length {size}; "
                                 "the model's data file is truncated")
            out.write(block)
            left -= len(block)


def relocate_data(slice_file: Path, old: str, new: str) -> None:
    """Rename a slice's data file ``old`` (beside it) to ``new`` and point its tensors there."""
    directory = slice_file.parent
    (directory / old).replace(directory / new)
    proto = onnx.load(str(slice_file), load_external_data=False)
    for t, _ in iter_tensor_protos(proto):
        for entry in t.external_data:
            if entry.key == "location" and entry.value == old:
                entry.value = new
    with open(slice_file, "wb") as f:
        f.write(proto.SerializeToString(deterministic=True))


# ---------------------------------------------------------------------------------------------
# the manifest, from plans


def _objective_info(objective: Any) -> ObjectiveInfo:
    if objective is None:
        return ObjectiveInfo(metric="latency", deadline_ms=None, deadline_spec=None, power_cap_mw=None)
    return ObjectiveInfo(metric=str(objective.metric), deadline_ms=objective.deadline_ms,
                         deadline_spec=getattr(objective, "deadline_spec", None),
                         power_cap_mw=objective.power_cap_mw)


#: planner stats that are wall-clock times (exact's ``seconds``, dqn's ``wall_s``): they go to
#: timings.json, never into the manifest, which must not change from one compile to the next
_WALL_CLOCK_STATS = frozenset({"seconds", "wall_s"})


def _wall_clock(key: str) -> bool:
    return key in _WALL_CLOCK_STATS or key.endswith(("_seconds", "_wall_s"))


def _planner_info(src: Any) -> PlannerInfo:
    """The manifest's planner record: name, options and the stats that do not depend on the clock
    (no wall time: ``seconds`` is null; ``timings.json`` has it)."""
    stats = {k: v for k, v in dict(getattr(src, "stats", None) or {}).items() if not _wall_clock(str(k))}
    return PlannerInfo(name=src.planner or "unknown", options=_jsonable(dict(src.options or {})),
                       stats=_jsonable(stats), seconds=None)


def _planner_timing(src: Any) -> dict[str, Any]:
    """What ``_planner_info`` leaves out: the wall time and the wall-clock stats."""
    stats = {k: v for k, v in dict(getattr(src, "stats", None) or {}).items() if _wall_clock(str(k))}
    return {"seconds": float(src.seconds or 0.0), "stats": _jsonable(stats)}


def _write_timings(root: Path, planners: Mapping[str, Any], passes: Sequence[Any]) -> None:
    """``timings.json`` (``compile --timings``): the planners' wall times and wall-clock stats,
    the passes' wall times and when it was written; the only file of an artifact that changes
    between two compiles of the same inputs."""
    import datetime

    done = {str(name): _planner_timing(p) for name, p in planners.items()}
    doc = {"schema": TIMINGS_SCHEMA, "hetcc_version": __version__,
           "written_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "planner_seconds": {n: t["seconds"] for n, t in done.items()},
           "planner_stats": {n: t["stats"] for n, t in done.items() if t["stats"]},
           "passes": [{"name": str(t.name), "seconds": float(t.seconds)} for t in passes]}
    (root / TIMINGS_NAME).write_text(json.dumps(_jsonable(doc), indent=2, allow_nan=False) + "\n")


def _controls(target: Any) -> HardwareControls | None:
    """The target's control tables (how the OS sets each device's frequency and each knob), for
    the runtime's --apply-hardware; None when it has none."""
    devices = {d.name: DeviceControl(cpufreq=d.control.cpufreq, devfreq=d.control.devfreq)
               for d in target.devices if d.control is not None}
    knobs = {n: KnobControl(hotplug=k.control.hotplug, clock=k.control.clock, unit=k.control.unit,
                            lock=k.control.lock)
             for n, k in target.knobs.items() if k.control is not None}
    return HardwareControls(devices=devices, knobs=knobs) if devices or knobs else None


def _links(target: Any) -> dict[str, LinkInfo] | None:
    """The target's link tables (a remote slice's cost at the signal strength seen at run time);
    None for a target without links."""
    links = getattr(target, "links", None) or {}
    return {name: LinkInfo(kind=ln.kind, signal_dbm=tuple(ln.signal_dbm), bandwidth_mbps=tuple(ln.bandwidth_mbps),
                           tx_power_mw=tuple(ln.tx_power_mw), rx_power_mw=tuple(ln.rx_power_mw),
                           rtt_ms=float(ln.rtt_ms), default_signal_dbm=float(ln.default_signal_dbm))
            for name, ln in sorted(links.items())} or None


def _target_info(target: Any) -> TargetInfo:
    return TargetInfo(name=target.name, sha256=target.sha256, kind=target.kind, controls=_controls(target),
                      links=_links(target))


class _SliceStore:
    """Writes slice files into ``root/slices``, storing identical files once (by sha256)."""

    def __init__(self, root: Path, converter: Any = None) -> None:
        self.root = root
        self.by_sha: dict[str, str] = {}
        self.count = 0
        self.converter = converter      # hetcc.passes.precision.Converter: slices at a lower precision
        self.agreements: dict[str, Any] = {}   # file -> its Agreement with the FP32 slice (converted files)
        (root / "slices").mkdir(exist_ok=True)

    def add(self, program: Program, bnd: SliceBoundary, rel: str | None, graph_name: str,
            label: str, precision: str = "float32") -> tuple[str, str, FileRef | None]:
        """Write one slice; ``rel`` None names it by content (``slices/<label>_<sha256[:12]>.onnx``).
        Returns its path, sha256 and its data file (None: weights embedded). At a ``precision``
        other than float32 the slice is converted (``hetcc.passes.precision``; weights embedded)
        and its agreement with the FP32 slice kept in ``agreements``."""
        self.count += 1
        staging = self.root / "slices" / f".staging-{self.count}.onnx"
        data = write_slice(program, bnd, staging, graph_name)
        if precision != "float32":
            return self._add_converted(staging, data, rel, label, precision)
        ref = None
        if data is not None:  # a large slice's data file: named after the slice file, or by content
            data_sha = sha256_file(staging.parent / data)
            name = f"{Path(rel).name}.data" if rel else f"{label}_{data_sha[:12]}.onnx.data"
            relocate_data(staging, data, name)
            ref = FileRef(file=f"slices/{name}", sha256=data_sha)
        sha = sha256_file(staging)
        if sha in self.by_sha:
            staging.unlink()
            return self.by_sha[sha], sha, ref  # an equal slice has an equal, content-named data file
        rel = rel or f"slices/{label}_{sha[:12]}.onnx"
        staging.rename(self.root / rel)
        self.by_sha[sha] = rel
        return rel, sha, ref

    def _add_converted(self, staging: Path, data: str | None, rel: str | None, label: str,
                       precision: str) -> tuple[str, str, FileRef | None]:
        if self.converter is None:
            from hetcc.passes.precision import Converter

            self.converter = Converter()
        fp32 = onnx.load(str(staging)).SerializeToString(deterministic=True) if data is not None \
            else staging.read_bytes()          # a data file's weights embedded: the converted file holds them
        if data is not None:
            (staging.parent / data).unlink()
        low = self.converter.convert(fp32, precision)
        agreement = self.converter.agreement(fp32, precision)
        sha = hashlib.sha256(low).hexdigest()
        if sha in self.by_sha:
            staging.unlink()
            return self.by_sha[sha], sha, None
        staging.write_bytes(low)
        rel = rel or f"slices/{label}_{_TAG.get(precision, precision)}_{sha[:12]}.onnx"
        staging.rename(self.root / rel)
        self.by_sha[sha] = rel
        self.agreements[rel] = agreement
        return rel, sha, None


#: a precision's tag in a converted slice's file name
_TAG = {"float16": "fp16", "int8": "int8"}


def _variant(program: Program, target: Any, plan: Any, store: _SliceStore, by_content: bool,
             has_power: bool, objective: Any, precision: str = "float32") -> Variant:
    tensors: dict[str, TensorInfo] = program.get(TENSORS)
    layers: tuple[Layer, ...] = program.get(LAYERS)
    costs = program.get(COSTS)
    graph = program.graph
    model_outputs = [v.name for v in graph.outputs]
    bounds = slice_boundaries(layers, plan, model_outputs)
    slices = []
    for sid, (sl, bnd, cost) in enumerate(zip(plan.slices, bounds, plan.slice_costs)):
        state = costs.states[sl.state]
        device = target.device(state.device)
        # one plan: slices/00_cpu.onnx ...; variants: files named by layers and content, since one
        # file may serve several variants and devices. The graph name depends on the layers only,
        # so equal slices of two variants are equal files.
        rel = None if by_content else f"slices/{sid:02d}_{_slug(state.device)}.onnx"
        rel, sha, data = store.add(program, bnd, rel, f"{program.name}_L{sl.first}-L{sl.last}",
                                   f"L{sl.first:02d}-L{sl.last:02d}", precision)
        slices.append(SliceSpec(
            id=sid, file=rel, sha256=sha, device=state.device, frequency_mhz=state.frequency_mhz,
            execution_provider=device.execution_provider, provider_options=_jsonable(dict(device.provider_options)),
            affinity=tuple(device.affinity) if device.affinity else None,
            link=getattr(device, "link", None), endpoint=getattr(device, "endpoint", None),
            first_layer=sl.first, last_layer=sl.last,
            inputs=tuple(SliceInput(name=n, dtype=tensors[n].dtype, shape=tuple(tensors[n].shape), source=src)
                         for n, src in bnd.inputs),
            outputs=tuple(_spec(tensors[n]) for n in bnd.outputs),
            predicted=SlicePredicted(latency_ms=cost.latency_ms,
                                     energy_mj=cost.energy_mj if has_power else None,
                                     transfer_ms=cost.transfer_ms),
            data=data,
        ))
    obj = plan.objective if plan.objective is not None else objective
    deadline = getattr(obj, "deadline_ms", None)
    return Variant(
        objective=_objective_info(obj),
        planner=_planner_info(plan),
        hardware=_jsonable(dict(plan.hardware)) if plan.hardware else None,
        feasible=bool(getattr(plan, "feasible", True)),
        violations=tuple(str(v) for v in getattr(plan, "violations", ())),
        slices=tuple(slices),
        predicted=Predicted(latency_ms=plan.latency_ms,
                            energy_mj=plan.energy_mj if has_power else None,
                            edp_mj_ms=plan.edp_mj_ms if has_power else None,
                            meets_deadline=None if deadline is None
                            else bool(plan.latency_ms <= deadline * (1 + 1e-9))),
        precision=precision,
        agreement=_worst([store.agreements.get(s.file) for s in slices]) if precision != "float32" else None,
    )


def _worst(agreements: Sequence[Any]) -> Any:
    from hetcc.passes.precision import worst

    return worst(list(agreements))


def _write_model(root: Path, program: Program, target: Any, plans: Mapping[str, Any], *,
                 default_variant: str | None, runtime: RuntimeInfo | None, policy: Path | None,
                 has_power: bool, objective: Any = None, timings: Sequence[Any] | None = None,
                 precisions: Mapping[str, str] | None = None, converter: Any = None) -> Manifest:
    """Write one model artifact into the (fresh) directory ``root``; returns its manifest."""
    if not plans:
        raise UsageError("no plan to emit")
    names = [str(n) for n in plans]
    bad = [n for n in names if not n or n != n.strip()]
    if bad:
        raise UsageError(f"variant name {bad[0]!r}: names must not be empty or start/end with spaces")
    if default_variant is None:
        default_variant = names[0]
    if default_variant not in plans:
        raise UsageError(f"default variant {default_variant!r} is not one of {', '.join(names)}")
    tensors: dict[str, TensorInfo] = program.get(TENSORS)
    graph = program.graph
    store = _SliceStore(root, converter)
    precisions = precisions or {}
    variants = {str(name): _variant(program, target, plan, store, len(plans) > 1, has_power, objective,
                                    precisions.get(str(name), "float32"))
                for name, plan in plans.items()}
    policy_ref = None
    if policy is not None:
        policy = Path(policy)
        if not policy.is_file():
            raise UsageError(f"{policy}: no such policy file")
        (root / "policy").mkdir()
        dest = root / "policy" / _slug(policy.name)
        shutil.copyfile(policy, dest)
        policy_ref = FileRef(file=dest.relative_to(root).as_posix(), sha256=sha256_file(dest))
    model_inputs = [v.name for v in graph.inputs if v.name not in graph.initializers]
    manifest = Manifest(
        schema=SCHEMA_ID, hetcc_version=__version__, kind="model",
        target=_target_info(target), runtime=runtime or RuntimeInfo(),
        model=ModelInfo(name=program.name, sha256=program.source_sha256,
                        source_path=str(program.source_path) if program.source_path else None,
                        ir_version=program.model.ir_version,
                        inputs=tuple(_spec(tensors[n]) for n in model_inputs),
                        outputs=tuple(_spec(tensors[v.name]) for v in graph.outputs)),
        default_variant=str(default_variant), variants=variants, policy=policy_ref, workload=None,
    )
    _write_manifest(root, manifest)
    (root / COSTS_FILE).write_text(_dumps_tables(costs_document(program, encoded=True)) + "\n")
    write_why(root, program)   # why.json: the legality reasons (hetcc inspect --why)
    if timings is not None:
        _write_timings(root, plans, timings)
    return manifest


def _write_manifest(root: Path, manifest: Manifest) -> None:
    doc = manifest.to_json()
    parse_manifest(doc, str(root / MANIFEST))  # what we write is what the runtime reads
    (root / MANIFEST).write_text(json.dumps(doc, indent=2, allow_nan=False) + "\n")  # the reader refuses NaN


def _has_power(target: Any, has_power_model: bool | None) -> bool:
    if has_power_model is not None:
        return has_power_model
    return bool(getattr(target, "has_power_model", True))


def emit_artifact(out_dir: str | Path, program: Program, target: Any, plans: Mapping[str, Any], *,
                  default_variant: str | None = None, runtime: RuntimeInfo | None = None,
                  policy: Path | None = None, has_power_model: bool | None = None,
                  objective: Any = None, timings: Sequence[Any] | None = None,
                  precisions: Mapping[str, str] | None = None, converter: Any = None) -> Path:
    """Write the artifact of one model: ``slices/``, ``manifest.json``, ``costs.json``.

    ``plans``: variant name -> Plan (one entry = the ordinary artifact; several = variants whose
    identical slice files are stored once). ``default_variant``: what the runtime runs when no
    variant is named (default: the first). ``policy``: a file copied into ``policy/`` and
    recorded with its sha256 (it picks a variant at run time). ``objective``: recorded for a
    plan that carries none. Energies are null unless the target has a power model.

    Every file written is a function of the inputs and arguments alone (no time, no host): two
    calls with equal inputs write byte-identical artifacts. ``timings`` (pass timings, objects
    with ``name`` and ``seconds``; ``[]`` for none) adds ``timings.json`` with those and the
    planners' wall times, the one file that differs from compile to compile.
    ``precisions``: variant name -> the precision its slices are converted to (float32, float16,
    int8; absent: float32) by ``converter`` (a ``hetcc.passes.precision.Converter``; default
    one with seeded calibration); each converted variant records its agreement with FP32.
    """
    out = _out_dir(out_dir)
    with atomic_directory(out) as tmp:
        _write_model(tmp, program, target, plans, default_variant=default_variant, runtime=runtime,
                     policy=policy, has_power=_has_power(target, has_power_model), objective=objective,
                     timings=timings, precisions=precisions, converter=converter)
    return out


def _unit(x: Any) -> float:
    """A fraction the schema bounds to [0, 1], float rounding clipped."""
    return min(max(float(x), 0.0), 1.0)


def contention_block(wplan: Any) -> Contention | None:
    """The manifest's ``contention`` block from a workload planner of contention's stats
    (``hetcc.planners.multi.plans``: pipelines, prediction, score, states); None for a workload
    planned model by model."""
    stats = wplan.stats or {}
    if "prediction" not in stats or "pipelines" not in stats:
        return None
    pred, sc = stats["prediction"], stats["score"]
    pipes = stats["pipelines"]
    on = {d: [n for n in wplan.names if any(st["device"] == d for st in pipes[n])] for d in pred["utilisation"]}
    busy = pred.get("busy", {})
    devices = {d: ContentionDevice(state=str(stats.get("states", {}).get(d, d)), utilisation=_unit(u),
                                   models=tuple(on[d]), busy={n: _unit(b) for n, b in busy.get(d, {}).items()})
               for d, u in pred["utilisation"].items()}
    models = {n: ContentionModel(pipeline=tuple(ContentionStage(device=str(st["device"]), first=int(st["first"]),
                                                                stop=int(st["stop"])) for st in pipes[n]),
                                 throughput_ips=float(pred["throughput"][n] or 0.0),
                                 alone_ips=float(pred["alone"][n] or 0.0),
                                 ideal_ips=float(pred["ideal"][n] or 0.0)) for n in wplan.names}
    metrics = ContentionMetrics(throughput_ips=float(sc["T_w"]), normalised=float(sc["T_norm"]),
                                jain=_unit(sc["J"]), overall=float(sc["O"]))
    return Contention(devices=devices, models=models, metrics=metrics)


def emit_workload(out_dir: str | Path, target: Any, entries: Sequence[tuple[str, Program, Any]], wplan: Any, *,
                  runtime: RuntimeInfo | None = None, has_power_model: bool | None = None,
                  timings: Sequence[Any] | None = None) -> Path:
    """Write a workload artifact: ``models/<name>/`` (one model artifact per entry, its plan the
    one variant) and a top ``manifest.json`` whose ``workload`` block lists them and records the
    workload planner, objective and feasibility. ``timings`` as for ``emit_artifact`` (the top
    ``timings.json`` holds the workload planner's time under ``"workload"``)."""
    if not entries:
        raise UsageError("a workload needs at least one model")
    names = [str(n) for n, _, _ in entries]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UsageError(f"two workload models are named {dup[0]!r}")
    has_power = _has_power(target, has_power_model)
    out = _out_dir(out_dir)
    with atomic_directory(out) as tmp:
        (tmp / "models").mkdir()
        members = []
        used: set[str] = set()
        for name, program, plan in entries:
            slug = base = _slug(name)
            k = 2
            while slug.lower() in used:
                slug, k = f"{base}-{k}", k + 1
            used.add(slug.lower())
            sub = tmp / "models" / slug
            sub.mkdir()
            _write_model(sub, program, target, {plan.planner or "plan": plan}, default_variant=None,
                         runtime=runtime, policy=None, has_power=has_power, objective=wplan.objective,
                         timings=[] if timings is not None else None)
            members.append(WorkloadModel(name=str(name), dir=f"models/{slug}",
                                         manifest_sha256=sha256_file(sub / MANIFEST)))
        manifest = Manifest(
            schema=SCHEMA_ID, hetcc_version=__version__, kind="workload",
            target=_target_info(target), runtime=runtime or RuntimeInfo(),
            model=None, default_variant=None, variants={}, policy=None,
            workload=Workload(objective=_objective_info(wplan.objective), planner=_planner_info(wplan),
                              feasible=bool(wplan.feasible), violations=tuple(str(v) for v in wplan.violations),
                              models=tuple(members), contention=contention_block(wplan)),
        )
        _write_manifest(tmp, manifest)
        if timings is not None:
            _write_timings(tmp, {"workload": wplan}, timings)
    return out
