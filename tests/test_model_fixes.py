"""Cost-model fixes the HiKey 970 fit needs (issue 8): a 'dwconv' op class with its own
throughput, device capacity counted as parameters + activations, transfer coefficients per DVFS
level. Each is optional in a board file; without the new keys every table is the one of the
formula before them, bit for bit (``test_tables_without_new_keys_are_the_old_formula``).

Why one file of ~490 lines: the fixes share one board fixture and one reference formula that
each test compares against.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from types import MappingProxyType

import numpy as np
import onnx
import onnx_ir as ir
import pytest
from onnx import TensorProto, helper

import hetcc
from hetcc.compiler.costmodel import state_legal, analytical_costs, device_params
from hetcc.compiler.costtable import layer_features
from hetcc.core.errors import TargetError
from hetcc.compiler.flops import node_class
from hetcc.core.opclasses import OP_CLASSES, op_class
from hetcc.planners.hardware import TABLES, DeviceParams, Knob, apply_knob, cost_tables, transfer_ms
from hetcc.compiler.program import COSTS, LEGALITY, Layer
from hetcc.targets import builtin_targets, load_bytes, load_target

from boards import board_text, device, device_text

# --- fixture models (shapes matter, weights do not) ------------------------------------------------


def _w(name: str, shape: list[int]) -> onnx.TensorProto:
    return helper.make_tensor(name, TensorProto.FLOAT, shape, np.zeros(int(np.prod(shape)), np.float32).tolist())


def _model(name: str, nodes: list, x: list[int], y: list[int], weights: list) -> onnx.ModelProto:
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, y)], weights)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def mbv2_block() -> onnx.ModelProto:
    """An inverted residual (1x1 expand, 3x3 depthwise, 1x1 project, add: one layer), pool, head."""
    mk = helper.make_node
    return _model("mbv2", [
        mk("Conv", ["x", "w1"], ["a"], name="expand"), mk("Relu", ["a"], ["b"], name="relu1"),
        mk("Conv", ["b", "w2"], ["c"], name="dw", group=32, pads=[1, 1, 1, 1]), mk("Relu", ["c"], ["d"], name="relu2"),
        mk("Conv", ["d", "w3"], ["e"], name="project"), mk("Add", ["e", "x"], ["f"], name="res"),
        mk("GlobalAveragePool", ["f"], ["g"], name="gap"), mk("Flatten", ["g"], ["h"], name="flat"),
        mk("Gemm", ["h", "wf", "bf"], ["i"], name="fc", transB=1), mk("Softmax", ["i"], ["y"], name="sm")],
        [1, 8, 32, 32], [1, 10],
        [_w("w1", [32, 8, 1, 1]), _w("w2", [32, 1, 3, 3]), _w("w3", [8, 32, 1, 1]), _w("wf", [10, 8]), _w("bf", [10])])


def grouped() -> onnx.ModelProto:
    """A 4-group 3x3 conv, pooling, a strided depthwise conv, a MatMul head."""
    mk = helper.make_node
    return _model("grouped", [
        mk("Conv", ["x", "w1"], ["a"], name="gconv", group=4, pads=[1, 1, 1, 1]), mk("Sigmoid", ["a"], ["b"], name="sig"),
        mk("MaxPool", ["b"], ["c"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        mk("Conv", ["c", "w2"], ["d"], name="pw"),
        mk("Conv", ["d", "w3"], ["e"], name="dw", group=32, strides=[2, 2], pads=[1, 1, 1, 1]),
        mk("GlobalAveragePool", ["e"], ["f"], name="gap"), mk("Flatten", ["f"], ["h"], name="flat"),
        mk("MatMul", ["h", "wm"], ["y"], name="head")],
        [1, 16, 16, 16], [1, 5], [_w("w1", [32, 4, 3, 3]), _w("w2", [32, 32, 1, 1]), _w("w3", [32, 1, 3, 3]),
                                  _w("wm", [32, 5])])


def plain() -> onnx.ModelProto:
    """No grouped convolution: conv, relu, conv, relu, pool, gemm."""
    mk = helper.make_node
    return _model("plain", [
        mk("Conv", ["x", "w1"], ["a"], name="c1", pads=[1, 1, 1, 1]), mk("Relu", ["a"], ["b"], name="r1"),
        mk("Conv", ["b", "w2"], ["c"], name="c2", pads=[1, 1, 1, 1]), mk("Relu", ["c"], ["d"], name="r2"),
        mk("AveragePool", ["d"], ["e"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        mk("Flatten", ["e"], ["f"], name="flat"), mk("Gemm", ["f", "wf"], ["y"], name="fc", transB=1)],
        [1, 3, 16, 16], [1, 10], [_w("w1", [16, 3, 3, 3]), _w("w2", [16, 16, 3, 3]), _w("wf", [10, 16 * 8 * 8])])


@pytest.fixture(scope="module")
def model_paths(tmp_path_factory) -> list[Path]:
    d = tmp_path_factory.mktemp("models")
    out = []
    for build in (mbv2_block, grouped, plain):
        p = d / f"{build.__name__}.onnx"
        m = build()
        onnx.checker.check_model(m)
        onnx.save(m, str(p))
        out.append(p)
    return out


# --- the formula before the fixes, as a reference ---------------------------------------------------

def _old_tables(features, p: DeviceParams, legal: np.ndarray) -> dict[str, np.ndarray]:
    """``cost_tables`` as it was before the 'dwconv' class, the activation-counting capacity and
    the per-level transfer (three op classes; grouped convolutions counted as 'conv'; capacity
    against parameters). Per-state numbers come from ``p``'s first three class columns."""
    col = features.column
    conv = col("conv_flops") + col("dwconv_flops") + col("pwconv_flops") + col("dwconv_large_flops")
    conv8 = (col("conv_int8_flops") + col("dwconv_int8_flops") + col("pwconv_int8_flops")
             + col("dwconv_large_int8_flops"))
    other, other8 = col("other_flops") + col("pool_flops"), col("other_int8_flops") + col("pool_int8_flops")
    flops = np.stack([conv, col("matmul_flops"), other], axis=1)
    int8 = np.stack([conv8, col("matmul_int8_flops"), other8], axis=1)
    inb, outb, par, nodes = col("input_bytes"), col("output_bytes"), col("param_bytes"), col("nodes")
    peak, speed = p.peak_gflops[:, :3], p.int8_speedup[:, :3]
    with np.errstate(divide="ignore", invalid="ignore"):
        t_comp_fmax = (((flops - int8)[:, None, :] + int8[:, None, :] / speed[None, :, :])
                       / peak[None, :, :]).sum(axis=2) / 1e6
    theta = t_comp_fmax * p.fmax_mhz[None, :]
    slow = p.mem_slowdown[None, :]
    t_par = par[:, None] / (p.mem_bandwidth_gbps[None, :] * 1e6)
    lat = theta / p.freq_mhz[None, :] + p.node_overhead_ms[None, :] * nodes[:, None] + t_par * slow
    busy = theta / p.freq_mhz[None, :] + t_par
    activity = np.divide(busy, lat, out=np.zeros_like(busy), where=lat > 0)
    pw = p.static_mw[None, :] + (p.dynamic_mw[None, :] * activity) * p.dvfs_scale[None, :]
    dev_power = p.static_mw + p.dynamic_mw * p.dvfs_scale
    tpow = np.where(np.isnan(p.transfer_power_mw), dev_power, p.transfer_power_mw)
    tin = transfer_ms(inb[:, None], p.transfer_beta_ms_per_mb[None, :], p.transfer_delta_ms[None, :])
    tout = transfer_ms(outb[:, None], p.transfer_beta_ms_per_mb[None, :], p.transfer_delta_ms[None, :])
    ein, eout = tin * tpow[None, :] / 1000.0, tout * tpow[None, :] / 1000.0
    t_ain = inb[:, None] / (p.mem_bandwidth_gbps[None, :] * 1e6)
    t_aout = outb[:, None] / (p.mem_bandwidth_gbps[None, :] * 1e6)
    busy_mw = (p.dynamic_mw * p.dvfs_scale)[None, :]
    tin = tin + p.layer_overhead_ms[None, :] + t_ain * slow
    tout = tout + t_aout * slow
    ein = ein + (p.layer_overhead_ms[None, :] * p.static_mw[None, :] + t_ain * slow * p.static_mw[None, :]
                 + t_ain * busy_mw) / 1000.0
    eout = eout + (t_aout * slow * p.static_mw[None, :] + t_aout * busy_mw) / 1000.0
    has_link = ~np.isnan(p.link_bandwidth_mbps)
    if has_link.any():
        from hetcc.planners.hardware import link_ms

        bw = np.where(has_link, p.link_bandwidth_mbps, 1.0)[None, :]
        rtt = np.where(has_link, p.link_rtt_ms, 0.0)[None, :]
        lin = np.where(has_link[None, :], link_ms(inb[:, None], bw, rtt), 0.0)
        lout = np.where(has_link[None, :], link_ms(outb[:, None], bw, rtt), 0.0)
        tin, tout = tin + lin, tout + lout
        ein = ein + lin * np.where(has_link, p.link_tx_mw, 0.0)[None, :] / 1000.0
        eout = eout + lout * np.where(has_link, p.link_rx_mw, 0.0)[None, :] / 1000.0
    legal = legal & (par[:, None] <= p.capacity_bytes[None, :])
    out = {"latency_ms": lat, "power_mw": pw, "transfer_in_ms": tin, "transfer_out_ms": tout,
           "transfer_in_mj": ein, "transfer_out_mj": eout}
    for k, a in out.items():
        a = np.array(a, dtype=np.float64)
        a[~legal] = np.inf
        out[k] = a
    out["legal"] = legal
    return out


def _without_new_keys(target):
    """``target`` as a board file without the new keys would load (whatever its file now sets)."""
    devices = []
    for d in target.devices:
        peak = None if d.peak_gflops is None else MappingProxyType(
            {**d.peak_gflops, **dict.fromkeys(("dwconv", "pwconv", "dwconv_large"), d.peak_gflops["conv"]),
             "pool": d.peak_gflops["other"]})
        int8 = None if d.int8_peak_gops is None else MappingProxyType(
            {c: v for c, v in d.int8_peak_gops.items() if c not in ("dwconv", "pwconv", "dwconv_large", "pool")})
        changes = {"peak_gflops": peak, "int8_peak_gops": int8}
        changes.update({k: v for k, v in (("capacity_counts", "params"), ("activation_bytes_factor", 1.0))
                        if hasattr(d, k)})
        levels = tuple(dataclasses.replace(lvl, **{k: None for k in ("transfer_beta_ms_per_mb", "transfer_delta_ms",
                                                                     "transfer_power_mw") if hasattr(lvl, k)})
                       for lvl in d.dvfs)
        devices.append(dataclasses.replace(d, dvfs=levels, **changes))
    return dataclasses.replace(target, devices=tuple(devices))


MODELLED = [n for n in builtin_targets() if load_target(n).kind == "modelled"]


@pytest.mark.parametrize("name", MODELLED)
def test_tables_without_new_keys_are_the_old_formula(name: str, model_paths: list[Path]) -> None:
    """Every built-in modelled board, with any new key taken out, on three models (depthwise,
    grouped, none): the analytical table and the knob space's tables (default and least capable
    configuration) equal the old formula's bit for bit."""
    target = _without_new_keys(load_target(name))
    for path in model_paths:
        a = hetcc.analyse(path, target)
        table = a.program.get(COSTS)
        features = layer_features(table.layers)
        legal = state_legal(target, a.program.get(LEGALITY).mask, len(table.layers))
        ref = _old_tables(features, device_params(target), legal)
        for k in (*TABLES, "legal"):
            assert np.array_equal(getattr(table, k), ref[k]), (name, path.name, k)
            assert np.array_equal(getattr(a.problem, k), ref[k]), (name, path.name, k)
        space = a.problem.hardware
        if space is not None:
            low = {k.name: next(v for v in k.values if v) for k in space.knobs}
            params, col_legal = space.device_params(low)
            got = space.tables(low)
            ref = _old_tables(features, params, space.legal & col_legal[None, :])
            for k in (*TABLES, "legal"):
                assert np.array_equal(got[k], ref[k]), (name, path.name, "low knobs", k)


# --- 1. depthwise and grouped convolutions -----------------------------------------------------------

def test_op_class_of_grouped_convolutions() -> None:
    assert OP_CLASSES == ("conv", "matmul", "other", "dwconv", "pwconv", "dwconv_large", "pool")
    assert op_class("Conv") == "conv" and op_class("Conv", 32) == "dwconv" and op_class("Relu", 4) == "other"
    assert op_class("Conv", 1, (1, 1)) == "pwconv" and op_class("Conv", 1, (3, 3)) == "conv"
    assert op_class("Conv", 32, (3, 3)) == "dwconv" and op_class("Conv", 32, (5, 5)) == "dwconv_large"
    assert op_class("Conv", 32, (1, 7)) == "dwconv_large" and op_class("MatMul", 1, (1, 1)) == "matmul"
    for op in ("Conv", "ConvTranspose", "QLinearConv", "ConvInteger"):
        assert node_class(ir.node(op, inputs=[], attributes={"group": 2})) == "dwconv"
        assert node_class(ir.node(op, inputs=[], attributes={"group": 1})) == "conv"
        assert node_class(ir.node(op, inputs=[])) == "conv"
    assert node_class(ir.node("Gemm", inputs=[])) == "matmul"
    assert node_class(ir.node("MaxPool", inputs=[], attributes={"group": 3})) == "pool"
    assert op_class("GlobalAveragePool") == op_class("QLinearAveragePool") == "pool" and op_class("Add") == "other"


_BOARD = board_text("b", "one CPU", base_power_mw=0.0, devices={"cpu": device(
    freq_mhz=None, static_power_mw=None,
    dvfs=[{"freq_mhz": 500.0, "static_power_mw": 10.0}, {"freq_mhz": 1000.0, "static_power_mw": 20.0}],
    peak_gflops=None, mem_bandwidth_gbps=4.0, layer_overhead_ms=0.0, transfer={"beta_ms_per_mb": 0.5, "delta_ms": 0.25},
    dtypes=["float32", "uint8"], raw="PEAK\nINT8")})
_B = (Path("b.toml"), "b.toml")


def _board_text(peak: str = "peak_gflops = { conv = 10.0, matmul = 8.0, other = 2.0 }", int8: str = "",
                **subs: str) -> str:
    text = _BOARD.replace("PEAK", peak).replace("INT8", int8)
    for old, new in subs.items():
        text = text.replace(old, new)
    return text


def board(*args: str, **subs: str):
    return load_bytes(_board_text(*args, **subs).encode(), *_B)


def test_dwconv_figures_are_optional_and_checked() -> None:
    d = board().devices[0]
    assert dict(d.peak_gflops) == {"conv": 10.0, "matmul": 8.0, "other": 2.0, "dwconv": 10.0, "pwconv": 10.0,
                                   "dwconv_large": 10.0, "pool": 2.0}
    assert d.int8_speedup("dwconv") == 1.0
    d = board("peak_gflops = { conv = 10.0, matmul = 8.0, other = 2.0, dwconv = 2.5 }").devices[0]
    assert d.peak_gflops["dwconv"] == 2.5 and d.peak("dwconv") == 2.5
    # int8: an absent dwconv figure keeps the conv class's int8 speed-up; a given one is used
    d = board("peak_gflops = { conv = 10.0, matmul = 8.0, other = 2.0, dwconv = 2.5 }",
              "int8_peak_gops = { conv = 40.0, matmul = 8.0, other = 2.0 }").devices[0]
    assert d.int8_speedup("conv") == 4.0 and d.int8_speedup("dwconv") == 4.0
    d = board("peak_gflops = { conv = 10.0, matmul = 8.0, other = 2.0, dwconv = 2.5 }",
              "int8_peak_gops = { conv = 40.0, matmul = 8.0, other = 2.0, dwconv = 5.0 }").devices[0]
    assert d.int8_speedup("dwconv") == 2.0
    with pytest.raises(TargetError, match=r"devices\.cpu\.peak_gflops\.dwconv: must be > 0"):
        board("peak_gflops = { conv = 10.0, matmul = 8.0, other = 2.0, dwconv = 0.0 }")
    with pytest.raises(TargetError, match=r"devices\.cpu\.peak_gflops\.conv: missing"):
        board("peak_gflops = { dwconv = 10.0, matmul = 8.0, other = 2.0 }")
    with pytest.raises(TargetError, match=r"peak_gflops\.depthwise: unknown key; allowed keys: conv, dwconv"):
        board("peak_gflops = { conv = 10.0, matmul = 8.0, other = 2.0, depthwise = 1.0 }")
    with pytest.raises(TargetError, match=r"devices\.cpu\.int8_peak_gops\.dwconv: must be > 0"):
        board(int8="int8_peak_gops = { conv = 40.0, matmul = 8.0, other = 2.0, dwconv = -1.0 }")


def _layer(conv: float = 0.0, dwconv: float = 0.0, other: float = 0.0, params: int = 0, acts: int = 0,
           dw8: float = 0.0) -> Layer:
    return Layer(id=0, nodes=("a", "b"), op_types=("Conv",), inputs=("x",), outputs=("y",), param_bytes=params,
                flops=conv + dwconv + other,
                flops_by_class={"conv": conv, "matmul": 0.0, "other": other, "dwconv": dwconv},
                int8_flops_by_class={"dwconv": dw8},
                input_bytes=1000, output_bytes=1000, dtypes=("float32",), activation_bytes=acts)


def test_dwconv_runs_at_its_own_figure() -> None:
    """Grouped convolutions' FLOPs divide by the dwconv figure (scaled by f_max / f like every
    compute term); without one they run at the conv figure."""
    lay = [_layer(conv=4e8, dwconv=1e8, other=1e6)]
    legal = np.ones((1, 1), dtype=bool)
    base = analytical_costs(lay, board(), legal)
    slow = analytical_costs(lay, board("peak_gflops = { conv = 10.0, matmul = 8.0, other = 2.0, dwconv = 2.5 }"),
                            legal)
    f = np.array([500.0, 1000.0])
    extra = 1e8 * (1 / 2.5 - 1 / 10.0) / 1e6 * (1000.0 / f)          # ms at each level
    assert slow.latency_ms[0] - base.latency_ms[0] == pytest.approx(extra, rel=1e-12)
    expect = (4e8 / 10.0 + 1e8 / 10.0 + 1e6 / 2.0) / 1e6 * (1000.0 / f)   # no params, no node overhead
    assert base.latency_ms[0] == pytest.approx(expect, rel=1e-12)
    # a faster dwconv figure lowers it; the rest of the table does not move
    fast = analytical_costs(lay, board("peak_gflops = { conv = 10.0, matmul = 8.0, other = 2.0, dwconv = 40.0 }"),
                            legal)
    assert (fast.latency_ms < base.latency_ms).all()
    assert np.array_equal(fast.transfer_in_ms, base.transfer_in_ms)
    # int8 grouped convolutions run at the dwconv figure x the speed-up
    q = [_layer(dwconv=1e8, dw8=1e8)]
    qb = board("peak_gflops = { conv = 10.0, matmul = 8.0, other = 2.0, dwconv = 2.5 }",
               "int8_peak_gops = { conv = 40.0, matmul = 8.0, other = 2.0 }")
    t = analytical_costs(q, qb, legal)
    assert t.latency_ms[0] == pytest.approx(1e8 / (2.5 * 4.0) / 1e6 * (1000.0 / f), rel=1e-12)


def test_device_params_take_three_class_arrays() -> None:
    """A DeviceParams built with [S, 3] per-class arrays (the classes before 'dwconv') gets the
    dwconv column from conv; an active_cores knob scales every class."""
    kw = dict(device=("a", "b"), freq_mhz=[1.0, 2.0], fmax_mhz=[2.0, 2.0], dvfs_scale=[0.5, 1.0],
              static_mw=[1.0, 1.0], dynamic_mw=[10.0, 10.0], mem_bandwidth_gbps=[1.0, 1.0],
              layer_overhead_ms=[0.0, 0.0], node_overhead_ms=[0.0, 0.0], transfer_beta_ms_per_mb=[0.0, 0.0],
              transfer_delta_ms=[0.0, 0.0], transfer_power_mw=[np.nan, np.nan], link_bandwidth_mbps=[np.nan] * 2,
              link_rtt_ms=[np.nan] * 2, link_tx_mw=[np.nan] * 2, link_rx_mw=[np.nan] * 2,
              capacity_bytes=[np.inf, np.inf], base_power_mw=0.0)
    p = DeviceParams(peak_gflops=[[10.0, 8.0, 2.0], [20.0, 16.0, 4.0]], int8_speedup=[[2.0, 1.0, 1.0]] * 2, **kw)
    # the optional classes (dwconv, pwconv, dwconv_large) take conv's column, pool other's
    assert p.peak_gflops.tolist() == [[10.0, 8.0, 2.0, 10.0, 10.0, 10.0, 2.0], [20.0, 16.0, 4.0, 20.0, 20.0, 20.0, 4.0]]
    assert p.int8_speedup.tolist() == [[2.0, 1.0, 1.0, 2.0, 2.0, 2.0, 1.0]] * 2
    with pytest.raises(ValueError, match="peak_gflops has shape"):
        DeviceParams(peak_gflops=[[10.0, 8.0]] * 2, **kw)
    knob = Knob("cores", (1, 2), ("a",), "active_cores", {"parallel_fraction": 1.0})
    q = apply_knob(knob, 1, p.replace(peak_gflops=[[10.0, 8.0, 2.0, 1.0, 10.0, 1.0, 2.0],
                                                   [20.0, 16.0, 4.0, 2.0, 20.0, 2.0, 4.0]]), np.ones(2, bool))
    assert q.peak_gflops.tolist() == [[5.0, 4.0, 1.0, 0.5, 5.0, 0.5, 1.0], [20.0, 16.0, 4.0, 2.0, 20.0, 2.0, 4.0]]
    feats = {"conv_flops": [0.0], "matmul_flops": [0.0], "other_flops": [0.0], "dwconv_flops": [2e6],
             "input_bytes": [0.0], "output_bytes": [0.0], "param_bytes": [0.0], "nodes": [1.0]}
    t = cost_tables(feats, q, np.ones((1, 2), bool))
    assert t["latency_ms"][0].tolist() == pytest.approx([2e6 / 0.5 / 1e6 * 2.0, 2e6 / 2.0 / 1e6])


# --- 2. memory capacity counted as parameters + activations -------------------------------------------

def _problem(params, acts=None, factor=None, capacity=(np.inf,), legal=None):
    from hetcc.planners import PlanningProblem, StateTable

    L, S = len(params), len(capacity)
    z = np.zeros((L, S))
    return PlanningProblem(
        latency_ms=np.ones((L, S)), power_mw=np.ones((L, S)), transfer_in_ms=z, transfer_out_ms=z,
        transfer_in_mj=z, transfer_out_mj=z, legal=np.ones((L, S), bool) if legal is None else legal,
        param_bytes=np.array(params), capacity_bytes=np.array(capacity, dtype=float), base_power_mw=0.0,
        states=StateTable.build([f"d{s}" for s in range(S)]), activation_bytes=acts, activation_factor=factor)


def test_slice_fits_counts_activations_where_a_state_says_so() -> None:
    p = _problem([10, 20, 30], acts=[100, 200, 300], factor=[0.0, 1.0, 0.25], capacity=[60, 400, 200])
    assert p.counts_activations
    assert p.memory_bytes.tolist() == [[10, 110, 35], [20, 220, 70], [30, 330, 105]]
    assert p.memory_prefix([1, 2]).tolist() == [[0, 0], [110, 35], [330, 105], [660, 210]]
    assert p.slice_bytes(0, 2, 0) == 60 and p.slice_fits(0, 2, 0)          # parameters only: 60 <= 60
    assert p.slice_fits(0, 1, 1) and not p.slice_fits(1, 2, 1)               # 330 <= 400 < 550
    assert p.slice_legal(0, 1, 1) and not p.slice_legal(0, 2, 1)
    assert p.slice_fits(0, 2, 2) is False and p.slice_fits(1, 2, 2)          # 210 > 200 >= 175
    # rounding is per layer, to whole bytes, so any prefix difference equals the slice's sum
    q = _problem([0, 0], acts=[3, 3], factor=[0.5], capacity=[4])
    assert q.memory_bytes[:, 0].tolist() == [2, 2] and q.slice_fits(0, 1, 0)
    with pytest.raises(ValueError, match="both activation_bytes and activation_factor"):
        _problem([1], acts=[1])
    with pytest.raises(ValueError, match="do not match"):
        _problem([1, 2], acts=[1], factor=[1.0])
    with pytest.raises(ValueError, match=">= 0"):
        _problem([1], acts=[1], factor=[-1.0])


def test_without_activation_arrays_capacity_is_parameters() -> None:
    p = _problem([10, 20], capacity=[25.0, np.inf])
    assert not p.counts_activations and p.activation_bytes is None
    assert p.memory_bytes.tolist() == [[10, 10], [20, 20]]
    assert not p.slice_fits(0, 1, 0) and p.slice_fits(0, 1, 1) and p.slice_fits(1, 1, 0)
    assert not p.memory_bytes.flags.writeable
    # a zero factor everywhere is the same as no arrays
    z = _problem([10, 20], acts=[5, 5], factor=[0.0, 0.0], capacity=[25.0, np.inf])
    assert not z.counts_activations and np.array_equal(z.memory_bytes, p.memory_bytes)


_CAP = "\n" + device_text("npu", kind="npu", freq_mhz=None, static_power_mw=None,
                          dvfs=[{"freq_mhz": 960.0, "static_power_mw": 10.0}],
                          peak_gflops={"conv": 10.0, "matmul": 8.0, "other": 2.0}, mem_bandwidth_gbps=4.0,
                          layer_overhead_ms=0.0, transfer={"beta_ms_per_mb": 0.5, "delta_ms": 0.25}, raw="CAPACITY")


def npu_board(capacity: str):
    return load_bytes((_board_text() + _CAP.replace("CAPACITY", capacity)).encode(), *_B)


def test_capacity_counts_is_optional_and_checked() -> None:
    d = npu_board("capacity_bytes = 1000").device("npu")
    assert d.capacity_counts == "params" and d.activation_factor == 0.0
    d = npu_board('capacity_bytes = 1000\ncapacity_counts = "params+activations"').device("npu")
    assert d.capacity_counts == "params+activations" and d.activation_factor == 1.0
    d = npu_board('capacity_bytes = 1000\ncapacity_counts = "params+activations"\nactivation_bytes_factor = 2.75'
                  ).device("npu")
    assert d.activation_factor == 2.75
    d = npu_board('capacity_bytes = 1000\ncapacity_counts = "params"').device("npu")
    assert d.activation_factor == 0.0
    with pytest.raises(TargetError, match=r"devices\.npu\.capacity_counts: must be one of params, params\+activations"):
        npu_board('capacity_bytes = 1000\ncapacity_counts = "everything"')
    with pytest.raises(TargetError, match=r"devices\.npu\.capacity_counts: only with capacity_bytes"):
        npu_board('capacity_counts = "params+activations"')
    with pytest.raises(TargetError, match=r"devices\.npu\.activation_bytes_factor: only with capacity_counts"):
        npu_board('capacity_bytes = 1000\nactivation_bytes_factor = 2.0')
    with pytest.raises(TargetError, match=r"devices\.npu\.activation_bytes_factor: must be > 0"):
        npu_board('capacity_bytes = 1000\ncapacity_counts = "params+activations"\nactivation_bytes_factor = 0.0')


def test_a_layer_whose_activations_exceed_the_capacity_is_illegal_alone() -> None:
    """cost_tables clears a layer on a state where its parameters + factor x activations exceed
    the capacity; the CostTable's problem carries the arrays; costs.json keeps them."""
    from hetcc.planners.problem import problem_from_costs_json

    lay = [_layer(conv=1e6, params=400, acts=500), _layer(conv=1e6, params=400, acts=100)]
    counting = npu_board('capacity_bytes = 1000\ncapacity_counts = "params+activations"\n'
                         'activation_bytes_factor = 1.5')
    legal = np.ones((2, 2), dtype=bool)
    t = analytical_costs(lay, counting, legal)
    npu = 2   # states: cpu@500, cpu@1000, npu
    assert t.legal[:, npu].tolist() == [False, True]            # 400 + 750 > 1000 >= 400 + 150
    assert np.isinf(t.latency_ms[0, npu]) and np.isfinite(t.latency_ms[1, npu])
    assert t.activation_factor.tolist() == [0.0, 0.0, 1.5]
    p = t.problem()
    assert p.activation_bytes.tolist() == [500, 100] and p.memory_bytes[:, npu].tolist() == [1150, 550]
    doc = t.to_json()
    assert [l["activation_bytes"] for l in doc["layers"]] == [500, 100] and doc["activation_factor"] == [0.0, 0.0, 1.5]
    q = problem_from_costs_json(doc)
    assert np.array_equal(q.memory_bytes, p.memory_bytes)
    # the same layers on a board that counts parameters: both legal, costs.json as before
    plain = analytical_costs(lay, npu_board("capacity_bytes = 1000"), legal)
    assert plain.legal.all() and plain.activation_factor is None
    doc = plain.to_json()
    assert "activation_factor" not in doc and all("activation_bytes" not in l for l in doc["layers"])
    assert problem_from_costs_json(doc).activation_bytes is None


# --- 3. transfer coefficients per DVFS level ----------------------------------------------------------

def test_a_dvfs_level_may_set_its_own_transfer() -> None:
    """A level's transfer keys override the device's at that level only; a key it leaves out is
    the device's (beta 0.5 ms/MB, delta 0.25 ms, power: the device's own at the state)."""
    lvl = '{ freq_mhz = 500.0, static_power_mw = 10.0, transfer = { beta_ms_per_mb = 2.0, power_mw = 50.0 } }'
    b = board(**{"{ freq_mhz = 500.0, static_power_mw = 10.0 }": lvl})
    d = b.devices[0]
    assert d.transfer_at(0) == (2.0, 0.25, 50.0) and d.transfer_at(1) == (0.5, 0.25, None)
    p = device_params(b)
    assert p.transfer_beta_ms_per_mb.tolist() == [2.0, 0.5] and p.transfer_delta_ms.tolist() == [0.25, 0.25]
    assert p.transfer_power_mw[0] == 50.0 and np.isnan(p.transfer_power_mw[1])
    lay = [_layer(conv=1e6)]            # 1000 bytes in and out
    legal = np.ones((1, 1), dtype=bool)
    t, ref = analytical_costs(lay, b, legal), analytical_costs(lay, board(), legal)
    mb = 1000 / 1e6
    assert t.transfer_in_ms[0, 0] - ref.transfer_in_ms[0, 0] == pytest.approx((2.0 - 0.5) * mb, rel=1e-9)
    assert t.transfer_out_ms[0, 0] - ref.transfer_out_ms[0, 0] == pytest.approx((2.0 - 0.5) * mb, rel=1e-9)
    assert t.transfer_in_ms[0, 1] == ref.transfer_in_ms[0, 1] and t.transfer_in_mj[0, 1] == ref.transfer_in_mj[0, 1]
    c_ms = 2.0 * mb + 0.25
    assert t.transfer_out_mj[0, 0] - ref.transfer_out_mj[0, 0] == pytest.approx(
        c_ms * 50.0 / 1000 - (0.5 * mb + 0.25) * (10.0 + 100.0 * 0.5) / 1000, rel=1e-9)
    assert np.array_equal(t.latency_ms, ref.latency_ms) and np.array_equal(t.power_mw, ref.power_mw)


@pytest.mark.parametrize("level, match", [
    ("transfer = {}", r"devices\.cpu\.dvfs\[0\]\.transfer: give beta_ms_per_mb, delta_ms or power_mw"),
    ("transfer = { beta_ms_per_mb = -1.0 }", r"devices\.cpu\.dvfs\[0\]\.transfer\.beta_ms_per_mb: must be >= 0"),
    ("transfer = { alpha = 1.0 }", r"devices\.cpu\.dvfs\[0\]\.transfer\.alpha: unknown key; allowed keys: "
                                   r"beta_ms_per_mb, delta_ms, power_mw"),
    ("transfer = 2.0", r"devices\.cpu\.dvfs\[0\]\.transfer: must be a table \(beta_ms_per_mb, delta_ms, power_mw\)"),
])
def test_a_level_transfer_is_checked(level: str, match: str) -> None:
    with pytest.raises(TargetError, match=match):
        board(**{"{ freq_mhz = 500.0, static_power_mw = 10.0 }":
                 "{ freq_mhz = 500.0, static_power_mw = 10.0, " + level + " }"})


def test_base_power_is_a_plain_fitted_number() -> None:
    """base_power_mw (MOSAIC's board power outside the devices) needs nothing new to be fitted:
    a plan's energy moves by exactly base x latency."""
    from hetcc.planners import Slice

    lay = [_layer(conv=1e8)]
    legal = np.ones((1, 1), dtype=bool)
    lo = analytical_costs(lay, board(), legal).problem()
    hi = analytical_costs(lay, board(**{"base_power_mw = 0.0": "base_power_mw = 1234.5"}), legal).problem()
    a, b = lo.evaluate([Slice(0, 0, 1)]), hi.evaluate([Slice(0, 0, 1)])
    assert a.latency_ms == b.latency_ms
    assert b.energy_mj - a.energy_mj == pytest.approx(1234.5 * a.latency_ms / 1000, rel=1e-12)
