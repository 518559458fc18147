"""Frontend: load an ONNX file (external data included), check it, fix dynamic dimensions from
``--input-shape``, infer every shape, and wrap it in a Program (onnx-ir).

Why one module of ~420 lines: loading, checking and shape-typing a model share the same light
copy of the proto (external data read relative to the model, weights-as-inputs dropped once);
splitting them would pass that state between modules.
"""
from __future__ import annotations

import logging
import math
import os
import re
from pathlib import Path
from typing import Mapping, Sequence

import onnx
import onnx_ir as ir
from onnx_ir.passes.common import RemoveUnusedNodesPass, TopologicalSortPass

from .errors import ModelError, UsageError
from .runtime import _ort
from .runtime.manifest import sha256_file
from .program import Program

logger = logging.getLogger(__name__)

_SHAPE_RE = re.compile(r"^\s*([^=\s]+)\s*=\s*(\d+(?:\s*[x,]\s*\d+)*)\s*$")


def parse_input_shapes(specs: Sequence[str] | None) -> dict[str, tuple[int, ...]]:
    """Parse ``NAME=1x3x224x224`` (or ``NAME=1,3,224,224``) strings."""
    shapes: dict[str, tuple[int, ...]] = {}
    for spec in specs or ():
        m = _SHAPE_RE.match(spec)
        if not m:
            raise UsageError(f"malformed --input-shape {spec!r}; expected NAME=1x3x224x224")
        dims = tuple(int(d) for d in re.split(r"\s*[x,]\s*", m.group(2)))
        if any(d <= 0 for d in dims):
            raise UsageError(f"--input-shape {spec!r}: every dimension must be a positive integer")
        shapes[m.group(1)] = dims
    return shapes


def _read(path: Path) -> ir.Model:
    if not path.exists():
        raise ModelError(f"{path}: no such file; give the path of an .onnx model (or export one with 'hetcc zoo export')")
    if path.is_dir():
        raise ModelError(f"{path}: is a directory, not an ONNX model file")
    try:
        model = ir.load(str(path))
    except Exception as exc:  # protobuf DecodeError, ...
        raise ModelError(f"{path}: not a readable ONNX model ({_first_line(exc)}); "
                         "export one with torch.onnx.export or 'hetcc zoo export'") from None
    if len(model.graph) == 0:
        raise ModelError(f"{path}: not an ONNX model (no graph nodes); export one with torch.onnx.export or 'hetcc zoo export'")
    _check_external_data(model, path)
    # external data is relative to the model file, never to the current directory: an absolute
    # base directory keeps it readable wherever hetcc runs and whatever it changes directory to
    ir.external_data.set_base_dir(model.graph, os.path.abspath(path.parent))
    for function in model.functions.values():
        ir.external_data.set_base_dir(function, os.path.abspath(path.parent))
    _weights_are_not_inputs(model)
    for name, value in model.graph.initializers.items():
        t = value.const_value
        if isinstance(t, ir.ExternalTensor) and not Path(t.path).exists():
            raise ModelError(f"{path}: initializer {name!r} refers to missing external data file {t.location!r}; "
                             "keep the data file next to the model")
    return model


def _external_tensors(model: ir.Model):
    """(what, tensor) for every external-data tensor of the model: initializers of the main graph
    and of every subgraph, tensor attributes (Constant, ...) of every node, functions included."""
    for graph in model.graphs():
        for name, value in graph.initializers.items():
            if isinstance(value.const_value, ir.ExternalTensor):
                yield f"initializer {name!r}", value.const_value
    bodies = [model.graph, *model.functions.values()]
    for body in bodies:
        for node in ir.traversal.RecursiveGraphIterator(body):
            for attr in node.attributes.values():
                if attr.type == ir.AttributeType.TENSOR:
                    tensors = [attr.value]
                elif attr.type == ir.AttributeType.TENSORS:
                    tensors = list(attr.value or ())
                else:
                    continue
                for t in tensors:
                    if isinstance(t, ir.ExternalTensor):
                        what = f"tensor {t.name!r}" if t.name else f"attribute {attr.name!r} of node {node.name or node.op_type!r}"
                        yield what, t


def _check_external_data(model: ir.Model, path: Path) -> None:
    """Refuse any external-data ``location`` that leaves the model's directory (an absolute path,
    ``../``, a symlink out): compiling would copy that file's bytes into the slices."""
    base_dir = path.parent
    try:
        base = base_dir.resolve()
    except (OSError, RuntimeError):  # pragma: no cover - the model was just read from there
        base = Path(os.path.abspath(base_dir))
    for what, t in _external_tensors(model):
        location = str(t.location)
        bad = (not location or os.path.isabs(location) or location.startswith(("/", "\\"))
               or re.match(r"^[A-Za-z]:", location) is not None)  # absolute here or on Windows
        if not bad:
            try:
                (base / location).resolve().relative_to(base)
            except (ValueError, OSError, RuntimeError):  # outside, or a symlink loop
                bad = True
        if bad:
            raise ModelError(f"{path}: {what} has external data location {location!r}, which resolves outside "
                             f"the model's directory {str(base_dir) or '.'}; refusing to read it "
                             "(keep external data files in the model's directory)")


def _weights_are_not_inputs(model: ir.Model) -> None:
    """Older exporters (``torch.onnx.export(..., keep_initializers_as_inputs=True)``, IR < 4) list
    every weight as a graph input too. An input with an initializer is a weight with a default
    that nobody overrides here: drop it from the inputs, so every pass, the slices and the
    manifest see user inputs only (and the runtime never asks for a weight)."""
    graph = model.graph
    weights = [v for v in graph.inputs if v.name in graph.initializers]
    for value in weights:
        graph.inputs.remove(value)
    if weights:
        logger.info("%d initializers were also listed as graph inputs; treated as weights", len(weights))
    if model.ir_version < 4 and weights:
        model.ir_version = 4  # IR 3 requires every initializer to be an input; IR 4 drops that rule


def iter_tensor_protos(proto: onnx.ModelProto):
    """(tensor, is_initializer) for every TensorProto of ``proto``: the dense initializers of the
    main graph and of every subgraph, sparse initializers' parts, tensor attributes of every node
    (subgraphs and functions included)."""
    def graph(g: onnx.GraphProto):
        for t in g.initializer:
            yield t, True
        for st in g.sparse_initializer:
            yield st.values, False
            yield st.indices, False
        for n in g.node:
            yield from node(n)

    def node(n: onnx.NodeProto):
        for a in n.attribute:
            if a.HasField("t"):
                yield a.t, False
            for t in a.tensors:
                yield t, False
            for st in ([a.sparse_tensor] if a.HasField("sparse_tensor") else []) + list(a.sparse_tensors):
                yield st.values, False
                yield st.indices, False
            if a.HasField("g"):
                yield from graph(a.g)
            for g in a.graphs:
                yield from graph(g)

    yield from graph(proto.graph)
    for f in proto.functions:
        for n in f.node:
            yield from node(n)


def external_info(tensor: onnx.TensorProto) -> tuple[str, int, int | None] | None:
    """(location, offset, length or None) of a tensor stored as external data, else None."""
    if tensor.data_location != onnx.TensorProto.EXTERNAL:
        return None
    info = {e.key: e.value for e in tensor.external_data}
    length = info.get("length")
    return info.get("location", ""), int(info.get("offset") or 0), int(length) if length else None


def external_path(location: str, base_dir: str | os.PathLike) -> Path:
    return Path(base_dir) / location


def external_nbytes(tensor: onnx.TensorProto, base_dir: str | os.PathLike) -> int:
    """How many bytes an external tensor's data takes (its length, else the rest of its file)."""
    location, offset, length = external_info(tensor)
    if length is not None:
        return length
    return max(0, os.path.getsize(external_path(location, base_dir)) - offset)


def embed_external(tensor: onnx.TensorProto, base_dir: str | os.PathLike) -> None:
    """Read an external tensor's bytes from ``base_dir / location`` into ``raw_data``."""
    location, offset, length = external_info(tensor)
    try:
        with open(external_path(location, base_dir), "rb") as f:
            f.seek(offset)
            data = f.read() if length is None else f.read(length)
    except OSError as exc:
        raise ModelError(f"tensor {tensor.name!r}: cannot read external data file {location!r} "
                         f"({exc.strerror or exc}); keep the data file next to the model") from None
    if length is not None and len(data) != length:
        raise ModelError(f"tensor {tensor.name!r}: external data file {location!r} ends before "
                         f"offset {offset} + length {length}; the model's data file is truncated")
    tensor.raw_data = data
    del tensor.external_data[:]
    tensor.data_location = onnx.TensorProto.DEFAULT


def external_base_dir(model: ir.Model) -> str | None:
    """The directory the model's external data is relative to (None: it has none); absolute for
    a model from load_model."""
    for _, t in _external_tensors(model):
        return t.base_dir
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _light_proto(model: ir.Model) -> onnx.ModelProto:
    """The model as a proto without its large initializers (they become typed graph inputs), so
    checking and shape inference cost milliseconds even for a 500 MB VGG-16."""
    proto = ir.to_proto(model)
    inputs = {i.name for i in proto.graph.input}
    keep = []
    for init in proto.graph.initializer:
        if math.prod(init.dims) <= _SMALL_INIT:
            keep.append(init)
        elif init.name not in inputs:  # one declared as an input already is typed there
            proto.graph.input.append(onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
    del proto.graph.initializer[:]
    proto.graph.initializer.extend(keep)
    del proto.graph.value_info[:]
    # the external tensors left (small initializers, Constant values, subgraphs) are read in: the
    # checker would resolve their locations against the current directory, and shape inference
    # needs the values of small ones (Reshape targets, ...)
    base_dir = external_base_dir(model)
    for tensor, _ in iter_tensor_protos(proto):
        if external_info(tensor) is not None:
            embed_external(tensor, base_dir or "")
    return proto


_SMALL_INIT = 1024  # elements; shape-like constants (Reshape targets, ...) stay for data propagation


def _fix_input_shapes(model: ir.Model, shapes: Mapping[str, tuple[int, ...]]) -> None:
    inputs = {v.name: v for v in model.graph.inputs if v.name not in model.graph.initializers}
    for name in shapes:
        if name not in inputs:
            raise UsageError(f"--input-shape names {name!r}, but the model's inputs are: {', '.join(inputs)}")
    for name, value in inputs.items():
        dims = list(value.shape) if value.shape is not None else None
        if name in shapes:
            want = shapes[name]
            if dims is not None and len(want) != len(dims):
                raise UsageError(f"--input-shape {name}: model input has rank {len(dims)}, got {len(want)} dims")
            for d, w in zip(dims or [], want):
                if isinstance(d, int) and d != w:
                    raise UsageError(f"--input-shape {name}: dimension {d} is fixed in the model, got {w}")
            value.shape = ir.Shape(want)
            continue
        if dims is None:
            raise ModelError(f"input {name!r} has no shape; pass --input-shape {name}=1x3x224x224")
        for d in dims:
            if not isinstance(d, int) or d <= 0:
                example = "x".join(str(x) if isinstance(x, int) and x > 0 else "1" for x in dims)
                raise ModelError(f"input {name!r} has a dynamic dimension {str(d)!r}; pass --input-shape {name}={example}")


def _static(vi: onnx.ValueInfoProto) -> bool:
    t = vi.type
    if not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
        return False
    return all(d.HasField("dim_value") for d in t.tensor_type.shape.dim)


def _infer(proto: onnx.ModelProto, path: Path, model: ir.Model | None = None) -> onnx.ModelProto:
    for out in proto.graph.output:  # symbolic output dims are re-inferred from the fixed inputs
        if out.type.HasField("tensor_type"):
            for d in out.type.tensor_type.shape.dim:
                if not d.HasField("dim_value"):
                    d.Clear()
    try:
        inferred = onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=False, data_prop=True)
    except Exception as exc:
        logger.debug("onnx shape inference failed: %s", exc)
        inferred = proto
    if _missing_shapes(inferred):
        symbolic = _symbolic_shapes(proto)
        if symbolic is not None:
            inferred = symbolic
            logger.info("used onnxruntime's symbolic shape inference")
    missing = _missing_shapes(inferred)
    if missing and model is not None:
        inferred = _shapes_by_running(model, inferred, missing, path)
        missing = _missing_shapes(inferred)
    if missing:
        raise ModelError(f"{path}: cannot infer a static shape for tensor {missing[0]!r} "
                         f"({len(missing)} tensors without one); fix the input shapes with --input-shape")
    return inferred


def _symbolic_shapes(proto: onnx.ModelProto) -> onnx.ModelProto | None:
    """onnxruntime's symbolic shape inference (auto-merge on), or None when it cannot infer every
    shape or is unavailable.

    Not ``SymbolicShapeInference.infer_shapes``: when inference is incomplete that method saves
    the partial model as ``sym_shape_infer_temp.onnx`` plus a ``<uuid>.data`` file into the
    current directory (overwriting a user's file of that name) before raising. This runs the same
    steps and writes nothing; without the steps it needs (another onnxruntime version) the
    fallback is skipped, with a debug message, and the last resort below still applies."""
    try:
        _ort.load()  # telemetry off before onnxruntime initialises
        from onnxruntime.tools import symbolic_shape_infer as ssi
    except Exception as exc:  # pragma: no cover - onnxruntime is a dependency
        logger.debug("onnxruntime's symbolic shape inference is unavailable: %s", exc)
        return None
    cls = ssi.SymbolicShapeInference
    if not all(hasattr(cls, m) for m in ("_preprocess", "_infer_impl", "_update_output_from_vi")):
        logger.debug("onnxruntime's SymbolicShapeInference lacks the steps hetcc runs; skipped")
        return None
    try:
        opset = ssi.get_opset(proto)
        if not opset or opset < 7:
            return None
        engine = cls(int_max=2**31 - 1, auto_merge=True, guess_output_rank=False, verbose=0)
        engine._preprocess(proto)
        complete = False
        while engine.run_:
            complete = engine._infer_impl()
        engine._update_output_from_vi()
    except Exception as exc:  # pragma: no cover - depends on the model
        logger.debug("symbolic shape inference failed: %s", exc)
        return None
    if not complete:
        logger.debug("symbolic shape inference is incomplete")
        return None
    return engine.out_mp_


def _shapes_by_running(model: ir.Model, inferred: onnx.ModelProto, missing: list[str], path: Path) -> onnx.ModelProto:
    """Last resort for shapes that static inference cannot propagate (e.g. a Where over shape
    values, as in ViT's class token): run the model once on random inputs with onnxruntime and read the
    shapes of the tensors still missing. Valid because every input shape is fixed."""
    import numpy as np

    from .runtime import random_inputs
    from .runtime.executor import TensorSpec

    proto = ir.to_proto(model)
    base_dir = external_base_dir(model)
    for tensor, _ in iter_tensor_protos(proto):  # a session built from bytes cannot find them
        if external_info(tensor) is not None:
            embed_external(tensor, base_dir or "")
    known_out = {o.name for o in proto.graph.output}
    for name in missing:
        if name not in known_out:
            proto.graph.output.append(onnx.ValueInfoProto(name=name))
    ort = _ort.load()  # onnxruntime, telemetry off unless HETCC_ORT_TELEMETRY=1
    try:
        so = ort.SessionOptions()
        so.log_severity_level = 3
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(proto.SerializeToString(), so, providers=["CPUExecutionProvider"])
        feeds = random_inputs([TensorSpec(v.name, str(v.dtype.numpy()), tuple(v.shape))
                               for v in model.graph.inputs if v.name not in model.graph.initializers])
        names = [o.name for o in sess.get_outputs()]
        values = dict(zip(names, sess.run(names, feeds)))
    except Exception as exc:
        logger.debug("running the model for shapes failed: %s", exc)
        return inferred
    out = onnx.ModelProto()
    out.CopyFrom(inferred)
    for name in missing:
        v = values.get(name)
        if isinstance(v, np.ndarray):
            elem = onnx.helper.np_dtype_to_tensor_dtype(v.dtype)
            out.graph.value_info.append(onnx.helper.make_tensor_value_info(name, elem, list(v.shape)))
    logger.info("%s: %d tensor shapes taken from one onnxruntime run", path, len(missing))
    return out


def _missing_shapes(model: onnx.ModelProto) -> list[str]:
    known = {vi.name for vi in list(model.graph.value_info) + list(model.graph.output) + list(model.graph.input) if _static(vi)}
    known |= {i.name for i in model.graph.initializer}
    return [o for node in model.graph.node for o in node.output if o and o not in known]


def _apply_shapes(model: ir.Model, inferred: onnx.ModelProto) -> None:
    values = {v.name: v for v in model.graph.inputs}
    for node in model.graph:
        for o in node.outputs:
            if o.name:
                values[o.name] = o
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
        v = values.get(vi.name)
        if v is None or not _static(vi):
            continue
        tt = vi.type.tensor_type
        v.shape = ir.Shape([d.dim_value for d in tt.shape.dim])
        if tt.elem_type:
            v.dtype = ir.DataType(tt.elem_type)


def load_model(path: str | Path, input_shapes: Mapping[str, tuple[int, ...]] | None = None) -> Program:
    """Load, check and shape-infer ``path``; raise ModelError/UsageError with a one-line message."""
    path = Path(path)
    model = _read(path)
    _fix_input_shapes(model, input_shapes or {})
    proto = _light_proto(model)
    try:
        onnx.checker.check_model(proto)
    except Exception as exc:
        raise ModelError(f"{path}: invalid ONNX model ({_first_line(exc)})") from None
    _apply_shapes(model, _infer(proto, path, model))
    RemoveUnusedNodesPass()(model)  # dead nodes never run and would confuse slice extraction
    TopologicalSortPass()(model)
    _name_nodes(model.graph)
    return Program(model=model, source_path=path.resolve(), source_sha256=sha256_file(path), name=path.stem)


def _name_nodes(graph: ir.Graph) -> None:
    """Give every top-level node a unique, non-empty name (passes key analyses by node name)."""
    seen: set[str] = set()
    for i, node in enumerate(graph):
        name = node.name or f"{node.op_type}_{i}"
        while name in seen:
            name = f"{name}_{i}"
        node.name = name
        seen.add(name)
