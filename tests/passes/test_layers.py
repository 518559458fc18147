"""GroupLayers on tiny graphs: exact layer structure, including no-cut and failure cases."""
from __future__ import annotations

import pytest

from hetcc.program import LAYERS

HEADER = '<ir_version: 8, opset_import: ["" : 17]>\n'

CHAIN = HEADER + """
chain (float[1,4] x) => (float[1,4] y) {
    a = Relu(x)
    b = Sigmoid(a)
    c = Tanh(b)
    y = Relu(c)
}
"""

# x -> a ; a -> (b1 -> b2) and a -> c ; add(b2, c) -> d ; d -> y : a residual diamond
DIAMOND = HEADER + """
diamond (float[1,4] x) => (float[1,4] y) {
    a = Relu(x)
    b1 = Sigmoid(a)
    b2 = Tanh(b1)
    c = Neg(a)
    d = Add(b2, c)
    y = Relu(d)
}
"""

# Identity-of-initializer and Shape->Gather->Unsqueeze->Concat->Reshape chains between layers
CONST_CHAIN = HEADER + """
constchain (float[1,2,3] x) => (float[1,6] y) <float[6,6] w = {1,0,0,0,0,0, 0,1,0,0,0,0, 0,0,1,0,0,0, 0,0,0,1,0,0, 0,0,0,0,1,0, 0,0,0,0,0,1}, int64[1] axis0 = {0}, int64[1] minus1 = {-1}> {
    a = Relu(x)
    s = Shape(a)
    idx = Constant<value = int64 {0}>()
    n = Gather(s, idx)
    n1 = Unsqueeze(n, axis0)
    shp = Concat<axis = 0>(n1, minus1)
    r = Reshape(a, shp)
    wi = Identity(w)
    m = MatMul(r, wi)
    y = Relu(m)
}
"""

# An If whose branches capture outer-scope values a and b: the If reads a, b, c.
IF_CAPTURE = HEADER + """
ifcap (float[1,4] x, bool cond) => (float[1,4] y) {
    a = Relu(x)
    b = Sigmoid(a)
    c = Tanh(b)
    z = If(cond) <
        then_branch = g1 () => (float[1,4] t) { t = Add(a, c) },
        else_branch = g2 () => (float[1,4] e) { e = Mul(b, c) }
    >
    y = Relu(z)
}
"""


def layer_nodes(program):
    return [list(layer.nodes) for layer in program.get(LAYERS)]


def op_of(program):
    ops = {n.name: n.op_type for n in program.graph}
    return [[ops[n] for n in layer.nodes] for layer in program.get(LAYERS)]


def test_chain_is_cut_after_every_node(analyse):
    p = analyse(CHAIN)
    assert op_of(p) == [["Relu"], ["Sigmoid"], ["Tanh"], ["Relu"]]
    layers = p.get(LAYERS)
    assert layers[0].inputs == ("x",) and layers[-1].outputs == ("y",)
    assert all(len(l.inputs) == 1 for l in layers)


def test_diamond_is_never_cut_inside(analyse):
    p = analyse(DIAMOND)
    ops = op_of(p)
    assert ops[0] == ["Relu"]
    assert sorted(ops[1]) == sorted(["Sigmoid", "Tanh", "Neg", "Add"])
    assert ops[2] == ["Relu"]
    assert len(ops) == 3


def test_diamond_with_two_tensor_cuts_is_finer(analyse):
    p = analyse(DIAMOND, k=2)
    assert len(p.get(LAYERS)) == 6  # every position is crossed by at most two tensors
    for layer in p.get(LAYERS):
        assert len(layer.inputs) <= 2


def test_constant_chains_are_not_layers_and_do_not_block_cuts(analyse):
    p = analyse(CONST_CHAIN)
    ops = op_of(p)
    flat = [op for layer in ops for op in layer]
    assert "Shape" not in flat and "Gather" not in flat and "Identity" not in flat and "Concat" not in flat
    assert ops == [["Relu"], ["Reshape"], ["MatMul"], ["Relu"]]
    layers = p.get(LAYERS)
    assert layers[2].param_bytes == 6 * 6 * 4  # the Identity-of-initializer counts as the MatMul's weights


def test_if_with_outer_scope_capture_stays_whole(analyse):
    p = analyse(IF_CAPTURE)
    ops = op_of(p)
    # a, b, c are all captured by the If: no single tensor crosses between Relu(x) and the If.
    assert ops == [["Relu", "Sigmoid", "Tanh", "If"], ["Relu"]]
    layers = p.get(LAYERS)
    assert "Add" in layers[0].op_types and "Mul" in layers[0].op_types  # branch ops count for legality
    assert set(layers[0].inputs) == {"x", "cond"}


def test_every_node_in_exactly_one_layer(analyse):
    for text in (CHAIN, DIAMOND, CONST_CHAIN, IF_CAPTURE):
        p = analyse(text)
        consts = p.get("constants")
        nodes = [n for layer in p.get(LAYERS) for n in layer.nodes]
        assert len(nodes) == len(set(nodes))
        assert set(nodes) == {n.name for n in p.graph if n.name not in consts.nodes}


def test_invalid_k_is_rejected():
    from hetcc.passes.layers import GroupLayers

    with pytest.raises(ValueError):
        GroupLayers(0)


SHAPE_OF_ACTIVATION = HEADER + """
shapeact (float[1,2,3] x) => (float[1,6] y) <int64[1] axis0 = {0}, int64[1] minus1 = {-1}> {
    a = Relu(x)
    s = Shape<start = 0, end = 1>(a)
    shp = Concat<axis = 0>(s, minus1)
    r = Reshape(a, shp)
    y = Relu(r)
}
"""


def test_shape_of_a_static_activation_is_folded(analyse):
    p = analyse(SHAPE_OF_ACTIVATION)
    assert op_of(p) == [["Relu"], ["Reshape"], ["Relu"]]
    assert "Shape" not in {n.op_type for n in p.graph}
    folded = p.graph.initializers["s"].const_value.numpy()
    assert folded.tolist() == [1]
