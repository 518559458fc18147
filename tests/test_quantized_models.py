"""Quantised models end to end: a small conv net and torchvision's ResNet-18 (weights=None,
1x3x64x64), exported with torch's TorchScript exporter and quantised by onnxruntime's
``quantize_static`` in both formats (QDQ: DequantizeLinear -> op -> QuantizeLinear groups;
QOperator: QLinearConv, QLinearAdd, QGemm ...). Each compiles for hikey970 and the host and its
slices reproduce the unsliced model (``hetcc run --verify``); FLOPs match the float model's;
on hikey970 the int8 model is predicted no slower than the float one."""
from __future__ import annotations

import os
import tempfile
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from extras import needs

import hetcc
from hetcc.cli import main
from hetcc.compiler.flops import QDQ_OPS
from hetcc.compiler.program import LAYERS

pytestmark = [pytest.mark.zoo, pytest.mark.slow, pytest.mark.timeout(900)]

torch = needs("zoo", "torch")
torchvision = needs("zoo", "torchvision")
quantization = pytest.importorskip("onnxruntime.quantization")

SHAPE = (1, 3, 64, 64)


def small_net():
    """A SmallNet (torch is imported when a test first needs it, not when the file is collected)."""
    class SmallNet(torch.nn.Module):
        """conv-bn-relu, a residual add, a strided conv, pooling and a classifier."""

        def __init__(self) -> None:
            super().__init__()
            self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(8)
            self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1)
            self.conv3 = torch.nn.Conv2d(8, 16, 3, padding=1, stride=2)
            self.fc = torch.nn.Linear(16, 10)

        def forward(self, x):
            x = torch.relu(self.bn(self.conv1(x)))
            x = torch.relu(x + self.conv2(x))
            x = torch.relu(self.conv3(x))
            return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))

    return SmallNet()


class _Calibration(quantization.CalibrationDataReader):
    """A few random inputs: enough to fix the activations' scales for a test."""

    def __init__(self, n: int = 2) -> None:
        rng = np.random.default_rng(0)
        self._it = iter([{"input": rng.standard_normal(SHAPE).astype(np.float32)} for _ in range(n)])

    def get_next(self):
        return next(self._it, None)


def _export(module, path: Path) -> Path:
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module.eval(), (torch.randn(*SHAPE),), str(path), input_names=["input"],
                          output_names=["output"], dynamo=False)
    # onnxruntime's pre-processing folds the Identity nodes torch leaves on shared biases (the
    # quantiser needs biases as initializers) and infers shapes
    pre = path.with_name(path.stem + "_pre.onnx")
    quantization.shape_inference.quant_pre_process(str(path), str(pre), skip_symbolic_shape=True)
    return pre


def _quantise(src: Path, fmt: str) -> Path:
    out = src.with_name(f"{src.stem}_{fmt}.onnx")
    quantization.quantize_static(str(src), str(out), _Calibration(),
                                 quant_format=getattr(quantization.QuantFormat, fmt),
                                 activation_type=quantization.QuantType.QUInt8,
                                 weight_type=quantization.QuantType.QInt8)
    return out


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("quantised")
    torch.manual_seed(0)
    out = {}
    for name, module in (("small", small_net()), ("resnet18", torchvision.models.resnet18(weights=None))):
        fp32 = _export(module, d / f"{name}.onnx")
        out[name, "float"] = fp32
        for fmt in ("QDQ", "QOperator"):
            out[name, fmt] = _quantise(fp32, fmt)
    return out


def _ops(path: Path) -> set[str]:
    return {n.op_type for n in onnx.load(str(path), load_external_data=False).graph.node}


def test_the_quantiser_wrote_both_formats(models):
    assert {"QuantizeLinear", "DequantizeLinear", "Conv"} <= _ops(models["resnet18", "QDQ"])
    assert {"QLinearConv", "QLinearAdd"} <= _ops(models["resnet18", "QOperator"])
    assert "Conv" not in _ops(models["resnet18", "QOperator"])


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_quantised_resnet18_counts_the_float_models_flops(models, fmt):
    ref = hetcc.analyse(models["resnet18", "float"], target="hikey970").program.get(LAYERS)
    q = hetcc.analyse(models["resnet18", fmt], target="hikey970").program.get(LAYERS)
    g_ref, g_q = sum(l.flops for l in ref) / 1e9, sum(l.flops for l in q) / 1e9
    assert g_q == pytest.approx(g_ref, rel=0.03)
    conv_ref = sum(l.flops_by_class["conv"] for l in ref)
    assert sum(l.flops_by_class["conv"] for l in q) == pytest.approx(conv_ref, rel=1e-9)
    # and the convolutions are all counted as integer work
    assert sum(l.int8_flops_by_class.get("conv", 0.0) for l in q) == pytest.approx(conv_ref, rel=1e-9)


def test_no_layer_of_a_qdq_model_starts_or_ends_inside_a_group(models):
    program = hetcc.analyse(models["resnet18", "QDQ"], target="hikey970").program
    producer = {o.name: n.op_type for n in program.graph for o in n.outputs}
    consumers: dict[str, list[str]] = {}
    for n in program.graph:
        for v in n.inputs:
            if v is not None:
                consumers.setdefault(v.name, []).append(n.op_type)
    layers = program.get(LAYERS)
    assert len(layers) > 5
    for layer in layers[:-1]:
        for t in layer.outputs:
            assert producer[t] == "QuantizeLinear", (layer.name, t)
            assert set(consumers[t]) == {"DequantizeLinear"}, (layer.name, t)


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
@pytest.mark.parametrize("name", ["small", "resnet18"])
def test_hikey970_compiles_and_verifies(models, tmp_path, capsys, name, fmt):
    out = tmp_path / "a"
    # forced cuts: every slice boundary must still reproduce the model exactly
    result = hetcc.compile(models[name, fmt], target="hikey970", planner="even:4", output_dir=out)
    assert len(result.plan.slices) == 4
    assert main(["run", str(out), "--verify"]) == 0
    assert "outputs match" in capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_host_compiles_and_verifies(models, tmp_path, capsys, fmt):
    out = tmp_path / "h"
    hetcc.compile(models["small", fmt], target="host", output_dir=out, profile_repeats=1)
    assert main(["run", str(out), "--verify"]) == 0
    assert "outputs match" in capsys.readouterr().out


def test_qdq_layers_are_legal_on_the_npu_and_gpu(models):
    a = hetcc.analyse(models["resnet18", "QDQ"], target="hikey970")
    problem = a.problem
    devices = problem.states.device
    for dev in ("npu", "gpu"):
        cols = [s for s, d in enumerate(devices) if d == dev]
        assert problem.legal[:, cols].any(axis=1).all(), dev


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_int8_resnet18_is_predicted_no_slower_than_float(models, fmt):
    t_float = hetcc.compile(models["resnet18", "float"], target="hikey970").plan.latency_ms
    t_int8 = hetcc.compile(models["resnet18", fmt], target="hikey970").plan.latency_ms
    assert 0 < t_int8 <= t_float


def test_fused_quantize_nodes_launch_nothing(models):
    program = hetcc.analyse(models["resnet18", "QDQ"], target="hikey970").program
    op = {n.name: n.op_type for n in program.graph}
    layers = program.get(LAYERS)
    qdq = sum(op[n] in QDQ_OPS for l in layers for n in l.nodes)   # weights' DequantizeLinear are constants
    # every Quantize/DequantizeLinear but the model's first and last is folded into a kernel
    assert sum(l.fused_nodes for l in layers) == qdq - 2


def _kernels(path: Path) -> Counter:
    """The op types of onnxruntime's optimised graph of ``path`` (QDQ groups fused)."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    with tempfile.TemporaryDirectory() as d:
        so.optimized_model_filepath = os.path.join(d, "opt.onnx")
        ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        return Counter(n.op_type for n in onnx.load(so.optimized_model_filepath).graph.node)


def test_every_slice_keeps_onnxruntimes_fused_integer_kernels(models, tmp_path):
    """Every layer its own slice: the slices' optimised graphs hold exactly the unsliced model's
    kernels (20 QLinearConv, 8 QLinearAdd, ...). A cut inside a group would leave its Conv in
    float32 between two sessions, requantised differently from the fused kernel."""
    src = models["resnet18", "QDQ"]
    n = hetcc.analyse(src, target="hikey970").problem.num_layers
    out = tmp_path / "every"
    hetcc.compile(src, target="hikey970", planner=f"even:{n}", output_dir=out)
    sliced = sum((_kernels(p) for p in sorted((out / "slices").glob("*.onnx"))), Counter())
    whole = _kernels(src)
    assert whole["QLinearConv"] == 20
    assert sliced == whole
