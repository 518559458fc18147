"""Codegen writes atomically (through hetcc.files.atomic): an interrupted compile leaves nothing;
slices keep the source IR version; the manifest is hetcc.manifest/2."""
from __future__ import annotations

import json

import onnx
import pytest

import hetcc
from hetcc.files import atomic as fsutil
from hetcc.core.errors import UsageError
from hetcc.passes import codegen
from hetcc.runtime.manifest import SCHEMA_ID, load_manifest
from text_models import IDENTITY_CHAIN


def slices_of(manifest: dict) -> list:
    return manifest["variants"][manifest["default_variant"]]["slices"]

CHAIN = IDENTITY_CHAIN


@pytest.fixture
def chain(tmp_path, write_text_model):
    return write_text_model(CHAIN, tmp_path / "chain.onnx")


def test_slices_keep_ir_version_and_duplicate_constants(chain, tmp_path):
    out = tmp_path / "o"
    hetcc.compile(chain, target="hikey970", planner="even:5", output_dir=out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["schema"] == SCHEMA_ID and manifest["kind"] == "model"
    assert len(slices_of(manifest)) == 5
    for s in slices_of(manifest):
        m = onnx.load(out / s["file"])
        assert m.ir_version == 8
        assert {o.domain: o.version for o in m.opset_import}[""] == 17
        for vi in list(m.graph.input) + list(m.graph.output):
            assert vi.type.tensor_type.elem_type != 0 and len(vi.type.tensor_type.shape.dim) == 2
    # the Identity-of-initializer feeds two MatMuls in different slices: copied into both
    with_identity = [s for s in slices_of(manifest)
                     if "Identity" in {n.op_type for n in onnx.load(out / s["file"]).graph.node}]
    assert len(with_identity) == 2


@pytest.mark.parametrize("exc", [KeyboardInterrupt, OSError])
def test_interrupted_codegen_leaves_nothing_and_keeps_old_artifact(chain, tmp_path, monkeypatch, exc):
    out = tmp_path / "o"
    hetcc.compile(chain, target="hikey970", output_dir=out)
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    manifest_before = (out / "manifest.json").read_bytes()
    calls = []
    real = codegen.write_slice

    def flaky(program, bnd, path, name):
        calls.append(name)
        if len(calls) == 2:
            raise exc("interrupted")
        return real(program, bnd, path, name)

    monkeypatch.setattr(codegen, "write_slice", flaky)
    with pytest.raises(exc):
        hetcc.compile(chain, target="hikey970", planner="even:4", output_dir=out)
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
    assert (out / "manifest.json").read_bytes() == manifest_before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chain.onnx", "o"]


def test_fresh_output_dir_not_created_on_failure(chain, tmp_path, monkeypatch):
    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(codegen, "write_slice", boom)
    with pytest.raises(OSError):
        hetcc.compile(chain, target="hikey970", output_dir=tmp_path / "new")
    assert not (tmp_path / "new").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["chain.onnx"]


def test_refuses_to_overwrite_a_foreign_directory(chain, tmp_path):
    foreign = tmp_path / "photos"
    foreign.mkdir()
    (foreign / "cat.jpg").write_bytes(b"meow")
    with pytest.raises(UsageError, match="refusing to overwrite .*not a hetcc output directory"):
        hetcc.compile(chain, target="hikey970", output_dir=foreign)
    assert sorted(p.name for p in foreign.iterdir()) == ["cat.jpg"]
    afile = tmp_path / "file"
    afile.write_text("x")
    with pytest.raises(UsageError, match="not a directory"):
        with fsutil.atomic_directory(afile):
            pass
    empty = tmp_path / "empty"
    empty.mkdir()
    hetcc.compile(chain, target="hikey970", output_dir=empty)  # an empty directory is fine
    assert load_manifest(empty).kind == "model"


def test_atomic_directory_replaces_only_on_success(tmp_path):
    out = tmp_path / "o"

    def manifest(n: int) -> str:      # a hetcc manifest (only such a directory may be replaced)
        return json.dumps({"schema": "hetcc.manifest/2", "n": n})

    with fsutil.atomic_directory(out) as tmp:
        assert tmp.parent == tmp_path and tmp != out
        (tmp / "manifest.json").write_text(manifest(1))
    assert (out / "manifest.json").read_text() == manifest(1)
    with pytest.raises(RuntimeError):
        with fsutil.atomic_directory(out) as tmp:
            (tmp / "manifest.json").write_text(manifest(2))
            raise RuntimeError("boom")
    assert (out / "manifest.json").read_text() == manifest(1)
    with fsutil.atomic_directory(out) as tmp:
        (tmp / "manifest.json").write_text(manifest(3))
    assert (out / "manifest.json").read_text() == manifest(3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]


def test_atomic_write_file(tmp_path):
    path = tmp_path / "sub" / "f.json"
    fsutil.atomic_write_text(path, "a")
    assert path.read_text() == "a"

    with pytest.raises(TypeError):
        fsutil.atomic_write_bytes(path, "not bytes")  # type: ignore[arg-type]
    assert path.read_text() == "a"
    assert sorted(p.name for p in path.parent.iterdir()) == ["f.json"]


def test_emit_artifact_api_and_pass_agree(chain, tmp_path, analyse, write_text_model):
    from hetcc.passes.costs import EstimateCosts
    from hetcc.passes.legality import CheckLegality
    from hetcc.compiler.passmanager import PassManager
    from hetcc.planners import Slice
    from hetcc.compiler.program import PLAN
    from hetcc.targets import load_target

    target = load_target("hikey970")
    program = analyse(CHAIN)
    PassManager([CheckLegality(target), EstimateCosts(target)]).run(program)
    problem = program.get("costs").problem()
    plan = problem.evaluate([Slice(0, 2, 0), Slice(3, 4, problem.num_states - 1)], planner="fixed")
    a = codegen.emit_artifact(tmp_path / "a", program, target, {"fixed": plan})
    program.put(PLAN, plan)
    from hetcc.compiler.pipeline import Emit

    Emit(lambda plans: codegen.emit_artifact(tmp_path / "b", program, target, {"fixed": plans})).run(program)
    ma, mb = load_manifest(a), load_manifest(tmp_path / "b")
    assert ma.variants["fixed"].slices == mb.variants["fixed"].slices
    assert [(p.name, p.read_bytes()) for p in sorted((a / "slices").iterdir())] == \
           [(p.name, p.read_bytes()) for p in sorted((tmp_path / "b" / "slices").iterdir())]
    with pytest.raises(UsageError, match="default variant 'x'"):
        codegen.emit_artifact(tmp_path / "c", program, target, {"fixed": plan}, default_variant="x")
    assert not (tmp_path / "c").exists()


def test_target_controls_reach_the_manifest(chain, tmp_path):
    """jetson-tx2's control tables are copied into target.controls; a target without any writes null."""
    out = tmp_path / "tx2"
    hetcc.compile(chain, target="jetson-tx2", hardware={"a57_cores": 2}, output_dir=out)
    m = load_manifest(out)
    ctl = m.target.controls
    assert set(ctl.devices) == {"a57", "denver", "gpu"} and set(ctl.knobs) == {"a57_cores", "denver_cores",
                                                                                "emc_freq_mhz"}
    assert ctl.devices["gpu"].devfreq == "/sys/devices/17000000.gp10b/devfreq/17000000.gp10b"
    assert ctl.knobs["a57_cores"].hotplug == (0, 3, 4, 5) and ctl.knobs["emc_freq_mhz"].unit == "Hz"
    assert m.variant().hardware["a57_cores"] == 2
    hetcc.compile(chain, target="hikey970", output_dir=tmp_path / "hk")
    doc = json.loads((tmp_path / "hk" / "manifest.json").read_text())
    assert doc["target"]["controls"] is None
    del doc["target"]["controls"]       # a manifest written before controls existed still reads
    from hetcc.runtime.manifest import parse_manifest
    assert parse_manifest(doc).target.controls is None


def test_slice_initializers_keep_the_source_order():
    """onnx-ir's extractor returns a slice's initializers in a set's order (memory addresses);
    codegen puts them back in the source model's order, so the same slice is the same bytes."""
    import onnx_ir as ir
    import numpy as np

    from hetcc.passes.codegen import canonical_initializers

    x = ir.Value(name="x", shape=ir.Shape([2]), type=ir.TensorType(ir.DataType.FLOAT))
    consts = [ir.Value(name=f"w{i}", const_value=ir.tensor(np.full(2, i, np.float32))) for i in range(6)]
    source = ir.Graph([x], [], nodes=[], initializers=consts, name="src")
    copies = [ir.Value(name=v.name, const_value=v.const_value) for v in reversed(consts)]
    sliced = ir.Graph([], [], nodes=[], initializers=copies, name="slice")
    assert list(sliced.initializers) == [f"w{i}" for i in reversed(range(6))]
    canonical_initializers(sliced, source)
    assert list(sliced.initializers) == [f"w{i}" for i in range(6)]
