"""The thin executor: one onnxruntime session per slice, run in manifest order.

Everything that can be decided before the first inference is decided in ``__init__`` (sha256
checks, providers, session options, which tensors each slice reads and when each intermediate
dies), so ``run`` is a short loop over prepared steps.
"""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence, Union

import numpy as np
import onnxruntime as ort

from .errors import InputError, ManifestError
from .manifest import load_manifest, sha256_file, slice_path

__all__ = ["Executor", "TensorSpec", "make_session_options", "CPU_PROVIDER"]

logger = logging.getLogger(__name__)

CPU_PROVIDER = "CPUExecutionProvider"

_OPT_LEVELS = {
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
}

ProvidersOverride = Union[str, Mapping[Union[int, str], str], None]


@dataclass(frozen=True)
class TensorSpec:
    """Name, numpy dtype name and static shape of a model input or output."""

    name: str
    dtype: str
    shape: tuple[int, ...]

    @classmethod
    def from_manifest(cls, spec: Mapping[str, Any]) -> "TensorSpec":
        return cls(str(spec["name"]), str(spec["dtype"]), tuple(int(d) for d in spec["shape"]))

    def __str__(self) -> str:
        return f"{self.dtype}{list(self.shape)}"


def _usable_cores() -> set[int]:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return set(range(os.cpu_count() or 1))


def _default_threads() -> int:
    return max(1, len(_usable_cores()))


def make_session_options(
    runtime: Mapping[str, Any],
    *,
    shared_cpu: bool,
    affinity: Sequence[int] | None = None,
    label: str = "",
) -> ort.SessionOptions:
    """SessionOptions from the manifest's ``runtime`` block.

    ``shared_cpu``: several sessions take turns on the same cores; spinning is then switched
    off, since an idle session's spinning threads starve the active one (DESIGN 'Runtime
    physics'). ``affinity``: core ids (0-based, as Linux numbers them) to pin intra-op threads
    to; ignored, with a debug log, where those cores do not exist.
    """
    so = ort.SessionOptions()
    threads = runtime.get("intra_op_num_threads") or None
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

    __slots__ = ("session", "in_names", "out_names", "free", "file")

    def __init__(self, session: Any, in_names: tuple, out_names: list, free: tuple, file: str):
        self.session = session
        self.in_names = in_names
        self.out_names = out_names
        self.free = free
        self.file = file


class Executor:
    """Runs a compiled artifact: ``Executor("build/").run({"input": x})`` -> {output: array}.

    ``strict_providers``: a slice whose execution provider is not installed here is an error
    instead of running on the CPU provider. ``providers_override``: one provider name for every
    slice, or a mapping from slice id (int) or device name (str) to a provider name.
    """

    def __init__(
        self,
        artifact_dir: str | os.PathLike,
        *,
        strict_providers: bool = False,
        providers_override: ProvidersOverride = None,
    ) -> None:
        self.manifest: dict = load_manifest(artifact_dir)
        given = Path(artifact_dir)
        root = given if given.is_dir() else given.parent  # the manifest file itself was given
        self.artifact_dir = root
        self.strict_providers = strict_providers
        self._override = providers_override
        self._available = set(ort.get_available_providers())
        self._warned: set[str] = set()
        model = self.manifest["model"]
        runtime = self.manifest["runtime"]
        slices = self.manifest["slices"]

        self.inputs: tuple[TensorSpec, ...] = tuple(TensorSpec.from_manifest(s) for s in model["inputs"])
        self.outputs: tuple[TensorSpec, ...] = tuple(TensorSpec.from_manifest(s) for s in model["outputs"])
        self.providers: list[str] = []
        self.last_timings: list[float] = []
        self.last_total_ms: float = 0.0

        # every session owns a CPU intra-op pool (non-CPU providers fall back to it), so
        # chained sessions share the cores whatever their provider
        shared_cpu = len(slices) > 1
        sessions = []
        for i, sl in enumerate(slices):
            shown = os.path.join(str(root), sl["file"])
            path = slice_path(root, sl["file"], shown, f"slices[{i}].file")
            if not path.is_file():
                raise ManifestError(f"{shown}: slice file is missing; the artifact is incomplete, recompile")
            if sha256_file(path) != sl["sha256"]:
                raise ManifestError(f"{shown}: sha256 mismatch; the artifact was modified — recompile")
            provider, options = self._choose_provider(sl, shown)
            so = make_session_options(
                runtime, shared_cpu=shared_cpu, affinity=sl.get("affinity"), label=shown
            )
            providers: list = [(provider, options)]
            if provider != CPU_PROVIDER:
                providers.append(CPU_PROVIDER)
            try:
                sess = ort.InferenceSession(str(path), so, providers=providers)
            except Exception as e:  # onnxruntime raises its own exception types
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise ManifestError(f"{shown}: onnxruntime cannot load this slice ({first})") from e
            actual = sess.get_providers()[0]
            if actual != provider:
                if strict_providers:
                    raise ManifestError(
                        f"{shown}: {provider} failed to initialise (onnxruntime fell back to {actual}); "
                        "fix the provider install or drop --strict-providers"
                    )
                logger.warning("%s: %s failed to initialise; running on %s", shown, provider, actual)
            self.providers.append(actual)
            sessions.append(sess)
            logger.debug("%s: device %s on %s", shown, sl["device"], actual)

        self._sessions = sessions
        self._prepare(slices)

    # -----------------------------------------------------------------------------------------
    # set-up

    def _choose_provider(self, sl: Mapping[str, Any], shown: str) -> tuple[str, dict]:
        requested = sl["execution_provider"]
        options = sl.get("provider_options") or {}
        override = self._override
        if override is not None:
            if isinstance(override, str):
                chosen = override
            else:
                chosen = override.get(sl["id"], override.get(sl["device"], requested))
            if chosen != requested:
                requested, options = chosen, {}
        if requested in self._available:
            return requested, _stringify_options(options)
        if self.strict_providers:
            raise ManifestError(
                f"{shown}: execution provider {requested} (device {sl['device']}) is not available "
                f"here (available: {', '.join(sorted(self._available))}); install it or drop --strict-providers"
            )
        if requested not in self._warned:
            self._warned.add(requested)
            logger.warning(
                "%s is not available here; slices planned for it run on %s "
                "(timings will not match the target; --strict-providers makes this an error)",
                requested, CPU_PROVIDER,
            )
        return CPU_PROVIDER, {}

    def _prepare(self, slices: list) -> None:
        output_names = [s.name for s in self.outputs]
        keep = set(output_names)
        last_use: dict[str, int] = {}
        for k, sl in enumerate(slices):
            for spec in sl["inputs"]:
                last_use[spec["name"]] = k
        produced_at: dict[str, int] = {}
        for k, sl in enumerate(slices):
            for spec in sl["outputs"]:
                produced_at[spec["name"]] = k
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
                in_names=tuple(spec["name"] for spec in sl["inputs"]),
                out_names=[spec["name"] for spec in sl["outputs"]],
                free=tuple(free_at[k]),
                file=sl["file"],
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

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run every slice in order on ``feeds``; returns the model outputs by name.

        Records per-slice wall times in ``last_timings`` (ms) and the whole call in
        ``last_total_ms``. Intermediates are dropped right after their last consumer runs.
        """
        t_start = time.perf_counter()
        store = self._check_feeds(feeds)
        timings = []
        clock = time.perf_counter
        for step in self._steps:
            t0 = clock()
            outs = step.session.run(step.out_names, {n: store[n] for n in step.in_names})
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

    def __repr__(self) -> str:
        devices = ", ".join(
            f"{sl['device']}:{p}" for sl, p in zip(self.manifest["slices"], self.providers)
        )
        return f"Executor({str(self.artifact_dir)!r}, {len(self._steps)} slice(s): {devices})"


def _stringify_options(options: Mapping[str, Any]) -> dict:
    """ORT wants provider options as strings; JSON gives numbers and booleans."""
    out = {}
    for key, value in options.items():
        if isinstance(value, bool):
            out[str(key)] = "1" if value else "0"
        else:
            out[str(key)] = str(value)
    return out
