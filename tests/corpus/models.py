"""The regression corpus: models no one here wrote, built from their libraries' configs with
random weights and exported the way a user would (torch's TorchScript or dynamo exporter).
Nothing is downloaded: timm and transformers build from configs, ultralytics from the yaml files
it ships, and every export runs with the network refused (``no_network``).

Each entry says what it stands for (a real-model trait hetcc must handle) and how to check the
export has that trait, so a library change that silently drops it (say, dynamo no longer writing
external data) fails here instead of passing vacuously."""
from __future__ import annotations

import contextlib
import io
import os
import socket
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import onnx

# before any of the libraries is imported: no hub look-ups, no telemetry, no settings in $HOME
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
               "YOLO_OFFLINE": "1", "YOLO_VERBOSE": "False"}

IMAGE = 64   # pixels: the smallest input every image model here accepts (YOLO's stride is 32)
TOKENS = 16  # sequence length of the text models
VOCAB = 1000


@contextlib.contextmanager
def no_network():
    """Refuse every connection that is not to this machine (an export must not reach a hub)."""
    real = socket.socket.connect

    def connect(self, address):
        host = address[0] if isinstance(address, tuple) else None
        if self.family in (socket.AF_INET, socket.AF_INET6) and host not in ("127.0.0.1", "::1", "localhost"):
            raise OSError(f"tests/corpus: network access refused ({address!r})")
        return real(self, address)

    socket.socket.connect = connect
    try:
        yield
    finally:
        socket.socket.connect = real


@dataclass(frozen=True)
class Entry:
    name: str
    source: str                 # how the model was built and exported, for the README table
    inputs: tuple[str, ...]
    build: Callable[[Path], None]   # writes DIR/m.onnx (and its data file)
    trait: str = ""             # what it checks in hetcc
    check: Callable[[Path], None] | None = None   # asserts the export has that trait


def _export(module, args, path: Path, names, *, dynamo: bool = False, **kwargs) -> None:
    import torch

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):  # dynamo prints progress
        warnings.simplefilter("ignore")
        torch.onnx.export(module.eval(), args, str(path), input_names=list(names), dynamo=dynamo, **kwargs)


def _image():
    import torch

    return (torch.randn(1, 3, IMAGE, IMAGE, generator=torch.Generator().manual_seed(0)),)


def _timm(model: str, *, dynamo: bool = False, **kwargs):
    def build(path: Path) -> None:
        import timm
        import torch

        torch.manual_seed(0)
        _export(timm.create_model(model, pretrained=False, **kwargs), _image(), path, ["x"], dynamo=dynamo)
    return build


def _timm_as_inputs(model: str):
    def build(path: Path) -> None:
        import timm
        import torch

        torch.manual_seed(0)
        _export(timm.create_model(model, pretrained=False), _image(), path, ["x"], keep_initializers_as_inputs=True)
    return build


def _yolo(yaml: str):
    def build(path: Path) -> None:
        import torch
        from ultralytics.nn.tasks import DetectionModel

        torch.manual_seed(0)
        _export(DetectionModel(yaml, verbose=False), _image(), path, ["images"])
    return build


class _Hidden:
    """A transformers model called with keyword inputs, returning its first tensor output (the
    exporters pass positional arguments, which transformers 5 no longer maps by position)."""

    def __new__(cls, model, names):
        import torch

        class Hidden(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, *args):
                out = self.model(**dict(zip(names, args)))
                return out.last_hidden_state if hasattr(out, "last_hidden_state") else out.logits
        return Hidden()


def _tokens(names):
    import torch

    g = torch.Generator().manual_seed(0)
    return tuple(torch.randint(0, VOCAB, (1, TOKENS), generator=g) if n == "input_ids"
                 else torch.ones(1, TOKENS, dtype=torch.long) for n in names)


def _bert(path: Path) -> None:
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(num_hidden_layers=2, hidden_size=128, num_attention_heads=2, intermediate_size=512,
                        vocab_size=VOCAB)
    names = ("input_ids", "attention_mask", "token_type_ids")
    _export(_Hidden(BertModel(config), names), _tokens(names), path, names)


def _gpt2(path: Path) -> None:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=VOCAB, n_positions=64, use_cache=False)
    names = ("input_ids", "attention_mask")
    # the TorchScript exporter cannot export transformers 5's GPT-2 (aten::diff): dynamo it is
    _export(_Hidden(GPT2LMHeadModel(config), names), _tokens(names), path, names, dynamo=True)


# ------------------------------------------------------------------------------ trait checks
def _has_external_data(path: Path) -> None:
    proto = onnx.load(str(path), load_external_data=False)
    external = [t.name for t in proto.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    assert external and (path.parent / "m.onnx.data").is_file(), "the dynamo export has no external data"


def _weights_are_inputs(path: Path) -> None:
    graph = onnx.load(str(path)).graph
    weights = {t.name for t in graph.initializer}
    assert weights and weights <= {i.name for i in graph.input}, "the weights are not listed as graph inputs"


def _op_types(*ops: str) -> Callable[[Path], None]:
    def check(path: Path) -> None:
        have = {n.op_type for n in onnx.load(str(path)).graph.node}
        assert set(ops) <= have, f"expected {set(ops) - have} in the export"
    return check


CORPUS: tuple[Entry, ...] = (
    Entry("resnet18d", "timm resnet18d, TorchScript exporter", ("x",), _timm("resnet18d"),
          "deep-stem CNN, residual diamonds, avg-pool downsampling", _op_types("Conv", "AveragePool", "Add")),
    Entry("vit_tiny", "timm vit_tiny_patch16_224 (img_size=64), TorchScript exporter", ("x",),
          _timm("vit_tiny_patch16_224", img_size=IMAGE),
          "ViT: class token concat, attention MatMul/Softmax, LayerNorm", _op_types("Softmax", "Concat")),
    Entry("yolov8n", "ultralytics yolov8n.yaml (DetectionModel), TorchScript exporter", ("images",),
          _yolo("yolov8n.yaml"), "detection head: three scales joined, DFL Softmax", _op_types("Concat", "Softmax")),
    Entry("yolo11n", "ultralytics yolo11n.yaml (DetectionModel), TorchScript exporter", ("images",),
          _yolo("yolo11n.yaml"), "C2PSA attention block in a CNN", _op_types("Concat", "Softmax", "MatMul")),
    Entry("bert_tiny", "transformers BertModel (2 layers, hidden 128), TorchScript exporter",
          ("input_ids", "attention_mask", "token_type_ids"), _bert,
          "three int64 inputs; a mask crossing every encoder layer; a two-row token-type table",
          _op_types("Gather", "Softmax")),
    Entry("gpt2_tiny", "transformers GPT2LMHeadModel (2 layers, n_embd 64), dynamo exporter",
          ("input_ids", "attention_mask"), _gpt2, "dynamo export of a causal LM (external data file)",
          _has_external_data),
    Entry("efficientnet_b0_dynamo", "timm efficientnet_b0, dynamo exporter (weights in m.onnx.data)", ("x",),
          _timm("efficientnet_b0", dynamo=True), "external data; squeeze-excitation (Mul of a pooled branch)",
          _has_external_data),
    Entry("mobilenetv3_as_inputs", "timm mobilenetv3_small_050, TorchScript, keep_initializers_as_inputs=True",
          ("x",), _timm_as_inputs("mobilenetv3_small_050"), "weights listed as graph inputs", _weights_are_inputs),
)
BY_NAME = {e.name: e for e in CORPUS}


def build(entry: Entry, directory: Path) -> Path:
    """Export ``entry`` into ``directory`` (offline) and return the model's path."""
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "m.onnx"
    with no_network():
        entry.build(path)
    return path
