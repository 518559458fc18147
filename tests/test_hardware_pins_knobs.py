"""``--hardware KNOB=VALUE`` pins the knobs for ``exact``: its default (``knobs=search``) chooses
the knobs itself, which would silently override what the user set."""
from __future__ import annotations

import pytest

import hetcc

CHAIN = """
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 64, 28, 28] x) => (float[1, 64, 28, 28] y) {
    a = Relu(x)
    b = Sigmoid(a)
    y = Relu(b)
}
"""


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    import onnx
    import onnx.parser

    path = tmp_path_factory.mktemp("m") / "chain.onnx"
    onnx.save(onnx.parser.parse_model(CHAIN), str(path))
    return hetcc.analyse(str(path), target="jetson-tx2")


def test_hardware_given_keeps_the_knobs_and_search_chooses_them(session):
    pinned = session.plan("latency", planner="exact", hardware={"emc_freq_mhz": 408})
    assert pinned.hardware["emc_freq_mhz"] == 408 and pinned.options.get("knobs") == "fixed"
    searched = session.plan("latency", planner="exact")
    assert searched.options.get("knobs") == "search"
    assert searched.latency_ms <= pinned.latency_ms + 1e-9
    explicit = session.plan("latency", planner="exact", hardware={"emc_freq_mhz": 408},
                            options={"knobs": "search"})
    assert explicit.options.get("knobs") == "search"
