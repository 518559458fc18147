"""AnnotateTensors and data_dependent_shapes on tiny graphs: which shapes depend on the input
values, and the per-tensor byte limit."""
from __future__ import annotations

import onnx.parser
import onnx_ir as ir
import pytest

from hetcc.core.errors import ModelError, UsageError
from hetcc.passes.shapes import data_dependent_shapes, max_tensor_bytes

HEADER = '<ir_version: 8, opset_import: ["" : 17]>\n'


def dynamic(text: str) -> set[str]:
    return set(data_dependent_shapes(ir.serde.deserialize_model(onnx.parser.parse_model(HEADER + text))))


def test_static_model_has_none():
    assert dynamic("g (float[1,8] x) => (float[1,8] y) { a = Relu(x)\n y = Sigmoid(a) }") == set()


def test_nonzero_and_everything_shaped_by_it():
    assert dynamic("""g (float[1,8] x) => (float y) {
        a = Relu(x)
        n = NonZero(a)
        f = Cast<to = 1>(n)
        y = ReduceSum<keepdims = 0>(f)
    }""") == {"n", "f", "y"}


def test_reshape_to_shape_of_a_static_tensor_is_static():
    # Shape of a statically shaped tensor is known: torch's Shape -> Gather -> Concat -> Reshape
    assert dynamic("""g (float[2,4] x) => (float[8] y) <int64[1] m1 = {-1}> {
        s = Shape(x)
        r = Reshape(x, m1)
        t = Reshape(r, s)
        y = Reshape(t, m1)
    }""") == set()


def test_shape_inputs_fed_by_values_are_data_dependent():
    assert dynamic("""g (float[1,8] x, int64[2] shp, int64 k) => (float[K] v, float[A,B] r) {
        r = Reshape(x, shp)
        f = Flatten<axis = 0>(x)
        q = Squeeze(f)
        k1 = Unsqueeze(k, shp)
        v, i = TopK(q, k1)
    }""") == {"r", "k1", "v", "i"}


def test_shape_of_a_data_dependent_tensor_feeds_data_dependence():
    assert dynamic("""g (float[1,8] x) => (float[A] y) <float[1] one = {1.0}> {
        n = NonZero(x)
        s = Shape(n)
        y = ConstantOfShape(s)
    }""") == {"n", "s", "y"}    # s: conservatively, as any tensor read from a data-dependent one


def test_if_on_a_data_condition_with_equal_branch_shapes_is_static():
    text = """g (float[1,4] x, bool c) => (float[1,4] y) {
        y = If(c) <
            then_branch = t () => (float[1,4] a) { a = Relu(x) },
            else_branch = e () => (float[1,4] b) { b = Neg(x) }
        >
    }"""
    assert dynamic(text) == set()
    assert dynamic(text.replace("float[1,4] b) { b = Neg(x)", "float[4] b) { b = Neg(x)")) == {"y"}


def test_tensor_limit_env(monkeypatch):
    monkeypatch.delenv("HETCC_MAX_TENSOR_BYTES", raising=False)
    assert max_tensor_bytes() == 2**31
    monkeypatch.setenv("HETCC_MAX_TENSOR_BYTES", "1e10")
    assert max_tensor_bytes() == 10**10
    monkeypatch.setenv("HETCC_MAX_TENSOR_BYTES", "-5")
    with pytest.raises(UsageError, match="HETCC_MAX_TENSOR_BYTES"):
        max_tensor_bytes()


def test_annotate_refuses_a_computed_tensor_over_the_limit(analyse, monkeypatch):
    monkeypatch.setenv("HETCC_MAX_TENSOR_BYTES", "100")
    with pytest.raises(ModelError, match=r"tensor 'y' float32\[8, 8\] would take 256 B, over hetcc's limit of 100 B"):
        analyse(HEADER + """g (float[1,8] x) => (float[8,8] y) <int64[2] s = {8, 8}> {
            a = Relu(x)
            y = Expand(a, s)
        }""")
