"""Canonicalize: rewrite known equivalent patterns into the form the target's devices support,
so that the exporter does not change the plan.

Two exporters write the same network differently: torch's dynamo exporter writes
``ReduceMean`` over H and W where the legacy exporter writes ``GlobalAveragePool``, and a device
whose operator list names only the latter (the HiKey 970's NPU) would refuse every layer that
holds the former. This pass, between the constants and the layers, replaces such a node by its
equivalent when that lets more devices run it and none fewer (``devices_gained``); without a
target (``Canonicalize()``) it applies the canonical rules everywhere. Every rule is exact:
checked on the static shapes and types of ``tensors``, the same values for every input (up to
the order a kernel sums in); ``hetcc run --verify`` compares the artifact, sliced from the
rewritten graph, with the unsliced source model.

Rules (``RULES``):

* ``ReduceMean`` over every spatial axis (2..r-1, negatives allowed) of a float32 or float16
  tensor of rank r >= 4 (N, C, spatial; a rank-3 [B, T, C] is a sequence, its axis 2 features):
  ``keepdims=1`` -> ``GlobalAveragePool``; ``keepdims=0`` -> ``GlobalAveragePool`` then
  ``Flatten(axis=1)`` (shape [N, C] both ways; not in ``DEFAULT_RULES``, see there). Over any
  other axes it is left alone.
* ``Reshape`` to a static 2-D shape [a, b] with a = the product of the input's first k dims ->
  ``Flatten(axis=k)`` (row-major both); and back, ``Flatten`` -> ``Reshape`` to its constant
  output shape, only where a device lists Reshape and not Flatten (never without a target).
* ``MatMul`` of two 2-D float matrices (16, 32 or 64 bits) whose only reader is an ``Add`` of a bias of shape [N]
  or [1, N] (N the product's last dim) -> ``Gemm(A, B, bias)``.

``Clip(min=0, max=6)`` stays a Clip: ONNX has no ReLU6 and no built-in target lists one, so
there is nothing to rewrite it into that onnxruntime (and ``--verify``) could run.

What it did is the analysis ``rewrites`` (a tuple of ``Rewrite``): ``--verbose`` lists it, and
codegen records it in ``why.json`` for ``hetcc inspect --why``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Mapping, Sequence

import numpy as np
from hetcc.compiler.onnxir import ir

from hetcc.compiler.passmanager import Pass, PassResult
from hetcc.compiler.program import CONSTANTS, TENSORS, Program, TensorInfo
from hetcc.passes.constants import FindConstants
from hetcc.passes.shapes import tensor_info

__all__ = ["Canonicalize", "Rewrite", "REWRITES", "RULES", "DEFAULT_RULES", "constant", "devices_gained"]

#: the analysis this pass ensures: ``tuple[Rewrite, ...]`` in graph order
REWRITES = "rewrites"
#: element types the ops written compute in, in ONNX and in onnxruntime's CPU kernels (the
#: reference ``--verify`` runs): GlobalAveragePool has no float64 kernel there, Gemm does
POOL_DTYPES = frozenset({"float16", "float32"})
GEMM_DTYPES = frozenset({"float16", "float32", "float64"})
STANDARD = ("", "ai.onnx")


@dataclass(frozen=True)
class Rewrite:
    """One rewrite: the nodes ``replaced`` (op types ``before``) became ``nodes`` (op types
    ``after``); ``node`` is the one that keeps the original's name (a layer holds it);
    ``devices``: those that can run ``after`` and could not run ``before`` (empty without a
    target)."""

    rule: str
    node: str
    before: tuple[str, ...]
    after: tuple[str, ...]
    replaced: tuple[str, ...]
    nodes: tuple[str, ...]
    devices: tuple[str, ...] = ()

    def text(self) -> str:
        """``node_mean: ReduceMean -> GlobalAveragePool (for npu)``."""
        why = f" (for {', '.join(self.devices)})" if self.devices else ""
        return f"{self.node}: {' + '.join(self.before)} -> {' + '.join(self.after)}{why}"


@dataclass(frozen=True)
class _Match:
    """What a rule found: the nodes to replace (in graph order), the new ones, the old values the
    new ones stand for, and the new initializers they need."""

    old_nodes: tuple[ir.Node, ...]
    new_nodes: tuple[ir.Node, ...]
    old_values: tuple[ir.Value, ...]
    new_values: tuple[ir.Value, ...]
    initializers: tuple[ir.Value, ...] = ()


@dataclass(frozen=True)
class _Rule:
    name: str
    op_type: str
    before: tuple[str, ...]
    #: op types of what it writes
    after: tuple[str, ...]
    #: applied without a target (the canonical direction); False: only where a device gains
    canonical: bool
    match: Callable[["_Ctx", ir.Node], _Match | None]


class _Ctx:
    """What the rules read: static tensor facts, constant values, fresh names."""

    def __init__(self, program: Program) -> None:
        self.graph = program.graph
        self.tensors: Mapping[str, TensorInfo] = program.get(TENSORS)
        imports = program.model.opset_imports
        self.opset = imports.get("", imports.get("ai.onnx", 1))
        self.names = {v.name for v in self.graph.inputs} | set(self.graph.initializers)
        self.names |= {o.name for n in self.graph for o in n.outputs if o.name}
        self.node_names = {n.name for n in self.graph if n.name}

    def info(self, value: ir.Value | None) -> TensorInfo | None:
        """The value's static TensorInfo, None when its shape depends on the inputs."""
        if value is None or not value.name:
            return None
        info = self.tensors.get(value.name)
        return None if info is None or info.data_dependent else info

    def fresh(self, base: str, taken: set[str]) -> str:
        name, i = base, 1
        while name in taken:
            i += 1
            name = f"{base}_{i}"
        taken.add(name)
        return name

    def single_reader(self, value: ir.Value) -> ir.Node | None:
        """The one node that reads ``value`` (once), when nothing else does (nor the graph's outputs)."""
        uses = list(value.uses())
        if len(uses) != 1 or value in self.graph.outputs:
            return None
        return uses[0].node


def _standard(node: ir.Node) -> bool:
    return node.domain in STANDARD


def _int_attr(node: ir.Node, name: str, default: int) -> int:
    a = node.attributes.get(name)
    return default if a is None else int(a.as_int())


def constant(value: ir.Value | None) -> np.ndarray | None:
    """The value of an initializer or of a Constant node's output; None otherwise."""
    if value is None:
        return None
    if value.const_value is not None:
        return value.const_value.numpy()
    node = value.producer()
    if node is None or node.op_type != "Constant" or not _standard(node):
        return None
    for key, attr in node.attributes.items():
        if key == "value":
            return attr.value.numpy()
        if key == "value_ints":
            return np.asarray(list(attr.value), dtype=np.int64)
        if key == "value_int":
            return np.asarray(attr.value, dtype=np.int64)
    return None


def _new_value(name: str, dtype: ir.DataType | None, shape: Sequence[int]) -> ir.Value:
    return ir.Value(name=name, type=ir.TensorType(dtype), shape=ir.Shape(list(shape)))


# ---------------------------------------------------------------- the rules
def _spatial_mean(ctx: _Ctx, node: ir.Node, keep: int) -> _Match | None:
    """ReduceMean(keepdims=``keep``) over every spatial axis of an N-C-spatial float tensor ->
    GlobalAveragePool (then Flatten for keepdims=0)."""
    if _int_attr(node, "keepdims", 1) != keep or not node.inputs or node.inputs[0] is None or len(node.outputs) != 1:
        return None
    x, out = node.inputs[0], node.outputs[0]
    info, out_info = ctx.info(x), ctx.info(out)
    if info is None or out_info is None or info.dtype not in POOL_DTYPES or len(info.shape) < 4:
        return None
    if ctx.opset >= 18:
        axes = constant(node.inputs[1]) if len(node.inputs) > 1 and node.inputs[1] is not None else None
    else:
        attr = node.attributes.get("axes")
        axes = None if attr is None else np.asarray(list(attr.as_ints()), dtype=np.int64)
    if axes is None or axes.ndim > 1:
        return None          # no axes: every axis (or none with noop_with_empty_axes), not spatial only
    rank = len(info.shape)
    got = sorted(int(a) + rank if int(a) < 0 else int(a) for a in axes.reshape(-1))
    if got != list(range(2, rank)):
        return None
    pooled_shape = (*info.shape[:2], *([1] * (rank - 2)))
    if keep:
        if out_info.shape != pooled_shape:
            return None
        gap = ir.node("GlobalAveragePool", [x], name=node.name)
        return _Match((node,), (gap,), (out,), (gap.outputs[0],))
    if out_info.shape != tuple(info.shape[:2]):
        return None
    pooled = _new_value(ctx.fresh(f"{out.name}_pooled", ctx.names), x.dtype, pooled_shape)
    gap = ir.Node("", "GlobalAveragePool", [x], outputs=[pooled], name=node.name)
    flat = ir.node("Flatten", [pooled], {"axis": 1}, name=ctx.fresh(f"{node.name}_flatten", ctx.node_names))
    return _Match((node,), (gap, flat), (out,), (flat.outputs[0],))


def _flatten_axis(in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> int | None:
    """The k with Flatten(axis=k)(x) of shape ``out_shape``: the first k >= 1 whose leading
    product is ``out_shape[0]`` (k = 0 when only that fits)."""
    if len(out_shape) != 2 or math.prod(in_shape) != math.prod(out_shape):
        return None
    ks = [k for k in range(len(in_shape) + 1) if math.prod(in_shape[:k]) == out_shape[0]]
    ks = [k for k in ks if k >= 1] or ks
    return ks[0] if ks else None


def _reshape_to_flatten(ctx: _Ctx, node: ir.Node) -> _Match | None:
    """Reshape to a static [a, b] with a = prod(x.shape[:k]) -> Flatten(axis=k)."""
    if len(node.inputs) < 2 or node.inputs[0] is None or constant(node.inputs[1]) is None:
        return None
    x, out = node.inputs[0], node.outputs[0]
    info, out_info = ctx.info(x), ctx.info(out)
    if info is None or out_info is None:
        return None
    k = _flatten_axis(info.shape, out_info.shape)
    if k is None:
        return None
    flat = ir.node("Flatten", [x], {"axis": k}, name=node.name)
    return _Match((node,), (flat,), (out,), (flat.outputs[0],))


def _flatten_to_reshape(ctx: _Ctx, node: ir.Node) -> _Match | None:
    """Flatten -> Reshape to its (static) output shape, a new int64 initializer."""
    if not node.inputs or node.inputs[0] is None:
        return None
    x, out = node.inputs[0], node.outputs[0]
    info, out_info = ctx.info(x), ctx.info(out)
    if info is None or out_info is None or len(out_info.shape) != 2:
        return None
    data = np.asarray(out_info.shape, dtype=np.int64)
    name = ctx.fresh(f"{node.name}_shape", ctx.names)
    shape = ir.Value(name=name, type=ir.TensorType(ir.DataType.INT64), shape=ir.Shape([2]),
                     const_value=ir.tensor(data, name=name))
    reshape = ir.node("Reshape", [x, shape], name=node.name)
    return _Match((node,), (reshape,), (out,), (reshape.outputs[0],), (shape,))


def _matmul_add(ctx: _Ctx, node: ir.Node) -> _Match | None:
    """MatMul(A[M,K], B[K,N]) read only by Add(., bias[N] or [1,N]) -> Gemm(A, B, bias)."""
    if ctx.opset < 11 or len(node.inputs) != 2 or any(v is None for v in node.inputs):
        return None
    a, b = node.inputs
    y = node.outputs[0]
    ia, ib, iy = ctx.info(a), ctx.info(b), ctx.info(y)
    if ia is None or ib is None or iy is None or len(ia.shape) != 2 or len(ib.shape) != 2:
        return None
    if ia.dtype not in GEMM_DTYPES or ib.dtype != ia.dtype:
        return None
    add = ctx.single_reader(y)
    if add is None or add.op_type != "Add" or not _standard(add) or len(add.inputs) != 2:
        return None
    others = [v for v in add.inputs if v is not y]
    if len(others) != 1 or others[0] is None:
        return None             # Add(Y, Y)
    bias = others[0]
    ic, iz = ctx.info(bias), ctx.info(add.outputs[0])
    n = iy.shape[1]
    if ic is None or iz is None or ic.dtype != ia.dtype or ic.shape not in ((n,), (1, n)) or iz.shape != iy.shape:
        return None
    gemm = ir.node("Gemm", [a, b, bias], name=node.name)
    return _Match((node, add), (gemm,), (add.outputs[0],), (gemm.outputs[0],))


RULES: tuple[_Rule, ...] = (
    _Rule("spatial-mean", "ReduceMean", ("ReduceMean",), ("GlobalAveragePool",), True,
          lambda ctx, n: _spatial_mean(ctx, n, 1)),
    _Rule("spatial-mean-flatten", "ReduceMean", ("ReduceMean",), ("GlobalAveragePool", "Flatten"), True,
          lambda ctx, n: _spatial_mean(ctx, n, 0)),
    _Rule("reshape-flatten", "Reshape", ("Reshape",), ("Flatten",), True, _reshape_to_flatten),
    _Rule("flatten-reshape", "Flatten", ("Flatten",), ("Reshape",), False, _flatten_to_reshape),
    _Rule("matmul-add-gemm", "MatMul", ("MatMul", "Add"), ("Gemm",), True, _matmul_add),
)
#: the rules the compile pipeline applies: all but ``spatial-mean-flatten``. Exporters agree on
#: ``x.mean((2, 3))`` (both write ReduceMean, keepdims=0: MNASNet's classifier input), so it is no
#: exporter's form; rewriting it would change the plans the built-in hikey970 was fitted to
#: (``hetcc calibrate``: MNASNet's plans in MOSAIC's tables). Pass ``rules=RULES`` for every rule.
DEFAULT_RULES: tuple[_Rule, ...] = tuple(r for r in RULES if r.name != "spatial-mean-flatten")


def devices_gained(devices: Sequence[Any], before: Sequence[str], after: Sequence[str]) -> tuple[str, ...] | None:
    """The devices that can run every op of ``after`` and not every op of ``before``; None when
    the rewrite gains none or loses one (a device that ran ``before`` and cannot run ``after``)."""
    ok_before = {d.name for d in devices if all(d.supports_op(op) for op in before)}
    ok_after = {d.name for d in devices if all(d.supports_op(op) for op in after)}
    if not ok_before <= ok_after or ok_after == ok_before:
        return None
    return tuple(d.name for d in devices if d.name in ok_after - ok_before)


def _prune(graph: ir.Graph, values: Sequence[ir.Value | None]) -> list[str]:
    """Remove what the rewrite left unread: initializers and (constant) producer nodes none of
    whose outputs anything reads; returns the names of the values removed."""
    removed: list[str] = []
    stack = [v for v in values if v is not None]
    inputs = {id(v) for v in graph.inputs}
    outputs = {id(v) for v in graph.outputs}
    while stack:
        v = stack.pop()
        if list(v.uses()) or id(v) in outputs or id(v) in inputs:
            continue
        producer = v.producer()
        if producer is None:
            if v.name in graph.initializers and graph.initializers[v.name] is v:
                graph.initializers.pop(v.name)
                removed.append(v.name)
            continue
        if producer.graph is not graph or any(list(o.uses()) or id(o) in outputs for o in producer.outputs):
            continue
        reads = [i for i in producer.inputs if i is not None]
        graph.remove(producer, safe=True)
        removed.extend(o.name for o in producer.outputs if o.name)
        stack.extend(reads)
    return removed


class Canonicalize(Pass):
    """Ensures ``rewrites``: applies ``RULES`` to the top-level graph (see the module), updating
    ``tensors`` and ``constants`` when it changed anything."""

    name: ClassVar[str] = "canonical"
    label = "canonicalising"
    requires: ClassVar[tuple[str, ...]] = (TENSORS, CONSTANTS)
    ensures: ClassVar[tuple[str, ...]] = (REWRITES,)

    def __init__(self, target: Any = None, rules: Sequence[_Rule] = DEFAULT_RULES) -> None:
        self.target = target
        self.rules = tuple(rules)

    def _gain(self, rule: _Rule) -> tuple[str, ...] | None:
        if self.target is None:
            return () if rule.canonical else None
        return devices_gained(self.target.devices, rule.before, rule.after)

    def run(self, program: Program) -> PassResult:
        graph = program.graph
        by_op: dict[str, list[_Rule]] = {}
        for rule in self.rules:
            by_op.setdefault(rule.op_type, []).append(rule)
        ctx: _Ctx | None = None
        done: list[Rewrite] = []
        added: list[ir.Value] = []
        removed: list[str] = []
        for node in list(graph):
            if node.graph is not graph or not _standard(node) or node.op_type not in by_op:
                continue
            for rule in by_op[node.op_type]:
                gain = self._gain(rule)
                if gain is None:
                    continue
                ctx = ctx or _Ctx(program)
                m = rule.match(ctx, node)
                if m is None:
                    continue
                done.append(self._apply(graph, rule, m, gain, added, removed))
                break
        program.put(REWRITES, tuple(done))
        if not done:
            return PassResult(False, "0 rewrites")
        infos = {k: v for k, v in program.get(TENSORS).items() if k not in set(removed)}
        for v in added:
            if v.name and v.name not in infos:
                infos[v.name] = tensor_info(v)
        program.put(TENSORS, infos)
        FindConstants(fold_shapes=False).run(program)       # the graph changed: constants again
        return PassResult(True, "\n".join([_headline(done), *("      " + r.text() for r in done)]))

    @staticmethod
    def _apply(graph: ir.Graph, rule: _Rule, m: _Match, gain: tuple[str, ...], added: list[ir.Value],
               removed: list[str]) -> Rewrite:
        replaced = tuple(n.name or "" for n in m.old_nodes)
        reads = [v for n in m.old_nodes for v in n.inputs]
        inner = {id(o) for n in m.old_nodes for o in n.outputs}
        old_names = [o.name for n in m.old_nodes for o in n.outputs if o.name]
        for init in m.initializers:
            graph.register_initializer(init)
            added.append(init)
        ir.convenience.replace_nodes_and_values(graph, m.old_nodes[-1], list(m.old_nodes), list(m.new_nodes),
                                                list(m.old_values), list(m.new_values))
        kept = {v.name for v in m.new_values}
        removed.extend(n for n in old_names if n not in kept)
        added.extend(o for n in m.new_nodes for o in n.outputs)
        removed.extend(_prune(graph, [v for v in reads if id(v) not in inner]))
        return Rewrite(rule=rule.name, node=m.new_nodes[0].name or "", before=tuple(n.op_type for n in m.old_nodes),
                       after=tuple(n.op_type for n in m.new_nodes), replaced=replaced,
                       nodes=tuple(n.name or "" for n in m.new_nodes), devices=gain)


def _headline(done: Sequence[Rewrite]) -> str:
    counts: dict[str, int] = {}
    for r in done:
        key = f"{' + '.join(r.before)} -> {' + '.join(r.after)}"
        counts[key] = counts.get(key, 0) + 1
    kinds = ", ".join(f"{k} x{c}" for k, c in counts.items())
    return f"{len(done)} rewrite{'s' if len(done) != 1 else ''} ({kinds})"

