"""GroupLayers on tiny graphs: exact layer structure, including no-cut and failure cases."""
from __future__ import annotations

import pytest

from hetcc.compiler.program import LAYERS
from text_models import NONZERO

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



# a Reshape to a shape computed from the input's values (not from its shape)
RESHAPE_BY_DATA = HEADER + """
reshapedata (float[1,8] x) => (float[1,8] y) <float[1] two = {2.0}> {
    a = Relu(x)
    s = ReduceMax<keepdims = 0>(a)
    big = Greater(s, two)
    c = Where(big, two, two)
    k = Cast<to = 7>(c)
    one = Constant<value = int64[1] {1}>()
    k1 = Reshape(k, one)
    minus = Constant<value = int64[1] {-1}>()
    shp = Concat<axis = 0>(k1, minus)
    r = Reshape(a, shp)
    t = Tanh(r)
    back = Constant<value = int64[2] {1, 8}>()
    u = Reshape(t, back)
    y = Relu(u)
}
"""


def test_no_cut_crosses_a_data_dependent_shape(analyse):
    p = analyse(NONZERO)
    tensors = p.get("tensors")
    assert {n for n, i in tensors.items() if i.data_dependent} == {"nz", "f", "r", "fl", "y"}
    assert op_of(p) == [["Relu"], ["Sigmoid"], ["NonZero", "Cast", "Relu", "Flatten", "ReduceSum"]]
    crossing = {name for layer in p.get(LAYERS)[1:] for name in layer.inputs}
    assert crossing == {"a", "b"}
    assert tensors["nz"].shape[0] == 2          # one run's shape, for cost estimates
    by_name = {o.name: o for n in p.graph for o in n.outputs}
    assert by_name["nz"].shape is None          # never frozen into a slice


def test_reshape_to_a_computed_shape_is_data_dependent_but_static_ones_are_not(analyse):
    p = analyse(RESHAPE_BY_DATA)
    dynamic = {n for n, i in p.get("tensors").items() if i.data_dependent}
    assert dynamic == {"r", "t", "u", "y"}      # u's target is constant, but t's shape is not
    ops = op_of(p)
    assert ops[-1][-4:] == ["Reshape", "Tanh", "Reshape", "Relu"]


def test_shape_of_a_data_dependent_tensor_is_not_folded(analyse):
    p = analyse(HEADER + """
shapeofnz (float[1,8] x) => (int64[2] y) {
    a = Relu(x)
    nz = NonZero(a)
    y = Shape(nz)
}
""")
    assert "Shape" in {n.op_type for n in p.graph}


def _old_cut_order(deps):
    """The ancestor-matrix cut_order this module had (quadratic), kept as the reference."""
    import numpy as np

    n = len(deps.nodes)
    if n == 0:
        return []
    anc = np.zeros((n, n), dtype=bool)
    for i, reads in enumerate(deps.reads):
        anc[i, i] = True
        for name in reads:
            p = deps.producer.get(name)
            if p is not None:
                anc[i] |= anc[p]
    names: dict[str, int] = {}
    src, dst, tid = [], [], []
    for j, reads in enumerate(deps.reads):
        for name in reads:
            src.append(deps.producer.get(name, -1))
            dst.append(j)
            tid.append(names.setdefault(name, len(names)))
    src, dst, tid = (np.array(a, dtype=np.int64) for a in (src, dst, tid))
    from_input = src < 0
    src_safe = np.where(from_input, 0, src)
    candidates = []
    for i, node in enumerate(deps.nodes):
        outs = [names[o] for o in node if o in names]
        if len(outs) != 1:
            continue
        a = anc[i]
        crossing = (from_input | a[src_safe]) & ~a[dst]
        if crossing.any() and np.all(tid[crossing] == outs[0]):
            candidates.append((int(a.sum()), i))
    candidates.sort()
    order, placed = [], np.zeros(n, dtype=bool)
    for size, i in candidates:
        a = anc[i]
        if size <= int(placed.sum()) or np.any(placed & ~a):
            continue
        order.extend(int(j) for j in np.flatnonzero(a & ~placed))
        placed |= a
    order.extend(int(j) for j in np.flatnonzero(~placed))
    return order


class _FakeDeps:
    """_Deps' fields for a random DAG: node i writes t{i}_0.. and reads earlier tensors/inputs."""

    def __init__(self, outputs, reads):
        self.nodes = outputs                     # per node: its output names
        self.reads = reads
        self.producer = {o: i for i, outs in enumerate(outputs) for o in outs}


def _random_dag(rng, n):
    outputs, reads = [], []
    for i in range(n):
        outputs.append([f"t{i}_{k}" for k in range(1 + (rng.random() < 0.15))])
        pool = [o for outs in outputs[:-1][-6:] for o in outs] + ["x0", "x1"]
        r = sorted(set(rng.choice(pool, size=int(rng.integers(0, 3)), replace=True).tolist())) if rng.random() > 0.05 else []
        if i and rng.random() < 0.6:             # mostly chain-like, so that cuts exist
            r = sorted(set(r + [outputs[i - 1][0]]))
        if i == 0:                               # a model reads its input (the frontend refuses
            r = sorted(set(r + ["x0"]))          # one without; the orders differ only then)
        reads.append(r)
    return _FakeDeps(outputs, reads)


@pytest.mark.slow
def test_linear_cut_order_equals_the_ancestor_matrix_one():
    import numpy as np

    from hetcc.passes.layers import cut_order

    class Node(list):
        @property
        def outputs(self):
            return [type("V", (), {"name": o})() for o in self]

    rng = np.random.default_rng(0)
    cuts_seen = 0
    for trial in range(600):
        deps = _random_dag(rng, int(rng.integers(1, 25)))
        expected = _old_cut_order(deps)
        deps.nodes = [Node(o) for o in deps.nodes]
        got = cut_order(deps)
        assert got == expected, (trial, deps.reads)
        cuts_seen += len(got) > 1
    assert cuts_seen > 100


def test_symbolic_shape_inference_does_not_import_torch(tmp_path, write_text_model):
    """The model above needs onnxruntime's symbolic shape inference; importing it through the
    onnxruntime.tools package would import torch (its __init__ does, wherever torch is installed)."""
    import subprocess
    import sys

    path = write_text_model(RESHAPE_BY_DATA, tmp_path / "m.onnx")
    probe = ("import sys; from hetcc.compiler.frontend import load_model; p = load_model(sys.argv[1]); "
             "print(sorted(m for m in ('torch', 'hetcc._onnxruntime_symbolic_shape_infer') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["['hetcc._onnxruntime_symbolic_shape_infer']"]     # used, and no torch
