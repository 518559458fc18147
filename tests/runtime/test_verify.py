from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hetcc.runtime import Executor, ManifestError, TensorSpec, random_inputs, verify


def test_verify_ok(tiny):
    report = verify(tiny.dir)
    assert report.ok
    assert [o.name for o in report.outputs] == ["y", "r"]
    assert all(o.ok and o.rel_diff <= 1e-4 for o in report.outputs)
    assert report.reference_path == str(tiny.model_path.resolve())
    assert "matches" in report.summary()
    assert dataclasses.asdict(report)["ok"] is True


def test_verify_accepts_executor_and_feeds(tiny):
    ex = Executor(tiny.dir)
    report = verify(ex, feeds=tiny.feeds(3), rtol=1e-6)
    assert report.ok and report.rtol == 1e-6


def test_verify_catches_a_wrong_slice(tiny, wrong_slice):
    tiny.replace_slice(2, wrong_slice)
    report = verify(tiny.dir)
    assert not report.ok
    by_name = {o.name: o for o in report.outputs}
    assert not by_name["y"].ok and by_name["y"].rel_diff > 1e-2
    assert by_name["r"].ok  # produced by slice 1, untouched
    assert "MISMATCH  y" in report.summary()


def test_reference_missing_suggests_reference_flag(tiny):
    tiny.edit(lambda d: d["model"].update(source_path=None))
    with pytest.raises(ManifestError, match="source_path is null.*--reference"):
        verify(tiny.dir)
    assert verify(tiny.dir, reference_path=tiny.model_path).ok


def test_reference_moved(tiny):
    moved = tiny.model_path.with_name("moved.onnx")
    tiny.model_path.rename(moved)
    with pytest.raises(ManifestError, match="is gone; pass --reference"):
        verify(tiny.dir)
    assert verify(tiny.dir, reference_path=moved).ok


def test_reference_changed(tiny):
    tiny.model_path.write_bytes(tiny.model_path.read_bytes() + b"\0")
    with pytest.raises(ManifestError, match=r"model changed since compile \(sha256 mismatch\); pass --reference or recompile"):
        verify(tiny.dir)


def test_random_inputs_deterministic_and_typed():
    specs = [
        TensorSpec("f", "float32", (2, 3)),
        {"name": "i", "dtype": "int64", "shape": [5]},
        TensorSpec("b", "bool", (4,)),
        TensorSpec("h", "float16", ()),
    ]
    a = random_inputs(specs, seed=1)
    b = random_inputs(specs, seed=1)
    assert {k: v.dtype.name for k, v in a.items()} == {"f": "float32", "i": "int64", "b": "bool", "h": "float16"}
    assert a["f"].shape == (2, 3) and a["h"].shape == ()
    assert set(np.unique(a["i"])) == {0, 1}
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    assert not np.array_equal(random_inputs(specs, seed=2)["f"], a["f"])
