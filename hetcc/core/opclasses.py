"""The op classes a target gives separate peak throughputs (no dependencies).

Every ONNX node falls in one class: 'conv' (dense convolutions), 'matmul' (matrix products),
'other' (element-wise, pooling, normalisation, data movement) or 'dwconv' (depthwise and grouped
convolutions: a Conv, ConvTranspose, QLinearConv or ConvInteger with ``group`` > 1). ``hetcc.compiler.flops``
splits a layer's FLOPs by class, target files give ``peak_gflops = {conv, matmul, other}`` (and
optionally ``dwconv``) and the cost model divides one by the other.

Two more optional classes split the convolutions by kernel, as mobile runtimes' kernels do:
'pwconv' (dense 1x1, pointwise: a GEMM with little reuse per weight; absent = 'conv') and
'dwconv_large' (depthwise/grouped with a kernel side above 3, e.g. MnasNet's 5x5: TensorFlow
Lite and the Arm Compute Library hand-optimise the 3x3 depthwise case and run others on a generic
path; absent = 'dwconv').

One more optional class splits 'other': 'pool' (MaxPool, AveragePool, GlobalAveragePool and the
other pooling ops; absent = 'other'). An element-wise op moves 8 bytes per FLOP and its time is
those bytes at the memory bandwidth, which the cost model's bytes term already charges; a pooling
window re-reads its inputs and a global pool is a reduction, so a CPU runs both well below that
(ResNet-50 on this project's host: its MaxPool 0.18 ms and global pool 0.03 ms against 0.09 ms
and 0.02 ms for a ReLU over the same input; benchmarks/host_fit.py).

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
#: the optional classes follow the required three, so those columns keep their historical positions
OP_CLASSES: tuple[str, ...] = ("conv", "matmul", "other", "dwconv", "pwconv", "dwconv_large", "pool")
#: the classes every modelled target must give a figure for; the rest default to another class's
REQUIRED_CLASSES: tuple[str, ...] = ("conv", "matmul", "other")
#: the class whose figure an optional class takes when a target gives none
#: (a chain is listed child first: 'dwconv_large' falls back to 'dwconv', which falls back to 'conv')
DEFAULT_CLASS: dict[str, str] = {"dwconv_large": "dwconv", "dwconv": "conv", "pwconv": "conv", "pool": "other"}
CONV_OPS = frozenset({"Conv", "ConvTranspose", "QLinearConv", "ConvInteger"})
MATMUL_OPS = frozenset({"MatMul", "Gemm", "MatMulInteger", "QLinearMatMul", "Einsum", "Attention", "QGemm",
                        "MatMulIntegerToFloat", "DynamicQuantizeMatMul"})
#: integer kernels (ONNX and com.microsoft): their work runs at a device's int8 throughput
INT8_OPS = frozenset({"QLinearConv", "ConvInteger", "QLinearMatMul", "MatMulInteger", "QGemm",
                      "MatMulIntegerToFloat", "DynamicQuantizeMatMul", "QLinearAdd", "QLinearMul",
                      "QLinearAveragePool", "QLinearGlobalAveragePool", "QLinearSigmoid", "QLinearLeakyRelu",
                      "QLinearConcat", "QLinearSoftmax", "QLinearReduceMean", "QLinearWhere"})
QDQ_OPS = frozenset({"QuantizeLinear", "DequantizeLinear"})
POOL_OPS = frozenset({"MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool",
                      "MaxRoiPool", "QLinearAveragePool", "QLinearGlobalAveragePool"})


def op_class(op_type: str, group: int = 1, kernel: tuple[int, ...] | None = None) -> str:
    """The class of an ONNX op type ('conv', 'matmul', 'other'; for a convolution with ``group``
    > 1 'dwconv', or 'dwconv_large' when a ``kernel`` side exceeds 3; for a dense convolution
    with a 1x1 ``kernel``, 'pwconv'; a pooling op, 'pool')."""
    if op_type in CONV_OPS:
        if group > 1:
            return "dwconv_large" if kernel and max(kernel) > 3 else "dwconv"
        return "pwconv" if kernel and all(k == 1 for k in kernel) else "conv"
    if op_type in MATMUL_OPS:
        return "matmul"
    if op_type in POOL_OPS:
        return "pool"
    return "other"


def class_figures(figures: Mapping[str, float] | None) -> dict[str, float] | None:
    """``figures`` (class -> number, e.g. a device's peak_gflops) completed for every class of
    OP_CLASSES: an absent optional class takes its DEFAULT_CLASS's figure."""
    if figures is None:
        return None
    out = {c: figures[c] for c in REQUIRED_CLASSES}
    for c in OP_CLASSES:        # a class's default comes before it in OP_CLASSES
        if c not in out:
            out[c] = figures[c] if c in figures else out[DEFAULT_CLASS[c]]
    return out


__all__ = ["CONV_OPS", "DEFAULT_CLASS", "INT8_OPS", "MATMUL_OPS", "OP_CLASSES", "POOL_OPS", "QDQ_OPS",
           "REQUIRED_CLASSES", "class_figures", "op_class"]
