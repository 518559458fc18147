"""What ``hetcc serve`` runs: onnxruntime sessions indexed by the sha256 of their file.

``Backend(path)`` opens a model (``.onnx``: the whole model, one entry) or an artifact directory
(every slice file of every variant, once per distinct content: variants sharing a file share a
session). A request names the slices to run by sha256, in order (``plan``); ``run`` checks the
tensors it was sent against what the chain reads (names, dtypes, static dimensions), runs the
sessions in order with a time limit (onnxruntime's terminate flag) and returns the tensors asked
for. No web framework here: ``hetcc.serve.app`` wraps it.
"""
from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from hetcc.core.errors import UsageError
from hetcc.runtime import onnxrt
from hetcc.runtime.errors import ManifestError
from hetcc.runtime.executor import CPU_PROVIDER, make_session_options
from hetcc.runtime.manifest import read_manifest, sha256_file, slice_path

__all__ = ["Backend", "Chain", "Unit", "RequestError", "RunTimeout"]

logger = logging.getLogger("hetcc.serve")

#: onnxruntime's type strings as numpy dtype names
_ORT_DTYPES = {f"tensor({t})": n for t, n in (
    ("float16", "float16"), ("float", "float32"), ("double", "float64"), ("int8", "int8"), ("int16", "int16"),
    ("int32", "int32"), ("int64", "int64"), ("uint8", "uint8"), ("uint16", "uint16"), ("uint32", "uint32"),
    ("uint64", "uint64"), ("bool", "bool"))}


class RequestError(ValueError):
    """A request the backend refuses (the app answers ``status`` with the message)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class RunTimeout(RuntimeError):
    """A run stopped at the server's time limit (the app answers 504)."""


@dataclass
class Unit:
    """One servable file: its session and the tensors it reads and writes (None: a dynamic dim)."""

    sha256: str
    file: str
    session: Any
    provider: str
    inputs: dict[str, tuple[np.dtype, tuple]]
    outputs: tuple[str, ...]


@dataclass(frozen=True)
class Chain:
    """Slices to run in order, the tensors they read from the request and the tensors returned."""

    units: tuple[Unit, ...]
    needs: dict[str, tuple[np.dtype, tuple]]
    returns: tuple[str, ...]


def _io(args: Sequence[Any]) -> dict[str, tuple[np.dtype, tuple]]:
    out = {}
    for a in args:
        dtype = np.dtype(_ORT_DTYPES.get(a.type, "float32"))
        out[a.name] = (dtype, tuple(d if isinstance(d, int) and d >= 0 else None for d in (a.shape or ())))
    return out


class Backend:
    """The sessions ``hetcc serve`` runs. ``path``: a ``.onnx`` model or an artifact directory.
    ``provider``: run every file on this provider (default: each slice's own where installed,
    else the CPU provider, reported once per provider). ``threads``: intra-op threads per session
    (default: one per usable core)."""

    def __init__(self, path: str | os.PathLike, *, provider: str | None = None, threads: int | None = None):
        ort = onnxrt.load()
        self.path = Path(path)
        self.available = set(ort.get_available_providers())
        if provider is not None and provider not in self.available:
            raise UsageError(f"--provider {provider}: not installed here (available: "
                             f"{', '.join(sorted(self.available))})")
        self.units: dict[str, Unit] = {}
        self.unavailable: dict[str, list[str]] = {}
        self.default: tuple[str, ...] = ()
        runtime: dict[str, Any] = {"intra_op_num_threads": threads}
        if self.path.is_dir():
            self.kind = "artifact"
            manifest, root, shown = read_manifest(self.path)
            if manifest.kind != "model":
                raise UsageError(f"{self.path}: a workload artifact; serve one of its models "
                                 f"({', '.join(str(self.path / 'models' / n) for n in manifest.model_names)})")
            runtime["graph_optimization_level"] = manifest.runtime.graph_optimization_level
            self.model_name = manifest.model.name
            for name, variant in manifest.variants.items():
                for sl in variant.slices:
                    if sl.sha256 in self.units:
                        continue
                    file = slice_path(root, sl.file, shown, "file")
                    if not file.is_file():
                        raise ManifestError(f"{file}: slice file is missing; the artifact is incomplete, recompile")
                    if sha256_file(file) != sl.sha256:
                        raise ManifestError(f"{file}: sha256 mismatch; the artifact was modified — recompile")
                    wanted = provider or sl.execution_provider
                    self.units[sl.sha256] = self._open(ort, file, sl.sha256, wanted, runtime, sl.file)
        elif self.path.is_file():
            self.kind = "model"
            if self.path.suffix.lower() != ".onnx":
                raise UsageError(f"{self.path}: not an .onnx model or an artifact directory; give one of them")
            sha = sha256_file(self.path)
            self.model_name = self.path.stem
            self.units[sha] = self._open(ort, self.path, sha, provider or CPU_PROVIDER, runtime, self.path.name)
            self.default = (sha,)
        else:
            raise UsageError(f"{self.path}: no such model or artifact directory; give an .onnx file or the "
                             "directory hetcc compile wrote (-o)")
        for wanted, files in self.unavailable.items():
            logger.warning("%s is not available here: %d file(s) run on %s (%s)", wanted, len(files), CPU_PROVIDER,
                           ", ".join(files[:3]) + (", ..." if len(files) > 3 else ""))

    def _open(self, ort: Any, file: Path, sha: str, wanted: str, runtime: dict, shown: str) -> Unit:
        chosen = wanted if wanted in self.available else CPU_PROVIDER
        if chosen != wanted:
            self.unavailable.setdefault(wanted, []).append(shown)
        so = make_session_options(runtime, shared_cpu=True, label=shown)
        providers = [chosen] if chosen == CPU_PROVIDER else [chosen, CPU_PROVIDER]
        try:
            sess = ort.InferenceSession(str(file), so, providers=providers)
        except Exception as exc:   # onnxruntime raises its own types
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ManifestError(f"{file}: onnxruntime cannot load it ({first})") from exc
        return Unit(sha, shown, sess, sess.get_providers()[0], _io(sess.get_inputs()),
                    tuple(o.name for o in sess.get_outputs()))

    # ---------------------------------------------------------------------------------------
    @property
    def sessions(self) -> int:
        return len(self.units)

    def describe(self) -> list[dict]:
        """What ``GET /v1/slices`` lists: every file by sha256 with its tensors and provider."""
        def specs(table: dict) -> list[dict]:
            return [{"name": n, "dtype": str(d), "shape": list(s)} for n, (d, s) in table.items()]

        return [{"sha256": u.sha256, "file": u.file, "provider": u.provider, "inputs": specs(u.inputs),
                 "outputs": list(u.outputs)} for u in self.units.values()]

    def plan(self, slices: Sequence[str], outputs: Sequence[str] | None) -> Chain:
        """The chain of ``slices`` (sha256s; empty: the model's one file) returning ``outputs``
        (default: the last slice's outputs); RequestError naming what is unknown."""
        shas = tuple(slices) or self.default
        if not shas:
            raise RequestError("name the slices to run (?slices=SHA256,...); GET /v1/slices lists them")
        if len(shas) > 4096:
            raise RequestError("more than 4096 slices in one request")
        units = []
        for sha in shas:
            unit = self.units.get(sha)
            if unit is None:
                raise RequestError(f"no slice with sha256 {sha[:64]!r} here (this server holds {len(self.units)} "
                                   "file(s); GET /v1/slices lists them): is the artifact the same on both sides?",
                                   status=404)
            units.append(unit)
        needs: dict[str, tuple[np.dtype, tuple]] = {}
        produced: set[str] = set()
        for unit in units:
            for name, spec in unit.inputs.items():
                if name not in produced and name not in needs:
                    needs[name] = spec
            produced.update(unit.outputs)
        returns = tuple(outputs) if outputs else units[-1].outputs
        missing = [n for n in returns if n not in produced]
        if missing:
            raise RequestError(f"output {missing[0][:100]!r} is not computed by these slices "
                               f"(they compute {', '.join(sorted(produced))[:300]})")
        return Chain(tuple(units), needs, returns)

    def check(self, chain: Chain, feeds: Mapping[str, np.ndarray]) -> None:
        """RequestError unless ``feeds`` are exactly the tensors the chain reads, typed and shaped."""
        for name in feeds:
            if name not in chain.needs:
                raise RequestError(f"unexpected tensor {name[:100]!r}; these slices read "
                                   f"{', '.join(chain.needs) or 'nothing'}")
        for name, (dtype, shape) in chain.needs.items():
            if name not in feeds:
                raise RequestError(f"tensor {name!r} is missing; these slices read {', '.join(chain.needs)}")
            value = feeds[name]
            same = value.ndim == len(shape) and all(d is None or d == e for d, e in zip(shape, value.shape))
            if value.dtype != dtype or not same:
                want = "x".join("?" if d is None else str(d) for d in shape)
                raise RequestError(f"tensor {name!r} is {value.dtype}[{'x'.join(map(str, value.shape))}]; these "
                                   f"slices read {dtype}[{want}]")

    def run(self, chain: Chain, feeds: Mapping[str, np.ndarray], timeout: float | None) -> dict[str, np.ndarray]:
        """Run the chain on ``feeds`` within ``timeout`` seconds (RunTimeout past it)."""
        ort = onnxrt.load()
        store = dict(feeds)
        start = time.perf_counter()
        for unit in chain.units:
            options = ort.RunOptions()
            timer = None
            if timeout is not None:
                left = timeout - (time.perf_counter() - start)
                if left <= 0:
                    raise RunTimeout(f"the run passed the server's {timeout:g} s limit (--timeout)")
                timer = threading.Timer(left, lambda: setattr(options, "terminate", True))
                timer.daemon = True
                timer.start()
            try:
                outs = unit.session.run(list(unit.outputs), {n: store[n] for n in unit.inputs}, options)
            except Exception as exc:   # onnxruntime's Fail / InvalidArgument / RuntimeException
                if options.terminate:
                    raise RunTimeout(f"the run passed the server's {timeout:g} s limit (--timeout) in "
                                     f"{unit.file}") from None
                text = " ".join(str(exc).split())[:300]
                raise RequestError(f"onnxruntime failed on these inputs in {unit.file}: {text}", status=422) from None
            finally:
                if timer is not None:
                    timer.cancel()
            store.update(zip(unit.outputs, outs))
        return {name: store[name] for name in chain.returns}


def token_digest(token: str) -> bytes:
    """The token as compared (sha256: equal lengths for ``hmac.compare_digest``)."""
    return hashlib.sha256(token.encode()).digest()
