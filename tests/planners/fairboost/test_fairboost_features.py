"""FairBoost's Eq. 2 layer vectors: computed by the layers pass from each layer's dominant node and
read by the planner as numbers (``problem.layer_features``' eq2_* columns)."""
from __future__ import annotations

import numpy as np
import pytest

from hetcc.compiler.costtable import layer_features
from hetcc.compiler.program import LAYERS
from hetcc.planners.fairboost.features import EQ2, WIDTH, blocks, layer_vectors, scaled

HEADER = '<ir_version: 8, opset_import: ["" : 17]>\n'

def _init(name: str, shape: tuple[int, ...]) -> str:
    n = int(np.prod(shape))
    return f"float[{','.join(map(str, shape))}] {name} = {{{', '.join(['0.5'] * n)}}}"


# conv 3x3 stride 2 pad 1 (+ bias) -> relu | depthwise conv | global pool -> flatten -> gemm
NET = HEADER + """
net (float[1,3,8,8] x) => (float[1,10] y)
  <""" + ", ".join(_init(n, s) for n, s in (("w1", (4, 3, 3, 3)), ("b1", (4,)), ("w2", (4, 1, 3, 3)),
                                           ("w3", (10, 4)), ("b3", (10,)))) + """> {
    c = Conv<strides = [2, 2], pads = [1, 1, 1, 1]>(x, w1, b1)
    r = Relu(c)
    d = Conv<group = 4, pads = [1, 1, 1, 1]>(r, w2)
    s = Sigmoid(d)
    p = GlobalAveragePool(s)
    f = Flatten(p)
    y = Gemm<transB = 1>(f, w3, b3)
}
"""


def test_every_layer_gets_eq2_from_its_dominant_node(analyse):
    program = analyse(NET)
    layers = program.get(LAYERS)
    assert all(len(l.vector) == WIDTH == 22 for l in layers)
    by_type = {int(l.vector[1]): l.vector for l in layers}
    conv = by_type[1]   # (i, t, ifm, ofm, w, b, a, ps)
    assert conv[2:6] == (1, 3, 8, 8) and conv[6:10] == (1, 4, 4, 4) and conv[10:14] == (4, 3, 3, 3)
    assert conv[14] == 4 and conv[16:22] == (1, 1, 1, 1, 2, 2)
    dw = by_type[2]
    assert dw[10:14] == (4, 1, 3, 3) and dw[14] == 0 and dw[20:22] == (1, 1)
    fc = by_type[4]
    assert fc[2:6] == (1, 4, 1, 1) and fc[6:10] == (1, 10, 1, 1) and fc[10:14] == (10, 4, 1, 1) and fc[14] == 10
    assert [l.vector[0] for l in layers] == list(range(len(layers)))
    # activation: the layer holding the first conv reads Relu (1) when the conv and relu share a layer
    feats = layer_features(layers)
    assert feats.values.shape[1] >= 22 and all(n in feats.names for n in EQ2)


def test_the_planner_reads_the_vectors_as_numbers(analyse):
    program = analyse(NET)
    layers = program.get(LAYERS)

    class P:    # the one attribute layer_vectors reads
        name = "net"
        layer_features = layer_features(layers)
    v = layer_vectors(P())
    assert v.shape == (len(layers), 22)
    assert np.array_equal(v, np.array([l.vector for l in layers]))
    s = scaled(v)
    assert s.dtype == np.float32 and (s >= 0).all() and (s <= 1).all()

    class Q:
        name = "bare"
        layer_features = None
    with pytest.raises(ValueError, match="bare.*no layer vectors"):
        layer_vectors(Q())


@pytest.mark.parametrize("weights,n", [([1] * 10, 4), ([5, 1, 1, 1, 1, 1, 1, 1, 1, 9], 3), ([1, 2], 5),
                                       ([0] * 7, 3), ([100, 0, 0, 0, 0], 4)])
def test_blocks_cover_every_layer_in_at_most_n_nonempty_runs(weights, n):
    runs = blocks(weights, n)
    assert runs[0][0] == 0 and runs[-1][1] == len(weights)
    assert all(a < b for a, b in runs) and all(r[1] == s[0] for r, s in zip(runs, runs[1:]))
    assert len(runs) == min(n, len(weights))


def test_blocks_balance_the_weight():
    runs = blocks([1.0] * 12, 4)
    assert runs == ((0, 3), (3, 6), (6, 9), (9, 12))
