"""Precision conversion of slice files: FP16 and INT8 variants, and their agreement with FP32.

AutoScale (Sec. 5.3) augments its actions with quantised models: INT8 on the CPU and the DSP,
FP16 on the GPU. A variant of precision P is its FP32 slice files converted:

* ``float16``: ``onnxconverter_common.float16.convert_float_to_float16(keep_io_types=True)`` (the
  ``precision`` extra): weights and activations in FP16, casts at the boundary, so the file takes
  and returns the model's own types;
* ``int8``: ``onnxruntime.quantization.quantize_static`` in the QDQ format (int8 weights per
  tensor and activations, MinMax calibration), calibrated on seeded random inputs
  (``CALIBRATION_INPUTS`` of them) or on ``--calibration-data DIR``: one ``NAME.npy`` per model
  input (the input's shape, or a batch of them stacked on a new first axis); its inputs and
  outputs stay float.

A converted file keeps the source's ``ir_version`` (onnxruntime refuses an IR version above the
one it knows; the converters may write a newer one). ``agreement`` runs the FP32 file and the
converted one with onnxruntime on a fixed seeded input set (``AGREEMENT_INPUTS``, seed
``AGREEMENT_SEED``): the share of inputs whose first output has the same argmax (top-1) and the
mean relative error ||y - y_fp32|| / ||y_fp32|| over inputs and outputs. With random inputs (and
the zoo's random weights) this is a proxy for accuracy, recorded per variant in the manifest
(``Variant.agreement``).

``Converter`` caches both by the file's sha256 and the precision: variants that share a file
share its conversion (and codegen stores equal files once).
"""
from __future__ import annotations

import contextlib
import hashlib
import logging
import tempfile
import warnings
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np
import onnx

from hetcc.core.errors import ModelError, UsageError
from hetcc.runtime.manifest import Agreement

PRECISIONS = ("float32", "float16", "int8")
#: inputs the agreement is measured on, and their seed
AGREEMENT_INPUTS = 16
AGREEMENT_SEED = 0
#: seeded random inputs INT8 calibration runs when no --calibration-data is given
CALIBRATION_INPUTS = 8
#: what a --calibration-data directory may hold at most (files and bytes)
CALIBRATION_MAX_FILES = 1024
CALIBRATION_MAX_BYTES = 2 * 2**30

_NP = {"float32": np.float32, "float16": np.float16, "float64": np.float64, "int64": np.int64, "int32": np.int32,
       "int8": np.int8, "uint8": np.uint8, "bool": np.bool_}


def _inputs(model: onnx.ModelProto) -> list[tuple[str, str, tuple[int, ...]]]:
    """(name, numpy dtype name, shape with dynamic dimensions as 1) of each graph input."""
    inits = {t.name for t in model.graph.initializer}
    out = []
    for v in model.graph.input:
        if v.name in inits:
            continue
        tt = v.type.tensor_type
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type).name
        shape = tuple(int(d.dim_value) if d.HasField("dim_value") and d.dim_value > 0 else 1 for d in tt.shape.dim)
        out.append((v.name, dtype, shape))
    return out


def random_feeds(model: onnx.ModelProto, count: int, seed: int) -> list[dict[str, np.ndarray]]:
    """``count`` seeded input sets for ``model``: standard normal floats, integers 0 or 1 (a token id
    or an index every such input accepts), random booleans."""
    rng = np.random.default_rng(seed)
    feeds = []
    for _ in range(count):
        feed = {}
        for name, dtype, shape in _inputs(model):
            if dtype.startswith("float"):
                feed[name] = rng.standard_normal(shape).astype(dtype)
            elif dtype == "bool":
                feed[name] = rng.random(shape) < 0.5
            else:
                feed[name] = rng.integers(0, 2, size=shape).astype(dtype)
        feeds.append(feed)
    return feeds


def check_calibration_dir(path: str | Path | None) -> Path | None:
    """``--calibration-data DIR`` checked before the work: an existing directory holding .npy files."""
    if path is None:
        return None
    p = Path(path)
    if not p.is_dir():
        raise UsageError(f"--calibration-data {path}: no such directory; give a directory of NAME.npy files, one "
                         "per model input")
    files = sorted(p.glob("*.npy"))
    if not files:
        raise UsageError(f"--calibration-data {path}: holds no .npy file; write one NAME.npy per model input "
                         "(numpy.save)")
    if len(files) > CALIBRATION_MAX_FILES or sum(f.stat().st_size for f in files) > CALIBRATION_MAX_BYTES:
        raise UsageError(f"--calibration-data {path}: more than {CALIBRATION_MAX_FILES} files or 2 GiB; give a "
                         "smaller calibration set")
    return p


def calibration_feeds(model: onnx.ModelProto, directory: Path, fallback_seed: int = 0) -> list[dict[str, np.ndarray]]:
    """Calibration input sets from ``directory`` (``NAME.npy`` per model input: the input's shape, or
    N of them stacked on a new first axis); an input without a file, when another input has one,
    is a UsageError; a file set for none of the inputs (a slice inside the model) gives the seeded
    random inputs."""
    specs = _inputs(model)
    arrays: dict[str, np.ndarray] = {}
    for name, dtype, shape in specs:
        f = directory / f"{name}.npy"
        if not f.is_file():
            continue
        try:
            a = np.load(f, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise UsageError(f"--calibration-data: cannot read {f}: {exc}") from None
        if tuple(a.shape) == shape:
            a = a[None]
        if tuple(a.shape[1:]) != shape or a.shape[0] < 1:
            raise UsageError(f"--calibration-data: {f} has shape {tuple(a.shape)}; input {name!r} takes "
                             f"{shape} (or N x {shape})")
        try:
            arrays[name] = a.astype(dtype, casting="same_kind")
        except TypeError:
            raise UsageError(f"--calibration-data: {f} holds {a.dtype}; input {name!r} takes {dtype}") from None
    if not arrays:
        return random_feeds(model, CALIBRATION_INPUTS, fallback_seed)
    missing = [n for n, _, _ in specs if n not in arrays]
    if missing:
        raise UsageError(f"--calibration-data {directory}: no {missing[0]}.npy for model input {missing[0]!r}")
    n = min(a.shape[0] for a in arrays.values())
    return [{k: a[i] for k, a in arrays.items()} for i in range(n)]


def _keep_ir(converted: onnx.ModelProto, source: onnx.ModelProto) -> bytes:
    converted.ir_version = min(converted.ir_version, source.ir_version) if source.ir_version else converted.ir_version
    return converted.SerializeToString(deterministic=True)


def to_float16(data: bytes) -> bytes:
    """``data`` (an ONNX file's bytes) with its float32 weights and activations in float16, inputs
    and outputs kept (``keep_io_types``)."""
    try:
        from onnxconverter_common import float16
    except ImportError:
        raise UsageError("FP16 variants need onnxconverter-common: pip install 'hetcc[precision]'") from None
    source = onnx.load_from_string(data)
    with warnings.catch_warnings():   # "the float32 number ... will be truncated": what FP16 is
        warnings.simplefilter("ignore", UserWarning)
        converted = float16.convert_float_to_float16(onnx.load_from_string(data), keep_io_types=True,
                                                     disable_shape_infer=True)
    return _keep_ir(converted, source)


def to_int8(data: bytes, feeds: list[dict[str, np.ndarray]]) -> bytes:
    """``data`` quantised to int8 (QDQ, MinMax calibration on ``feeds``)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    source = onnx.load_from_string(data)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter(feeds)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.it, None)

    with tempfile.TemporaryDirectory(prefix="hetcc-int8-") as tmp, _quiet():
        src, dst = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
        src.write_bytes(data)
        quantize_static(str(src), str(dst), Reader(), quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8,
                        weight_type=QuantType.QInt8, per_channel=False,
                        extra_options={"CalibTensorRangeSymmetric": False})
        converted = onnx.load(str(dst))
    return _keep_ir(converted, source)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """onnxruntime's quantiser logs advice on the root logger ("consider pre-processing"): muted."""
    before = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(before)


def _session(data: bytes) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = 1      # the same numbers on every machine
    return ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])


def agreement(fp32: bytes, low: bytes, inputs: int = AGREEMENT_INPUTS, seed: int = AGREEMENT_SEED) -> Agreement:
    """How closely ``low`` follows ``fp32`` on ``inputs`` seeded random input sets (module docstring)."""
    feeds = random_feeds(onnx.load_from_string(fp32), inputs, seed)
    a, b = _session(fp32), _session(low)
    same, errs = 0, []
    for feed in feeds:
        ya, yb = a.run(None, feed), b.run(None, feed)
        same += int(np.argmax(np.asarray(ya[0]).reshape(-1)) == np.argmax(np.asarray(yb[0]).reshape(-1)))
        for x, y in zip(ya, yb):
            x64, y64 = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
            errs.append(float(np.linalg.norm(y64 - x64) / max(np.linalg.norm(x64), 1e-12)))
    return Agreement(inputs=inputs, seed=seed, top1=same / inputs, rel_error=float(np.mean(errs)) if errs else 0.0)


class Converter:
    """Converts slice files to a precision and measures their agreement, each once per (file
    sha256, precision). ``calibration``: a ``--calibration-data`` directory (checked), or None
    for seeded random calibration inputs (``seed``)."""

    def __init__(self, calibration: str | Path | None = None, seed: int = 0) -> None:
        self.calibration = check_calibration_dir(calibration)
        self.seed = seed
        self.converted: dict[tuple[str, str], bytes] = {}
        self.agreements: dict[tuple[str, str], Agreement] = {}

    def convert(self, data: bytes, precision: str) -> bytes:
        """``data`` at ``precision`` (float32: unchanged)."""
        if precision == "float32":
            return data
        if precision not in PRECISIONS:
            raise UsageError(f"unknown precision {precision!r}; use one of {', '.join(PRECISIONS)}")
        key = (hashlib.sha256(data).hexdigest(), precision)
        if key not in self.converted:
            model = onnx.load_from_string(data)
            feeds = None
            if precision == "int8":
                feeds = (calibration_feeds(model, self.calibration, self.seed) if self.calibration is not None
                         else random_feeds(model, CALIBRATION_INPUTS, self.seed))
            try:
                self.converted[key] = to_float16(data) if precision == "float16" else to_int8(data, feeds or [])
            except (UsageError, MemoryError, KeyboardInterrupt):
                raise
            except Exception as exc:   # the converters' own failures: any op, any message
                raise ModelError(f"{model.graph.name or 'the model'}: converting to {precision} failed ({type(exc).__name__}: "
                                 f"{str(exc).splitlines()[0] if str(exc) else 'no message'}); leave its "
                                 f"{precision} actions out (--planner-option actions=...)") from None
        return self.converted[key]

    def agreement(self, data: bytes, precision: str) -> Agreement | None:
        """The agreement of ``data`` at ``precision`` with ``data`` (None at float32)."""
        if precision == "float32":
            return None
        key = (hashlib.sha256(data).hexdigest(), precision)
        if key not in self.agreements:
            low = self.convert(data, precision)
            try:
                self.agreements[key] = agreement(data, low)
            except (MemoryError, KeyboardInterrupt):
                raise
            except Exception as exc:   # onnxruntime cannot load or run the converted file
                raise ModelError(f"the {precision} conversion does not run in onnxruntime ({type(exc).__name__}: "
                                 f"{str(exc).splitlines()[0] if str(exc) else 'no message'}); leave its "
                                 f"{precision} actions out (--planner-option actions=...)") from None
        return self.agreements[key]


def worst(agreements: Mapping[Any, Agreement | None] | list[Agreement | None]) -> Agreement | None:
    """One agreement for a variant of several converted slices: the lowest top-1, the highest error."""
    items = [a for a in (agreements.values() if isinstance(agreements, Mapping) else agreements) if a is not None]
    if not items:
        return None
    return Agreement(inputs=min(a.inputs for a in items), seed=items[0].seed, top1=min(a.top1 for a in items),
                     rel_error=max(a.rel_error for a in items))


__all__ = ["AGREEMENT_INPUTS", "AGREEMENT_SEED", "CALIBRATION_INPUTS", "Converter", "PRECISIONS", "agreement",
           "calibration_feeds", "check_calibration_dir", "random_feeds", "to_float16", "to_int8", "worst"]
