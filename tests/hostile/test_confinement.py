"""Outside the artifact: what hetcc reads and writes beyond the files it was given.

* symbolic shape inference writes nothing into the current directory (onnxruntime's own
  ``infer_shapes`` saves ``sym_shape_infer_temp.onnx`` + ``<uuid>.data`` there when it gives up);
* every file the CLI and the runtime read from an artifact resolves inside it (a symlinked
  ``manifest.json`` / ``costs.json`` / workload manifest / relative source model is refused with
  one line, exit 2), and a source model's external data must stay in the model's directory;
* onnxruntime's telemetry is off (no device-id database under the user's cache, no socket use)
  unless ``HETCC_ORT_TELEMETRY=1``.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

from hetcc.cli import main
from hetcc.core.errors import ModelError
from hetcc.compiler.frontend import load_model
from hetcc.runtime import Executor, ManifestError
from text_models import CHAIN


SMALL = """<ir_version: 8, opset_import: ["" : 17]>
small (float[1,8] x) => (float[1,8] y) {
    a = Relu(x)
    y = Sigmoid(a)
}
"""

# onnx's shape inference does not know com.microsoft.ExpandDims (an onnxruntime CPU op), so
# onnxruntime's symbolic inference is tried next and gives up on it too: the case where its
# ``infer_shapes`` saved ``sym_shape_infer_temp.onnx`` into the cwd; the shapes then come from one run
NEEDS_SYMBOLIC = """<ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1]>
needs_symbolic (float[2,3] x) => (float[1,2,3] y) <int32 ax = {0}> {
    a = Relu(x)
    e = com.microsoft.ExpandDims(a, ax)
    y = Sigmoid(e)
}
"""


SECRET = "TOP-SECRET-NOT-PART-OF-ANY-ARTIFACT"


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(err: str, *needles: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("hetcc: error: "), lines[0]
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def artifact(tmp_path, write_text_model, capsys):
    (tmp_path / "src").mkdir()
    model = write_text_model(CHAIN, tmp_path / "src" / "chain.onnx")
    out = tmp_path / "art"
    code, _, err = run_cli(capsys, "compile", model, "--target", "hikey970", "-o", out, "-q")
    assert code == 0, err
    assert (out / "manifest.json").is_file() and (out / "costs.json").is_file()
    return out


@pytest.fixture
def outside(tmp_path) -> Path:
    d = tmp_path / "elsewhere"
    d.mkdir()
    return d


# ------------------------------------------------------------------------------------ M5: cwd
@pytest.mark.slow
def test_symbolic_shape_inference_writes_nothing_into_the_cwd(tmp_path, write_text_model, capsys, monkeypatch):
    from hetcc.compiler.frontend import symbolic_shape_infer_module

    ssi = symbolic_shape_infer_module()           # onnxruntime's, as hetcc loads it

    models = tmp_path / "models"
    models.mkdir()
    path = write_text_model(NEEDS_SYMBOLIC, models / "m.onnx")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "sym_shape_infer_temp.onnx").write_bytes(b"the user's own file, not a model")
    before = {p.name: p.read_bytes() for p in cwd.iterdir()}

    calls = []
    real = ssi.SymbolicShapeInference._infer_impl
    monkeypatch.setattr(ssi.SymbolicShapeInference, "_infer_impl",
                        lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    monkeypatch.chdir(cwd)
    program = load_model(path)
    assert calls, "the model no longer reaches onnxruntime's symbolic shape inference; pick another"
    by_name = {o.name: o for n in program.graph for o in n.outputs}
    assert list(by_name["e"].shape) == [1, 2, 3]        # the shapes still come out (from one run)
    assert {p.name: p.read_bytes() for p in cwd.iterdir()} == before

    code, _, err = run_cli(capsys, "compile", path, "--target", "hikey970", "-o", tmp_path / "art", "-q")
    assert code == 0, err
    assert {p.name: p.read_bytes() for p in cwd.iterdir()} == before


# ------------------------------------------------------------------------------------ M6: artifact files
def test_costs_json_symlinked_out_of_the_artifact_is_refused(artifact, outside, capsys):
    (outside / "secret.json").write_text(json.dumps({"secret": SECRET}))
    (artifact / "costs.json").unlink()
    (artifact / "costs.json").symlink_to(outside / "secret.json")
    code, out, err = run_cli(capsys, "inspect", artifact, "--json", "--costs")
    assert code == 2
    assert_one_line_error(err, "costs.json", "outside the artifact")
    assert SECRET not in out + err
    code, out, err = run_cli(capsys, "inspect", artifact)   # the table reads costs.json too
    assert code == 2
    assert_one_line_error(err, "costs.json")
    assert SECRET not in out + err


def test_costs_json_symlinked_inside_the_artifact_is_read(artifact, capsys):
    (artifact / "costs.real.json").write_bytes((artifact / "costs.json").read_bytes())
    (artifact / "costs.json").unlink()
    (artifact / "costs.json").symlink_to("costs.real.json")
    code, out, err = run_cli(capsys, "inspect", artifact, "--json", "--costs")
    assert code == 0, err
    assert json.loads(out)["costs"]["layers"]


@pytest.mark.parametrize("bad", ["dir", "not json", "loop"])
def test_damaged_costs_json_is_one_line(artifact, capsys, bad):
    costs = artifact / "costs.json"
    costs.unlink()
    if bad == "dir":
        costs.mkdir()
    elif bad == "loop":
        costs.symlink_to("costs.json")
    else:
        costs.write_text("{not json")
    code, _, err = run_cli(capsys, "inspect", artifact, "--json", "--costs")
    assert code == 2
    assert_one_line_error(err, "costs.json")


def test_manifest_json_symlinked_out_of_the_artifact_is_refused(artifact, outside, capsys):
    # the target is a perfectly valid manifest whose slices exist next to it: only where it lives is wrong
    shutil.copytree(artifact / "slices", outside / "slices")
    (outside / "manifest.json").write_bytes((artifact / "manifest.json").read_bytes())
    (artifact / "manifest.json").unlink()
    (artifact / "manifest.json").symlink_to(outside / "manifest.json")
    for argv in (["inspect", artifact], ["inspect", artifact, "--json"], ["run", artifact],
                 ["inspect", artifact / "manifest.json"]):
        code, out, err = run_cli(capsys, *argv)
        assert code == 2, argv
        assert_one_line_error(err, "manifest.json", "outside the artifact")
        assert out == ""
    with pytest.raises(ManifestError, match="manifest.json: resolves outside the artifact"):
        Executor(artifact)


def test_manifest_json_symlinked_inside_the_artifact_is_read(artifact, capsys):
    (artifact / "manifest.real.json").write_bytes((artifact / "manifest.json").read_bytes())
    (artifact / "manifest.json").unlink()
    (artifact / "manifest.json").symlink_to("manifest.real.json")
    code, _, err = run_cli(capsys, "run", artifact, "--verify")
    assert code == 0, err


def test_workload_model_manifest_symlinked_out_is_refused(tmp_path, write_text_model, outside, capsys):
    src = tmp_path / "src"
    src.mkdir()
    a = write_text_model(CHAIN, src / "chain.onnx")
    b = write_text_model(SMALL, src / "small.onnx")
    w = tmp_path / "w"
    code, _, err = run_cli(capsys, "compile", a, b, "--target", "hikey970", "-o", w, "-q")
    assert code == 0, err
    top = json.loads((w / "manifest.json").read_text())
    sub = w / top["workload"]["models"][0]["dir"]
    (outside / "manifest.json").write_bytes((sub / "manifest.json").read_bytes())
    (sub / "manifest.json").unlink()
    (sub / "manifest.json").symlink_to(outside / "manifest.json")
    for argv in (["run", w], ["inspect", w], ["inspect", w, "--json", "--costs"]):
        code, out, err = run_cli(capsys, *argv)
        assert code == 2, argv
        assert_one_line_error(err, "manifest.json", "outside the artifact")


def test_relative_source_model_outside_the_artifact_is_refused(artifact, outside, capsys):
    # a hand-edited manifest pointing --verify's reference out of the artifact by a relative path
    (outside / "model.onnx").write_bytes(b"")
    doc = json.loads((artifact / "manifest.json").read_text())
    os.symlink(outside / "model.onnx", artifact / "ref.onnx")
    for rel in ("ref.onnx", "../elsewhere/model.onnx"):
        doc["model"]["source_path"] = rel
        (artifact / "manifest.json").write_text(json.dumps(doc))
        code, _, err = run_cli(capsys, "run", artifact, "--verify")
        assert code == 2, rel
        assert_one_line_error(err, "model.source_path", repr(rel))


# ------------------------------------------------------------------------------------ M6: external data
def _external_model(directory: Path, location: str, *, constant: bool = False, n: int = 2) -> Path:
    """x @ w with w (n x n float) stored as external data at ``location`` (as an initializer, or
    as the value of a Constant node)."""
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[n, n], data_location=TensorProto.EXTERNAL)
    t.external_data.add(key="location", value=location)
    t.external_data.add(key="length", value=str(4 * n * n))
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"])]
    inits = [t]
    if constant:
        nodes.insert(0, helper.make_node("Constant", [], ["w"], name="const_w", value=t))
        inits = []
    graph = helper.make_graph(nodes, "ext", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = directory / "ext.onnx"
    path.write_bytes(model.SerializeToString())
    return path


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink", "constant"])
def test_external_data_outside_the_model_directory_is_refused(tmp_path, outside, capsys, kind):
    (outside / "secret.bin").write_bytes(np.arange(4, dtype=np.float32).tobytes())
    models = tmp_path / "models"
    models.mkdir()
    location = {"dotdot": "../elsewhere/secret.bin", "absolute": str(outside / "secret.bin"),
                "symlink": "data.bin", "constant": "../../../../../../" + str(outside / "secret.bin")}[kind]
    if kind == "symlink":
        (models / "data.bin").symlink_to(outside / "secret.bin")
    path = _external_model(models, location, constant=kind == "constant")
    with pytest.raises(ModelError, match="resolves outside the model's directory"):
        load_model(path)
    out = tmp_path / "art"
    code, stdout, err = run_cli(capsys, "compile", path, "--target", "hikey970", "-o", out)
    assert code == 2
    line = assert_one_line_error(err, repr(location), "outside the model's directory")
    assert ("'w'" in line) or ("const_w" in line) or ("'value'" in line), line
    assert not out.exists()


def test_external_data_inside_the_model_directory_is_accepted(tmp_path, capsys):
    models = tmp_path / "models"
    (models / "weights").mkdir(parents=True)
    (models / "weights" / "w.bin").write_bytes(np.eye(64, dtype=np.float32).tobytes())
    (models / "link.bin").symlink_to("weights/w.bin")          # a symlink that stays inside is fine
    for i, location in enumerate(("weights/./w.bin", "weights/../weights/w.bin", "link.bin")):
        path = _external_model(models, location, n=64)
        load_model(path)
        code, _, err = run_cli(capsys, "compile", path, "--target", "hikey970", "-o", tmp_path / f"art{i}", "-q")
        assert code == 0, (location, err)


# ------------------------------------------------------------------------------------ M7: telemetry
def _clean_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ORT_DISABLE_TELEMETRY", "HETCC_ORT_TELEMETRY")}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), **extra)
    return env


def _python(code: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.mark.parametrize("env,want", [({}, "1"), ({"HETCC_ORT_TELEMETRY": "1"}, None),
                                      ({"ORT_DISABLE_TELEMETRY": "0"}, "0")])
def test_importing_the_runtime_turns_telemetry_off_unless_opted_in(tmp_path, env, want):
    proc = _python("""
        import json, os, sys
        import hetcc.runtime
        assert "onnxruntime" not in sys.modules
        print(json.dumps(os.environ.get("ORT_DISABLE_TELEMETRY")))
    """, _clean_env(tmp_path, **env), tmp_path)
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == want


# the probe: every socket call recorded by an audit hook (Python's own sockets) and the files
# onnxruntime's telemetry leaves under the user's cache (its native 1DS client: device id, event db)
NO_NETWORK_PROBE = """
    import json, os, sys
    attempts = []
    def hook(event, args):
        if event.startswith("socket.") or event in ("urllib.Request", "http.client.connect"):
            attempts.append(event + " " + repr(args)[:200])
    sys.addaudithook(hook)

    from hetcc.cli import main
    model, out = sys.argv[1], sys.argv[2]
    assert main(["compile", model, "--target", "hikey970", "-o", out, "-q"]) == 0
    assert main(["run", out, "--verify", "--repeat", "3"]) == 0
    from hetcc.runtime import Executor, verify
    assert verify(Executor(out)).ok
    print(json.dumps({"attempts": attempts, "env": os.environ.get("ORT_DISABLE_TELEMETRY")}))
"""


def _telemetry_files(home: Path) -> list[str]:
    return sorted(str(p.relative_to(home)) for p in home.rglob("*") if "Microsoft" in p.parts or "onnxruntime" in p.name)


@pytest.mark.slow
def test_compile_and_run_touch_no_network_and_no_telemetry_files(tmp_path, write_text_model):
    home = tmp_path / "home"
    home.mkdir()
    model = write_text_model(CHAIN, tmp_path / "chain.onnx")
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(NO_NETWORK_PROBE), str(model), str(tmp_path / "art")],
                          capture_output=True, text=True, env=_clean_env(home), cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["attempts"] == []
    assert got["env"] == "1"
    assert _telemetry_files(home) == []


def test_runtime_alone_touches_no_network_and_no_telemetry_files(tmp_path, artifact):
    home = tmp_path / "home"
    home.mkdir()
    proc = _python(f"""
        import json, sys
        attempts = []
        sys.addaudithook(lambda e, a: attempts.append(e) if e.startswith("socket.") else None)
        from hetcc.runtime import Executor
        ex = Executor({str(artifact)!r})
        import numpy as np
        ex.run({{"x": np.ones((1, 8), np.float32)}})
        print(json.dumps(attempts))
    """, _clean_env(home), tmp_path)
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
    assert _telemetry_files(home) == []


def test_opting_in_leaves_onnxruntime_as_shipped(tmp_path):
    """The opt-in really reaches onnxruntime: with HETCC_ORT_TELEMETRY=1 hetcc sets nothing, so
    onnxruntime's own telemetry (when the build has it) creates its files as it ships; this is
    also what shows the probe above would see them."""
    home = tmp_path / "home"
    home.mkdir()
    proc = _python("""
        import os
        from hetcc.runtime import onnxrt
        onnxrt.load()
        print(os.environ.get("ORT_DISABLE_TELEMETRY"))
    """, _clean_env(home, HETCC_ORT_TELEMETRY="1"), tmp_path)
    assert proc.stdout.strip().splitlines()[-1] == "None"
    build_has_1ds = bool(_telemetry_files(home))
    if not build_has_1ds:
        pytest.skip("this onnxruntime build has no 1DS telemetry: nothing to opt into")
