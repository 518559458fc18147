"""Frontend: loading, checking, fixing dynamic dims, and the one-line errors for bad models."""
from __future__ import annotations

import re

import pytest

from hetcc.core.errors import ModelError, UsageError
from hetcc.compiler.frontend import load_model, parse_input_shapes


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


@pytest.mark.parametrize("spec, words", [
    ("x=1x3x99999999999999999999x8", "2147483647"),
    ("x=1x3x2147483648x8", "2**31-1"),
    ("x=1x3x-2x8", "positive integer"),
    ("x=1x3x8x", "not an integer"),
])
def test_input_shape_limits(spec, words):
    with pytest.raises(UsageError, match=re.escape(words)):
        parse_input_shapes([spec])


def test_input_shape_largest_dimension_parses():
    assert parse_input_shapes(["x=1x2147483647"]) == {"x": (1, 2147483647)}


def test_input_shape_given_twice():
    with pytest.raises(UsageError, match="twice"):
        parse_input_shapes(["x=1x3", "x=1x4"])


def test_input_shape_over_the_byte_limit_is_refused_before_loading_data(tmp_path, write_text_model, monkeypatch):
    path = write_text_model(DYNAMIC, tmp_path / "d.onnx")
    with pytest.raises(UsageError, match=r"input 'x' float32\[100000, 3, 8, 8\] would take 76.8 MB"):
        monkeypatch.setenv("HETCC_MAX_TENSOR_BYTES", str(10**6))
        load_model(path, {"x": (100000, 3, 8, 8)})
    monkeypatch.setenv("HETCC_MAX_TENSOR_BYTES", str(10**8))
    assert load_model(path, {"x": (100000, 3, 8, 8)}).graph.inputs[0].shape[0] == 100000


CONSTANT_OUTPUTS = """<ir_version: 8, opset_import: ["" : 17]>
constouts (float[1,4] x) => (float[1,4] y, float[1,4] w, float[2] c) <float[1,4] w = {1,2,3,4}> {
    c = Constant<value = float[2] {1, 2}>()
    a = Add(x, w)
    y = Relu(a)
}
"""


def test_constant_outputs_get_their_own_identity(tmp_path, write_text_model):
    p = load_model(write_text_model(CONSTANT_OUTPUTS, tmp_path / "c.onnx"))
    outs = {v.name: v for v in p.graph.outputs}
    assert list(outs) == ["y", "w", "c"]
    for name in ("w", "c"):
        node = outs[name].producer()
        assert node is not None and node.op_type == "Identity"
    assert "w" not in p.graph.initializers and "w_constant" in p.graph.initializers
    add = next(n for n in p.graph if n.op_type == "Add")
    assert add.inputs[1] is p.graph.initializers["w_constant"]    # the Add reads the same weight


def test_unsorted_nodes_are_sorted(tmp_path):
    import onnx
    from onnx import TensorProto as T, helper as h

    g = h.make_graph([h.make_node("Relu", ["a"], ["y"]), h.make_node("Sigmoid", ["x"], ["a"])], "g",
                     [h.make_tensor_value_info("x", T.FLOAT, [1, 4])], [h.make_tensor_value_info("y", T.FLOAT, [1, 4])])
    path = tmp_path / "u.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), str(path))
    assert [n.op_type for n in load_model(path).graph] == ["Sigmoid", "Relu"]


NONZERO = """<ir_version: 8, opset_import: ["" : 17]>
nz (float[1,8] x) => (float[2,M] y) {
    a = Relu(x)
    n = NonZero(a)
    y = Cast<to = 1>(n)
}
"""


def test_data_dependent_shapes_stay_unknown_in_the_ir(tmp_path, write_text_model):
    p = load_model(write_text_model(NONZERO, tmp_path / "n.onnx"))
    by_name = {o.name: o for n in p.graph for o in n.outputs}
    assert by_name["n"].shape is None and by_name["y"].shape is None
    assert list(by_name["a"].shape) == [1, 8]
    assert set(p.observed_shapes) == {"n", "y"} and p.observed_shapes["n"][0] == 2
