"""FLOP estimates per node, split into op classes that targets give separate peak throughputs."""
from __future__ import annotations

import math
from typing import Mapping

import onnx_ir as ir

from .opclasses import CONV_OPS, MATMUL_OPS, OP_CLASSES, op_class  # noqa: F401  (re-exported)
from .program import TensorInfo

# element-wise cost multipliers (FLOPs per output element) for ops costlier than one op
_PER_ELEM = {"BatchNormalization": 2.0, "LayerNormalization": 8.0, "InstanceNormalization": 8.0,
             "Softmax": 5.0, "LogSoftmax": 5.0, "Sigmoid": 4.0, "HardSigmoid": 3.0, "HardSwish": 4.0,
             "Tanh": 4.0, "Erf": 8.0, "Gelu": 8.0, "Exp": 4.0, "Swish": 5.0}
_MOVE_OPS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Transpose", "Concat",
                       "Split", "Slice", "Gather", "Shape", "Expand", "Constant", "Cast", "Pad"})


def _numel(info: TensorInfo | None) -> int:
    return int(math.prod(info.shape)) if info is not None else 0


def node_flops(node: ir.Node, tensors: Mapping[str, TensorInfo]) -> float:
    """Multiply-add counted as 2 FLOPs; data movement ops count 0 (their cost is bytes)."""
    outs = [tensors.get(o.name) for o in node.outputs if o.name]
    out_elems = sum(_numel(o) for o in outs)
    op = node.op_type
    ins = [tensors.get(v.name) if v is not None and v.name else None for v in node.inputs]
    if op in ("Conv", "ConvTranspose") and len(ins) >= 2 and ins[1] is not None:
        w = ins[1].shape  # Conv: [M, C/group, kh, kw]; ConvTranspose: [C, M/group, kh, kw]
        if op == "Conv":
            return 2.0 * out_elems * math.prod(w[1:])
        return 2.0 * _numel(ins[0]) * math.prod(w[1:])
    if op in ("MatMul", "Gemm") and ins and ins[0] is not None:
        a = ins[0].shape
        k = a[-1] if op == "MatMul" or not _attr_int(node, "transA") else a[0]
        return 2.0 * out_elems * k
    if op in ("MaxPool", "AveragePool", "LpPool"):
        ks = node.attributes.get("kernel_shape")
        return float(out_elems * (math.prod(ks.as_ints()) if ks is not None else 1))
    if op in ("GlobalAveragePool", "GlobalMaxPool", "ReduceMean", "ReduceSum", "ReduceMax"):
        return float(sum(_numel(i) for i in ins[:1]))
    if op in _MOVE_OPS:
        return 0.0
    return float(out_elems * _PER_ELEM.get(op, 1.0))


def _attr_int(node: ir.Node, name: str) -> int:
    a = node.attributes.get(name)
    return a.as_int() if a is not None else 0
