"""Small onnx-ir helpers shared by passes: what a node reads (subgraph captures included)."""
from __future__ import annotations

from typing import Iterator

import onnx_ir as ir


def subgraphs(node: ir.Node) -> Iterator[ir.Graph]:
    for attr in node.attributes.values():
        if attr.type == ir.AttributeType.GRAPH:
            yield attr.value
        elif attr.type == ir.AttributeType.GRAPHS:
            yield from attr.value


def walk(node: ir.Node) -> Iterator[ir.Node]:
    """``node`` and every node inside its subgraphs (If/Loop/Scan bodies), recursively: the one
    subgraph walker (op types, reads and legality all go through it)."""
    yield node
    for g in subgraphs(node):
        for inner in g:
            yield from walk(inner)


def node_reads(node: ir.Node) -> list[ir.Value]:
    """Values of the enclosing graph that ``node`` reads: its inputs plus every outer-scope value
    its subgraphs (If/Loop/Scan bodies, recursively) capture. Order is stable, no duplicates."""
    seen: dict[int, ir.Value] = {}
    for v in node.inputs:
        if v is not None:
            seen.setdefault(id(v), v)
    for g in subgraphs(node):
        for v in _captures(g):
            seen.setdefault(id(v), v)
    return list(seen.values())


def _captures(graph: ir.Graph) -> list[ir.Value]:
    defined: set[int] = {id(v) for v in graph.inputs}
    defined |= {id(v) for v in graph.initializers.values()}
    out: dict[int, ir.Value] = {}
    for node in graph:
        for v in node_reads(node):
            if id(v) not in defined:
                out.setdefault(id(v), v)
        for o in node.outputs:
            defined.add(id(o))
    for v in graph.outputs:
        if id(v) not in defined:
            out.setdefault(id(v), v)
    return [v for v in out.values() if id(v) not in defined]
