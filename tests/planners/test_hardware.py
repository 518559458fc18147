"""HardwareSpace: a board's knobs as numbers, tables recomputed through the one cost model."""
from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pytest

from hetcc.compiler import costmodel
from hetcc.compiler.costtable import layer_features
from hetcc.planners.hardware import (TABLES, DeviceParams, HardwareSpace, Knob, amdahl_speedup, cost_tables)
from hetcc.planners.problem import Slice
from hetcc.compiler.program import Layer
from hetcc.targets import load_target


def layer(i: int, conv: float = 0.0, matmul: float = 0.0, other: float = 0.0, params: int = 0,
          inb: int = 100_000, outb: int = 100_000, nodes: int = 1) -> Layer:
    return Layer(id=i, nodes=tuple(f"n{i}_{k}" for k in range(nodes)), op_types=("Conv",) * nodes,
                 inputs=(f"t{i}",), outputs=(f"t{i + 1}",), param_bytes=params,
                 flops=conv + matmul + other, flops_by_class={"conv": conv, "matmul": matmul, "other": other},
                 input_bytes=inb, output_bytes=outb, dtypes=("float32",),
                 node_classes={"conv": nodes, "matmul": 0, "other": 0})


def some_layers(n: int = 8, seed: int = 0) -> list[Layer]:
    rng = np.random.default_rng(seed)
    return [layer(i, conv=float(rng.uniform(1e7, 2e9)), matmul=float(rng.uniform(0, 5e8)),
                  other=float(rng.uniform(0, 1e7)), params=int(rng.integers(0, 5_000_000)),
                  inb=int(rng.integers(1, 4_000_000)), outb=int(rng.integers(1, 4_000_000)),
                  nodes=int(rng.integers(1, 5))) for i in range(n)]


@pytest.fixture(scope="module")
def tx2():
    return load_target("jetson-tx2")


@pytest.fixture(scope="module")
def tx2_case(tx2):
    layers = some_layers()
    legal_dev = np.ones((len(layers), len(tx2.devices)), dtype=bool)
    legal_dev[3, 2] = False                       # layer 3 not on the GPU
    space = costmodel.hardware_space(tx2, layer_features(tuple(layers)), legal_dev)
    table = costmodel.analytical_costs(layers, tx2, legal_dev)
    return layers, legal_dev, space, table


def cols(tx2, device: str) -> np.ndarray:
    return np.array([s.device == device for s in tx2.states()])


def test_default_config_is_the_analytical_table(tx2, tx2_case) -> None:
    layers, legal_dev, space, table = tx2_case
    assert isinstance(space, HardwareSpace)
    cfg = space.default_config()
    assert cfg == {"a57_cores": 4, "denver_cores": 2, "emc_freq_mhz": 1866.0}
    t = space.tables(cfg)
    for key in TABLES + ("legal",):
        assert np.array_equal(t[key], getattr(table, key)), key
    assert t["base_power_mw"] == tx2.base_power_mw
    assert np.array_equal(space.tables()["latency_ms"], t["latency_ms"])     # no config = default


def test_problem_apply_carries_the_configuration_to_the_plan(tx2, tx2_case) -> None:
    layers, legal_dev, space, table = tx2_case
    problem = table.problem("m")
    p = space.apply(problem, {"a57_cores": 2})
    assert p.hardware is space
    assert p.hardware_config == {"a57_cores": 2, "denver_cores": 2, "emc_freq_mhz": 1866.0}
    a57 = int(np.flatnonzero(cols(tx2, "a57"))[-1])
    assert p.latency_ms[0, a57] > problem.latency_ms[0, a57]
    plan = p.evaluate([Slice(0, len(layers) - 1, a57)])
    assert plan.hardware == p.hardware_config
    assert space.apply(problem).hardware_config == space.default_config()


def test_no_knobs_no_space(tx2) -> None:
    hikey = load_target("hikey970")
    layers = some_layers(3)
    f = layer_features(tuple(layers))
    assert costmodel.hardware_space(hikey, f, np.ones((3, 4), dtype=bool)) is None
    assert costmodel.hardware_space(load_target("host"), f, np.ones((3, 1), dtype=bool)) is None


def test_jetson_tx2_grid_is_evosh_table_i(tx2, tx2_case) -> None:
    space = tx2_case[2]
    assert space.names == ("a57_cores", "denver_cores", "emc_freq_mhz")
    assert space.size == 5 * 3 * 11
    # DVFS frequencies stay planner states: per device one column per level
    levels = [len(tx2.device(d).dvfs) for d in ("a57", "denver", "gpu")]
    assert levels == [12, 12, 13]
    assert space.size * int(np.prod(levels)) == 5 * 3 * 12 * 12 * 13 * 11 == 308_880
    configs = list(space.configs())
    assert len(configs) == space.size and configs[-1] == space.default_config()
    for i in (0, 1, 57, space.size - 1):
        assert space.index(configs[i]) == i and space.config_at(i) == configs[i]
    with pytest.raises(ValueError, match="out of range"):
        space.config_at(space.size)


def test_validate(tx2_case) -> None:
    space = tx2_case[2]
    assert space.validate({}) == space.default_config()
    assert space.validate({"a57_cores": "2", "emc_freq_mhz": "1600"}) == {
        "a57_cores": 2, "denver_cores": 2, "emc_freq_mhz": 1600.0}
    with pytest.raises(ValueError, match=r"unknown hardware knob 'gpu_cores'; knobs: a57_cores, denver_cores, "
                                         r"emc_freq_mhz"):
        space.validate({"gpu_cores": 1})
    with pytest.raises(ValueError, match=r"hardware knob 'a57_cores': 5 is not one of its values \(0, 1, 2, 3, 4\)"):
        space.validate({"a57_cores": 5})
    with pytest.raises(ValueError, match=r"'emc_freq_mhz': 'fast' is not one of its values \(40\.8, "):
        space.validate({"emc_freq_mhz": "fast"})
    with pytest.raises(ValueError, match="a57_cores"):
        space.validate({"a57_cores": True})


def test_zero_cores_cluster_runs_nothing(tx2, tx2_case) -> None:
    space = tx2_case[2]
    t = space.tables({"a57_cores": 0})
    d = space.tables()
    a57 = cols(tx2, "a57")
    assert not t["legal"][:, a57].any()
    assert np.isinf(t["latency_ms"][:, a57]).all()
    assert np.array_equal(t["legal"][:, ~a57], d["legal"][:, ~a57])
    assert np.array_equal(t["latency_ms"][:, ~a57], d["latency_ms"][:, ~a57])
    both = space.tables({"a57_cores": 0, "denver_cores": 0})
    assert both["legal"][:, cols(tx2, "gpu")].any() and not both["legal"][:, ~cols(tx2, "gpu")].any()


def test_more_cores_never_slower_and_hungrier(tx2, tx2_case) -> None:
    space = tx2_case[2]
    a57 = cols(tx2, "a57")
    prev = None
    for n in (1, 2, 3, 4):
        t = space.tables({"a57_cores": n})
        if prev is not None:
            assert (t["latency_ms"][:, a57] <= prev["latency_ms"][:, a57]).all()
            assert (t["latency_ms"][:, a57] < prev["latency_ms"][:, a57]).any()
            assert (t["power_mw"][:, a57] >= prev["power_mw"][:, a57]).all()
            assert np.array_equal(t["latency_ms"][:, ~a57], prev["latency_ms"][:, ~a57])
        prev = t


def test_active_cores_follow_amdahl(tx2, tx2_case) -> None:
    layers, legal_dev, space, table = tx2_case
    k = space.knob("a57_cores")
    pf = k.params["parallel_fraction"]
    s = int(np.flatnonzero(cols(tx2, "a57"))[-1])         # a57 at f_max
    d = tx2.device("a57")
    l0 = layers[0]
    t_comp = sum(l0.flops_by_class[c] / d.peak_gflops[c] for c in ("conv", "matmul", "other")) / 1e6
    t2 = space.tables({"a57_cores": 2})
    slowdown = amdahl_speedup(4, pf) / amdahl_speedup(2, pf)
    assert t2["latency_ms"][0, s] - table.latency_ms[0, s] == pytest.approx(t_comp * (slowdown - 1.0))
    assert t2["power_mw"][0, s] < table.power_mw[0, s]


def test_higher_emc_never_slower_and_base_power_grows(tx2, tx2_case) -> None:
    space = tx2_case[2]
    emc = space.knob("emc_freq_mhz")
    ts = [space.tables({"emc_freq_mhz": f}) for f in emc.values]
    for lo, hi in zip(ts, ts[1:]):
        ok = hi["legal"]
        assert (hi["latency_ms"][ok] < lo["latency_ms"][ok]).all()     # every layer moves bytes
        assert hi["base_power_mw"] > lo["base_power_mw"]
    p = emc.params["power_mw_at_max"]
    assert ts[0]["base_power_mw"] == pytest.approx(tx2.base_power_mw - p * (1 - emc.values[0] / emc.values[-1]))
    # the memory-bound shares scale with f_max / f_emc: a layer's parameters, a slice's boundary activations
    layers = tx2_case[0]
    s = int(np.flatnonzero(cols(tx2, "gpu"))[-1])
    l0 = layers[0]
    bw = tx2.device("gpu").mem_bandwidth_gbps * 1e6
    f = emc.values[4]
    low = space.tables({"emc_freq_mhz": f})
    stretch = emc.values[-1] / f - 1.0
    assert (low["latency_ms"][0, s] - ts[-1]["latency_ms"][0, s]
            == pytest.approx(l0.param_bytes / bw * stretch))
    assert (low["transfer_in_ms"][0, s] - ts[-1]["transfer_in_ms"][0, s]
            == pytest.approx(l0.input_bytes / bw * stretch))


def test_dominance_is_monotone(tx2_case) -> None:
    space = tx2_case[2]
    rng = np.random.default_rng(1)
    configs = list(space.configs())
    tables = {}

    def t(i):
        if i not in tables:
            tables[i] = space.tables(configs[i])
        return tables[i]

    checked = 0
    for _ in range(200):
        i, j = (int(x) for x in rng.integers(0, len(configs), size=2))
        a, b = configs[i], configs[j]
        if not space.dominates(a, b):
            continue
        checked += 1
        ta, tb = t(i), t(j)
        assert (ta["legal"] | ~tb["legal"]).all()               # never loses a legal cell
        both = ta["legal"] & tb["legal"]
        assert (ta["latency_ms"][both] <= tb["latency_ms"][both]).all()
        assert (ta["power_mw"][both] >= tb["power_mw"][both]).all()
        assert ta["base_power_mw"] >= tb["base_power_mw"]
    assert checked > 10
    top, bottom = space.default_config(), configs[0]
    assert space.dominates(top, bottom) and not space.dominates(bottom, top) and space.dominates(top, top)
    assert all(space.dominates(top, c) for c in itertools.islice(space.configs(), 0, None, 7))


def test_cost_tables_is_numbers_only() -> None:
    code = ("import sys, hetcc.planners.hardware; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('onnx', 'onnx_ir', 'onnxruntime') "
            "or m.startswith('hetcc.targets') or m == 'hetcc.compiler.costmodel']; print(bad); assert not bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_hand_built_space_without_a_target() -> None:
    """A HardwareSpace from numbers alone: one 2-core CPU state and an EMC knob."""
    f = layer_features((layer(0, conv=1e9, inb=1_000_000, outb=1_000_000),))
    one = [1.0]
    params = DeviceParams(
        device=("cpu",), freq_mhz=[1000.0], fmax_mhz=[1000.0], dvfs_scale=one, static_mw=[100.0],
        dynamic_mw=[1000.0], peak_gflops=[[10.0, 10.0, 1.0]], mem_bandwidth_gbps=[2.0],
        layer_overhead_ms=[0.0], node_overhead_ms=[0.0], transfer_beta_ms_per_mb=[0.0],
        transfer_delta_ms=[0.0], transfer_power_mw=[np.nan], link_bandwidth_mbps=[np.nan],
        link_rtt_ms=[np.nan], link_tx_mw=[np.nan], link_rx_mw=[np.nan], capacity_bytes=[np.inf],
        base_power_mw=500.0)
    space = HardwareSpace(
        knobs=(Knob("cores", (1, 2), ("cpu",), "active_cores", {"parallel_fraction": 1.0}),
               Knob("emc", (500.0, 1000.0), ("cpu",), "memory_frequency", {"power_mw_at_max": 200.0})),
        features=f, params=params, legal=np.ones((1, 1), dtype=bool))
    full = space.tables()
    assert full["latency_ms"][0, 0] == pytest.approx(100.0)            # 1 GFLOP at 10 GFLOP/s
    assert full["transfer_in_ms"][0, 0] == pytest.approx(0.5)          # 1 MB in at 2 GB/s, once per slice
    assert np.array_equal(full["latency_ms"], cost_tables(f, params, np.ones((1, 1), bool))["latency_ms"])
    half = space.tables({"cores": 1, "emc": 500.0})
    assert half["latency_ms"][0, 0] == pytest.approx(200.0)            # perfectly parallel
    assert half["transfer_in_ms"][0, 0] == pytest.approx(1.0)          # half the bandwidth
    assert half["base_power_mw"] == pytest.approx(400.0)
    with pytest.raises(ValueError, match="unknown devices gpu"):
        HardwareSpace(knobs=(Knob("g", (1, 2), ("gpu",), "active_cores", {"parallel_fraction": 1.0}),),
                      features=f, params=params, legal=np.ones((1, 1), dtype=bool))
    with pytest.raises(ValueError, match="unknown effect"):
        Knob("x", (1,), ("cpu",), "precision")
