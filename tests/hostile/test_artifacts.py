"""Hostile conditions a catalogue case cannot set up: a full disk while the artifact is written,
a machine with fewer CPUs than the manifest's threads, a damaged costs.json's structure. Each is
one line, exit 2, the old artifact intact and no temporary left (docs/limits-artifacts.md)."""
from __future__ import annotations

import errno
import json
import os

import pytest

from hetcc.cli import main
from hetcc.passes import codegen
from hetcc.runtime import executor
from hetcc.runtime.errors import ManifestError
from hetcc.runtime.manifest import check_costs, read_json
from text_models import CHAIN


def snapshot(root):
    return {os.path.relpath(os.path.join(d, f), root): open(os.path.join(d, f), "rb").read()
            for d, _, files in os.walk(root) for f in files}


def one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("hetcc: error: "), err
    return lines[0]


@pytest.fixture
def model(tmp_path, write_text_model):
    return write_text_model(CHAIN, tmp_path / "m.onnx")


def _full(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("where", ["write_slice", "_write_manifest"])
def test_a_full_disk_keeps_the_old_artifact_and_leaves_no_temporary(capsys, monkeypatch, tmp_path, model, where):
    out = tmp_path / "art"
    assert main(["compile", str(model), "-o", str(out), "-q"]) == 0
    (out / "NOTES.md").write_text("mine\n")
    before, entries = snapshot(out), sorted(os.listdir(tmp_path))
    capsys.readouterr()
    monkeypatch.setattr(codegen, where, _full)
    assert main(["compile", str(model), "-o", str(out), "-q", "--objective", "energy"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert str(out) in line and "No space left on device" in line and "free some space" in line, line
    assert snapshot(out) == before
    assert sorted(os.listdir(tmp_path)) == entries   # no .art.tmp-*, .art.old-*, .art.lock


def test_a_full_disk_on_a_first_compile_leaves_nothing(capsys, monkeypatch, tmp_path, model):
    monkeypatch.setattr(codegen, "_write_manifest", _full)
    assert main(["compile", str(model), "-o", str(tmp_path / "new"), "-q"]) == 2
    assert "No space left" in one_error_line(capsys.readouterr().err)
    assert sorted(os.listdir(tmp_path)) == ["m.onnx"]


def test_an_error_reading_an_input_is_not_blamed_on_the_output(capsys, monkeypatch, tmp_path, model):
    """Only a full/read-only file system, or an error on a file inside the temporary artifact,
    is reported as a failure to write the output; anything else keeps its traceback."""
    def unreadable(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", "/elsewhere/weights.bin")
    monkeypatch.setattr(codegen, "write_slice", unreadable)
    with pytest.raises(PermissionError):
        main(["compile", str(model), "-o", str(tmp_path / "out"), "-q"])
    assert sorted(os.listdir(tmp_path)) == ["m.onnx"]


def test_threads_beyond_four_per_cpu_are_refused_before_a_session_opens(capsys, monkeypatch, tmp_path, model):
    out = tmp_path / "art"
    assert main(["compile", str(model), "-o", str(out), "-q"]) == 0
    doc = json.loads((out / "manifest.json").read_text())
    doc["runtime"]["intra_op_num_threads"] = 9
    (out / "manifest.json").write_text(json.dumps(doc))
    monkeypatch.setattr(executor.os, "cpu_count", lambda: 2)
    capsys.readouterr()
    assert main(["run", str(out)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "intra_op_num_threads = 9" in line and "[1, 8]" in line, line
    doc["runtime"]["intra_op_num_threads"] = 8
    (out / "manifest.json").write_text(json.dumps(doc))
    assert main(["run", str(out)]) == 0


@pytest.mark.parametrize("doc, words", [
    ({"layers": 3}, "layers: expected an array"),
    ({"layers": [3]}, "layers[0]: expected an object"),
    ({"layers": [{"op_types": "Conv"}]}, "layers[0].op_types: expected an array of strings"),
    ({"layers": [{"op_types": [1]}]}, "layers[0].op_types: expected an array of strings"),
    ({}, "layers: required key is missing"),
])
def test_check_costs_names_the_key(tmp_path, doc, words):
    with pytest.raises(ManifestError, match="costs.json: " + words.replace("[", r"\[").replace("]", r"\]")):
        check_costs(doc, "costs.json")


def test_check_costs_accepts_what_codegen_writes(capsys, tmp_path, model):
    assert main(["compile", str(model), "-o", str(tmp_path / "art"), "-q"]) == 0
    path = tmp_path / "art" / "costs.json"
    check_costs(read_json(path, str(path)), str(path))


def test_random_inputs_refuse_a_huge_shape_before_allocating():
    """A tampered manifest input no slice reads (so no session check sees it) with a 1e11-element
    shape: one InputError naming it, not a MemoryError."""
    from hetcc.runtime.errors import InputError
    from hetcc.runtime.verification import random_inputs

    with pytest.raises(InputError, match="'unused'.*limit"):
        random_inputs([{"name": "unused", "dtype": "float32", "shape": [100000, 1000000]}])
    assert random_inputs([{"name": "x", "dtype": "float32", "shape": [2, 3]}])["x"].shape == (2, 3)
