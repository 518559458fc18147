"""FindConstants: fold shape queries of static tensors, then mark every value and node that is
computable from initializers alone. Such nodes are never a layer and never cut: codegen copies
them into each slice that reads them (torch's Identity-of-initializer and Shape/Gather chains).
A node that produces a model output is never constant: some slice must compute that output (the
frontend gives a constant model output its own Identity, so only that Identity is kept)."""
from __future__ import annotations

import logging
from typing import ClassVar

import numpy as np
from hetcc.compiler.onnxir import ir

from hetcc.compiler.graphutil import node_reads
from hetcc.compiler.passmanager import Pass, PassResult
from hetcc.compiler.program import CONSTANTS, ConstantInfo, Program

logger = logging.getLogger(__name__)

# Ops whose output differs between runs: never constant even with constant inputs.
NONDETERMINISTIC = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                              "Multinomial", "Bernoulli", "Dropout"})


def _static_shape(value: ir.Value) -> tuple[int, ...] | None:
    if value.shape is None or not all(isinstance(d, int) for d in value.shape):
        return None
    return tuple(value.shape)


def fold_shape_queries(graph: ir.Graph) -> int:
    """Replace Shape/Size of a statically shaped tensor by an initializer; returns how many."""
    folded = 0
    for node in list(graph):
        if node.domain not in ("", "ai.onnx") or node.op_type not in ("Shape", "Size") or not node.inputs:
            continue
        src = node.inputs[0]
        shape = _static_shape(src) if src is not None else None
        if shape is None:
            continue
        if node.op_type == "Shape":
            start = node.attributes.get("start")
            end = node.attributes.get("end")
            s = start.as_int() if start is not None else 0
            e = end.as_int() if end is not None else len(shape)
            data = np.array(shape[s:e], dtype=np.int64)  # ONNX clamps start/end like a Python slice
        else:
            data = np.array(int(np.prod(shape)), dtype=np.int64)
        old = node.outputs[0]
        name = old.name
        tensor = ir.tensor(data, name=name)
        new = ir.Value(name=None, shape=ir.Shape(data.shape), type=ir.TensorType(ir.DataType.INT64), const_value=tensor)
        ir.convenience.replace_all_uses_with(old, new)
        if old in graph.outputs:  # a model output that is a shape: keep the node
            continue
        graph.remove(node, safe=True)
        new.name = name
        graph.register_initializer(new)
        folded += 1
    return folded


def constant_values(graph: ir.Graph, *, outputs_computed: bool = True) -> tuple[set[int], set[str]]:
    """(ids of the values computable from initializers alone, names of the nodes computing them).

    Graph order is topological. Random ops are never constant. With ``outputs_computed`` a node
    producing a model output is not constant either (its slice must compute the output)."""
    graph_inputs = {id(v) for v in graph.inputs}
    const_ids = {id(v) for v in graph.initializers.values() if id(v) not in graph_inputs}
    outputs = {id(v) for v in graph.outputs} if outputs_computed else set()
    const_nodes: set[str] = set()
    for node in graph:
        if node.op_type in NONDETERMINISTIC or any(id(o) in outputs for o in node.outputs):
            continue
        if all(id(v) in const_ids for v in node_reads(node)):
            const_nodes.add(node.name)
            const_ids.update(id(o) for o in node.outputs)
    return const_ids, const_nodes


class FindConstants(Pass):
    name: ClassVar[str] = "constants"
    ensures: ClassVar[tuple[str, ...]] = (CONSTANTS,)

    def __init__(self, fold_shapes: bool = True) -> None:
        self.fold_shapes = fold_shapes

    def run(self, program: Program) -> PassResult:
        graph = program.graph
        folded = fold_shape_queries(graph) if self.fold_shapes else 0
        graph_inputs = {id(v) for v in graph.inputs}
        const_values: set[str] = {name for name, v in graph.initializers.items() if id(v) not in graph_inputs}
        _, const_nodes = constant_values(graph)
        const_values |= {o.name for node in graph if node.name in const_nodes for o in node.outputs if o.name}
        program.put(CONSTANTS, ConstantInfo(values=frozenset(const_values), nodes=frozenset(const_nodes)))
        return PassResult(folded > 0, f"{len(const_nodes)} constant nodes, {folded} shape queries folded")
