"""Small test boards (``hetcc.target/1`` TOML) built from keyword arguments, so a test names only
what it changes: ``board_text(devices={"cpu": device(supported_ops=["Relu"])})``. The
``board_toml`` fixture of tests/conftest.py returns ``board_text``; modules that build boards at
import time import it from here."""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

#: a plain CPU device: every field a modelled device needs
DEVICE: dict[str, Any] = {
    "kind": "cpu",
    "execution_provider": "CPUExecutionProvider",
    "freq_mhz": 1000.0,
    "static_power_mw": 10.0,
    "dynamic_power_mw": 100.0,
    "peak_gflops": {"conv": 1.0, "matmul": 1.0, "other": 1.0},
    "mem_bandwidth_gbps": 1.0,
    "layer_overhead_ms": 0.01,
    "transfer": {"beta_ms_per_mb": 0.1, "delta_ms": 0.01},
    "dtypes": ["float32"],
}


def device(**fields: Any) -> dict[str, Any]:
    """DEVICE with ``fields`` changed (in place) or added (at the end); a field given None is
    left out. ``raw="..."`` appends TOML lines as they are (to write what the builder cannot:
    a malformed table, a placeholder)."""
    out = {**DEVICE, **fields}
    return {k: v for k, v in out.items() if v is not None}


def _key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)


def value(v: Any) -> str:
    """``v`` as a TOML value: strings, booleans, numbers, lists, inline tables."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {value(x)}" for k, x in v.items()) + " }"
    return "[" + ", ".join(value(x) for x in v) + "]"


def _table(header: str, fields: Mapping[str, Any]) -> list[str]:
    lines = [header]
    for k, v in fields.items():
        if k == "raw":
            lines += [ln for ln in str(v).splitlines() if ln.strip()]
        else:
            lines.append(f"{_key(k)} = {value(v)}")
    return lines


def device_text(name: str, **fields: Any) -> str:
    """One ``[devices.NAME]`` table: ``device(**fields)`` as TOML (to append to a board's text)."""
    return "\n".join(_table(f"[devices.{_key(name)}]", device(**fields))) + "\n"


def board_text(name: str = "b", description: str = "a test board", *, base_power_mw: float = 100.0,
               devices: Mapping[str, Mapping[str, Any]] | None = None,
               links: Mapping[str, Mapping[str, Any]] | None = None, kind: str = "modelled") -> str:
    """The TOML text of a board: one plain CPU (``device()``) unless ``devices`` is given."""
    lines = ['schema = "hetcc.target/1"', f"name = {value(name)}", f"description = {value(description)}",
             f"kind = {value(kind)}", f"base_power_mw = {value(base_power_mw)}"]
    for link, fields in (links or {}).items():
        lines += _table(f"[links.{_key(link)}]", fields)
    for dev, fields in (devices if devices is not None else {"cpu": device()}).items():
        lines += _table(f"[devices.{_key(dev)}]", fields)
    return "\n".join(lines) + "\n"
