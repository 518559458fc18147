"""Measured costs for the ``host`` target (MOSAIC's profiler, on this machine).

Each layer is extracted into its own model and timed with onnxruntime under the runtime's
session settings. A boundary between two chained sessions is not free (session call, output
copy, layout reorders), so a microbenchmark times a 1x1-convolution chain cut in two against
the same chain in one session for several tensor sizes and fits boundary = delta + beta * bytes.
A layer timed alone pays one boundary, which is subtracted from its compute time and charged
as transfer_in/out instead (half on each side). The microbenchmark gives the shape of the fit;
its scale is calibrated on the model itself: the layers timed alone minus the whole model timed
once is what its L-1 boundaries cost. Results are cached per model and machine.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from hetcc.compiler.onnxir import ir

from hetcc.compiler.costmodel import transfer_ms
from hetcc.compiler.costtable import CostTable
from hetcc.files.atomic import atomic_write_text
from hetcc.core.paths import cache_dir
from hetcc.compiler.program import LAYERS, TENSORS, Layer, Program, TensorInfo
from hetcc.runtime import onnxrt

logger = logging.getLogger(__name__)

CACHE_VERSION = 5   # 5: a timing that waited for a CPU keeps its CPU time; 4: boundaries scaled unclamped


def cpu_model() -> str:
    """The CPU's model name (Linux /proc/cpuinfo), else whatever platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def machine_fingerprint() -> str:
    ort = onnxrt.load()

    return f"{platform.machine()}|{cpu_model()}|{os.cpu_count()}|ort{ort.__version__}"


def session_options(threads: int | None = None, spinning: bool = False, level: str = "all",
                    affinity: Sequence[int] | None = None) -> Any:
    """The runtime's own session options (so what is profiled is what will run), quiet;
    ``affinity``: the cores the intra-op pool's threads are pinned to, as the runtime pins them."""
    from hetcc.runtime.executor import make_session_options

    so = make_session_options({"allow_spinning": spinning, "graph_optimization_level": level,
                               "intra_op_num_threads": threads}, shared_cpu=False, affinity=affinity)
    so.log_severity_level = 3
    return so


def random_feed(infos: Sequence[TensorInfo], seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs for timing, from the runtime's generator (floats normal, small non-negative ints)."""
    from hetcc.runtime import random_inputs
    from hetcc.runtime.executor import TensorSpec

    return random_inputs([TensorSpec(i.name, i.dtype, i.shape) for i in infos], seed=seed)


def typical(times_ms: Sequence[float]) -> float:
    """What a measurement keeps of its timed runs: the least. Interference from other programs
    only ever adds time, so the least run is the layer's own cost and the one statistic that two
    profiles of a shared machine agree on: ResNet-50's 38 layers timed alone, two profiles one
    after the other, 20 rounds each, on this project's 2-core VM (2026-11-24, four tries): the
    medians differed by 16-27 % per layer in three of them, the minima by 3-9 % (timeit keeps
    the least for the same reason)."""
    return float(min(times_ms))


#: a measurement whose least wall time exceeds this multiple of its least CPU time (the busiest
#: thread's, ``RunClock``) waited for a CPU that other programs held: its CPU time stands in for
#: the wall time. Idle, the two agree within a few percent (ResNet-18 on this project's 2-core VM:
#: 51.9 vs 49.9 ms, the least of 40 runs); beside two busy processes the wall time doubled
#: (115.2 ms) and the CPU time moved 13% (56.5 ms).
BUSY_RATIO = 1.15
#: a measurement that waited for a CPU runs on to this many runs (within BUSY_SECONDS): onnxruntime
#: hands a parked thread's share of an operator to the threads that run, so a run's busiest thread
#: does the whole share only when the others were parked; the least of more runs finds one where
#: they were not (SqueezeNet 1.1 beside two busy processes: 14.0 ms from 5 runs, 12.6 from 100,
#: 11.3 idle)
BUSY_RUNS = 60
BUSY_SECONDS = 2.0


class RunClock:
    """What one run costs in CPU time: the calling thread's (``time.thread_time``) and each other
    thread's of this process (Linux: ``/proc/self/task/<tid>/schedstat``, nanoseconds on a CPU;
    elsewhere the caller's alone). A run's CPU time is its busiest thread's: onnxruntime's
    intra-op pool splits an operator between the caller and its threads, so on an idle machine
    the run lasts as long as the busiest of them, and time spent waiting for a CPU that another
    program holds is not counted (the pool's threads do not spin while the profiler times)."""

    def __init__(self) -> None:
        self.me = threading.get_native_id()
        self.fds: dict[str, int] = {}
        self.proc = os.path.isdir("/proc/self/task")

    def __enter__(self) -> "RunClock":
        return self

    def __exit__(self, *exc: Any) -> None:
        for fd in self.fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds.clear()

    def others(self) -> dict[str, int]:
        """Nanoseconds on a CPU so far of each thread of this process but the caller."""
        if not self.proc:
            return {}
        out = {}
        try:
            tids = os.listdir("/proc/self/task")
        except OSError:
            return {}
        for tid in tids:
            if tid == str(self.me):
                continue
            fd = self.fds.get(tid)
            try:
                if fd is None:
                    fd = self.fds[tid] = os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY)
                out[tid] = int(os.pread(fd, 64, 0).split()[0])
            except (OSError, ValueError, IndexError):     # the thread ended
                continue
        return out

    def run(self, fn: Any) -> tuple[float, float]:
        """(wall ms, CPU ms of the busiest thread) of ``fn()``."""
        a = self.others()
        c0 = time.thread_time_ns()
        t0 = time.perf_counter_ns()
        fn()
        t1 = time.perf_counter_ns()
        c1 = time.thread_time_ns()
        b = self.others()
        busiest = max([c1 - c0] + [b[k] - a.get(k, 0) for k in b])   # a thread started in the run: all of it
        return (t1 - t0) / 1e6, busiest / 1e6


@dataclass(frozen=True)
class Timing:
    """One measurement: the least wall ms of its timed runs (``typical``), or, when that waited for
    a CPU (over ``BUSY_RATIO`` times the least CPU ms: the machine was busy), the least CPU ms of
    the busiest thread (``RunClock``); how many runs were timed; the mean power over them (mW)
    when a power meter was given (``hetcc.runtime.power``); both least times."""

    ms: float
    runs: int
    power_mw: float | None = None
    wall_ms: float | None = None
    cpu_ms: float | None = None

    @property
    def busy(self) -> bool:
        """The wall time waited for a CPU: ``ms`` is the CPU time."""
        return self.wall_ms is not None and self.ms != self.wall_ms


def timing(wall_ms: Sequence[float], cpu_ms: Sequence[float], power_mw: float | None = None) -> Timing:
    """A ``Timing`` of runs timed by ``RunClock``: the least wall time, unless the machine was busy."""
    wall, cpu = typical(wall_ms), typical(cpu_ms)
    ms = cpu if cpu > 0 and wall > BUSY_RATIO * cpu else wall
    return Timing(ms, len(wall_ms), power_mw, wall, cpu)


def measure_session(sess: Any, feed: dict[str, np.ndarray], min_runs: int = 5, min_seconds: float = 0.05,
                    max_runs: int = 200, meter: Any = None) -> Timing:
    """Time ``sess.run`` after two warm-up runs: at least ``min_runs`` runs and ``min_seconds``,
    at most ``max_runs`` (``timing``: the least wall time, or CPU time on a busy machine). ``meter``
    (a ``hetcc.runtime.power.PowerMeter``) is started before the timed runs, sampled after each and
    stopped after the last: the mean power over them."""
    for _ in range(2):
        sess.run(None, feed)
    walls: list[float] = []
    cpus: list[float] = []
    if meter is not None:
        meter.start()
    t_start = time.perf_counter()
    wmin = cmin = np.inf

    def more() -> bool:
        n, spent = len(walls), time.perf_counter() - t_start
        if n >= max_runs:
            return False
        if n < min_runs or spent < min_seconds:
            return True
        # waiting for a CPU: more runs give the busiest thread more chances to run its share alone
        return wmin > BUSY_RATIO * cmin and n < BUSY_RUNS and spent < BUSY_SECONDS

    with RunClock() as clock:
        while more():
            w, c = clock.run(lambda: sess.run(None, feed))
            walls.append(w)
            cpus.append(c)
            wmin, cmin = min(wmin, w), min(cmin, c)
            if meter is not None:
                meter.sample()
    power = meter.stop() if meter is not None else None
    return timing(walls, cpus, power)


def _proto_bytes(graph: ir.Graph, source: ir.Model) -> bytes:
    from hetcc.compiler.frontend import proto_with_data  # external data read in: a session from bytes cannot find it

    model = ir.Model(graph, ir_version=source.ir_version, functions=list(source.functions.values()))
    return proto_with_data(model).SerializeToString()


def layer_session(program: Program, layer: Layer, so: Any) -> tuple[Any, dict[str, np.ndarray]]:
    """(an onnxruntime session of ``layer`` alone, a random feed for it)."""
    ort = onnxrt.load()

    tensors: dict[str, TensorInfo] = program.get(TENSORS)
    graph = ir.convenience.extract(program.graph, list(layer.inputs), list(layer.outputs))
    sess = ort.InferenceSession(_proto_bytes(graph, program.model), so, providers=["CPUExecutionProvider"])
    return sess, random_feed([tensors[n] for n in layer.inputs])


def model_session(program: Program, so: Any) -> tuple[Any, dict[str, np.ndarray]]:
    """(an onnxruntime session of the whole, unsliced model, a random feed for it)."""
    from hetcc.compiler.frontend import proto_with_data

    ort = onnxrt.load()

    tensors: dict[str, TensorInfo] = program.get(TENSORS)
    graph = program.graph
    inputs = [v.name for v in graph.inputs if v.name not in graph.initializers]
    sess = ort.InferenceSession(proto_with_data(program.model).SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess, random_feed([tensors[n] for n in inputs])


def layer_timings(program: Program, layers: Sequence[Layer], so: Any, min_seconds: float = 0.05, *,
                  min_runs: int = 5, max_runs: int = 200) -> list[Timing]:
    """Each layer run alone in its own session (a one-layer slice: the layer, the session's fixed
    cost and its boundary tensors), timed by ``measure_session``; a progress line counts them."""
    from hetcc.planners.context import current_progress

    out = []
    with current_progress().task("profiling layers on this machine", total=len(layers)) as bar:
        for layer in layers:
            sess, feed = layer_session(program, layer, so)
            out.append(measure_session(sess, feed, min_runs=min_runs, min_seconds=min_seconds, max_runs=max_runs))
            bar.update(1)
    return out


def interleaved_timings(sessions: Sequence[tuple[Any, dict[str, np.ndarray]]], min_runs: int = 5,
                        min_seconds: float = 0.05, max_runs: int = 200, label: str = "timing",
                        warmup: int = 1) -> list[Timing]:
    """Time several sessions in rounds, each round running every session ``warmup`` times untimed
    and once timed, until each has ``min_runs`` timed runs and ``min_seconds`` of them (at most
    ``max_runs``): the least of each (``typical``).

    Why rounds: on a machine others use too, load comes in bursts of seconds; timed one after the
    other, a session timed during a burst is slow in every run, its least too. In rounds a
    burst touches a few runs of every session, and the least run of each escapes it. The untimed run
    just before the timed one brings the session's weights and tensors back into the caches the
    other sessions evicted, so a run is timed warm, as in a block of runs of one session."""
    from hetcc.planners.context import current_progress

    for sess, feed in sessions:
        for _ in range(2):
            sess.run(None, feed)
    walls: list[list[float]] = [[] for _ in sessions]
    cpus: list[list[float]] = [[] for _ in sessions]
    spent = np.zeros(len(sessions))
    with current_progress().task(label, total=max_runs) as bar, RunClock() as clock:
        for r in range(max_runs):
            for k, (sess, feed) in enumerate(sessions):
                for _ in range(warmup):
                    sess.run(None, feed)
                w, c = clock.run(lambda: sess.run(None, feed))
                walls[k].append(w)
                cpus[k].append(c)
                spent[k] += w / 1e3
            bar.update(1)
            if r + 1 >= min_runs and float(spent.min()) >= min_seconds:
                break
    return [timing(w, c) for w, c in zip(walls, cpus)]


def model_timing(program: Program, so: Any, min_seconds: float = 0.05, *, min_runs: int = 5,
                 max_runs: int = 200) -> Timing:
    """The whole (unsliced) model in one session, timed by ``measure_session``."""
    sess, feed = model_session(program, so)
    return measure_session(sess, feed, min_runs=min_runs, min_seconds=min_seconds, max_runs=max_runs)


def layers_fingerprint(layers: Sequence[Layer]) -> str:
    """What identifies a layering (each layer's node names, in order): a measurement of "layer N"
    means the same layer only under the same fingerprint (same model, same --max-cut-tensors)."""
    return hashlib.sha256(json.dumps([list(l.nodes) for l in layers]).encode()).hexdigest()[:16]


def boundary_scale(layer_ms: Sequence[float], model_ms: float, t_in: np.ndarray, t_out: np.ndarray) -> float:
    """Factor that makes the boundary model match this model: sum(layers alone) - whole model =
    the L-1 boundaries' cost; 1 when undetermined. Not clamped: the model's own timings decide
    the boundaries' total, and the boundary fit only shares it out by bytes, so a fit taken on a
    busy machine (boundaries many times too costly, or free) cannot move the whole model's
    prediction away from its measured time (it once clamped at 0.2, and a poisoned fit then ate
    every layer's time: 3.1 ms predicted for a model measured at 17.8 ms)."""
    predicted = float(t_out[:-1].sum() + t_in[1:].sum())
    measured = float(np.sum(layer_ms)) - model_ms
    if len(layer_ms) < 2 or predicted <= 0 or measured <= 0:
        return 1.0
    return measured / predicted


#: a profile is consistent when its L-1 boundaries (the layers alone minus the whole model) cost
#: no less than -NEGATIVE_SLACK of the whole (timing noise) and no more than MAX_BOUNDARY_SHARE of
#: the layers' sum; otherwise the machine was too busy for the timings to describe one machine
NEGATIVE_SLACK = 0.10
MAX_BOUNDARY_SHARE = 0.75


def profile_inconsistency(layer_ms: Sequence[float], model_ms: float) -> str | None:
    """Why a profile's timings cannot be one machine's (None when they can): the whole model
    much slower than its layers timed alone, or its boundaries most of its layers' time."""
    total = float(np.sum(layer_ms))
    if not (np.isfinite(total) and np.isfinite(model_ms) and model_ms > 0 and total > 0):
        return "a timing is not a positive number"
    if model_ms > total * (1 + NEGATIVE_SLACK):
        return (f"the whole model ({model_ms:.3g} ms) took longer than its {len(layer_ms)} layers timed alone "
                f"({total:.3g} ms)")
    if len(layer_ms) > 1 and total - model_ms > MAX_BOUNDARY_SHARE * total:
        return (f"its layers timed alone ({total:.3g} ms) took {total / model_ms:.3g}x the whole model "
                f"({model_ms:.3g} ms)")
    return None


@dataclass(frozen=True)
class BoundaryFit:
    """Cost of one CPU->CPU session boundary: delta_ms + beta_ms_per_byte * bytes."""

    delta_ms: float
    beta_ms_per_byte: float
    samples: tuple[tuple[int, float], ...] = ()


def _conv_chain(channels: int, size: int, convs: int, cut: int | None) -> list[bytes]:
    """1x1 conv chain on [1, C, H, W]; with ``cut`` it is split into two models at that conv."""
    rng = np.random.default_rng(0)
    weights = [ir.tensor(rng.standard_normal((channels, channels, 1, 1)).astype(np.float32) * 0.1, name=f"w{i}")
               for i in range(convs)]

    def build(lo: int, hi: int) -> bytes:
        shape = ir.Shape([1, channels, size, size])
        x = ir.Value(name=f"t{lo}", shape=shape, type=ir.TensorType(ir.DataType.FLOAT))
        cur = x
        nodes, inits = [], []
        for i in range(lo, hi):
            w = ir.Value(name=f"w{i}", shape=ir.Shape(weights[i].shape), type=ir.TensorType(ir.DataType.FLOAT),
                         const_value=weights[i])
            inits.append(w)
            node = ir.Node("", "Conv", [cur, w], outputs=[ir.Value(name=f"t{i + 1}", shape=shape,
                                                                     type=ir.TensorType(ir.DataType.FLOAT))])
            nodes.append(node)
            cur = node.outputs[0]
        graph = ir.Graph([x], [cur], nodes=nodes, initializers=inits, opset_imports={"": 17}, name="chain")
        return ir.to_proto(ir.Model(graph, ir_version=8)).SerializeToString()

    if cut is None:
        return [build(0, convs)]
    return [build(0, cut), build(cut, convs)]


def measure_boundary(so_factory: Any = session_options, sizes: Sequence[tuple[int, int]] = ((16, 14), (32, 28), (64, 56), (128, 56)),
                     convs: int = 4, min_seconds: float = 0.1) -> BoundaryFit:
    """Fit the per-boundary cost from the chain cut in two minus the chain in one session."""
    ort = onnxrt.load()

    samples = []
    for channels, size in sizes:
        nbytes = channels * size * size * 4
        feed = {"t0": np.random.default_rng(1).standard_normal((1, channels, size, size)).astype(np.float32)}
        mono = ort.InferenceSession(_conv_chain(channels, size, convs, None)[0], so_factory(spinning=False),
                                    providers=["CPUExecutionProvider"])
        parts = [ort.InferenceSession(b, so_factory(spinning=False), providers=["CPUExecutionProvider"])
                 for b in _conv_chain(channels, size, convs, convs // 2)]

        def chained(f: dict[str, np.ndarray]) -> None:
            mid = parts[0].run(None, f)[0]
            parts[1].run(None, {f"t{convs // 2}": mid})

        t_mono, t_chain = [], []
        for _ in range(3):
            mono.run(None, feed)
            chained(feed)
        t_end = time.perf_counter() + min_seconds
        while time.perf_counter() < t_end or len(t_mono) < 10:
            t0 = time.perf_counter()
            mono.run(None, feed)
            t1 = time.perf_counter()
            chained(feed)
            t2 = time.perf_counter()
            t_mono.append(t1 - t0)
            t_chain.append(t2 - t1)
        samples.append((nbytes, max(0.0, (typical(t_chain) - typical(t_mono)) * 1e3)))
    x = np.array([s[0] for s in samples], dtype=np.float64)
    y = np.array([s[1] for s in samples], dtype=np.float64)
    beta, delta = np.polyfit(x, y, 1)
    return BoundaryFit(delta_ms=float(max(delta, 0.0)), beta_ms_per_byte=float(max(beta, 0.0)), samples=tuple(samples))


def _measure_boundary_shown() -> BoundaryFit:
    """``measure_boundary()`` under a progress line (about a second, once per machine)."""
    from hetcc.planners.context import current_progress

    with current_progress().task("measuring the session-boundary cost on this machine"):
        return measure_boundary()


def _cached(key: str, compute: Any, use_cache: bool = True, keep: Any = None) -> Any:
    """``compute()``'s JSON value, read from the profile cache when there (and ``use_cache``);
    ``keep(value)``: whether a fresh value may be cached (a profile that failed its own
    consistency check is used once, never cached)."""
    path = cache_dir() / "profiles" / f"{key}.json"
    if use_cache:
        try:
            value = json.loads(path.read_text())
            if keep is None or keep(value):
                return value
        except (OSError, ValueError):
            pass
    value = compute()
    if keep is not None and not keep(value):
        return value
    try:
        atomic_write_text(path, json.dumps(value))
    except OSError as exc:  # a read-only home is not an error, just no cache
        logger.debug("profile cache not written: %s", exc)
    return value


def boundary_fit(use_cache: bool = True) -> BoundaryFit:
    """This machine's session-boundary cost (``measure_boundary``), cached per machine."""
    b_key = hashlib.sha256(json.dumps(["boundary", machine_fingerprint(), CACHE_VERSION]).encode()).hexdigest()[:32]
    fit = _cached(f"boundary-{b_key}", lambda: _measure_boundary_shown().__dict__, use_cache)
    return BoundaryFit(delta_ms=float(fit["delta_ms"]), beta_ms_per_byte=float(fit["beta_ms_per_byte"]),
                       samples=tuple(tuple(x) for x in fit.get("samples", ())))


def costs_from_profile(layers: Sequence[Layer], target: Any, legal_dev: np.ndarray, layer_ms: Sequence[float],
                       model_ms: float, fit: BoundaryFit, source: str = "measured") -> CostTable:
    """The cost table of a measured target from a profile: each layer's time alone, the whole
    model's time and the boundary fit. The one builder behind the profile cache (``measured_costs``)
    and a measurement file (``--target FILE.csv``, ``hetcc.measure.measured_target``)."""
    layers = tuple(layers)
    layer_ms = np.asarray(layer_ms, dtype=np.float64)
    delta, beta = fit.delta_ms, fit.beta_ms_per_byte
    states = target.states()
    dev_index = {d.name: i for i, d in enumerate(target.devices)}
    n_l, n_s = len(layers), len(states)
    in_b = np.array([l.input_bytes for l in layers], dtype=np.float64)
    out_b = np.array([l.output_bytes for l in layers], dtype=np.float64)
    # half of a boundary (delta + beta * bytes) on each side of it: the cost model's Eq. 1-2
    t_in = transfer_ms(in_b, beta * 1e6 / 2, delta / 2)
    t_out = transfer_ms(out_b, beta * 1e6 / 2, delta / 2)
    scale = boundary_scale(layer_ms, float(model_ms), t_in, t_out)
    logger.info("host boundary model: delta %.1f us, beta %.1f us/MB, x%.2f calibrated on the model",
                delta * 1e3, beta * 1e9, scale)
    t_in, t_out = t_in * scale, t_out * scale
    compute = np.maximum(layer_ms - t_in - t_out, 0.02 * layer_ms)
    legal = np.stack([legal_dev[:, dev_index[s.device]] for s in states], axis=1)
    rep = lambda v: np.repeat(v[:, None], n_s, axis=1)  # noqa: E731
    zeros = np.zeros((n_l, n_s))
    return CostTable(layers=layers, states=tuple(states), latency_ms=rep(compute), power_mw=zeros,
                     transfer_in_ms=rep(t_in), transfer_out_ms=rep(t_out), transfer_in_mj=zeros.copy(),
                     transfer_out_mj=zeros.copy(), legal=legal,
                     capacity_bytes=np.full(n_s, np.inf), base_power_mw=0.0, source=source)


#: how often a profile is measured before an inconsistent one is used as it is (uncached)
PROFILE_ATTEMPTS = 3


def _load_text() -> str:
    try:
        return " / ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:       # pragma: no cover - not on Linux
        return "unknown"


def pinned_cores(target: Any) -> tuple[int, ...] | None:
    """The cores a measured target's layers are profiled on: when every device of the board is a
    group of this machine's cores of one size (``host-cores``: one core each), the first device's
    (the cores are one model, so one profile serves them all); None for ``host`` (all cores,
    the runtime's default threads) or a board whose devices differ in size or lack an affinity."""
    groups = [d.affinity for d in target.devices]
    if not groups or any(not g for g in groups) or len({len(g) for g in groups}) != 1:
        return None
    return tuple(groups[0])


class pinned_thread:
    """Inside, the calling thread runs on ``cores`` only (Linux ``sched_setaffinity`` of the
    thread); nothing where ``cores`` is None, the OS cannot pin or those cores are not here."""

    def __init__(self, cores: Sequence[int] | None) -> None:
        self.cores, self.before = cores, None

    def __enter__(self) -> "pinned_thread":
        if self.cores and hasattr(os, "sched_setaffinity"):
            before = os.sched_getaffinity(0)
            if set(self.cores) <= before:
                os.sched_setaffinity(0, self.cores)
                self.before = before
            else:
                logger.warning("cores %s are not all on this machine (it has %s): profiled unpinned",
                               list(self.cores), sorted(before))
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.before is not None:
            os.sched_setaffinity(0, self.before)


def measured_costs(program: Program, target: Any, legal_dev: np.ndarray, repeats: int | None = None,
                   use_cache: bool = True) -> CostTable:
    """Cost table for a measured target: every state is this machine's CPU. Profiles are cached
    per model and machine (``~/.cache/hetcc/profiles``); ``use_cache=False`` measures afresh.
    A board of core groups (``pinned_cores``) is profiled with one thread per core of a group,
    pinned to the first group's cores."""
    layers: tuple[Layer, ...] = program.get(LAYERS)
    fp = machine_fingerprint()
    pin = pinned_cores(target)
    threads = None if pin is None else len(pin)
    so = session_options(threads, affinity=pin)
    min_seconds = 0.05 if repeats is None else 0.01 * repeats
    what = [program.source_sha256, [l.nodes for l in layers], fp, CACHE_VERSION, min_seconds]
    if pin is not None:   # host's key unchanged
        what.append(["pinned", list(pin)])
    layer_key = hashlib.sha256(json.dumps(what).encode()).hexdigest()[:32]

    def measure() -> dict[str, Any]:
        why = None
        for _ in range(PROFILE_ATTEMPTS):          # a busy moment passes: measure again
            with pinned_thread(pin):
                ts = [*layer_timings(program, layers, so, min_seconds), model_timing(program, so, min_seconds)]
            got = {"layers_ms": [t.ms for t in ts[:-1]], "model_ms": ts[-1].ms}
            busy = sum(t.busy for t in ts)
            if busy:
                got["busy_timings"] = busy
                logger.warning("the machine was busy while %s was profiled (load average %s on %d cores): %d of %d "
                               "timings waited for a CPU, so their CPU time stands in for their wall time",
                               program.name, _load_text(), os.cpu_count() or 1, busy, len(ts))
            why = profile_inconsistency(got["layers_ms"], got["model_ms"])
            if why is None:
                return got
        logger.warning("the host profile of %s is inconsistent after %d tries (%s; load average %s on %d cores): "
                       "it is used for this compile but not cached; profile again when the machine is quieter "
                       "(--reprofile)", program.name, PROFILE_ATTEMPTS, why, _load_text(), os.cpu_count() or 1)
        return {**got, "inconsistent": why}

    profile = _cached(f"layers-{layer_key}", measure, use_cache, keep=lambda v: not v.get("inconsistent"))
    return costs_from_profile(layers, target, legal_dev, profile["layers_ms"], float(profile["model_ms"]),
                              boundary_fit(use_cache))
