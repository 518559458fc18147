"""The model zoo: required names, exports that onnxruntime runs, determinism, bad names."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from extras import needs

from hetcc.compiler import zoo
from hetcc.core.errors import UsageError

pytestmark = [pytest.mark.zoo, pytest.mark.slow, pytest.mark.timeout(900)]

needs("zoo", "torchvision")
torch = needs("zoo", "torch")

CORE = [
    "resnet50", "mobilenet_v2", "mobilenet_v2_1.3", "mobilenet_v2_1.4", "mnasnet0_5",
    "mnasnet1_0", "mnasnet1_3", "vgg16", "squeezenet1_1", "efficientnet_b0", "inception_v3",
    "googlenet",
]
EXTRA = [
    "resnet18", "shufflenet_v2_x1_0", "densenet121", "regnet_y_400mf", "vit_b_16",
    "convnext_tiny", "mobilenet_v3_small",
]


def test_list_has_every_required_model_core_first():
    entries = zoo.list_models()
    names = [e.name for e in entries]
    assert set(CORE + EXTRA) <= set(names)
    assert {e.name for e in entries if e.core} == set(CORE)
    n_core = len(CORE)
    assert all(e.core for e in entries[:n_core]) and not any(e.core for e in entries[n_core:])
    assert zoo.ZOO["inception_v3"].input_shape == (1, 3, 299, 299)
    assert zoo.ZOO["mobilenet_v2_1.4"].kwargs == {"weights": None, "width_mult": 1.4}
    assert all(e.description for e in entries)


@pytest.mark.parametrize("name", ["squeezenet1_1", "mobilenet_v2"])
def test_export_checks_and_runs_in_onnxruntime(tmp_path, name):
    path = zoo.export(name, tmp_path / f"{name}.onnx")
    assert path == tmp_path / f"{name}.onnx"
    assert [p.name for p in tmp_path.iterdir()] == [f"{name}.onnx"]  # no temp file left behind

    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version <= 10
    assert [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] == [17]
    assert [i.name for i in model.graph.input] == ["input"]
    assert [o.name for o in model.graph.output] == ["output"]

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224), dtype=np.float32)
    (y,) = sess.run(None, {"input": x})
    assert y.shape == (1, 1000)
    assert np.isfinite(y).all()
    assert y.std() > 1e-2  # BatchNorm statistics calibrated: not the ~1e-9 of a fresh init

    # The exported graph computes what the torch module computes.
    with torch.no_grad():
        expected = zoo.build_module(name).eval()(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(y, expected, rtol=1e-3, atol=1e-4)


def test_same_seed_same_bytes_other_seed_other_weights(tmp_path):
    a = zoo.export("squeezenet1_1", tmp_path / "a.onnx", seed=3)
    b = zoo.export("squeezenet1_1", tmp_path / "b.onnx", seed=3)
    c = zoo.export("squeezenet1_1", tmp_path / "c.onnx", seed=4)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()


def test_build_module_keeps_the_callers_rng_state():
    torch.manual_seed(123)
    before = torch.rand(4)
    torch.manual_seed(123)
    zoo.build_module("squeezenet1_1", seed=7)
    assert torch.equal(torch.rand(4), before)


def test_export_overwrites_atomically(tmp_path):
    path = tmp_path / "sub" / "m.onnx"
    zoo.export("squeezenet1_1", path, seed=1)
    first = path.read_bytes()
    zoo.export("squeezenet1_1", path, seed=2)
    assert path.read_bytes() != first
    assert sorted(p.name for p in path.parent.iterdir()) == ["m.onnx"]


def test_unknown_name_lists_models_and_suggests_the_cli():
    with pytest.raises(UsageError, match=r"unknown zoo model 'resnet5'.*resnet50.*hetcc zoo list"):
        zoo.export("resnet5", "unused.onnx")
    with pytest.raises(UsageError, match="unknown zoo model"):
        zoo.build_module("alexnet")


def test_export_module_exports_a_user_module_and_restores_training(tmp_path):
    module = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                                 torch.nn.ReLU(), torch.nn.Flatten())
    module.train()
    path = zoo.export_module(module, (1, 3, 8, 8), tmp_path / "user.onnx")
    assert module.training
    model = onnx.load(path)
    onnx.checker.check_model(model)
    assert model.ir_version <= 10
    # Exported in eval mode: BatchNorm folded into the Conv.
    assert [n.op_type for n in model.graph.node] == ["Conv", "Relu", "Flatten"]
    (y,) = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
        None, {"input": np.zeros((1, 3, 8, 8), np.float32)})
    assert y.shape == (1, 4 * 6 * 6)


def test_export_module_failure_is_one_line_and_leaves_no_file(tmp_path, capfd):
    class Svd(torch.nn.Module):
        def forward(self, x):
            return torch.linalg.svd(x)[1]

    from hetcc.core.errors import ModelError

    with pytest.raises(ModelError, match=r"failed for Svd with input shape 1x4x4") as info:
        zoo.export_module(Svd(), (1, 4, 4), tmp_path / "svd.onnx")
    assert "\n" not in str(info.value)
    assert list(tmp_path.iterdir()) == []
    assert "Torch IR graph" not in capfd.readouterr().out  # the exporter's C++ dump is caught


def test_exporter_identities_are_constants_not_layers(tmp_path):
    # torch stores the two equal zero biases once and feeds the second through an Identity;
    # the model keeps it as exported and the compiler's constants pass must not make it a layer.
    from hetcc.compiler.frontend import load_model
    from hetcc.passes.constants import FindConstants
    from hetcc.passes.layers import GroupLayers
    from hetcc.passes.shapes import AnnotateTensors
    from hetcc.compiler.passmanager import PassManager

    module = torch.nn.Sequential(torch.nn.Conv2d(2, 2, 1), torch.nn.Conv2d(2, 2, 1))
    with torch.no_grad():
        for conv in module:
            conv.bias.zero_()
    path = zoo.export_module(module, (1, 2, 3, 3), tmp_path / "shared.onnx")
    model = onnx.load(path)
    onnx.checker.check_model(model)
    x = np.random.default_rng(1).standard_normal((1, 2, 3, 3), dtype=np.float32)
    (y,) = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
        None, {"input": x})
    with torch.no_grad():
        np.testing.assert_allclose(y, module(torch.from_numpy(x)).numpy(), rtol=1e-5, atol=1e-6)
    program = load_model(path)
    PassManager([AnnotateTensors(), FindConstants(), GroupLayers()]).run(program)
    assert [layer.op_types for layer in program.get("layers")] == [("Conv",), ("Conv",)]


@pytest.mark.parametrize("shape", [(), (0, 3), (1, -2), "1x3"])
def test_export_module_rejects_bad_shapes(tmp_path, shape):
    with pytest.raises(UsageError, match="example input shape"):
        zoo.export_module(torch.nn.Identity(), shape, tmp_path / "x.onnx")
