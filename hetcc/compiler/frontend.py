"""Frontend: load an ONNX file (external data included), check it, fix dynamic dimensions from
``--input-shape``, infer every shape, and wrap it in a Program (onnx-ir).

Why one module: loading, checking and shape-typing a model share the same light
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

import numpy as np
import onnx
import onnx.inliner
from hetcc.compiler.onnxir import ir
from onnx_ir.passes.common import RemoveUnusedNodesPass, TopologicalSortPass

from hetcc.core.errors import ModelError, UsageError
from hetcc.core.read import check_regular
from hetcc.runtime import onnxrt
from hetcc.runtime.manifest import sha256_file
from hetcc.passes.shapes import MAX_DIM, data_dependent_shapes, over_limit
from hetcc.compiler.graphutil import all_nodes, subgraphs
from hetcc.compiler.program import Program

logger = logging.getLogger(__name__)

def parse_input_shapes(specs: Sequence[str] | None) -> dict[str, tuple[int, ...]]:
    """Parse ``NAME=1x3x224x224`` (or ``NAME=1,3,224,224``) strings; each dimension a positive
    integer up to 2**31-1 (the byte size is checked against the model's dtype on loading)."""
    shapes: dict[str, tuple[int, ...]] = {}
    for full in specs or ():
        spec = full if len(full) <= 80 else full[:60] + "..."   # as the messages quote it
        name, sep, text = full.rpartition("=")
        name, text = name.strip(), text.strip()
        if not sep or not name or not text:
            raise UsageError(f"malformed --input-shape {spec!r}; expected NAME=1x3x224x224")
        dims = []
        for part in re.split(r"\s*[x,]\s*", text):
            if not re.fullmatch(r"[+-]?\d+", part):
                raise UsageError(f"--input-shape {spec!r}: dimension {part[:30]!r} is not an integer; "
                                 "expected NAME=1x3x224x224")
            digits = part.lstrip("+-").lstrip("0") or "0"
            if len(digits) > 10 or int(part) > MAX_DIM:
                shown = part if len(part) <= 30 else f"{part[:12]}... ({len(digits)} digits)"
                raise UsageError(f"--input-shape {spec!r}: dimension {shown} is over hetcc's limit of "
                                 f"{MAX_DIM} (2**31-1)")
            if int(part) <= 0:
                raise UsageError(f"--input-shape {spec!r}: every dimension must be a positive integer, got {part}")
            dims.append(int(part))
        if name in shapes:
            raise UsageError(f"--input-shape gives input {name!r} twice; give each input once")
        shapes[name] = tuple(dims)
    return shapes


#: the largest .onnx file protobuf can parse (its messages are limited to 2 GiB; larger models
#: keep their weights in external data files)
MAX_MODEL_BYTES = (2 << 30) - 1


def _read(path: Path) -> ir.Model:
    if not path.exists():
        raise ModelError(f"{path}: no such file; give the path of an .onnx model (or export one with 'hetcc zoo export')")
    if path.is_dir():
        raise ModelError(f"{path}: is a directory, not an ONNX model file")
    check_regular(path, str(path), MAX_MODEL_BYTES, error=ModelError,
                  fix="give the path of an .onnx model file")
    try:
        empty = path.stat().st_size == 0
        proto = onnx.load(str(path), load_external_data=False)
    except OSError as exc:
        raise ModelError(f"{path}: cannot read the model ({exc.strerror or exc})") from None
    except Exception as exc:  # protobuf DecodeError, ...
        raise ModelError(f"{path}: not a readable ONNX model ({_first_line(exc)}); "
                         "export one with torch.onnx.export or 'hetcc zoo export'") from None
    if empty:
        raise ModelError(f"{path}: the file is empty, not an ONNX model; export one with torch.onnx.export or 'hetcc zoo export'")
    if len(proto.graph.node) == 0:
        raise ModelError(f"{path}: not an ONNX model (no graph nodes); export one with torch.onnx.export or 'hetcc zoo export'")
    if len(proto.graph.output) == 0:
        raise ModelError(f"{path}: the model has no outputs, so nothing to compute; list its results in graph.output "
                         "(torch.onnx.export does)")
    _check_numeric(proto, path)
    if len(proto.functions):              # model-local functions compile like any graph: inlined
        try:
            proto = onnx.inliner.inline_local_functions(proto)
        except Exception as exc:
            raise ModelError(f"{path}: cannot inline its model-local functions ({_first_line(exc)}); "
                             "re-export the model without local functions") from None
    _check_proto(proto, path)
    try:
        model = ir.serde.deserialize_model(proto)
    except Exception as exc:
        raise ModelError(f"{path}: not a readable ONNX model ({_first_line(exc)}); "
                         "export one with torch.onnx.export or 'hetcc zoo export'") from None
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
    _outputs_from_nodes(model, path)
    return model


#: the newest opset of each domain this onnx knows (other domains are checked op by op)
_NEWEST_OPSET = {"": onnx.defs.onnx_opset_version(), "ai.onnx": onnx.defs.onnx_opset_version(),
                 "ai.onnx.ml": onnx.defs.onnx_ml_opset_version()}


def _node_label(node: onnx.NodeProto, index: int) -> str:
    return f"node {node.name!r} ({node.op_type})" if node.name else f"node #{index} ({node.op_type})"


#: the element types hetcc plans and slices: numbers and booleans (strings, sequences of them and
#: other non-numeric tensors have no size per element to cost or to move between devices)
_NUMERIC = frozenset(t for t in onnx.TensorProto.DataType.values()
                     if t not in (onnx.TensorProto.UNDEFINED, onnx.TensorProto.STRING))


def _check_numeric(proto: onnx.ModelProto, path: Path) -> None:
    """Refuse a model whose inputs, outputs or weights are not numeric tensors (STRING, a
    sequence or a map): one line naming the first, instead of a failure deep in a pass."""
    g = proto.graph
    for kind, values in (("input", g.input), ("output", g.output)):
        for v in values:
            t = v.type
            which = t.WhichOneof("value")
            if which != "tensor_type" or t.tensor_type.elem_type not in _NUMERIC:
                what = (onnx.TensorProto.DataType.Name(t.tensor_type.elem_type) if which == "tensor_type"
                        else (which or "untyped").replace("_type", ""))
                raise ModelError(f"{path}: model {kind} {v.name!r} is {what}, not a numeric tensor; hetcc compiles "
                                 "models whose inputs and outputs are numeric tensors (preprocess strings outside "
                                 "the model)")
    for t in g.initializer:
        if t.data_type not in _NUMERIC:
            raise ModelError(f"{path}: initializer {t.name!r} is {onnx.TensorProto.DataType.Name(t.data_type)}, not "
                             "numeric; hetcc compiles numeric models only")


def _check_proto(proto: onnx.ModelProto, path: Path) -> None:
    """Refuse, naming the culprit, what the checker reports obscurely or not at all: versions
    newer than this onnx, tensors written twice, duplicate node names, outputs nothing produces,
    no inputs, cycles, unknown (custom) ops. A graph whose nodes are merely out of order is sorted."""
    export = "re-export the model with torch.onnx.export(..., opset_version=17)"
    if proto.ir_version > onnx.IR_VERSION:
        raise ModelError(f"{path}: ir_version {proto.ir_version} is newer than onnx {onnx.__version__} reads "
                         f"(up to {onnx.IR_VERSION}); {export} or upgrade onnx")
    for imp in proto.opset_import:
        newest = _NEWEST_OPSET.get(imp.domain)
        if newest is not None and imp.version > newest:
            raise ModelError(f"{path}: opset {imp.version} of domain {imp.domain or 'ai.onnx'!r} is newer than "
                             f"onnx {onnx.__version__} knows (up to {newest}); {export}")
    graph = proto.graph
    defined = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    producer: dict[str, int] = {}
    names: dict[str, int] = {}
    for i, node in enumerate(graph.node):
        if node.name:
            if node.name in names:
                raise ModelError(f"{path}: two nodes are named {node.name!r} (#{names[node.name]} and #{i}); "
                                 "onnxruntime refuses such a model: give every node a unique name")
            names[node.name] = i
        for out in node.output:
            if not out:
                continue
            if out in producer:
                raise ModelError(f"{path}: tensor {out!r} is written by two nodes ({_node_label(graph.node[producer[out]], producer[out])} "
                                 f"and {_node_label(node, i)}); every tensor name must be produced once")
            if out in defined:
                raise ModelError(f"{path}: tensor {out!r} is a model input or initializer and also written by "
                                 f"{_node_label(node, i)}; every tensor name must be produced once")
            producer[out] = i
    for out in graph.output:
        if out.name not in defined and out.name not in producer:
            raise ModelError(f"{path}: model output {out.name!r} is produced by no node, input or initializer; "
                             "remove it from the graph's outputs or produce it")
    weights = {t.name for t in graph.initializer}
    if not [v for v in graph.input if v.name not in weights]:
        raise ModelError(f"{path}: the model has no inputs, so its outputs are constants and there is nothing "
                         "to compile; give it at least one input")
    for t in graph.initializer:
        if t.HasField("raw_data") and t.data_location != onnx.TensorProto.EXTERNAL:
            try:
                itemsize = onnx.helper.tensor_dtype_to_np_dtype(t.data_type).itemsize
            except Exception:  # strings, sub-byte and float8 types: the checker judges them
                continue
            want = math.prod(t.dims) * itemsize
            if want != len(t.raw_data):
                raise ModelError(f"{path}: initializer {t.name!r} of shape {list(t.dims)} needs {want} bytes of "
                                 f"raw_data but holds {len(t.raw_data)}; the model file is damaged, re-export it")
    _sort_nodes(graph, producer, defined, path)
    _check_ops(proto, path)


def _graph_reads(graph: onnx.GraphProto) -> set[str]:
    """Every tensor name the nodes of ``graph`` read, subgraphs included (outer-scope captures)."""
    reads: set[str] = set()
    for node in graph.node:
        reads.update(node.input)
        for attr in node.attribute:
            for g in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                reads |= _graph_reads(g)
    return reads


def _sort_nodes(graph: onnx.GraphProto, producer: Mapping[str, int], defined: set[str], path: Path) -> None:
    """Put the nodes in a topological order (stable: the file's order where it is one); a cycle
    or a read of a tensor nothing produces is a ModelError naming the tensor."""
    import heapq

    n = len(graph.node)
    needs: list[set[int]] = []
    users: list[list[int]] = [[] for _ in range(n)]
    for i, node in enumerate(graph.node):
        reads = set(node.input)
        for attr in node.attribute:
            for g in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                reads |= {r for r in _graph_reads(g) if r in producer}
        for r in node.input:
            if r and r not in producer and r not in defined:
                raise ModelError(f"{path}: {_node_label(node, i)} reads tensor {r!r}, which no node, "
                                 "input or initializer produces; fix the model's export")
        deps = {producer[r] for r in reads if r in producer and producer[r] != i}
        if any(r in producer and producer[r] == i for r in reads):
            raise ModelError(f"{path}: {_node_label(node, i)} reads its own output; "
                             "ONNX graphs must be acyclic")
        needs.append(deps)
        for d in deps:
            users[d].append(i)
    if all(i > max(d) for i, d in enumerate(needs) if d):
        return                    # in order already: the sort below would keep it
    left = [len(d) for d in needs]
    ready = [i for i in range(n) if not left[i]]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for j in users[i]:
            left[j] -= 1
            if not left[j]:
                heapq.heappush(ready, j)
    if len(order) < n:
        stuck = min(i for i in range(n) if left[i])
        node = graph.node[stuck]
        via = next(r for r in node.input if r in producer and left[producer[r]])
        raise ModelError(f"{path}: the nodes form a cycle: {_node_label(node, stuck)} reads "
                         f"{via!r}, which depends on that node's own output; ONNX graphs must be acyclic")
    if order != list(range(n)):
        logger.info("%s: nodes are not in topological order; sorted", path)
        nodes = [graph.node[i] for i in order]
        copies = [onnx.NodeProto() for _ in nodes]
        for c, node in zip(copies, nodes):
            c.CopyFrom(node)
        del graph.node[:]
        graph.node.extend(copies)


def _known_ops() -> set[tuple[str, str]]:
    """(domain, op type) of every op onnxruntime registers (its contrib ops included)."""
    global _ORT_OPS
    if _ORT_OPS is None:
        try:
            onnxrt.load()
            from onnxruntime.capi import onnxruntime_pybind11_state as C

            _ORT_OPS = {(s.domain, s.name) for s in C.get_all_operator_schema()}
        except Exception as exc:  # pragma: no cover - a build without schemas: onnx's only
            logger.debug("onnxruntime's op schemas are unavailable: %s", exc)
            _ORT_OPS = set()
    return _ORT_OPS


_ORT_OPS: set[tuple[str, str]] | None = None


def _check_ops(proto: onnx.ModelProto, path: Path) -> None:
    """Every op must be known to onnx or onnxruntime, or be one of the model's local functions:
    hetcc infers shapes and runs slices with them."""
    functions = {(f.domain, f.name) for f in proto.functions}

    def nodes(g: onnx.GraphProto):
        for node in g.node:
            yield node
            for attr in node.attribute:
                for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                    yield from nodes(sub)

    bodies = [n for f in proto.functions for n in f.node]
    known: set[tuple[str, str]] = set()     # (domain, op type) found already
    for i, node in enumerate(list(nodes(proto.graph)) + bodies):
        if (node.domain, node.op_type) in known:
            continue
        domain = "" if node.domain == "ai.onnx" else node.domain
        if (node.domain, node.op_type) in functions or onnx.defs.has(node.op_type, domain) \
                or (domain, node.op_type) in _known_ops():
            known.add((node.domain, node.op_type))
            continue
        label = f"node {node.name!r}" if node.name else "an unnamed node"
        if domain in ("", "ai.onnx.ml"):
            raise ModelError(f"{path}: {label} uses op {node.op_type!r}, which is not an operator of the ONNX "
                             f"domain {domain or 'ai.onnx'!r}; fix the op type (spelling) in the model's export")
        raise ModelError(f"{path}: {label} uses op {node.op_type!r} of domain {domain!r}, a custom op that neither "
                         f"onnx nor onnxruntime knows, so hetcc can neither infer its shapes nor run it; export the "
                         "model with standard ONNX ops (or the op as a model-local function)")


def _outputs_from_nodes(model: ir.Model, path: Path) -> None:
    """Every model output must be computed by a node that some slice runs. An output that is an
    initializer or a constant (a Constant node, ...) gets its own Identity node (the constant is
    renamed, the output keeps its name); an output that is a model input cannot: refused."""
    from hetcc.passes.constants import constant_values

    graph = model.graph
    inputs = {id(v) for v in graph.inputs}
    const_ids, _ = constant_values(graph, outputs_computed=False)
    taken = {v.name for v in graph.inputs} | set(graph.initializers)
    taken |= {o.name for node in graph for o in node.outputs} | {node.name for node in graph}
    done: dict[int, ir.Value] = {}
    for i, value in enumerate(list(graph.outputs)):
        if id(value) in inputs:
            raise ModelError(f"{path}: model output {value.name!r} is the model input {value.name!r} passed through "
                             "unchanged; hetcc's slices return computed outputs only: drop it from the model's "
                             "outputs (the caller has it already)")
        if id(value) not in const_ids:
            continue
        if id(value) not in done:
            name = value.name
            value.name = _fresh(f"{name}_constant", taken)
            out = ir.Value(name=name, shape=value.shape, type=value.type)
            node = ir.Node("", "Identity", [value], outputs=[out], name=_fresh(f"{name}_output", taken))
            graph.append(node)
            done[id(value)] = out
            logger.info("model output %r is a constant; an Identity node computes it", name)
        graph.outputs[i] = done[id(value)]


def _fresh(base: str, taken: set[str]) -> str:
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def _external_tensors(model: ir.Model):
    """(what, tensor) for every external-data tensor of the model: initializers of the main graph
    and of every subgraph, tensor attributes (Constant, ...) of every node, functions included."""
    for graph in [model.graph, *_subgraphs_in_order(model.graph)]:     # model.graphs()'s order
        for name, value in graph.initializers.items():
            if isinstance(value.const_value, ir.ExternalTensor):
                yield f"initializer {name!r}", value.const_value
    bodies = [model.graph, *model.functions.values()]
    for body in bodies:
        for node in all_nodes(body):       # RecursiveGraphIterator's order
            if not node.attributes:
                continue
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


def _subgraphs_in_order(graph: ir.Graph) -> list[ir.Graph]:
    """Every subgraph of ``graph``, recursively, each once, in the order ``Graph.subgraphs()``
    gives them (a subgraph before the subgraphs of its nodes, then the next one)."""
    out: dict[int, ir.Graph] = {}

    def visit(g: ir.Graph) -> None:
        for node in g:
            for sub in subgraphs(node):
                out.setdefault(id(sub), sub)
                visit(sub)

    visit(graph)
    return list(out.values())


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
        data = base_dir / location
        if not os.path.lexists(data):
            continue                        # a missing data file is refused below, with its initializer
        st = check_regular(data, f"{path}: {what}'s external data file {location!r}", error=ModelError,
                           fix="keep the model's data files next to it as regular files")
        offset = int(t.offset or 0)
        need = offset + (int(t.length) if t.length is not None else int(t.nbytes))
        if st.st_size < need:
            raise ModelError(f"{path}: {what}'s external data ends early: {location!r} has {st.st_size} bytes, the "
                             f"tensor needs bytes {offset} to {need} (a truncated or wrong data file); re-export "
                             "the model with its data file")


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


def proto_with_data(model: ir.Model) -> onnx.ModelProto:
    """The model (or a piece of a loaded one) as a proto with its external data read in: an
    onnxruntime session built from bytes resolves external locations against the current
    directory and refuses them, so every session built from an in-memory model needs this."""
    proto = ir.to_proto(model)
    base_dir = external_base_dir(model)
    for tensor, _ in iter_tensor_protos(proto):
        if external_info(tensor) is not None:
            embed_external(tensor, base_dir or "")
    return proto


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
    """Give every model input its static shape (from --input-shape where given); each must stay
    under the per-tensor limit, checked before anything is allocated."""
    inputs = {v.name: v for v in model.graph.inputs if v.name not in model.graph.initializers}
    dynamic: list[tuple[str, list[str], str]] = []   # (input, its dynamic dimensions, an example shape)
    for name in shapes:
        if name not in inputs:
            raise UsageError(f"--input-shape names {name!r}, but the model's inputs are: {', '.join(inputs)}")
    for name, value in inputs.items():
        if not isinstance(value.type, ir.TensorType) or value.dtype is None:
            raise ModelError(f"input {name!r} is not a tensor (type {value.type}); hetcc compiles models whose "
                             "inputs are tensors")
        dims = list(value.shape) if value.shape is not None else None
        if name in shapes:
            want = shapes[name]
            if dims is not None and len(want) != len(dims):
                raise UsageError(f"--input-shape {name}: model input has rank {len(dims)}, got {len(want)} dims")
            for d, w in zip(dims or [], want):
                if isinstance(d, int) and d != w:
                    raise UsageError(f"--input-shape {name}: dimension {d} is fixed in the model, got {w}")
            why = over_limit(f"input {name!r}", _np_name(value.dtype), tuple(want), value.dtype.itemsize)
            if why:
                raise UsageError(f"--input-shape {name}={'x'.join(map(str, want))}: {why}")
            value.shape = ir.Shape(want)
            continue
        if dims is None:
            raise ModelError(f"input {name!r} has no shape; pass --input-shape {name}=1x3x224x224")
        free = [str(d) for d in dims if not isinstance(d, int) or d <= 0]
        if free:
            dynamic.append((name, free, "x".join(str(x) if isinstance(x, int) and x > 0 else "1" for x in dims)))
            continue
        why = over_limit(f"input {name!r}", _np_name(value.dtype), tuple(dims), value.dtype.itemsize)
        if why:
            raise ModelError(f"{why}; export the model with smaller input dimensions")
    if dynamic:  # all of them in one message: a BERT has three inputs of shape (batch, sequence)
        name, free, _ = dynamic[0]
        what = f"a dynamic dimension {free[0]!r}" if len(free) == 1 else f"dynamic dimensions {', '.join(map(repr, free))}"
        also = f" (so do {', '.join(repr(n) for n, _, _ in dynamic[1:])})" if len(dynamic) > 1 else ""
        flags = " ".join(f"--input-shape {n}={example}" for n, _, example in dynamic)
        raise ModelError(f"input {name!r} has {what}{also}; pass {flags}")


def _np_name(dtype: ir.DataType) -> str:
    try:
        return str(dtype.numpy())
    except Exception:  # types without a numpy equivalent (e.g. float8)
        return dtype.name.lower()


def _static_dims(vi: onnx.ValueInfoProto) -> tuple[int, ...] | None:
    """The dimensions of a tensor whose every dimension is a number, else None."""
    t = vi.type
    if not t.HasField("tensor_type"):
        return None
    tt = t.tensor_type
    if not tt.HasField("shape"):
        return None
    dims = []
    for d in tt.shape.dim:
        if not d.HasField("dim_value"):
            return None
        dims.append(d.dim_value)
    return tuple(dims)


#: (name, element type, dimensions) of each statically shaped value info of a proto's
#: ``graph.value_info`` and ``graph.output``, in that order: read from the proto once
StaticShapes = list[tuple[str, int, tuple[int, ...]]]


def _static_shapes(proto: onnx.ModelProto) -> StaticShapes:
    out: StaticShapes = []
    for values in (proto.graph.value_info, proto.graph.output):
        for vi in values:
            dims = _static_dims(vi)
            if dims is not None:
                out.append((vi.name, vi.type.tensor_type.elem_type, dims))
    return out


def _infer(proto: onnx.ModelProto, path: Path, model: ir.Model | None = None,
           dynamic: frozenset[str] = frozenset()) -> StaticShapes:
    """Static shapes for every tensor: onnx's inference, else onnxruntime's symbolic inference,
    else (and always for the tensors in ``dynamic``, whose shapes depend on the input values)
    the shapes one onnxruntime run on random inputs gives. Returns the inferred proto's
    ``_static_shapes``."""
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
    shapes = _static_shapes(inferred)
    if _missing_shapes(inferred, shapes):
        symbolic = _symbolic_shapes(proto)
        if symbolic is not None:
            inferred = symbolic
            shapes = _static_shapes(inferred)
            logger.info("used onnxruntime's symbolic shape inference")
    _check_sizes(shapes, path, dynamic)  # before the run below allocates them
    missing = _missing_shapes(inferred, shapes)
    need = list(dict.fromkeys(missing + [n for n in _produced(inferred) if n in dynamic]))
    error = None
    if need and model is not None:
        inferred, error = _shapes_by_running(model, inferred, need, path)
        shapes = _static_shapes(inferred)
        missing = _missing_shapes(inferred, shapes)
    if missing:
        what = "has a shape that depends on the input values" if missing[0] in dynamic else "has no static shape"
        if error is not None:
            raise ModelError(f"{path}: tensor {missing[0]!r} {what} ({len(missing)} tensors without one) and running "
                             f"the model once on random inputs to measure it failed ({error}); check that "
                             "onnxruntime runs the model with these input shapes")
        raise ModelError(f"{path}: cannot infer a static shape for tensor {missing[0]!r} "
                         f"({len(missing)} tensors without one); fix the input shapes with --input-shape")
    return shapes


def _produced(proto: onnx.ModelProto) -> list[str]:
    return [o for node in proto.graph.node for o in node.output if o]


def _check_sizes(shapes: StaticShapes, path: Path, dynamic: frozenset[str]) -> None:
    """Refuse a tensor with a static shape over the per-tensor limit (naming it) before any run."""
    dtypes: dict[int, tuple[str, int]] = {}    # element type -> numpy name, item size (str(dtype) is slow)
    for name, elem, dims in shapes:
        if name in dynamic:
            continue
        if elem not in dtypes:
            try:
                dtype = onnx.helper.tensor_dtype_to_np_dtype(elem)
            except Exception:  # strings, float8, ...: one byte is a lower bound
                dtype = np.dtype(np.uint8)
            dtypes[elem] = (str(dtype), dtype.itemsize)
        text, itemsize = dtypes[elem]
        why = over_limit(f"tensor {name!r}", text, dims, itemsize)
        if why:
            raise ModelError(f"{path}: {why}; pass smaller --input-shape dimensions")


_SSI_MODULE = "hetcc._onnxruntime_symbolic_shape_infer"


def symbolic_shape_infer_module():
    """onnxruntime's ``tools/symbolic_shape_infer.py`` (numpy, onnx and sympy only), loaded from its
    file: importing it as ``onnxruntime.tools.symbolic_shape_infer`` runs that package's
    ``__init__``, which imports torch (seconds) wherever torch is installed, for an export helper
    hetcc never calls. Loaded once per process."""
    import importlib.util
    import sys

    module = sys.modules.get(_SSI_MODULE)
    if module is None:
        ort = onnxrt.load()  # telemetry off before onnxruntime initialises
        spec = importlib.util.spec_from_file_location(
            _SSI_MODULE, Path(ort.__file__).resolve().parent / "tools" / "symbolic_shape_infer.py")
        if spec is None or spec.loader is None:  # pragma: no cover - onnxruntime without its tools
            raise ImportError("onnxruntime/tools/symbolic_shape_infer.py is missing")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[_SSI_MODULE] = module
    return module


def _symbolic_shapes(proto: onnx.ModelProto) -> onnx.ModelProto | None:
    """onnxruntime's symbolic shape inference (auto-merge on), or None when it cannot infer every
    shape or is unavailable.

    Not ``SymbolicShapeInference.infer_shapes``: when inference is incomplete that method saves
    the partial model as ``sym_shape_infer_temp.onnx`` plus a ``<uuid>.data`` file into the
    current directory (overwriting a user's file of that name) before raising. This runs the same
    steps and writes nothing; without the steps it needs (another onnxruntime version) the
    fallback is skipped, with a debug message, and the last resort below still applies."""
    try:
        ssi = symbolic_shape_infer_module()
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


def _shapes_by_running(model: ir.Model, inferred: onnx.ModelProto, missing: list[str],
                       path: Path) -> tuple[onnx.ModelProto, str | None]:
    """Shapes that static inference cannot give: run the model once on random inputs with
    onnxruntime and read the shapes of the tensors ``missing``. For shapes static inference
    cannot propagate (e.g. a Where over shape values, as in ViT's class token) they are the
    shapes; for data-dependent ones (NonZero, ...) one run's, which the frontend keeps apart.
    Returns the proto with those shapes and None, or ``inferred`` unchanged and why the run failed."""
    from hetcc.runtime import random_inputs
    from hetcc.runtime.executor import TensorSpec

    proto = proto_with_data(model)
    known_out = {o.name for o in proto.graph.output}
    for name in missing:
        if name not in known_out:
            proto.graph.output.append(onnx.ValueInfoProto(name=name))
    ort = onnxrt.load()  # onnxruntime, telemetry off unless HETCC_ORT_TELEMETRY=1
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
        return inferred, _first_line(exc)[:300]
    out = onnx.ModelProto()
    out.CopyFrom(inferred)
    for name in missing:
        v = values.get(name)
        if isinstance(v, np.ndarray):
            elem = onnx.helper.np_dtype_to_tensor_dtype(v.dtype)
            out.graph.value_info.append(onnx.helper.make_tensor_value_info(name, elem, list(v.shape)))
    logger.info("%s: %d tensor shapes taken from one onnxruntime run", path, len(missing))
    return out, None


def _missing_shapes(model: onnx.ModelProto, shapes: StaticShapes) -> list[str]:
    """The node outputs of ``model`` without a static shape (``shapes``: its ``_static_shapes``)."""
    known = {name for name, _, _ in shapes}
    known |= {vi.name for vi in model.graph.input if _static_dims(vi) is not None}
    known |= {i.name for i in model.graph.initializer}
    return [o for node in model.graph.node for o in node.output if o and o not in known]


def _apply_shapes(model: ir.Model, shapes: StaticShapes, dynamic: frozenset[str]) -> dict[str, tuple[int, ...]]:
    """Type every value from ``shapes`` (``_static_shapes`` of the inferred proto). A tensor in
    ``dynamic`` keeps an unknown shape in the IR (slices must not freeze it); its shape from one
    run is returned, name -> shape."""
    values = {v.name: v for v in model.graph.inputs}
    for node in model.graph:
        for o in node.outputs:
            if o.name:
                values[o.name] = o
    observed: dict[str, tuple[int, ...]] = {}
    types: dict[int, ir.DataType] = {}
    for name, elem, dims in shapes:
        v = values.get(name)
        if v is None:
            continue
        if elem:
            if elem not in types:
                types[elem] = ir.DataType(elem)
            v.dtype = types[elem]
        if name in dynamic:
            observed[name] = dims
        else:
            v.shape = ir.Shape(list(dims))
    for name in dynamic:
        if name in values:
            values[name].shape = None
    return observed


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
    dynamic = data_dependent_shapes(model)
    observed = _apply_shapes(model, _infer(proto, path, model, dynamic), dynamic)
    if dynamic:
        logger.info("%s: %d tensors have shapes that depend on the input values; no cut crosses them",
                    path, len(dynamic))
    RemoveUnusedNodesPass()(model)  # dead nodes never run and would confuse slice extraction
    if not _in_topological_order(model):  # the stable sort leaves such a model as it is
        TopologicalSortPass()(model)
    _name_nodes(model.graph)
    return Program(model=model, source_path=path.resolve(), source_sha256=sha256_file(path), name=path.stem,
                   observed_shapes=observed)


def _in_topological_order(model: ir.Model) -> bool:
    """Whether the model is a graph without subgraphs or functions whose every node comes after
    the producers of its inputs: onnx-ir's stable topological sort keeps such a graph as it is."""
    if len(model.functions):
        return False
    before: set[int] = set()
    for node in model.graph:
        if subgraphs(node):
            return False
        for v in node.inputs:
            producer = v.producer() if v is not None else None
            if producer is not None and id(producer) not in before:
                return False
        before.add(id(node))
    return True


def _name_nodes(graph: ir.Graph) -> None:
    """Give every top-level node a unique, non-empty name (passes key analyses by node name)."""
    seen: set[str] = set()
    for i, node in enumerate(graph):
        name = node.name or f"{node.op_type}_{i}"
        while name in seen:
            name = f"{name}_{i}"
        node.name = name
        seen.add(name)
