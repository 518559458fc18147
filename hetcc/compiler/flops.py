"""FLOP estimates per node, split into op classes that targets give separate peak throughputs
(``node_class``: the class of a node, which for a convolution depends on its ``group``)."""
from __future__ import annotations

import math
from typing import Mapping

from hetcc.compiler.onnxir import ir

from hetcc.core.opclasses import CONV_OPS, INT8_OPS, MATMUL_OPS, OP_CLASSES, QDQ_OPS, op_class  # noqa: F401  (re-exported)
from hetcc.compiler.program import TensorInfo

# element-wise cost multipliers (FLOPs per output element) for ops costlier than one op
_PER_ELEM = {"BatchNormalization": 2.0, "LayerNormalization": 8.0, "InstanceNormalization": 8.0,
             "Softmax": 5.0, "LogSoftmax": 5.0, "Sigmoid": 4.0, "HardSigmoid": 3.0, "HardSwish": 4.0,
             "Tanh": 4.0, "Erf": 8.0, "Gelu": 8.0, "Exp": 4.0, "Swish": 5.0,
             # (de)quantisation: a scale and a zero point per element (rounding and saturation free)
             "QuantizeLinear": 2.0, "DequantizeLinear": 2.0, "DynamicQuantizeLinear": 2.0}
_MOVE_OPS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Transpose", "Concat",
                       "Split", "Slice", "Gather", "Shape", "Expand", "Constant", "Cast", "Pad"})


def _numel(info: TensorInfo | None) -> int:
    return int(math.prod(info.shape)) if info is not None else 0


# where the weight (Conv) or the right-hand matrix (MatMul, Gemm) sits among a node's inputs;
# integer and quantised variants count the multiply-adds of their float counterparts
_WEIGHT_INPUT = {"Conv": 1, "ConvTranspose": 1, "ConvInteger": 1, "QLinearConv": 3}
_MATMUL_A_INPUT = {"MatMul": 0, "Gemm": 0, "MatMulInteger": 0, "QLinearMatMul": 0, "QGemm": 0,
                   "MatMulIntegerToFloat": 0, "DynamicQuantizeMatMul": 0}
_POOL_OPS = frozenset({"MaxPool", "AveragePool", "LpPool", "QLinearAveragePool"})
_REDUCE_OPS = frozenset({"GlobalAveragePool", "GlobalMaxPool", "ReduceMean", "ReduceSum", "ReduceMax",
                         "QLinearGlobalAveragePool"})


def node_class(node: ir.Node) -> str:
    """The op class of ``node`` (hetcc.core.opclasses): a convolution with ``group`` > 1 (depthwise or
    grouped) is 'dwconv', any other by its op type."""
    if node.op_type not in CONV_OPS:
        return op_class(node.op_type)
    return op_class(node.op_type, _attr_int(node, "group", 1), _kernel_shape(node))


def _kernel_shape(node: ir.Node) -> tuple[int, ...] | None:
    """A convolution's kernel sides: its kernel_shape attribute, else its weight's spatial dims
    (the weight at ``_WEIGHT_INPUT[op]`` among its inputs)."""
    a = node.attributes.get("kernel_shape")
    if a is not None:
        return tuple(int(k) for k in a.as_ints())
    wi = _WEIGHT_INPUT[node.op_type]
    w = node.inputs[wi] if len(node.inputs) > wi else None
    shape = w.shape if w is not None else None
    if shape is None or len(shape) < 3 or not all(isinstance(d, int) for d in shape[2:]):
        return None
    return tuple(int(d) for d in shape[2:])


def node_flops(node: ir.Node, tensors: Mapping[str, TensorInfo]) -> float:
    """Multiply-add counted as 2 FLOPs (integer multiply-adds alike); data movement ops count 0
    (their cost is bytes)."""
    outs = [tensors.get(o.name) for o in node.outputs if o.name]
    out_elems = sum(_numel(o) for o in outs)
    op = node.op_type
    ins = [tensors.get(v.name) if v is not None and v.name else None for v in node.inputs]
    wi = _WEIGHT_INPUT.get(op)
    if wi is not None and len(ins) > wi and ins[wi] is not None:
        w = ins[wi].shape  # Conv: [M, C/group, kh, kw]; ConvTranspose: [C, M/group, kh, kw]
        if op != "ConvTranspose":
            return 2.0 * out_elems * math.prod(w[1:])
        return 2.0 * _numel(ins[0]) * math.prod(w[1:])
    if op in _MATMUL_A_INPUT and ins and ins[0] is not None and outs and outs[0] is not None:
        a = ins[0].shape
        k = a[0] if op in ("Gemm", "QGemm") and _attr_int(node, "transA") else a[-1]
        return 2.0 * _numel(outs[0]) * k
    if op == "Einsum":
        return _einsum_flops(node, ins)
    if op in _POOL_OPS:
        ks = node.attributes.get("kernel_shape")
        return float(out_elems * (math.prod(ks.as_ints()) if ks is not None else 1))
    if op in _REDUCE_OPS:
        return float(sum(_numel(i) for i in ins[:1]))
    if op in _MOVE_OPS:
        return 0.0
    return float(out_elems * _PER_ELEM.get(op, 1.0))


def _einsum_flops(node: ir.Node, ins: list[TensorInfo | None]) -> float:
    """2 x the product of every index's size: one multiply-add per point of the iteration space
    (a contraction over k of [m, k] x [k, n] is 2mnk; a plain transpose or reduction is counted
    the same way, an upper bound). 0 when the equation or a shape is unknown."""
    eq = node.attributes.get("equation")
    if eq is None or any(i is None for i in ins):
        return 0.0
    terms = eq.as_string().replace(" ", "").split("->")[0].split(",")
    if len(terms) != len(ins):
        return 0.0
    sizes: dict[str, int] = {}
    for term, info in zip(terms, ins):
        shape = tuple(info.shape)  # type: ignore[union-attr]
        if "..." in term:
            head, tail = term.split("...", 1)
            n_ell = len(shape) - len(head) - len(tail)
            if n_ell < 0:
                return 0.0
            labels = list(head) + [f"...{n_ell - 1 - i}" for i in range(n_ell)] + list(tail)
        else:
            labels = list(term)
        if len(labels) != len(shape):
            return 0.0
        for label, dim in zip(labels, shape):
            # ellipsis dims are numbered from the right (they broadcast right-aligned); a size-1
            # dim yields to the other operand's
            sizes[label] = max(sizes.get(label, 1), int(dim))
    return 2.0 * float(math.prod(sizes.values()))


def _attr_int(node: ir.Node, name: str, default: int = 0) -> int:
    a = node.attributes.get(name)
    return a.as_int() if a is not None else default


_FLOAT_TYPES = frozenset({ir.DataType.FLOAT, ir.DataType.FLOAT16, ir.DataType.DOUBLE, ir.DataType.BFLOAT16})


def _op(value: ir.Value | None) -> str | None:
    node = value.producer() if value is not None else None
    return node.op_type if node is not None else None


def _consumers(value: ir.Value) -> list[ir.Node]:
    return [use.node for use in value.uses()]


def _in_qdq_group(node: ir.Node) -> bool:
    """A float op onnxruntime fuses with the Quantize/DequantizeLinear around it: every input
    dequantised (or not a float: shapes, axes) and every consumer of its outputs a QuantizeLinear."""
    if node.op_type in QDQ_OPS or node.op_type in INT8_OPS:
        return False
    ins = [v for v in node.inputs if v is not None]
    if not ins or _op(ins[0]) != "DequantizeLinear" or any(
            _op(v) != "DequantizeLinear" and (v.dtype is None or v.dtype in _FLOAT_TYPES) for v in ins):
        return False
    uses = [u.op_type for o in node.outputs for u in _consumers(o)]
    return bool(uses) and all(u == "QuantizeLinear" for u in uses)


def fused_qdq(node: ir.Node) -> bool:
    """A Quantize/DequantizeLinear that a runtime folds into the op it wraps (onnxruntime's QDQ
    fusion: DequantizeLinear -> Conv -> QuantizeLinear becomes one QLinearConv): a
    DequantizeLinear whose consumers are all ops of QDQ groups, a QuantizeLinear whose input
    one computed. The model's first QuantizeLinear and last DequantizeLinear run on their own."""
    if node.op_type == "DequantizeLinear":
        uses = [u for o in node.outputs for u in _consumers(o)]
        return bool(uses) and all(_in_qdq_group(u) for u in uses)
    if node.op_type == "QuantizeLinear":
        src = node.inputs[0].producer() if node.inputs and node.inputs[0] is not None else None
        return src is not None and _in_qdq_group(src)
    return False


def runs_int8(node: ir.Node) -> bool:
    """Whether ``node``'s work runs in an integer kernel: an integer/quantised op (QLinearConv,
    ConvInteger, ...), an op of a QDQ group (``_in_qdq_group``) or a Quantize/DequantizeLinear
    folded into one (``fused_qdq``)."""
    if node.op_type in INT8_OPS:
        return True
    if node.op_type in QDQ_OPS:
        return fused_qdq(node)
    return _in_qdq_group(node)


__all__ = ["CONV_OPS", "INT8_OPS", "MATMUL_OPS", "OP_CLASSES", "QDQ_OPS", "fused_qdq", "node_class", "node_flops",
           "op_class", "runs_int8"]
