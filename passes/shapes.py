"""AnnotateTensors: dtype, static shape and byte size of every top-level value.

A tensor whose shape depends on the values of the model's inputs (the output of NonZero, a
Reshape to a computed shape, and everything shaped by those) has no static shape: the frontend
leaves its IR shape unknown and records the shape one run on random inputs gave
(``Program.observed_shapes``). Its TensorInfo holds that observed shape, for cost estimates only,
and is marked ``data_dependent``: no cut may cross it (GroupLayers), since a slice boundary
typed with one run's shape fails on other inputs.
"""
from __future__ import annotations

import functools
import math
import os
from typing import ClassVar

from hetcc.compiler.onnxir import ir

from hetcc.core.errors import ModelError, UsageError
from hetcc.compiler.graphutil import node_reads, subgraphs, walk
from hetcc.passes.constants import NONDETERMINISTIC
from hetcc.compiler.passmanager import Pass, PassResult
from hetcc.compiler.program import TENSORS, Program, TensorInfo

#: the largest dimension hetcc accepts (onnxruntime indexes many kernels with 32-bit ints)
MAX_DIM = 2**31 - 1
#: the default limit on one tensor's bytes (an input, or any tensor compiling or running the model
#: allocates); the environment variable HETCC_MAX_TENSOR_BYTES sets another
MAX_TENSOR_BYTES = 2**31
LIMIT_ENV = "HETCC_MAX_TENSOR_BYTES"

#: ops whose output shape depends on the values they read, whatever those are
DATA_SHAPED = frozenset({"NonZero", "Unique", "NonMaxSuppression", "Compress", "Loop", "StringSplit",
                         "ImageDecoder", "SplitToSequence", "ConcatFromSequence", "SequenceConstruct"})
#: op -> positions of the inputs whose values set the output shape (data flows through the others)
SHAPE_INPUTS: dict[str, tuple[int, ...]] = {
    "Reshape": (1,), "Expand": (1,), "Tile": (1,), "Slice": (1, 2, 3, 4), "Range": (0, 1, 2),
    "ConstantOfShape": (0,), "Resize": (1, 2, 3), "Upsample": (1,), "Pad": (1, 3), "Squeeze": (1,),
    "Unsqueeze": (1,), "TopK": (1,), "OneHot": (1,), "Split": (1,), "CenterCropPad": (1,),
    "Col2Im": (1, 2), "DFT": (1, 2), "STFT": (1, 2, 3), "MelWeightMatrix": (0, 1, 2),
    "HannWindow": (0,), "HammingWindow": (0,), "BlackmanWindow": (0,), "MaxUnpool": (2,),
    "AffineGrid": (1,),
    **{f"Reduce{r}": (1,) for r in ("Sum", "Mean", "Max", "Min", "Prod", "L1", "L2", "LogSum",
                                    "LogSumExp", "SumSquare")},
}


def max_tensor_bytes() -> int:
    """The per-tensor byte limit: HETCC_MAX_TENSOR_BYTES, else MAX_TENSOR_BYTES."""
    text = os.environ.get(LIMIT_ENV, "").strip()
    if not text:
        return MAX_TENSOR_BYTES
    try:
        value = int(float(text)) if any(c in text for c in ".eE") else int(text)
    except (ValueError, OverflowError):
        value = 0
    if value <= 0:
        raise UsageError(f"{LIMIT_ENV}={text!r}: expected a positive number of bytes (default {MAX_TENSOR_BYTES})")
    return value


def size_text(nbytes: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{int(nbytes)} B"


def over_limit(what: str, dtype: str, shape: tuple[int, ...], itemsize: float) -> str | None:
    """The reason ``what`` (dtype[shape]) is over the per-tensor limit, or None."""
    limit = max_tensor_bytes()
    nbytes = math.prod(shape) * itemsize
    big = [d for d in shape if d > MAX_DIM]
    if big:
        return f"{what} {dtype}{list(shape)} has dimension {big[0]}, over hetcc's limit of {MAX_DIM} (2**31-1)"
    if nbytes > limit:
        return (f"{what} {dtype}{list(shape)} would take {size_text(nbytes)}, over hetcc's limit of "
                f"{size_text(limit)} per tensor (set {LIMIT_ENV} to raise it)")
    return None


def _subgraph_shapes_data(node: ir.Node, functions: dict) -> bool:
    """Whether the body of a control-flow node or of a model-local function may shape its outputs
    from data (a data-shaped op, or an op with shape inputs, anywhere inside)."""
    if not functions and not subgraphs(node):         # most nodes: nothing inside to look at
        return False
    for inner in walk(node):
        key = (inner.domain, inner.op_type, inner.overload)
        if inner is not node and (inner.op_type in DATA_SHAPED or inner.op_type in SHAPE_INPUTS):
            return True
        body = functions.get(key)
        if body is not None and any(n.op_type in DATA_SHAPED or n.op_type in SHAPE_INPUTS
                                    or (n.domain, n.op_type, n.overload) in functions for n in body):
            return True
    return False


def _branches_agree(node: ir.Node) -> bool:
    """Whether both branches of an If declare the same static output shapes (then the condition's
    value cannot change the shapes)."""
    shapes = []
    for g in (node.attributes.get("then_branch"), node.attributes.get("else_branch")):
        if g is None or g.type != ir.AttributeType.GRAPH:
            return False
        outs = [tuple(o.shape) if o.shape is not None else None for o in g.value.outputs]
        if any(s is None or not all(isinstance(d, int) for d in s) for s in outs):
            return False
        shapes.append(outs)
    return shapes[0] == shapes[1]


def data_dependent_shapes(model: ir.Model) -> frozenset[str]:
    """Names of the top-level tensors whose shape depends on the values of the model's inputs.

    Forward over the (topologically sorted) graph, with every input shape fixed: a value is
    *known* when it is computable from initializers and static shapes alone (Shape of a tensor
    whose shape is not data-dependent is known); an output's shape is data-dependent when the op
    shapes it from data (NonZero, ...), when an input in a shape position (Reshape's target,
    Slice's starts, TopK's k, ...) is not known, or when any input's shape is data-dependent
    (conservative)."""
    graph = model.graph
    functions = dict(model.functions)
    inputs = {id(v) for v in graph.inputs}
    known = {id(v) for v in graph.initializers.values() if id(v) not in inputs}
    dynamic: set[int] = set()
    for node in graph:
        reads = node_reads(node)
        standard = node.domain in ("", "ai.onnx")
        shaped = any(id(v) in dynamic for v in reads)
        if standard and node.op_type in DATA_SHAPED:
            shaped = True
        if standard and node.op_type == "If" and node.inputs and id(node.inputs[0]) not in known:
            shaped = shaped or not _branches_agree(node)
        if standard:
            for i in SHAPE_INPUTS.get(node.op_type, ()):
                v = node.inputs[i] if i < len(node.inputs) else None
                if v is not None and id(v) not in known:
                    shaped = True
        if not shaped and _subgraph_shapes_data(node, functions):
            shaped = not all(id(v) in known for v in reads)
        if shaped:
            dynamic.update(id(o) for o in node.outputs)
        src = node.inputs[0] if node.inputs else None
        if standard and node.op_type in ("Shape", "Size") and src is not None and id(src) not in dynamic:
            known.update(id(o) for o in node.outputs)
        elif node.op_type not in NONDETERMINISTIC and all(id(v) in known for v in reads):
            known.update(id(o) for o in node.outputs)
    return frozenset(o.name for node in graph for o in node.outputs if id(o) in dynamic and o.name)


def tensor_info(value: ir.Value) -> TensorInfo:
    """TensorInfo of a value whose type and shape are known; ModelError otherwise."""
    if value.dtype is None or value.shape is None:
        raise ModelError(f"tensor {value.name!r} has no known type or shape; fix the input shapes with --input-shape")
    dims = []
    for d in value.shape:
        if not isinstance(d, int):
            raise ModelError(f"tensor {value.name!r} has a dynamic dimension {d!s}; pass --input-shape for the model inputs")
        dims.append(d)
    return _info(value.name or "", value.dtype, tuple(dims))


def _info(name: str, dtype: ir.DataType, shape: tuple[int, ...], data_dependent: bool = False) -> TensorInfo:
    return TensorInfo(name=name, dtype=_dtype_name(dtype), shape=shape,
                      nbytes=int(math.ceil(math.prod(shape) * dtype.itemsize)), data_dependent=data_dependent)


@functools.lru_cache(maxsize=None)
def _dtype_name(dtype: ir.DataType) -> str:
    """The numpy name of ``dtype`` (str of a numpy dtype is slow: once per element type)."""
    try:
        return str(dtype.numpy())
    except Exception:  # types without a numpy equivalent (e.g. float8)
        return dtype.name.lower()


class AnnotateTensors(Pass):
    """Ensures ``tensors``: a TensorInfo for every model input, initializer and node output, each
    under the per-tensor byte limit (initializers excepted: they are in the file already)."""

    name: ClassVar[str] = "shapes"
    ensures: ClassVar[tuple[str, ...]] = (TENSORS,)

    def run(self, program: Program) -> PassResult:
        graph = program.graph
        observed = program.observed_shapes
        infos: dict[str, TensorInfo] = {}
        for value in graph.inputs:
            infos[value.name] = tensor_info(value)
        for name, value in graph.initializers.items():
            if value.const_value is not None:
                t = value.const_value
                infos[name] = TensorInfo(name, _dtype_name(t.dtype), tuple(int(d) for d in t.shape), int(t.nbytes))
            else:
                infos[name] = tensor_info(value)
        computed = [v for v in graph.inputs]
        for node in graph:
            for out in node.outputs:
                if out.name and out.name not in infos:
                    if out.name in observed and out.dtype is not None:
                        infos[out.name] = _info(out.name, out.dtype, observed[out.name], data_dependent=True)
                    else:
                        infos[out.name] = tensor_info(out)
                    computed.append(out)
        limit = max_tensor_bytes()
        for value in computed:
            info = infos[value.name]
            # over_limit's own test first: the message is built for a tensor over the limit only
            if all(d <= MAX_DIM for d in info.shape) and math.prod(info.shape) * value.dtype.itemsize <= limit:
                continue
            why = over_limit(f"tensor {value.name!r}", info.dtype, info.shape, value.dtype.itemsize)
            if why:
                raise ModelError(f"{program.source_path or program.name}: {why}")
        program.put(TENSORS, infos)
        total = sum(i.nbytes for i in infos.values())
        dynamic = sum(i.data_dependent for i in infos.values())
        extra = f", {dynamic} with data-dependent shapes (never cut)" if dynamic else ""
        return PassResult(False, f"{len(infos)} tensors, {total / 1e6:.1f} MB{extra}")
