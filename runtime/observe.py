"""What AutoScale observes before each inference (Table 1's run-time features): the CPU
utilisation and memory usage of co-running processes, read from ``/proc`` with this process
left out, and the signal strength (RSSI) of the Wi-Fi and peer-to-peer links, read from a trace
file or ``/proc/net/wireless``.

Standard library only. An observation costs a few file reads (tens of microseconds):

* **CPU**: the machine's busy fraction between two samples of ``/proc/stat`` (all CPUs: user,
  nice, system, irq, softirq, steal over the total), minus this process's own CPU time over the
  same span (``time.process_time``: user + system of every thread, so onnxruntime's count as ours).
  Each observation is one new sample against the previous one; when less than ``min_interval_s``
  (0.1 s) passed, the last value is returned instead of a noisy one (the kernel counts in clock
  ticks of 10 ms: over 20 ms of 2 CPUs one tick is 25%).
* **Memory**: ``MemTotal - MemAvailable`` from ``/proc/meminfo`` minus this process's resident
  set (``/proc/self/statm``), over ``MemTotal``; with ``mem_baseline=True`` minus what the
  others used when the observer started (so a quiet machine reads 0 and a co-runner's
  allocation is what shows). It is re-read at most every ``mem_interval_s`` (0.1 s).

The /proc files stay open and are re-read with one ``pread`` each (``ProcFile``): an uncached
observation costs ~20 us instead of ~150 us for opening, reading and closing each file.
* **RSSI**: a CSV trace ``t,wifi_dbm,p2p_dbm`` (one row per inference, the last row held after
  the end; or by time: the last row whose ``t`` in seconds since the start has passed; an empty
  cell is no reading), else ``/proc/net/wireless`` (``level`` of the first ``wl*`` interface for
  Wi-Fi and the first ``p2p*`` one for peer-to-peer), else no reading (None, which Table 1 counts
  as Regular). /proc/net/wireless is re-read at most once a second.
"""
from __future__ import annotations

import csv
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal

from .errors import TraceError

__all__ = ["Observation", "Observer", "RssiTrace", "CpuSampler", "ProcFile", "cpu_times", "meminfo", "read_meminfo",
           "read_wireless", "self_cpu_seconds", "MAX_TRACE_ROWS"]

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
#: the largest trace read, in rows
MAX_TRACE_ROWS = 1_000_000
TRACE_COLUMNS = ("t", "wifi_dbm", "p2p_dbm")


@dataclass(frozen=True)
class Observation:
    """One observation: co-runner CPU and memory use as fractions in [0, 1], the two signal
    strengths in dBm (None: no reading) and where the signal came from."""

    co_cpu: float
    co_mem: float
    rssi_w: float | None
    rssi_p: float | None
    rssi_source: str = "none"

    def to_json(self) -> dict:
        return {"co_cpu": round(self.co_cpu, 4), "co_mem": round(self.co_mem, 4), "rssi_w": self.rssi_w,
                "rssi_p": self.rssi_p, "rssi_source": self.rssi_source}


# ---------------------------------------------------------------------------------------------
# CPU


def _read_small(path: Path) -> str:
    with open(path, "rb") as f:
        return f.read(1 << 16).decode("ascii", "replace")


#: clock ticks per second of /proc's CPU times
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class ProcFile:
    """A /proc file kept open and re-read with one ``pread`` at offset 0 (the kernel regenerates
    it): ~2-8 us instead of ~20 us for an open, read and close each time."""

    def __init__(self, path: str | os.PathLike, size: int = 1 << 14) -> None:
        self.path = Path(path)
        self.size = size
        self.fd: int | None = None

    def read(self) -> str:
        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        return os.pread(self.fd, self.size, 0).decode("ascii", "replace")

    def close(self) -> None:
        if self.fd is not None:
            try:
                os.close(self.fd)
            finally:
                self.fd = None

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass


def cpu_times(text: str) -> tuple[int, int]:
    """(busy, total) clock ticks of all CPUs from /proc/stat's text (its first line)."""
    line = text.split("\n", 1)[0].split()
    if not line or line[0] != "cpu":
        raise ValueError("no aggregate cpu line")
    v = [int(x) for x in line[1:9]] + [0] * max(0, 8 - len(line[1:9]))
    user, nice, system, idle, iowait, irq, softirq, steal = v[:8]
    busy = user + nice + system + irq + softirq + steal
    return busy, busy + idle + iowait


def self_cpu_seconds(proc: str | os.PathLike = "/proc") -> float:
    """utime + stime of this process (all its threads) from ``{proc}/self/stat``, in seconds (the
    sampler's default is ``time.process_time``, the same sum without the clock-tick rounding)."""
    text = _read_small(Path(proc) / "self" / "stat")
    rest = text[text.rindex(")") + 2:].split()   # the command may hold spaces and parentheses
    return (int(rest[11]) + int(rest[12])) / CLK_TCK   # fields 14 and 15 of proc(5)


class CpuSampler:
    """Co-runner CPU utilisation: the machine's busy fraction minus this process's share between
    successive calls (the first call measures against the sampler's creation). ``own_seconds``:
    this process's CPU seconds (default ``time.process_time``: every thread, nanosecond clock)."""

    def __init__(self, proc: str | os.PathLike = "/proc", min_interval_s: float = 0.1,
                 own_seconds: Callable[[], float] | None = None) -> None:
        self.proc = Path(proc)
        self.min_interval_s = float(min_interval_s)
        self.own_seconds = own_seconds or time.process_time
        self.available = True
        self._last = 0.0
        self._stat = ProcFile(self.proc / "stat", 4096)
        try:
            self._prev = (time.monotonic(), *cpu_times(self._stat.read()), self.own_seconds())
        except (OSError, ValueError, IndexError):
            self.available = False
            self._stat.close()

    def sample(self) -> float:
        """The co-runner share of all CPUs since the last sample, in [0, 1] (0 without /proc)."""
        if not self.available:
            return 0.0
        now = time.monotonic()
        if now - self._prev[0] < self.min_interval_s:
            return self._last
        try:
            busy, total = cpu_times(self._stat.read())
            own = self.own_seconds()
        except (OSError, ValueError, IndexError):
            return self._last
        _t, busy0, total0, own0 = self._prev
        d_total = total - total0
        if d_total <= 0:
            return self._last
        value = ((busy - busy0) / CLK_TCK - (own - own0)) / (d_total / CLK_TCK)
        self._last = min(1.0, max(0.0, round(value, 6)))
        self._prev = (now, busy, total, own)
        return self._last

    def close(self) -> None:
        self._stat.close()


# ---------------------------------------------------------------------------------------------
# memory


def meminfo(text: str) -> tuple[int, int]:
    """(total, used by everything = MemTotal - MemAvailable) in bytes, from /proc/meminfo's text."""
    fields: dict[str, int] = {}
    for line in text.split("\n", 4)[:4]:       # MemTotal, MemFree, MemAvailable lead (proc(5))
        name, _, value = line.partition(":")
        parts = value.split()
        if parts and name in ("MemTotal", "MemAvailable", "MemFree"):
            fields[name] = int(parts[0]) * 1024
    if "MemTotal" not in fields:                # an unusual order: read every line
        for line in text.splitlines():
            name, _, value = line.partition(":")
            parts = value.split()
            if parts and name in ("MemTotal", "MemAvailable", "MemFree"):
                fields[name] = int(parts[0]) * 1024
    total = fields["MemTotal"]
    avail = fields.get("MemAvailable", fields.get("MemFree", total))
    return total, max(0, total - avail)


def read_meminfo(proc: str | os.PathLike = "/proc") -> tuple[int, int]:
    """(total, used by everything = MemTotal - MemAvailable) in bytes."""
    return meminfo(_read_small(Path(proc) / "meminfo"))


# ---------------------------------------------------------------------------------------------
# RSSI


def read_wireless(proc: str | os.PathLike = "/proc") -> tuple[float | None, float | None]:
    """(Wi-Fi dBm, peer-to-peer dBm) from /proc/net/wireless's ``level`` column: the first
    interface named ``p2p*`` is peer-to-peer, the first other one (``wlan0``, ``wlp2s0``) Wi-Fi;
    (None, None) when the file is absent or lists none."""
    try:
        text = _read_small(Path(proc) / "net" / "wireless")
    except OSError:
        return None, None
    wifi = p2p = None
    for line in text.splitlines()[2:]:
        name, sep, rest = line.partition(":")
        parts = rest.split()
        if not sep or len(parts) < 3:
            continue
        try:
            level = float(parts[2].rstrip("."))
        except ValueError:
            continue
        if level > 0:            # some drivers report 256 - |dBm|
            level -= 256
        name = name.strip()
        if name.startswith("p2p"):
            p2p = level if p2p is None else p2p
        elif wifi is None:
            wifi = level
    return wifi, p2p


class RssiTrace:
    """A signal-strength trace: a CSV with the header ``t,wifi_dbm,p2p_dbm`` (in any order; more
    columns are ignored), ``t`` non-decreasing seconds, dBm numbers in [-150, 0] or empty (no
    reading). ``at(i)`` is row i (the last row after the end), ``at_time(s)`` the last row whose t
    is at most s seconds. A bad file is one TraceError line naming the file, line and fix."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        shown = str(path)
        try:
            f = open(self.path, newline="", encoding="utf-8")
        except FileNotFoundError:
            raise TraceError(f"{shown}: no such trace file; pass a CSV with the header t,wifi_dbm,p2p_dbm") from None
        except IsADirectoryError:
            raise TraceError(f"{shown}: a directory, not a trace file; pass a CSV t,wifi_dbm,p2p_dbm") from None
        except OSError as e:
            raise TraceError(f"{shown}: cannot read the trace file ({e.strerror or e})") from None
        rows: list[tuple[float, float | None, float | None]] = []
        with f:
            try:
                reader = csv.reader(f)
                header = next(reader, None)
                if header is None:
                    raise TraceError(f"{shown}: empty; expected the header t,wifi_dbm,p2p_dbm and one row per "
                                     "inference (or per time step)")
                header = [h.strip() for h in header]
                missing = [c for c in TRACE_COLUMNS if c not in header]
                if missing:
                    raise TraceError(f"{shown}: line 1: no column {missing[0]!r} (header {','.join(header)!r}); "
                                     "expected the header t,wifi_dbm,p2p_dbm")
                cols = [header.index(c) for c in TRACE_COLUMNS]
                for lineno, row in enumerate(reader, start=2):
                    if not row or all(not c.strip() for c in row):
                        continue
                    if len(rows) >= MAX_TRACE_ROWS:
                        raise TraceError(f"{shown}: more than {MAX_TRACE_ROWS} rows; shorten the trace")
                    if len(row) < len(header):
                        raise TraceError(f"{shown}: line {lineno}: {len(row)} cells, the header has {len(header)}")
                    rows.append(self._row(row, cols, lineno, shown, rows[-1][0] if rows else None))
            except UnicodeDecodeError:
                raise TraceError(f"{shown}: not UTF-8 text; expected a CSV t,wifi_dbm,p2p_dbm") from None
            except csv.Error as e:
                raise TraceError(f"{shown}: not a CSV file ({e})") from None
        if not rows:
            raise TraceError(f"{shown}: no rows after the header; add one row per inference (or per time step)")
        self.rows = rows

    @staticmethod
    def _row(row: list[str], cols: list[int], lineno: int, shown: str,
             prev_t: float | None) -> tuple[float, float | None, float | None]:
        out: list[float | None] = []
        for name, i in zip(TRACE_COLUMNS, cols):
            cell = row[i].strip()
            if cell == "" and name != "t":
                out.append(None)
                continue
            try:
                v = float(cell)
            except ValueError:
                raise TraceError(f"{shown}: line {lineno}: {name} {cell!r} is not a number") from None
            if not math.isfinite(v):
                raise TraceError(f"{shown}: line {lineno}: {name} {cell!r} is not a finite number")
            if name == "t":
                if v < 0 or (prev_t is not None and v < prev_t):
                    raise TraceError(f"{shown}: line {lineno}: t {cell} goes backwards or below 0; times are "
                                     "non-decreasing seconds from the start")
            elif not -150.0 <= v <= 0.0:
                raise TraceError(f"{shown}: line {lineno}: {name} {cell} dBm is outside [-150, 0]; a signal "
                                 "strength is a negative dBm value (e.g. -60)")
            out.append(v)
        return out[0], out[1], out[2]  # type: ignore[return-value]

    def __len__(self) -> int:
        return len(self.rows)

    def at(self, i: int) -> tuple[float | None, float | None]:
        row = self.rows[min(max(0, int(i)), len(self.rows) - 1)]
        return row[1], row[2]

    def at_time(self, seconds: float) -> tuple[float | None, float | None]:
        best = self.rows[0]
        for row in self.rows:
            if row[0] > seconds:
                break
            best = row
        return best[1], best[2]


# ---------------------------------------------------------------------------------------------
# the observer


class Observer:
    """Observes the run-time features before each inference: ``observe(i)`` (i: the inference's
    index, which a trace read per inference uses)."""

    def __init__(self, trace: str | os.PathLike | RssiTrace | None = None,
                 trace_by: Literal["inference", "time"] = "inference", proc: str | os.PathLike = "/proc",
                 mem_baseline: bool = False, min_interval_s: float = 0.1, mem_interval_s: float = 0.1,
                 wireless_interval_s: float = 1.0, own_seconds: Callable[[], float] | None = None) -> None:
        if trace_by not in ("inference", "time"):
            raise TraceError(f"trace_by {trace_by!r}: expected 'inference' or 'time'")
        self.trace = trace if isinstance(trace, RssiTrace) or trace is None else RssiTrace(trace)
        self.trace_by = trace_by
        self.proc = Path(proc)
        self.cpu = CpuSampler(self.proc, min_interval_s, own_seconds)
        self.start = time.monotonic()
        self.mem_interval_s = float(mem_interval_s)
        self.wireless_interval_s = float(wireless_interval_s)
        self._mem_ok = True
        self._meminfo = ProcFile(self.proc / "meminfo")
        self._statm = ProcFile(self.proc / "self" / "statm", 256)
        self._baseline = 0
        self._mem_cache: tuple[float, float] | None = None
        self._wireless: tuple[float, float | None, float | None] | None = None
        if mem_baseline:
            self._baseline = self._others_mem()[1]

    def _others_mem(self) -> tuple[int, int]:
        if not self._mem_ok:
            return 1, 0
        try:
            total, used = meminfo(self._meminfo.read())
            own = int(self._statm.read().split()[1]) * PAGE_SIZE
        except (OSError, ValueError, IndexError, KeyError):
            self._mem_ok = False
            self._meminfo.close()
            self._statm.close()
            return 1, 0
        return total, max(0, used - own)

    def co_mem(self) -> float:
        now = time.monotonic()
        if self._mem_cache is not None and now - self._mem_cache[0] < self.mem_interval_s:
            return self._mem_cache[1]
        total, others = self._others_mem()
        value = min(1.0, max(0.0, (others - self._baseline) / total)) if total > 0 else 0.0
        self._mem_cache = (now, value)
        return value

    def rssi(self, i: int = 0) -> tuple[float | None, float | None, str]:
        if self.trace is not None:
            if self.trace_by == "time":
                w, p = self.trace.at_time(time.monotonic() - self.start)
            else:
                w, p = self.trace.at(i)
            return w, p, "trace"
        now = time.monotonic()
        if self._wireless is None or now - self._wireless[0] >= self.wireless_interval_s:
            self._wireless = (now, *read_wireless(self.proc))
        w, p = self._wireless[1], self._wireless[2]
        return w, p, ("/proc/net/wireless" if (w is not None or p is not None) else "none")

    def observe(self, i: int = 0) -> Observation:
        w, p, src = self.rssi(i)
        return Observation(self.cpu.sample(), self.co_mem(), w, p, src)

    def close(self) -> None:
        """Close the /proc files kept open."""
        self.cpu.close()
        self._meminfo.close()
        self._statm.close()
