"""Small onnx-ir helpers shared by passes: what a node reads (subgraph captures included).

Each runs once or more per node of a model (20,000 and more for a large one), so a node without
attributes (most of them) takes a short path: no generators, no subgraph scan."""
from __future__ import annotations

from hetcc.compiler.onnxir import ir


def subgraphs(node: ir.Node) -> list[ir.Graph]:
    """The graphs ``node``'s attributes hold (If/Loop/Scan bodies), in attribute order."""
    attrs = node.attributes
    if not attrs:
        return []
    out: list[ir.Graph] = []
    for attr in attrs.values():
        if attr.type == ir.AttributeType.GRAPH:
            out.append(attr.value)
        elif attr.type == ir.AttributeType.GRAPHS:
            out.extend(attr.value)
    return out


def walk(node: ir.Node) -> list[ir.Node]:
    """``node`` and every node inside its subgraphs (If/Loop/Scan bodies), recursively, depth
    first (onnx-ir's RecursiveGraphIterator order): the one subgraph walker (op types, reads and
    legality all go through it)."""
    subs = subgraphs(node)
    if not subs:
        return [node]
    out = [node]
    for g in subs:
        for inner in g:
            out.extend(walk(inner))
    return out


def all_nodes(graph: ir.Graph | ir.Function) -> list[ir.Node]:
    """Every node of ``graph`` and of its subgraphs, recursively (RecursiveGraphIterator order)."""
    out: list[ir.Node] = []
    for node in graph:
        out.extend(walk(node))
    return out


def node_reads(node: ir.Node) -> list[ir.Value]:
    """Values of the enclosing graph that ``node`` reads: its inputs plus every outer-scope value
    its subgraphs (If/Loop/Scan bodies, recursively) capture. Order is stable, no duplicates."""
    subs = subgraphs(node)
    inputs = node.inputs
    if not subs and len(inputs) == 1 and inputs[0] is not None:
        return [inputs[0]]
    seen: dict[int, ir.Value] = {id(v): v for v in inputs if v is not None}
    for g in subs:
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
