"""examples/Makefile with --depfile (docs/build-systems.md): the first `make` builds, the second
does nothing; the target file, hetcc's version stamp or a flag changing rebuilds, and nothing
else does. Run on a copy of examples/ with a tiny model."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hetcc.compiler.depfile import version_stamp
from hetcc.targets import load_target
from text_models import CHAIN

pytestmark = [pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed"), pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[1]
HETCC = f"HETCC={sys.executable} -m hetcc.cli"


@pytest.fixture
def examples(tmp_path, write_text_model) -> Path:
    ex = tmp_path / "examples"
    ex.mkdir()
    shutil.copy(ROOT / "examples" / "Makefile", ex / "Makefile")
    write_text_model(CHAIN, ex / "m.onnx")
    return ex


def make(ex: Path, *variables: str, question: bool = False) -> subprocess.CompletedProcess:
    argv = ["make", "-C", str(ex), *(["-q"] if question else []), HETCC, "MODEL=m.onnx", *variables]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert r.returncode in ((0, 1) if question else (0,)), r.stdout + r.stderr
    return r


def built(r: subprocess.CompletedProcess) -> bool:
    return "hetcc.cli compile m.onnx" in r.stdout


def touched(path: Path, manifest: Path) -> None:
    """As if ``path`` changed after the build: the manifest's time is set 10 s before ``path``'s
    (rather than ``path`` moved into the future, or an installed hetcc file changed)."""
    t = path.stat().st_mtime - 10
    os.utime(manifest, (t, t))


def test_builtin_target_by_name_rebuilds_on_flags_and_hetcc_only(examples):
    manifest = examples / "build" / "m-hikey970" / "manifest.json"
    first = make(examples, "TARGET=hikey970")
    assert built(first) and manifest.is_file()
    dep = (examples / "build" / "m-hikey970.d").read_text()
    assert str(load_target("hikey970").path) in dep and str(version_stamp()) in dep
    stamp = manifest.stat().st_mtime_ns

    again = make(examples, "TARGET=hikey970")
    assert not built(again) and "Nothing to be done" in again.stdout
    assert make(examples, "TARGET=hikey970", question=True).returncode == 0
    assert manifest.stat().st_mtime_ns == stamp

    changed = make(examples, "TARGET=hikey970", "DEADLINE=50ms")     # a flag changes: rebuilt, once
    assert built(changed) and "--deadline 50ms" in changed.stdout
    assert not built(make(examples, "TARGET=hikey970", "DEADLINE=50ms"))

    touched(version_stamp(), manifest)                              # hetcc reinstalled or upgraded
    assert make(examples, "TARGET=hikey970", "DEADLINE=50ms", question=True).returncode == 1
    assert built(make(examples, "TARGET=hikey970", "DEADLINE=50ms"))
    assert not built(make(examples, "TARGET=hikey970", "DEADLINE=50ms"))


def test_target_file_change_rebuilds(examples):
    board = examples / "boards" / "myboard.toml"
    board.parent.mkdir()
    shutil.copy(load_target("hikey970").path, board)
    target = "TARGET=boards/myboard.toml"
    assert built(make(examples, target))
    manifest = examples / "build" / "m-myboard" / "manifest.json"
    assert "boards/myboard.toml" in (examples / "build" / "m-myboard.d").read_text()
    (examples / "NOTES.md").write_text("unrelated\n")                 # not an input: nothing to do
    assert make(examples, target, question=True).returncode == 0
    touched(board, manifest)
    assert make(examples, target, question=True).returncode == 1
    assert built(make(examples, target))
    assert not built(make(examples, target))
