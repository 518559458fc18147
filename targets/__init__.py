"""Target descriptions: one TOML file per board, loaded into frozen dataclasses and validated.

A target is data (after TVM's tag registry): devices with their execution provider, DVFS table,
power and throughput parameters, transfer coefficients, capacity and supported operators.
Legality that cannot be data is a small named predicate (after torch.fx ``OperatorSupport``),
registered here and named from the file. Every malformed file fails with a ``TargetError`` that
names the file and the key path ("hikey970.toml: devices.gpu.dvfs[2].volt: must be in (0, 2] V").

Schema ``hetcc.target/1`` (units are in the key names; MB = 10**6 bytes):

    schema = "hetcc.target/1"
    name, description: str
    kind = "modelled" | "measured"     # analytical cost model vs. costs profiled on the device
    base_power_mw: float >= 0          # drawn by the board for the whole inference
    [knobs]   <knob> = [values...]     # optional hardware knobs (core counts, EMC MHz, ...)
    [links.<name>]                     # optional wireless links to remote devices
        kind: str; signal_dbm: [ascending floats]; bandwidth_mbps, tx_power_mw, rx_power_mw:
        [floats, one per signal level]; rtt_ms: float; default_signal_dbm: float
    [devices.<name>]                   # in execution-preference order; the file order is kept
        kind = "cpu"|"gpu"|"npu"|"dsp"|"remote"; execution_provider: str
        provider_options: table (optional); affinity: [core ids] (optional, cpu only)
        description: str (optional); link: str (remote devices: the link they are reached by)
        power_model: bool (default true; false = no power figures, e.g. the measured host)
        dvfs = [{freq_mhz, volt, static_power_mw}, ...]   # ascending frequency; volt on every
                                       # level or none (then Eq. 5 scales with f / f_max alone)
          or, for a fixed frequency: freq_mhz (optional), volt (optional), static_power_mw
        dynamic_power_mw: float        # at f_max, fully busy
        peak_gflops = {conv, matmul, other}   # effective GFLOP/s at f_max (modelled targets)
        mem_bandwidth_gbps: float      # effective GB/s (modelled targets)
        layer_overhead_ms: float       # fixed cost per layer (modelled targets)
        node_overhead_ms: float        # fixed cost per ONNX node in a layer (optional, default 0):
                                       # kernel launches happen per node, not per layer
        transfer = {beta_ms_per_mb, delta_ms, power_mw (optional)}   # C = beta*MB + delta
        capacity_bytes: int (optional, per slice parameters; absent = unlimited)
        supported_ops: [op types] (optional, absent = all) ; unsupported_ops: [op types]
        dtypes: [element types it computes in] ; predicates: [registered predicate names]
"""
from __future__ import annotations

import difflib
import hashlib
import logging
import math
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

from hetcc.errors import TargetError

logger = logging.getLogger(__name__)

SCHEMA = "hetcc.target/1"
DEVICE_KINDS = ("cpu", "gpu", "npu", "dsp", "remote")
TARGET_KINDS = ("modelled", "measured")
OP_CLASSES = ("conv", "matmul", "other")
# Integer/bool element types carry shapes and indices; every execution provider handles them
# (ONNX Runtime places such nodes on the CPU inside a session), so ``dtypes`` does not list them
# and legality does not check them.
INDEX_DTYPES = frozenset({"int64", "int32", "bool"})
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
    voltage (None = undocumented, on every level of the device) and static power there."""

    freq_mhz: float | None
    volt: float | None
    static_power_mw: float | None


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
class Device:
    """One compute device of a board (a CPU cluster, GPU, NPU, DSP or a remote server)."""

    name: str
    kind: str
    execution_provider: str
    provider_options: Mapping[str, Any]
    affinity: tuple[int, ...] | None
    dvfs: tuple[DvfsLevel, ...]
    dynamic_power_mw: float | None
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
class Target:
    """A board: its devices (in file order), base power, hardware knobs and remote links."""

    name: str
    description: str
    kind: str
    path: Path
    sha256: str
    base_power_mw: float
    devices: tuple[Device, ...]
    knobs: Mapping[str, tuple[Any, ...]] = field(default_factory=lambda: MappingProxyType({}))
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

    def state_device_index(self) -> tuple[int, ...]:
        """For each state of ``states()``, the index of its device in ``devices``."""
        return tuple(i for i, d in enumerate(self.devices) for _ in d.dvfs)


# ---------------------------------------------------------------------------------------------
# Named legality predicates
# ---------------------------------------------------------------------------------------------

# A predicate gets the layer, its top-level onnx-ir nodes and the tensor table
# (name -> hetcc.program.TensorInfo) and returns None when the layer is fine, else a short reason.
Predicate = Callable[[Any, Sequence[Any], Mapping[str, Any]], "str | None"]
PREDICATES: dict[str, Predicate] = {}


def register_predicate(name: str) -> Callable[[Predicate], Predicate]:
    """Decorator: make a legality predicate available to target files under ``name``."""

    def deco(fn: Predicate) -> Predicate:
        PREDICATES[name] = fn
        return fn

    return deco


def _attr_int(node: Any, name: str, default: int) -> int:
    a = node.attributes.get(name)
    return a.as_int() if a is not None else default


@register_predicate("conv_group_1")
def _conv_group_1(layer: Any, nodes: Sequence[Any], tensors: Mapping[str, Any]) -> str | None:
    """Grouped and depthwise convolutions unsupported."""
    for n in nodes:
        if n.op_type in ("Conv", "ConvTranspose") and _attr_int(n, "group", 1) != 1:
            return f"grouped Conv (node {n.name!r}, group={_attr_int(n, 'group', 1)}) unsupported"
    return None


@register_predicate("max_rank_4")
def _max_rank_4(layer: Any, nodes: Sequence[Any], tensors: Mapping[str, Any]) -> str | None:
    """Every tensor the layer reads or writes has at most 4 dimensions (NCHW accelerators)."""
    for n in nodes:
        for v in list(n.inputs) + list(n.outputs):
            if v is None or not v.name:
                continue
            info = tensors.get(v.name)
            if info is not None and len(info.shape) > 4:
                return f"tensor {v.name!r} has rank {len(info.shape)} > 4 (node {n.name!r})"
    return None


@register_predicate("batch_1")
def _batch_1(layer: Any, nodes: Sequence[Any], tensors: Mapping[str, Any]) -> str | None:
    """The layer's inputs and outputs have batch size 1 (single-image accelerators)."""
    for name in tuple(layer.inputs) + tuple(layer.outputs):
        info = tensors.get(name)
        if info is not None and len(info.shape) >= 1 and info.shape[0] != 1:
            return f"tensor {name!r} has batch {info.shape[0]} != 1"
    return None


# ---------------------------------------------------------------------------------------------
# Loading and validation
# ---------------------------------------------------------------------------------------------


def builtin_targets() -> list[str]:
    """Names of the target files shipped with hetcc (``hetcc targets`` lists them)."""
    root = resources.files(__name__)
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".toml"))


def load_target(name_or_path: str | Path) -> Target:
    """A built-in target by name (``hikey970``) or a user's TOML file by path."""
    s = str(name_or_path)
    looks_like_path = isinstance(name_or_path, Path) or s.endswith(".toml") or "/" in s or "\\" in s
    if not looks_like_path:
        names = builtin_targets()
        if s not in names:
            close = difflib.get_close_matches(s, names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TargetError(f"unknown target {s!r}{hint}; built-in targets are "
                              f"{', '.join(names)}, or pass --target path/to/board.toml")
        res = resources.files(__name__).joinpath(f"{s}.toml")
        return _parse(res.read_bytes(), Path(str(res)), f"{s}.toml")
    path = Path(name_or_path)
    if not path.is_file():
        raise TargetError(f"{path}: target file not found; built-in targets are "
                          f"{', '.join(builtin_targets())}")
    return _parse(path.read_bytes(), path, str(path))


def _parse(data: bytes, path: Path, label: str) -> Target:
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise TargetError(f"{label}: not valid TOML: {e}") from None
    t = _Validator(label)
    target = t.target(doc, path, hashlib.sha256(data).hexdigest())
    logger.debug("loaded target %s from %s (%d devices, %d states)", target.name, path,
                 len(target.devices), len(target.states()))
    return target


class _Validator:
    """Turns a parsed TOML document into a Target, failing with the file and key path named."""

    def __init__(self, label: str) -> None:
        self.label = label

    # -- primitives ---------------------------------------------------------------------------
    def fail(self, key: str, msg: str) -> TargetError:
        return TargetError(f"{self.label}: {key}: {msg}" if key else f"{self.label}: {msg}")

    def table(self, doc: Mapping[str, Any], key: str, allowed: set[str], required: set[str]) -> None:
        for k in doc:
            if k not in allowed:
                where = f"{key}.{k}" if key else k
                raise self.fail(where, f"unknown key; allowed keys: {', '.join(sorted(allowed))}")
        for k in sorted(required):
            if k not in doc:
                raise self.fail(f"{key}.{k}" if key else k, "missing required key")

    def string(self, v: Any, key: str, choices: Sequence[str] | None = None) -> str:
        if not isinstance(v, str):
            raise self.fail(key, f"must be a string, got {type(v).__name__}")
        if choices is not None and v not in choices:
            raise self.fail(key, f"must be one of {', '.join(choices)}, got {v!r}")
        return v

    def number(self, v: Any, key: str, *, lo: float | None = 0.0, lo_open: bool = False,
               hi: float | None = None, unit: str = "") -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.fail(key, f"must be a number, got {type(v).__name__}")
        x = float(v)
        if not math.isfinite(x):
            raise self.fail(key, "must be finite")
        if lo is not None and (x <= lo if lo_open else x < lo):
            rng = f"({lo:g}, {hi:g}]" if hi is not None else None
            raise self.fail(key, f"must be in {rng} {unit}".rstrip() if rng else
                            f"must be {'>' if lo_open else '>='} {lo:g}{' ' + unit if unit else ''}")
        if hi is not None and x > hi:
            lb = "(" if lo_open else "["
            raise self.fail(key, f"must be in {lb}{lo:g}, {hi:g}] {unit}".rstrip())
        return x

    def integer(self, v: Any, key: str, lo: int = 0) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(key, f"must be an integer, got {type(v).__name__}")
        if v < lo:
            raise self.fail(key, f"must be >= {lo}")
        return v

    def boolean(self, v: Any, key: str) -> bool:
        if not isinstance(v, bool):
            raise self.fail(key, f"must be true or false, got {type(v).__name__}")
        return v

    def array(self, v: Any, key: str, nonempty: bool = True) -> list[Any]:
        if not isinstance(v, list):
            raise self.fail(key, f"must be an array, got {type(v).__name__}")
        if nonempty and not v:
            raise self.fail(key, "must not be empty")
        return v

    def mapping(self, v: Any, key: str) -> dict[str, Any]:
        if not isinstance(v, dict):
            raise self.fail(key, f"must be a table, got {type(v).__name__}")
        return v

    def strings(self, v: Any, key: str, nonempty: bool = True) -> tuple[str, ...]:
        return tuple(self.string(x, f"{key}[{i}]") for i, x in enumerate(self.array(v, key, nonempty)))

    def numbers(self, v: Any, key: str, **kw: Any) -> tuple[float, ...]:
        return tuple(self.number(x, f"{key}[{i}]", **kw) for i, x in enumerate(self.array(v, key)))

    # -- structure ----------------------------------------------------------------------------
    TOP = {"schema", "name", "description", "kind", "base_power_mw", "devices", "knobs", "links"}
    DEVICE = {"kind", "execution_provider", "provider_options", "affinity", "description", "link",
              "power_model", "dvfs", "freq_mhz", "volt", "static_power_mw", "dynamic_power_mw",
              "peak_gflops", "mem_bandwidth_gbps", "layer_overhead_ms", "node_overhead_ms", "transfer",
              "capacity_bytes",
              "supported_ops", "unsupported_ops", "dtypes", "predicates"}
    LEVEL = {"freq_mhz", "volt", "static_power_mw"}
    TRANSFER = {"beta_ms_per_mb", "delta_ms", "power_mw"}
    LINK = {"kind", "signal_dbm", "bandwidth_mbps", "tx_power_mw", "rx_power_mw", "rtt_ms",
            "default_signal_dbm"}

    def target(self, doc: dict[str, Any], path: Path, sha256: str) -> Target:
        self.table(doc, "", self.TOP, {"schema", "name", "description", "kind", "base_power_mw", "devices"})
        schema = self.string(doc["schema"], "schema")
        if schema != SCHEMA:
            raise self.fail("schema", f"must be {SCHEMA!r}, got {schema!r}")
        name = self.string(doc["name"], "name")
        if not name:
            raise self.fail("name", "must not be empty")
        description = self.string(doc["description"], "description")
        kind = self.string(doc["kind"], "kind", TARGET_KINDS)
        base = self.number(doc["base_power_mw"], "base_power_mw", unit="mW")
        links = {k: self.link(k, v) for k, v in self.mapping(doc.get("links", {}), "links").items()}
        knobs = self.knobs(doc.get("knobs", {}))
        devs_doc = self.mapping(doc["devices"], "devices")
        if not devs_doc:
            raise self.fail("devices", "must define at least one device")
        devices = tuple(self.device(k, v, kind, links) for k, v in devs_doc.items())
        return Target(name=name, description=description, kind=kind, path=path, sha256=sha256,
                      base_power_mw=base, devices=devices, knobs=MappingProxyType(knobs),
                      links=MappingProxyType(links))

    def knobs(self, v: Any) -> dict[str, tuple[Any, ...]]:
        out: dict[str, tuple[Any, ...]] = {}
        for k, vals in self.mapping(v, "knobs").items():
            arr = self.array(vals, f"knobs.{k}")
            for i, x in enumerate(arr):
                if isinstance(x, bool) or not isinstance(x, (int, float, str)):
                    raise self.fail(f"knobs.{k}[{i}]", f"must be a number or string, got {type(x).__name__}")
            if len(set(map(repr, arr))) != len(arr):
                raise self.fail(f"knobs.{k}", "values must be distinct")
            out[k] = tuple(arr)
        return out

    def link(self, name: str, doc: Any) -> Link:
        key = f"links.{name}"
        doc = self.mapping(doc, key)
        self.table(doc, key, self.LINK, self.LINK)
        sig = self.numbers(doc["signal_dbm"], f"{key}.signal_dbm", lo=None)
        if any(b <= a for a, b in zip(sig, sig[1:])):
            raise self.fail(f"{key}.signal_dbm", "must be strictly ascending")
        cols = {}
        for col, lo_open in (("bandwidth_mbps", True), ("tx_power_mw", False), ("rx_power_mw", False)):
            vals = self.numbers(doc[col], f"{key}.{col}", lo=0.0, lo_open=lo_open)
            if len(vals) != len(sig):
                raise self.fail(f"{key}.{col}", f"must have one value per signal level ({len(sig)}), got {len(vals)}")
            cols[col] = vals
        return Link(name=name, kind=self.string(doc["kind"], f"{key}.kind"), signal_dbm=sig,
                    rtt_ms=self.number(doc["rtt_ms"], f"{key}.rtt_ms", unit="ms"),
                    default_signal_dbm=self.number(doc["default_signal_dbm"], f"{key}.default_signal_dbm", lo=None),
                    **cols)

    def dvfs(self, key: str, doc: dict[str, Any], power_model: bool) -> tuple[DvfsLevel, ...]:
        if "dvfs" in doc:
            for k in ("freq_mhz", "volt", "static_power_mw"):
                if k in doc:
                    raise self.fail(f"{key}.{k}", "give either a dvfs table or a fixed freq_mhz/volt/"
                                    "static_power_mw, not both")
            rows = self.array(doc["dvfs"], f"{key}.dvfs")
            levels = []
            for i, row in enumerate(rows):
                rk = f"{key}.dvfs[{i}]"
                row = self.mapping(row, rk)
                req = {"freq_mhz"} | ({"static_power_mw"} if power_model else set())
                self.table(row, rk, self.LEVEL, req)
                levels.append(self.level(rk, row, power_model))
            with_volt = [lvl.volt is not None for lvl in levels]
            if any(with_volt) and not all(with_volt):
                i = with_volt.index(False)
                raise self.fail(f"{key}.dvfs[{i}].volt", "give a volt on every level or on none "
                                "(without volts, dynamic power scales with f alone)")
            for i in range(1, len(levels)):
                if levels[i].freq_mhz <= levels[i - 1].freq_mhz:  # type: ignore[operator]
                    raise self.fail(f"{key}.dvfs[{i}].freq_mhz", "levels must be in strictly ascending frequency")
                if (levels[i].volt or 0) < (levels[i - 1].volt or 0):
                    raise self.fail(f"{key}.dvfs[{i}].volt", "must not decrease as frequency rises")
            return tuple(levels)
        if power_model and "static_power_mw" not in doc:
            raise self.fail(f"{key}.dvfs", "missing required key (or a fixed freq_mhz with static_power_mw)")
        return (self.level(key, doc, power_model, freq_required=False),)

    def level(self, key: str, doc: dict[str, Any], power_model: bool, freq_required: bool = True) -> DvfsLevel:
        freq = doc.get("freq_mhz")
        if freq is None and freq_required:
            raise self.fail(f"{key}.freq_mhz", "missing required key")
        f = None if freq is None else self.number(freq, f"{key}.freq_mhz", lo=0.0, lo_open=True, unit="MHz")
        v = None if "volt" not in doc else self.number(doc["volt"], f"{key}.volt", lo=0.0, lo_open=True,
                                                        hi=2.0, unit="V")
        if "static_power_mw" in doc and not power_model:
            raise self.fail(f"{key}.static_power_mw", "not allowed with power_model = false")
        p = None if "static_power_mw" not in doc else self.number(doc["static_power_mw"],
                                                                  f"{key}.static_power_mw", unit="mW")
        return DvfsLevel(freq_mhz=f, volt=v, static_power_mw=p)

    def device(self, name: str, doc: Any, target_kind: str, links: Mapping[str, Link]) -> Device:
        key = f"devices.{name}"
        doc = self.mapping(doc, key)
        self.table(doc, key, self.DEVICE, {"kind", "execution_provider", "dtypes"})
        kind = self.string(doc["kind"], f"{key}.kind", DEVICE_KINDS)
        ep = self.string(doc["execution_provider"], f"{key}.execution_provider")
        opts = dict(self.mapping(doc.get("provider_options", {}), f"{key}.provider_options"))
        for k, v in opts.items():
            if isinstance(v, (dict, list)):
                raise self.fail(f"{key}.provider_options.{k}", "must be a string, number or boolean")
        affinity = None
        if "affinity" in doc:
            if kind != "cpu":
                raise self.fail(f"{key}.affinity", "only a cpu device has a core affinity")
            affinity = tuple(self.integer(c, f"{key}.affinity[{i}]")
                             for i, c in enumerate(self.array(doc["affinity"], f"{key}.affinity")))
            if len(set(affinity)) != len(affinity):
                raise self.fail(f"{key}.affinity", "core ids must be distinct")
        power_model = self.boolean(doc.get("power_model", True), f"{key}.power_model")
        levels = self.dvfs(key, doc, power_model)
        dyn = None
        if power_model:
            if "dynamic_power_mw" not in doc:
                raise self.fail(f"{key}.dynamic_power_mw", "missing required key (or power_model = false)")
            dyn = self.number(doc["dynamic_power_mw"], f"{key}.dynamic_power_mw", unit="mW")
        elif "dynamic_power_mw" in doc:
            raise self.fail(f"{key}.dynamic_power_mw", "not allowed with power_model = false")
        throughput_keys = ("peak_gflops", "mem_bandwidth_gbps", "layer_overhead_ms")
        if target_kind == "modelled":
            for k in throughput_keys:
                if k not in doc:
                    raise self.fail(f"{key}.{k}", "missing required key (a modelled target needs an "
                                    "analytical throughput for every device)")
            if not power_model:
                raise self.fail(f"{key}.power_model", "a modelled target needs a power model for every device")
        peak = None
        if "peak_gflops" in doc:
            pk = self.mapping(doc["peak_gflops"], f"{key}.peak_gflops")
            self.table(pk, f"{key}.peak_gflops", set(OP_CLASSES), set(OP_CLASSES))
            peak = MappingProxyType({c: self.number(pk[c], f"{key}.peak_gflops.{c}", lo=0.0, lo_open=True,
                                                    unit="GFLOP/s") for c in OP_CLASSES})
        bw = None if "mem_bandwidth_gbps" not in doc else self.number(
            doc["mem_bandwidth_gbps"], f"{key}.mem_bandwidth_gbps", lo=0.0, lo_open=True, unit="GB/s")
        ovh = None if "layer_overhead_ms" not in doc else self.number(
            doc["layer_overhead_ms"], f"{key}.layer_overhead_ms", unit="ms")
        novh = 0.0 if "node_overhead_ms" not in doc else self.number(
            doc["node_overhead_ms"], f"{key}.node_overhead_ms", unit="ms")
        link = None
        if "link" in doc:
            link = self.string(doc["link"], f"{key}.link")
            if link not in links:
                raise self.fail(f"{key}.link", f"unknown link {link!r}; define [links.{link}]"
                                + (f" (defined: {', '.join(links)})" if links else ""))
        elif kind == "remote":
            raise self.fail(f"{key}.link", "missing required key (a remote device is reached over a link)")
        if "transfer" in doc:
            tr = self.mapping(doc["transfer"], f"{key}.transfer")
            self.table(tr, f"{key}.transfer", self.TRANSFER, {"beta_ms_per_mb", "delta_ms"})
            beta = self.number(tr["beta_ms_per_mb"], f"{key}.transfer.beta_ms_per_mb", unit="ms/MB")
            delta = self.number(tr["delta_ms"], f"{key}.transfer.delta_ms", unit="ms")
            tpow = None if "power_mw" not in tr else self.number(tr["power_mw"], f"{key}.transfer.power_mw", unit="mW")
        elif link is not None:
            beta, delta, tpow = 0.0, 0.0, None
        else:
            raise self.fail(f"{key}.transfer", "missing required key")
        cap = None
        if "capacity_bytes" in doc:
            cap = self.integer(doc["capacity_bytes"], f"{key}.capacity_bytes", lo=1)
        supported = None
        if "supported_ops" in doc:
            supported = frozenset(self.strings(doc["supported_ops"], f"{key}.supported_ops"))
        unsupported = frozenset(self.strings(doc.get("unsupported_ops", []), f"{key}.unsupported_ops",
                                             nonempty=False))
        dtypes = self.strings(doc["dtypes"], f"{key}.dtypes")
        for i, dt in enumerate(dtypes):
            if dt not in KNOWN_DTYPES:
                raise self.fail(f"{key}.dtypes[{i}]", f"unknown element type {dt!r}; use ONNX names "
                                "such as float32, float16, int8")
        preds = self.strings(doc.get("predicates", []), f"{key}.predicates", nonempty=False)
        for i, p in enumerate(preds):
            if p not in PREDICATES:
                raise self.fail(f"{key}.predicates[{i}]", f"unknown predicate {p!r}; registered: "
                                f"{', '.join(sorted(PREDICATES))}")
        return Device(
            name=name, kind=kind, execution_provider=ep, provider_options=MappingProxyType(opts),
            affinity=affinity, dvfs=levels, dynamic_power_mw=dyn, peak_gflops=peak,
            mem_bandwidth_gbps=bw, layer_overhead_ms=ovh, transfer_beta_ms_per_mb=beta,
            transfer_delta_ms=delta, transfer_power_mw=tpow, node_overhead_ms=novh, capacity_bytes=cap,
            supported_ops=supported, unsupported_ops=unsupported, dtypes=frozenset(dtypes),
            predicates=preds, link=link,
            description=self.string(doc.get("description", ""), f"{key}.description"),
            power_model=power_model)


__all__ = ["State", "DvfsLevel", "Device", "Link", "Target", "PREDICATES", "Predicate", "register_predicate",
           "load_target", "builtin_targets", "SCHEMA", "DEVICE_KINDS", "INDEX_DTYPES"]
