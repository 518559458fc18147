"""GroupLayers: split the non-constant nodes into layers at valid cut points.

A cut after position i of a topological order is valid when every tensor crossing it is
produced at or before i and consumed after i; its width is the number of such tensors
(constants never count). Layers are the runs of nodes between consecutive cuts of width <= k.
The order is chosen to expose every single-tensor cut: for each tensor t whose ancestor set A_t
(the producer and everything it depends on) is crossed by t alone, A_t is a prefix of the
order; those prefixes nest, and nodes between two of them keep the model's own order.
"""
from __future__ import annotations

import logging
from typing import ClassVar, Container, Mapping

import numpy as np
from hetcc.compiler.onnxir import ir

from hetcc.compiler.flops import INT8_OPS, OP_CLASSES, fused_qdq, node_class, node_flops, runs_int8
from hetcc.compiler.graphutil import node_reads, walk
from hetcc.compiler.passmanager import Pass, PassResult
from hetcc.compiler.program import CONSTANTS, LAYERS, TENSORS, ConstantInfo, Layer, Program, TensorInfo
from hetcc.passes.layer_vectors import layer_vector

logger = logging.getLogger(__name__)


class _Deps:
    """Data dependencies among the non-constant top-level nodes."""

    def __init__(self, graph: ir.Graph, consts: ConstantInfo) -> None:
        self.nodes: list[ir.Node] = [n for n in graph if n.name not in consts.nodes]
        self.producer: dict[str, int] = {}
        for i, n in enumerate(self.nodes):
            for o in n.outputs:
                if o.name:
                    self.producer[o.name] = i
        self.reads: list[list[str]] = []
        for n in self.nodes:
            names = [v.name for v in node_reads(n) if v.name and v.name not in consts.values]
            self.reads.append(list(dict.fromkeys(names)))
        self.graph_outputs = {v.name for v in graph.outputs}


def cut_order(deps: _Deps) -> list[int]:
    """A topological order of deps.nodes in which every single-tensor cut is a prefix.

    A node p whose one read tensor t is all that leaves its ancestor set A_p marks such a cut.
    In a depth-first post-order from the graph's sinks (the sinks and a node's reads that depend
    on a model input visited first) A_p is exactly the prefix ending at p: a node outside A_p reads t or
    something downstream of it, so it finishes after p. The prefix ending at position x is A_p
    when p = post[x] is its only node without a consumer inside it, and t is then its only
    crossing tensor when the cut's width is 1. Those prefixes nest; the order is the model's own
    within each band between two of them and after the last. Linear in nodes and reads (an
    ancestor matrix would be quadratic: 400 MB and minutes for a 20k-node chain)."""
    n = len(deps.nodes)
    if n == 0:
        return []
    preds = [[deps.producer[r] for r in reads if r in deps.producer] for reads in deps.reads]
    fed = [False] * n          # reads a model input, directly or through its producers
    has_user = [False] * n
    for i in range(n):         # deps.nodes are in topological order
        fed[i] = len(preds[i]) < len(deps.reads[i]) or any(fed[q] for q in preds[i])
        for q in preds[i]:
            has_user[q] = True
    post = _post_order(n, [ps if len(ps) < 2 else [q for q in ps if fed[q]] + [q for q in ps if not fed[q]]
                           for ps in preds],
                       [i for i in range(n) if not has_user[i] and fed[i]]
                       + [i for i in range(n) if not has_user[i] and not fed[i]])
    pos = np.empty(n, dtype=np.int64)
    pos[np.array(post, dtype=np.int64)] = np.arange(n)
    widths = cut_widths(deps, post).tolist()
    at = pos.tolist()
    first_use = [n] * n
    for j, ps in enumerate(preds):
        for q in ps:
            if at[j] < first_use[q]:
                first_use[q] = at[j]
    sinks = np.zeros(n + 1, dtype=np.int64)     # nodes of prefix x without a consumer in it
    np.add.at(sinks, pos, 1)
    np.add.at(sinks, np.array(first_use, dtype=np.int64), -1)
    sinks = np.cumsum(sinks)[:n].tolist()
    cuts = [x for x in range(n - 1) if widths[x] == 1 and sinks[x] == 1 and has_user[post[x]]]
    order: list[int] = []
    start = 0
    for x in cuts + [n - 1]:
        order.extend(sorted(post[start:x + 1]))
        start = x + 1
    return order


def _post_order(n: int, preds: list[list[int]], roots: list[int]) -> list[int]:
    """Iterative depth-first post-order over ``preds`` (reads, in visiting order) from ``roots``."""
    seen = bytearray(n)
    post: list[int] = []
    for root in roots:
        if seen[root]:
            continue
        seen[root] = 1
        stack = [(root, iter(preds[root]))]
        while stack:
            node, it = stack[-1]
            nxt = next((q for q in it if not seen[q]), None)
            if nxt is None:
                stack.pop()
                post.append(node)
            else:
                seen[nxt] = 1
                stack.append((nxt, iter(preds[nxt])))
    return post


def cut_widths(deps: _Deps, order: list[int], only: Container[str] | None = None) -> np.ndarray:
    """widths[x] = number of tensors crossing the cut after position x of ``order`` (with
    ``only``: of those tensors only)."""
    n = len(order)
    pos = np.empty(n, dtype=np.int64)
    pos[np.array(order, dtype=np.int64)] = np.arange(n)
    at = pos.tolist()
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for j, reads in enumerate(deps.reads):
        for name in reads:
            p = deps.producer.get(name)
            first[name] = -1 if p is None else at[p]
            last[name] = max(last.get(name, -1), at[j])
    diff = [0] * (n + 1)
    for name, q in last.items():
        if only is not None and name not in only:
            continue
        p = first[name]
        if q > p:
            diff[p + 1] += 1  # crosses cuts p, p+1, ..., q-1 (index shifted by one)
            diff[q + 1] -= 1
    return np.cumsum(np.array(diff, dtype=np.int64))[1:]  # widths[x] for x = 0..n-1 (x = n-1 is the end)


def inner_op_types(node: ir.Node) -> list[str]:
    return [n.op_type for n in walk(node)]


_FLOAT_NAMES = frozenset({"float32", "float16", "float64", "bfloat16"})


def _computed_values(node: ir.Node, int8: bool) -> tuple[ir.Value | None, ...] | None:
    """The values whose element type a device computes in, when ``node`` is part of a QDQ group
    a runtime fuses into one integer kernel: only the quantised ends (a DequantizeLinear's input,
    a QuantizeLinear's output); the float tensors and scales inside never materialise.
    None: every value ``node`` reads or writes. ``int8``: ``runs_int8(node)``."""
    if not int8 or node.op_type in INT8_OPS:
        return None
    if node.op_type == "DequantizeLinear":
        return tuple(node.inputs[:1])
    if node.op_type == "QuantizeLinear":
        return tuple(node.outputs[:1])
    return ()


def build_layers(deps: _Deps, order: list[int], cuts: list[int], tensors: Mapping[str, TensorInfo],
                 consts: ConstantInfo) -> tuple[Layer, ...]:
    bounds = [-1] + cuts + [len(order) - 1]
    layer_of: dict[int, int] = {}
    for li in range(len(bounds) - 1):
        for x in range(bounds[li] + 1, bounds[li + 1] + 1):
            layer_of[order[x]] = li
    consumers_layer: dict[str, int] = {}
    for j, reads in enumerate(deps.reads):
        for name in reads:
            consumers_layer[name] = max(consumers_layer.get(name, -1), layer_of[j])
    layers = []
    const_values, all_nodes, all_reads, graph_outputs = consts.values, deps.nodes, deps.reads, deps.graph_outputs
    for li in range(len(bounds) - 1):
        members = order[bounds[li] + 1:bounds[li + 1] + 1]
        member_nodes = [all_nodes[j] for j in members]
        produced = {o.name for node in member_nodes for o in node.outputs if o.name}
        inputs = list(dict.fromkeys(name for j in members for name in all_reads[j] if name not in produced))
        outputs = [o.name for node in member_nodes for o in node.outputs
                   if o.name and (consumers_layer.get(o.name, -1) > li or o.name in graph_outputs)]
        ops: list[str] = []
        params: dict[str, int] = {}
        dtypes: set[str] = set()
        flops = dict.fromkeys(OP_CLASSES, 0.0)
        int8 = dict.fromkeys(OP_CLASSES, 0.0)
        fused = 0
        counts = dict.fromkeys(OP_CLASSES, 0)
        geometry = {"kernel": 0, "stride": 0, "in_channels": 0, "out_channels": 0}
        node_flop = []
        for node in member_nodes:
            cls = node_class(node)
            counts[cls] += 1
            _conv_geometry(node, tensors, geometry)
            inner = walk(node)
            ops.extend([n.op_type for n in inner])
            in_int8 = runs_int8(node)
            seen = _computed_values(node, in_int8)
            scales_only = node.op_type in INT8_OPS   # its float constants are quantisation scales
            for v in node_reads(node) if len(inner) == 1 else [v for n in inner for v in node_reads(n)]:
                name = v.name
                info = tensors.get(name)
                if info is None:
                    continue
                const = name in const_values
                if const:
                    params[name] = info.nbytes
                if (seen is None or v in seen) and not (scales_only and const and info.dtype in _FLOAT_NAMES):
                    dtypes.add(info.dtype)
            for o in node.outputs:
                info = tensors.get(o.name)
                if info is not None and (seen is None or o in seen):
                    dtypes.add(info.dtype)
            f = node_flops(node, tensors)
            node_flop.append(f)
            flops[cls] += f
            if in_int8:
                int8[cls] += f
            fused += fused_qdq(node)
        layers.append(Layer(
            id=li, nodes=tuple(node.name for node in member_nodes), op_types=tuple(sorted(set(ops))),
            inputs=tuple(inputs), outputs=tuple(outputs), param_bytes=int(sum(params.values())),
            flops=float(sum(flops.values())), flops_by_class=flops,
            input_bytes=int(sum(tensors[n].nbytes for n in inputs if n in tensors)),
            output_bytes=int(sum(tensors[n].nbytes for n in outputs if n in tensors)),
            dtypes=tuple(sorted(dtypes)), node_classes=counts, geometry=geometry,
            int8_flops_by_class=int8, fused_nodes=fused,
            activation_bytes=int(sum(tensors[n].nbytes for n in produced if n in tensors)),
            vector=layer_vector(li, member_nodes, tensors, node_flop)))
    return tuple(layers)


def _conv_geometry(node: ir.Node, tensors: Mapping[str, TensorInfo], geometry: dict[str, int]) -> None:
    """Raise ``geometry`` (largest kernel side, stride, input and output channels) to a Conv's."""
    if node.op_type not in ("Conv", "ConvTranspose", "QLinearConv", "ConvInteger"):
        return
    for name, key in (("kernel_shape", "kernel"), ("strides", "stride")):
        attr = node.attributes.get(name)
        if attr is not None and attr.as_ints():
            geometry[key] = max(geometry[key], max(attr.as_ints()))
    w_index = 3 if node.op_type == "QLinearConv" else 1
    x = tensors.get(node.inputs[0].name) if node.inputs and node.inputs[0] is not None else None
    w = tensors.get(node.inputs[w_index].name) if len(node.inputs) > w_index and node.inputs[w_index] is not None else None
    if x is not None and len(x.shape) >= 2:
        geometry["in_channels"] = max(geometry["in_channels"], int(x.shape[1]))
    if w is not None and len(w.shape) >= 3:
        geometry["out_channels"] = max(geometry["out_channels"], int(w.shape[0]))
        if not geometry["kernel"]:
            geometry["kernel"] = int(max(w.shape[2:]))
        geometry["stride"] = max(geometry["stride"], 1)


def qdq_inner_tensors(deps: _Deps) -> set[str]:
    """The tensors inside a QDQ group (DequantizeLinear -> op -> QuantizeLinear): every output of
    a non-constant DequantizeLinear and every computed input of a QuantizeLinear.

    onnxruntime fuses such a group into one integer kernel (QLinearConv, QLinearAdd, ...); a cut
    through it leaves the op computing in float32 between two sessions and its requantised output
    differs from the unsliced model's by a quantisation step. Cuts stay on the quantised tensors
    between a QuantizeLinear and the next DequantizeLinear. Weight and bias DequantizeLinear nodes
    are constants (never cut) and travel with the slice that reads them."""
    out: set[str] = set()
    for node in deps.nodes:
        if node.domain not in ("", "ai.onnx", "com.microsoft"):
            continue
        if node.op_type == "DequantizeLinear":
            out.update(o.name for o in node.outputs if o.name)
        elif node.op_type == "QuantizeLinear" and node.inputs and node.inputs[0] is not None \
                and node.inputs[0].name in deps.producer:
            out.add(node.inputs[0].name)
    return out


class GroupLayers(Pass):
    """Ensures every non-constant node is in exactly one layer and consecutive layers meet at a
    cut crossed by at most ``max_cut_tensors`` tensors, none of them with a data-dependent shape
    (a slice input typed with one run's shape would fail on other inputs) and none inside a QDQ
    group (``qdq_inner_tensors``)."""

    name: ClassVar[str] = "layers"
    requires: ClassVar[tuple[str, ...]] = (TENSORS, CONSTANTS)
    ensures: ClassVar[tuple[str, ...]] = (LAYERS,)

    def __init__(self, max_cut_tensors: int = 1) -> None:
        if max_cut_tensors < 1:
            raise ValueError("max_cut_tensors must be >= 1")
        self.max_cut_tensors = max_cut_tensors

    def run(self, program: Program) -> PassResult:
        consts: ConstantInfo = program.get(CONSTANTS)
        tensors = program.get(TENSORS)
        deps = _Deps(program.graph, consts)
        order = cut_order(deps)
        widths = cut_widths(deps, order)
        uncuttable = {name for name, info in tensors.items() if info.data_dependent} | qdq_inner_tensors(deps)
        blocked = (cut_widths(deps, order, uncuttable) if uncuttable
                   else np.zeros(len(order), dtype=np.int64))
        widths, blocked = widths.tolist(), blocked.tolist()
        cuts = [x for x in range(len(order) - 1) if widths[x] <= self.max_cut_tensors and not blocked[x]]
        layers = build_layers(deps, order, cuts, tensors, consts)
        program.put(LAYERS, layers)
        return PassResult(False, f"{len(deps.nodes)} nodes -> {len(layers)} layers (k={self.max_cut_tensors})")
