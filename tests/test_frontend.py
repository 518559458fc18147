"""Frontend: loading, checking, fixing dynamic dims, and the one-line errors for bad models."""
from __future__ import annotations

import pytest

from hetcc.errors import ModelError, UsageError
from hetcc.frontend import load_model, parse_input_shapes


DYNAMIC = """<ir_version: 8, opset_import: ["" : 17]>
dyn (float[N,3,8,8] x) => (float[N,3,8,8] y) {
    a = Relu(x)
    y = Sigmoid(a)
}
"""


def test_missing_file(tmp_path):
    with pytest.raises(ModelError, match="no such file"):
        load_model(tmp_path / "nope.onnx")


def test_not_onnx(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x00\xffthis is not protobuf" * 10)
    with pytest.raises(ModelError, match="not a readable ONNX model|not an ONNX model"):
        load_model(bad)


def test_empty_file(tmp_path):
    bad = tmp_path / "empty.onnx"
    bad.write_bytes(b"")
    with pytest.raises(ModelError):
        load_model(bad)


def test_dynamic_dim_names_the_flag(tmp_path, write_text_model):
    path = write_text_model(DYNAMIC, tmp_path / "d.onnx")
    with pytest.raises(ModelError, match=r"input 'x' has a dynamic dimension 'N'; pass --input-shape x=1x3x8x8"):
        load_model(path)


def test_input_shape_fixes_and_propagates(tmp_path, write_text_model):
    path = write_text_model(DYNAMIC, tmp_path / "d.onnx")
    p = load_model(path, {"x": (2, 3, 8, 8)})
    out = p.graph.outputs[0]
    assert list(out.shape) == [2, 3, 8, 8]


def test_input_shape_errors(tmp_path, write_text_model):
    path = write_text_model(DYNAMIC, tmp_path / "d.onnx")
    with pytest.raises(UsageError, match="model's inputs are: x"):
        load_model(path, {"nope": (1, 3, 8, 8)})
    with pytest.raises(UsageError, match="rank 4"):
        load_model(path, {"x": (1, 3)})


@pytest.mark.parametrize("spec", ["x", "x=", "x=1xax3", "=1x2", "x=0x3"])
def test_malformed_input_shape(spec):
    with pytest.raises(UsageError):
        parse_input_shapes([spec])


def test_parse_input_shape():
    assert parse_input_shapes(["input=1x3x224x224", "m=2,5"]) == {"input": (1, 3, 224, 224), "m": (2, 5)}


WHERE_SHAPE = """<ir_version: 8, opset_import: ["" : 17]>
whereshape (float[2,3] x) => (float[2,3] y) <float[1,3] tok = {1,2,3}, bool[2] keep = {1,1}> {
    s = Shape(x)
    ones = Constant<value = int64[2] {1, 1}>()
    t = Where(keep, s, ones)
    e = Expand(tok, t)
    y = Add(x, e)
}
"""


def test_shapes_static_inference_cannot_propagate_come_from_one_run(tmp_path, write_text_model):
    """ViT's class token: Expand to a shape computed by Where over Shape values."""
    path = write_text_model(WHERE_SHAPE, tmp_path / "w.onnx")
    p = load_model(path)
    by_name = {o.name: o for n in p.graph for o in n.outputs}
    assert list(by_name["e"].shape) == [2, 3]
