"""The cost estimators (MOSAIC Eq. 1-5, as used by HERTI): one module for every planner.

- latency of layer l on device d at frequency f:  T = theta/f + rho            (MOSAIC Eq. 3)
  analytically, theta/f_max = sum over op classes of FLOPs / effective peak GFLOP/s at f_max
  (compute scales with the clock) and rho = per-node overhead x nodes + parameter bytes / memory
  bandwidth (fixed costs and memory-bound time do not); from profiles, ``fit_theta_rho`` solves
  for theta, rho of the per-layer times (a layer timed alone includes one session's fixed cost:
  subtract it first, as the host profiler does, or it is charged once per layer).
- per slice, not per layer: the device's fixed overhead (``layer_overhead_ms``, the key's
  historical name: once per slice, at static power) and the activations the slice reads and
  writes at its boundary over the memory bandwidth (at full power), charged with the transfer at
  the slice's first and last layer. Every per-layer term is a sum over the layer's nodes, so a
  finer layering never changes the cost of a slicing a coarser one allows.
- power: P = P_static(d, f) + P_dyn(l, d, f_max) * (V_f^2 f) / (V_max^2 f_max)   (Eq. 4-5)
  with P_dyn(l, d, f_max) = the device's dynamic power at f_max times the layer's activity
  (the share of its time spent computing or moving parameters rather than in node overhead).
- transfer: C = beta * MB + delta (ms) for the tensors entering / leaving a slice (Eq. 1-2);
  its energy is C times the transfer power (the device's ``transfer.power_mw`` or, by default,
  its full power at that state); beta, delta and the power are the device's, or a DVFS level's
  own where its ``transfer`` gives them (MOSAIC's alpha_{d,f}, beta_{d,f}); a remote device adds its link: bytes / bandwidth + rtt/2 at
  the link's tx (in) or rx (out) radio power at the given signal strength (AutoScale Eq. 4).

The formulas are written once, vectorised over layers and states, in
``hetcc.planners.hardware.cost_tables``: this module turns a target into its per-state numbers
(``device_params``) and calls it, for the analytical table and for a board's ``HardwareSpace``
(hardware knobs: core counts, memory-controller frequency) alike.

FLOPs count a multiply-add as 2 (hetcc.compiler.flops), the convention of peak GFLOP/s figures.
Units: ms, MHz, mW, mJ, bytes; MB = 10**6 bytes; GB/s = 10**9 bytes/s.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from hetcc.compiler.costtable import CostTable, layer_features
from hetcc.core.errors import TargetError
from hetcc.core.opclasses import OP_CLASSES
from hetcc.planners.hardware import (DeviceParams, HardwareSpace, Knob, cost_tables, dvfs_scale, latency_ms,
                                link_ms, transfer_ms)
from hetcc.compiler.program import Layer

if TYPE_CHECKING:  # pragma: no cover
    from hetcc.planners.problem import LayerFeatures
    from hetcc.targets import Device, Target

logger = logging.getLogger(__name__)


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


# --- a target as numbers -------------------------------------------------------------------------

def _require_model(target: "Target", d: "Device") -> None:
    if not d.has_throughput_model:
        raise TargetError(f"target {target.name!r} device {d.name!r} has no analytical throughput "
                          "(peak_gflops, mem_bandwidth_gbps, layer_overhead_ms: its per-slice overhead); "
                          + ("it is a measured target: profile it with onnxruntime instead"
                             if target.kind == "measured" else "add them to the target file"))
    if not d.power_model:
        raise TargetError(f"target {target.name!r} device {d.name!r} has no power model "
                          "(power_model = false); the analytical cost model needs one")


def _require_modelled(target: "Target") -> None:
    if target.kind != "modelled":
        raise TargetError(f"target {target.name!r} is {target.kind}, not modelled: its costs come "
                          "from profiling on the device, not from the analytical model")


def device_params(target: "Target", *, signal_dbm: float | None = None) -> DeviceParams:
    """The per-state numbers of ``target`` (states in ``target.states()`` order) with every
    knob at its most capable value. ``signal_dbm`` overrides the links' default signal."""
    _require_modelled(target)
    cols: dict[str, list[Any]] = {k: [] for k in (
        "device", "freq_mhz", "fmax_mhz", "dvfs_scale", "static_mw", "dynamic_mw", "peak_gflops",
        "mem_bandwidth_gbps", "layer_overhead_ms", "node_overhead_ms", "transfer_beta_ms_per_mb",
        "transfer_delta_ms", "transfer_power_mw", "link_bandwidth_mbps", "link_rtt_ms", "link_tx_mw",
        "link_rx_mw", "capacity_bytes", "int8_speedup", "activation_factor")}
    for d in target.devices:
        _require_model(target, d)
        k = len(d.dvfs)
        fmax = d.f_max_mhz
        if fmax is None:  # a fixed-frequency device with an undocumented clock: theta/f = time at f_max
            fmax, f = 1.0, np.ones(1)
        else:
            f = np.array([lvl.freq_mhz for lvl in d.dvfs], dtype=np.float64)
        volts = None if any(lvl.volt is None for lvl in d.dvfs) else np.array([lvl.volt for lvl in d.dvfs])
        transfer = [d.transfer_at(i) for i in range(k)]    # per level: MOSAIC's alpha/beta per frequency
        scale = dvfs_scale(volts, f, d.v_max if volts is not None else None, fmax)
        if d.link is not None:
            link = target.links[d.link]
            lbw, lrtt = link.bandwidth_mbps_at(signal_dbm), link.rtt_ms
            ltx, lrx = link.tx_power_mw_at(signal_dbm), link.rx_power_mw_at(signal_dbm)
        else:
            lbw = lrtt = ltx = lrx = np.nan
        per_state = {
            "device": [d.name] * k, "freq_mhz": list(f), "fmax_mhz": [fmax] * k, "dvfs_scale": list(scale),
            "static_mw": [lvl.static_power_mw for lvl in d.dvfs], "dynamic_mw": [d.dynamic_power_mw] * k,
            "peak_gflops": [[d.peak(c) for c in OP_CLASSES]] * k,
            "mem_bandwidth_gbps": [d.mem_bandwidth_gbps] * k, "layer_overhead_ms": [d.layer_overhead_ms] * k,
            "node_overhead_ms": [d.node_overhead_ms] * k,
            "transfer_beta_ms_per_mb": [tr[0] for tr in transfer],
            "transfer_delta_ms": [tr[1] for tr in transfer],
            "transfer_power_mw": [np.nan if tr[2] is None else tr[2] for tr in transfer],
            "link_bandwidth_mbps": [lbw] * k, "link_rtt_ms": [lrtt] * k, "link_tx_mw": [ltx] * k,
            "link_rx_mw": [lrx] * k,
            "capacity_bytes": [np.inf if d.capacity_bytes is None else float(d.capacity_bytes)] * k,
            "int8_speedup": [[d.int8_speedup(c) for c in OP_CLASSES]] * k,
            "activation_factor": [d.activation_factor] * k,
        }
        for key, vals in per_state.items():
            cols[key].extend(vals)
    return DeviceParams(base_power_mw=float(target.base_power_mw), **cols)


def state_legal(target: "Target", legal_dev: np.ndarray, L: int) -> np.ndarray:
    """The [L, D] legality mask expanded to [L, S]."""
    legal_dev = np.asarray(legal_dev, dtype=bool)
    D = len(target.devices)
    if legal_dev.shape != (L, D):
        raise ValueError(f"legal_dev has shape {legal_dev.shape}, expected ({L}, {D})")
    return legal_dev[:, np.array(target.state_device_index(), dtype=np.int64)].reshape(L, -1)


def knobs_of(target: "Target") -> tuple[Knob, ...]:
    """The target's knobs as numbers (hetcc.planners.hardware.Knob)."""
    return tuple(Knob(name=k.name, values=k.values, devices=k.devices, effect=k.effect,
                      params=dict(k.params), description=k.description) for k in target.knobs.values())


# --- the analytical cost table ------------------------------------------------------------------

def analytical_costs(layers: Sequence[Layer], target: "Target", legal_dev: np.ndarray,
                     *, signal_dbm: float | None = None) -> CostTable:
    """The L x S cost table of ``layers`` on ``target`` from FLOPs, bytes and device peaks, with
    every hardware knob at its most capable value.

    ``legal_dev`` is the [L, D] mask of the legality pass (D in ``target.devices`` order); it is
    expanded to states and also cleared where a layer alone exceeds the capacity (its parameters,
    plus its activations on a device with ``capacity_counts = "params+activations"``).
    ``signal_dbm`` overrides the links' default signal strength (remote devices).
    Illegal cells hold inf."""
    _require_modelled(target)
    layers = tuple(layers)
    legal = state_legal(target, legal_dev, len(layers))
    params = device_params(target, signal_dbm=signal_dbm)
    t = cost_tables(layer_features(layers), params, legal)
    return CostTable(layers=layers, states=target.states(), latency_ms=t["latency_ms"], power_mw=t["power_mw"],
                     transfer_in_ms=t["transfer_in_ms"], transfer_out_ms=t["transfer_out_ms"],
                     transfer_in_mj=t["transfer_in_mj"], transfer_out_mj=t["transfer_out_mj"],
                     legal=t["legal"], capacity_bytes=np.array(params.capacity_bytes),
                     base_power_mw=float(target.base_power_mw), source="analytical",
                     activation_factor=np.array(params.activation_factor)
                     if (params.activation_factor > 0).any() else None, communication=t["communication"])


def hardware_space(target: "Target", features: "LayerFeatures", legal_dev: np.ndarray,
                   *, signal_dbm: float | None = None) -> HardwareSpace | None:
    """The knob grid of ``target`` over layers with ``features`` (a problem's ``layer_features``)
    and the legality pass's [L, D] mask; None when the target has no knobs or is not modelled
    (a measured table cannot be recomputed for another configuration). Its default
    configuration's tables equal ``analytical_costs``."""
    if not target.knobs or target.kind != "modelled":
        return None
    L = int(np.asarray(features.values).shape[0])
    params = device_params(target, signal_dbm=signal_dbm)
    return HardwareSpace(knobs=knobs_of(target), features=features, params=params,
                         legal=state_legal(target, legal_dev, L))


def whole_model_ms(table: CostTable, state: int) -> float:
    """Latency of running every layer as one slice on ``state`` (inf when illegal there)."""
    if not table.problem().slice_legal(0, len(table.layers) - 1, state):
        return float("inf")
    return float(table.transfer_in_ms[0, state] + table.latency_ms[:, state].sum()
                 + table.transfer_out_ms[-1, state])


__all__ = ["analytical_costs", "device_params", "dvfs_scale", "fit_theta_rho", "hardware_space", "knobs_of",
           "latency_ms", "link_ms", "transfer_ms", "whole_model_ms", "OP_CLASSES"]
