from __future__ import annotations

import logging
import os
import weakref

import numpy as np
import onnxruntime as ort
import pytest

from hetcc.runtime import Executor, InputError, ManifestError
from hetcc.runtime.executor import make_session_options


def S(doc):
    """The slices of the manifest document's (only) variant."""
    return doc["variants"]["default"]["slices"]


def config_entry(so, key):
    """The session config value, or None when unset (ORT raises for unset keys)."""
    try:
        return so.get_session_config_entry(key)
    except RuntimeError:
        return None


def reference_outputs(tiny, feeds):
    sess = ort.InferenceSession(str(tiny.model_path), providers=["CPUExecutionProvider"])
    return dict(zip(["y", "r"], sess.run(["y", "r"], feeds)))


def test_outputs_equal_unsliced_model(tiny):
    ex = Executor(tiny.dir)
    feeds = tiny.feeds()
    got = ex.run(feeds)
    want = reference_outputs(tiny, feeds)
    assert set(got) == {"y", "r"}  # r comes from the middle slice
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-7)


def test_timings_and_specs(tiny):
    ex = Executor(tiny.dir)
    ex.run(tiny.feeds())
    assert len(ex.last_timings) == 3
    assert all(t >= 0 for t in ex.last_timings)
    assert ex.last_total_ms >= sum(ex.last_timings)
    assert [(s.name, s.dtype, s.shape) for s in ex.inputs] == [("x", "float32", (2, 8))]
    assert [s.name for s in ex.outputs] == ["y", "r"]
    assert ex.providers == ["CPUExecutionProvider"] * 3
    assert ex.manifest.model.name == "tiny"


def test_each_slice_gets_only_its_inputs(tiny):
    ex = Executor(tiny.dir)
    seen = []

    class Spy:
        def __init__(self, sess):
            self.sess = sess

        def run(self, names, feeds):
            seen.append(sorted(feeds))
            return self.sess.run(names, feeds)

    for step in ex._steps:
        step.session = Spy(step.session)
    ex.run(tiny.feeds())
    assert seen == [["x"], ["h1", "x"], ["h3"]]


def test_intermediates_freed_after_last_use(tiny):
    """h1 dies once slice 1 ran, h3 once slice 2 ran; nothing lingers after run()."""
    ex = Executor(tiny.dir)
    refs: dict[str, weakref.ref] = {}
    alive_when: dict[int, set] = {}

    class Spy:
        def __init__(self, k, sess):
            self.k, self.sess = k, sess

        def run(self, names, feeds):
            alive_when[self.k] = {n for n, r in refs.items() if r() is not None}
            outs = self.sess.run(names, feeds)
            for n, v in zip(names, outs):
                refs[n] = weakref.ref(v)
            return outs

    for k, step in enumerate(ex._steps):
        step.session = Spy(k, step.session)
    result = ex.run(tiny.feeds())
    assert alive_when[1] == {"h1"}
    assert alive_when[2] == {"h3", "r"}  # r is a model output: kept; h1 already gone
    alive_after = {n for n, r in refs.items() if r() is not None}
    assert alive_after == {"r", "y"}
    del result
    assert all(r() is None for r in refs.values())


def test_run_twice_is_independent(tiny):
    ex = Executor(tiny.dir)
    a = ex.run(tiny.feeds(1))
    b = ex.run(tiny.feeds(2))
    assert not np.allclose(a["y"], b["y"])
    np.testing.assert_array_equal(ex.run(tiny.feeds(1))["y"], a["y"])


# --- tampering and paths ---------------------------------------------------------------------


def test_sha256_tamper(tiny):
    path = tiny.dir / "slices/01_gpu.onnx"
    path.write_bytes(path.read_bytes() + b"\0")
    with pytest.raises(ManifestError, match=r"slices/01_gpu\.onnx: sha256 mismatch.*recompile"):
        Executor(tiny.dir)


def test_missing_slice_file(tiny):
    (tiny.dir / "slices/02_npu.onnx").unlink()
    with pytest.raises(ManifestError, match=r"slices/02_npu\.onnx: slice file is missing"):
        Executor(tiny.dir)


@pytest.mark.parametrize("bad", ["../tiny.onnx", "slices/../../tiny.onnx", "/etc/passwd", "slices\\00_big.onnx"])
def test_path_leaving_artifact_rejected(tiny, bad):
    tiny.edit(lambda d: S(d)[0].update(file=bad))
    with pytest.raises(ManifestError, match=r"variants\.default\.slices\[0\]\.file.*relative path inside the artifact"):
        Executor(tiny.dir)


def test_symlink_escaping_rejected(tiny):
    outside = tiny.model_path  # a real ONNX file outside the artifact
    link = tiny.dir / "slices/evil.onnx"
    try:
        os.symlink(outside, link)
    except (OSError, NotImplementedError):
        pytest.skip("no symlinks here")
    tiny.edit(lambda d: S(d)[0].update(file="slices/evil.onnx"))
    with pytest.raises(ManifestError, match=r"variants\.default\.slices\[0\]\.file.*resolves outside"):
        Executor(tiny.dir)


# --- inputs ----------------------------------------------------------------------------------


def test_missing_input(tiny):
    ex = Executor(tiny.dir)
    with pytest.raises(InputError, match=r"input 'x' is missing: expected float32\[2, 8\]"):
        ex.run({})


def test_misnamed_input_mentions_both(tiny):
    ex = Executor(tiny.dir)
    with pytest.raises(InputError, match=r"input 'x' is missing.*unexpected 'X'"):
        ex.run({"X": tiny.feeds()["x"]})


def test_extra_input(tiny):
    ex = Executor(tiny.dir)
    feeds = dict(tiny.feeds(), extra=np.zeros(1, np.float32))
    with pytest.raises(InputError, match=r"unexpected input 'extra'.*x float32\[2, 8\]"):
        ex.run(feeds)


def test_wrong_shape(tiny):
    ex = Executor(tiny.dir)
    with pytest.raises(InputError, match=r"input 'x': expected shape \[2, 8\], got \[8, 2\]"):
        ex.run({"x": np.zeros((8, 2), np.float32)})


def test_wrong_dtype(tiny):
    ex = Executor(tiny.dir)
    with pytest.raises(InputError, match=r"input 'x': expected dtype float32, got float64"):
        ex.run({"x": np.zeros((2, 8))})


def test_input_error_is_a_manifest_error_with_exit_code_2(tiny):
    assert issubclass(InputError, ManifestError)
    assert InputError.exit_code == 2


# --- providers and session options -----------------------------------------------------------


def test_unknown_provider_falls_back_with_one_warning(tiny, caplog):
    def use_foo(doc):
        for sl in S(doc)[1:]:
            sl["execution_provider"] = "FooExecutionProvider"
            sl["provider_options"] = {"device_id": 0, "fast": True}

    tiny.edit(use_foo)
    with caplog.at_level(logging.WARNING, logger="hetcc.runtime"):
        ex = Executor(tiny.dir)
    warnings = [r for r in caplog.records if "FooExecutionProvider" in r.getMessage()]
    assert len(warnings) == 1  # two slices, one warning
    assert ex.providers == ["CPUExecutionProvider"] * 3
    np.testing.assert_allclose(ex.run(tiny.feeds())["y"], reference_outputs(tiny, tiny.feeds())["y"], rtol=1e-6)


def test_unknown_provider_strict(tiny):
    tiny.edit(lambda d: S(d)[2].update(execution_provider="FooExecutionProvider"))
    with pytest.raises(ManifestError, match=r"02_npu\.onnx: execution provider FooExecutionProvider.*not available"):
        Executor(tiny.dir, strict_providers=True)


def test_providers_override(tiny, caplog):
    with caplog.at_level(logging.WARNING, logger="hetcc.runtime"):
        ex = Executor(tiny.dir, providers_override={"gpu": "FooExecutionProvider"})
    assert len([r for r in caplog.records if "FooExecutionProvider" in r.getMessage()]) == 1
    assert ex.providers == ["CPUExecutionProvider"] * 3
    with pytest.raises(ManifestError, match="FooExecutionProvider"):
        Executor(tiny.dir, providers_override="FooExecutionProvider", strict_providers=True)


def test_spinning_off_when_sessions_share_cores():
    rt = {"allow_spinning": True, "graph_optimization_level": "basic", "intra_op_num_threads": 2}
    shared = make_session_options(rt, shared_cpu=True)
    assert config_entry(shared, "session.intra_op.allow_spinning") == "0"
    alone = make_session_options(rt, shared_cpu=False)
    assert config_entry(alone, "session.intra_op.allow_spinning") is None
    assert alone.intra_op_num_threads == 2 and alone.inter_op_num_threads == 1
    assert alone.execution_mode == ort.ExecutionMode.ORT_SEQUENTIAL
    assert alone.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    forbidden = make_session_options(dict(rt, allow_spinning=False), shared_cpu=False)
    assert config_entry(forbidden, "session.intra_op.allow_spinning") == "0"


def test_default_threads_and_affinity():
    rt = {"allow_spinning": False, "graph_optimization_level": "all", "intra_op_num_threads": None}
    so = make_session_options(rt, shared_cpu=True)
    assert so.intra_op_num_threads >= 1
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [0]
    pinned = make_session_options(rt, shared_cpu=True, affinity=cores)
    assert pinned.intra_op_num_threads == len(cores)
    if len(cores) > 1:
        expected = ";".join(str(c + 1) for c in cores[1:])
        assert config_entry(pinned, "session.intra_op_thread_affinities") == expected
    absent = make_session_options(rt, shared_cpu=True, affinity=[100000])
    assert config_entry(absent, "session.intra_op_thread_affinities") is None


def test_affinity_in_manifest_runs(tiny):
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [0]

    def pin(doc):
        doc["runtime"]["intra_op_num_threads"] = None
        S(doc)[0]["affinity"] = cores
        S(doc)[1]["affinity"] = [100000]  # not on this machine: ignored

    tiny.edit(pin)
    ex = Executor(tiny.dir)
    np.testing.assert_allclose(ex.run(tiny.feeds())["y"], reference_outputs(tiny, tiny.feeds())["y"], rtol=1e-6)
