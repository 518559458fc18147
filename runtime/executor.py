"""Over 600 lines: ``Executor`` builds ``Pipeline``s from private set-up (``_Options``, ``_Step``, ``_activate``).

The thin executor: a ``Pipeline`` is one sequential chain of onnxruntime sessions (the slices
of one variant of one model); ``Executor`` opens an artifact and picks the pipeline to run (a
variant of a model artifact, or a model of a workload artifact).

Everything that can be decided before the first inference is decided when a pipeline is built
(sha256 checks, providers, session options, which tensors each slice reads and when each
intermediate dies), so ``Pipeline.run`` is a short loop over prepared steps. ``Pipeline.benchmark``
times many runs (``--repeat`` or ``--duration``) and keeps every sample (``Benchmark``).
"""
from __future__ import annotations

import logging
import math
import os
import threading
import time
from array import array
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, Union

import numpy as np

from . import onnxrt
from .errors import InferenceTimeout, InputError, ManifestError, RemoteSliceError, SliceRunError
from .hardware import Hardware, HardwareReport, configuration_key, offline_cpus
from .offload import OFFLOAD_TIMEOUT_S, FallbackRecord, OffloadError, OffloadRecord, RemoteSlice, ShapedLink, is_http
from .manifest import (MANIFEST_NAME, Manifest, ModelInfo, RuntimeInfo, SliceSpec, TensorSpec, Variant,
                       artifact_file, read_manifest, sha256_file, slice_path, to_json)

__all__ = ["Executor", "Pipeline", "Benchmark", "TensorSpec", "make_session_options", "CPU_PROVIDER",
           "BENCHMARK_RUNS_MAX"]

ort = onnxrt.load()   # onnxruntime, telemetry off unless HETCC_ORT_TELEMETRY=1

logger = logging.getLogger(__name__)

CPU_PROVIDER = "CPUExecutionProvider"

#: the most timed runs one ``Pipeline.benchmark`` keeps (8 bytes x (1 + slices) each); a
#: ``duration_s`` benchmark stops there (``stopped == "max_runs"``)
BENCHMARK_RUNS_MAX = 1_000_000

_OPT_LEVELS = {
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
}

ProvidersOverride = Union[str, Mapping[Union[int, str], str], None]


def _usable_cores() -> set[int]:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return set(range(os.cpu_count() or 1))


def _thread_cap() -> int:
    """The most intra-op threads a session may ask for here: 4 x the CPUs (ORT starts them all at
    session creation; 20000 of them take minutes and gigabytes)."""
    return 4 * max(1, os.cpu_count() or 1)


def check_threads(threads: Any, shown: str) -> None:
    """ManifestError unless ``runtime.intra_op_num_threads`` is null or in [1, 4 x the CPUs here]."""
    cap = _thread_cap()
    if threads is None:
        return
    if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= cap:
        raise ManifestError(
            f"{shown}: runtime.intra_op_num_threads = {threads!r} is not in [1, {cap}] (4 x the "
            f"{max(1, os.cpu_count() or 1)} CPUs here); set it to null (one thread per usable core) or a number "
            "in that range")


def _default_threads() -> int:
    return max(1, len(_usable_cores()))


def make_session_options(
    runtime: Mapping[str, Any] | RuntimeInfo,
    *,
    shared_cpu: bool,
    affinity: Sequence[int] | None = None,
    label: str = "",
) -> ort.SessionOptions:
    """SessionOptions from the manifest's ``runtime`` block (a RuntimeInfo or its JSON form).

    ``shared_cpu``: several sessions take turns on the same cores; spinning is then switched
    off, since an idle session's spinning threads starve the active one.
    ``affinity``: core ids (0-based, as Linux numbers them) to pin intra-op threads
    to; ignored, with a debug log, where those cores do not exist.
    """
    if isinstance(runtime, RuntimeInfo):
        runtime = to_json(runtime)
    so = ort.SessionOptions()
    so.log_severity_level = 4   # a failing kernel is reported once, as SliceRunError, not also by ORT's logger
    threads = runtime.get("intra_op_num_threads") or None   # bounded by Executor (check_threads)
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = _OPT_LEVELS[runtime.get("graph_optimization_level", "all")]
    if shared_cpu or not runtime.get("allow_spinning", False):
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if affinity:
        cores = list(affinity)
        missing = sorted(set(cores) - _usable_cores())
        if missing:
            logger.debug("%s: cores %s not available here; CPU affinity %s ignored", label, missing, cores)
        else:
            threads = threads or len(cores)
            if threads > 1:
                # ORT pins the pool's threads only (threads - 1 of them; the caller's thread is
                # the first) and numbers logical processors from 1.
                spec = ";".join(str(cores[i % len(cores)] + 1) for i in range(1, threads))
                so.add_session_config_entry("session.intra_op_thread_affinities", spec)
                logger.debug("%s: intra-op threads pinned to %s (cores %s)", label, spec, cores)
    so.intra_op_num_threads = threads or _default_threads()
    return so


class _Step:
    """One slice, prepared for the run loop."""

    __slots__ = ("session", "in_names", "out_names", "free", "file", "remote")

    def __init__(self, session: Any, in_names: tuple, out_names: list, free: tuple, file: str,
                 remote: RemoteSlice | None = None):
        self.session = session
        self.in_names = in_names
        self.out_names = out_names
        self.free = free
        self.file = file
        self.remote = remote   # a slice sent to its endpoint over HTTP (session: None until a local fallback)


def _bounded_run(step: Any, feeds: dict, remaining: float, limit: float) -> list:
    """``step``'s session run with at most ``remaining`` seconds: a timer sets the run's terminate
    flag, which onnxruntime checks between kernels (and in every Loop iteration)."""
    if remaining <= 0:
        raise InferenceTimeout(f"slice {step.file}: the inference ran past its {limit:g} s limit (--timeout) before "
                               "this slice started; give a longer --timeout or check the model")
    options = ort.RunOptions()
    timer = threading.Timer(remaining, lambda: setattr(options, "terminate", True))
    timer.daemon = True
    timer.start()
    try:
        return step.session.run(step.out_names, feeds, options)
    except Exception:
        if options.terminate:
            raise InferenceTimeout(f"slice {step.file}: stopped after the inference ran past its {limit:g} s limit "
                                   "(--timeout); give a longer --timeout or check the slice (a tampered slice "
                                   "may never finish)") from None
        raise
    finally:
        timer.cancel()


class _Options:
    """What the Executor was told, shared by the pipelines it builds."""

    def __init__(self, strict_providers: bool, providers_override: ProvidersOverride, local_fallback: bool,
                 timeout: float | None = None, endpoints: Mapping[str, str] | None = None, token: str | None = None,
                 links: Mapping[str, Any] | None = None, signal_dbm: Mapping[str, float] | None = None):
        self.timeout = timeout          # seconds one inference may take (None: unbounded)
        self.strict_providers = strict_providers
        self.override = providers_override
        self.local_fallback = local_fallback
        self.available = set(ort.get_available_providers())
        self.warned: set[str] = set()
        self.endpoints = dict(endpoints or {})   # remote device -> URL, over the manifest's endpoints
        self.token = token                       # bearer token of the endpoints (None: HETCC_SERVE_TOKEN)
        self.links = dict(links or {})           # the manifest's LinkInfo by link name
        self.signal_dbm = dict(signal_dbm or {})  # link -> dBm: offloads over it are shaped (client side)
        self.sessions: dict[tuple, Any] = {}     # shared by every pipeline: one session per file and settings

    def shaping(self, link: str | None) -> ShapedLink | None:
        """How traffic over ``link`` is shaped now (None: not shaped: no signal level set for it)."""
        if link is None or link not in self.signal_dbm or link not in self.links:
            return None
        return ShapedLink.from_link(self.links[link], self.signal_dbm[link], name=link)


class Pipeline:
    """One sequential chain of sessions: the slices of one variant of one model, run in order.

    ``run(feeds)`` -> {output name: array}; ``last_timings`` (ms per slice) and
    ``last_total_ms`` describe the latest call. Built by ``Executor``; ``inputs`` / ``outputs``
    are the model's, ``providers`` the provider each slice actually runs on.
    """

    def __init__(self, root: Path, model: ModelInfo, variant: Variant, runtime: RuntimeInfo, *,
                 name: str = "default", options: _Options | None = None,
                 offline_cpus: frozenset[int] = frozenset()) -> None:
        self.root = Path(root)
        self.model = model
        self.variant = variant
        self.runtime = runtime
        self.name = name
        opts = options or _Options(False, None, False)
        self._opts = opts
        self.slices: tuple[SliceSpec, ...] = variant.slices
        self.inputs: tuple[TensorSpec, ...] = tuple(model.inputs)
        self.outputs: tuple[TensorSpec, ...] = tuple(model.outputs)
        self.providers: list[str] = []
        self.last_timings: list[float] = []
        self.last_total_ms: float = 0.0
        #: the latest run's offloaded slices (times and bytes) and the remote slices that ran here instead
        self.last_offloads: list[OffloadRecord] = []
        self.last_fallbacks: list[FallbackRecord] = []
        #: slice id -> [local fallbacks since the pipeline was built, the latest reason]
        self.fallback_counts: dict[int, list] = {}
        self._offline = offline_cpus   # cores the plan's hardware takes offline: not in any affinity
        self._activate: Callable[[], Any] | None = None   # applies the variant's hardware (Executor)

        # every session owns a CPU intra-op pool (non-CPU providers fall back to it), so
        # chained sessions share the cores whatever their provider
        shared_cpu = len(self.slices) > 1
        self._shared_cpu = shared_cpu
        sessions = []
        self._remote: dict[int, RemoteSlice] = {}
        for k, sl in enumerate(self.slices):
            shown = os.path.join(str(self.root), sl.file)
            path = slice_path(self.root, sl.file, shown, "file")
            if not path.is_file():
                raise ManifestError(f"{shown}: slice file is missing; the artifact is incomplete, recompile")
            if sha256_file(path) != sl.sha256:
                raise ManifestError(f"{shown}: sha256 mismatch; the artifact was modified — recompile")
            url = opts.endpoints.get(sl.device, sl.endpoint) if sl.remote else None
            if is_http(url):   # sent to `hetcc serve` there (a local session only if it must fall back)
                self._remote[k] = RemoteSlice(url, sha256=sl.sha256, slice_id=sl.id, device=sl.device, link=sl.link,
                                              outputs=sl.outputs, token=opts.token,
                                              timeout=opts.timeout or OFFLOAD_TIMEOUT_S)
                self.providers.append(url)
                sessions.append(None)
                logger.debug("%s: device %s offloaded to %s", shown, sl.device, url)
                continue
            provider, provider_options, affinity = self._choose_provider(sl, shown)
            sess = self._open_session(sl, path, shown, provider, provider_options, affinity)
            actual = sess.get_providers()[0]
            if actual != provider:
                if opts.strict_providers:
                    raise ManifestError(
                        f"{shown}: {provider} failed to initialise (onnxruntime fell back to {actual}); "
                        "fix the provider install or drop --strict-providers"
                    )
                logger.warning("%s: %s failed to initialise; running on %s", shown, provider, actual)
            self.providers.append(actual)
            sessions.append(sess)
            logger.debug("%s: device %s on %s", shown, sl.device, actual)
        self._sessions = sessions
        self._prepare()

    # -----------------------------------------------------------------------------------------
    # set-up

    def _open_session(self, sl: SliceSpec, path: Path, shown: str, provider: str, provider_options: dict,
                      affinity: Sequence[int] | None) -> Any:
        """The session of ``sl``'s file with these settings: one per file content (sha256) and
        settings, shared by every variant of the Executor that runs it."""
        pinned = tuple(affinity) if affinity and not set(affinity) - _usable_cores() else None
        key = (sl.sha256, provider, tuple(sorted(provider_options.items())), pinned, self._shared_cpu)
        sess = self._opts.sessions.get(key)
        if sess is None:
            so = make_session_options(self.runtime, shared_cpu=self._shared_cpu, affinity=affinity, label=shown)
            providers: list = [(provider, provider_options)]
            if provider != CPU_PROVIDER:
                providers.append(CPU_PROVIDER)
            try:
                sess = ort.InferenceSession(str(path), so, providers=providers)
            except Exception as e:  # onnxruntime raises its own exception types
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise ManifestError(f"{shown}: onnxruntime cannot load this slice ({first})") from e
            self._opts.sessions[key] = sess
        _check_signature(sess, sl, shown)
        return sess

    def _choose_provider(self, sl: SliceSpec, shown: str) -> tuple[str, dict, Sequence[int] | None]:
        opts = self._opts
        requested, options, affinity = sl.execution_provider, dict(sl.provider_options), sl.affinity
        if affinity and self._offline:   # pinned to the cores the plan keeps (a57_cores = 2: two of four)
            affinity = tuple(c for c in affinity if c not in self._offline) or affinity
        if sl.remote:
            where = f"remote device {sl.device!r} (link {sl.link}" + (
                f", endpoint {sl.endpoint})" if sl.endpoint else ", no endpoint recorded)")
            if not opts.local_fallback:
                raise RemoteSliceError(
                    f"{shown}: slice {sl.id} of variant {self.name!r} is planned for {where}; this runtime does not "
                    "offload to remote devices — pass --local-fallback (local_fallback=True) to run it here"
                )
            requested, options, affinity = CPU_PROVIDER, {}, None
            logger.warning("%s: slice %d of variant %r is planned for %s; running it locally on %s "
                           "(--local-fallback); timings will not match the plan",
                           shown, sl.id, self.name, where, CPU_PROVIDER)
        override = opts.override
        if override is not None:
            if isinstance(override, str):
                chosen = override
            else:
                chosen = override.get(sl.id, override.get(sl.device, requested))
            if chosen != requested:
                requested, options = chosen, {}
        if requested in opts.available:
            return requested, _stringify_options(options), affinity
        if opts.strict_providers:
            raise ManifestError(
                f"{shown}: execution provider {requested} (device {sl.device}) is not available "
                f"here (available: {', '.join(sorted(opts.available))}); install it or drop --strict-providers"
            )
        if requested not in opts.warned:
            opts.warned.add(requested)
            logger.warning(
                "%s is not available here; slices planned for it run on %s "
                "(timings will not match the target; --strict-providers makes this an error)",
                requested, CPU_PROVIDER,
            )
        return CPU_PROVIDER, {}, affinity

    def _prepare(self) -> None:
        slices = self.slices
        output_names = [s.name for s in self.outputs]
        keep = set(output_names)
        last_use: dict[str, int] = {}
        for k, sl in enumerate(slices):
            for spec in sl.inputs:
                last_use[spec.name] = k
        produced_at: dict[str, int] = {}
        for k, sl in enumerate(slices):
            for spec in sl.outputs:
                produced_at[spec.name] = k
        free_at: dict[int, list[str]] = {k: [] for k in range(len(slices))}
        for name, k in last_use.items():
            if name not in keep:
                free_at[k].append(name)
        for name, k in produced_at.items():  # dead outputs: dropped as soon as they appear
            if name not in keep and name not in last_use:
                free_at[k].append(name)
        self._steps = [
            _Step(
                session=self._sessions[k],
                in_names=tuple(spec.name for spec in sl.inputs),
                out_names=[spec.name for spec in sl.outputs],
                free=tuple(free_at[k]),
                file=sl.file,
                remote=self._remote.get(k),
            )
            for k, sl in enumerate(slices)
        ]
        self._output_names = tuple(output_names)
        self._input_checks = tuple(
            (spec.name, np.dtype(spec.dtype), spec.shape, spec.name in last_use) for spec in self.inputs
        )
        self._input_names = frozenset(s.name for s in self.inputs)

    # -----------------------------------------------------------------------------------------
    # running

    def _check_feeds(self, feeds: Mapping[str, Any]) -> dict:
        if not isinstance(feeds, Mapping):
            raise InputError(f"feeds must be a dict of input name -> numpy array, got {type(feeds).__name__}")
        store = {}
        for name, dtype, shape, used in self._input_checks:
            if name not in feeds:
                extra = [n for n in feeds if n not in self._input_names]
                hint = f" (got unexpected {', '.join(map(repr, extra))})" if extra else ""
                raise InputError(f"input {name!r} is missing: expected {dtype}{list(shape)}{hint}")
            value = feeds[name]
            if not isinstance(value, np.ndarray):
                value = np.asarray(value)
            if value.dtype != dtype:
                raise InputError(f"input {name!r}: expected dtype {dtype}, got {value.dtype}")
            if value.shape != shape:
                raise InputError(f"input {name!r}: expected shape {list(shape)}, got {list(value.shape)}")
            if used:
                store[name] = value
        if len(feeds) != len(self._input_checks):
            extra = [n for n in feeds if n not in self._input_names]
            raise InputError(
                f"unexpected input {extra[0]!r}; the model's inputs are: "
                + ", ".join(f"{s.name} {s}" for s in self.inputs)
            )
        return store

    def _offload(self, step: _Step, feeds: dict, remaining: float | None) -> list:
        """``step``'s slice on its endpoint; when that fails and local fallback is allowed, here
        (recorded in ``last_fallbacks``, a warning the first time per slice and reason)."""
        remote, opts, limit = step.remote, self._opts, self._opts.timeout
        if remaining is not None and remaining <= 0:
            raise InferenceTimeout(f"slice {step.file}: the inference ran past its {limit:g} s limit (--timeout) "
                                   "before this slice started; give a longer --timeout or check the model")
        try:
            outs, record = remote.call(feeds, step.out_names, opts.shaping(remote.link), remaining)
            self.last_offloads.append(record)
            return outs
        except OffloadError as exc:
            where = f"slice {remote.slice_id} of variant {self.name!r} (remote device {remote.device!r})"
            if not opts.local_fallback:
                raise OffloadError(f"{where}: {exc}; pass --local-fallback (local_fallback=True) to run it here "
                                   "when the offload fails") from None
            reason = str(exc)
        if step.session is None:
            sl = self.slices[next(k for k, s in enumerate(self._steps) if s is step)]
            shown = os.path.join(str(self.root), sl.file)
            step.session = self._open_session(sl, slice_path(self.root, sl.file, shown, "file"), shown, CPU_PROVIDER,
                                              {}, None)
        count = self.fallback_counts.setdefault(remote.slice_id, [0, reason])
        if count[0] == 0 or count[1] != reason:
            logger.warning("%s: %s; ran it here on %s instead (--local-fallback; every fallback is listed in "
                           "last_fallbacks, hetcc run --json)", where, reason, CPU_PROVIDER)
        count[0] += 1
        count[1] = reason
        self.last_fallbacks.append(FallbackRecord(remote.slice_id, remote.device, remote.url, reason))
        if remaining is None:
            return step.session.run(step.out_names, feeds)
        return _bounded_run(step, feeds, remaining, limit)

    @property
    def fallbacks(self) -> list[dict]:
        """Every remote slice that ran here at least once since the pipeline was built: slice id,
        device, endpoint, how many runs and the latest reason (what ``hetcc run --json`` shows)."""
        out = []
        for k, remote in self._remote.items():
            count = self.fallback_counts.get(remote.slice_id)
            if count:
                out.append({"slice": remote.slice_id, "device": remote.device, "endpoint": remote.url,
                            "runs": count[0], "reason": count[1]})
        return out

    @property
    def offloaded(self) -> tuple[int, ...]:
        """The ids of the slices this pipeline sends to an endpoint over HTTP."""
        return tuple(r.slice_id for r in self._remote.values())

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run every slice in order on ``feeds``; returns the model outputs by name.

        Records per-slice wall times in ``last_timings`` (ms) and the whole call in
        ``last_total_ms``. Intermediates are dropped right after their last consumer runs.
        """
        if self._activate is not None:
            self._activate()
        t_start = time.perf_counter()
        store = self._check_feeds(feeds)
        timings = []
        clock = time.perf_counter
        limit = self._opts.timeout
        if self._remote:
            self.last_offloads, self.last_fallbacks = [], []
        for step in self._steps:
            t0 = clock()
            try:
                if step.remote is not None:
                    outs = self._offload(step, {n: store[n] for n in step.in_names},
                                         None if limit is None else limit - (t0 - t_start))
                elif limit is None:
                    outs = step.session.run(step.out_names, {n: store[n] for n in step.in_names})
                else:
                    outs = _bounded_run(step, {n: store[n] for n in step.in_names}, limit - (t0 - t_start), limit)
            except (InferenceTimeout, OffloadError):
                raise
            except Exception as exc:  # onnxruntime's Fail / InvalidArgument / RuntimeException
                text = " ".join(str(exc).split())
                raise SliceRunError(f"slice {step.file}: onnxruntime failed on these inputs: {text[:300]}; "
                                    "check the input values (e.g. indices within their table's size) "
                                    "or feed real data with --input NAME=x.npy") from None
            store.update(zip(step.out_names, outs))
            del outs  # the store holds the only reference, so freeing below really frees
            timings.append((clock() - t0) * 1e3)
            for name in step.free:
                del store[name]
        result = {name: store[name] for name in self._output_names}
        self.last_timings = timings
        self.last_total_ms = (clock() - t_start) * 1e3
        return result

    __call__ = run

    def benchmark(self, feeds: Mapping[str, np.ndarray], *, repeat: int | None = None,
                  duration_s: float | None = None, warmup: int = 0, interruptible: bool = False) -> "Benchmark":
        """``warmup`` untimed runs, then ``repeat`` timed runs or timed runs until ``duration_s``
        seconds of them have passed (at least one; at most ``BENCHMARK_RUNS_MAX``): give one of the
        two. Every run's ``last_total_ms`` and ``last_timings`` are kept (``Benchmark``).
        ``interruptible``: a KeyboardInterrupt (Ctrl-C) after at least one timed run ends the timed
        runs (``stopped == "interrupted"``) instead of propagating; the run it cut short is dropped."""
        if (repeat is None) == (duration_s is None):
            raise ValueError("benchmark: give repeat or duration_s, exactly one of them")
        if repeat is not None and (isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1):
            raise ValueError(f"benchmark: repeat = {repeat!r}; give a whole number of runs, at least 1")
        if duration_s is not None and not (isinstance(duration_s, (int, float)) and math.isfinite(duration_s)
                                           and duration_s > 0):
            raise ValueError(f"benchmark: duration_s = {duration_s!r}; give a finite number of seconds above 0")
        if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
            raise ValueError(f"benchmark: warmup = {warmup!r}; give a whole number of runs, 0 or more")
        for _ in range(warmup):             # untimed: onnxruntime's first runs set up lazily
            self.run(feeds)
        clock = time.perf_counter
        total, per_slice = array("d"), array("d")
        limit = repeat if repeat is not None else BENCHMARK_RUNS_MAX
        stopped = "repeat" if repeat is not None else "max_runs"
        outputs: dict[str, np.ndarray] = {}
        start = end = clock()
        try:
            while len(total) < limit:
                outputs = self.run(feeds)
                now = clock()
                per_slice.extend(self.last_timings)
                total.append(self.last_total_ms)
                end = now
                if duration_s is not None and end - start >= duration_s:
                    stopped = "duration"
                    break
        except KeyboardInterrupt:
            if not interruptible or not total:
                raise
            stopped = "interrupted"
        slices = len(self.slices)
        runs = min(len(total), len(per_slice) // slices if slices else len(total))
        return Benchmark(np.array(total[:runs]), np.array(per_slice[:runs * slices]).reshape(runs, slices),
                         wall_s=end - start, warmup=warmup, stopped=stopped, outputs=outputs,
                         duration_s=duration_s)

    def __repr__(self) -> str:
        devices = ", ".join(f"{sl.device}:{p}" for sl, p in zip(self.slices, self.providers))
        return f"Pipeline({self.model.name}/{self.name}, {len(self._steps)} slice(s): {devices})"


class Benchmark:
    """What ``Pipeline.benchmark`` measured: ``total_ms`` (one per timed run, ms), ``slice_ms``
    (runs x slices, ms), ``wall_s`` (the wall time of the timed runs, first start to last end),
    ``warmup``, ``duration_s`` (asked for, or None), ``stopped`` (``"repeat"``, ``"duration"``,
    ``"max_runs"`` or ``"interrupted"``) and ``outputs`` (the last timed run's). Percentiles
    interpolate linearly between the closest samples (numpy's default): p50 is the median."""

    def __init__(self, total_ms: np.ndarray, slice_ms: np.ndarray, *, wall_s: float, warmup: int, stopped: str,
                 outputs: dict[str, np.ndarray], duration_s: float | None = None) -> None:
        self.total_ms, self.slice_ms = total_ms, slice_ms
        self.wall_s, self.warmup, self.stopped, self.outputs = wall_s, warmup, stopped, outputs
        self.duration_s = duration_s

    @property
    def runs(self) -> int:
        return int(self.total_ms.size)

    def percentile(self, q: float) -> float:
        """The ``q``-th percentile (0-100) of the runs' total ms."""
        return float(np.percentile(self.total_ms, q))

    @property
    def mean_ms(self) -> float:
        return float(np.mean(self.total_ms))

    @property
    def throughput(self) -> float | None:
        """Inferences per second: runs / the wall time of the timed runs (None if no time passed)."""
        return self.runs / self.wall_s if self.wall_s > 0 else None

    def slice_percentile(self, q: float) -> list[float]:
        """Each slice's ``q``-th percentile (ms), in slice order."""
        return [float(x) for x in np.percentile(self.slice_ms, q, axis=0)] if self.runs else []

    @property
    def slice_mean_ms(self) -> list[float]:
        return [float(x) for x in np.mean(self.slice_ms, axis=0)] if self.runs else []

    def __repr__(self) -> str:
        return (f"Benchmark({self.runs} run(s) in {self.wall_s:.3g} s, p50 {self.percentile(50):.3g} ms, "
                f"stopped by {self.stopped})")


class Executor:
    """Runs a compiled artifact: ``Executor("build/").run({"input": x})`` -> {output: array}.

    A model artifact holds one or more variants (plans): ``variant`` picks the one ``run``
    uses by default (else the manifest's ``default_variant``); ``run(feeds, variant="x")``
    runs another (its sessions are opened on first use). A workload artifact holds several
    models: ``run(feeds, model="name")`` runs one, ``run({name: feeds, ...})`` all of them.

    ``strict_providers``: a slice whose execution provider is not installed here is an error
    instead of running on the CPU provider. ``providers_override``: one provider name for every
    slice, or a mapping from slice id (int) or device name (str) to a provider name.
    ``local_fallback``: run slices planned for a remote device here, on the CPU provider, with
    one warning per slice (without it such a slice is a RemoteSliceError).

    A remote slice whose endpoint is an http:// URL (the manifest's, or ``endpoints={device:
    url}``) is sent to the ``hetcc serve`` there (``hetcc.runtime.offload``; bearer ``token``, else
    HETCC_SERVE_TOKEN); when that fails it runs here if ``local_fallback``, reported in
    ``last_fallbacks`` and one warning, else it is an ``OffloadError`` (a RemoteSliceError).
    ``last_offloads`` holds each offload's measured t_tx / t_rx. ``signal_dbm={link: dBm}``
    (or ``set_signal``) shapes the traffic over a link as its tables give at that signal.
    Sessions are shared by the variants: one per slice file content and settings.

    ``apply_hardware``: set the plan's hardware configuration on this board (knobs and each
    device's frequency, from the manifest's ``target.controls``; ``hetcc.runtime.hardware``)
    before the variant first runs, and again when another variant or workload model runs.
    What the OS refuses is reported (``hardware_report``, one logging warning) and the run goes
    on; sessions of a cluster whose cores the plan takes offline are pinned to the cores it
    keeps. ``sysfs_root`` prefixes every path written (a fake tree in tests).
    ``restore_hardware``: put back what was changed on ``close()`` / leaving a ``with`` block /
    interpreter exit (default); False leaves the board as set. ``timeout``: seconds one inference
    may take; past it, onnxruntime is told to stop and ``run`` raises ``InferenceTimeout`` (a
    tampered or runaway slice cannot hang the caller).
    ``policy``: True (or a ``hetcc.runtime.policy_run.PolicyOptions``) lets the artifact's AutoScale
    policy pick the variant of every ``run(feeds)`` and learn from it (``policy_runner``; the
    learned table is written back into the artifact; ``close()`` writes the rest and releases it).
    """

    def __init__(
        self,
        artifact_dir: str | os.PathLike,
        *,
        strict_providers: bool = False,
        providers_override: ProvidersOverride = None,
        local_fallback: bool = False,
        variant: str | None = None,
        apply_hardware: bool = False,
        sysfs_root: str | os.PathLike = "/",
        restore_hardware: bool = True,
        timeout: float | None = None,
        endpoints: Mapping[str, str] | None = None,
        token: str | None = None,
        signal_dbm: Mapping[str, float] | None = None,
        policy: Any = False,
        _hardware: Hardware | None = None,
    ) -> None:
        manifest, root, shown = read_manifest(artifact_dir)
        check_threads(manifest.runtime.intra_op_num_threads, shown)
        owner = _hardware is None and apply_hardware   # a workload's models apply theirs when they run
        if owner:
            _hardware = Hardware(sysfs_root)
            _hardware.restore_at_exit(restore_hardware)
        self._hardware = _hardware   # shared with a workload's models: one board, one undo log
        self.restore_hardware = restore_hardware
        self.manifest: Manifest = manifest
        self.artifact_dir = root
        self.strict_providers = strict_providers
        self.local_fallback = local_fallback
        if timeout is not None and not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
            raise ValueError(f"timeout {timeout!r}: give a number of seconds above 0")
        for device, url in (endpoints or {}).items():
            if not is_http(url):
                raise ValueError(f"endpoint of {device!r} = {url!r}: give an http:// URL of a `hetcc serve`, e.g. "
                                 "http://127.0.0.1:7070")
        self._opts = _Options(strict_providers, providers_override, local_fallback, timeout, endpoints, token,
                              manifest.target.links, signal_dbm)
        if manifest.kind == "model" and endpoints:
            remote = {sl.device for v in manifest.variants.values() for sl in v.slices if sl.remote}
            stray = sorted(set(endpoints) - remote)
            if stray:
                raise ValueError(f"endpoint (--endpoint) for {stray[0]!r}: no slice of this artifact is planned for "
                                 f"such a remote device (remote devices: {', '.join(sorted(remote)) or 'none'})")
        unknown = sorted(set(signal_dbm or {}) - set(manifest.target.links or {}))
        if unknown and manifest.kind == "model":
            raise ValueError(f"signal strength (--rssi) for link {unknown[0]!r}: the artifact's target has no such "
                             f"link (links: {', '.join(manifest.target.links or {}) or 'none'})")
        self._pipelines: dict[str, Pipeline] = {}
        self._models: dict[str, Executor] = {}
        self._last: Pipeline | None = None
        self.policy_path: Path | None = None
        self.policy_runner: Any = None   # Executor(policy=True): hetcc.runtime.policy_run.PolicyRunner
        if policy is not False and policy is not None and manifest.kind == "workload":
            raise ManifestError(f"{shown}: a workload artifact has no policy; run a model artifact compiled with "
                                "--planner autoscale")
        if manifest.kind == "workload":
            if variant is not None:
                raise ManifestError(f"{shown}: a workload artifact has no variants (got variant {variant!r}); "
                                    "pick a model instead (--model)")
            self.variant = None
            for i, wm in enumerate(manifest.workload.models):
                sub = slice_path(root, wm.dir, shown, f"workload.models[{i}].dir")
                mfile = artifact_file(sub, MANIFEST_NAME, os.path.join(str(root), wm.dir, MANIFEST_NAME))
                if not mfile.is_file():
                    raise ManifestError(f"{mfile}: missing; the workload artifact is incomplete, recompile")
                if sha256_file(mfile) != wm.manifest_sha256:
                    raise ManifestError(f"{mfile}: sha256 mismatch; the artifact was modified — recompile")
                child = Executor(sub, strict_providers=strict_providers, providers_override=providers_override,
                                 local_fallback=local_fallback, restore_hardware=restore_hardware,
                                 timeout=timeout, endpoints=endpoints, token=token, signal_dbm=signal_dbm,
                                 _hardware=self._hardware)
                if child.manifest.kind != "model":
                    raise ManifestError(f"{mfile}: a workload's model must be a model artifact, not a workload")
                self._models[wm.name] = child
            return
        if variant is not None and variant not in manifest.variants:
            raise ManifestError(f"{shown}: no variant {variant!r}; variants: {', '.join(manifest.variants)}")
        self.variant: str | None = variant if variant is not None else manifest.default_variant
        if manifest.policy is not None:
            path = slice_path(root, manifest.policy.file, shown, "policy.file")
            if not path.is_file():
                raise ManifestError(f"{path}: policy file is missing; the artifact is incomplete, recompile")
            if sha256_file(path) != manifest.policy.sha256:
                raise ManifestError(f"{path}: sha256 mismatch; the artifact was modified — recompile")
            self.policy_path = path
        if owner:   # before the sessions open: cores brought online are then usable
            self._hardware.ensure(manifest, self.variant)
        self.pipeline()  # open the selected variant now: errors surface here, not at run()
        if policy is not False and policy is not None:   # AutoScale: docs/autoscale-runtime.md
            from .policy_run import PolicyRunner
            self.policy_runner = PolicyRunner(self, None if policy is True else policy)

    # -----------------------------------------------------------------------------------------
    # choosing a pipeline

    @property
    def kind(self) -> str:
        return self.manifest.kind

    @property
    def variants(self) -> tuple[str, ...]:
        """The variant names of a model artifact (empty for a workload)."""
        return tuple(self.manifest.variants)

    @property
    def models(self) -> tuple[str, ...]:
        """The model names of a workload artifact (empty for a model artifact)."""
        return tuple(self._models)

    def model_executor(self, model: str) -> "Executor":
        """The Executor of one model of a workload."""
        if self.kind != "workload":
            raise ManifestError(f"{self.artifact_dir}: not a workload artifact; it has no models to pick")
        try:
            return self._models[model]
        except KeyError:
            raise ManifestError(f"no model {model!r} in this workload; models: {', '.join(self._models)}") from None

    def pipeline(self, variant: str | None = None, model: str | None = None) -> Pipeline:
        """The Pipeline of ``variant`` (default: the selected one) or of ``model`` of a workload."""
        if self.kind == "workload":
            if model is None:
                if len(self._models) != 1:
                    raise ManifestError(
                        f"{self.artifact_dir}: a workload artifact: name a model ({', '.join(self._models)})")
                model = next(iter(self._models))
            return self.model_executor(model).pipeline(variant)
        if model is not None and model != self.manifest.model.name:
            raise ManifestError(f"{self.artifact_dir}: not a workload artifact; its one model is "
                                f"{self.manifest.model.name!r} (got model {model!r})")
        name = self.variant if variant is None else variant
        pipe = self._pipelines.get(name)
        if pipe is None:
            spec = self.manifest.variant(name)
            hw = self._hardware
            pipe = Pipeline(self.artifact_dir, self.manifest.model, spec, self.manifest.runtime, name=name,
                            options=self._opts, offline_cpus=offline_cpus(self.manifest, name) if hw else frozenset())
            if hw is not None:   # the run loop then costs one comparison of a key computed here
                manifest, key = self.manifest, configuration_key(self.manifest, name)
                pipe._activate = lambda: hw.ensure(manifest, name, key)
            self._pipelines[name] = pipe
        return pipe

    # -----------------------------------------------------------------------------------------
    # running

    def run(self, feeds: Mapping[str, Any], variant: str | None = None,
            model: str | None = None) -> dict[str, Any]:
        """Run one pipeline on ``feeds``; returns its outputs by name.

        On a workload artifact without ``model``, ``feeds`` maps model names to their feeds and
        every model runs in workload order; the result maps model names to outputs.
        """
        if self.policy_runner is not None and variant is None and model is None:
            return self.policy_runner.run(feeds)
        if self.kind == "workload" and model is None and variant is None and len(self._models) > 1:
            if not isinstance(feeds, Mapping) or set(feeds) != set(self._models):
                raise InputError(
                    "a workload artifact: name a model, or pass {model name: feeds} for every model "
                    f"({', '.join(self._models)})")
            return {name: self.run(feeds[name], model=name) for name in self._models}
        pipe = self.pipeline(variant, model)
        out = pipe.run(feeds)
        self._last = pipe
        return out

    __call__ = run

    def benchmark(self, feeds: Mapping[str, Any], variant: str | None = None, model: str | None = None,
                  **how: Any) -> Benchmark:
        """``Pipeline.benchmark`` of one pipeline (``repeat=`` or ``duration_s=``, ``warmup=``)."""
        pipe = self.pipeline(variant, model)
        result = pipe.benchmark(feeds, **how)
        self._last = pipe
        return result

    # ---- the selected pipeline's view (what a single-variant artifact had as Executor attributes)
    @property
    def _default(self) -> Pipeline:
        return self.pipeline()

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        return self._default.inputs

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        return self._default.outputs

    @property
    def providers(self) -> list[str]:
        return self._default.providers

    @property
    def slices(self) -> tuple[SliceSpec, ...]:
        return self._default.slices

    @property
    def last_timings(self) -> list[float]:
        return (self._last or self._default).last_timings

    @property
    def last_total_ms(self) -> float:
        return (self._last or self._default).last_total_ms

    # ---- offloading (remote slices with an http:// endpoint)
    @property
    def last_offloads(self) -> list[OffloadRecord]:
        """The latest run's offloaded slices: endpoint, t_tx / t_rx / wait / server ms, bytes."""
        return (self._last or self._default).last_offloads

    @property
    def last_fallbacks(self) -> list[FallbackRecord]:
        """The latest run's remote slices that ran here instead (local_fallback), with the reason."""
        return (self._last or self._default).last_fallbacks

    def set_signal(self, link: str, dbm: float | None) -> None:
        """Shape later offloads over ``link`` as at ``dbm`` (the link's tabled bandwidth and RTT);
        None: stop shaping that link."""
        opts = self._opts
        if link not in opts.links:
            raise ValueError(f"no link {link!r} in this artifact's target (links: {', '.join(opts.links) or 'none'})")
        if dbm is None:
            opts.signal_dbm.pop(link, None)
        else:
            opts.signal_dbm[link] = float(dbm)
        for child in self._models.values():
            child.set_signal(link, dbm)

    @property
    def sessions_opened(self) -> int:
        """onnxruntime sessions opened so far (one per slice file content and settings, shared by
        the variants; a workload's models counted together)."""
        return len(self._opts.sessions) + sum(c.sessions_opened for c in self._models.values())

    @property
    def _steps(self) -> list[_Step]:
        return self._default._steps

    # ---- the board's hardware (apply_hardware=True)
    @property
    def hardware_report(self) -> HardwareReport | None:
        """What the latest hardware apply did (None unless apply_hardware)."""
        return self._hardware.last if self._hardware is not None else None

    @property
    def hardware_reports(self) -> list[HardwareReport]:
        """The latest hardware apply of each distinct configuration (variant or workload model), oldest first."""
        return list(self._hardware.reports) if self._hardware is not None else []

    def close(self) -> HardwareReport | None:
        """Put the board's hardware back (when applied and ``restore_hardware``); the report of
        the restore, or None. Sessions stay usable; a later run applies the hardware again."""
        if self.policy_runner is not None:
            self.policy_runner.close()
        hw = self._hardware
        if hw is None or not self.restore_hardware:
            return None
        return hw.restore()   # the atexit hook stays: a run after close() applies again

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if self.kind == "workload":
            return f"Executor({str(self.artifact_dir)!r}, workload of {', '.join(self._models)})"
        pipe = self._default
        devices = ", ".join(f"{sl.device}:{p}" for sl, p in zip(pipe.slices, pipe.providers))
        more = f", variant {self.variant!r} of {len(self.variants)}" if len(self.variants) > 1 else ""
        return f"Executor({str(self.artifact_dir)!r}, {len(pipe.slices)} slice(s): {devices}{more})"


#: onnxruntime's type strings as the manifest's dtype names
_ORT_DTYPES = {f"tensor({t})": n for t, n in (
    ("float16", "float16"), ("float", "float32"), ("double", "float64"), ("int8", "int8"), ("int16", "int16"),
    ("int32", "int32"), ("int64", "int64"), ("uint8", "uint8"), ("uint16", "uint16"), ("uint32", "uint32"),
    ("uint64", "uint64"), ("bool", "bool"))}


def _check_signature(sess: Any, sl: SliceSpec, shown: str) -> None:
    """The slice file's inputs and outputs are the ones the manifest lists (name, dtype, static
    shape): the sha256 vouches for the file, not for the manifest around it, and a feed built from
    a tampered shape would fail inside onnxruntime or allocate whatever the manifest says."""
    def table(args: Any) -> dict[str, tuple[str, list]]:
        return {a.name: (_ORT_DTYPES.get(a.type, a.type), list(a.shape)) for a in args}

    for what, listed, actual in (("input", sl.inputs, table(sess.get_inputs())),
                                 ("output", sl.outputs, table(sess.get_outputs()))):
        for spec in listed:
            got = actual.get(spec.name)
            if got is None:
                raise ManifestError(f"{shown}: the manifest lists {what} {spec.name!r} of slice {sl.id}, which the "
                                    f"slice file does not have ({', '.join(actual) or 'none'}); the manifest was "
                                    "modified — recompile")
            dtype, shape = got
            same_shape = len(shape) == len(spec.shape) and all(
                not isinstance(d, int) or d == e for d, e in zip(shape, spec.shape))
            if dtype != spec.dtype or not same_shape:
                raise ManifestError(f"{shown}: {what} {spec.name!r} is {spec.dtype}{list(spec.shape)} in the manifest "
                                    f"but {dtype}{shape} in the slice file; the manifest was modified — recompile")
        if what == "input":
            missing = sorted(set(actual) - {spec.name for spec in listed})
            if missing:
                raise ManifestError(f"{shown}: the slice file reads input {missing[0]!r}, which the manifest does "
                                    f"not list for slice {sl.id}; the manifest was modified — recompile")


def _stringify_options(options: Mapping[str, Any]) -> dict:
    """ORT wants provider options as strings; JSON gives numbers and booleans."""
    out = {}
    for key, value in options.items():
        if isinstance(value, bool):
            out[str(key)] = "1" if value else "0"
        else:
            out[str(key)] = str(value)
    return out
