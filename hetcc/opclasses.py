"""The op classes a target gives separate peak throughputs (no dependencies).

Every ONNX op type falls in one class: 'conv' (convolutions), 'matmul' (matrix products) or
'other' (element-wise, pooling, normalisation, data movement). ``hetcc.flops`` splits a layer's
FLOPs by class, target files give ``peak_gflops = {conv, matmul, other}`` and the cost model
divides one by the other.
"""
from __future__ import annotations

#: the classes, in the order cost arrays hold them (``peak_gflops[..., k]`` is class ``OP_CLASSES[k]``)
OP_CLASSES: tuple[str, ...] = ("conv", "matmul", "other")
CONV_OPS = frozenset({"Conv", "ConvTranspose", "QLinearConv", "ConvInteger"})
MATMUL_OPS = frozenset({"MatMul", "Gemm", "MatMulInteger", "QLinearMatMul", "Einsum", "Attention", "QGemm",
                        "MatMulIntegerToFloat", "DynamicQuantizeMatMul"})
#: integer kernels (ONNX and com.microsoft): their work runs at a device's int8 throughput
INT8_OPS = frozenset({"QLinearConv", "ConvInteger", "QLinearMatMul", "MatMulInteger", "QGemm",
                      "MatMulIntegerToFloat", "DynamicQuantizeMatMul", "QLinearAdd", "QLinearMul",
                      "QLinearAveragePool", "QLinearGlobalAveragePool", "QLinearSigmoid", "QLinearLeakyRelu",
                      "QLinearConcat", "QLinearSoftmax", "QLinearReduceMean", "QLinearWhere"})
QDQ_OPS = frozenset({"QuantizeLinear", "DequantizeLinear"})


def op_class(op_type: str) -> str:
    """The class of an ONNX op type ('conv', 'matmul' or 'other')."""
    if op_type in CONV_OPS:
        return "conv"
    if op_type in MATMUL_OPS:
        return "matmul"
    return "other"


__all__ = ["CONV_OPS", "INT8_OPS", "MATMUL_OPS", "OP_CLASSES", "QDQ_OPS", "op_class"]
