"""Quantised graphs in the layers pass, FLOP counts, legality and the cost model (tiny ONNX-text
models; the exporter-made ones are in tests/test_quantized_models.py)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hetcc.compiler import costmodel
from hetcc.core.errors import TargetError
from hetcc.compiler.flops import node_flops
from hetcc.compiler.program import LAYERS, TENSORS
from hetcc.targets import load_bytes, load_target

from boards import board_text, device

_W = "{" + ", ".join(str((i % 7) - 3) for i in range(16)) + "}"

# x -> Q -> [DQ -> Conv -> Q] -> [DQ -> Conv -> Q] -> DQ -> y, weights dequantised by constants
QDQ_CHAIN = f"""
<ir_version: 9, opset_import: ["" : 13]>
g (float[1,4,8,8] x) => (float[1,4,8,8] y)
<float s = {{0.1}}, uint8 zp = {{128}}, int8[4,4,1,1] w = {_W}, float ws = {{0.01}}, int8 wzp = {{0}}> {{
  xq = QuantizeLinear(x, s, zp)
  xd = DequantizeLinear(xq, s, zp)
  wd = DequantizeLinear(w, ws, wzp)
  c1 = Conv(xd, wd)
  c1q = QuantizeLinear(c1, s, zp)
  c1d = DequantizeLinear(c1q, s, zp)
  c2 = Conv(c1d, wd)
  c2q = QuantizeLinear(c2, s, zp)
  c2d = DequantizeLinear(c2q, s, zp)
  a = Add(c2d, c1d)
  aq = QuantizeLinear(a, s, zp)
  y = DequantizeLinear(aq, s, zp)
}}
"""


def _ops(program, layer):
    by = {n.name: n.op_type for n in program.graph}
    return [by[n] for n in layer.nodes]


def test_no_cut_inside_a_qdq_group(analyse):
    program = analyse(QDQ_CHAIN)
    layers = program.get(LAYERS)
    assert [_ops(program, l) for l in layers] == [
        ["QuantizeLinear"],
        ["DequantizeLinear", "Conv", "QuantizeLinear"],
        # the residual reads c1d: the two groups that share it are one unit
        ["DequantizeLinear", "Conv", "QuantizeLinear", "DequantizeLinear", "Add", "QuantizeLinear"],
        ["DequantizeLinear"],
    ]
    assert [l.outputs for l in layers[:-1]] == [("xq",), ("c1q",), ("aq",)]


def test_qdq_layers_record_int8_work_fused_nodes_and_quantised_dtypes(analyse):
    program = analyse(QDQ_CHAIN)
    first, conv, res, last = program.get(LAYERS)
    assert conv.int8_flops_by_class["pwconv"] == conv.flops_by_class["pwconv"] == 2.0 * 4 * 8 * 8 * 4
    assert res.int8_flops_by_class["pwconv"] == res.flops_by_class["pwconv"] > 0
    assert res.int8_flops_by_class["other"] == res.flops_by_class["other"] > 0   # the Add, DQ and Q
    assert (conv.fused_nodes, res.fused_nodes) == (2, 4)
    # the model's own quantise/dequantise ends run as kernels, in float
    assert (first.fused_nodes, last.fused_nodes) == (0, 0)
    assert first.int8_flops_by_class["other"] == 0.0
    assert conv.dtypes == res.dtypes == ("uint8",)   # the float tensors inside never materialise
    assert first.dtypes == last.dtypes == ("float32", "uint8")


def test_a_float_op_after_a_dequantize_is_not_int8(analyse):
    program = analyse("""
<ir_version: 9, opset_import: ["" : 13]>
g (float[1,4] x) => (float[1,4] y) <float s = {0.1}, uint8 zp = {128}> {
  q = QuantizeLinear(x, s, zp)
  d = DequantizeLinear(q, s, zp)
  y = Sigmoid(d)
}
""")
    layers = program.get(LAYERS)
    assert sum(l.int8_flops_by_class["other"] for l in layers) == 0.0
    assert layers[-1].dtypes == ("float32", "uint8")


_W216 = "{" + ", ".join(str((i % 5) - 2) for i in range(216)) + "}"
QOPS = f"""
<ir_version: 9, opset_import: ["" : 13]>
g (uint8[1,4,8,8] x, uint8[2,3,8,16] a, uint8[2,3,16,5] b, float[2,3,8,16] ea, float[2,3,16,5] eb,
   float[7,8,16] p)
  => (uint8[1,6,8,8] y1, int32[1,6,8,8] y2, uint8[2,3,8,5] y3, int32[2,3,8,5] y4, float[2,3,8,5] y5,
      float[7,8] y6, float[8,16] y7, float[2,3,8,5] y8)
<float s = {{0.1}}, uint8 zp = {{128}}, int8[6,4,3,3] w = {_W216}, float ws = {{0.01}}, int8 wzp = {{0}}> {{
  y1 = QLinearConv <pads = [1, 1, 1, 1]> (x, s, zp, w, ws, wzp, s, zp)
  y2 = ConvInteger <pads = [1, 1, 1, 1]> (x, w, zp, wzp)
  y3 = QLinearMatMul(a, s, zp, b, s, zp, s, zp)
  y4 = MatMulInteger(a, b, zp, zp)
  y5 = Einsum <equation = "bhik,bhkj->bhij"> (ea, eb)
  y6 = Einsum <equation = "nij->ni"> (p)
  y7 = Einsum <equation = "...ij->ij"> (p)
  y8 = Einsum <equation = "...ik,...kj"> (ea, eb)
}}
"""


def test_quantised_and_einsum_flops(analyse):
    program = analyse(QOPS)
    tensors = program.get(TENSORS)
    flops = {n.outputs[0].name: node_flops(n, tensors) for n in program.graph}
    conv = 2.0 * (1 * 6 * 8 * 8) * (4 * 3 * 3)      # as a float Conv of the same shapes
    matmul = 2.0 * (2 * 3 * 8 * 5) * 16
    assert flops["y1"] == flops["y2"] == conv
    assert flops["y3"] == flops["y4"] == matmul
    assert flops["y5"] == flops["y8"] == matmul      # 2 x b h i j k, implicit output too
    assert flops["y6"] == flops["y7"] == 2.0 * 7 * 8 * 16
    layers = program.get(LAYERS)
    assert sum(l.flops_by_class["conv"] for l in layers) == 2 * conv
    assert sum(l.flops_by_class["matmul"] for l in layers) == 4 * matmul + 4.0 * 7 * 8 * 16
    assert sum(l.int8_flops_by_class["conv"] for l in layers) == 2 * conv
    assert sum(l.int8_flops_by_class["matmul"] for l in layers) == 2 * matmul   # Einsum is float


def test_int8_throughput_lowers_the_predicted_latency(analyse):
    program = analyse(QDQ_CHAIN)
    layers = program.get(LAYERS)
    hikey = load_target("hikey970")
    legal = np.ones((len(layers), len(hikey.devices)), dtype=bool)
    with_int8 = costmodel.analytical_costs(layers, hikey, legal)
    as_float = [l.__class__(**{**l.__dict__, "int8_flops_by_class": {}}) for l in layers]
    without = costmodel.analytical_costs(as_float, hikey, legal)
    big = [s for s, st in enumerate(hikey.states()) if st.device == "big"]
    gpu = [s for s, st in enumerate(hikey.states()) if st.device == "gpu"]
    # the A73 runs conv twice as fast in int8; the Mali-G72 has no int8 speed-up
    assert (with_int8.latency_ms[1, big] < without.latency_ms[1, big]).all()
    assert np.allclose(with_int8.latency_ms[:, gpu], without.latency_ms[:, gpu])
    assert hikey.device("big").int8_speedup("conv") == pytest.approx(2.0, rel=1e-5)   # the file's 6 digits
    assert hikey.device("gpu").int8_speedup("conv") == pytest.approx(1.0)


def test_qdq_layers_are_legal_on_the_npu(analyse):
    from hetcc.passes.legality import CheckLegality
    from hetcc.compiler.passmanager import PassManager
    from hetcc.compiler.program import LEGALITY
    program = analyse(QDQ_CHAIN)
    hikey = load_target("hikey970")
    PassManager([CheckLegality(hikey)]).run(program)
    legality = program.get(LEGALITY)
    assert legality.mask.all(), legality.reasons


_BOARD = board_text("b", "one CPU", base_power_mw=0.0, devices={"cpu": device(
    freq_mhz=None, static_power_mw=None, dvfs=[{"freq_mhz": 1000.0, "static_power_mw": 10.0}],
    peak_gflops={"conv": 10.0, "matmul": 8.0, "other": 2.0}, mem_bandwidth_gbps=4.0, layer_overhead_ms=0.0,
    transfer={"beta_ms_per_mb": 0.0, "delta_ms": 0.0}, dtypes=["float32", "uint8"], raw="INT8")})


_B = (Path("b.toml"), "b.toml")


def test_int8_peak_gops_is_optional_and_checked():
    plain = load_bytes(_BOARD.replace("INT8", "").encode(), *_B)
    assert plain.devices[0].int8_peak_gops is None and plain.devices[0].int8_speedup("conv") == 1.0
    fast = load_bytes(_BOARD.replace("INT8", "int8_peak_gops = { conv = 40.0, matmul = 8.0, other = 2.0 }")
                      .encode(), *_B)
    assert fast.devices[0].int8_speedup("conv") == 4.0
    with pytest.raises(TargetError, match=r"devices\.cpu\.int8_peak_gops\.conv"):
        load_bytes(_BOARD.replace("INT8", "int8_peak_gops = { conv = 0.0, matmul = 8.0, other = 2.0 }")
                   .encode(), *_B)
    with pytest.raises(TargetError, match=r"devices\.cpu\.int8_peak_gops\.other"):
        load_bytes(_BOARD.replace("INT8", "int8_peak_gops = { conv = 1.0, matmul = 8.0 }").encode(), *_B)
