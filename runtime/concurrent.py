"""Real concurrent execution of a workload artifact: every model's pipeline at the same time.

One module (over 600 lines) because the workers, their device queues and the measuring phases
share one lifecycle (fill, count, stop on Ctrl-C, join): split, the stop rules would drift apart.

``run_concurrent("build/mix", 10.0)`` (``hetcc run build/mix --concurrent --duration 10s``):

* one worker thread per stage (slice) of every model, each with its own onnxruntime session
  (the runtime's session options; intra-op threads: the manifest's ``intra_op_num_threads``,
  else one per core of the device's affinity, else one per usable core), the thread pinned to
  its device's cores (``os.sched_setaffinity`` of the thread) where the slice records an
  affinity and this machine has those cores; ``StageInfo.note`` says when it could not be pinned;
* each model keeps its pipeline full: the first stage starts a new inference whenever it is free,
  and each inference is handed on to the next stage through a bounded queue (``QUEUE_SIZE``, 1);
  a stage whose next queue is full holds its finished inference (its device already free) until
  there is room, so each model has at most one inference per stage and one per queue in flight;
* the stages placed on one device share it through the device's queue (``sharing="queue"``, the
  default: one execution at a time, first come first served, as the contention model describes
  a device) or as the OS schedules their threads on its cores (``sharing="os"``: time sharing);
* first each model alone (its pipeline alone: ``alone_ips``, the t_ideal of the measured Jain
  index), then all models at once (``shared_ips``); each phase fills the pipelines, then counts
  the inferences completed within its window;
* beside them, the prediction of the workload manifest's ``contention`` block when the planner
  wrote one (per-model throughput alone and shared, T_w, T_norm, J, O), or ``prediction=``.

Ctrl-C (KeyboardInterrupt in the main thread) ends the phase running, joins the workers and
returns what was measured so far (``stopped == "interrupted"``). The machine's load is recorded
beside the numbers (``load``: load averages and the CPU time other processes used during each
phase, from ``/proc/stat``), since a shared machine's other programs take cores from the stages.

Standard library, numpy and onnxruntime only (``hetcc.runtime``'s rule).
"""
from __future__ import annotations

import collections
import logging
import math
import os
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from . import onnxrt
from .errors import ManifestError, SliceRunError
from .executor import CPU_PROVIDER, Executor, make_session_options
from .manifest import SliceSpec, read_manifest, slice_path
from .verification import random_inputs

__all__ = ["run_concurrent", "ConcurrentResult", "ModelResult", "StageInfo", "Metrics", "jain",
           "read_prediction", "run_stage", "DeviceQueue", "SHARING", "QUEUE_SIZE", "WARMUP_DEFAULT", "SETTLE_MAX_S"]

logger = logging.getLogger(__name__)

#: untimed sequential runs of each model before the first phase (onnxruntime's lazy set-up)
WARMUP_DEFAULT = 3
#: the longest a phase waits for every pipeline to fill (one inference of each model) before its window
SETTLE_MAX_S = 2.0
#: inferences a queue between two stages holds (the contention model's and its simulation's system)
QUEUE_SIZE = 1
#: how often an idle worker looks at the stop flag, and the main thread at the clock (s)
_POLL_S = 0.02


# ---------------------------------------------------------------- results
@dataclass(frozen=True)
class StageInfo:
    """One stage (slice) of one model as it ran: its device and provider, the cores its worker
    thread was pinned to (None: not pinned; ``note`` says why), its intra-op threads, and per
    phase its runs and mean wall ms per run (``alone`` / ``shared``; a stage's wall time under
    sharing includes the time the OS gave its core to other threads)."""

    model: str
    index: int
    device: str
    provider: str
    cores: tuple[int, ...] | None
    threads: int
    note: str
    alone_runs: int = 0
    alone_ms: float | None = None
    shared_runs: int = 0
    shared_ms: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "stage": self.index, "device": self.device, "provider": self.provider,
                "cores": None if self.cores is None else list(self.cores), "threads": self.threads,
                "note": self.note, "alone": {"runs": self.alone_runs, "mean_ms": self.alone_ms},
                "shared": {"runs": self.shared_runs, "mean_ms": self.shared_ms}}


@dataclass(frozen=True)
class ModelResult:
    """One model: measured inferences/s alone and with every model at once (None: not measured,
    e.g. interrupted before), the runs counted, and the prediction when there is one."""

    name: str
    devices: tuple[str, ...]
    alone_ips: float | None
    alone_runs: int
    shared_ips: float | None
    shared_runs: int
    predicted_ips: float | None = None
    predicted_alone_ips: float | None = None
    ideal_ips: float | None = None

    @property
    def error(self) -> float | None:
        """(predicted - measured) / measured of the shared throughput (None without both)."""
        return _rel(self.predicted_ips, self.shared_ips)

    @property
    def alone_error(self) -> float | None:
        """(predicted - measured) / measured of the throughput alone."""
        return _rel(self.predicted_alone_ips, self.alone_ips)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "devices": list(self.devices),
                "measured": {"alone_ips": self.alone_ips, "alone_runs": self.alone_runs,
                             "shared_ips": self.shared_ips, "shared_runs": self.shared_runs},
                "predicted": {"alone_ips": self.predicted_alone_ips, "shared_ips": self.predicted_ips,
                              "ideal_ips": self.ideal_ips},
                "error": {"shared": self.error, "alone": self.alone_error}}


@dataclass(frozen=True)
class Metrics:
    """FairBoost's Table 3 over a workload: T_w (mean inferences/s), J (Jain's index of each
    model's throughput over its t_ideal), and where a normaliser is known T_norm and O = T_norm x J.
    ``jain_alone``: J with t_ideal = each model's pipeline alone (what can be measured here)."""

    throughput_ips: float | None
    jain_alone: float | None
    normalised: float | None = None
    jain: float | None = None
    overall: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"throughput_ips": self.throughput_ips, "jain_alone": self.jain_alone,
                "normalised": self.normalised, "jain": self.jain, "overall": self.overall}


@dataclass(frozen=True)
class ConcurrentResult:
    """What ``run_concurrent`` measured (and what was predicted). ``stopped``: ``"duration"``
    or ``"interrupted"`` (Ctrl-C: the phases not reached are None). ``window_s``: the length of
    each phase's counting window (``alone`` per model, ``shared``). ``prediction``: where the
    predicted numbers come from, or why there are none. ``load``: the machine's load."""

    artifact: str
    target: str
    sharing: str
    rounds: int
    duration_s: float
    alone_s: float
    models: tuple[ModelResult, ...]
    stages: tuple[StageInfo, ...]
    measured: Metrics
    predicted: Metrics | None
    prediction: str
    stopped: str
    window_s: dict[str, Any]
    load: dict[str, Any]
    cores: tuple[int, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def median_error(self) -> float | None:
        """The median |relative error| of the predicted shared throughput over the models."""
        errs = [abs(m.error) for m in self.models if m.error is not None]
        return float(np.median(errs)) if errs else None

    def to_json(self) -> dict[str, Any]:
        return {"artifact": self.artifact, "target": self.target, "sharing": self.sharing, "rounds": self.rounds,
                "duration_s": self.duration_s,
                "alone_s": self.alone_s, "stopped": self.stopped, "window_s": self.window_s,
                "cores": list(self.cores), "prediction": self.prediction,
                "models": [m.to_json() for m in self.models], "stages": [s.to_json() for s in self.stages],
                "measured": self.measured.to_json(),
                "predicted": None if self.predicted is None else self.predicted.to_json(),
                "median_abs_error": self.median_error, "load": self.load, "notes": list(self.notes)}


def _rel(predicted: float | None, measured: float | None) -> float | None:
    if predicted is None or measured is None or not measured > 0:
        return None
    return (predicted - measured) / measured


def jain(x: Sequence[float]) -> float | None:
    """Jain's fairness index (sum x)^2 / (n sum x^2), in (0, 1]; None for no values or all zero."""
    a = np.asarray([v for v in x if v is not None], dtype=np.float64)
    if a.size == 0 or not np.all(np.isfinite(a)) or float(np.sum(a * a)) <= 0:
        return None
    return float(np.sum(a) ** 2 / (a.size * np.sum(a * a)))


# ---------------------------------------------------------------- the prediction
def read_prediction(manifest: Any) -> dict[str, Any] | None:
    """The workload manifest's ``contention`` block as JSON (``{"devices", "models", "metrics"}``),
    or None when the planner wrote none (``independent`` predicts no contention)."""
    w = getattr(manifest, "workload", None)
    block = getattr(w, "contention", None) if w is not None else None
    if block is None:
        return None
    doc = block.to_json() if hasattr(block, "to_json") else block
    return dict(doc) if isinstance(doc, Mapping) else None


def _number(doc: Any, *keys: str) -> float | None:
    for k in keys:
        if not isinstance(doc, Mapping):
            return None
        doc = doc.get(k)
    return float(doc) if isinstance(doc, (int, float)) and not isinstance(doc, bool) and math.isfinite(doc) else None


# ---------------------------------------------------------------- devices
#: how the stages placed on one device share it
SHARING = ("queue", "os")


class DeviceQueue:
    """A device's queue (``sharing="queue"``): one stage execution at a time, first come first
    served; a finishing execution hands the device to the longest-waiting stage."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: collections.deque[threading.Event] = collections.deque()
        self._busy = False

    def acquire(self, stop: threading.Event) -> bool:
        """Wait for the device; False when ``stop`` was set meanwhile (the device is not held)."""
        with self._lock:
            if not self._busy:
                self._busy = True
                return True
            turn = threading.Event()
            self._waiting.append(turn)
        while not turn.wait(_POLL_S):
            if stop.is_set():
                with self._lock:
                    if turn in self._waiting:       # not handed over: leave the queue
                        self._waiting.remove(turn)
                        return False
                break                                # handed over just now: take it, then give it back
        if stop.is_set():
            self.release()
            return False
        return True

    def release(self) -> None:
        with self._lock:
            if self._waiting:
                self._waiting.popleft().set()        # still busy: handed over
            else:
                self._busy = False


class _Free:
    """``sharing="os"``: no queue; the OS schedules the stages' threads on the device's cores."""

    def acquire(self, stop: threading.Event) -> bool:
        return True

    def release(self) -> None:
        pass


# ---------------------------------------------------------------- stages and workers
class _Stage:
    """One slice prepared for its worker: session, what it reads (from the model's feeds or the
    message), what it writes and what the message carries on to later stages."""

    def __init__(self, info: StageInfo, session: Any, spec: SliceSpec, carry: frozenset[str], last: bool) -> None:
        self.info = info
        self.session = session
        self.file = spec.file
        self.out_names = [t.name for t in spec.outputs]
        self.from_model = tuple(i.name for i in spec.inputs if i.source == "model")
        self.from_message = tuple(i.name for i in spec.inputs if i.source != "model")
        self.carry = carry
        self.last = last
        self.times = {"alone": [], "shared": []}
        self.device: DeviceQueue | _Free = _Free()


class _Model:
    def __init__(self, name: str, stages: list[_Stage], feeds: dict[str, np.ndarray]) -> None:
        self.name = name
        self.stages = stages
        self.feeds = feeds
        self.done: list[float] = []   # completion times of the phase running (perf_counter)

    def run_once(self) -> None:
        """One inference through every stage in order, in the calling thread (warm-up)."""
        message: dict[str, np.ndarray] = {}
        for st in self.stages:
            message = run_stage(st, self.feeds, message)


def run_stage(st: _Stage, feeds: Mapping[str, np.ndarray], message: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One execution of a stage: its inputs from the model's feeds and the message of the stage
    before; returns the message for the next stage (what later stages read)."""
    feed = {n: feeds[n] for n in st.from_model}
    feed.update((n, message[n]) for n in st.from_message)
    try:
        outs = st.session.run(st.out_names, feed)
    except Exception as exc:  # onnxruntime's own exception types
        text = " ".join(str(exc).split())
        raise SliceRunError(f"slice {st.file}: onnxruntime failed: {text[:300]}") from None
    out = {n: message[n] for n in st.carry if n in message}
    out.update((n, v) for n, v in zip(st.out_names, outs) if n in st.carry)
    return out


def _usable_cores() -> set[int]:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):   # not Linux
        return set(range(os.cpu_count() or 1))


def _pinning(cores: Sequence[int] | None, device: str, usable: set[int]) -> tuple[tuple[int, ...] | None, str]:
    """(the cores a stage's worker is pinned to, or None, and a note saying why not)."""
    if not cores:
        return None, f"not pinned: the board gives {device} no core affinity"
    if not hasattr(os, "sched_setaffinity"):
        return None, "not pinned: this OS cannot pin a thread (no sched_setaffinity)"
    missing = sorted(set(cores) - usable)
    if missing:
        return None, (f"not pinned: {device}'s cores {list(cores)} are not all here (this process may use "
                      f"{sorted(usable)})")
    return tuple(cores), ""


def _threads(runtime: Any, cores: tuple[int, ...] | None, usable: set[int]) -> int:
    """The intra-op threads ``make_session_options`` gives a session (to report them)."""
    t = runtime.intra_op_num_threads
    return int(t) if t else (len(cores) if cores else max(1, len(usable)))


def _provider_options(options: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): ("1" if v else "0") if isinstance(v, bool) else str(v) for k, v in options.items()}


def _open_model(name: str, ex: Executor, usable: set[int], seed: int) -> _Model:
    """A workload model's stages with sessions of their own (the Executor already checked files,
    sha256s and signatures, and chose each slice's provider)."""
    ort = onnxrt.load()
    pipe = ex.pipeline()
    manifest, root = ex.manifest, ex.artifact_dir
    slices = pipe.slices
    stages = []
    for k, (sl, provider) in enumerate(zip(slices, pipe.providers)):
        later = {i.name for s in slices[k + 1:] for i in s.inputs if i.source != "model"}
        local_cores = None if sl.remote else sl.affinity
        cores, note = _pinning(local_cores, sl.device, usable)
        if sl.remote:
            note = f"not pinned: {sl.device} is a remote device, run here on {provider} (--local-fallback)"
        so = make_session_options(manifest.runtime, shared_cpu=True, affinity=cores, label=f"{root}/{sl.file}")
        providers: list = [(provider, _provider_options(sl.provider_options) if provider == sl.execution_provider
                            else {})]
        if provider != CPU_PROVIDER:
            providers.append(CPU_PROVIDER)
        path = slice_path(root, sl.file, f"{root}/{sl.file}", "file")
        try:
            sess = ort.InferenceSession(str(path), so, providers=providers)
        except Exception as exc:  # onnxruntime raises its own exception types
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ManifestError(f"{root}/{sl.file}: onnxruntime cannot load this slice ({first})") from exc
        info = StageInfo(name, k, sl.device, provider, cores, _threads(manifest.runtime, cores, usable), note)
        stages.append(_Stage(info, sess, sl, frozenset(later), k == len(slices) - 1))
    return _Model(name, stages, random_inputs(pipe.inputs, seed=seed))


class _Phase:
    """One measurement: the given models' pipelines at once for ``seconds`` (after they fill)."""

    def __init__(self, label: str, models: Sequence[_Model], seconds: float) -> None:
        self.label, self.models, self.seconds = label, list(models), seconds
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.threads: list[threading.Thread] = []
        self.window: tuple[float, float] | None = None
        self.interrupted = False

    def _worker(self, model: _Model, st: _Stage, q_in: queue.Queue | None, q_out: queue.Queue | None) -> None:
        """Stage ``st``'s loop: take an inference from the stage before (the first stage starts a
        new one whenever it is free), run it when the device is free, hand it on; a full queue
        holds the finished inference here (the device already released) until there is room."""
        try:
            if st.info.cores is not None:
                os.sched_setaffinity(0, st.info.cores)   # this thread only (Linux: pid 0 = the caller)
            clock, times, stop, device = time.perf_counter, st.times[self.label], self.stop, st.device
            while not stop.is_set():
                if q_in is None:
                    message: dict[str, np.ndarray] = {}
                else:
                    try:
                        message = q_in.get(timeout=_POLL_S)
                    except queue.Empty:
                        continue
                if not device.acquire(stop):
                    break
                try:
                    t0 = clock()
                    out = run_stage(st, model.feeds, message)
                    t1 = clock()
                finally:
                    device.release()
                times.append(t1 - t0)
                if q_out is None:
                    model.done.append(t1)
                    continue
                while not stop.is_set():
                    try:
                        q_out.put(out, timeout=_POLL_S)
                        break
                    except queue.Full:
                        continue
        except BaseException as exc:  # noqa: BLE001 (reported by the main thread)
            self.errors.append(exc)
            self.stop.set()

    def run(self) -> None:
        for m in self.models:
            m.done = []
            n = len(m.stages)
            # q[k] between stage k and k + 1, room for QUEUE_SIZE inferences
            qs = [queue.Queue(maxsize=QUEUE_SIZE) for _ in range(n - 1)]
            for k, st in enumerate(m.stages):
                t = threading.Thread(target=self._worker,
                                     args=(m, st, qs[k - 1] if k else None, qs[k] if k < n - 1 else None),
                                     name=f"hetcc-{m.name}-{k}", daemon=True)
                self.threads.append(t)
        clock = time.perf_counter
        start = clock()
        try:
            for t in self.threads:
                t.start()
            # fill: every pipeline completes one inference (or SETTLE_MAX_S passes)
            while not self.stop.is_set() and clock() - start < SETTLE_MAX_S and not all(m.done for m in self.models):
                time.sleep(_POLL_S / 4)
            t0 = clock()
            self.window = (t0, t0)
            while not self.stop.is_set() and clock() - t0 < self.seconds:
                time.sleep(min(_POLL_S, max(0.0, self.seconds - (clock() - t0))))
            self.window = (t0, clock())
        except KeyboardInterrupt:      # Ctrl-C: the window ends now (no window if it had not begun)
            if self.window is not None:
                self.window = (self.window[0], clock())
            self.interrupted = True
        finally:
            self.stop.set()
            for t in self.threads:
                if t.ident is not None:   # started
                    t.join()
        if self.errors:
            exc = self.errors[0]
            if isinstance(exc, ManifestError):
                raise exc
            raise SliceRunError(f"a stage worker failed: {type(exc).__name__}: {exc}") from exc

    @property
    def seconds_counted(self) -> float | None:
        return None if self.window is None else max(0.0, self.window[1] - self.window[0])

    def throughput(self, m: _Model) -> tuple[float | None, int]:
        """(inferences/s completed within the window, their number); None without a window."""
        if self.window is None:
            return None, 0
        a, b = self.window
        runs = sum(1 for t in m.done if a < t <= b)
        return (runs / (b - a) if b > a else None), runs


# ---------------------------------------------------------------- the machine's load
def _cpu_sample() -> tuple[float, float, float] | None:
    """(busy CPU seconds of the whole machine, CPU seconds of this process, wall) from /proc/stat."""
    try:
        with open("/proc/stat") as f:
            parts = f.readline().split()
        ticks = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError):
        return None
    if not parts or parts[0] != "cpu":
        return None
    v = [int(x) for x in parts[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)      # idle + iowait
    busy = sum(v[:8]) - idle                          # user nice system idle iowait irq softirq steal
    return busy / ticks, time.process_time(), time.perf_counter()


def _others(before: tuple | None, after: tuple | None) -> float | None:
    """Cores' worth of CPU other processes used between two samples (busy - ours) / wall."""
    if before is None or after is None or after[2] <= before[2]:
        return None
    return max(0.0, ((after[0] - before[0]) - (after[1] - before[1])) / (after[2] - before[2]))


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


# ---------------------------------------------------------------- the entry point
def run_concurrent(artifact_dir: str | os.PathLike, duration_s: float, *, alone_s: float | None = None,
                   warmup: int = WARMUP_DEFAULT, seed: int = 0, strict_providers: bool = False,
                   local_fallback: bool = False, prediction: Mapping[str, Any] | None = None,
                   alone: bool = True, sharing: str = "queue", rounds: int = 1,
                   on_phase: Callable[[str], None] | None = None) -> ConcurrentResult:
    """Run every model of the workload artifact ``artifact_dir`` at the same time (module doc).

    ``sharing``: how the stages placed on one device share it: ``queue`` (one execution at a
    time, first come first served: what the contention model describes) or ``os`` (every stage's
    thread runs when the OS schedules it on the device's cores: time sharing). ``rounds``: the
    phases (each model alone, then all at once) run ``rounds`` times in turn, each for its
    duration / ``rounds``, and are counted together: on a machine whose other programs' load
    comes and goes, every phase then sees about the same load.
    ``duration_s``: the counting window of the all-at-once phase (> 0); ``alone_s``: of each
    model's phase alone (default ``duration_s``; ``alone=False`` skips them). ``warmup``: untimed
    sequential runs of each model first. ``prediction``: a ``contention`` block to compare with
    (default: the manifest's). ``on_phase(label)`` is called as each phase starts.
    A model artifact is a ManifestError; a non-positive duration a ValueError.
    """
    for what, value in (("duration_s", duration_s), ("alone_s", alone_s)):
        if value is None and what == "alone_s":
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"run_concurrent: {what} = {value!r}; give a finite number of seconds above 0")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"run_concurrent: rounds = {rounds!r}; give a whole number, at least 1")
    if sharing not in SHARING:
        raise ValueError(f"run_concurrent: sharing = {sharing!r}; one of {', '.join(SHARING)}")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"run_concurrent: warmup = {warmup!r}; give a whole number of runs, 0 or more")
    alone_s = float(duration_s if alone_s is None else alone_s)
    manifest, root, _ = read_manifest(artifact_dir)
    if manifest.kind != "workload":   # before any session opens
        raise ManifestError(f"{root}: a model artifact; running concurrently needs a workload artifact "
                            "(hetcc compile a.onnx b.onnx ... -o DIR), or run this one without --concurrent")
    ex = Executor(artifact_dir, strict_providers=strict_providers, local_fallback=local_fallback)
    if prediction is None:
        prediction = read_prediction(ex.manifest)
        source = ("the workload manifest's contention block (planner "
                  f"{ex.manifest.workload.planner.name})") if prediction is not None else (
            f"none (the workload planner {ex.manifest.workload.planner.name} wrote no contention block; compile "
            "with a workload planner that models contention)")
    else:
        source = "given by the caller"
    usable = _usable_cores()
    models = [_open_model(n, ex.model_executor(n), usable, seed) for n in ex.models]
    if sharing == "queue":   # one queue per device name, shared by every model's stages there
        queues: dict[str, DeviceQueue] = {}
        for m in models:
            for st in m.stages:
                st.device = queues.setdefault(st.info.device, DeviceQueue())
    notes = sorted({f"{st.info.device}: {st.info.note}" for m in models for st in m.stages if st.info.note})
    for m in models:
        for _ in range(warmup):
            m.run_once()

    load: dict[str, Any] = {"loadavg_before": _loadavg(), "others_cores": {}}
    phases = ([(f"alone:{m.name}", [m], alone_s) for m in models] if alone else []) + [("shared", models, float(duration_s))]
    runs: dict[str, dict[str, int]] = {label: {} for label, _, _ in phases}
    counted: dict[str, float] = {}                  # seconds counted per phase, over the rounds
    others: dict[str, list[float]] = {}             # (others' cores x seconds, seconds) per phase
    stopped = "duration"
    for _ in range(rounds):
        for label, members, seconds in phases:
            phase = _Phase("alone" if label != "shared" else "shared", members, seconds / rounds)
            try:
                if on_phase is not None:
                    on_phase(label)
                before = _cpu_sample()
            except KeyboardInterrupt:       # between two phases: the next one is not run
                stopped = "interrupted"
                break
            phase.run()
            took = phase.seconds_counted
            if took is not None:
                counted[label] = counted.get(label, 0.0) + took
                for m in members:
                    runs[label][m.name] = runs[label].get(m.name, 0) + phase.throughput(m)[1]
                busy = _others(before, _cpu_sample())
                if busy is not None and took > 0:
                    acc = others.setdefault(label, [0.0, 0.0])
                    acc[0], acc[1] = acc[0] + busy * took, acc[1] + took
            if phase.interrupted:
                stopped = "interrupted"
                break
        if stopped == "interrupted":
            break
    load["others_cores"] = {label: _round(a / t) if t > 0 else None for label, (a, t) in others.items()}
    alone_ips: dict[str, tuple[float | None, int]] = {}
    shared_ips: dict[str, tuple[float | None, int]] = {}
    windows: dict[str, Any] = {"alone": {}, "shared": counted.get("shared")}
    for label, members, _ in phases:
        secs = counted.get(label)
        for m in members:
            n = runs[label].get(m.name, 0)
            (shared_ips if label == "shared" else alone_ips)[m.name] = (n / secs if secs else None, n)
        if label != "shared":
            windows["alone"][members[0].name] = secs
    load["loadavg_after"] = _loadavg()
    results, stages = [], []
    for m in models:
        p = prediction.get("models", {}).get(m.name) if isinstance(prediction, Mapping) else None
        a, s = alone_ips.get(m.name, (None, 0)), shared_ips.get(m.name, (None, 0))
        results.append(ModelResult(m.name, tuple(st.info.device for st in m.stages), a[0], a[1], s[0], s[1],
                                   _number(p, "throughput_ips"), _number(p, "alone_ips"), _number(p, "ideal_ips")))
        for st in m.stages:
            stages.append(_stage_result(st))
    measured, predicted = _metrics(results, prediction)
    return ConcurrentResult(artifact=str(ex.artifact_dir), target=ex.manifest.target.name, sharing=sharing,
                            rounds=rounds, duration_s=float(duration_s),
                            alone_s=alone_s, models=tuple(results), stages=tuple(stages), measured=measured,
                            predicted=predicted, prediction=source, stopped=stopped, window_s=windows, load=load,
                            cores=tuple(sorted(usable)), notes=tuple(notes))


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def _stage_result(st: _Stage) -> StageInfo:
    def mean_ms(v: list[float]) -> float | None:
        return float(np.mean(v)) * 1e3 if v else None
    a, s = st.times["alone"], st.times["shared"]
    i = st.info
    return StageInfo(i.model, i.index, i.device, i.provider, i.cores, i.threads, i.note,
                     len(a), mean_ms(a), len(s), mean_ms(s))


def _metrics(results: Sequence[ModelResult], prediction: Mapping[str, Any] | None) -> tuple[Metrics, Metrics | None]:
    """Measured and predicted T_w, J. The measured J's t_ideal is each model's pipeline alone, as
    measured; T_norm and O measured divide by the prediction's all-on-the-reference throughput
    (T_w / T_norm of the prediction), which is not measured here."""
    shared = [m.shared_ips for m in results]
    t_w = float(np.mean(shared)) if results and all(x is not None for x in shared) else None
    ratios = [m.shared_ips / m.alone_ips if m.shared_ips is not None and m.alone_ips else None for m in results]
    j_meas = jain(ratios) if results and all(r is not None for r in ratios) else None
    if prediction is None:
        return Metrics(t_w, j_meas), None
    pm = prediction.get("metrics", {}) if isinstance(prediction, Mapping) else {}
    t_pred = _number(pm, "throughput_ips")
    pred_ratios = [m.predicted_ips / m.predicted_alone_ips if m.predicted_ips is not None and m.predicted_alone_ips
                   else None for m in results]
    j_pred_alone = jain(pred_ratios) if all(r is not None for r in pred_ratios) else None
    norm_pred, j_pred, o_pred = _number(pm, "normalised"), _number(pm, "jain"), _number(pm, "overall")
    reference = t_pred / norm_pred if t_pred and norm_pred else None
    ideal = [m.ideal_ips for m in results]
    j_meas_ideal = (jain([m.shared_ips / m.ideal_ips for m in results])
                    if t_w is not None and all(x for x in ideal) else None)
    norm_meas = t_w / reference if t_w is not None and reference else None
    o_meas = norm_meas * j_meas_ideal if norm_meas is not None and j_meas_ideal is not None else None
    return (Metrics(t_w, j_meas, norm_meas, j_meas_ideal, o_meas),
            Metrics(t_pred, j_pred_alone, norm_pred, j_pred, o_pred))

