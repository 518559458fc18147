"""The model zoo: torchvision and timm architectures with random weights, exported to ONNX.

Nothing is downloaded: every model is built with ``weights=None`` (torchvision) or
``pretrained=False`` (timm) after seeding torch's RNG (BatchNorm statistics then set from one
seeded random batch, so outputs are not ~0): the same name and seed give the same ONNX bytes with
the same torch build on the same CPU; elsewhere the calibrated statistics may differ in the last
bits (CPU kernels differ by instruction set). Most entries come from torchvision; the two of
MOSAIC's workloads torchvision lacks (Inception-V4, ResNet V2) come from timm, the maintained
source of both. torch, torchvision and timm are optional (``pip install 'hetcc[zoo]'``) and
imported lazily.
"""
from __future__ import annotations

import contextlib
import difflib
import io
import logging
import os
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from hetcc.core.paths import confine_libraries
from hetcc.files.atomic import atomic_write_bytes
from hetcc.core.errors import ModelError, UsageError

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = ["SOURCES", "ZOO", "ZooEntry", "build_module", "export", "export_module", "list_models", "module_onnx_bytes"]

logger = logging.getLogger(__name__)

DEFAULT_OPSET = 17
# onnxruntime refuses models whose IR version is newer than it knows; IR 10 (onnx 1.16) is
# read by every onnxruntime hetcc supports, and opset 17 needs only IR 8.
MAX_IR_VERSION = 10
INPUT_NAME = "input"
OUTPUT_NAME = "output"

_MISSING_TORCH = "the model zoo needs torch and torchvision: pip install 'hetcc[zoo]'"
_MISSING_TIMM = "zoo model {name!r} is built by timm, which is not installed: pip install 'hetcc[zoo]'"
#: where a zoo entry's constructor lives: torchvision.models functions or timm.create_model names
SOURCES = ("torchvision", "timm")


@dataclass(frozen=True)
class ZooEntry:
    """One zoo model: which constructor builds it (from ``source``), with what, and for what input."""

    name: str
    constructor: str  # a function of ``torchvision.models``, or a ``timm.create_model`` name
    kwargs_items: tuple[tuple[str, Any], ...]  # extra constructor kwargs (a tuple: hashable)
    input_shape: tuple[int, ...]  # NCHW, batch 1
    description: str
    core: bool  # in the core evaluation set
    source: str = "torchvision"  # one of SOURCES

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"zoo entry {self.name!r}: source must be one of {SOURCES}, not {self.source!r}")

    @property
    def kwargs(self) -> dict[str, Any]:
        """The constructor's keyword arguments, random weights asked for (``weights=None`` for
        torchvision, ``pretrained=False`` for timm)."""
        fresh = {"pretrained": False} if self.source == "timm" else {"weights": None}
        return {**fresh, **dict(self.kwargs_items)}

    @property
    def output_shape(self) -> tuple[int, ...]:
        """Every zoo model is an ImageNet classifier: one row of 1000 logits."""
        return (self.input_shape[0], 1000)


_IMAGENET = (1, 3, 224, 224)


def _entry(
    name: str,
    description: str,
    *,
    constructor: str | None = None,
    core: bool = False,
    input_shape: tuple[int, ...] = _IMAGENET,
    source: str = "torchvision",
    **kwargs: Any,
) -> ZooEntry:
    return ZooEntry(
        name=name,
        constructor=constructor or name,
        kwargs_items=tuple(sorted(kwargs.items())),
        input_shape=input_shape,
        description=description,
        core=core,
        source=source,
    )


_ENTRIES = (
    # The core set.
    _entry("resnet50", "ResNet-50: bottleneck residual blocks, 25.6M params", core=True),
    _entry("mobilenet_v2", "MobileNetV2 width 1.0: inverted residuals, depthwise conv", core=True),
    _entry("mobilenet_v2_1.3", "MobileNetV2 width 1.3", constructor="mobilenet_v2",
           core=True, width_mult=1.3),
    _entry("mobilenet_v2_1.4", "MobileNetV2 width 1.4", constructor="mobilenet_v2",
           core=True, width_mult=1.4),
    _entry("mnasnet0_5", "MnasNet depth 0.5: NAS-found mobile net", core=True),
    _entry("mnasnet1_0", "MnasNet depth 1.0", core=True),
    _entry("mnasnet1_3", "MnasNet depth 1.3", core=True),
    _entry("vgg16", "VGG-16: plain 3x3 conv stack, 138M params (528 MB)", core=True),
    _entry("squeezenet1_1", "SqueezeNet 1.1: fire modules (squeeze/expand concat), 1.2M params",
           core=True),
    _entry("efficientnet_b0", "EfficientNet-B0: MBConv with squeeze-excitation, SiLU", core=True),
    _entry("inception_v3", "Inception v3 at 299x299: multi-branch concats, no aux head",
           core=True, input_shape=(1, 3, 299, 299), aux_logits=False, init_weights=False),
    _entry("googlenet", "GoogLeNet (Inception v1): multi-branch concats, no aux heads",
           core=True, aux_logits=False, init_weights=False),
    # Beyond the core set: other structures a partitioner must handle.
    _entry("resnet18", "ResNet-18: basic residual blocks, 11.7M params"),
    _entry("shufflenet_v2_x1_0", "ShuffleNetV2 1.0x: grouped conv and channel shuffle"),
    _entry("densenet121", "DenseNet-121: dense blocks, every layer concatenates its inputs"),
    _entry("regnet_y_400mf", "RegNetY-400MF: grouped conv with squeeze-excitation"),
    _entry("vit_b_16", "ViT-B/16: patch embedding and 12 self-attention blocks, 86M params"),
    _entry("convnext_tiny", "ConvNeXt-Tiny: 7x7 depthwise conv, LayerNorm, GELU"),
    _entry("mobilenet_v3_small", "MobileNetV3-Small: hard-swish, squeeze-excitation"),
    # EvoSh's models beside B0 (its Fig. 4: B2 at 260x260, B4 at 380x380, as torchvision trains them)
    _entry("efficientnet_b2", "EfficientNet-B2 at 260x260 (EvoSh's medium model)", input_shape=(1, 3, 260, 260)),
    _entry("efficientnet_b4", "EfficientNet-B4 at 380x380 (EvoSh's large model)", input_shape=(1, 3, 380, 380)),
    # MOSAIC's IN and RN (its Table I), from timm: torchvision has neither architecture
    _entry("inception_v4", "Inception-V4 at 299x299 (timm; MOSAIC's IN): stem, 4 A, 7 B, 3 C blocks, 42.7M params",
           source="timm", input_shape=(1, 3, 299, 299)),
    _entry("resnetv2_152", "ResNet-V2-152 (timm; pre-activation bottlenecks, 60.2M params): stand-in for MOSAIC's "
           "RN ('ResNet V2, 77.8% top-1', depth not named): TF-slim's ResNet V2 152 is the one of that accuracy",
           source="timm"),
)

ZOO: dict[str, ZooEntry] = {e.name: e for e in _ENTRIES}


def list_models() -> list[ZooEntry]:
    """Every zoo entry, core models first, in the order they are declared."""
    return sorted(ZOO.values(), key=lambda e: not e.core)


def _import_torch() -> tuple[Any, Any]:
    try:
        confine_libraries()           # torch's caches under hetcc's cache
        import torch
        import torchvision
    except ImportError as exc:
        raise UsageError(_MISSING_TORCH) from exc
    return torch, torchvision


def _lookup(name: str) -> ZooEntry:
    entry = ZOO.get(name)
    if entry is not None:
        return entry
    close = difflib.get_close_matches(name, ZOO, n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    raise UsageError(
        f"unknown zoo model '{name}'; {hint}known: {', '.join(ZOO)} (see `hetcc zoo list`)"
    )


def _constructor(entry: ZooEntry) -> Any:
    """The function that builds ``entry`` (called with ``entry.kwargs``); timm is imported here."""
    _, torchvision = _import_torch()
    if entry.source == "torchvision":
        return getattr(torchvision.models, entry.constructor)
    try:
        import timm
    except ImportError as exc:
        raise UsageError(_MISSING_TIMM.format(name=entry.name)) from exc
    return lambda **kwargs: timm.create_model(entry.constructor, **kwargs)


def build_module(name: str, seed: int = 0) -> "torch.nn.Module":
    """The zoo model ``name`` in eval mode with random weights drawn from ``seed``.

    Fresh torchvision weights give near-constant outputs (MobileNetV2 ~1e-9, EfficientNet
    ~1e-14, ViT exactly 0), which would make "sliced equals unsliced" checks vacuous; see
    ``_make_outputs_informative``. torch's global RNG is seeded inside a forked RNG scope, so
    the caller's RNG state is kept.
    """
    entry = _lookup(name)
    torch, _ = _import_torch()
    ctor = _constructor(entry)
    with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(seed)
        module = ctor(**entry.kwargs)
        _make_outputs_informative(torch, module, entry.input_shape)
    return module.eval()


_CALIBRATION_BATCH = 2


def _make_outputs_informative(torch: Any, module: "torch.nn.Module",
                              input_shape: tuple[int, ...]) -> None:
    """Give a randomly initialised classifier outputs of order one, deterministically.

    Two things flatten them: BatchNorm running statistics left at mean 0 / variance 1 (so in
    eval mode nothing is normalised and activations shrink layer after layer), and heads that
    torchvision zero-initialises (ViT). Linear layers whose weight is all zero get torch's
    default init, and BatchNorm statistics are set from one random batch passed with only the
    BatchNorm layers in training mode (dropout and stochastic depth stay off).
    """
    for layer in module.modules():
        if isinstance(layer, torch.nn.Linear) and not layer.weight.any():
            layer.reset_parameters()
    norms = [m for m in module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    module.eval()
    saved = []
    for bn in norms:
        saved.append(bn.momentum)
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average: after one batch, exactly that batch's stats
        bn.train()
    try:
        with torch.no_grad():
            module(torch.randn((_CALIBRATION_BATCH, *input_shape[1:])))
    finally:
        for bn, momentum in zip(norms, saved):
            bn.momentum = momentum
        module.eval()


def export(name: str, path: str | os.PathLike[str], *, seed: int = 0,
           opset: int = DEFAULT_OPSET) -> Path:
    """Build zoo model ``name`` with weights from ``seed`` and write it as ONNX to ``path``."""
    entry = _lookup(name)
    module = build_module(name, seed=seed)
    return export_module(module, entry.input_shape, path, opset=opset, seed=seed)


def export_module(
    module: "torch.nn.Module",
    example_input_shape: tuple[int, ...] | list[int],
    path: str | os.PathLike[str],
    opset: int = DEFAULT_OPSET,
    *,
    seed: int = 0,
    input_name: str = INPUT_NAME,
) -> Path:
    """Export a torch module (traced in eval mode, static shape) as ONNX to ``path``, atomically.

    The graph has one input named ``input_name`` (default ``input``) of ``example_input_shape``
    and its first output named ``output``; constants are folded and the IR version is kept
    readable by onnxruntime. ``seed`` draws the example input the tracer runs. Every submodule's
    training flag is restored afterwards.
    """
    out = Path(path)
    start = time.perf_counter()
    data = module_onnx_bytes(module, example_input_shape, opset, seed=seed, input_name=input_name)
    atomic_write_bytes(out, data)
    logger.info("exported %s to %s (%.1f MB) in %.2f s", type(module).__name__, out, len(data) / 1e6,
                time.perf_counter() - start)
    return out


def module_onnx_bytes(
    module: "torch.nn.Module",
    example_input_shape: tuple[int, ...] | list[int],
    opset: int = DEFAULT_OPSET,
    *,
    seed: int = 0,
    input_name: str = INPUT_NAME,
) -> bytes:
    """``export_module``'s ONNX model as bytes, written nowhere."""
    torch, _ = _import_torch()
    import onnx

    shape = _check_shape(example_input_shape)
    if not isinstance(module, torch.nn.Module):
        raise UsageError(f"expected a torch.nn.Module, got {type(module).__name__}")
    if not isinstance(opset, int) or opset < 7:
        raise UsageError(f"opset must be an integer >= 7, got {opset!r}")
    if not isinstance(input_name, str) or not input_name.strip() or input_name == OUTPUT_NAME:
        raise UsageError(f"input name {input_name!r}: give a non-empty name other than {OUTPUT_NAME!r}")

    generator = torch.Generator().manual_seed(seed)
    example = torch.randn(shape, generator=generator)
    modes = [(m, m.training) for m in module.modules()]
    module.eval()
    buf = io.BytesIO()
    try:
        with warnings.catch_warnings(), _captured_stdout():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                module,
                (example,),
                buf,
                dynamo=False,
                opset_version=opset,
                input_names=[input_name],
                output_names=[OUTPUT_NAME],
                do_constant_folding=True,
            )
    except Exception as exc:  # the exporter raises many types; name the module either way
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(
            f"torch.onnx.export failed for {type(module).__name__} with input shape "
            f"{'x'.join(map(str, shape))}: {reason}"
        ) from exc
    finally:
        for m, training in modes:
            m.training = training

    model = onnx.load_from_string(buf.getvalue())
    # the exporter's Identity-of-initializer nodes stay: passes.constants handles them
    if model.ir_version > MAX_IR_VERSION:
        model.ir_version = max(MAX_IR_VERSION,
                               onnx.helper.find_min_ir_version_for(model.opset_import))
        return model.SerializeToString()
    return buf.getvalue()


@contextlib.contextmanager
def _captured_stdout() -> Iterator[None]:
    """Send file descriptor 1 to a temporary file while the exporter runs, then restore it.

    The TorchScript exporter dumps its whole IR graph to C++ ``std::cout`` when a conversion
    fails (its ONNX log is always on), which Python-level redirection cannot catch; that dump
    would bury the CLI's one-line error. The captured text is kept at DEBUG level.
    """
    try:
        saved = os.dup(1)
    except OSError:  # no stdout at all: nothing to protect
        yield
        return
    with tempfile.TemporaryFile() as sink:
        for stream in (sys.stdout, sys.__stdout__):
            with contextlib.suppress(Exception):
                stream.flush()
        os.dup2(sink.fileno(), 1)
        try:
            yield
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
            sink.seek(0)
            text = sink.read().decode(errors="replace").strip()
            if text:
                logger.debug("torch.onnx.export printed:\n%s", text)


def _check_shape(shape: Any) -> tuple[int, ...]:
    try:
        dims = tuple(int(d) for d in shape)
        ok = all(int(d) == d for d in shape)
    except (TypeError, ValueError):
        dims, ok = (), False
    if not ok or not dims or any(d <= 0 for d in dims):
        raise UsageError(f"example input shape must be positive integers, e.g. (1, 3, 224, 224); "
                         f"got {shape!r}")
    return dims
