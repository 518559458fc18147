"""Codegen writes atomically: an interrupted compile leaves nothing; slices keep the source IR version."""
from __future__ import annotations

import json

import onnx
import pytest

import hetcc
from hetcc.passes import codegen

CHAIN = """<ir_version: 8, opset_import: ["" : 17]>
chain (float[1,8] x) => (float[1,8] y) <float[8,8] w = {1,0,0,0,0,0,0,0, 0,1,0,0,0,0,0,0, 0,0,1,0,0,0,0,0, 0,0,0,1,0,0,0,0, 0,0,0,0,1,0,0,0, 0,0,0,0,0,1,0,0, 0,0,0,0,0,0,1,0, 0,0,0,0,0,0,0,1}> {
    wi = Identity(w)
    a = MatMul(x, wi)
    b = Relu(a)
    c = Sigmoid(b)
    d = MatMul(c, wi)
    y = Relu(d)
}
"""


@pytest.fixture
def chain(tmp_path, write_text_model):
    return write_text_model(CHAIN, tmp_path / "chain.onnx")


def test_slices_keep_ir_version_and_duplicate_constants(chain, tmp_path):
    out = tmp_path / "o"
    hetcc.compile(chain, target="hikey970", planner="even:5", output_dir=out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["slices"]) == 5
    for s in manifest["slices"]:
        m = onnx.load(out / s["file"])
        assert m.ir_version == 8
        assert {o.domain: o.version for o in m.opset_import}[""] == 17
        for vi in list(m.graph.input) + list(m.graph.output):
            assert vi.type.tensor_type.elem_type != 0 and len(vi.type.tensor_type.shape.dim) == 2
    # the Identity-of-initializer feeds two MatMuls in different slices: copied into both
    with_identity = [s for s in manifest["slices"]
                     if "Identity" in {n.op_type for n in onnx.load(out / s["file"]).graph.node}]
    assert len(with_identity) == 2


@pytest.mark.parametrize("exc", [KeyboardInterrupt, OSError])
def test_interrupted_codegen_leaves_nothing_and_keeps_old_artifact(chain, tmp_path, monkeypatch, exc):
    out = tmp_path / "o"
    hetcc.compile(chain, target="hikey970", output_dir=out)
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    manifest_before = (out / "manifest.json").read_bytes()
    calls = []
    real = codegen.EmitArtifact._write_slice

    def flaky(self, program, bnd, path, name):
        calls.append(name)
        if len(calls) == 2:
            raise exc("interrupted")
        return real(self, program, bnd, path, name)

    monkeypatch.setattr(codegen.EmitArtifact, "_write_slice", flaky)
    with pytest.raises(exc):
        hetcc.compile(chain, target="hikey970", planner="even:4", output_dir=out)
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
    assert (out / "manifest.json").read_bytes() == manifest_before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chain.onnx", "o"]


def test_fresh_output_dir_not_created_on_failure(chain, tmp_path, monkeypatch):
    def boom(self, *a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(codegen.EmitArtifact, "_write_slice", boom)
    with pytest.raises(OSError):
        hetcc.compile(chain, target="hikey970", output_dir=tmp_path / "new")
    assert not (tmp_path / "new").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["chain.onnx"]
