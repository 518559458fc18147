"""The op classes a target gives separate peak throughputs (no dependencies).

Every ONNX node falls in one class: 'conv' (dense convolutions), 'matmul' (matrix products),
'other' (element-wise, pooling, normalisation, data movement) or 'dwconv' (depthwise and grouped
convolutions: a Conv, ConvTranspose, QLinearConv or ConvInteger with ``group`` > 1). ``hetcc.flops``
splits a layer's FLOPs by class, target files give ``peak_gflops = {conv, matmul, other}`` (and
optionally ``dwconv``) and the cost model divides one by the other.

Why a class of its own for grouped convolutions: they do a few multiply-adds per byte moved, so a
device reaches a much smaller share of its peak on them than on dense convolutions (a GPU's GEMM
kernels do not apply; MobileNet and MnasNet spend most of their time there). A device without a
``dwconv`` figure runs them at its ``conv`` figure, which is what every board did before the class
existed: the cost model then counts their FLOPs with the dense convolutions' (bit for bit the
same numbers).
"""
from __future__ import annotations

from typing import Mapping

#: the classes, in the order cost arrays hold them (``peak_gflops[..., k]`` is class ``OP_CLASSES[k]``);
#: 'dwconv' is last so the first three columns keep their historical positions
OP_CLASSES: tuple[str, ...] = ("conv", "matmul", "other", "dwconv")
#: the classes every modelled target must give a figure for; the rest default to another class's
REQUIRED_CLASSES: tuple[str, ...] = ("conv", "matmul", "other")
#: the class whose figure an optional class takes when a target gives none
DEFAULT_CLASS: dict[str, str] = {"dwconv": "conv"}
CONV_OPS = frozenset({"Conv", "ConvTranspose", "QLinearConv", "ConvInteger"})
MATMUL_OPS = frozenset({"MatMul", "Gemm", "MatMulInteger", "QLinearMatMul", "Einsum", "Attention", "QGemm",
                        "MatMulIntegerToFloat", "DynamicQuantizeMatMul"})
#: integer kernels (ONNX and com.microsoft): their work runs at a device's int8 throughput
INT8_OPS = frozenset({"QLinearConv", "ConvInteger", "QLinearMatMul", "MatMulInteger", "QGemm",
                      "MatMulIntegerToFloat", "DynamicQuantizeMatMul", "QLinearAdd", "QLinearMul",
                      "QLinearAveragePool", "QLinearGlobalAveragePool", "QLinearSigmoid", "QLinearLeakyRelu",
                      "QLinearConcat", "QLinearSoftmax", "QLinearReduceMean", "QLinearWhere"})
QDQ_OPS = frozenset({"QuantizeLinear", "DequantizeLinear"})


def op_class(op_type: str, group: int = 1) -> str:
    """The class of an ONNX op type ('conv', 'matmul', 'other', or 'dwconv' for a convolution
    with ``group`` > 1)."""
    if op_type in CONV_OPS:
        return "dwconv" if group > 1 else "conv"
    if op_type in MATMUL_OPS:
        return "matmul"
    return "other"


def class_figures(figures: Mapping[str, float] | None) -> dict[str, float] | None:
    """``figures`` (class -> number, e.g. a device's peak_gflops) completed for every class of
    OP_CLASSES: an absent optional class takes its DEFAULT_CLASS's figure."""
    if figures is None:
        return None
    out = {c: figures[c] for c in REQUIRED_CLASSES}
    for c in OP_CLASSES:
        if c not in out:
            out[c] = figures[c] if c in figures else out[DEFAULT_CLASS[c]]
    return out


__all__ = ["CONV_OPS", "DEFAULT_CLASS", "INT8_OPS", "MATMUL_OPS", "OP_CLASSES", "QDQ_OPS", "REQUIRED_CLASSES",
           "class_figures", "op_class"]
