"""This machine's power meters and CPU clock, from sysfs, for ``hetcc profile`` (and for a
running artifact that reads energy: standard library only).

Both are optional (a laptop, a cloud VM or a container usually has neither) and both are read
under one root (``SYSFS_ROOT``), so tests point them at a fake tree. Files are read, and the
clock written and put back, through ``hetcc.runtime.sysfs``.

Power meters, in order of preference (the first kind that can be read is used, alone):

* powercap/RAPL: ``class/powercap/intel-rapl:N/energy_uj`` (package domains only, not their
  ``intel-rapl:N:M`` sub-domains, which they contain), a cumulative energy counter in uJ that
  wraps at ``max_energy_range_uj``. Linux makes it root-only (since 5.10, CVE-2020-8694).
* hwmon energy counters: ``class/hwmon/hwmon*/energy*_input`` (uJ, cumulative).
* hwmon power inputs: ``power*_input`` / ``power*_average`` (uW), INA2xx shunt monitors among
  them (``name`` ina2xx, ina219, ina226, ...), sampled after each timed run.
* INA3221 rails (``name`` ina3221): bus voltage ``in*_input`` (mV) x ``curr*_input`` (mA) per
  channel, sampled after each timed run.

Where channels are labelled and some label names a total (socket, package, total, ``VDD_IN``),
only those are summed: an ``amd_energy`` hwmon lists the socket and each core, a Jetson's INA3221
the board input and the rails it feeds, and summing all would count power twice.

The CPU clock: Linux cpufreq policies (``devices/system/cpu/cpufreq/policy*``). A frequency is
set on every policy, with the ``userspace`` governor's ``scaling_setspeed`` where that governor is
offered, else by pinning ``scaling_min_freq = scaling_max_freq`` (kHz; the order that keeps
min <= max, ``hetcc.runtime.sysfs.min_max_order``); ``restore()`` writes back every value
changed, newest first. Whether it can be set is probed by writing a policy's current
``scaling_max_freq`` back to itself.
"""
from __future__ import annotations

import errno
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .sysfs import Sysfs, kind, min_max_order, read_text

#: every sysfs path below is read under this root (tests monkeypatch it to a fake tree)
SYSFS_ROOT = Path("/sys")
#: where the current clock is read when cpufreq is absent
PROC_CPUINFO = Path("/proc/cpuinfo")

INA2XX = ("ina2xx", "ina209", "ina219", "ina220", "ina226", "ina230", "ina231", "ina238", "ina260")
_TOTAL_LABEL = re.compile(r"socket|package|pkg|total|(^|_)in$|vdd_in|sys_?5v|board", re.IGNORECASE)


def _root() -> Path:
    return SYSFS_ROOT


def _read_int(path: Path) -> int:
    return int(read_text(path).split()[0])


#: an OS refusal in a phrase (``hetcc.runtime.sysfs.kind``); others as the OS words them
_SAID = {"permission": "permission denied: run as root", "read-only": "read-only file system (a container's /sys)",
         "missing": "absent"}


def _why(exc: OSError) -> str:
    return _SAID.get(kind(exc)) or exc.strerror or str(exc)


def _shown(path: Path) -> str:
    """A path as the user would look for it: under /sys, whatever root the tree is read from."""
    try:
        return "/sys/" + str(path.relative_to(_root()))
    except ValueError:
        return str(path)


# ---------------------------------------------------------------- power meters

class PowerMeter:
    """Average power of a stretch of work: ``start()``, ``sample()`` after each run (instant
    meters read there; counters ignore it), ``stop()`` -> mean mW since ``start``; ``name`` says
    what it reads."""

    name: str

    def start(self) -> None:
        raise NotImplementedError

    def sample(self) -> None:
        pass

    def stop(self) -> float:
        raise NotImplementedError


@dataclass
class EnergyCounterMeter(PowerMeter):
    """Cumulative energy counters (uJ): power = sum of their increments / elapsed time."""

    name: str
    files: tuple[Path, ...]
    wrap_uj: tuple[float, ...]          # the counter's range (inf: no wrap known)
    _t0: float = 0.0
    _e0: tuple[int, ...] = ()

    def start(self) -> None:
        self._e0 = tuple(_read_int(f) for f in self.files)
        self._t0 = time.perf_counter()

    def stop(self) -> float:
        e1 = tuple(_read_int(f) for f in self.files)
        dt = time.perf_counter() - self._t0
        total = 0.0
        for a, b, wrap in zip(self._e0, e1, self.wrap_uj):
            d = b - a
            if d < 0:   # the counter wrapped once (a timed stretch is far shorter than a wrap)
                d += wrap if wrap != float("inf") else 0
            total += max(d, 0)
        return total / 1e3 / dt if dt > 0 else float("nan")   # uJ / s = uW; / 1e3 = mW


@dataclass
class SampledPowerMeter(PowerMeter):
    """Instant power readers (each -> uW), summed at each ``sample()``; the mean of the samples."""

    name: str
    readers: tuple[Callable[[], float], ...]
    _samples: list[float] = field(default_factory=list)

    def start(self) -> None:
        self._samples = []

    def sample(self) -> None:
        self._samples.append(sum(r() for r in self.readers))

    def stop(self) -> float:
        if not self._samples:
            self.sample()
        return sum(self._samples) / len(self._samples) / 1e3   # uW -> mW


@dataclass(frozen=True)
class Channel:
    label: str
    read_uw: Callable[[], float] | None = None    # instant power
    energy_file: Path | None = None                # cumulative uJ


def _label(dirpath: Path, stem: str, fallback: str) -> str:
    try:
        return read_text(dirpath / f"{stem}_label")
    except OSError:
        return fallback


def _totals(channels: list[Channel]) -> list[Channel]:
    """The channels that name a total, if any do (see the module doc), else all."""
    tot = [c for c in channels if _TOTAL_LABEL.search(c.label)]
    return tot or channels


def _readable(path: Path, problems: list[str]) -> bool:
    try:
        _read_int(path)
        return True
    except OSError as exc:
        problems.append(f"{_shown(path)}: {_why(exc)}")
    except (ValueError, IndexError):
        problems.append(f"{_shown(path)}: not a number")
    return False


def _rapl(problems: list[str]) -> PowerMeter | None:
    base = _root() / "class" / "powercap"
    if not base.is_dir():
        problems.append(f"{_shown(base)}: absent")
        return None
    zones = sorted(p for p in base.iterdir() if re.fullmatch(r"intel-rapl:\d+", p.name))
    if not zones:
        problems.append(f"{_shown(base)}: no intel-rapl:N package domain")
        return None
    files, wraps, names = [], [], []
    for z in zones:
        f = z / "energy_uj"
        if not _readable(f, problems):
            continue
        try:
            wraps.append(float(_read_int(z / "max_energy_range_uj")))
        except (OSError, ValueError, IndexError):
            wraps.append(float("inf"))
        files.append(f)
        try:
            names.append(read_text(z / "name"))
        except OSError:
            names.append(z.name)
    if not files:
        return None
    return EnergyCounterMeter(f"RAPL ({', '.join(names)})", tuple(files), tuple(wraps))


def _hwmon_channels(problems: list[str]) -> dict[str, list[tuple[str, Channel]]]:
    """hwmon channels by kind ('energy', 'power', 'ina3221'), each with its device's name."""
    base = _root() / "class" / "hwmon"
    out: dict[str, list[tuple[str, Channel]]] = {"energy": [], "power": [], "ina3221": []}
    if not base.is_dir():
        problems.append(f"{_shown(base)}: absent")
        return out
    found = False
    for h in sorted(base.iterdir()):
        try:
            name = read_text(h / "name")
        except OSError:
            name = h.name
        for f in sorted(h.glob("energy*_input")):
            found = True
            if _readable(f, problems):
                stem = f.name[:-len("_input")]
                out["energy"].append((name, Channel(_label(h, stem, f"{name} {stem}"), energy_file=f)))
        for f in sorted([*h.glob("power*_input"), *h.glob("power*_average")]):
            found = True
            if _readable(f, problems):
                stem = f.name.rsplit("_", 1)[0]
                out["power"].append((name, Channel(_label(h, stem, f"{name} {stem}"),
                                                   read_uw=lambda f=f: float(_read_int(f)))))
        if name == "ina3221":
            for cur in sorted(h.glob("curr*_input")):
                found = True
                n = cur.name[len("curr"):-len("_input")]
                volt = h / f"in{n}_input"
                if _readable(cur, problems) and _readable(volt, problems):
                    # mV x mA = uW
                    out["ina3221"].append((name, Channel(
                        _label(h, f"in{n}", f"ina3221 channel {n}"),
                        read_uw=lambda c=cur, v=volt: float(_read_int(c)) * float(_read_int(v)))))
    if not found:
        problems.append(f"{_shown(base)}: no power or energy inputs")
    return out


def find_power_meter() -> tuple[PowerMeter | None, str]:
    """The first readable power meter (module doc), or None and why none could be read."""
    problems: list[str] = []
    meter = _rapl(problems)
    if meter is not None:
        return meter, ""
    chans = _hwmon_channels(problems)
    if chans["energy"]:
        picked = _totals([c for _, c in chans["energy"]])
        return EnergyCounterMeter("hwmon energy (" + ", ".join(c.label for c in picked) + ")",
                                  tuple(c.energy_file for c in picked if c.energy_file is not None),
                                  tuple(float("inf") for _ in picked)), ""   # hwmon: no wrap known
    for sort, what in (("power", "hwmon power"), ("ina3221", "INA3221 rails")):
        if chans[sort]:
            picked = _totals([c for _, c in chans[sort]])
            ina = {n for n, _ in chans[sort]} & set(INA2XX)
            label = "INA rails" if ina else what
            return SampledPowerMeter(f"{label} (" + ", ".join(c.label for c in picked) + ")",
                                     tuple(c.read_uw for c in picked if c.read_uw is not None)), ""
    return None, "; ".join(dict.fromkeys(problems))


# ---------------------------------------------------------------- the CPU clock

CPUFREQ = "/sys/devices/system/cpu/cpufreq"


def _int(board: Sysfs, path: str) -> int:
    return int(board.read(path).split()[0])


def _policies(board: Sysfs) -> list[str]:
    names = [n for n in board.listdir(CPUFREQ) if re.fullmatch(r"policy\d+", n)]
    return [f"{CPUFREQ}/{n}" for n in sorted(names, key=lambda n: int(n[len("policy"):]))]


def current_mhz() -> float | None:
    """The clock now: cpufreq's ``scaling_cur_freq`` of the first policy, else the mean of
    /proc/cpuinfo's ``cpu MHz`` lines (a VM reports its nominal clock there), else None."""
    board = Sysfs(_root())
    for p in _policies(board):
        for name in ("scaling_cur_freq", "cpuinfo_cur_freq"):
            try:
                return _int(board, f"{p}/{name}") / 1e3
            except (OSError, ValueError, IndexError):
                pass
    try:
        vals = [float(line.split(":", 1)[1]) for line in PROC_CPUINFO.read_text().splitlines()
                if line.startswith("cpu MHz")]
    except (OSError, ValueError, IndexError):
        return None
    return sum(vals) / len(vals) if vals else None


class CpuFrequency:
    """Setting every cpufreq policy to one frequency and putting the original settings back.

    ``writable`` says whether it can; ``reason`` why not (one phrase); ``levels_mhz`` the
    frequencies the kernel offers (``scaling_available_frequencies`` of the first policy, else
    its ``cpuinfo_min_freq`` and ``cpuinfo_max_freq``); ``policies`` their directories, as
    /sys paths. Reads and writes go through ``sysfs`` (a ``hetcc.runtime.sysfs.Sysfs`` under
    ``SYSFS_ROOT``), which remembers what ``restore()`` puts back."""

    def __init__(self) -> None:
        self.sysfs = Sysfs(_root())
        self.policies = _policies(self.sysfs)
        self.levels_mhz: list[float] = []
        self.writable = False
        self.reason = ""
        self.userspace = False
        if not self.policies:
            self.reason = f"no {CPUFREQ}/policy*"
            return
        p0 = self.policies[0]
        try:
            levels = [int(x) for x in self.sysfs.read(f"{p0}/scaling_available_frequencies").split()]
        except (OSError, ValueError):
            levels = []
        if not levels:
            try:
                levels = [_int(self.sysfs, f"{p0}/cpuinfo_min_freq"), _int(self.sysfs, f"{p0}/cpuinfo_max_freq")]
            except (OSError, ValueError, IndexError) as exc:
                self.reason = f"{p0}: no frequency range ({_why(exc) if isinstance(exc, OSError) else 'unreadable'})"
                return
        self.levels_mhz = sorted({k / 1e3 for k in levels})
        try:
            govs = self.sysfs.read(f"{p0}/scaling_available_governors").split()
        except OSError:
            govs = []
        self.userspace = "userspace" in govs and self.sysfs.exists(f"{p0}/scaling_setspeed")
        for p in self.policies:   # write what is there back to itself: the OS says yes or no
            f = f"{p}/scaling_max_freq"
            try:
                self.sysfs.write(f, self.sysfs.read(f))
            except OSError as exc:
                self.reason = f"{f}: {_why(exc)}"
                return
        self.writable = True

    def set_mhz(self, mhz: float) -> float:
        """Set every policy to the offered level nearest ``mhz``; returns that level (MHz)."""
        if not self.writable:
            raise OSError(errno.EPERM, f"cpufreq is not writable ({self.reason})")
        level = min(self.levels_mhz, key=lambda x: (abs(x - mhz), x)) if self.levels_mhz else mhz
        khz = int(round(level * 1e3))
        for p in self.policies:
            if self.userspace:
                self.sysfs.set(f"{p}/scaling_governor", "userspace")
                self.sysfs.set(f"{p}/scaling_setspeed", str(khz))
                continue
            lo, hi = f"{p}/scaling_min_freq", f"{p}/scaling_max_freq"
            for f in min_max_order(lo, hi, khz, _int(self.sysfs, hi)):
                self.sysfs.set(f, str(khz))
        return level

    def restore(self) -> list[str]:
        """Write back every original value, newest first; returns the ones that failed."""
        return [f"{change.paths[0]} = {change.old[0]}: {_why(refused)}"
                for change, refused in self.sysfs.restore() if refused is not None]


__all__ = ["CpuFrequency", "EnergyCounterMeter", "PowerMeter", "SampledPowerMeter", "current_mhz",
           "find_power_meter"]
