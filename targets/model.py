"""The target model: frozen dataclasses a board file is loaded into (see ``schema`` for the keys)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from hetcc.core.errors import TargetError
from hetcc.core.opclasses import DEFAULT_CLASS, OP_CLASSES

SCHEMA = "hetcc.target/1"
DEVICE_KINDS = ("cpu", "gpu", "npu", "dsp", "remote")
TARGET_KINDS = ("modelled", "measured")
#: what a knob does in the cost model (hetcc.planners.hardware.EFFECTS)
KNOB_EFFECTS = ("active_cores", "memory_frequency")
# Integer/bool element types carry shapes and indices; every execution provider handles them
# (ONNX Runtime places such nodes on the CPU inside a session), so ``dtypes`` does not list them
# and legality does not check them.
INDEX_DTYPES = frozenset({"int64", "int32", "bool"})
#: the precisions a device's work may run at (``devices.<name>.precisions``; AutoScale Sec. 5.3's
#: quantisation actions), each the ONNX element type of a model converted to it
PRECISIONS = ("float32", "float16", "int8")
#: the dtypes that let a device run a precision (int8 models hold int8 or uint8 tensors: QDQ)
PRECISION_DTYPES: Mapping[str, frozenset[str]] = MappingProxyType({
    "float32": frozenset({"float32"}), "float16": frozenset({"float16"}), "int8": frozenset({"int8", "uint8"})})
#: what a device's ``capacity_bytes`` counts: a slice's parameters, or its parameters plus
#: ``activation_bytes_factor`` x the bytes of every tensor its nodes produce
CAPACITY_COUNTS = ("params", "params+activations")
KNOWN_DTYPES = frozenset({"float64", "float32", "float16", "bfloat16", "int8", "uint8", "int16",
                          "uint16", "uint32", "uint64", "float8e4m3fn", "float8e5m2", "int4",
                          "uint4", "string", "complex64", "complex128"}) | INDEX_DTYPES


@dataclass(frozen=True)
class State:
    """One device at one DVFS level: a column of the cost table."""

    device: str
    frequency_mhz: float | None
    volt: float | None = None
    is_fmax: bool = True
    kind: str = "cpu"


@dataclass(frozen=True)
class DvfsLevel:
    """One voltage/frequency level: frequency (None = unknown, e.g. the host CPU), supply
    voltage (None = undocumented, on every level of the device) and static power there; the
    transfer coefficients at this level where they differ from the device's (MOSAIC Eq. 1-2
    give alpha and beta per device and frequency; None = the device's ``transfer``)."""

    freq_mhz: float | None
    volt: float | None
    static_power_mw: float | None
    transfer_beta_ms_per_mb: float | None = None
    transfer_delta_ms: float | None = None
    transfer_power_mw: float | None = None


@dataclass(frozen=True)
class Link:
    """A wireless link to remote devices; bandwidth and radio power depend on signal strength
    (AutoScale, Eq. 4). Values between tabulated signal levels are interpolated linearly."""

    name: str
    kind: str
    signal_dbm: tuple[float, ...]
    bandwidth_mbps: tuple[float, ...]
    tx_power_mw: tuple[float, ...]
    rx_power_mw: tuple[float, ...]
    rtt_ms: float
    default_signal_dbm: float

    def _at(self, values: tuple[float, ...], signal_dbm: float | None) -> float:
        s = self.default_signal_dbm if signal_dbm is None else float(signal_dbm)
        xs = self.signal_dbm
        if s <= xs[0]:
            return values[0]
        if s >= xs[-1]:
            return values[-1]
        for i in range(1, len(xs)):
            if s <= xs[i]:
                w = (s - xs[i - 1]) / (xs[i] - xs[i - 1])
                return values[i - 1] + w * (values[i] - values[i - 1])
        return values[-1]  # pragma: no cover

    def bandwidth_mbps_at(self, signal_dbm: float | None = None) -> float:
        return self._at(self.bandwidth_mbps, signal_dbm)

    def tx_power_mw_at(self, signal_dbm: float | None = None) -> float:
        return self._at(self.tx_power_mw, signal_dbm)

    def rx_power_mw_at(self, signal_dbm: float | None = None) -> float:
        return self._at(self.rx_power_mw, signal_dbm)


@dataclass(frozen=True)
class DeviceControl:
    """How the OS sets a device's frequency (``devices.<name>.control``; hetcc.targets.controls):
    a cpufreq policy directory or a devfreq device directory. Codegen copies it into the
    manifest's type of the same name (the targets do not import the runtime)."""

    cpufreq: str | None = None
    devfreq: str | None = None


@dataclass(frozen=True)
class KnobControl:
    """How the OS sets a knob (``knobs.<name>.control``): CPU ids to hotplug, or a clock's rate
    file, the unit it takes and an optional lock file."""

    hotplug: tuple[int, ...] | None = None
    clock: str | None = None
    unit: str | None = None
    lock: str | None = None


@dataclass(frozen=True)
class Device:
    """One compute device of a board (a CPU cluster, GPU, NPU, DSP or a remote server)."""

    name: str
    kind: str
    execution_provider: str
    provider_options: Mapping[str, Any]
    affinity: tuple[int, ...] | None
    dvfs: tuple[DvfsLevel, ...]
    dynamic_power_mw: float | None
    #: effective GFLOP/s at f_max for every class of OP_CLASSES (an optional class the file does not
    #: give holds its DEFAULT_CLASS's figure: 'dwconv' the 'conv' one)
    peak_gflops: Mapping[str, float] | None
    mem_bandwidth_gbps: float | None
    layer_overhead_ms: float | None
    transfer_beta_ms_per_mb: float
    transfer_delta_ms: float
    transfer_power_mw: float | None = None
    node_overhead_ms: float = 0.0
    capacity_bytes: int | None = None
    supported_ops: frozenset[str] | None = None
    unsupported_ops: frozenset[str] = frozenset()
    dtypes: frozenset[str] = frozenset({"float32"})
    predicates: tuple[str, ...] = ()
    link: str | None = None
    description: str = ""
    power_model: bool = True
    endpoint: str | None = None      # remote devices: where the runtime would send the slice
    control: DeviceControl | None = None  # how the OS sets its frequency (runtime --apply-hardware)
    #: what ``capacity_bytes`` counts (CAPACITY_COUNTS) and, with activations, the share of their
    #: bytes counted (a fitted factor: a runtime's own accounting of the memory a model uses)
    capacity_counts: str = "params"
    activation_bytes_factor: float = 1.0
    #: effective int8 GOP/s at f_max per op class for integer kernels, as the file gives them
    #: (None = peak_gflops: no speed-up; an optional class may be absent, see ``int8_speedup``)
    int8_peak_gops: Mapping[str, float] | None = None
    #: ms the device pays to switch from one model's work to another's when models share it
    #: (concurrent workloads; hetcc.planners.multi reads it through PlanningProblem.switch_ms)
    switch_ms: float = 0.0
    #: latency factor of running the device's work at each precision of PRECISIONS, relative to
    #: the precision its ``peak_gflops`` assume (a planner that picks the precision per variant,
    #: e.g. AutoScale's, multiplies the device's float costs by it); empty = every precision its
    #: ``dtypes`` allow, at factor 1 (see ``precision_factors``)
    precisions: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))

    def precision_factors(self) -> Mapping[str, float]:
        """Precision -> latency factor (relative to the precision ``peak_gflops`` assume), in
        PRECISIONS order: the file's ``precisions`` table where it gives one (only those
        precisions run here), else every precision ``dtypes`` allow at factor 1 (no speed-up)."""
        if self.precisions:
            return MappingProxyType({p: self.precisions[p] for p in PRECISIONS if p in self.precisions})
        return MappingProxyType({p: 1.0 for p in PRECISIONS if PRECISION_DTYPES[p] & self.dtypes})

    def precision_factor(self, precision: str) -> float | None:
        """The latency factor of ``precision`` on this device (``precision_factors``), or None
        when the device does not run it."""
        return self.precision_factors().get(precision)

    @property
    def activation_factor(self) -> float:
        """The share of a layer's activation bytes counted against ``capacity_bytes`` (0 when
        it counts parameters only; hetcc.planners.problem.capacity_charge)."""
        return self.activation_bytes_factor if self.capacity_counts == "params+activations" else 0.0

    def peak(self, op_class: str) -> float:
        """The effective float throughput of ``op_class`` (the loader fills every class of
        OP_CLASSES: an absent optional one holds its DEFAULT_CLASS's figure)."""
        assert self.peak_gflops is not None
        return self.peak_gflops[op_class]

    def transfer_at(self, level: int) -> tuple[float, float, float | None]:
        """(beta ms/MB, delta ms, power mW or None = the device's own power) at DVFS level
        ``level``: the level's own ``transfer`` values where it gives them, else the device's."""
        lvl = self.dvfs[level]
        beta = self.transfer_beta_ms_per_mb if lvl.transfer_beta_ms_per_mb is None else lvl.transfer_beta_ms_per_mb
        delta = self.transfer_delta_ms if lvl.transfer_delta_ms is None else lvl.transfer_delta_ms
        power = self.transfer_power_mw if lvl.transfer_power_mw is None else lvl.transfer_power_mw
        return beta, delta, power

    def int8_speedup(self, op_class: str) -> float:
        """Integer kernels' throughput over float's for ``op_class`` (1 without int8 figures; a
        class without an int8 figure has its DEFAULT_CLASS's speed-up: int8 dwconv runs dwconv's
        float figure x int8 conv / conv)."""
        if self.int8_peak_gops is None or self.peak_gflops is None:
            return 1.0
        if op_class not in self.int8_peak_gops:
            return self.int8_speedup(DEFAULT_CLASS[op_class])
        return self.int8_peak_gops[op_class] / self.peak(op_class)

    @property
    def f_max_mhz(self) -> float | None:
        return self.dvfs[-1].freq_mhz

    @property
    def v_max(self) -> float | None:
        return self.dvfs[-1].volt

    @property
    def has_throughput_model(self) -> bool:
        return (self.peak_gflops is not None and self.mem_bandwidth_gbps is not None
                and self.layer_overhead_ms is not None)

    def supports_op(self, op_type: str) -> bool:
        if op_type in self.unsupported_ops:
            return False
        return self.supported_ops is None or op_type in self.supported_ops

    def supports_dtype(self, dtype: str) -> bool:
        return dtype in INDEX_DTYPES or dtype in self.dtypes


@dataclass(frozen=True)
class Knob:
    """A hardware setting chosen once per plan (``[knobs.<name>]``): its values in monotone order
    (a later value is faster and draws more power; the last is the most capable, what the
    analytical table assumes), the devices it affects and how it enters the cost model
    (``effect`` in KNOB_EFFECTS, with its numeric ``params``; see hetcc.planners.hardware)."""

    name: str
    values: tuple[Any, ...]
    devices: tuple[str, ...]
    effect: str
    params: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    description: str = ""
    control: KnobControl | None = None   # how the OS sets it (runtime --apply-hardware)

    @property
    def default(self) -> Any:
        return self.values[-1]


@dataclass(frozen=True)
class Target:
    """A board: its devices (in file order), base power, hardware knobs and remote links."""

    name: str
    description: str
    kind: str
    path: Path
    sha256: str
    base_power_mw: float
    devices: tuple[Device, ...]
    knobs: Mapping[str, Knob] = field(default_factory=lambda: MappingProxyType({}))
    links: Mapping[str, Link] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def device_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.devices)

    @property
    def has_power_model(self) -> bool:
        return all(d.power_model for d in self.devices)

    def device(self, name: str) -> Device:
        for d in self.devices:
            if d.name == name:
                return d
        raise TargetError(f"target {self.name!r} has no device {name!r}; "
                          f"its devices are {', '.join(self.device_names)}")

    def states(self) -> tuple[State, ...]:
        """Device states for planning: device by device (file order), frequency ascending;
        ``is_fmax`` marks each device's top level."""
        out: list[State] = []
        for d in self.devices:
            n = len(d.dvfs)
            for k, lvl in enumerate(d.dvfs):
                out.append(State(device=d.name, frequency_mhz=lvl.freq_mhz, volt=lvl.volt,
                                 is_fmax=(k == n - 1), kind=d.kind))
        return tuple(out)

    def state_index(self, device: str, freq_mhz: float | None = None) -> int | None:
        """The index in ``states()`` of ``device`` at ``freq_mhz`` (within 1e-6 relative; None =
        its top level), or None when the board has no such state: one rule for every reader of
        a (device, frequency) pair."""
        for s, st in enumerate(self.states()):
            if st.device != device:
                continue
            if freq_mhz is None:
                if st.is_fmax:
                    return s
            elif st.frequency_mhz is not None and abs(st.frequency_mhz - freq_mhz) <= 1e-6 * st.frequency_mhz:
                return s
        return None

    def state_device_index(self) -> tuple[int, ...]:
        """For each state of ``states()``, the index of its device in ``devices``."""
        return tuple(i for i, d in enumerate(self.devices) for _ in d.dvfs)


__all__ = ["CAPACITY_COUNTS", "DEVICE_KINDS", "DeviceControl", "DvfsLevel", "Device", "INDEX_DTYPES", "KNOB_EFFECTS", "KNOWN_DTYPES",
           "Knob", "PRECISIONS", "PRECISION_DTYPES", "KnobControl", "Link", "OP_CLASSES", "SCHEMA", "State", "TARGET_KINDS", "Target"]
