"""The zoo's timm entries (MOSAIC's Inception-V4 and the ResNet-V2-152 stand-in): entries, the
missing-timm message, a build, and one export that onnxruntime runs to torch's numbers."""
from __future__ import annotations

import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from extras import needs

from hetcc.compiler import zoo
from hetcc.core.errors import UsageError

pytestmark = [pytest.mark.zoo, pytest.mark.slow, pytest.mark.timeout(900)]

needs("zoo", "torchvision", "timm")
torch = needs("zoo", "torch")

TIMM = {"inception_v4": (1, 3, 299, 299), "resnetv2_152": (1, 3, 224, 224)}


def test_timm_entries_are_listed_outside_the_core_set():
    names = [e.name for e in zoo.list_models()]
    for name, shape in TIMM.items():
        e = zoo.ZOO[name]
        assert name in names and not e.core and e.source == "timm" and e.input_shape == shape
        assert e.kwargs == {"pretrained": False}                   # random weights, nothing downloaded
    assert "stand-in" in zoo.ZOO["resnetv2_152"].description and "77.8%" in zoo.ZOO["resnetv2_152"].description
    assert zoo.ZOO["resnet50"].source == "torchvision" and zoo.ZOO["resnet50"].kwargs == {"weights": None}
    assert {e.source for e in zoo.list_models()} == set(zoo.SOURCES)
    with pytest.raises(ValueError, match="source"):
        zoo.ZooEntry("x", "x", (), (1, 3, 8, 8), "x", False, source="hub")


def test_a_missing_timm_is_one_usage_error_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "timm", None)                 # import timm now raises ImportError
    with pytest.raises(UsageError, match=r"inception_v4.*timm.*pip install 'hetcc\[zoo\]'"):
        zoo.build_module("inception_v4")


def test_resnetv2_152_builds_preactivation_with_informative_outputs():
    module = zoo.build_module("resnetv2_152", seed=0)
    assert type(module).__name__ == "ResNetV2" and not module.training
    assert sum(p.numel() for p in module.parameters()) == pytest.approx(60.2e6, rel=0.01)
    blocks = [m for m in module.modules() if type(m).__name__ == "PreActBottleneck"]
    assert len(blocks) == 3 + 8 + 36 + 3                              # ResNet-152's bottlenecks
    with torch.no_grad():
        y = module(torch.randn(TIMM["resnetv2_152"], generator=torch.Generator().manual_seed(1)))
    assert y.shape == (1, 1000) and torch.isfinite(y).all() and y.std() > 1e-2


def test_inception_v4_exports_and_runs_like_torch():
    # zoo.export into the session's cache (resolve_model), shared with the hikey970 refit's analysis
    # of the same model; that the export leaves no temporary file beside it is test_zoo.py's
    # test_export_overwrites_atomically (the same zoo.export -> export_module -> atomic write for every model)
    from hetcc.compiler.api import resolve_model

    path = resolve_model("inception_v4", None, 0)
    model = onnx.load(path, load_external_data=False)
    assert [i.name for i in model.graph.input] == ["input"] and [o.name for o in model.graph.output] == ["output"]
    assert model.ir_version <= 10
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).standard_normal(TIMM["inception_v4"], dtype=np.float32)
    (y,) = sess.run(None, {"input": x})
    assert y.shape == (1, 1000) and np.isfinite(y).all() and y.std() > 1e-2
    with torch.no_grad():
        expected = zoo.build_module("inception_v4").eval()(torch.from_numpy(x)).numpy()   # same seed, same weights
    np.testing.assert_allclose(y, expected, rtol=1e-3, atol=1e-3)
