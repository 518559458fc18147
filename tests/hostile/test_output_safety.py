"""Never lose a user's file: what ``hetcc compile -o DIR`` may replace, what it keeps, and how it
recovers (docs/output-safety.md). Each test lists the directories involved before and after."""
from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import signal
import stat

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from hetcc.files import atomic as fsutil
from hetcc.cli import main
from hetcc.runtime.manifest import load_manifest, sha256_file
from text_models import IDENTITY_CHAIN


@pytest.fixture
def chain(tmp_path, write_text_model):
    return str(write_text_model(IDENTITY_CHAIN, tmp_path / "chain.onnx"))


def listing(root) -> list[str]:
    """Every entry under ``root``, relative, directories with a trailing '/'."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for d in dirnames:
            out.append(os.path.normpath(os.path.join(rel, d)) + "/")
        for f in filenames:
            out.append(os.path.normpath(os.path.join(rel, f)))
    return sorted(out)


def names(root) -> list[str]:
    """The entries directly in ``root`` (where temporaries, backups and locks would show)."""
    return sorted(os.listdir(root))


def contents(root) -> dict[str, bytes]:
    return {p: (root / p).read_bytes() for p in listing(root) if not p.endswith("/") and not (root / p).is_symlink()}


def compile_(capsys, model, out, *extra):
    code = main(["compile", str(model), "--target", "hikey970", "-o", str(out), "--quiet", *extra])
    stdout, err = capsys.readouterr()
    return code, err


def one_error_line(err: str) -> str:
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("hetcc: error: "), err
    return lines[0]


def artifact_files(out) -> list[str]:
    """What a valid artifact in ``out`` consists of: its manifest, costs.json, why.json, its slices."""
    m = load_manifest(out)
    files = {"manifest.json", "costs.json", "why.json"}
    for v in m.variants.values():
        for s in v.slices:
            assert sha256_file(out / s.file) == s.sha256
            files.add(s.file)
    return sorted(files)


# ------------------------------------------------------------------ H1: what may be replaced
@pytest.mark.parametrize("manifest, why", [
    ("{}\n", "not a hetcc manifest"),                          # a browser extension
    ('{"schema": "chrome.extension/3"}\n', "not a hetcc manifest"),
    ("[1, 2]\n", "not a hetcc manifest"),
    ("{not json\n", "not valid JSON"),
    (None, "has no manifest.json"),
])
def test_a_directory_without_a_hetcc_manifest_is_never_replaced(capsys, chain, tmp_path, manifest, why):
    x = tmp_path / "x"
    (x / "icons").mkdir(parents=True)
    (x / "icons" / "icon.png").write_bytes(b"\x89PNG")
    (x / "background.js").write_text("w\n")
    if manifest is not None:
        (x / "manifest.json").write_text(manifest)
    before, before_parent, data = listing(x), names(tmp_path), contents(x)
    code, err = compile_(capsys, chain, x)
    assert code == 2
    line = one_error_line(err)
    assert "refusing to overwrite" in line and str(x) in line and why in line
    assert listing(x) == before and contents(x) == data
    assert names(tmp_path) == before_parent  # no temporary, backup or lock left beside it


def test_a_file_is_never_replaced(capsys, chain, tmp_path):
    f = tmp_path / "out"
    f.write_text("precious\n")
    before = names(tmp_path)
    code, err = compile_(capsys, chain, f)
    assert code == 2 and "not a directory" in one_error_line(err)
    assert names(tmp_path) == before and f.read_text() == "precious\n"


# ------------------------------------------------------------------ M3: what is kept
def test_user_files_inside_an_artifact_survive_a_recompile(capsys, chain, tmp_path):
    out, ref = tmp_path / "out", tmp_path / "ref"
    assert compile_(capsys, chain, out, "--planner", "even:5")[0] == 0
    old_slices = [s.file for s in load_manifest(out).slices]
    assert len(old_slices) == 5
    (out / "NOTES.md").write_text("my notes\n")
    (out / "runs" / "2024").mkdir(parents=True)
    (out / "runs" / "2024" / "timing.csv").write_text("1,2\n")
    (out / "empty").mkdir()
    (out / "slices" / "mine.onnx").write_bytes(b"not hetcc's")
    (out / "latest").symlink_to("NOTES.md")
    user = ["NOTES.md", "empty/", "latest", "runs/", "runs/2024/", "runs/2024/timing.csv", "slices/mine.onnx"]
    assert compile_(capsys, chain, ref, "--planner", "even:2")[0] == 0
    expected = sorted(set(listing(ref)) | set(user))
    before_parent = names(tmp_path)

    code, err = compile_(capsys, chain, out, "--planner", "even:2")
    assert code == 0 and err == ""
    assert listing(out) == expected
    assert artifact_files(out) == artifact_files(ref)
    assert (out / "NOTES.md").read_text() == "my notes\n"
    assert (out / "runs" / "2024" / "timing.csv").read_text() == "1,2\n"
    assert (out / "slices" / "mine.onnx").read_bytes() == b"not hetcc's"
    assert os.readlink(out / "latest") == "NOTES.md"
    for gone in set(old_slices) - {s.file for s in load_manifest(out).slices}:
        assert not (out / gone).exists()  # what the old manifest listed is hetcc's to drop
    assert names(tmp_path) == before_parent


def test_a_source_model_inside_the_output_is_never_deleted(capsys, chain, tmp_path):
    out = tmp_path / "out"
    assert compile_(capsys, chain, out)[0] == 0
    model = out / "chain.onnx"
    model.write_bytes(open(chain, "rb").read())
    for planner in ("even:2", "even:3"):
        code, err = compile_(capsys, model, out, "--planner", planner)
        assert code == 0, err
        assert model.read_bytes() == open(chain, "rb").read()
    assert listing(out) == sorted(["chain.onnx", *artifact_files(out), "slices/"])


def test_a_source_model_the_old_manifest_lists_is_kept_or_the_compile_refused(capsys, chain, tmp_path):
    out = tmp_path / "out"
    assert compile_(capsys, chain, out, "--planner", "even:2")[0] == 0
    src = out / "slices" / "01_big.onnx"
    data = src.read_bytes()
    # compiling that slice: the new artifact writes slices/00_big.onnx only, so 01_big.onnx is kept
    code, err = compile_(capsys, src, out)
    assert code == 0, err
    assert src.read_bytes() == data
    assert listing(out) == sorted([*artifact_files(out), "slices/", "slices/01_big.onnx"])
    # compiling it again as two slices would write over it: refused, nothing touched
    before, before_parent, everything = listing(out), names(tmp_path), contents(out)
    code, err = compile_(capsys, src, out, "--planner", "even:2")
    assert code == 2
    line = one_error_line(err)
    assert "slices/01_big.onnx" in line and "the model being compiled" in line
    assert listing(out) == before and contents(out) == everything and names(tmp_path) == before_parent


def test_a_user_file_where_the_new_artifact_writes_refuses_the_compile(capsys, chain, tmp_path):
    out = tmp_path / "out"
    assert compile_(capsys, chain, out)[0] == 0
    (out / "slices" / "01_big.onnx").write_bytes(b"mine")  # not listed by the one-slice manifest
    before, before_parent, everything = listing(out), names(tmp_path), contents(out)
    code, err = compile_(capsys, chain, out, "--planner", "even:2")
    assert code == 2
    line = one_error_line(err)
    assert "refusing to replace" in line and "slices/01_big.onnx" in line and "hetcc did not write it" in line
    assert listing(out) == before and contents(out) == everything and names(tmp_path) == before_parent


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_workload_sub_artifacts_keep_user_files_too(tmp_path):
    out = tmp_path / "out"
    sub = out / "models" / "a"
    (sub / "slices").mkdir(parents=True)
    (sub / "manifest.json").write_text(json.dumps(
        {"schema": "hetcc.manifest/2", "variants": {"p": {"slices": [
            {"file": "slices/00_big.onnx", "sha256": sha(b"old slice"),
             "data": {"file": "slices/00_big.onnx.data"}}]}}}))
    (out / "manifest.json").write_text(json.dumps(
        {"schema": "hetcc.manifest/2", "kind": "workload", "workload": {"models": [
            {"dir": "models/a", "manifest_sha256": sha((sub / "manifest.json").read_bytes())}]}}))
    (sub / "slices" / "00_big.onnx").write_bytes(b"old slice")
    (sub / "costs.json").write_text('{"schema": "hetcc.costs/1"}')
    (sub / "README").write_text("about model a\n")
    with fsutil.atomic_directory(out) as tmp:
        (tmp / "manifest.json").write_text('{"schema": "hetcc.manifest/2"}')
    assert listing(out) == ["manifest.json", "models/", "models/a/", "models/a/README"]
    assert names(tmp_path) == ["out"]


def test_a_listed_slice_s_external_data_file_is_hetcc_s_to_drop(tmp_path):
    out = tmp_path / "out"
    (out / "slices").mkdir(parents=True)
    w = numpy_helper.from_array(np.eye(8, dtype=np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "s",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save_model(model, str(out / "slices" / "00_big.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="00_big.onnx.data", size_threshold=0)
    (out / "manifest.json").write_text(json.dumps(
        {"schema": "hetcc.manifest/2", "variants": {"p": {"slices": [
            {"file": "slices/00_big.onnx", "sha256": sha((out / "slices" / "00_big.onnx").read_bytes()),
             "data": {"file": "slices/00_big.onnx.data",
                      "sha256": sha((out / "slices" / "00_big.onnx.data").read_bytes())}}]}}}))
    (out / "slices" / "NOTES.md").write_text("beside the slices\n")
    assert listing(out) == ["manifest.json", "slices/", "slices/00_big.onnx", "slices/00_big.onnx.data",
                            "slices/NOTES.md"]
    with fsutil.atomic_directory(out) as tmp:
        (tmp / "manifest.json").write_text('{"schema": "hetcc.manifest/2"}')
    assert listing(out) == ["manifest.json", "slices/", "slices/NOTES.md"]
    assert names(tmp_path) == ["out"]


def test_recompiling_a_model_whose_slices_have_data_files(capsys, tmp_path, monkeypatch):
    from hetcc.passes import codegen

    monkeypatch.setattr(codegen, "EMBED_LIMIT_BYTES", 0)  # every slice keeps its weights beside it
    rng = np.random.default_rng(0)
    nodes, inits, prev = [], [], "x"
    for i in range(3):
        inits.append(numpy_helper.from_array(rng.standard_normal((32, 32)).astype(np.float32), f"w{i}"))
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"y{i}"]))
        prev = f"y{i}"
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 32])], inits)
    model = tmp_path / "w.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(model))
    out = tmp_path / "out"
    assert compile_(capsys, model, out, "--planner", "even:3")[0] == 0
    assert "slices/02_big.onnx.data" in listing(out)
    (out / "slices" / "NOTES.md").write_text("mine\n")
    for planner in ("even:2", "even:2", "even:3"):
        code, err = compile_(capsys, model, out, "--planner", planner)
        assert code == 0, err  # the old data files are hetcc's: no collision, none left over
        n = int(planner[-1])
        assert listing(out) == sorted(["costs.json", "manifest.json", "why.json", "slices/", "slices/NOTES.md",
                                       *[f"slices/{i:02d}_big.onnx{ext}" for i in range(n) for ext in ("", ".data")]])
        assert artifact_files(out)  # the slices are the manifest's
    assert names(tmp_path) == ["out", "w.onnx"]


# ------------------------------------------------------------------ M1: one swap, rolled back
def test_an_interrupt_between_the_two_renames_puts_the_old_artifact_back(capsys, chain, tmp_path, monkeypatch):
    out = tmp_path / "out"
    assert compile_(capsys, chain, out)[0] == 0
    (out / "NOTES.md").write_text("mine\n")
    before, before_parent, everything = listing(out), names(tmp_path), contents(out)
    real_replace = os.replace
    calls = []

    def replace_then_interrupt(src, dst):  # Ctrl-C lands just after the first rename
        calls.append((os.path.basename(src), os.path.basename(dst)))
        real_replace(src, dst)
        if len(calls) == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", replace_then_interrupt)
    code, err = compile_(capsys, chain, out, "--planner", "even:2")
    monkeypatch.undo()
    assert code == 130 and err.strip() == "hetcc: interrupted"
    assert calls[0][0] == "out" and calls[0][1].startswith(".out.old-")  # the swap was reached
    assert listing(out) == before and contents(out) == everything
    assert names(tmp_path) == before_parent


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_real_signal_between_the_two_renames_is_handled_after_the_swap(capsys, chain, tmp_path, monkeypatch, sig):
    out, ref = tmp_path / "out", tmp_path / "ref"
    assert compile_(capsys, chain, out)[0] == 0
    assert compile_(capsys, chain, ref, "--planner", "even:2")[0] == 0
    (out / "NOTES.md").write_text("mine\n")
    real_replace = os.replace
    calls = []

    def replace_then_signal(src, dst):
        calls.append(os.path.basename(src))
        real_replace(src, dst)
        if len(calls) == 1:
            if signal.getsignal(sig) == signal.SIG_DFL:  # unhandled, it would kill the test run
                raise AssertionError(f"{sig.name} is not handled during the swap")
            signal.raise_signal(sig)  # delivered to this process right after the first rename

    monkeypatch.setattr(os, "replace", replace_then_signal)
    code, err = compile_(capsys, chain, out, "--planner", "even:2")
    monkeypatch.undo()
    assert code == 128 + sig
    assert err.strip() == ("hetcc: interrupted" if sig == signal.SIGINT else "hetcc: terminated (SIGTERM)")
    assert calls[:2] == ["out", os.path.basename(calls[1])] and calls[1].startswith(".out.tmp-")
    # the swap ran to its end: the complete new artifact, the user's file, nothing beside it
    assert listing(out) == sorted([*listing(ref), "NOTES.md"]) and artifact_files(out) == artifact_files(ref)
    assert names(tmp_path) == ["chain.onnx", "out", "ref"]
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # main() put the handlers back
    assert signal.getsignal(signal.SIGINT) == signal.default_int_handler


def test_a_kill_between_the_two_renames_is_restored_by_the_next_compile(capsys, caplog, chain, tmp_path):
    out = tmp_path / "out"
    assert compile_(capsys, chain, out)[0] == 0
    (out / "NOTES.md").write_text("mine\n")
    old = contents(out)
    # what SIGKILL after the first rename leaves: no out, the old artifact hidden, the new one half-written
    os.replace(out, tmp_path / ".out.old-4242")
    (tmp_path / ".out.tmp-k1ll3d_x" / "slices").mkdir(parents=True)
    (tmp_path / ".out.tmp-k1ll3d_x" / "slices" / "00_big.onnx").write_bytes(b"half")
    # the killed write's lock names them (hetcc recovers only what a lock of its own names)
    (tmp_path / ".out.lock").write_text("hetcc.lock/1\ntmp .out.tmp-k1ll3d_x\nold .out.old-4242\n")
    assert names(tmp_path) == [".out.lock", ".out.old-4242", ".out.tmp-k1ll3d_x", "chain.onnx"]

    with caplog.at_level(logging.WARNING, logger="hetcc"):
        code, err = compile_(capsys, chain, out, "--planner", "even:2")
    assert code == 0, err
    notices = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(notices) == 1, notices
    assert notices[0].startswith(f"recovered from an interrupted write into {out}")
    assert "removed .out.tmp-k1ll3d_x" in notices[0] and "restored" in notices[0] and ".out.old-4242" in notices[0]
    assert (out / "NOTES.md").read_bytes() == old["NOTES.md"]
    assert listing(out) == sorted(["NOTES.md", *artifact_files(out), "slices/"])
    assert len(load_manifest(out).slices) == 2
    assert names(tmp_path) == ["chain.onnx", "out"]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="hetcc"):
        assert compile_(capsys, chain, out)[0] == 0
    assert not caplog.records  # nothing left to recover


def test_a_leftover_backup_beside_a_newer_artifact_gives_back_user_files_then_goes(capsys, caplog, chain, tmp_path):
    out = tmp_path / "out"
    assert compile_(capsys, chain, out)[0] == 0
    backup = tmp_path / ".out.old-77"
    assert compile_(capsys, chain, backup)[0] == 0
    (backup / "NOTES.md").write_text("only here\n")
    (tmp_path / ".out.lock").write_text("hetcc.lock/1\nold .out.old-77\n")     # a killed write's lock
    with caplog.at_level(logging.WARNING, logger="hetcc"):
        assert compile_(capsys, chain, out, "--planner", "even:2")[0] == 0
    assert len(caplog.records) == 1 and "removed .out.old-77" in caplog.records[0].getMessage()
    assert (out / "NOTES.md").read_text() == "only here\n"
    assert names(tmp_path) == ["chain.onnx", "out"]


def test_files_named_like_leftovers_but_not_hetccs_are_left_alone(capsys, chain, tmp_path):
    out = tmp_path / "out"
    (tmp_path / ".out.old-backup").mkdir()  # not .out.old-<pid>: made by hand
    (tmp_path / ".out.old-backup" / "x").write_text("x")
    assert compile_(capsys, chain, out)[0] == 0
    assert (tmp_path / ".out.old-backup" / "x").read_text() == "x"


# ------------------------------------------------------------------ M2: one writer at a time
def test_a_second_writer_is_refused_while_the_first_holds_the_lock(capsys, chain, tmp_path):
    out = tmp_path / "out"
    assert compile_(capsys, chain, out)[0] == 0
    before, everything = listing(out), contents(out)
    lock = tmp_path / ".out.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    try:
        os.write(fd, fsutil.LOCK_HEADER)          # as another hetcc writer's lock
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        (tmp_path / ".out.tmp-running1").mkdir()  # the holder's work in progress: not touched
        code, err = compile_(capsys, chain, out, "--planner", "even:2")
        assert code == 2
        assert one_error_line(err) == f"hetcc: error: another hetcc compile is writing {out}; wait for it or choose another -o"
        assert listing(out) == before and contents(out) == everything
        assert (tmp_path / ".out.tmp-running1").is_dir() and lock.exists()
        (tmp_path / ".out.tmp-running1").rmdir()
    finally:
        os.close(fd)
    code, err = compile_(capsys, chain, out, "--planner", "even:2")  # released: the next one writes
    assert code == 0, err
    assert names(tmp_path) == ["chain.onnx", "out"]


def test_the_lock_is_shared_by_every_spelling_of_the_directory(tmp_path, monkeypatch):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to("real")
    monkeypatch.chdir(tmp_path)
    with fsutil.atomic_directory("real/out") as tmp:
        (tmp / "manifest.json").write_text('{"schema": "hetcc.manifest/2"}')
        with pytest.raises(fsutil.UsageError, match="another hetcc compile is writing link/out"):
            with fsutil.atomic_directory("link/out"):
                pass
    assert listing(tmp_path / "real") == ["out/", "out/manifest.json"]


def test_a_fresh_artifact_gets_the_usual_directory_mode(tmp_path):
    with fsutil.atomic_directory(tmp_path / "out") as tmp:
        (tmp / "manifest.json").write_text('{"schema": "hetcc.manifest/2"}')
    assert stat.S_IMODE((tmp_path / "out").stat().st_mode) == 0o777 & ~fsutil._umask()
    os.chmod(tmp_path / "out", 0o750)
    with fsutil.atomic_directory(tmp_path / "out") as tmp:
        (tmp / "manifest.json").write_text('{"schema": "hetcc.manifest/2"}')
    assert stat.S_IMODE((tmp_path / "out").stat().st_mode) == 0o750
