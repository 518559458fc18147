"""The ``control`` tables of a target file: how the OS sets a device's DVFS frequency or a knob.

A control is what the runtime writes when asked to apply a plan's hardware configuration
(``hetcc run --apply-hardware``, ``Executor(..., apply_hardware=True)``; see
``hetcc.runtime.hardware``). It is optional everywhere: a target without control tables plans
exactly as before, and its artifacts say "nothing to apply".

    [devices.<name>]
    control = { cpufreq = "/sys/devices/system/cpu/cpu0/cpufreq" }   # cpu devices: a cpufreq
        # policy directory; the runtime pins scaling_min_freq = scaling_max_freq (kHz)
    control = { devfreq = "/sys/devices/<dev>/devfreq/<dev>" }       # a devfreq device
        # directory; min_freq = max_freq (Hz)
    [knobs.<name>]
    control = { hotplug = [0, 3, 4, 5] }    # effect = "active_cores": a value n puts the first n
        # CPUs online (/sys/devices/system/cpu/cpuN/online) and the rest offline
    control = { clock = "/sys/.../emc/rate", unit = "Hz", lock = "/sys/.../mrq_rate_locked" }
        # effect = "memory_frequency": the value (MHz) written to ``clock`` in ``unit``; ``lock``
        # (optional) written 1 first so the rate holds

The keys' types and conditions are in ``schema.KEYS``; ``rule_controls`` checks what one key
cannot say alone, and ``device_control`` / ``knob_control`` build the model's dataclasses
(codegen copies them into the manifest's types of the same names; the targets do not import the
runtime).
"""
from __future__ import annotations

import re
from typing import Any, Callable, Mapping

from hetcc.core.errors import TargetError

from .model import DeviceControl, KnobControl

Fail = Callable[[str, str], TargetError]

#: the units a clock control's file may take (a knob's clock values are MHz)
CLOCK_UNITS = ("Hz", "kHz", "MHz")


#: where a control may point: under /sys, no '.', '..' or empty parts, no control characters (the
#: runtime writes numbers there as root). The manifest's ``SYSFS_PATTERN`` (hetcc.runtime.manifest)
#: is the same; a test keeps them equal (the targets do not import the runtime).
SYSFS_PATTERN = r"^/sys(/(?!\.\.?(/|$))[^/\x00-\x1f\x7f]+)+$"


def _check_path(value: str, key: str, fail: Fail) -> None:
    if not re.fullmatch(SYSFS_PATTERN, value):
        shown = value if len(value) <= 60 else value[:57] + "..."
        raise fail(key, f"must be an absolute path under /sys without '.' or '..' parts (e.g. "
                   f"/sys/devices/system/cpu/cpu0/cpufreq), got {shown!r}")


def _rule_device_controls(doc: Mapping[str, Any], fail: Fail) -> None:
    for name, d in doc["devices"].items():
        ctl = d.get("control")
        if ctl is None:
            continue
        key = f"devices.{name}.control"
        if "cpufreq" in ctl and "devfreq" in ctl:
            raise fail(key, "give one of cpufreq or devfreq, not both")
        for k in ("cpufreq", "devfreq"):
            if k in ctl:
                _check_path(ctl[k], f"{key}.{k}", fail)
        has_freq = any("freq_mhz" in lvl for lvl in d.get("dvfs", ())) or "freq_mhz" in d
        if not has_freq:
            raise fail(key, "a control sets the device's frequency; give it one (dvfs[].freq_mhz or freq_mhz)")


def _rule_knob_controls(doc: Mapping[str, Any], fail: Fail) -> None:
    devices = doc["devices"]
    for name, kn in doc.get("knobs", {}).items():
        ctl = kn.get("control")
        if ctl is None:
            continue
        key = f"knobs.{name}.control"
        for k in ("clock", "lock"):
            if k in ctl:
                _check_path(ctl[k], f"{key}.{k}", fail)
        cpus = ctl.get("hotplug")
        if cpus is None:
            continue
        if len(set(cpus)) != len(cpus):
            raise fail(f"{key}.hotplug", "CPU ids must be distinct")
        top = max(kn["values"])
        if top > len(cpus):
            raise fail(f"{key}.hotplug", f"lists {len(cpus)} CPU(s) but values go up to {top:g}")
        cores = [(dev, devices[dev]["affinity"]) for dev in kn["devices"] if "affinity" in devices[dev]]
        if cores:
            allowed = {c for _, aff in cores for c in aff}
            for i, c in enumerate(cpus):
                if c not in allowed:
                    which = ", ".join(f"{dev} {list(aff)}" for dev, aff in cores)
                    raise fail(f"{key}.hotplug[{i}]", f"cpu{c} is not a core of the knob's devices ({which})")


def rule_controls(doc: Mapping[str, Any], fail: Fail) -> None:
    """A device control names one absolute directory and the device has frequencies to set; a
    knob control's paths are absolute; hotplug lists distinct CPUs, enough for the largest value,
    all within the affinity of the knob's devices."""
    _rule_device_controls(doc, fail)
    _rule_knob_controls(doc, fail)


def device_control(d: Mapping[str, Any]) -> DeviceControl | None:
    ctl = d.get("control")
    if ctl is None:
        return None
    return DeviceControl(cpufreq=ctl.get("cpufreq"), devfreq=ctl.get("devfreq"))


def knob_control(kn: Mapping[str, Any]) -> KnobControl | None:
    ctl = kn.get("control")
    if ctl is None:
        return None
    hotplug = ctl.get("hotplug")
    return KnobControl(hotplug=None if hotplug is None else tuple(int(c) for c in hotplug),
                       clock=ctl.get("clock"), unit=ctl.get("unit"), lock=ctl.get("lock"))


__all__ = ["CLOCK_UNITS", "device_control", "knob_control", "rule_controls"]
