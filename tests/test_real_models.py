"""Models as exporters write them, end to end through the CLI (compile for hikey970, then
``run --verify``): weights in an external data file (torch's dynamo exporter, ``onnx.save(...,
save_as_external_data=True)``), weights listed as graph inputs (``keep_initializers_as_inputs``),
hetcc run from a directory other than the model's. Every artifact must be self-contained: no slice
refers to a file outside the artifact directory."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest

from extras import needs

from hetcc.cli import main
from hetcc.compiler.frontend import load_model
from hetcc.passes import codegen
from hetcc.runtime import Executor

pytestmark = [pytest.mark.zoo, pytest.mark.slow, pytest.mark.timeout(900)]

torch = needs("zoo", "torchvision", "torch")


def tiny_cnn():
    """A TinyCNN (torch is imported when a test first needs it, not when the file is collected)."""
    class TinyCNN(torch.nn.Module):
        """conv-bn-relu, a strided conv, global pooling, a classifier: weights over and under 1024
        elements (the frontend keeps the small ones for shape inference)."""

        def __init__(self) -> None:
            super().__init__()
            self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(8)
            self.conv2 = torch.nn.Conv2d(8, 16, 3, padding=1, stride=2)
            self.fc = torch.nn.Linear(16, 10)

        def forward(self, x):
            x = torch.relu(self.bn(self.conv1(x)))
            x = torch.relu(self.conv2(x))
            return self.fc(x.mean(dim=(2, 3)))

    return TinyCNN()


def _export(path: Path, **kwargs) -> Path:
    torch.manual_seed(0)
    module = tiny_cnn().eval()
    with warnings.catch_warnings():  # the TorchScript exporter is deprecated; older exports are its output
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(module, (torch.randn(1, 3, 16, 16),), str(path), input_names=["input"],
                          output_names=["output"], dynamo=False, **kwargs)
    return path


def _all_tensors(proto: onnx.ModelProto):
    """Every TensorProto: initializers and tensor attributes, subgraphs and functions included."""
    def graph(g):
        yield from g.initializer
        for st in g.sparse_initializer:
            yield from (st.values, st.indices)
        for n in g.node:
            yield from node(n)

    def node(n):
        for a in n.attribute:
            if a.HasField("t"):
                yield a.t
            yield from a.tensors
            for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                yield from graph(sub)

    yield from graph(proto.graph)
    for f in proto.functions:
        for n in f.node:
            yield from node(n)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """name -> path: ``plain``, ``external`` (every tensor in m.onnx.data, small ones included)
    and ``weights_as_inputs`` (keep_initializers_as_inputs=True), each in its own directory."""
    root = tmp_path_factory.mktemp("models")
    out = {}
    (root / "plain").mkdir()
    out["plain"] = _export(root / "plain" / "m.onnx")
    (root / "external").mkdir()
    proto = onnx.load(out["plain"])
    out["external"] = root / "external" / "m.onnx"
    onnx.save(proto, str(out["external"]), save_as_external_data=True, all_tensors_to_one_file=True,
              location="m.onnx.data", size_threshold=0)
    (root / "inputs").mkdir()
    out["weights_as_inputs"] = _export(root / "inputs" / "m.onnx", keep_initializers_as_inputs=True)
    return out


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """Run from a directory that is neither the model's nor the artifact's parent."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


def cli(capsys, *argv) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out + err


def compile_and_verify(capsys, model, out: Path, *extra) -> None:
    code, text = cli(capsys, "compile", model, "--target", "hikey970", "-o", out, "-q", *extra)
    assert code == 0, text
    code, text = cli(capsys, "run", out, "--verify")
    assert code == 0, text
    assert "outputs match the unsliced model" in text


def assert_self_contained(artifact: Path) -> list[str]:
    """Every file a slice refers to (external data) is a relative location inside the artifact's
    slices/ directory and exists; every slice file of the manifest lies inside the artifact.
    Returns the external data files referred to."""
    artifact = artifact.resolve()
    manifest = json.loads((artifact / "manifest.json").read_text())
    files = {s["file"] for v in manifest["variants"].values() for s in v["slices"]}
    for rel in files:
        assert not os.path.isabs(rel) and (artifact / rel).resolve().is_relative_to(artifact), rel
    data_files = set()
    for path in sorted(artifact.rglob("*.onnx")):
        proto = onnx.load(str(path), load_external_data=False)
        for tensor in _all_tensors(proto):
            if tensor.data_location != onnx.TensorProto.EXTERNAL:
                continue
            location = {e.key: e.value for e in tensor.external_data}.get("location", "")
            assert location and not os.path.isabs(location) and ".." not in Path(location).parts, location
            target = (path.parent / location).resolve()
            assert target.is_relative_to(artifact / "slices"), (path, location)
            assert target.is_file(), (path, location)
            data_files.add(target.relative_to(artifact).as_posix())
    # the only path out of the artifact is model.source_path, the unsliced model that --verify reads
    return sorted(data_files)


def test_external_data_model_compiles_verifies_and_runs_from_another_directory(models, tmp_path, elsewhere, capsys):
    out = tmp_path / "art"
    compile_and_verify(capsys, models["external"], out)
    assert assert_self_contained(out) == []  # a small slice embeds its weights
    manifest = json.loads((out / "manifest.json").read_text())
    assert Path(manifest["model"]["source_path"]) == models["external"].resolve()

    # the artifact runs without the source model's data file (and copied anywhere)
    moved = tmp_path / "copy"
    shutil.copytree(out, moved)
    data = models["external"].parent / "m.onnx.data"
    hidden = data.with_name("hidden.data")
    data.rename(hidden)
    try:
        code, text = cli(capsys, "run", moved)
        assert code == 0, text
    finally:
        hidden.rename(data)


def test_external_data_model_with_a_relative_path(models, tmp_path, monkeypatch, capsys):
    """The model named relative to a cwd that is not its directory: external data (small tensors
    included, which the checker reads) resolves against the model file, not the cwd."""
    monkeypatch.chdir(models["external"].parent.parent)
    rel = Path("external") / "m.onnx"
    load_model(rel)
    compile_and_verify(capsys, rel, tmp_path / "art", "--planner", "even:3")
    assert assert_self_contained(tmp_path / "art") == []


def test_large_slices_keep_their_weights_in_a_data_file_inside_the_artifact(models, tmp_path, elsewhere,
                                                                              monkeypatch, capsys):
    monkeypatch.setattr(codegen, "EMBED_LIMIT_BYTES", 0)  # every slice counts as large
    out = tmp_path / "art"
    compile_and_verify(capsys, models["external"], out, "--planner", "even:2")
    data = assert_self_contained(out)
    assert data == ["slices/00_big.onnx.data"]  # slice 1's tensors are all under EXTERNAL_MIN_BYTES
    assert sorted(p.name for p in (out / "slices").iterdir()) == ["00_big.onnx", "00_big.onnx.data", "01_big.onnx"]

    moved = tmp_path / "copy"
    shutil.copytree(out, moved)
    code, text = cli(capsys, "run", moved)
    assert code == 0, text

    # variants: content-addressed slice files, and data files named by their content
    var = tmp_path / "variants"
    compile_and_verify(capsys, models["plain"], var, "--variants", "single:big,even:2,dp")
    data = assert_self_contained(var)
    assert data and all(name.startswith("slices/L") and name.endswith(".onnx.data") for name in data)
    for variant in ("single:big", "even:2"):
        code, text = cli(capsys, "run", var, "--verify", "--variant", variant)
        assert code == 0, text


def test_weights_listed_as_graph_inputs_are_weights(models, tmp_path, elsewhere, capsys):
    path = models["weights_as_inputs"]
    proto = onnx.load(str(path))
    assert {i.name for i in proto.graph.initializer} <= {i.name for i in proto.graph.input}
    program = load_model(path)
    assert [v.name for v in program.graph.inputs] == ["input"]

    out = tmp_path / "art"
    compile_and_verify(capsys, path, out, "--planner", "even:3")
    assert assert_self_contained(out) == []
    manifest = json.loads((out / "manifest.json").read_text())
    assert [i["name"] for i in manifest["model"]["inputs"]] == ["input"]
    for sl in manifest["variants"][manifest["default_variant"]]["slices"]:
        assert all(i["source"] != "model" or i["name"] == "input" for i in sl["inputs"]), sl

    ex = Executor(out)
    assert [s.name for s in ex.inputs] == ["input"]
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 16), dtype=np.float32)
    assert ex.run({"input": x})["output"].shape == (1, 10)
    np.save(tmp_path / "x.npy", x)
    code, text = cli(capsys, "run", out, "--input", f"input={tmp_path / 'x.npy'}")
    assert code == 0, text


def test_the_installed_command_end_to_end(models, tmp_path, elsewhere):
    """The console script in a fresh process, cwd elsewhere, external data and weights as inputs."""
    hetcc = shutil.which("hetcc", path=str(Path(sys.executable).parent)) or shutil.which("hetcc")
    if hetcc is None:
        pytest.skip("the hetcc console script is not installed")
    for name in ("external", "weights_as_inputs"):
        out = tmp_path / name
        for argv in (["compile", str(models[name]), "--target", "hikey970", "-o", str(out), "-q"],
                     ["run", str(out), "--verify"]):
            r = subprocess.run([hetcc, *argv], capture_output=True, text=True, timeout=300)
            assert r.returncode == 0, (argv, r.stdout + r.stderr)
        assert assert_self_contained(out) == []
