"""The host-cores board: this machine's cores as devices (one pinned onnxruntime thread each),
profiled with one thread pinned to a device's core, so that the contention model can be checked
against real concurrent runs (``hetcc run --concurrent``). The timings are faked: what is checked
is which thread count and which cores the profile ran on, and that host's profile is untouched."""
from __future__ import annotations

import os

import onnx
import onnx.parser
import pytest

from hetcc.compiler.frontend import load_model
from hetcc.compiler.passmanager import PassManager
from hetcc.measure import profiler
from hetcc.passes.constants import FindConstants
from hetcc.passes.costs import EstimateCosts
from hetcc.passes.layers import GroupLayers
from hetcc.passes.legality import CheckLegality
from hetcc.passes.shapes import AnnotateTensors
from hetcc.targets import load_target

SMALL = """<ir_version: 8, opset_import: ["" : 17]>
small (float[2,4] x) => (float[2,4] y) {
    a = Relu(x)
    b = Sigmoid(a)
    y = Tanh(b)
}
"""


def test_the_board_is_one_device_per_core():
    t = load_target("host-cores")
    assert t.kind == "measured" and t.device_names == ("core0", "core1")
    assert [d.affinity for d in t.devices] == [(0,), (1,)]
    assert len(t.states()) == 2
    assert profiler.pinned_cores(t) == (0,)
    assert profiler.pinned_cores(load_target("host")) is None


def test_pinned_thread_pins_this_thread_and_puts_it_back(caplog):
    before = os.sched_getaffinity(0)
    core = min(before)
    with profiler.pinned_thread((core,)):
        assert os.sched_getaffinity(0) == {core}
    assert os.sched_getaffinity(0) == before
    with profiler.pinned_thread((max(before) + 1,)):     # not on this machine: left alone, said
        assert os.sched_getaffinity(0) == before
    assert "profiled unpinned" in caplog.text
    with profiler.pinned_thread(None):
        assert os.sched_getaffinity(0) == before


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "small.onnx"
    onnx.save(onnx.parser.parse_model(SMALL), str(path))
    return load_model(path, None)


def profile_with(monkeypatch, program, target):
    """Run the costs pass with the timings faked; returns [(threads, cores of the thread)] per timing call."""
    seen = []

    def layers(program, layers, so, min_seconds=0.05, **kw):
        seen.append((so.intra_op_num_threads, os.sched_getaffinity(0)))
        return [profiler.Timing(1.0, 5) for _ in layers]

    def model(program, so, min_seconds=0.05, **kw):
        seen.append((so.intra_op_num_threads, os.sched_getaffinity(0)))
        return profiler.Timing(2.5, 5)
    monkeypatch.setattr(profiler, "layer_timings", layers)
    monkeypatch.setattr(profiler, "model_timing", model)
    monkeypatch.setattr(profiler, "boundary_fit", lambda use_cache=True: profiler.BoundaryFit(0.01, 0.0))
    PassManager([AnnotateTensors(), FindConstants(), GroupLayers(1), CheckLegality(target),
                 EstimateCosts(target)]).run(program)
    return seen


def test_host_cores_is_profiled_with_one_thread_on_core_0(monkeypatch, program):
    if 0 not in os.sched_getaffinity(0):
        pytest.skip("core 0 is not available to this process")
    before = os.sched_getaffinity(0)
    seen = profile_with(monkeypatch, program, load_target("host-cores"))
    assert seen == [(1, {0}), (1, {0})]
    assert os.sched_getaffinity(0) == before
    table = program.get("costs")
    assert [s.device for s in table.states] == ["core0", "core1"]
    assert (table.latency_ms[:, 0] == table.latency_ms[:, 1]).all()      # one profile serves both cores


def test_host_is_profiled_as_before(monkeypatch, program):
    before = os.sched_getaffinity(0)
    seen = profile_with(monkeypatch, program, load_target("host"))
    assert seen == [(len(before), before), (len(before), before)]       # the runtime's default threads


def test_the_two_boards_keep_separate_profiles(program, tmp_path, monkeypatch):
    """The profile cache keys host-cores' pinned profile apart from host's."""
    keys = []

    def cached(key, compute, use_cache=True, keep=None):
        keys.append(key)
        if key.startswith("layers-"):
            return {"layers_ms": [1.0] * 3, "model_ms": 2.5}
        return {"delta_ms": 0.01, "beta_ms_per_byte": 0.0}
    monkeypatch.setattr(profiler, "_cached", cached)
    for name in ("host", "host-cores", "host"):
        PassManager([AnnotateTensors(), FindConstants(), GroupLayers(1), CheckLegality(load_target(name)),
                     EstimateCosts(load_target(name))]).run(load_model(program.source_path, None))
    layer_keys = [k for k in keys if k.startswith("layers-")]
    assert len(layer_keys) == 3 and layer_keys[0] == layer_keys[2] != layer_keys[1]
