"""The board's parameters: the table of fittable numbers in a modelled board file (``Param``,
``board_parameters``), the board file itself (``Board``: its text, a working copy of its document
the fit writes values into, the ``Target`` built from it), the arguments that name parameters
(``--bound``, ``--set``, ``--range``), and the constants the other calibrate modules share.

Parameters are the document's numeric leaves under known keys, named ``base_power_mw``,
``DEV.peak_gflops.CLASS``, ``DEV.int8_peak_gops.CLASS``, ``DEV.mem_bandwidth_gbps``,
``DEV.layer_overhead_ms``, ``DEV.node_overhead_ms``, ``DEV.transfer.KEY``,
``DEV.dynamic_power_mw``, ``DEV.static_power_mw`` (one factor on every DVFS level's static power;
its value is the top level's) and ``DEV@MHZ.transfer.KEY`` (a level's own transfer): keys a file
adds (an op class) are parameters without code changes. Every parameter is a positive scale: the
fit runs in log space within ``[x0 / range, x0 * range]``.
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from hetcc.core.errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

#: default bounds: [x0 / RANGE, x0 * RANGE]
DEFAULT_RANGE = 20.0
#: significant digits written to the fitted file
DIGITS = 6
#: the refusal when the optional dependencies of ``hetcc calibrate`` are missing
MISSING_EXTRA = "hetcc calibrate needs scipy and tomlkit: pip install 'hetcc[calibrate]'"
_DEVICE_SCALARS = ("mem_bandwidth_gbps", "layer_overhead_ms", "node_overhead_ms", "dynamic_power_mw")
_DEVICE_TABLES = ("peak_gflops", "int8_peak_gops", "transfer")


# ------------------------------------------------------------------------------- the parameters
@dataclass(frozen=True)
class Param:
    """One fittable number: its name, unit, value in the file (``x0``) and where it is written
    (``slots``: document paths with the factor each holds of the value; static power scales every
    DVFS level)."""

    name: str
    unit: str
    x0: float
    slots: tuple[tuple[tuple[Any, ...], float], ...]


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _unit(name: str) -> str:
    last = name.rsplit(".", 1)[-1]
    if ".peak_gflops." in name:
        return "GFLOP/s"
    if ".int8_peak_gops." in name:
        return "GOP/s"
    for suffix, unit in (("_ms_per_mb", "ms/MB"), ("_gbps", "GB/s"), ("_ms", "ms"), ("_mw", "mW")):
        if last.endswith(suffix):
            return unit
    return ""


def board_parameters(doc: Mapping[str, Any]) -> list[Param]:
    """Every parameter of a parsed board document (see the module docstring), in file order."""
    out: list[Param] = []

    def add(name: str, path: tuple[Any, ...], value: Any) -> None:
        if _is_number(value):
            out.append(Param(name, _unit(name), float(value), ((path, 1.0),)))

    add("base_power_mw", ("base_power_mw",), doc.get("base_power_mw"))
    devices = doc.get("devices")
    for dev, d in (devices.items() if isinstance(devices, dict) else ()):
        if not isinstance(d, dict):
            continue
        for key in _DEVICE_TABLES:
            if isinstance(d.get(key), dict):
                for k, v in d[key].items():
                    add(f"{dev}.{key}.{k}", ("devices", dev, key, k), v)
        for key in _DEVICE_SCALARS:
            add(f"{dev}.{key}", ("devices", dev, key), d.get(key))
        levels = d.get("dvfs")
        if isinstance(levels, list) and levels:
            idx = [i for i, lvl in enumerate(levels) if isinstance(lvl, dict) and _is_number(lvl.get("static_power_mw"))]
            if idx and idx[-1] == len(levels) - 1:
                top = float(levels[-1]["static_power_mw"])
                slots = tuple((("devices", dev, "dvfs", i, "static_power_mw"),
                               (float(levels[i]["static_power_mw"]) / top) if top > 0 else 1.0) for i in idx)
                out.append(Param(f"{dev}.static_power_mw", "mW", top, slots))
            for i, lvl in enumerate(levels):
                if isinstance(lvl, dict) and isinstance(lvl.get("transfer"), dict) and _is_number(lvl.get("freq_mhz")):
                    for k, v in lvl["transfer"].items():
                        add(f"{dev}@{float(lvl['freq_mhz']):g}.transfer.{k}", ("devices", dev, "dvfs", i, "transfer", k), v)
        else:
            add(f"{dev}.static_power_mw", ("devices", dev, "static_power_mw"), d.get("static_power_mw"))
    return out


def _put(doc: Any, path: tuple[Any, ...], value: float) -> None:
    node_at(doc, path[:-1])[path[-1]] = value


def node_at(doc: Any, path: Sequence[Any]) -> Any:
    """The node of a (parsed or tomlkit) document at ``path``, a sequence of keys and indices."""
    node = doc
    for k in path:
        node = node[k]
    return node


# ------------------------------------------------------------------------------- the board
@dataclass
class Board:
    """A modelled board file: its text, parsed document (a working copy the fit writes into) and
    parameters."""

    text: str
    label: str
    path: Path
    doc: dict
    params: list[Param]

    @classmethod
    def load(cls, name_or_path: str | Path) -> "Board":
        """A built-in board by name (``hikey970``) or a board file by path."""
        from hetcc.targets.loader import load_bytes, target_source

        data, path, label = target_source(name_or_path)   # the loader's own checks and one-line errors
        target = load_bytes(data, path, label)
        if target.kind != "modelled":
            raise UsageError(f"{label}: target {target.name!r} is {target.kind}, not modelled: calibrate fits an "
                             "analytical board (kind = \"modelled\"), e.g. a copy of hikey970.toml")
        text = data.decode("utf-8")
        doc = tomllib.loads(text)
        return cls(text=text, label=label, path=path, doc=doc, params=board_parameters(doc))

    def target(self, values: np.ndarray | None = None) -> Any:
        """The Target with ``values`` (one per parameter) substituted (built without re-validating:
        the values stay positive, and the written file is validated by the loader)."""
        from hetcc.targets.schema import build

        for p, x in zip(self.params, self.x0 if values is None else values):
            for path, scale in p.slots:
                _put(self.doc, path, float(x) * scale)
        return build(self.doc, self.path, "0" * 64)

    @property
    def x0(self) -> np.ndarray:
        import numpy as np
        return np.array([p.x0 for p in self.params], dtype=np.float64)

    def index(self, name: str) -> int:
        for i, p in enumerate(self.params):
            if p.name == name:
                return i
        import difflib

        close = difflib.get_close_matches(name, [p.name for p in self.params], n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UsageError(f"{self.label} has no parameter {name!r}{hint}; docs/calibration.md lists the names")


# ------------------------------------------------------------------------------- the arguments
def parse_bound(text: str) -> tuple[str, float, float]:
    """``NAME=LO:HI`` -> (name, lo, hi), refused unless 0 < lo < hi, finite."""
    name, eq, rng = text.partition("=")
    lo_s, colon, hi_s = rng.partition(":")
    try:
        lo, hi = float(lo_s), float(hi_s)
    except ValueError:
        lo = hi = math.nan
    if not eq or not colon or not name.strip() or not (math.isfinite(lo) and math.isfinite(hi)):
        raise UsageError(f"malformed --bound {text!r}; write NAME=LO:HI, e.g. --bound gpu.node_overhead_ms=0.01:1")
    if not 0 < lo < hi:
        raise UsageError(f"--bound {text!r}: need 0 < LO < HI (parameters are positive; the fit runs in log space)")
    return name.strip(), lo, hi


def parse_set(text: str) -> tuple[str, float]:
    """``NAME=VALUE`` -> (name, value), refused unless VALUE is a finite number >= 0."""
    name, eq, val = text.partition("=")
    try:
        value = float(val)
    except ValueError:
        value = math.nan
    if not eq or not name.strip() or not math.isfinite(value):
        raise UsageError(f"malformed --set {text!r}; write NAME=VALUE, e.g. --set base_power_mw=0")
    if value < 0:
        raise UsageError(f"--set {text!r}: a board's numbers are >= 0; give a value of 0 or more")
    return name.strip(), value


def check_range(range_factor: float) -> None:
    """UsageError unless the --range factor is finite and above 1 (bounds [x / F, x * F])."""
    if not (math.isfinite(range_factor) and range_factor > 1):
        raise UsageError(f"--range {range_factor:g}: give a factor above 1 (default {DEFAULT_RANGE:g}: "
                         "each parameter within [x / F, x * F])")

