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
import onnx_ir as ir

from hetcc.flops import node_flops, op_class
from hetcc.graphutil import node_reads, walk
from hetcc.passmanager import Pass, PassResult
from hetcc.program import CONSTANTS, LAYERS, TENSORS, ConstantInfo, Layer, Program, TensorInfo

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

    def edges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
        """(source node or -1 for a model input, destination node, tensor id) per read."""
        names: dict[str, int] = {}
        src, dst, tid = [], [], []
        for j, reads in enumerate(self.reads):
            for name in reads:
                src.append(self.producer.get(name, -1))
                dst.append(j)
                tid.append(names.setdefault(name, len(names)))
        return (np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64),
                np.array(tid, dtype=np.int64), list(names))


def cut_order(deps: _Deps) -> list[int]:
    """A topological order of deps.nodes in which every single-tensor cut is a prefix."""
    n = len(deps.nodes)
    if n == 0:
        return []
    anc = np.zeros((n, n), dtype=bool)
    for i, reads in enumerate(deps.reads):
        anc[i, i] = True
        for name in reads:
            p = deps.producer.get(name)
            if p is not None:
                anc[i] |= anc[p]
    src, dst, tid, names = deps.edges()
    tensor_index = {name: k for k, name in enumerate(names)}
    from_input = src < 0
    src_safe = np.where(from_input, 0, src)
    candidates: list[tuple[int, int]] = []  # (|A|, producer)
    for i, node in enumerate(deps.nodes):
        outs = [tensor_index[o.name] for o in node.outputs if o.name in tensor_index]
        if len(outs) != 1:
            continue
        a = anc[i]
        crossing = (from_input | a[src_safe]) & ~a[dst]
        if not crossing.any():
            continue
        if np.all(tid[crossing] == outs[0]):
            candidates.append((int(a.sum()), i))
    candidates.sort()
    order: list[int] = []
    placed = np.zeros(n, dtype=bool)
    for size, i in candidates:
        a = anc[i]
        if size <= int(placed.sum()) or np.any(placed & ~a):
            continue  # not nested with the chain kept so far
        order.extend(int(j) for j in np.flatnonzero(a & ~placed))
        placed |= a
    order.extend(int(j) for j in np.flatnonzero(~placed))
    return order


def cut_widths(deps: _Deps, order: list[int], only: Container[str] | None = None) -> np.ndarray:
    """widths[x] = number of tensors crossing the cut after position x of ``order`` (with
    ``only``: of those tensors only)."""
    n = len(order)
    pos = np.empty(n, dtype=np.int64)
    pos[np.array(order, dtype=np.int64)] = np.arange(n)
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for j, reads in enumerate(deps.reads):
        for name in reads:
            p = deps.producer.get(name)
            first[name] = -1 if p is None else int(pos[p])
            last[name] = max(last.get(name, -1), int(pos[j]))
    diff = np.zeros(n + 1, dtype=np.int64)
    for name, q in last.items():
        if only is not None and name not in only:
            continue
        p = first[name]
        if q > p:
            diff[p + 1] += 1  # crosses cuts p, p+1, ..., q-1 (index shifted by one)
            diff[q + 1] -= 1
    return np.cumsum(diff)[1:]  # widths[x] for x = 0..n-1 (x = n-1 is the end)


def inner_op_types(node: ir.Node) -> list[str]:
    return [n.op_type for n in walk(node)]


def _inner_reads(node: ir.Node) -> list[ir.Value]:
    return [v for n in walk(node) for v in node_reads(n)]


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
    for li in range(len(bounds) - 1):
        members = [order[x] for x in range(bounds[li] + 1, bounds[li + 1] + 1)]
        produced = {o.name for j in members for o in deps.nodes[j].outputs if o.name}
        inputs = list(dict.fromkeys(name for j in members for name in deps.reads[j] if name not in produced))
        outputs = [o.name for j in members for o in deps.nodes[j].outputs
                   if o.name and (consumers_layer.get(o.name, -1) > li or o.name in deps.graph_outputs)]
        ops: list[str] = []
        params: dict[str, int] = {}
        dtypes: set[str] = set()
        flops = {"conv": 0.0, "matmul": 0.0, "other": 0.0}
        counts = {"conv": 0, "matmul": 0, "other": 0}
        geometry = {"kernel": 0, "stride": 0, "in_channels": 0, "out_channels": 0}
        for j in members:
            node = deps.nodes[j]
            counts[op_class(node.op_type)] += 1
            _conv_geometry(node, tensors, geometry)
            ops.extend(inner_op_types(node))
            for v in _inner_reads(node):
                if v.name in consts.values and v.name in tensors:
                    params[v.name] = tensors[v.name].nbytes
                if v.name in tensors:
                    dtypes.add(tensors[v.name].dtype)
            for o in node.outputs:
                if o.name in tensors:
                    dtypes.add(tensors[o.name].dtype)
            flops[op_class(node.op_type)] += node_flops(node, tensors)
        layers.append(Layer(
            id=li, nodes=tuple(deps.nodes[j].name for j in members), op_types=tuple(sorted(set(ops))),
            inputs=tuple(inputs), outputs=tuple(outputs), param_bytes=int(sum(params.values())),
            flops=float(sum(flops.values())), flops_by_class=flops,
            input_bytes=int(sum(tensors[n].nbytes for n in inputs if n in tensors)),
            output_bytes=int(sum(tensors[n].nbytes for n in outputs if n in tensors)),
            dtypes=tuple(sorted(dtypes)), node_classes=counts, geometry=geometry))
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


class GroupLayers(Pass):
    """Ensures every non-constant node is in exactly one layer and consecutive layers meet at a
    cut crossed by at most ``max_cut_tensors`` tensors, none of them with a data-dependent shape
    (a slice input typed with one run's shape would fail on other inputs)."""

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
        dynamic = {name for name, info in tensors.items() if info.data_dependent}
        blocked = cut_widths(deps, order, dynamic) if dynamic else np.zeros(len(order), dtype=np.int64)
        cuts = [x for x in range(len(order) - 1) if widths[x] <= self.max_cut_tensors and not blocked[x]]
        layers = build_layers(deps, order, cuts, tensors, consts)
        program.put(LAYERS, layers)
        return PassResult(False, f"{len(deps.nodes)} nodes -> {len(layers)} layers (k={self.max_cut_tensors})")
