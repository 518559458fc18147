"""The cost estimators (MOSAIC Eq. 1-5, as used by HERTI): one module for every planner.

- latency of layer l on device d at frequency f:  T = theta/f + rho            (MOSAIC Eq. 3)
  analytically, theta/f_max = sum over op classes of FLOPs / effective peak GFLOP/s at f_max
  (compute scales with the clock) and rho = per-layer overhead + per-node overhead x nodes
  + bytes moved / memory bandwidth (fixed costs and memory-bound time do not); from profiles, ``fit_theta_rho`` solves for theta, rho.
- power: P = P_static(d, f) + P_dyn(l, d, f_max) * (V_f^2 f) / (V_max^2 f_max)   (Eq. 4-5)
  with P_dyn(l, d, f_max) = the device's dynamic power at f_max times the layer's activity
  (the share of its time spent computing or moving data rather than in fixed overhead).
- transfer: C = beta * MB + delta (ms) for the tensors entering / leaving a slice (Eq. 1-2);
  its energy is C times the transfer power (the device's ``transfer.power_mw`` or, by default,
  its full power at that state); a remote device adds its link: bytes / bandwidth + rtt/2 at
  the link's tx (in) or rx (out) radio power at the given signal strength (AutoScale Eq. 4).

FLOPs count a multiply-add as 2 (hetcc.flops), the convention of peak GFLOP/s figures.
Units: ms, MHz, mW, mJ, bytes; MB = 10**6 bytes; GB/s = 10**9 bytes/s.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Sequence

import numpy as np

from .costtable import CostTable
from .errors import TargetError
from .program import Layer

if TYPE_CHECKING:  # pragma: no cover
    from hetcc.targets import Device, Target

logger = logging.getLogger(__name__)

OP_CLASSES = ("conv", "matmul", "other")


# --- the scalar/array estimators (also used by measured cost tables) ---------------------------

def latency_ms(theta_ms_mhz: np.ndarray | float, rho_ms: np.ndarray | float,
               freq_mhz: np.ndarray | float) -> np.ndarray:
    """MOSAIC Eq. 3: T = theta/f + rho (theta in ms*MHz, rho in ms)."""
    return np.asarray(theta_ms_mhz, dtype=np.float64) / np.asarray(freq_mhz, dtype=np.float64) + rho_ms


def fit_theta_rho(t_fmin_ms: np.ndarray | float, t_fmax_ms: np.ndarray | float,
                  fmin_mhz: float, fmax_mhz: float) -> tuple[np.ndarray, np.ndarray]:
    """Solve T = theta/f + rho through the profiles at f_min and f_max (MOSAIC Sec. V-B2).

    Measurement noise can make the line slope the wrong way; theta is clamped at 0 (a layer
    never gets faster as the clock falls) and rho at 0 (keeping the f_max point exact). With a
    single frequency (fmin == fmax) all the time goes to theta when it is positive."""
    tmin = np.asarray(t_fmin_ms, dtype=np.float64)
    tmax = np.asarray(t_fmax_ms, dtype=np.float64)
    if fmin_mhz <= 0 or fmax_mhz <= 0 or fmin_mhz > fmax_mhz:
        raise ValueError(f"need 0 < fmin <= fmax, got fmin={fmin_mhz}, fmax={fmax_mhz}")
    if fmin_mhz == fmax_mhz:
        theta = tmax * fmax_mhz
        return theta, np.zeros_like(theta)
    theta = (tmin - tmax) / (1.0 / fmin_mhz - 1.0 / fmax_mhz)
    theta = np.maximum(theta, 0.0)
    rho = tmax - theta / fmax_mhz
    neg = rho < 0
    theta = np.where(neg, tmax * fmax_mhz, theta)
    rho = np.where(neg, 0.0, rho)
    return theta, rho


def dvfs_scale(volt: np.ndarray | float | None, freq_mhz: np.ndarray | float,
               v_max: float | None, f_max_mhz: float) -> np.ndarray:
    """MOSAIC Eq. 5 factor (V_f^2 f) / (V_max^2 f_max); without voltages, f / f_max."""
    f = np.asarray(freq_mhz, dtype=np.float64)
    if volt is None or v_max is None:
        return f / f_max_mhz
    v = np.asarray(volt, dtype=np.float64)
    return (v * v * f) / (v_max * v_max * f_max_mhz)


def power_mw(static_mw: np.ndarray | float, dyn_fmax_mw: np.ndarray | float,
             scale: np.ndarray | float) -> np.ndarray:
    """MOSAIC Eq. 4-5: P = P_static(d, f) + P_dyn(l, d, f_max) * scale."""
    return np.asarray(static_mw, dtype=np.float64) + np.asarray(dyn_fmax_mw, dtype=np.float64) * scale


def transfer_ms(nbytes: np.ndarray | float, beta_ms_per_mb: float, delta_ms: float) -> np.ndarray:
    """MOSAIC Eq. 1-2: C = beta * MB + delta (zero bytes cost nothing)."""
    b = np.asarray(nbytes, dtype=np.float64)
    return np.where(b > 0, beta_ms_per_mb * b / 1e6 + delta_ms, 0.0)


def link_ms(nbytes: np.ndarray | float, bandwidth_mbps: float, rtt_ms: float) -> np.ndarray:
    """Time to move ``nbytes`` over a wireless link: serialisation at the bandwidth + half an RTT."""
    b = np.asarray(nbytes, dtype=np.float64)
    return np.where(b > 0, b * 8.0 / (bandwidth_mbps * 1e3) + rtt_ms / 2.0, 0.0)


# --- the analytical cost table ------------------------------------------------------------------

def _layer_arrays(layers: Sequence[Layer]) -> tuple[np.ndarray, ...]:
    flops = np.array([[float(l.flops_by_class.get(c, 0.0)) for c in OP_CLASSES] for l in layers],
                     dtype=np.float64).reshape(len(layers), len(OP_CLASSES))
    inb = np.array([l.input_bytes for l in layers], dtype=np.float64)
    outb = np.array([l.output_bytes for l in layers], dtype=np.float64)
    par = np.array([l.param_bytes for l in layers], dtype=np.float64)
    nodes = np.array([len(l.nodes) for l in layers], dtype=np.float64)
    return flops, inb, outb, par, inb + outb + par, nodes


def _require_model(target: "Target", d: "Device") -> None:
    if not d.has_throughput_model:
        raise TargetError(f"target {target.name!r} device {d.name!r} has no analytical throughput "
                          "(peak_gflops, mem_bandwidth_gbps, layer_overhead_ms); "
                          + ("it is a measured target: profile it with onnxruntime instead"
                             if target.kind == "measured" else "add them to the target file"))
    if not d.power_model:
        raise TargetError(f"target {target.name!r} device {d.name!r} has no power model "
                          "(power_model = false); the analytical cost model needs one")


def analytical_costs(layers: Sequence[Layer], target: "Target", legal_dev: np.ndarray,
                     *, signal_dbm: float | None = None) -> CostTable:
    """The L x S cost table of ``layers`` on ``target`` from FLOPs, bytes and device peaks.

    ``legal_dev`` is the [L, D] mask of the legality pass (D in ``target.devices`` order); it is
    expanded to states and also cleared where a layer's own parameters exceed the capacity.
    ``signal_dbm`` overrides the links' default signal strength (remote devices).
    Illegal cells hold inf."""
    if target.kind != "modelled":
        raise TargetError(f"target {target.name!r} is {target.kind}, not modelled: its costs come "
                          "from profiling on the device, not from the analytical model")
    L, D = len(layers), len(target.devices)
    legal_dev = np.asarray(legal_dev, dtype=bool)
    if legal_dev.shape != (L, D):
        raise ValueError(f"legal_dev has shape {legal_dev.shape}, expected ({L}, {D})")
    flops, inb, outb, par, mem_bytes, n_nodes = _layer_arrays(layers)
    states = target.states()
    S = len(states)

    lat = np.empty((L, S))
    pw = np.empty((L, S))
    tin = np.empty((L, S))
    tout = np.empty((L, S))
    ein = np.empty((L, S))
    eout = np.empty((L, S))
    legal = np.empty((L, S), dtype=bool)
    cap = np.empty(S)

    s0 = 0
    for di, d in enumerate(target.devices):
        _require_model(target, d)
        k = len(d.dvfs)
        sl = slice(s0, s0 + k)
        s0 += k
        fmax = d.f_max_mhz
        if fmax is None:  # a fixed-frequency device with an undocumented clock: theta/f = time at f_max
            fmax = 1.0
            f = np.ones(1)
        else:
            f = np.array([lvl.freq_mhz for lvl in d.dvfs], dtype=np.float64)        # [k]
        volts = None if any(lvl.volt is None for lvl in d.dvfs) else np.array([lvl.volt for lvl in d.dvfs])
        static = np.array([lvl.static_power_mw for lvl in d.dvfs], dtype=np.float64)  # [k]
        scale = dvfs_scale(volts, f, d.v_max if volts is not None else None, fmax)   # [k]

        peak = np.array([d.peak_gflops[c] for c in OP_CLASSES], dtype=np.float64)    # GFLOP/s
        t_comp_fmax = (flops / peak).sum(axis=1) / 1e6                                # ms at f_max
        theta = t_comp_fmax * fmax                                                    # ms*MHz
        t_mem = mem_bytes / (d.mem_bandwidth_gbps * 1e6)                              # ms
        overhead = d.layer_overhead_ms + d.node_overhead_ms * n_nodes                # [L]
        rho = overhead + t_mem
        lat[:, sl] = theta[:, None] / f[None, :] + rho[:, None]

        busy = t_comp_fmax + t_mem
        total = busy + overhead
        activity = np.divide(busy, total, out=np.zeros_like(busy), where=total > 0)
        pdyn_fmax = d.dynamic_power_mw * activity                                     # [L]
        pw[:, sl] = static[None, :] + pdyn_fmax[:, None] * scale[None, :]

        # transfers: the device's own copy/format cost, plus the link for a remote device
        dev_power = static + d.dynamic_power_mw * scale                               # [k]
        tpow = np.full(k, d.transfer_power_mw) if d.transfer_power_mw is not None else dev_power
        cin = transfer_ms(inb, d.transfer_beta_ms_per_mb, d.transfer_delta_ms)        # [L]
        cout = transfer_ms(outb, d.transfer_beta_ms_per_mb, d.transfer_delta_ms)
        tin[:, sl] = cin[:, None]
        tout[:, sl] = cout[:, None]
        ein[:, sl] = cin[:, None] * tpow[None, :] / 1000.0
        eout[:, sl] = cout[:, None] * tpow[None, :] / 1000.0
        if d.link is not None:
            link = target.links[d.link]
            bw, rtt = link.bandwidth_mbps_at(signal_dbm), link.rtt_ms
            lin, lout = link_ms(inb, bw, rtt), link_ms(outb, bw, rtt)
            tin[:, sl] += lin[:, None]
            tout[:, sl] += lout[:, None]
            ein[:, sl] += (lin * link.tx_power_mw_at(signal_dbm) / 1000.0)[:, None]
            eout[:, sl] += (lout * link.rx_power_mw_at(signal_dbm) / 1000.0)[:, None]

        c = np.inf if d.capacity_bytes is None else float(d.capacity_bytes)
        cap[sl] = c
        legal[:, sl] = (legal_dev[:, di] & (par <= c))[:, None]

    for a in (lat, pw, tin, tout, ein, eout):
        a[~legal] = np.inf
    return CostTable(layers=tuple(layers), states=states, latency_ms=lat, power_mw=pw,
                     transfer_in_ms=tin, transfer_out_ms=tout, transfer_in_mj=ein,
                     transfer_out_mj=eout, legal=legal, capacity_bytes=cap,
                     base_power_mw=float(target.base_power_mw), source="analytical")


def whole_model_ms(table: CostTable, state: int) -> float:
    """Latency of running every layer as one slice on ``state`` (inf when illegal there)."""
    params = sum(l.param_bytes for l in table.layers)
    if not table.legal[:, state].all() or params > table.capacity_bytes[state]:
        return float("inf")
    return float(table.transfer_in_ms[0, state] + table.latency_ms[:, state].sum()
                 + table.transfer_out_ms[-1, state])


__all__ = ["analytical_costs", "fit_theta_rho", "latency_ms", "dvfs_scale", "power_mw",
           "transfer_ms", "link_ms", "whole_model_ms", "OP_CLASSES"]
