"""Check a compiled artifact against the model it was compiled from (``hetcc run --verify``).

Runs one pipeline of the sliced artifact (a variant, or a model of a workload) and the unsliced
model through plain onnxruntime (CPU provider, same session options) on the same inputs, and
compares every model output by relative difference max|a - b| / max(max|b|, tiny). Several input
sets (``inputs``) catch a plan that is right for one input only (e.g. a cut whose shape or value
depends on the data); each output reports its worst set.
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from . import onnxrt
from .errors import InputError, ManifestError
from .executor import CPU_PROVIDER, Executor, Pipeline, make_session_options
from .manifest import MANIFEST_NAME, TensorSpec, sha256_file, slice_path

ort = onnxrt.load()   # onnxruntime, telemetry off unless HETCC_ORT_TELEMETRY=1

__all__ = ["random_inputs", "verify", "VerifyReport", "OutputDiff"]

_TINY = np.finfo(np.float64).tiny
#: random inputs are drawn in 64 bits; more than this is refused before any allocation
MAX_RANDOM_INPUT_BYTES = 4 << 30


def random_inputs(specs: Iterable[TensorSpec | Mapping[str, Any]], seed: int = 0) -> dict[str, np.ndarray]:
    """Deterministic test inputs: floats standard normal, ints 0 or 1, bools fair coins.

    Integers are index-like (token ids, gather indices, attention masks): 0 and 1 are in range
    for every table of two rows or more, BERT's two-row token-type table included (ints up to 7
    made its Gather fail).
    """
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    for spec in specs:
        if not isinstance(spec, TensorSpec):
            spec = TensorSpec.from_manifest(spec)
        dtype = np.dtype(spec.dtype)
        size = math.prod(int(d) for d in spec.shape) * 8     # float64 / int64 draws before the cast
        if size > MAX_RANDOM_INPUT_BYTES:
            raise InputError(f"input {spec.name!r}: shape {'x'.join(map(str, spec.shape))} needs "
                             f"{size / 2**30:.1f} GiB of random data, over the {MAX_RANDOM_INPUT_BYTES >> 30} GiB "
                             "limit; give it with --input NAME=x.npy (the manifest may be damaged)")
        if dtype.kind == "f":
            value = np.asarray(rng.standard_normal(spec.shape), dtype=dtype)
        elif dtype.kind in "iu":
            value = np.asarray(rng.integers(0, 2, size=spec.shape), dtype=dtype)
        elif dtype.kind == "b":
            value = np.asarray(rng.random(spec.shape) < 0.5)
        else:
            raise ValueError(f"input {spec.name!r}: cannot make random values of dtype {dtype}")
        feeds[spec.name] = value
    return feeds


@dataclass(frozen=True)
class OutputDiff:
    """How far one output of the sliced artifact is from the unsliced model's: on the input set
    ``input`` (a label such as ``seed 1``), the worst of the sets compared. A shape mismatch is
    an infinite difference."""

    name: str
    max_abs_diff: float
    rel_diff: float
    ok: bool
    input: str = ""


@dataclass(frozen=True)
class VerifyReport:
    """Per-output differences; ``ok`` when every output's rel_diff <= rtol."""

    outputs: tuple[OutputDiff, ...]
    ok: bool
    rtol: float
    reference_path: str
    sliced_ms: float
    reference_ms: float
    inputs: tuple[str, ...] = ()

    def summary(self) -> str:
        lines = [
            f"{'ok' if o.ok else 'MISMATCH'}  {o.name}: max|diff| {o.max_abs_diff:.3g}, "
            f"relative {o.rel_diff:.3g} (rtol {self.rtol:g}"
            + (f", worst of {len(self.inputs)} input sets: {o.input})" if len(self.inputs) > 1 else ")")
            for o in self.outputs
        ]
        verdict = "sliced artifact matches the unsliced model" if self.ok else "sliced artifact DIFFERS"
        lines.append(
            f"{verdict} ({self.sliced_ms:.2f} ms sliced, {self.reference_ms:.2f} ms unsliced)"
        )
        return "\n".join(lines)


def _compare(name: str, got: np.ndarray, want: np.ndarray, rtol: float, label: str = "") -> OutputDiff:
    if got.shape != want.shape:
        return OutputDiff(name, float("inf"), float("inf"), False, label)
    if got.size == 0:
        return OutputDiff(name, 0.0, 0.0, True, label)
    a = got.astype(np.float64, copy=False)
    b = want.astype(np.float64, copy=False)
    diff = np.abs(a - b)
    both_nan = np.isnan(a) & np.isnan(b)
    if both_nan.any():
        diff = np.where(both_nan, 0.0, diff)
    max_abs = float(np.max(diff))
    scale = float(np.nanmax(np.abs(b))) if not np.isnan(b).all() else 0.0
    rel = max_abs / max(scale, _TINY)
    return OutputDiff(name, max_abs, rel, bool(rel <= rtol), label)


def _badness(d: OutputDiff) -> tuple[bool, float]:
    """Sort key: a failing comparison beats a passing one, then the larger (nan: worst) difference."""
    return (not d.ok, float("inf") if np.isnan(d.rel_diff) else d.rel_diff)


def _reference_model(pipe: Pipeline, reference_path: str | os.PathLike | None) -> Path:
    model = pipe.model
    shown_manifest = os.path.join(str(pipe.root), MANIFEST_NAME)
    if reference_path is not None:
        path = Path(reference_path)
        if not path.is_file():
            raise ManifestError(f"{reference_path}: no such model file; pass --reference the model you compiled")
    else:
        source = model.source_path
        if not source:
            raise ManifestError(
                f"{shown_manifest}: model.source_path is null, so there is no unsliced model to compare "
                "with; pass --reference MODEL.onnx"
            )
        path = Path(source)
        if not path.is_absolute():  # a file of the artifact: it must stay inside it
            path = slice_path(pipe.root, source, shown_manifest, "model.source_path")
        if not path.is_file():
            raise ManifestError(
                f"{source}: the model this artifact was compiled from is gone; pass --reference MODEL.onnx"
            )
    if sha256_file(path) != model.sha256:
        raise ManifestError(
            f"{path}: model changed since compile (sha256 mismatch); pass --reference or recompile"
        )
    return path


def verify(
    artifact_dir: str | os.PathLike | Executor | Pipeline,
    feeds: Mapping[str, np.ndarray] | None = None,
    reference_path: str | os.PathLike | None = None,
    rtol: float = 1e-4,
    seed: int = 0,
    *,
    variant: str | None = None,
    model: str | None = None,
    inputs: int = 1,
    feeds_label: str = "the given inputs",
) -> VerifyReport:
    """Compare the sliced artifact with the unsliced model on ``inputs`` input sets: ``feeds``
    (random with ``seed`` if None) and ``inputs - 1`` random sets with seeds ``seed + 1``, ...;
    each output reports its worst set (``OutputDiff.input``: ``feeds_label`` or ``seed S``).

    ``artifact_dir`` may also be an already-built Executor or one of its Pipelines.
    ``variant`` picks a variant of a model artifact (default: the selected one), ``model`` a
    model of a workload artifact (``verify(ex, model=name)`` for each of ``ex.models``). The
    reference is ``reference_path`` or the manifest's ``model.source_path``; either must have
    the sha256 recorded at compile time.
    """
    if isinstance(artifact_dir, Pipeline):
        pipe = artifact_dir
    else:
        ex = artifact_dir if isinstance(artifact_dir, Executor) else Executor(artifact_dir, variant=variant)
        pipe = ex.pipeline(variant=variant, model=model)
    if isinstance(inputs, bool) or not isinstance(inputs, int) or inputs < 1:
        raise ValueError(f"inputs must be a positive integer, got {inputs!r}")
    ref_path = _reference_model(pipe, reference_path)
    sets = [(feeds_label, feeds)] if feeds is not None else [(f"seed {seed}", random_inputs(pipe.inputs, seed=seed))]
    sets += [(f"seed {seed + k}", random_inputs(pipe.inputs, seed=seed + k)) for k in range(1, inputs)]

    so = make_session_options(pipe.runtime, shared_cpu=False, label=str(ref_path))
    so.log_severity_level = 3  # the user's model: its ORT warnings (weights listed as inputs, ...) are not hetcc's
    ref = ort.InferenceSession(str(ref_path), so, providers=[CPU_PROVIDER])
    ref_inputs = {i.name for i in ref.get_inputs()}
    names = [o.name for o in pipe.outputs]
    missing = [n for n in names if n not in {o.name for o in ref.get_outputs()}]
    if missing:
        raise ManifestError(
            f"{ref_path}: has no output {missing[0]!r}; pass --reference the model this artifact was compiled from"
        )
    worst: dict[str, OutputDiff] = {}
    sliced_ms = reference_ms = 0.0
    for label, feed in sets:
        got = pipe.run(feed)
        sliced_ms = max(sliced_ms, pipe.last_total_ms)
        t0 = time.perf_counter()
        want = ref.run(names, {k: v for k, v in feed.items() if k in ref_inputs})
        reference_ms = max(reference_ms, (time.perf_counter() - t0) * 1e3)
        for n, w in zip(names, want):
            d = _compare(n, np.asarray(got[n]), np.asarray(w), rtol, label)
            if n not in worst or _badness(d) > _badness(worst[n]):
                worst[n] = d
    diffs = tuple(worst[n] for n in names)
    return VerifyReport(diffs, all(d.ok for d in diffs), rtol, str(ref_path), sliced_ms, reference_ms,
                        tuple(label for label, _ in sets))
