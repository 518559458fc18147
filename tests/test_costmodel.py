"""The analytical cost model (MOSAIC Eq. 1-5) on hand-built layers."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from hetcc.compiler.costmodel import (analytical_costs, dvfs_scale, fit_theta_rho, latency_ms, link_ms,
                             transfer_ms, whole_model_ms)
from hetcc.core.errors import TargetError
from hetcc.compiler.program import Layer
from hetcc.targets import builtin_targets, load_target

from boards import device

MODELLED = [n for n in builtin_targets() if load_target(n).kind == "modelled"]


def layer(i: int, conv: float = 0.0, matmul: float = 0.0, other: float = 0.0, params: int = 0,
          inb: int = 100_000, outb: int = 100_000, nodes: int = 1, ops: tuple[str, ...] = ("Conv",)) -> Layer:
    return Layer(id=i, nodes=tuple(f"n{i}_{k}" for k in range(nodes)), op_types=ops,
                 inputs=(f"t{i}",), outputs=(f"t{i + 1}",), param_bytes=params,
                 flops=conv + matmul + other, flops_by_class={"conv": conv, "matmul": matmul, "other": other},
                 input_bytes=inb, output_bytes=outb, dtypes=("float32",))


def vgg16_layers() -> list[Layer]:
    """VGG-16 at 224x224 as MOSAIC's 16 layers (13 conv+ReLU[+MaxPool], 3 FC); FLOPs = 2 x MACs
    (~15.5 G multiply-adds = ~31 GFLOP), float32 bytes."""
    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]
    out: list[Layer] = []
    c_in, hw = 3, 224
    i = 0
    while i < len(cfg):
        c_out = cfg[i]
        pool = i + 1 < len(cfg) and cfg[i + 1] == "M"
        conv = 2.0 * hw * hw * c_out * c_in * 9
        other = hw * hw * c_out + (hw * hw * c_out if pool else 0)  # ReLU + 2x2 max-pool reads
        hw_out = hw // 2 if pool else hw
        out.append(layer(len(out), conv=conv, other=other, params=(9 * c_in * c_out + c_out) * 4,
                         inb=hw * hw * c_in * 4, outb=hw_out * hw_out * c_out * 4, nodes=3 if pool else 2,
                         ops=("Conv", "Relu") + (("MaxPool",) if pool else ())))
        c_in, hw = c_out, hw_out
        i += 2 if pool else 1
    for fin, fout in ((25088, 4096), (4096, 4096), (4096, 1000)):
        out.append(layer(len(out), matmul=2.0 * fin * fout, other=fout, params=(fin * fout + fout) * 4,
                         inb=fin * 4, outb=fout * 4, nodes=2, ops=("Gemm", "Relu")))
    return out


@pytest.fixture(scope="module")
def hikey():
    return load_target("hikey970")


def all_legal(layers, target) -> np.ndarray:
    return np.ones((len(layers), len(target.devices)), dtype=bool)


def test_table_shapes_and_states(hikey) -> None:
    layers = [layer(i, conv=1e8 * (i + 1), params=1000) for i in range(5)]
    t = analytical_costs(layers, hikey, all_legal(layers, hikey))
    for a in (t.latency_ms, t.power_mw, t.transfer_in_ms, t.transfer_out_ms, t.transfer_in_mj,
              t.transfer_out_mj, t.legal):
        assert a.shape == (5, 25)
    assert t.states == hikey.states() and t.source == "analytical"
    assert t.capacity_bytes.shape == (25,)
    assert np.isinf(t.capacity_bytes[:24]).all() and t.capacity_bytes[24] == 100_000_000
    assert t.base_power_mw == hikey.base_power_mw
    assert t.legal.all() and np.isfinite(t.latency_ms).all() and (t.latency_ms > 0).all()
    assert (t.power_mw > 0).all() and (t.transfer_in_mj > 0).all()


def test_latency_is_theta_over_f_plus_rho_and_falls_with_f(hikey) -> None:
    layers = [layer(0, conv=5e8, other=1e6, inb=2_000_000, outb=1_000_000, nodes=4)]
    t = analytical_costs(layers, hikey, all_legal(layers, hikey))
    states = hikey.states()
    for dev in ("big", "little", "gpu"):
        idx = [i for i, s in enumerate(states) if s.device == dev]
        f = np.array([states[i].frequency_mhz for i in idx])
        lat = t.latency_ms[0, idx]
        assert np.all(np.diff(lat) < 0)  # higher frequency, lower latency
        # the two end points determine theta, rho (MOSAIC's profiler) and reproduce every level
        theta, rho = fit_theta_rho(lat[0], lat[-1], f[0], f[-1])
        assert rho > 0 and theta > 0
        np.testing.assert_allclose(latency_ms(theta, rho, f), lat, rtol=1e-12)


def test_analytical_theta_matches_peak_throughput(hikey) -> None:
    gpu = hikey.device("gpu")
    flops = 1e9
    layers = [layer(0, conv=flops, inb=0, outb=0, nodes=1)]
    t = analytical_costs(layers, hikey, all_legal(layers, hikey))
    s = [i for i, st in enumerate(hikey.states()) if st.device == "gpu" and st.is_fmax][0]
    expect = flops / (gpu.peak_gflops["conv"] * 1e9) * 1e3 + gpu.node_overhead_ms
    assert t.latency_ms[0, s] == pytest.approx(expect)
    assert t.transfer_in_ms[0, s] == pytest.approx(gpu.layer_overhead_ms)   # once per slice, at its start


def test_power_follows_mosaic_eq5(hikey) -> None:
    layers = [layer(0, conv=2e9, params=4_000_000)]
    t = analytical_costs(layers, hikey, all_legal(layers, hikey))
    states = hikey.states()
    for dev in ("big", "little", "gpu"):
        d = hikey.device(dev)
        idx = [i for i, s in enumerate(states) if s.device == dev]
        static = np.array([lvl.static_power_mw for lvl in d.dvfs])
        dyn = t.power_mw[0, idx] - static
        v = np.array([lvl.volt for lvl in d.dvfs])
        f = np.array([lvl.freq_mhz for lvl in d.dvfs])
        expect_ratio = (v ** 2 * f) / (v[-1] ** 2 * f[-1])
        # P_dyn x activity, the activity being the busy share of the time at that clock
        lat = t.latency_ms[0, idx]
        activity = (lat - d.node_overhead_ms * len(layers[0].nodes)) / lat
        np.testing.assert_allclose(dyn / activity / (dyn[-1] / activity[-1]), expect_ratio, rtol=1e-12)
        assert 0 < dyn[-1] <= d.dynamic_power_mw
        assert np.all(np.diff(t.power_mw[0, idx]) > 0)  # power rises with the V/f level


def test_dvfs_scale_and_fit_edge_cases() -> None:
    assert dvfs_scale(1.0, 500.0, 1.0, 1000.0) == pytest.approx(0.5)
    assert dvfs_scale(0.5, 1000.0, 1.0, 1000.0) == pytest.approx(0.25)
    assert dvfs_scale(None, 480.0, None, 960.0) == pytest.approx(0.5)
    # plain fit; a slope the wrong way (noisy profile) clamped to theta = 0; a negative rho
    # clamped to 0 keeping the f_max point exact
    theta, rho = fit_theta_rho(np.array([7.0, 4.0, 5.0]), np.array([4.0, 5.0, 1.0]), 500.0, 1000.0)
    np.testing.assert_allclose(theta, [3000.0, 0.0, 1000.0])
    np.testing.assert_allclose(rho, [1.0, 5.0, 0.0])
    t, r = fit_theta_rho(3.0, 3.0, 960.0, 960.0)
    assert t == pytest.approx(2880.0) and r == 0.0
    with pytest.raises(ValueError):
        fit_theta_rho(1.0, 1.0, 1000.0, 500.0)


def test_fit_clamps_negative_rho() -> None:
    # (f=500: 10 ms, f=1000: 4 ms) -> theta 6000, rho -2: clamp rho to 0, keep the f_max point
    theta, rho = fit_theta_rho(10.0, 4.0, 500.0, 1000.0)
    assert rho == 0.0 and theta == pytest.approx(4000.0)


def test_transfer_costs(hikey) -> None:
    assert transfer_ms(0, 1.0, 5.0) == 0.0
    assert transfer_ms(3_000_000, 2.0, 1.5) == pytest.approx(7.5)
    assert link_ms(1_000_000, 8.0, 10.0) == pytest.approx(1000.0 + 5.0)
    layers = [layer(0, conv=1e8, inb=5_000_000, outb=1_000_000)]
    t = analytical_costs(layers, hikey, all_legal(layers, hikey))
    fmax = {s.device: i for i, s in enumerate(hikey.states()) if s.is_fmax}
    tin = {d: t.transfer_in_ms[0, i] for d, i in fmax.items()}
    assert tin["npu"] > tin["gpu"] > tin["big"]  # MOSAIC Fig. 7; CPU nearly free
    assert t.transfer_out_ms[0, fmax["npu"]] < tin["npu"]  # fewer bytes out than in
    gpu = hikey.device("gpu")
    copy_ms = gpu.transfer_beta_ms_per_mb * 5.0 + gpu.transfer_delta_ms
    mem_ms = 5_000_000 / (gpu.mem_bandwidth_gbps * 1e6)     # the slice reads its input once
    assert tin["gpu"] == pytest.approx(copy_ms + mem_ms + gpu.layer_overhead_ms)
    # energy: the copy and the memory read at the device's full power at that state (no explicit
    # transfer power on hikey970), the slice's fixed overhead at its static power
    i = fmax["gpu"]
    p = gpu.dvfs[-1].static_power_mw + gpu.dynamic_power_mw
    assert t.transfer_in_mj[0, i] == pytest.approx(
        ((copy_ms + mem_ms) * p + gpu.layer_overhead_ms * gpu.dvfs[-1].static_power_mw) / 1000.0)


def test_illegal_cells_are_inf(hikey) -> None:
    layers = [layer(i, conv=1e8) for i in range(3)]
    mask = all_legal(layers, hikey)
    mask[1, 2] = False  # layer 1 not on the GPU
    t = analytical_costs(layers, hikey, mask)
    gpu_states = [i for i, s in enumerate(hikey.states()) if s.device == "gpu"]
    assert not t.legal[1, gpu_states].any() and t.legal[[0, 2]][:, gpu_states].all()
    for a in (t.latency_ms, t.power_mw, t.transfer_in_ms, t.transfer_out_ms, t.transfer_in_mj, t.transfer_out_mj):
        assert np.isinf(a[1, gpu_states]).all()
    assert t.legal.sum() == 3 * 25 - 8
    doc = t.to_json()
    assert doc["latency_ms"][1][gpu_states[0]] is None and doc["capacity_bytes"][24] == 100_000_000
    problem = t.problem("m")
    assert problem.legal.shape == (3, 25)


def test_layer_too_big_for_the_npu(hikey) -> None:
    layers = [layer(0, conv=1e8, params=10_000_000), layer(1, matmul=8e8, params=411_000_000)]
    t = analytical_costs(layers, hikey, all_legal(layers, hikey))
    npu = len(hikey.states()) - 1
    assert t.legal[0, npu] and not t.legal[1, npu]
    assert t.legal[1, :npu].all()
    assert math.isinf(whole_model_ms(t, npu))


def test_legal_dev_shape_is_checked(hikey) -> None:
    layers = [layer(0, conv=1e8)]
    with pytest.raises(ValueError, match="expected"):
        analytical_costs(layers, hikey, np.ones((1, 3), dtype=bool))


def test_measured_target_has_no_analytical_costs() -> None:
    host = load_target("host")
    layers = [layer(0, conv=1e8)]
    with pytest.raises(TargetError, match="measured"):
        analytical_costs(layers, host, np.ones((1, 1), dtype=bool))


def test_calibration_vgg16_on_gpu_near_mosaic_table_i(hikey) -> None:
    """MOSAIC Table I: VGG on the HiKey 970 GPU (767 MHz) takes 218.7 ms."""
    layers = vgg16_layers()
    assert len(layers) == 16
    conv_gflop = sum(l.flops_by_class["conv"] for l in layers) / 1e9
    assert 30.0 < conv_gflop < 31.5  # 15.35 G multiply-adds
    t = analytical_costs(layers, hikey, all_legal(layers, hikey))
    gpu_fmax = [i for i, s in enumerate(hikey.states()) if s.device == "gpu" and s.is_fmax][0]
    ms = whole_model_ms(t, gpu_fmax)
    assert 218.7 / 1.5 < ms < 218.7 * 1.5, ms
    # and the other devices order as expected: GPU < big < little; fc6 (411 MB) keeps it off the NPU
    fmax = {s.device: i for i, s in enumerate(hikey.states()) if s.is_fmax}
    assert ms < whole_model_ms(t, fmax["big"]) < whole_model_ms(t, fmax["little"])
    assert math.isinf(whole_model_ms(t, fmax["npu"]))


def test_remote_device_pays_the_link(tmp_path: Path, board_toml) -> None:
    text = board_toml("phone", "phone + cloud", base_power_mw=800.0, links={"wifi": {
        "kind": "wifi", "signal_dbm": [-90.0, -50.0], "bandwidth_mbps": [4.0, 80.0], "tx_power_mw": [1600.0, 800.0],
        "rx_power_mw": [1000.0, 600.0], "rtt_ms": 20.0, "default_signal_dbm": -50.0}}, devices={
        "cpu": device(freq_mhz=2000.0, volt=1.0, static_power_mw=50.0, dynamic_power_mw=2000.0,
                      peak_gflops={"conv": 20.0, "matmul": 20.0, "other": 5.0}, mem_bandwidth_gbps=10.0,
                      layer_overhead_ms=0.02, transfer={"beta_ms_per_mb": 0.02, "delta_ms": 0.01}),
        "cloud": device(kind="remote", execution_provider="CUDAExecutionProvider", link="wifi", freq_mhz=1300.0,
                        static_power_mw=100.0, dynamic_power_mw=0.0,
                        peak_gflops={"conv": 5000.0, "matmul": 5000.0, "other": 500.0}, mem_bandwidth_gbps=500.0,
                        transfer=None)})
    p = tmp_path / "phone.toml"
    p.write_text(text)
    tgt = load_target(p)
    layers = [layer(0, conv=4e9, inb=600_000, outb=4_000)]
    good = analytical_costs(layers, tgt, np.ones((1, 2), dtype=bool))
    weak = analytical_costs(layers, tgt, np.ones((1, 2), dtype=bool), signal_dbm=-90.0)
    # 600 kB at 80 Mbit/s = 60 ms + rtt/2, plus the server's slice overhead (0.01 ms) and its
    # memory read of the 600 kB (500 GB/s: 0.0012 ms), both at its static 100 mW
    local_ms = 0.01 + 600_000 / 500e6
    assert good.transfer_in_ms[0, 1] == pytest.approx(60.0 + 10.0 + local_ms)
    assert good.transfer_in_mj[0, 1] == pytest.approx((70.0 * 800.0 + local_ms * 100.0) / 1000.0)
    assert weak.transfer_in_ms[0, 1] > 10 * good.transfer_in_ms[0, 1]
    assert good.latency_ms[0, 1] < good.latency_ms[0, 0]  # the server computes faster
    assert good.power_mw[0, 1] == pytest.approx(100.0)     # the phone only waits


@pytest.mark.parametrize("name", MODELLED)
def test_every_modelled_builtin_gives_a_sane_table(name: str) -> None:
    tgt = load_target(name)
    layers = vgg16_layers()
    t = analytical_costs(layers, tgt, all_legal(layers, tgt))
    S = len(tgt.states())
    assert t.latency_ms.shape == (16, S)
    ok = t.legal
    for a in (t.latency_ms, t.power_mw, t.transfer_in_ms, t.transfer_out_ms, t.transfer_in_mj, t.transfer_out_mj):
        assert np.isfinite(a[ok]).all() and (a[ok] >= 0).all() and np.isinf(a[~ok]).all()
    assert (t.latency_ms[ok] > 0).all()
    dev = np.array(tgt.state_device_index())
    for di in range(len(tgt.devices)):
        cols = np.flatnonzero(dev == di)
        if len(cols) > 1:
            assert (np.diff(t.latency_ms[:, cols], axis=1) < 0).all()   # faster at higher f
            assert (np.diff(t.power_mw[:, cols], axis=1) >= 0).all()    # never cheaper in power
