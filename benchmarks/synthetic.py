"""Synthetic but realistic PlanningProblems: a CNN on a big/LITTLE/GPU/NPU board (HiKey 970-like).

Shared by the planner tests and ``benchmarks/planners.py``. The board has MOSAIC's Table II
DVFS levels (big 9, LITTLE 7, GPU 8, NPU 1 = 25 states) and the cost model of DESIGN.md:
latency = theta/f + rho, power = P_static(d, f) + P_dyn(l, d) * V^2 f / (V_max^2 f_max),
transfer = delta + bytes * beta, and a 100 MB parameter limit per NPU slice.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hetcc.planners.problem import PlanningProblem, StateTable

#: (volt, MHz) per device, MOSAIC Table II (HiKey 970); the NPU has no DVFS.
HIKEY970_DVFS: dict[str, tuple[tuple[float, float], ...]] = {
    "big": ((0.7, 682), (0.8, 1018), (0.8, 1210), (0.8, 1364), (0.9, 1498), (0.9, 1652),
            (0.9, 1863), (1.0, 2093), (1.1, 2362)),
    "little": ((0.7, 509), (0.8, 1018), (0.9, 1210), (0.9, 1402), (1.0, 1556), (1.0, 1690),
               (1.1, 1844)),
    "gpu": ((0.6, 104), (0.7, 151), (0.7, 237), (0.7, 332), (0.8, 415), (0.8, 550), (0.9, 667),
            (1.0, 767)),
    "npu": ((0.8, 960),),
}


@dataclass(frozen=True)
class DeviceModel:
    """Analytical device: peak GFLOP/s at f_max per op kind, overheads, power, transfer, memory."""

    gflops: dict[str, float]
    overhead_ms: float
    bandwidth_gbs: float          # memory bandwidth for the memory-bound part
    static_mw: float              # static power at V_max
    dynamic_mw: float             # dynamic power of a fully busy layer at f_max
    delta_ms: float               # per-transfer latency
    beta_gbs: float               # transfer bandwidth
    transfer_mw: float            # power drawn while transferring
    capacity_bytes: float = np.inf
    unsupported: float = 0.0      # share of layers (of the kinds below) it cannot run
    unsupported_kinds: tuple[str, ...] = ()


DEVICES: dict[str, DeviceModel] = {
    "big": DeviceModel({"conv": 18.0, "dwconv": 8.0, "fc": 6.0, "pool": 5.0}, 0.02, 8.0,
                       300.0, 2200.0, 0.05, 8.0, 300.0),
    "little": DeviceModel({"conv": 5.0, "dwconv": 2.5, "fc": 2.0, "pool": 1.5}, 0.04, 4.0,
                          60.0, 450.0, 0.05, 8.0, 150.0),
    "gpu": DeviceModel({"conv": 70.0, "dwconv": 9.0, "fc": 12.0, "pool": 8.0}, 0.15, 14.0,
                       250.0, 2000.0, 0.4, 4.0, 600.0, unsupported=0.05,
                       unsupported_kinds=("pool", "fc")),
    "npu": DeviceModel({"conv": 280.0, "dwconv": 30.0, "fc": 40.0, "pool": 15.0}, 0.08, 20.0,
                       150.0, 1300.0, 0.8, 2.0, 500.0, capacity_bytes=100e6, unsupported=0.15,
                       unsupported_kinds=("pool", "dwconv")),
}

BASE_POWER_MW = 600.0


def _cnn_layers(num_layers: int, rng: np.random.Generator) -> list[dict]:
    """A VGG/MobileNet-like chain: five stages of shrinking maps and growing channels, then FCs."""
    n_fc = 1 if num_layers < 8 else int(rng.integers(1, 4))
    n_body = max(num_layers - n_fc, 0)
    stages = np.array_split(np.arange(n_body), 5) if n_body else []
    layers = []
    c_in = 3
    side = 224
    for si, stage in enumerate(stages):
        c_out = (64, 128, 256, 512, 512)[si]
        side = (112, 56, 28, 14, 7)[si]
        for _ in stage:
            kind = rng.choice(["conv", "dwconv", "pool"], p=[0.72, 0.2, 0.08])
            if kind == "conv":
                k = int(rng.choice([1, 3], p=[0.3, 0.7]))
                flops = 2.0 * side * side * k * k * c_in * c_out
                params = 4 * k * k * c_in * c_out
            elif kind == "dwconv":
                flops = 2.0 * side * side * 9 * c_out
                params = 4 * 9 * c_out
            else:
                flops = side * side * c_out * 4.0
                params = 0
            out = 4 * side * side * c_out
            layers.append({"kind": str(kind), "flops": flops, "params": params, "out_bytes": out,
                           "in_bytes": 4 * side * side * c_in})
            c_in = c_out
    width = c_in * 7 * 7
    for j in range(num_layers - len(layers)):
        hidden = 4096 if j < n_fc - 1 else 1000
        layers.append({"kind": "fc", "flops": 2.0 * width * hidden, "params": 4 * width * hidden,
                       "out_bytes": 4 * hidden, "in_bytes": 4 * width})
        width = hidden
    layers[0]["in_bytes"] = 4 * 224 * 224 * 3
    return layers[:num_layers]


def synthetic_problem(num_layers: int = 60, seed: int = 0) -> PlanningProblem:
    """A CNN of ``num_layers`` layers on the HiKey 970-like board (25 states)."""
    rng = np.random.default_rng(seed)
    layers = _cnn_layers(num_layers, rng)
    L = len(layers)
    devs, freqs, volts, fmax_flags = [], [], [], []
    for name, table in HIKEY970_DVFS.items():
        for i, (v, f) in enumerate(table):
            devs.append(name)
            freqs.append(float(f))
            volts.append(v)
            fmax_flags.append(i == len(table) - 1)
    S = len(devs)
    lat = np.full((L, S), np.inf)
    pw = np.full((L, S), np.inf)
    tin_ms = np.full((L, S), np.inf)
    tout_ms = np.full((L, S), np.inf)
    tin_mj = np.full((L, S), np.inf)
    tout_mj = np.full((L, S), np.inf)
    legal = np.ones((L, S), dtype=bool)
    cap = np.full(S, np.inf)
    params = np.array([ly["params"] for ly in layers], dtype=np.int64)
    for d, model in DEVICES.items():
        cols = [s for s in range(S) if devs[s] == d]
        fmax = max(freqs[s] for s in cols)
        vmax = max(volts[s] for s in cols)
        # device-specific efficiency noise per layer, fixed across its DVFS states
        eff = rng.lognormal(0.0, 0.25, size=L)
        util = rng.uniform(0.55, 1.0, size=L)
        blocked = np.array([ly["kind"] in model.unsupported_kinds and rng.random() < 4 * model.unsupported
                            or rng.random() < model.unsupported / 5 for ly in layers])
        for s in cols:
            f, v = freqs[s], volts[s]
            cap[s] = model.capacity_bytes
            for i, ly in enumerate(layers):
                compute_ms = ly["flops"] / (model.gflops[ly["kind"]] * 1e9 * eff[i]) * 1e3
                moved = ly["in_bytes"] + ly["out_bytes"] + ly["params"]
                memory_ms = moved / (model.bandwidth_gbs * 1e9) * 1e3
                theta = compute_ms * fmax               # ms * MHz
                lat[i, s] = theta / f + model.overhead_ms + memory_ms
                busy = compute_ms * fmax / f / lat[i, s]
                pw[i, s] = (model.static_mw * (v / vmax) ** 2
                            + model.dynamic_mw * util[i] * busy * (v * v * f) / (vmax * vmax * fmax))
                t_in = model.delta_ms + ly["in_bytes"] / (model.beta_gbs * 1e9) * 1e3
                t_out = model.delta_ms + ly["out_bytes"] / (model.beta_gbs * 1e9) * 1e3
                tin_ms[i, s], tout_ms[i, s] = t_in, t_out
                tin_mj[i, s] = t_in * model.transfer_mw / 1000.0
                tout_mj[i, s] = t_out * model.transfer_mw / 1000.0
                legal[i, s] = not blocked[i]
    for arr in (lat, pw, tin_ms, tout_ms, tin_mj, tout_mj):
        arr[~legal] = np.inf
    return PlanningProblem(
        latency_ms=lat, power_mw=pw, transfer_in_ms=tin_ms, transfer_out_ms=tout_ms,
        transfer_in_mj=tin_mj, transfer_out_mj=tout_mj, legal=legal, param_bytes=params,
        capacity_bytes=cap, base_power_mw=BASE_POWER_MW,
        states=StateTable(device=tuple(devs), kind=tuple("gpu" if d == "gpu" else "npu" if d == "npu" else "cpu"
                                                         for d in devs),
                          freq_mhz=np.array(freqs), is_fmax=np.array(fmax_flags)),
        layer_names=tuple(f"{ly['kind']}{i}" for i, ly in enumerate(layers)))
