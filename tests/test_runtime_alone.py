"""The runtime on a board: a fresh venv holding only numpy, onnxruntime and the hetcc package
installed without its dependencies (docs/runtime-alone.md) runs, verifies and inspects an artifact
with ``python -m hetcc.runtime``.

The venv is made with ``python -m venv --without-pip`` and sees the two packages through a .pth
file naming a directory of symlinks into this interpreter's site-packages (what ``pip install
numpy onnxruntime`` would put there, without the download), and hetcc laid out as an installed
package (``pip install --no-deps hetcc``)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import onnx
import onnx.parser
import onnxruntime as ort
import pytest

import hetcc
import hetcc.passes
import hetcc.runtime
import hetcc.targets

pytestmark = [pytest.mark.skipif(os.name != "posix", reason="symlinked site-packages"), pytest.mark.slow, pytest.mark.timeout(900)]

MODEL = """<ir_version: 8, opset_import: ["" : 17]>
g (float[2,8] x) => (float[2,8] y) {
    a = Relu(x)
    b = Erf(a)
    c = Sigmoid(b)
    y = Tanh(c)
}
"""
#: what a board does not have: if any of these imports, the venv is not the board it claims to be
ABSENT = ("onnx", "onnx_ir", "rich", "jsonschema", "torch", "matplotlib")


def _board_venv(root: Path) -> Path:
    """A venv whose only third-party packages are numpy, onnxruntime and hetcc; its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True, timeout=60)
    pkgs = root / "pkgs"
    (pkgs / "hetcc").mkdir(parents=True)
    site = Path(sysconfig.get_paths()["purelib"])
    for entry in site.iterdir():     # numpy, numpy.libs, onnxruntime (and their dist-info), nothing else
        if entry.name.split("-")[0] in ("numpy", "numpy.libs", "onnxruntime", "onnxruntime.libs"):
            (pkgs / entry.name).symlink_to(entry)
    for entry in Path(hetcc.__file__).parent.iterdir():     # hetcc as installed, subpackages included
        (pkgs / "hetcc" / entry.name).symlink_to(entry)
    for sub in (hetcc.runtime, hetcc.targets, hetcc.passes):   # an editable install maps these elsewhere
        name = sub.__name__.rsplit(".", 1)[1]
        if not (pkgs / "hetcc" / name).exists():
            (pkgs / "hetcc" / name).symlink_to(Path(sub.__file__).parent)
    python = root / "venv" / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    Path(purelib, "board.pth").write_text(f"{pkgs}\n")
    return python


def _run(python: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}   # no PYTHONPATH leaking in
    # run outside the checkout: python -c / -m put the working directory first on sys.path
    return subprocess.run([str(python), *argv], capture_output=True, text=True, env=env, timeout=120,
                          cwd=python.parent)


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    root = tmp_path_factory.mktemp("board")
    path = root / "erf.onnx"
    onnx.save(onnx.parser.parse_model(MODEL), str(path))
    hetcc.compile(path, "hikey970", "latency", output_dir=root / "art")
    return root, _board_venv(root)


def test_the_venv_holds_only_numpy_and_onnxruntime(board):
    _, python = board
    probe = ("import importlib.util as u, json, hetcc.runtime, numpy, onnxruntime; "
             f"print(json.dumps([[m for m in {ABSENT!r} if u.find_spec(m)], hetcc.runtime.__file__]))")
    proc = _run(python, "-c", probe)
    assert proc.returncode == 0, proc.stderr
    found, where = json.loads(proc.stdout)
    assert found == [] and where.startswith(str(python.parents[2] / "pkgs" / "hetcc"))


def test_run_verify_and_save_outputs_on_the_board(board):
    root, python = board
    proc = _run(python, "-m", "hetcc.runtime", "run", str(root / "art"), "--verify", "--seed", "3", "--warmup", "1",
                "--save-outputs", str(root / "out"), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["verify"]["ok"] and doc["warmup"] == 1 and doc["saved_outputs"] == {"y": str(root / "out" / "y.npy")}
    x = hetcc.runtime.random_inputs([{"name": "x", "dtype": "float32", "shape": [2, 8]}], seed=3)["x"]
    want = ort.InferenceSession(str(root / "erf.onnx"), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(np.load(root / "out" / "y.npy"), want, rtol=1e-5, atol=1e-6)


def test_text_output_and_errors_on_the_board(board):
    root, python = board
    proc = _run(python, "-m", "hetcc.runtime", "inspect", str(root / "art"), "--why")
    assert proc.returncode == 0, proc.stderr
    assert "slice | layers" in proc.stdout and "op Erf unsupported" in proc.stdout    # plain tables, no rich
    proc = _run(python, "-m", "hetcc.runtime", "run", str(root / "nowhere"))
    assert proc.returncode == 2 and proc.stderr.startswith("hetcc: error:") and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    proc = _run(python, "-m", "hetcc.runtime", "run", str(root / "art"), "--warmup", "-1")
    assert proc.returncode == 2 and "--warmup" in proc.stderr and "Traceback" not in proc.stderr
