"""FairBoost's layer vector (its Eq. 2) of one analysed layer, read off the layer's dominant node.

FairBoost describes a layer by 22 numbers: its index i in the model, its type t, the 4-D input
feature map (ifm), output feature map (ofm) and weights tensor (w), the number of biases b, the
type of activation a and 6 numbers of pad-stride information ps. An hetcc layer is a run of
nodes between two cuts (``passes.layers``), often a convolution with its normalisation and
activation, so the vector is that of the node with the most FLOPs (``node_flops``; the first on
a tie), with the activation the first activation node of the layer. Shapes of another rank are
made 4-D: a shorter one padded with trailing 1s ([1, 1000] -> [1, 1000, 1, 1]), a longer one's
trailing dimensions multiplied into the last. Numbers a node does not have (weights of an
element-wise op, stride of a matmul) are 0.

The columns are appended to ``hetcc.planners.problem.FEATURES`` (``eq2_*``), so a planner reads
them as numbers from ``problem.layer_features`` (``hetcc.planners.fairboost.features``).
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

from hetcc.compiler.onnxir import ir

from hetcc.compiler.flops import node_flops
from hetcc.compiler.program import TensorInfo

#: Eq. 2's layer type t: the dominant node's kind (0: none of these)
TYPES = {"conv": 1, "dwconv": 2, "gconv": 3, "fc": 4, "matmul": 5, "pool": 6, "global_pool": 7,
         "elementwise": 8, "move": 9, "norm": 10, "softmax": 11, "deconv": 12, "activation": 13}
#: Eq. 2's activation a: the first activation node of the layer (0: none)
ACTIVATIONS = {"Relu": 1, "Clip": 2, "Sigmoid": 3, "HardSigmoid": 4, "HardSwish": 5, "Tanh": 6, "Gelu": 7,
               "Erf": 7, "LeakyRelu": 8, "PRelu": 8, "Elu": 9, "Selu": 9, "Softplus": 10, "Mish": 11}

_CONV = {"Conv": (1, 2), "ConvInteger": (1, None), "QLinearConv": (3, 8), "ConvTranspose": (1, 2)}
_FC = {"Gemm": (1, 2), "MatMul": (1, None), "QGemm": (3, 6), "MatMulInteger": (1, None),
       "QLinearMatMul": (3, None), "MatMulIntegerToFloat": (1, None), "DynamicQuantizeMatMul": (1, None)}
_POOL = {"MaxPool", "AveragePool", "LpPool", "QLinearAveragePool"}
_GLOBAL = {"GlobalAveragePool", "GlobalMaxPool", "ReduceMean", "ReduceSum", "ReduceMax", "QLinearGlobalAveragePool"}
_ELEMENTWISE = {"Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Max", "Min", "Sum", "Mean", "QLinearAdd", "QLinearMul",
                "Where", "Neg", "Abs", "Exp", "Log", "Reciprocal"}
_MOVE = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Transpose", "Concat", "Split", "Slice", "Gather",
         "Shape", "Expand", "Cast", "Pad", "QLinearConcat", "QuantizeLinear", "DequantizeLinear", "Resize"}
_NORM = {"BatchNormalization", "LayerNormalization", "InstanceNormalization", "GroupNormalization",
         "LpNormalization", "SimplifiedLayerNormalization"}
_SOFTMAX = {"Softmax", "LogSoftmax", "QLinearSoftmax"}


def _kinds() -> dict[str, int]:
    """Eq. 2's t of the other kinds, by op type (the first kind that lists an op)."""
    out: dict[str, int] = {}
    for kind, ops in (("pool", _POOL), ("global_pool", _GLOBAL), ("elementwise", _ELEMENTWISE), ("move", _MOVE),
                      ("norm", _NORM), ("softmax", _SOFTMAX), ("activation", ACTIVATIONS)):
        for op in ops:
            out.setdefault(op, TYPES[kind])
    return out


_KIND = _kinds()

#: the number of values ``layer_vector`` returns
WIDTH = 22


def _shape(tensors: Mapping[str, TensorInfo], value: ir.Value | None) -> tuple[int, ...] | None:
    if value is None or not value.name or value.name not in tensors:
        return None
    return tuple(int(d) if isinstance(d, int) else 0 for d in tensors[value.name].shape)


def four_d(shape: Sequence[int] | None) -> list[float]:
    """``shape`` as 4 numbers: padded with trailing 1s, or its trailing dimensions multiplied into
    the last; none: zeros."""
    if not shape:
        return [0.0] * 4
    dims = [float(d) for d in shape]
    if len(dims) > 4:
        dims = dims[:3] + [float(math.prod(dims[3:]))]
    return dims + [1.0] * (4 - len(dims))


def _constant(value: ir.Value | None) -> bool:
    """``value`` is a weight: an initializer, or made by a Constant or a DequantizeLinear of one."""
    if value is None:
        return False
    if value.const_value is not None:
        return True
    producer = value.producer()
    return producer is not None and (producer.op_type == "Constant" or (
        producer.op_type == "DequantizeLinear" and bool(producer.inputs) and _constant(producer.inputs[0])))


def _type(node: ir.Node, tensors: Mapping[str, TensorInfo]) -> int:
    op = node.op_type
    if op in _CONV:
        if op == "ConvTranspose":
            return TYPES["deconv"]
        group = node.attributes.get("group")
        g = group.as_int() if group is not None else 1
        if g <= 1:
            return TYPES["conv"]
        x = _shape(tensors, node.inputs[0] if node.inputs else None)
        return TYPES["dwconv"] if x is not None and len(x) > 1 and g == x[1] else TYPES["gconv"]
    if op in _FC:
        w = node.inputs[_FC[op][0]] if len(node.inputs) > _FC[op][0] else None
        return TYPES["fc"] if op in ("Gemm", "QGemm") or _constant(w) else TYPES["matmul"]
    return _KIND.get(op, 0)


def _weights(node: ir.Node, tensors: Mapping[str, TensorInfo]) -> tuple[list[float], float]:
    """The 4-D weights tensor ([out, in / group, kh, kw]; a matrix as [out, in, 1, 1]) and the
    number of biases of ``node`` (zeros for a node without weights)."""
    op = node.op_type

    def arg(i: int | None) -> tuple[int, ...] | None:
        return _shape(tensors, node.inputs[i]) if i is not None and len(node.inputs) > i else None

    def numel(shape: tuple[int, ...] | None) -> float:
        return float(math.prod(shape)) if shape else 0.0

    if op in _CONV:
        wi, bi = _CONV[op]
        return four_d(arg(wi)), numel(arg(bi))
    if op in _FC:
        wi, bi = _FC[op]
        w = arg(wi)
        if w is None or len(w) < 2:
            return [0.0] * 4, numel(arg(bi))
        k, n = w[-2], w[-1]
        trans = node.attributes.get("transB")
        if op in ("Gemm", "QGemm") and trans is not None and trans.as_int():
            k, n = n, k
        return [float(n), float(k), 1.0, 1.0], numel(arg(bi))
    if op in _NORM and len(node.inputs) > 2:
        return [0.0] * 4, numel(arg(2))
    return [0.0] * 4, 0.0


def _pad_stride(node: ir.Node) -> list[float]:
    """[pad top, left, bottom, right, stride h, w] of a windowed node (conv, pool); zeros else."""
    if node.op_type not in _CONV and node.op_type not in _POOL:
        return [0.0] * 6
    pads = node.attributes.get("pads")
    p = [int(v) for v in pads.as_ints()] if pads is not None else []
    if len(p) >= 4:
        half = len(p) // 2
        top, left, bottom, right = p[0], p[1], p[half], p[half + 1]
    elif len(p) == 2:      # 1-D: begin, end
        top, left, bottom, right = p[0], 0, p[1], 0
    else:
        top = left = bottom = right = 0
    strides = node.attributes.get("strides")
    s = [int(v) for v in strides.as_ints()] if strides is not None else []
    sh = s[0] if s else 1
    sw = s[1] if len(s) > 1 else 1
    return [float(top), float(left), float(bottom), float(right), float(sh), float(sw)]


def layer_vector(index: int, nodes: Sequence[ir.Node], tensors: Mapping[str, TensorInfo],
                 flops: Sequence[float] | None = None) -> tuple[float, ...]:
    """FairBoost's Eq. 2 for the layer at ``index`` made of ``nodes`` (see the module docstring):
    (i, t, ifm[4], ofm[4], w[4], b, a, ps[6]). ``flops``: each node's ``node_flops``, when the
    caller has them."""
    if not nodes:
        return (float(index),) + (0.0,) * (WIDTH - 1)
    if len(nodes) == 1:
        node = nodes[0]
    else:
        if flops is None:
            flops = [node_flops(n, tensors) for n in nodes]
        node = nodes[max(range(len(nodes)), key=lambda j: (flops[j], -j))]
    ifm = four_d(_shape(tensors, node.inputs[0] if node.inputs else None))
    ofm = four_d(_shape(tensors, node.outputs[0] if node.outputs else None))
    w, b = _weights(node, tensors)
    act = next((ACTIVATIONS[n.op_type] for n in nodes if n.op_type in ACTIVATIONS), 0)
    out = [float(index), float(_type(node, tensors)), *ifm, *ofm, *w, b, float(act), *_pad_stride(node)]
    assert len(out) == WIDTH
    return tuple(out)


__all__ = ["ACTIVATIONS", "TYPES", "WIDTH", "four_d", "layer_vector"]
