"""The target file schema as data, and the one validator it drives.

``KEYS`` lists every key a board file may hold: its path (``devices.*.dvfs[].volt``: ``*`` is a
name the file chooses, ``[]`` an array element), type, unit, range, whether it is required (or
required / allowed only under a named condition, ``CONDITIONS``) and what it means. ``validate``
walks a parsed TOML document against it; what one key cannot say alone (ascending DVFS levels,
references between tables, a knob's devices) is a named cross-key rule in ``RULES``, checked
after the walk. Every error is a ``TargetError`` "<file>: <key path>: <what is wrong>", one line,
and an unknown key names the allowed ones. ``build`` turns a valid document into the model's
frozen dataclasses; ``schema_doc()`` renders the table (``hetcc.targets`` documents the same).

Why one module: most of it is the ``KEYS`` table itself (one line per key, with unit, range and
doc); the validator that walks it is short.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping

from hetcc.core.errors import TargetError

from hetcc.core.opclasses import OP_CLASSES, REQUIRED_CLASSES, class_figures

from .model import (CAPACITY_COUNTS, DEVICE_KINDS, KNOB_EFFECTS, KNOWN_DTYPES, PRECISION_DTYPES, PRECISIONS, SCHEMA,
                    TARGET_KINDS, Device, DvfsLevel, Knob, Link, Target)
from .controls import CLOCK_UNITS, device_control, knob_control, rule_controls
from .predicates import PREDICATES

Fail = Callable[[str, str], TargetError]

#: what a device, knob or link may be called: it becomes part of slice file names, --hardware
#: KNOB=VALUE and provider overrides, so no '/', '=', ',', spaces or control characters
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"
#: TOML integers are 64-bit (tomllib reads longer ones; float() of one overflows)
INT_MAX = 2**63 - 1
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


@dataclass(frozen=True)
class Cond:
    """A condition on the enclosing tables (``ctx``: 'target', 'device', 'knob' documents) under
    which a key is required (``why_required`` completes "missing required key (...)") or allowed
    (``why_not`` is the error when it is present although the condition fails)."""

    test: Callable[[Mapping[str, Any]], bool]
    why_required: str = ""
    why_not: str = ""


CONDITIONS: dict[str, Cond] = {
    "modelled": Cond(lambda c: c["target"].get("kind") == "modelled",
                     why_required="a modelled target needs an analytical throughput for every device"),
    "power_model": Cond(lambda c: c["device"].get("power_model", True) is not False,
                        why_required="or power_model = false", why_not="not allowed with power_model = false"),
    "cpu": Cond(lambda c: c["device"].get("kind") == "cpu", why_not="only a cpu device has a core affinity"),
    "remote": Cond(lambda c: c["device"].get("kind") == "remote",
                   why_required="a remote device is reached over a link",
                   why_not="only a remote device (kind = \"remote\") has one"),
    "local": Cond(lambda c: "link" not in c["device"]),
    "active_cores": Cond(lambda c: c["knob"].get("effect") == "active_cores",
                         why_required='effect = "active_cores" needs it',
                         why_not='only for effect = "active_cores"'),
    "memory_frequency": Cond(lambda c: c["knob"].get("effect") == "memory_frequency",
                             why_not='only for effect = "memory_frequency"'),
    "cpufreq": Cond(lambda c: c["device"].get("kind") == "cpu", why_not="cpufreq sets cpu devices (use devfreq)"),
    "on_board": Cond(lambda c: c["device"].get("kind") != "remote",
                     why_not="a remote device is not set from this board"),
    "capacity": Cond(lambda c: "capacity_bytes" in c["device"],
                     why_not="only with capacity_bytes (the limit it says how to count against)"),
    "counts_activations": Cond(lambda c: c["device"].get("capacity_counts") == "params+activations",
                               why_not='only with capacity_counts = "params+activations"'),
    "clock": Cond(lambda c: "clock" in (c["knob"].get("control") or {}),
                  why_required="a clock needs the unit its file takes", why_not="only with clock"),
}


@dataclass(frozen=True)
class Key:
    """One key of the schema.

    ``type``: str | number | int | bool | scalar (str, number or bool) | knob_value (number or
    str) | table | array. ``lo``/``hi`` bound numbers (``lo_open``: excluded); ``choices`` (a
    tuple or a callable returning the names) bounds strings, ``what`` names them in errors.
    ``required``: True or a CONDITIONS name; ``only_if``: a CONDITIONS name."""

    path: str
    type: str
    doc: str
    unit: str = ""
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    required: bool | str = False
    only_if: str | None = None
    choices: tuple[str, ...] | Callable[[], Any] | None = None
    what: str = ""
    nonempty: bool = False
    empty_msg: str = "must not be empty"
    hint: str = ""                     # added to a wrong-type error: what the value should hold

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    @property
    def parent(self) -> str:
        return self.path.rsplit(".", 1)[0] if "." in self.path else ""

    def range_text(self) -> str:
        if self.lo is None and self.hi is None:
            return ""
        lo = "-inf" if self.lo is None else f"{self.lo:g}"
        if self.hi is None:
            return f"{'>' if self.lo_open else '>='} {lo}"
        return f"{'(' if self.lo_open else '['}{lo}, {self.hi:g}]"


def _num(path: str, doc: str, unit: str, lo: float | None = 0.0, hi: float | None = None,
         lo_open: bool = False, **kw: Any) -> Key:
    return Key(path, "number", doc, unit=unit, lo=lo, hi=hi, lo_open=lo_open, **kw)


KEYS: tuple[Key, ...] = (
    # -- the board -------------------------------------------------------------------------------
    Key("schema", "str", f'the schema version, "{SCHEMA}"', required=True, choices=(SCHEMA,)),
    Key("name", "str", "the target's name (a built-in's is its file name)", required=True, nonempty=True),
    Key("description", "str", "one line for `hetcc targets`", required=True),
    Key("kind", "str", "modelled: analytical cost model; measured: costs profiled on the device",
        required=True, choices=TARGET_KINDS),
    _num("base_power_mw", "drawn by the board outside the compute devices for the whole inference", "mW",
         required=True),
    # -- knobs -----------------------------------------------------------------------------------
    Key("knobs", "table", "hardware settings chosen once per plan (EvoSh's hardware configuration)"),
    Key("knobs.*", "table", "one knob", hint="values, devices, effect and the effect's parameters"),
    Key("knobs.*.description", "str", "what the knob sets on the board"),
    Key("knobs.*.values", "array", "its values in monotone order: a later value is faster and draws more "
        "power; the last is the default (what the analytical table assumes)", required=True, nonempty=True),
    Key("knobs.*.values[]", "knob_value", "a value (number or string)"),
    Key("knobs.*.devices", "array", "the devices it affects", required=True, nonempty=True),
    Key("knobs.*.devices[]", "str", "a device name"),
    Key("knobs.*.effect", "str", "how it enters the cost model: active_cores (a CPU cluster's online cores: "
        "Amdahl speedup on compute, power x n/N, 0 = the cluster runs nothing) or memory_frequency (EMC "
        "clock: every listed device's memory bandwidth x f/f_max, base power less power_mw_at_max x "
        "(1 - f/f_max))", required=True, choices=KNOB_EFFECTS, what="effect"),
    _num("knobs.*.parallel_fraction", "Amdahl parallel fraction of a layer's compute over the cluster's cores",
         "", lo=0.0, hi=1.0, required="active_cores", only_if="active_cores"),
    _num("knobs.*.power_mw_at_max", "memory controller + DRAM power at the top value, part of base_power_mw",
         "mW", only_if="memory_frequency"),
    Key("knobs.*.control", "table", "how the OS sets the knob when the runtime applies a plan's hardware "
        "(hetcc run --apply-hardware; hetcc.targets.controls); absent = not applied", nonempty=True,
        empty_msg="give hotplug (active_cores) or clock (memory_frequency)", hint="hotplug, or clock and unit"),
    Key("knobs.*.control.hotplug", "array", "CPU ids: a value n puts the first n online "
        "(/sys/devices/system/cpu/cpuN/online), the rest offline", only_if="active_cores", nonempty=True),
    Key("knobs.*.control.hotplug[]", "int", "a CPU id (cpuN)", lo=0),
    Key("knobs.*.control.clock", "str", "the clock's rate file (absolute path) the value is written to",
        only_if="memory_frequency"),
    Key("knobs.*.control.unit", "str", "the unit the clock file takes (the knob's values are MHz)",
        required="clock", only_if="clock", choices=CLOCK_UNITS),
    Key("knobs.*.control.lock", "str", "a file written 1 before the rate so it holds (BPMP's mrq_rate_locked); "
        "restored after", only_if="clock"),
    # -- links -----------------------------------------------------------------------------------
    Key("links", "table", "wireless links to remote devices (AutoScale Eq. 4)"),
    Key("links.*", "table", "one link"),
    Key("links.*.kind", "str", "wifi, wifi-direct, lte, ...", required=True),
    Key("links.*.signal_dbm", "array", "signal strengths tabulated, strictly ascending", required=True,
        nonempty=True),
    _num("links.*.signal_dbm[]", "a signal strength", "dBm", lo=None),
    Key("links.*.bandwidth_mbps", "array", "goodput per signal level", required=True, nonempty=True),
    _num("links.*.bandwidth_mbps[]", "goodput", "Mbit/s", lo_open=True),
    Key("links.*.tx_power_mw", "array", "radio power sending, per signal level", required=True, nonempty=True),
    _num("links.*.tx_power_mw[]", "radio power sending", "mW"),
    Key("links.*.rx_power_mw", "array", "radio power receiving, per signal level", required=True, nonempty=True),
    _num("links.*.rx_power_mw[]", "radio power receiving", "mW"),
    _num("links.*.rtt_ms", "round trip time (half is paid per transfer)", "ms", required=True),
    _num("links.*.default_signal_dbm", "signal strength unless --signal-dbm says otherwise", "dBm", lo=None,
         required=True),
    # -- devices ---------------------------------------------------------------------------------
    Key("devices", "table", "compute devices in execution-preference order (file order is kept)",
        required=True, nonempty=True, empty_msg="must define at least one device"),
    Key("devices.*", "table", "one device"),
    Key("devices.*.kind", "str", "what it is", required=True, choices=DEVICE_KINDS),
    Key("devices.*.execution_provider", "str", "the ONNX Runtime execution provider", required=True),
    Key("devices.*.provider_options", "table", "options passed to the execution provider"),
    Key("devices.*.provider_options.*", "scalar", "an option value"),
    Key("devices.*.affinity", "array", "core ids a CPU device's sessions are pinned to", only_if="cpu",
        nonempty=True),
    Key("devices.*.affinity[]", "int", "a core id", lo=0),
    Key("devices.*.description", "str", "one line"),
    Key("devices.*.link", "str", "remote devices: the [links.<name>] they are reached by", required="remote"),
    Key("devices.*.endpoint", "str", 'remote devices: where the runtime would send the slice, '
        '"scheme://host:port" (e.g. "tcp://edge.local:7070")', only_if="remote"),
    Key("devices.*.control", "table", "how the OS sets its frequency when the runtime applies a plan's "
        "hardware (hetcc.targets.controls); absent = not set", only_if="on_board", nonempty=True,
        empty_msg="give cpufreq or devfreq", hint="cpufreq or devfreq"),
    Key("devices.*.control.cpufreq", "str", "a cpufreq policy directory: scaling_min_freq = scaling_max_freq "
        "(kHz)", only_if="cpufreq"),
    Key("devices.*.control.devfreq", "str", "a devfreq device directory: min_freq = max_freq (Hz)"),
    Key("devices.*.power_model", "bool", "false = no power figures (e.g. the measured host); default true"),
    Key("devices.*.dvfs", "array", "DVFS levels, ascending frequency; volt on every level or none (then "
        "MOSAIC Eq. 5 scales with f / f_max alone). Or, for a fixed clock, freq_mhz / volt / "
        "static_power_mw on the device", nonempty=True),
    Key("devices.*.dvfs[]", "table", "one level"),
    _num("devices.*.dvfs[].freq_mhz", "clock", "MHz", lo_open=True, required=True),
    _num("devices.*.dvfs[].volt", "supply voltage", "V", hi=2.0, lo_open=True),
    _num("devices.*.dvfs[].static_power_mw", "static power at this level", "mW", required="power_model",
         only_if="power_model"),
    Key("devices.*.dvfs[].transfer", "table", "the transfer coefficients at this level where they differ from "
        "the device's transfer (MOSAIC Eq. 1-2: alpha, beta per device and frequency); a key it does not give "
        "is the device's", nonempty=True, empty_msg="give beta_ms_per_mb, delta_ms or power_mw (or leave it out)",
        hint="beta_ms_per_mb, delta_ms, power_mw"),
    _num("devices.*.dvfs[].transfer.beta_ms_per_mb", "per MB (10**6 bytes) at this level", "ms/MB"),
    _num("devices.*.dvfs[].transfer.delta_ms", "per transfer at this level", "ms"),
    _num("devices.*.dvfs[].transfer.power_mw", "power while transferring at this level", "mW"),
    _num("devices.*.freq_mhz", "fixed clock (no dvfs table; optional: absent = undocumented)", "MHz",
         lo_open=True),
    _num("devices.*.volt", "fixed supply voltage (no dvfs table)", "V", hi=2.0, lo_open=True),
    _num("devices.*.static_power_mw", "fixed static power (no dvfs table)", "mW", only_if="power_model"),
    _num("devices.*.dynamic_power_mw", "dynamic power at f_max, fully busy", "mW", required="power_model",
         only_if="power_model"),
    Key("devices.*.peak_gflops", "table", "effective GFLOP/s at f_max per op class", required="modelled"),
    *(_num(f"devices.*.peak_gflops.{c}", f"effective {c} throughput at f_max", "GFLOP/s", lo_open=True,
           required=True) for c in REQUIRED_CLASSES),
    _num("devices.*.peak_gflops.dwconv", "effective throughput at f_max of depthwise and grouped convolutions "
         "(Conv, ConvTranspose, QLinearConv, ConvInteger with group > 1); absent = the conv figure",
         "GFLOP/s", lo_open=True),
    _num("devices.*.peak_gflops.pwconv", "effective throughput at f_max of dense 1x1 (pointwise) convolutions; "
         "absent = the conv figure", "GFLOP/s", lo_open=True),
    _num("devices.*.peak_gflops.dwconv_large", "effective throughput at f_max of depthwise and grouped "
         "convolutions with a kernel side above 3 (e.g. 5x5: runtimes hand-optimise only 3x3); absent = the "
         "dwconv figure", "GFLOP/s", lo_open=True),
    _num("devices.*.peak_gflops.pool", "effective throughput at f_max of pooling ops (MaxPool, AveragePool, "
         "their global forms); absent = the other figure", "GFLOP/s", lo_open=True),
    Key("devices.*.int8_peak_gops", "table", "effective int8 GOP/s at f_max per op class, for integer "
        "kernels (QLinearConv, ConvInteger, QDQ groups); absent = peak_gflops (no int8 speed-up)"),
    *(_num(f"devices.*.int8_peak_gops.{c}", f"effective int8 {c} throughput at f_max", "GOP/s", lo_open=True,
           required=True) for c in REQUIRED_CLASSES),
    _num("devices.*.int8_peak_gops.dwconv", "effective int8 throughput at f_max of depthwise and grouped "
         "convolutions; absent = the conv class's int8 speed-up (int8 conv / conv) times the dwconv figure",
         "GOP/s", lo_open=True),
    *(_num(f"devices.*.int8_peak_gops.{c}", f"effective int8 {c} throughput at f_max; absent = the {d} class's "
           f"int8 speed-up times the {c} figure", "GOP/s", lo_open=True) for c, d in (("pwconv", "conv"),
                                                                                   ("dwconv_large", "dwconv"),
                                                                                   ("pool", "other"))),
    _num("devices.*.mem_bandwidth_gbps", "effective memory bandwidth", "GB/s", lo_open=True, required="modelled"),
    _num("devices.*.layer_overhead_ms", "fixed cost per layer", "ms", required="modelled"),
    _num("devices.*.node_overhead_ms", "fixed cost per ONNX node of a layer (kernel launches); default 0", "ms"),
    _num("devices.*.switch_ms", "what the device pays to switch from one model's work to another's when several "
         "models share it (a concurrent workload: reloading the incoming model's weights and data); default 0",
         "ms"),
    Key("devices.*.transfer", "table", "C = beta x MB + delta for the tensors entering / leaving a slice "
        "(MOSAIC Eq. 1-2); optional on a device reached over a link", required="local"),
    _num("devices.*.transfer.beta_ms_per_mb", "per MB (10**6 bytes)", "ms/MB", required=True),
    _num("devices.*.transfer.delta_ms", "per transfer", "ms", required=True),
    _num("devices.*.transfer.power_mw", "power while transferring (default: the device's power at f)", "mW"),
    Key("devices.*.capacity_bytes", "int", "bytes one slice may hold, counted as capacity_counts says "
        "(absent = unlimited)", lo=1),
    Key("devices.*.capacity_counts", "str", "what a slice holds against capacity_bytes: params (its "
        "parameters; the default) or params+activations (its parameters plus activation_bytes_factor x the "
        "bytes of every tensor its nodes produce, in the element type the model holds them in: a runtime that reports "
        "the memory a model uses, e.g. TensorFlow Lite on MOSAIC's NPU)", only_if="capacity",
        choices=CAPACITY_COUNTS),
    _num("devices.*.activation_bytes_factor", "the share of the activation bytes counted (a fitted factor; "
         "default 1)", "", lo_open=True, only_if="counts_activations"),
    Key("devices.*.supported_ops", "array", "op types it runs (absent = all)", nonempty=True),
    Key("devices.*.supported_ops[]", "str", "an ONNX op type"),
    Key("devices.*.unsupported_ops", "array", "op types it does not run"),
    Key("devices.*.unsupported_ops[]", "str", "an ONNX op type"),
    Key("devices.*.dtypes", "array", "element types it computes in (ONNX names; index types are implied)",
        required=True, nonempty=True),
    Key("devices.*.dtypes[]", "str", "an ONNX element type", choices=tuple(sorted(KNOWN_DTYPES)),
        what="element type"),
    Key("devices.*.precisions", "table", "latency factor of running the device's work at a precision, relative to "
        "the precision its peak_gflops assume (e.g. { float16 = 1.0, float32 = 2.0 } on a GPU rated at FP16): the "
        "precisions a planner that picks one per variant (autoscale) may use here; absent = every precision dtypes "
        "allow, at factor 1", nonempty=True, empty_msg="give a factor per precision (float32, float16, int8) or "
        "leave the table out", hint="float32, float16 and/or int8 = factor"),
    *(_num(f"devices.*.precisions.{p}", f"latency factor of {p} work relative to the peak_gflops precision "
           f"(needs {' or '.join(sorted(PRECISION_DTYPES[p]))} in dtypes)", "", lo_open=True) for p in PRECISIONS),
    Key("devices.*.predicates", "array", "registered legality predicates (hetcc.targets.PREDICATES)"),
    Key("devices.*.predicates[]", "str", "a predicate name", choices=lambda: sorted(PREDICATES), what="predicate"),
)

_BY_PATH: dict[str, Key] = {k.path: k for k in KEYS}
_CHILDREN: dict[str, list[Key]] = {}
for _k in KEYS:
    if not _k.path.endswith("[]"):
        _CHILDREN.setdefault(_k.parent, []).append(_k)


def schema_doc() -> str:
    """The key table as text: path, type, unit, range, required, meaning."""
    lines = []
    for k in KEYS:
        req = ("required" if k.required is True else f"required if {k.required}" if k.required else "optional")
        if k.only_if:
            req += f", only if {k.only_if}"
        choices = k.choices() if callable(k.choices) else k.choices
        extra = [x for x in (k.unit, k.range_text(), ("one of " + ", ".join(choices)) if choices else "") if x]
        lines.append(f"{k.path}: {k.type}{' [' + '; '.join(extra) + ']' if extra else ''} ({req}) - {k.doc}")
    return "\n".join(lines)


# --- the generic validator ------------------------------------------------------------------------

class _Walker:
    def __init__(self, label: str) -> None:
        self.label = label

    def fail(self, key: str, msg: str) -> TargetError:
        return TargetError(f"{self.label}: {key}: {msg}" if key else f"{self.label}: {msg}")

    def printable(self, v: str, path: str) -> None:
        bad = _CONTROL.search(v)
        if bad:
            raise self.fail(path, f"holds the control character {bad.group()!r} (a NUL, newline, escape, ...); "
                            "write it on one line without control characters")

    def int_range(self, v: Any, path: str) -> None:
        if isinstance(v, int) and not -INT_MAX - 1 <= v <= INT_MAX:
            raise self.fail(path, "must be within the 64-bit integer range of TOML (about +-9.2e18); give a realistic value")

    def scalar(self, v: Any, path: str) -> None:
        if isinstance(v, str):
            self.printable(v, path)
        elif isinstance(v, int):
            self.int_range(v, path)
        elif isinstance(v, float) and not math.isfinite(v):
            raise self.fail(path, "must be finite")

    def table(self, doc: Mapping[str, Any], pattern: str, path: str, ctx: dict[str, Any]) -> None:
        children = _CHILDREN.get(pattern, [])
        named = [k for k in children if k.name == "*"]
        if named:  # a table of named entries
            for name, value in doc.items():
                if pattern in ("devices", "knobs", "links") and not re.fullmatch(NAME_PATTERN, name):
                    shown = name if len(name) <= 40 else name[:37] + "..."
                    raise self.fail(f"{path}.{shown!r}", f"{pattern[:-1]} names are 1-64 letters, digits, '_', "
                                    "'.' or '-', starting with a letter or digit (they name slice files and "
                                    "--hardware values); rename it")
                sub = dict(ctx)
                if pattern in ("devices", "knobs"):
                    sub["device" if pattern == "devices" else "knob"] = value if isinstance(value, dict) else {}
                self.value(value, named[0], f"{path}.{name}" if path else name, sub)
            return
        allowed = {k.name for k in children}
        for name in doc:
            if name not in allowed:
                where = f"{path}.{name}" if path else name
                raise self.fail(where, f"unknown key; allowed keys: {', '.join(sorted(allowed))}")
        # in table order, so a condition reads sibling keys already checked (kind before link)
        for k in children:
            where = f"{path}.{k.name}" if path else k.name
            if k.name not in doc:
                if k.required is True:
                    raise self.fail(where, "missing required key")
                if isinstance(k.required, str):
                    cond = CONDITIONS[k.required]
                    if cond.test(ctx):
                        raise self.fail(where, "missing required key"
                                        + (f" ({cond.why_required})" if cond.why_required else ""))
                continue
            if k.only_if and not CONDITIONS[k.only_if].test(ctx):
                raise self.fail(where, CONDITIONS[k.only_if].why_not)
            self.value(doc[k.name], k, where, ctx)

    def value(self, v: Any, k: Key, path: str, ctx: dict[str, Any]) -> None:
        t = k.type
        if t == "table":
            if not isinstance(v, dict):
                hint = f" ({k.hint})" if k.hint else ""
                raise self.fail(path, f"must be a table{hint}, got {type(v).__name__}")
            if k.nonempty and not v:
                raise self.fail(path, k.empty_msg)
            self.table(v, k.path, path, ctx)
        elif t == "array":
            if not isinstance(v, list):
                raise self.fail(path, f"must be an array, got {type(v).__name__}")
            if k.nonempty and not v:
                raise self.fail(path, k.empty_msg)
            item = _BY_PATH[k.path + "[]"]
            for i, x in enumerate(v):
                self.value(x, item, f"{path}[{i}]", ctx)
        elif t == "str":
            if not isinstance(v, str):
                raise self.fail(path, f"must be a string, got {type(v).__name__}")
            self.printable(v, path)
            if k.nonempty and not v:
                raise self.fail(path, k.empty_msg)
            choices = k.choices() if callable(k.choices) else k.choices
            if choices is not None and v not in choices:
                if k.what:
                    raise self.fail(path, f"unknown {k.what} {v!r}; known: {', '.join(choices)}")
                if len(choices) == 1:
                    raise self.fail(path, f"must be {choices[0]!r}, got {v!r}")
                raise self.fail(path, f"must be one of {', '.join(choices)}, got {v!r}")
        elif t == "number":
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise self.fail(path, f"must be a number, got {type(v).__name__}")
            self.int_range(v, path)
            x = float(v)
            if not math.isfinite(x):
                raise self.fail(path, "must be finite")
            low = k.lo is not None and (x <= k.lo if k.lo_open else x < k.lo)
            high = k.hi is not None and x > k.hi
            if low or high:
                unit = f" {k.unit}" if k.unit else ""
                raise self.fail(path, f"must be {'in ' if k.hi is not None else ''}{k.range_text()}{unit}")
        elif t == "int":
            if isinstance(v, bool) or not isinstance(v, int):
                raise self.fail(path, f"must be an integer, got {type(v).__name__}")
            self.int_range(v, path)
            if k.lo is not None and v < k.lo:
                raise self.fail(path, f"must be >= {k.lo:g}")
        elif t == "bool":
            if not isinstance(v, bool):
                raise self.fail(path, f"must be true or false, got {type(v).__name__}")
        elif t == "scalar":
            if isinstance(v, (dict, list)) or not isinstance(v, (str, int, float, bool)):
                raise self.fail(path, f"must be a string, number or boolean, got {type(v).__name__}")
            self.scalar(v, path)
        elif t == "knob_value":
            if isinstance(v, bool) or not isinstance(v, (int, float, str)):
                raise self.fail(path, f"must be a number or string, got {type(v).__name__}")
            self.scalar(v, path)
        else:  # pragma: no cover
            raise AssertionError(f"schema key {k.path} has unknown type {t}")


# --- cross-key rules ------------------------------------------------------------------------------

def _devices(doc: Mapping[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(name, f"devices.{name}", d) for name, d in doc["devices"].items()]


def _rule_dvfs(doc: Mapping[str, Any], fail: Fail) -> None:
    """A device has either a dvfs table or a fixed freq_mhz/volt/static_power_mw; levels ascend in
    frequency, volts never fall and are given on every level or on none."""
    for _, key, d in _devices(doc):
        power_model = d.get("power_model", True)
        if "dvfs" in d:
            for k in ("freq_mhz", "volt", "static_power_mw"):
                if k in d:
                    raise fail(f"{key}.{k}", "give either a dvfs table or a fixed freq_mhz/volt/"
                               "static_power_mw, not both")
            levels = d["dvfs"]
            with_volt = ["volt" in lvl for lvl in levels]
            if any(with_volt) and not all(with_volt):
                i = with_volt.index(False)
                raise fail(f"{key}.dvfs[{i}].volt", "give a volt on every level or on none "
                           "(without volts, dynamic power scales with f alone)")
            for i in range(1, len(levels)):
                if levels[i]["freq_mhz"] <= levels[i - 1]["freq_mhz"]:
                    raise fail(f"{key}.dvfs[{i}].freq_mhz", "levels must be in strictly ascending frequency")
                if levels[i].get("volt", 0) < levels[i - 1].get("volt", 0):
                    raise fail(f"{key}.dvfs[{i}].volt", "must not decrease as frequency rises")
        elif power_model and "static_power_mw" not in d:
            raise fail(f"{key}.dvfs", "missing required key (or a fixed freq_mhz with static_power_mw)")


def _rule_modelled_power(doc: Mapping[str, Any], fail: Fail) -> None:
    """A modelled target has a power model on every device."""
    if doc["kind"] == "modelled":
        for _, key, d in _devices(doc):
            if d.get("power_model", True) is False:
                raise fail(f"{key}.power_model", "a modelled target needs a power model for every device")


def _rule_affinity(doc: Mapping[str, Any], fail: Fail) -> None:
    """Core ids of an affinity are distinct."""
    for _, key, d in _devices(doc):
        aff = d.get("affinity")
        if aff is not None and len(set(aff)) != len(aff):
            raise fail(f"{key}.affinity", "core ids must be distinct")


def _rule_links(doc: Mapping[str, Any], fail: Fail) -> None:
    """Link tables have one value per signal level, signal levels ascend, devices name defined links,
    endpoints look like scheme://host:port."""
    links = doc.get("links", {})
    for name, ln in links.items():
        key = f"links.{name}"
        sig = ln["signal_dbm"]
        if any(b <= a for a, b in zip(sig, sig[1:])):
            raise fail(f"{key}.signal_dbm", "must be strictly ascending")
        for col in ("bandwidth_mbps", "tx_power_mw", "rx_power_mw"):
            if len(ln[col]) != len(sig):
                raise fail(f"{key}.{col}", f"must have one value per signal level ({len(sig)}), got {len(ln[col])}")
    for _, key, d in _devices(doc):
        if "link" in d and d["link"] not in links:
            link = d["link"]
            raise fail(f"{key}.link", f"unknown link {link!r}; define [links.{link}]"
                       + (f" (defined: {', '.join(links)})" if links else ""))
        ep = d.get("endpoint")
        if ep is not None and ("://" not in ep or not ep.split("://", 1)[1]):
            raise fail(f"{key}.endpoint", f"must look like scheme://host:port (e.g. tcp://edge.local:7070), got {ep!r}")


def _rule_knobs(doc: Mapping[str, Any], fail: Fail) -> None:
    """A knob names defined devices; its values are distinct numbers in strictly ascending (monotone)
    order; active_cores knobs act on CPU devices with whole core counts within their affinity;
    memory_frequency values are positive and its power share fits in base_power_mw."""
    devices = doc["devices"]
    for name, kn in doc.get("knobs", {}).items():
        key = f"knobs.{name}"
        for i, dev in enumerate(kn["devices"]):
            if dev not in devices:
                raise fail(f"{key}.devices[{i}]", f"unknown device {dev!r}; devices: {', '.join(devices)}")
        if len(set(kn["devices"])) != len(kn["devices"]):
            raise fail(f"{key}.devices", "must be distinct")
        vals = kn["values"]
        for i, x in enumerate(vals):
            if isinstance(x, str):
                raise fail(f"{key}.values[{i}]", f"must be a number for effect = {kn['effect']!r}, got str")
        for i in range(1, len(vals)):
            if vals[i] <= vals[i - 1]:
                raise fail(f"{key}.values[{i}]", "must be strictly ascending (monotone order: a later value "
                           "is faster and draws more power)")
        if kn["effect"] == "active_cores":
            for i, x in enumerate(vals):
                if isinstance(x, float) and not x.is_integer() or x < 0:
                    raise fail(f"{key}.values[{i}]", "must be a whole number of cores >= 0")
            for i, dev in enumerate(kn["devices"]):
                d = devices[dev]
                if d.get("kind") != "cpu":
                    raise fail(f"{key}.devices[{i}]", f"effect = \"active_cores\" acts on cpu devices; "
                               f"{dev!r} is {d.get('kind')}")
                if "affinity" in d and vals[-1] > len(d["affinity"]):
                    raise fail(f"{key}.values[{len(vals) - 1}]", f"{dev!r} has {len(d['affinity'])} cores "
                               "(its affinity)")
            if vals[-1] <= 0:
                raise fail(f"{key}.values[{len(vals) - 1}]", "the top value must be at least one core")
        if kn["effect"] == "memory_frequency":
            if vals[0] <= 0:
                raise fail(f"{key}.values[0]", "must be > 0 MHz")
            p = kn.get("power_mw_at_max", 0.0)
            if p > doc["base_power_mw"]:
                raise fail(f"{key}.power_mw_at_max", f"must be <= base_power_mw ({doc['base_power_mw']:g} mW): "
                           "the memory's power at the top value is part of the board's base power")


def _rule_precisions(doc: Mapping[str, Any], fail: Fail) -> None:
    """A device runs a precision only in an element type its dtypes list."""
    for _, key, d in _devices(doc):
        for p in d.get("precisions", {}):
            if not PRECISION_DTYPES[p] & set(d["dtypes"]):
                need = " or ".join(sorted(PRECISION_DTYPES[p]))
                raise fail(f"{key}.precisions.{p}", f"the device does not compute in {need} (dtypes: "
                           f"{', '.join(d['dtypes'])}); add it to dtypes or drop this precision")


#: cross-key rules, checked in order after every key passed ``KEYS``
RULES: tuple[Callable[[Mapping[str, Any], Fail], None], ...] = (
    _rule_modelled_power, _rule_dvfs, _rule_affinity, _rule_links, _rule_knobs, _rule_precisions,
    rule_controls)


def validate(doc: Mapping[str, Any], label: str) -> None:
    """Check a parsed target document against KEYS and RULES (TargetError names file and key)."""
    w = _Walker(label)
    w.table(doc, "", "", {"target": doc, "device": {}, "knob": {}})
    for rule in RULES:
        rule(doc, w.fail)


# --- document -> model ----------------------------------------------------------------------------

def _level(d: Mapping[str, Any]) -> DvfsLevel:
    f, v, p = d.get("freq_mhz"), d.get("volt"), d.get("static_power_mw")
    tr = d.get("transfer", {})

    def opt(key: str) -> float | None:
        return float(tr[key]) if key in tr else None

    return DvfsLevel(freq_mhz=None if f is None else float(f), volt=None if v is None else float(v),
                     static_power_mw=None if p is None else float(p),
                     transfer_beta_ms_per_mb=opt("beta_ms_per_mb"), transfer_delta_ms=opt("delta_ms"),
                     transfer_power_mw=opt("power_mw"))


def _device(name: str, d: Mapping[str, Any]) -> Device:
    power_model = d.get("power_model", True)
    levels = tuple(_level(x) for x in d["dvfs"]) if "dvfs" in d else (_level(d),)
    tr = d.get("transfer", {"beta_ms_per_mb": 0.0, "delta_ms": 0.0})
    peak = d.get("peak_gflops")
    int8 = d.get("int8_peak_gops")
    return Device(
        name=name, kind=d["kind"], execution_provider=d["execution_provider"],
        provider_options=MappingProxyType(dict(d.get("provider_options", {}))),
        affinity=tuple(d["affinity"]) if "affinity" in d else None, dvfs=levels,
        dynamic_power_mw=float(d["dynamic_power_mw"]) if power_model else None,
        peak_gflops=None if peak is None else MappingProxyType(class_figures({c: float(v) for c, v in peak.items()})),
        mem_bandwidth_gbps=float(d["mem_bandwidth_gbps"]) if "mem_bandwidth_gbps" in d else None,
        layer_overhead_ms=float(d["layer_overhead_ms"]) if "layer_overhead_ms" in d else None,
        transfer_beta_ms_per_mb=float(tr["beta_ms_per_mb"]), transfer_delta_ms=float(tr["delta_ms"]),
        transfer_power_mw=float(tr["power_mw"]) if "power_mw" in tr else None,
        node_overhead_ms=float(d.get("node_overhead_ms", 0.0)), switch_ms=float(d.get("switch_ms", 0.0)),
        capacity_bytes=d.get("capacity_bytes"),
        supported_ops=frozenset(d["supported_ops"]) if "supported_ops" in d else None,
        unsupported_ops=frozenset(d.get("unsupported_ops", ())), dtypes=frozenset(d["dtypes"]),
        predicates=tuple(d.get("predicates", ())), link=d.get("link"), description=d.get("description", ""),
        power_model=power_model, endpoint=d.get("endpoint"), control=device_control(d),
        int8_peak_gops=None if int8 is None else MappingProxyType({c: float(int8[c]) for c in OP_CLASSES if c in int8}),
        capacity_counts=d.get("capacity_counts", "params"),
        activation_bytes_factor=float(d.get("activation_bytes_factor", 1.0)),
        precisions=MappingProxyType({p: float(d["precisions"][p]) for p in PRECISIONS if p in d.get("precisions", {})}))


def _link(name: str, ln: Mapping[str, Any]) -> Link:
    return Link(name=name, kind=ln["kind"], signal_dbm=tuple(map(float, ln["signal_dbm"])),
                bandwidth_mbps=tuple(map(float, ln["bandwidth_mbps"])),
                tx_power_mw=tuple(map(float, ln["tx_power_mw"])), rx_power_mw=tuple(map(float, ln["rx_power_mw"])),
                rtt_ms=float(ln["rtt_ms"]), default_signal_dbm=float(ln["default_signal_dbm"]))


_KNOB_PARAMS = ("parallel_fraction", "power_mw_at_max")


def _knob(name: str, kn: Mapping[str, Any]) -> Knob:
    return Knob(name=name, values=tuple(kn["values"]), devices=tuple(kn["devices"]), effect=kn["effect"],
                params=MappingProxyType({p: float(kn[p]) for p in _KNOB_PARAMS if p in kn}),
                description=kn.get("description", ""), control=knob_control(kn))


def build(doc: Mapping[str, Any], path: Path, sha256: str) -> Target:
    """The Target of a document ``validate`` accepted."""
    return Target(
        name=doc["name"], description=doc["description"], kind=doc["kind"], path=path, sha256=sha256,
        base_power_mw=float(doc["base_power_mw"]),
        devices=tuple(_device(n, d) for n, d in doc["devices"].items()),
        knobs=MappingProxyType({n: _knob(n, k) for n, k in doc.get("knobs", {}).items()}),
        links=MappingProxyType({n: _link(n, ln) for n, ln in doc.get("links", {}).items()}))


def parse(doc: Mapping[str, Any], path: Path, sha256: str, label: str) -> Target:
    """Validate then build (``label`` names the file in errors)."""
    validate(doc, label)
    return build(doc, path, sha256)


__all__ = ["CONDITIONS", "Cond", "KEYS", "Key", "RULES", "build", "parse", "schema_doc", "validate"]
