"""Hardware knobs as numbers: the analytical cost formulas, vectorised, and the knob grid.

Numbers only (numpy; no onnx, no target files). ``hetcc.compiler.costmodel`` turns a target into a
``DeviceParams`` bundle once and calls ``cost_tables`` for its analytical table; a
``HardwareSpace`` holds the same bundle plus the board's knobs and recomputes the tables for any
knob configuration through the same ``cost_tables``: one implementation of the cost model.

The cost model (MOSAIC Eq. 1-5, as used by HERTI), per layer l and state s (device d at f):

    compute at f_max  t_c = sum over op classes of FLOPs / (peak GFLOP/s x 1e6)      [ms]
                      (a state whose 'dwconv' figures equal its 'conv' ones counts grouped
                      convolutions' FLOPs with the dense ones: the numbers of before the class)
    parameters        t_p = param bytes / (bandwidth GB/s x 1e6)                     [ms]
    overhead          o   = node_overhead x nodes                                    [ms]
    latency           T   = t_c f_max / f + o + t_p + stall (theta/f + rho, Eq. 3; stall: knobs)
    power             P   = P_static(f) + P_dyn x activity x V_f^2 f / (V_max^2 f_max)   (Eq. 4-5)
                      activity = (t_c f_max / f + t_p) / T   (the busy share of the time at f)

and per slice, charged at its first layer (transfer_in) and its last (transfer_out):

    slice overhead    layer_overhead (the key's historical name): once per slice, at P_static
    activations       its input bytes (in) / output bytes (out) over the memory bandwidth
                      (+ their stall), at full power
    transfer          C = beta x MB + delta (0 for no bytes)  (Eq. 1-2), plus, for a remote
                      device, bytes / link bandwidth + rtt / 2; energy C x transfer power (or
                      the device's power at f) plus the link time x radio tx (in) / rx (out)

Why per slice: a slice runs as one session on its device, so the fixed synchronisation cost is
paid once per slice, and the activations crossing the slice's boundary are what it reads from and
writes to memory as a unit (those inside it are its own business, however the planner's layers
cut it). Every per-layer term (FLOPs, nodes, parameter bytes) is a sum over the layer's nodes, so
splitting a layer into finer layers never changes the cost of a slicing that both layerings
allow (tests/planners/test_layering.py): finer layering only adds choices.

Knobs (``Knob.effect``), whose values are listed in monotone order (a later value is faster
and draws more power; the last one is the most capable, what the plain analytical table
assumes):

- ``active_cores`` (devices: CPU clusters; params ``max_cores``, ``parallel_fraction``): with
  n of N cores online a cluster's compute throughput is Amdahl's speedup(n) / speedup(N),
  speedup(n) = 1 / ((1 - p) + p / n); its static and dynamic power scale with n / N (offline
  cores are power-gated). 0 cores: the cluster runs nothing (its states become illegal).
- ``memory_frequency`` (params ``power_mw_at_max``): the memory-controller (EMC) clock f_emc
  scales every listed device's memory bandwidth by f_emc / f_emc_max: the memory-bound share
  t_m of its latency becomes t_m x f_emc_max / f_emc. The added time is a stall (it counts in
  the activity's denominator, not its numerator: a core waiting on DRAM draws static power, not
  full dynamic power). The board's base power, which includes the EMC and DRAM at the top level,
  falls by power_mw_at_max x (1 - f_emc / f_emc_max).

DVFS frequencies stay planner states (a column per device level), not knobs: a planner picks a
state per slice and the knob configuration once per plan.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from hetcc.core.opclasses import DEFAULT_CLASS, OP_CLASSES, REQUIRED_CLASSES, class_figures   # the order DeviceParams.peak_gflops holds them
from .problem import Communication, capacity_charge

#: the [L, S] tables ``cost_tables`` / ``HardwareSpace.tables`` return (plus ``legal``)
TABLES = ("latency_ms", "power_mw", "transfer_in_ms", "transfer_out_ms", "transfer_in_mj", "transfer_out_mj")
#: what a knob can do to the cost model
EFFECTS = ("active_cores", "memory_frequency")


# --- the scalar/array estimators (also used by measured cost tables and the profiler) ------------

def latency_ms(theta_ms_mhz: np.ndarray | float, rho_ms: np.ndarray | float,
               freq_mhz: np.ndarray | float) -> np.ndarray:
    """MOSAIC Eq. 3: T = theta/f + rho (theta in ms*MHz, rho in ms)."""
    return np.asarray(theta_ms_mhz, dtype=np.float64) / np.asarray(freq_mhz, dtype=np.float64) + rho_ms


def dvfs_scale(volt: np.ndarray | float | None, freq_mhz: np.ndarray | float,
               v_max: float | None, f_max_mhz: float) -> np.ndarray:
    """MOSAIC Eq. 5 factor (V_f^2 f) / (V_max^2 f_max); without voltages, f / f_max."""
    f = np.asarray(freq_mhz, dtype=np.float64)
    if volt is None or v_max is None:
        return f / f_max_mhz
    v = np.asarray(volt, dtype=np.float64)
    return (v * v * f) / (v_max * v_max * f_max_mhz)


def transfer_ms(nbytes: np.ndarray | float, beta_ms_per_mb: np.ndarray | float,
                delta_ms: np.ndarray | float) -> np.ndarray:
    """MOSAIC Eq. 1-2: C = beta * MB + delta (zero bytes cost nothing)."""
    b = np.asarray(nbytes, dtype=np.float64)
    return np.where(b > 0, beta_ms_per_mb * b / 1e6 + delta_ms, 0.0)


def link_ms(nbytes: np.ndarray | float, bandwidth_mbps: np.ndarray | float,
            rtt_ms: np.ndarray | float) -> np.ndarray:
    """Time to move ``nbytes`` over a wireless link: serialisation at the bandwidth + half an RTT."""
    b = np.asarray(nbytes, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, b * 8.0 / (bandwidth_mbps * 1e3) + rtt_ms / 2.0, 0.0)


# --- the per-state numbers of a board -------------------------------------------------------------

def _ro(a: Any, dtype: Any = np.float64) -> np.ndarray:
    arr = np.array(a, dtype=dtype)
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True)
class DeviceParams:
    """The analytical model's numbers for S device states (one row per state, in state order).

    ``freq_mhz`` / ``fmax_mhz``: the state's clock and its device's top clock (1 and 1 for a
    fixed device with an undocumented clock: theta/f is then the time at f_max);
    ``dvfs_scale``: MOSAIC Eq. 5 factor; ``peak_gflops``: [S, C] in OP_CLASSES order (an [S, 3]
    array of the REQUIRED_CLASSES gets the optional classes' columns from their DEFAULT_CLASS);
    ``transfer_power_mw``: NaN = the device's own power at that state; ``link_*``: NaN
    bandwidth = no link (a local device); ``activation_factor``: the share of a layer's
    activation bytes the state counts against ``capacity_bytes`` (0, the default: parameters
    only; ``hetcc.planners.problem.capacity_charge``)."""

    device: tuple[str, ...]
    freq_mhz: np.ndarray
    fmax_mhz: np.ndarray
    dvfs_scale: np.ndarray
    static_mw: np.ndarray
    dynamic_mw: np.ndarray
    peak_gflops: np.ndarray          # [S, C], C = len(OP_CLASSES)
    mem_bandwidth_gbps: np.ndarray
    layer_overhead_ms: np.ndarray
    node_overhead_ms: np.ndarray
    transfer_beta_ms_per_mb: np.ndarray
    transfer_delta_ms: np.ndarray
    transfer_power_mw: np.ndarray
    link_bandwidth_mbps: np.ndarray
    link_rtt_ms: np.ndarray
    link_tx_mw: np.ndarray
    link_rx_mw: np.ndarray
    capacity_bytes: np.ndarray
    base_power_mw: float
    mem_slowdown: Any = None         # [S] >= 1: memory time stretched by a slower memory clock (default 1)
    int8_speedup: Any = None         # [S, C] > 0: int8 over float throughput per op class (default 1)
    activation_factor: Any = None    # [S] >= 0: activation bytes counted against the capacity (default 0)

    def __post_init__(self) -> None:
        S = len(self.device)
        if self.mem_slowdown is None:
            object.__setattr__(self, "mem_slowdown", np.ones(S))
        if self.activation_factor is None:
            object.__setattr__(self, "activation_factor", np.zeros(S))
        if self.int8_speedup is None:
            object.__setattr__(self, "int8_speedup", np.ones((S, len(OP_CLASSES))))
        for f in dataclasses.fields(self):
            if f.name in ("device", "base_power_mw"):
                continue
            a = _ro(getattr(self, f.name))
            want = (S, len(OP_CLASSES)) if f.name in ("peak_gflops", "int8_speedup") else (S,)
            if f.name in ("peak_gflops", "int8_speedup") and a.shape == (S, len(REQUIRED_CLASSES)):
                a = _ro(_complete_classes(a))
            if a.shape != want:
                raise ValueError(f"DeviceParams.{f.name} has shape {a.shape}, expected {want}")
            object.__setattr__(self, f.name, a)
        object.__setattr__(self, "device", tuple(self.device))

    def __len__(self) -> int:
        return len(self.device)

    def columns(self, devices: Sequence[str]) -> np.ndarray:
        """[S] bool: the states of ``devices``."""
        want = set(devices)
        return np.array([d in want for d in self.device], dtype=bool)

    def replace(self, **changes: Any) -> "DeviceParams":
        return dataclasses.replace(self, **changes)


def _complete_classes(a: np.ndarray) -> np.ndarray:
    """[S, len(REQUIRED_CLASSES)] per-class columns -> [S, len(OP_CLASSES)]: an optional class
    takes its DEFAULT_CLASS's column."""
    cols = class_figures({c: a[:, i] for i, c in enumerate(REQUIRED_CLASSES)})
    return np.stack([cols[c] for c in OP_CLASSES], axis=1)


def _features(features: Any) -> dict[str, np.ndarray]:
    """The columns the cost model reads from a LayerFeatures (or a name -> [L] mapping). Older
    feature sets lack the int8, 'dwconv' and activation columns: nothing runs in int8, no node is
    a grouped convolution, no activation bytes."""
    col = features.column if hasattr(features, "column") else features.__getitem__
    out = {k: np.asarray(col(k), dtype=np.float64) for k in
           ("input_bytes", "output_bytes", "param_bytes", "nodes", *(f"{c}_flops" for c in REQUIRED_CLASSES))}
    optional = [f"{c}_flops" for c in OP_CLASSES if c not in REQUIRED_CLASSES]
    for name in (*optional, *(f"{c}_int8_flops" for c in OP_CLASSES), "activation_bytes"):
        try:
            out[name] = np.asarray(col(name), dtype=np.float64)
        except KeyError:
            out[name] = np.zeros_like(out["nodes"])
    return out


def compute_ms_at_fmax(x: Mapping[str, np.ndarray], p: DeviceParams) -> np.ndarray:
    """[L, S] compute time at f_max: FLOPs per op class (their int8 share at the int8 speed-up)
    over the effective peak. A state whose optional class (dwconv) has the same figures as its
    DEFAULT_CLASS (conv) adds that class's FLOPs to the default's before dividing, so a board
    without dwconv figures gets the numbers of before the class existed, bit for bit (FLOPs are
    whole numbers: their sums are exact)."""
    flops = np.stack([x[f"{c}_flops"] for c in OP_CLASSES], axis=1)                    # [L, C]
    int8 = np.stack([x[f"{c}_int8_flops"] for c in OP_CLASSES], axis=1)               # [L, C], part of flops
    L, S, C = flops.shape[0], len(p), len(OP_CLASSES)
    fl = np.broadcast_to((flops - int8)[:, None, :], (L, S, C)).copy()
    i8 = np.broadcast_to(int8[:, None, :], (L, S, C)).copy()
    for c, d in DEFAULT_CLASS.items():
        k, j = OP_CLASSES.index(c), OP_CLASSES.index(d)
        same = (p.peak_gflops[:, k] == p.peak_gflops[:, j]) & (p.int8_speedup[:, k] == p.int8_speedup[:, j])
        for a in (fl, i8):
            a[:, same, j] += a[:, same, k]
            a[:, same, k] = 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        return ((fl + i8 / p.int8_speedup[None, :, :]) / p.peak_gflops[None, :, :]).sum(axis=2) / 1e6


def cost_tables(features: Any, params: DeviceParams, legal: np.ndarray) -> dict[str, np.ndarray]:
    """The six [L, S] cost tables and ``legal`` of layers (``features``: a LayerFeatures) on the
    states of ``params`` (the formulas of the module docstring). ``legal`` [L, S] is cleared
    where a layer alone exceeds the state's capacity (its parameters, plus its activations where
    the state counts them: ``capacity_charge``); illegal cells hold inf."""
    x = _features(features)
    inb, outb, par = x["input_bytes"], x["output_bytes"], x["param_bytes"]
    L, S = par.shape[0], len(params)
    legal = np.asarray(legal, dtype=bool)
    if legal.shape != (L, S):
        raise ValueError(f"legal has shape {legal.shape}, expected ({L}, {S})")
    p = params
    t_comp_fmax = compute_ms_at_fmax(x, p)                                               # [L, S] ms at f_max
    theta = t_comp_fmax * p.fmax_mhz[None, :]                                            # ms*MHz
    slow = p.mem_slowdown[None, :]
    t_par = par[:, None] / (p.mem_bandwidth_gbps[None, :] * 1e6)                      # [L, S] ms
    overhead = p.node_overhead_ms[None, :] * x["nodes"][:, None]
    lat = theta / p.freq_mhz[None, :] + overhead + t_par * slow   # stall: t_par x (slowdown - 1)

    # busy at the state's own clock, so that latency x power = static x T + dynamic x busy time:
    # both add up over nodes (an activity measured at f_max would weight them by a per-layer ratio)
    busy = theta / p.freq_mhz[None, :] + t_par
    activity = np.divide(busy, lat, out=np.zeros_like(busy), where=lat > 0)
    pw = p.static_mw[None, :] + (p.dynamic_mw[None, :] * activity) * p.dvfs_scale[None, :]

    dev_power = p.static_mw + p.dynamic_mw * p.dvfs_scale                                # [S]
    tpow = np.where(np.isnan(p.transfer_power_mw), dev_power, p.transfer_power_mw)
    tin = transfer_ms(inb[:, None], p.transfer_beta_ms_per_mb[None, :], p.transfer_delta_ms[None, :])
    tout = transfer_ms(outb[:, None], p.transfer_beta_ms_per_mb[None, :], p.transfer_delta_ms[None, :])
    ein = tin * tpow[None, :] / 1000.0
    eout = tout * tpow[None, :] / 1000.0
    comm = [tin, tout, ein, eout]      # communication proper (Eq. 1-2, links below): ``Communication``
    # per slice: the fixed overhead (at static power) and the boundary activations' memory time
    # (busy at full dynamic power; a slower memory clock's stall at static power)
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
        bw = np.where(has_link, p.link_bandwidth_mbps, 1.0)[None, :]
        rtt = np.where(has_link, p.link_rtt_ms, 0.0)[None, :]
        lin = np.where(has_link[None, :], link_ms(inb[:, None], bw, rtt), 0.0)
        lout = np.where(has_link[None, :], link_ms(outb[:, None], bw, rtt), 0.0)
        link = (lin, lout, lin * np.where(has_link, p.link_tx_mw, 0.0)[None, :] / 1000.0,
                lout * np.where(has_link, p.link_rx_mw, 0.0)[None, :] / 1000.0)
        tin, tout, ein, eout = (a + l for a, l in zip((tin, tout, ein, eout), link))
        comm = [c + l for c, l in zip(comm, link)]      # the link is communication too

    legal = legal & (capacity_charge(par, x["activation_bytes"], p.activation_factor) <= p.capacity_bytes[None, :])
    comm = Communication(*(np.broadcast_to(np.nan_to_num(np.asarray(c, dtype=np.float64), nan=0.0, posinf=0.0),
                                           lat.shape) for c in comm))
    out = {"latency_ms": lat, "power_mw": pw, "transfer_in_ms": tin, "transfer_out_ms": tout,
           "transfer_in_mj": ein, "transfer_out_mj": eout}
    for k, a in out.items():
        a = np.array(a, dtype=np.float64)          # own, writable copy
        a[~legal] = np.inf
        out[k] = a
    out["legal"] = legal
    out["communication"] = comm
    return out


# --- knobs ---------------------------------------------------------------------------------------

def amdahl_speedup(n: float, parallel_fraction: float) -> float:
    """Amdahl's law: speedup on n cores when ``parallel_fraction`` of the work spreads (0 for n = 0)."""
    if n <= 0:
        return 0.0
    return 1.0 / ((1.0 - parallel_fraction) + parallel_fraction / n)


@dataclass(frozen=True)
class Knob:
    """A hardware setting chosen once per plan: its values in monotone order (later = faster and
    hungrier; the last is the default), the devices it affects and how (``effect`` in EFFECTS,
    with its numeric ``params``)."""

    name: str
    values: tuple[Any, ...]
    devices: tuple[str, ...]
    effect: str
    params: Mapping[str, float] = field(default_factory=dict)
    description: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", tuple(self.values))
        object.__setattr__(self, "devices", tuple(self.devices))
        object.__setattr__(self, "params", dict(self.params))
        if not self.values:
            raise ValueError(f"knob {self.name!r} has no values")
        if self.effect not in EFFECTS:
            raise ValueError(f"knob {self.name!r}: unknown effect {self.effect!r}; effects: {', '.join(EFFECTS)}")

    @property
    def default(self) -> Any:
        return self.values[-1]

    def position(self, value: Any) -> int:
        """The index of ``value`` in ``values`` (ValueError naming the valid values otherwise)."""
        for i, v in enumerate(self.values):
            if _same(v, value):
                return i
        raise ValueError(f"hardware knob {self.name!r}: {value!r} is not one of its values "
                         f"({', '.join(map(str, self.values))})")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        if isinstance(a, str) and isinstance(b, str):
            return a == b
        try:  # "2" from a command line matches 2, "1600" matches 1600.0
            return float(a) == float(b) and not isinstance(a, bool) and not isinstance(b, bool)
        except (TypeError, ValueError):
            return False
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b


def apply_knob(knob: Knob, value: Any, params: DeviceParams, col_legal: np.ndarray) -> DeviceParams:
    """``params`` with ``knob`` set to ``value`` (``col_legal`` [S] bool is cleared in place for
    states that can no longer run anything). The most capable value changes nothing."""
    cols = params.columns(knob.devices)
    if knob.effect == "active_cores":
        n, n_max = float(value), float(knob.params.get("max_cores", max(map(float, knob.values))))
        pf = float(knob.params["parallel_fraction"])
        if n <= 0:
            col_legal[cols] = False
        compute = amdahl_speedup(n, pf) / amdahl_speedup(n_max, pf) if n > 0 else 1.0
        share = n / n_max if n > 0 else 1.0
        return params.replace(
            peak_gflops=np.where(cols[:, None], params.peak_gflops * compute, params.peak_gflops),
            static_mw=np.where(cols, params.static_mw * share, params.static_mw),
            dynamic_mw=np.where(cols, params.dynamic_mw * share, params.dynamic_mw))
    if knob.effect == "memory_frequency":
        f, f_max = float(value), float(max(map(float, knob.values)))
        r = f / f_max
        return params.replace(
            mem_slowdown=np.where(cols, params.mem_slowdown / r, params.mem_slowdown),
            base_power_mw=params.base_power_mw - float(knob.params.get("power_mw_at_max", 0.0)) * (1.0 - r))
    raise ValueError(f"knob {knob.name!r}: unknown effect {knob.effect!r}")  # pragma: no cover


def capability(positions: Sequence[int]) -> tuple[int, ...]:
    """The tie-break key of a configuration given as positions in monotone order (knobs, DVFS
    levels: a higher position is at least as capable): the sum of the positions, then the positions
    themselves, first one most significant. A configuration that dominates another has the larger
    key, so ties go toward more capable hardware, never toward switching devices off."""
    pos = tuple(int(p) for p in positions)
    return (sum(pos), *pos)


@dataclass(frozen=True, eq=False)
class HardwareSpace:
    """A board's knob grid and the numbers to recompute a problem's tables for any configuration.

    ``features``: the problem's LayerFeatures [L, F]; ``params``: the per-state DeviceParams at
    the default configuration; ``legal``: [L, S] legality before knobs (legality pass and
    capacity). A configuration is a mapping knob name -> value."""

    knobs: tuple[Knob, ...]
    features: Any
    params: DeviceParams
    legal: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "knobs", tuple(self.knobs))
        object.__setattr__(self, "legal", _ro(self.legal, bool))
        names = [k.name for k in self.knobs]
        if len(set(names)) != len(names):
            raise ValueError(f"hardware knobs must have distinct names: {', '.join(names)}")
        for k in self.knobs:
            unknown = [d for d in k.devices if d not in set(self.params.device)]
            if unknown:
                raise ValueError(f"knob {k.name!r} affects unknown devices {', '.join(unknown)}")

    # -- the grid --------------------------------------------------------------------------------
    @property
    def names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.knobs)

    @property
    def size(self) -> int:
        """Number of configurations (the product of the knobs' value counts)."""
        return math.prod(len(k.values) for k in self.knobs)

    def knob(self, name: str) -> Knob:
        for k in self.knobs:
            if k.name == name:
                return k
        raise ValueError(f"unknown hardware knob {name!r}; knobs: {', '.join(self.names) or '(none)'}")

    def default_config(self) -> dict[str, Any]:
        """Every knob at its most capable value (what the plain analytical table assumes)."""
        return {k.name: k.default for k in self.knobs}

    def validate(self, config: Mapping[str, Any] | None) -> dict[str, Any]:
        """A complete configuration in knob order: knobs not given take their default, values
        given as strings ("2", "1600") match the listed value. ValueError names the bad knob and
        its valid values."""
        config = dict(config or {})
        for name in config:
            self.knob(name)
        out = {}
        for k in self.knobs:
            out[k.name] = k.values[k.position(config[k.name])] if k.name in config else k.default
        return out

    def positions(self, config: Mapping[str, Any]) -> tuple[int, ...]:
        """Each knob's index in its monotone order."""
        cfg = self.validate(config)
        return tuple(k.position(cfg[k.name]) for k in self.knobs)

    def index(self, config: Mapping[str, Any]) -> int:
        """The configuration's index in ``configs()`` order (mixed radix, the first knob most
        significant)."""
        i = 0
        for k, pos in zip(self.knobs, self.positions(config)):
            i = i * len(k.values) + pos
        return i

    def config_at(self, index: int) -> dict[str, Any]:
        """The inverse of ``index``."""
        if not 0 <= index < self.size:
            raise ValueError(f"configuration index {index} out of range 0..{self.size - 1}")
        out: dict[str, Any] = {}
        for k in reversed(self.knobs):
            index, pos = divmod(index, len(k.values))
            out[k.name] = k.values[pos]
        return {k.name: out[k.name] for k in self.knobs}

    def configs(self) -> Iterator[dict[str, Any]]:
        """Every configuration, in ``index`` order (the default one is last)."""
        for combo in itertools.product(*(k.values for k in self.knobs)):
            yield dict(zip(self.names, combo))

    def capability(self, config: Mapping[str, Any]) -> tuple[int, ...]:
        """A key ordering configurations from least to most capable (``capability``): planners
        break ties between equally good configurations toward the larger key."""
        return capability(self.positions(config))

    def dominates(self, a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
        """``a`` is at least as capable as ``b`` on every knob (so never slower and never lower in
        power); a configuration dominates itself."""
        return all(x >= y for x, y in zip(self.positions(a), self.positions(b)))

    # -- costs -----------------------------------------------------------------------------------
    def device_params(self, config: Mapping[str, Any]) -> tuple[DeviceParams, np.ndarray]:
        """The DeviceParams under ``config`` and the [S] mask of states that can still run."""
        cfg = self.validate(config)
        params = self.params
        col_legal = np.ones(len(params), dtype=bool)
        for k in self.knobs:
            if not _same(cfg[k.name], k.default):
                params = apply_knob(k, cfg[k.name], params, col_legal)
        return params, col_legal

    def tables(self, config: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The six [L, S] tables (TABLES), ``legal`` [L, S] and ``base_power_mw`` under ``config``
        (default: ``default_config()``), vectorised over layers and states."""
        params, col_legal = self.device_params(config or {})
        out: dict[str, Any] = cost_tables(self.features, params, self.legal & col_legal[None, :])
        out["base_power_mw"] = float(params.base_power_mw)
        return out

    def apply(self, problem: Any, config: Mapping[str, Any] | None = None) -> Any:
        """``problem`` with its tables recomputed for ``config`` (validated; missing knobs at their
        default) and ``hardware`` / ``hardware_config`` set."""
        cfg = self.validate(config)
        return problem.replace(**self.tables(cfg), hardware=self, hardware_config=cfg)

    def describe(self) -> str:
        return "; ".join(f"{k.name} ({k.effect}: {', '.join(k.devices)}) in "
                         f"{{{', '.join(map(str, k.values))}}}" for k in self.knobs)


__all__ = ["DeviceParams", "EFFECTS", "HardwareSpace", "Knob", "OP_CLASSES", "TABLES", "amdahl_speedup",
           "apply_knob", "capability", "compute_ms_at_fmax", "cost_tables", "dvfs_scale", "latency_ms", "link_ms", "transfer_ms"]
