"""Applying a plan's hardware configuration on the board, and putting it back.

A variant records the knobs its plan assumes (``hardware``: ``a57_cores = 2``, ...) and each
slice its device's DVFS frequency; the manifest's ``target.controls`` (copied from the target
file's ``control`` tables) says how the OS sets them. ``apply_hardware`` writes them:

* knobs first. ``hotplug``: a value n puts the first n listed CPUs online and the rest offline
  (``/sys/devices/system/cpu/cpuN/online``, onlining before offlining); cpu0 is never taken
  offline (the boot CPU; L4T keeps it online in every power mode), which is reported.
  ``clock``: ``lock`` (if any) gets 1, then the value (MHz) goes to the rate file in its ``unit``.
* then each device's frequency: ``cpufreq`` pins scaling_min_freq = scaling_max_freq (kHz),
  ``devfreq`` min_freq = max_freq (Hz), written in the order that keeps min <= max (older
  kernels refuse min > max); a level the kernel does not list among its available frequencies
  is replaced by the nearest one it lists, and said so. A device that runs several slices at
  different frequencies is set ONCE, to the highest of them, for the whole run: a sysfs write
  and a DVFS transition before every slice would add latency the plan does not model, and the
  highest level keeps every slice within its planned time (at some energy cost). The report
  says which devices this affected.

Every setting ends applied, unchanged (already so) or skipped with the reason (no such file,
permission denied, read-only file system, value not accepted by the kernel, cpu0 stays online,
no control in the target...). An OS refusal never raises: the report collects it and one
logging warning summarises what was not applied with the fix ("run as root"); the caller runs
anyway. Only programmer errors raise (a wrong argument type), and a ``root`` that is not a
directory (``SysfsRootError``: one line, not every setting skipped). ``restore()`` writes back every
value it changed, newest first. ``root`` prefixes every path, so tests use a fake sysfs tree;
every read and write goes through ``hetcc.runtime.sysfs``, which refuses a path outside it.

Standard library only (the runtime ships to a board alone).
"""
from __future__ import annotations

import atexit
import logging
import os
from typing import Any

from .errors import ManifestError
from .hardware_report import HardwareReport, Setting
from .manifest import HardwareControls, KnobControl, Manifest, Variant, read_manifest
from .sysfs import Refused, Sysfs

__all__ = ["CPU_SYSFS", "Hardware", "HardwareReport", "SysfsRootError", "Setting", "apply_hardware", "offline_cpus"]

logger = logging.getLogger(__name__)

CPU_SYSFS = "/sys/devices/system/cpu"
_SCALE = {"Hz": 1e6, "kHz": 1e3, "MHz": 1.0}   # per MHz


class SysfsRootError(ManifestError):
    """The root given for the board's paths (``--sysfs-root``) is not a directory: one line and
    exit 2 (a ``ManifestError``, so the CLI reports it as the runtime's other errors), instead of
    every setting skipped as "no such file"."""


class Hardware:
    """Applies variants' hardware under ``root`` and remembers each file's original value (the
    first time it is changed), so ``restore()`` puts the board back however often it applied.
    A ``root`` other than ``/`` must be a directory (``SysfsRootError``)."""

    def __init__(self, root: str | os.PathLike = "/") -> None:
        self.root = os.fspath(root)
        if self.root not in ("", "/") and not os.path.isdir(self.root):
            what = "is not a directory" if os.path.exists(self.root) else "does not exist"
            raise SysfsRootError(f"--sysfs-root {self.root} {what}; give the directory that stands for / (one "
                                 "holding sys/), or leave --sysfs-root out to set the real board")
        self._reports: dict[Any, HardwareReport] = {}
        self.last: HardwareReport | None = None
        self.current: Any = None     # the configuration applied now (None: none, or restored)
        self.sysfs = Sysfs.under(self.root)   # writes, and what restore() puts back
        self._warned: set[Any] = set()
        self._atexit = False

    # ---- one setting
    def _set(self, report: HardwareReport, what: str, path: str, value: str, shown: str) -> bool:
        try:
            old = self.sysfs.set(path, value, what)
        except Refused as r:
            report.settings.append(Setting(what, path, shown, "skipped", r.reason, r.fix))
            return False
        if old is None:
            report.settings.append(Setting(what, path, shown, "unchanged"))
            return True
        try:
            back = self.sysfs.read(path)
        except Refused:
            back = value
        note = "" if back == value else f"the kernel reads back {back}"
        report.settings.append(Setting(what, path, shown, "applied", note))
        return True

    def _set_pair(self, report: HardwareReport, what: str, lo: str, hi: str, value: int, unit: str,
                  avail: str | None) -> None:
        shown = f"{value} {unit}"
        where = os.path.dirname(lo)
        try:
            old = (self.sysfs.read_int(lo), self.sysfs.read_int(hi))
            note = ""
            if avail is not None:
                levels = self._levels(avail)
                if levels and value not in levels:
                    near = min(levels, key=lambda x: (abs(x - value), x))
                    note = f"{value} {unit} is not a level the kernel lists; set the nearest, {near} {unit}"
                    value, shown = near, f"{near} {unit}"
            if old == (value, value):
                report.settings.append(Setting(what, where, shown, "unchanged", note))
                return
            self.sysfs.set_pair(lo, hi, value, old, what)
        except Refused as r:
            report.settings.append(Setting(what, where, shown, "skipped", r.reason, r.fix))
            return
        report.settings.append(Setting(what, where, shown, "applied", note))

    def _levels(self, path: str) -> list[int]:
        try:
            return [int(x) for x in self.sysfs.read(path).split()]
        except (Refused, ValueError):
            return []   # not listed: write the level as planned

    # ---- knobs and devices
    def _hotplug(self, report: HardwareReport, name: str, value: Any, cpus: tuple[int, ...]) -> None:
        n = value if isinstance(value, int) and not isinstance(value, bool) else None
        if isinstance(value, float) and value.is_integer():
            n = int(value)
        if n is None or not 0 <= n <= len(cpus):
            report.settings.append(Setting(name, CPU_SYSFS, repr(value), "skipped",
                                           f"not a core count for cpus {list(cpus)}", "recompile"))
            return
        for i, c in enumerate(cpus):   # the first n online, then the rest offline
            on, what, path = i < n, f"{name}: cpu{c}", f"{CPU_SYSFS}/cpu{c}/online"
            if not on and c == 0:
                report.settings.append(Setting(what, path, "offline", "skipped", "cpu0 stays online (the boot "
                                               "CPU: hetcc never takes it offline; no slice is planned on it)"))
            elif not self._set(report, what, path, "1" if on else "0", "online" if on else "offline"):
                last = report.settings[-1]   # a CPU without an online file is one the kernel does not hotplug
                if last.reason == "no such file" and self.sysfs.isdir(f"{CPU_SYSFS}/cpu{c}"):
                    last.reason, last.fix = f"no online file: the kernel keeps cpu{c} online", ""
                    last.status = "unchanged" if on else "skipped"

    def _clock(self, report: HardwareReport, name: str, value: Any, ctl: KnobControl) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            report.settings.append(Setting(name, ctl.clock or "", repr(value), "skipped",
                                           "not a frequency in MHz", "recompile"))
            return
        unit = ctl.unit or "Hz"
        rate = int(round(float(value) * _SCALE[unit]))
        if ctl.lock:
            self._set(report, f"{name}: lock", ctl.lock, "1", "locked")
        self._set(report, name, ctl.clock, str(rate), f"{rate} {unit} ({value:g} MHz)")

    def _device(self, report: HardwareReport, dev: str, freqs: list[float], controls: HardwareControls) -> None:
        ctl = controls.devices.get(dev)
        top = max(freqs)
        what = f"{dev} frequency"
        if len(set(freqs)) > 1:
            report.notes.append(f"{dev}: its slices are planned at {', '.join(f'{f:g}' for f in sorted(set(freqs)))}"
                                f" MHz; set to the highest, {top:g} MHz, for the whole run")
        if ctl is None:
            report.settings.append(Setting(what, "-", f"{top:g} MHz", "skipped", "the target gives no control "
                                           "for this device", "add devices.<name>.control to the target"))
        elif ctl.cpufreq:
            d = ctl.cpufreq
            self._set_pair(report, what, f"{d}/scaling_min_freq", f"{d}/scaling_max_freq", int(round(top * 1e3)),
                           "kHz", f"{d}/scaling_available_frequencies")
        elif ctl.devfreq:
            d = ctl.devfreq
            self._set_pair(report, what, f"{d}/min_freq", f"{d}/max_freq", int(round(top * 1e6)), "Hz",
                           f"{d}/available_frequencies")

    # ---- public
    def apply(self, source: Any, variant: str | None = None, *, controls: HardwareControls | None = None,
              warn: bool = True) -> HardwareReport:
        """Apply a variant's hardware: ``source`` is a Manifest (``variant`` names one, default the
        default variant), an artifact directory, or a Variant with its ``controls``."""
        name, controls, knobs, freqs, key = _wanted(source, variant, controls)
        report = HardwareReport(variant=name, root=self.root, _restore=self.restore)
        if controls is None:
            report.nothing = "the artifact records no hardware controls (its target file has no control tables)"
            if knobs:
                report.notes.append("the plan assumes " + ", ".join(f"{k}={v}" for k, v in knobs.items())
                                    + ": set them by hand")
        elif not knobs and not freqs:
            report.nothing = "the plan sets no knobs and no frequencies"
        for kname, value in knobs.items() if controls is not None else ():
            ctl = controls.knobs.get(kname)
            if ctl is None:
                report.settings.append(Setting(kname, "-", str(value), "skipped", "the target gives no control for "
                                               "this knob", "add knobs.<name>.control to the target"))
            elif ctl.hotplug:
                self._hotplug(report, kname, value, ctl.hotplug)
            elif ctl.clock:
                self._clock(report, kname, value, ctl)
        for dev, fs in freqs.items() if controls is not None else ():
            self._device(report, dev, fs, controls)
        self._reports.pop(key, None)
        self._reports[key] = self.last = report
        self.current = key
        if warn:
            self._log(report, key)
        return report

    @property
    def reports(self) -> list[HardwareReport]:
        """The latest report of each distinct configuration applied, oldest first (bounded: a
        workload alternating between two configurations keeps two)."""
        return list(self._reports.values())

    def ensure(self, manifest: Manifest, variant: str | None, key: Any = None) -> HardwareReport | None:
        """Apply ``variant`` of ``manifest`` unless the same settings are applied already (so a
        run, or a workload model sharing the configuration, costs one comparison); ``key``:
        ``configuration_key(manifest, variant)`` computed once by the caller."""
        if (configuration_key(manifest, variant) if key is None else key) == self.current:
            return None
        return self.apply(manifest, variant)

    def _log(self, report: HardwareReport, key: Any) -> None:
        if key in self._warned:
            return
        self._warned.add(key)
        where = f" under {self.root}" if self.root not in ("", "/") else ""
        if report.nothing is not None:
            level = logging.WARNING if report.notes else logging.INFO
            logger.log(level, "hardware: nothing to apply%s: %s%s", where, report.nothing,
                       "".join(f"; {n}" for n in report.notes))
        elif report.skipped:
            logger.warning("hardware%s: %s", where, report.summary())
        else:
            logger.info("hardware%s: %d setting(s) applied", where, len(report.settings))

    def restore(self) -> HardwareReport:
        """Write back every original value this object changed, newest first (so CPUs taken
        offline come back before those brought online go, and frequencies before their CPUs)."""
        report = HardwareReport(variant=None, root=self.root)
        for change, refused in self.sysfs.restore():
            if refused is not None:
                report.settings.append(Setting(change.what, change.paths[0], "(original)", "skipped",
                                               refused.reason, refused.fix))
            elif len(change.paths) == 1:
                report.settings.append(Setting(change.what, change.paths[0], str(change.old[0]), "restored"))
            else:
                report.settings.append(Setting(change.what, os.path.dirname(change.paths[0]),
                                               f"{change.old[0]}..{change.old[1]}", "restored"))
        self.current = None
        if report.skipped:
            logger.warning("hardware: %s", report.summary("restored", "the board keeps what was set"))
        elif report.settings:
            logger.info("hardware: restored %d setting(s)", len(report.settings))
        return report

    @property
    def changed(self) -> bool:
        """Something is set that ``restore()`` would put back."""
        return self.sysfs.changed

    def restore_at_exit(self, enabled: bool = True) -> None:
        """Register (or drop) ``restore`` with atexit, so the board is put back when Python exits."""
        if enabled and not self._atexit:
            atexit.register(self.restore)
        elif not enabled and self._atexit:
            atexit.unregister(self.restore)
        self._atexit = enabled


def _wanted(source: Any, variant: str | None, controls: HardwareControls | None) -> tuple:
    """(variant name, controls, knobs, device -> planned MHz, a key of the configuration)."""
    if isinstance(source, (str, os.PathLike)):
        source = read_manifest(source)[0]
    if isinstance(source, Manifest):
        name = variant if variant is not None else source.default_variant
        spec = source.variant(name)
        controls = source.target.controls if controls is None else controls
    elif isinstance(source, Variant):
        name, spec = variant, source
    else:
        raise TypeError(f"apply_hardware: expected a Manifest, a Variant or an artifact directory, "
                        f"got {type(source).__name__}")
    if controls is not None and not isinstance(controls, HardwareControls):
        raise TypeError(f"controls: expected HardwareControls, got {type(controls).__name__}")
    knobs = dict(spec.hardware or {})
    freqs: dict[str, list[float]] = {}
    for sl in spec.slices:
        if sl.frequency_mhz is not None and not sl.remote:
            freqs.setdefault(sl.device, []).append(float(sl.frequency_mhz))
    key = (repr(controls), repr(sorted(knobs.items(), key=str)), repr(sorted((d, sorted(f)) for d, f in freqs.items())))
    return name, controls, knobs, freqs, key


def configuration_key(manifest: Manifest, variant: str | None) -> Any:
    """What identifies the settings a variant wants (equal keys: nothing to re-apply)."""
    return _wanted(manifest, variant, None)[4]


def apply_hardware(source: Any, variant: str | None = None, *, controls: HardwareControls | None = None,
                   root: str | os.PathLike = "/") -> HardwareReport:
    """Apply a plan's hardware configuration (see the module doc); ``report.restore()`` puts back
    what it changed. ``source``: a Manifest, an artifact directory, or a Variant with ``controls``."""
    return Hardware(root).apply(source, variant, controls=controls)


def offline_cpus(manifest: Manifest, variant: str | None = None) -> frozenset[int]:
    """The CPUs the variant's hotplug knobs take offline (cpu0 excepted: it stays online); the
    executor leaves them out of its sessions' affinity."""
    controls = manifest.target.controls
    if controls is None or manifest.kind != "model":
        return frozenset()
    out: set[int] = set()
    for name, value in (manifest.variant(variant).hardware or {}).items():
        ctl = controls.knobs.get(name)
        if ctl is not None and ctl.hotplug and isinstance(value, (int, float)) and not isinstance(value, bool):
            out.update(c for c in ctl.hotplug[max(0, int(value)):] if c != 0)
    return frozenset(out)
