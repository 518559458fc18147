"""A real ``hetcc compile`` killed or interrupted mid-write (docs/output-safety.md): SIGTERM and
SIGINT leave the old artifact intact or the new one complete and nothing beside it; SIGKILL's
leftovers are cleaned up by the next compile, with one notice; two compiles into one directory
never crash. The signal is sent when the compile is observably at a point (its temporary
directory appears, or --verbose reports a pass); a compile that finishes first is retried."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from hetcc.cli import main

#: slow: real compiles of a 14 MB model, several per test
pytestmark = [pytest.mark.slow]

LAYERS, WIDTH = 6, 768  # ~14 MB of weights: writing the slices takes long enough to catch
NEW = ["--planner", f"even:{LAYERS}"]
TERM_LINE = {signal.SIGTERM: "hetcc: terminated (SIGTERM)", signal.SIGINT: "hetcc: interrupted"}


def listing(root) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        out += [os.path.normpath(os.path.join(rel, d)) + "/" for d in dirnames]
        out += [os.path.normpath(os.path.join(rel, f)) for f in filenames]
    return sorted(out)


def contents(root) -> dict[str, bytes]:
    return {p: (Path(root) / p).read_bytes() for p in listing(root) if not p.endswith("/")}


def names(root) -> list[str]:
    return sorted(os.listdir(root))


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """(model, old artifact to copy, listing a complete new artifact has, its hetcc files)."""
    base = tmp_path_factory.mktemp("signals")
    rng = np.random.default_rng(0)
    nodes, inits, prev = [], [], "x"
    for i in range(LAYERS):
        inits.append(numpy_helper.from_array(rng.standard_normal((WIDTH, WIDTH)).astype(np.float32), f"w{i}"))
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"]))
        prev = "y" if i == LAYERS - 1 else f"r{i}"
        nodes.append(helper.make_node("Relu", [f"m{i}"], [prev]))
    graph = helper.make_graph(nodes, "wide", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, WIDTH])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, WIDTH])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    path = base / "wide.onnx"
    onnx.save(model, str(path))
    old, ref = base / "old", base / "ref"
    assert main(["compile", str(path), "--target", "hikey970", "-o", str(old), "--quiet", "--planner", "even:2"]) == 0
    (old / "NOTES.md").write_text("my notes\n")
    assert main(["compile", str(path), "--target", "hikey970", "-o", str(ref), "--quiet", *NEW]) == 0
    return path, old, sorted([*listing(ref), "NOTES.md"]), contents(ref)


def spawn(cwd: Path, *argv: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "hetcc.cli", *argv], cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def compile_argv(model: Path, *extra: str) -> list[str]:
    return ["compile", str(model), "--target", "hikey970", "-o", "out", *extra]


def writing(work: Path) -> bool:
    return any(n.startswith(".out.tmp-") for n in os.listdir(work))


def wait_until(pred, proc: subprocess.Popen) -> bool:
    """True once ``pred()`` holds, False if the process ended first (no clock: the test's own
    time limit bounds a process that never gets there)."""
    while True:
        if pred():
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.0005)


def fresh(tmp_path: Path, old: Path, attempt: int) -> Path:
    work = tmp_path / f"try{attempt}"
    work.mkdir()
    shutil.copytree(old, work / "out")
    return work


def assert_old_or_new(work: Path, old: dict, new_listing: list[str], new: dict) -> str:
    """``out`` is the old artifact byte for byte, or the complete new one (plus NOTES.md)."""
    got = contents(work / "out")
    if got == old:
        return "old"
    assert listing(work / "out") == new_listing
    assert {k: v for k, v in got.items() if k != "manifest.json"} == \
        {**{k: v for k, v in new.items() if k != "manifest.json"}, "NOTES.md": b"my notes\n"}
    return "new"


def interrupt_a_compile(setup, tmp_path: Path, sig: int, flag: str, send) -> None:
    """Compile over the old artifact and ``send(proc, work)`` ``sig`` at some point, until a
    try is interrupted (up to 4): then exit 128 + sig with its one line, nothing beside ``out``,
    and ``out`` the old artifact or the complete new one."""
    model, old, new_listing, new = setup
    old_files = contents(old)
    for attempt in range(4):
        work = fresh(tmp_path, old, attempt)
        assert names(work) == ["out"] and contents(work / "out") == old_files
        proc = spawn(work, *compile_argv(model, flag, *NEW))
        send(proc, work)
        _, err = proc.communicate(timeout=600)
        assert names(work) == ["out"], err  # no .out.tmp-, .out.old- or .out.lock left
        if proc.returncode in (0, -sig):  # done before the signal, or it came after main() returned
            assert assert_old_or_new(work, old_files, new_listing, new) == "new"
            continue
        assert proc.returncode == 128 + sig, err
        assert err.strip().splitlines() == [TERM_LINE[sig]]
        assert assert_old_or_new(work, old_files, new_listing, new) in ("old", "new")
        return
    pytest.fail("the compile always finished before the signal")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_while_writing_keeps_the_old_artifact_and_leaves_nothing(setup, tmp_path, sig):
    def send(proc, work):
        if wait_until(lambda: writing(work), proc):
            proc.send_signal(sig)
    interrupt_a_compile(setup, tmp_path, sig, "--quiet", send)


def test_sigterm_while_planning_exits_143_and_touches_nothing(setup, tmp_path):
    def send(proc, work):
        for line in proc.stdout:
            if "pass" in line and "load" in line:  # the model is read; planning goes on
                proc.send_signal(signal.SIGTERM)
                break
    interrupt_a_compile(setup, tmp_path, signal.SIGTERM, "--verbose", send)


def test_sigkill_leftovers_are_cleaned_by_the_next_compile(setup, tmp_path):
    model, old, new_listing, new = setup
    old_files = contents(old)
    for attempt in range(4):
        work = fresh(tmp_path, old, attempt)
        proc = spawn(work, *compile_argv(model, "--quiet", *NEW))
        if wait_until(lambda: writing(work), proc):
            proc.kill()
        proc.communicate(timeout=600)
        if proc.returncode == 0:
            continue
        assert proc.returncode == -signal.SIGKILL
        left = [n for n in names(work) if n != "out"]
        assert left and all(n.startswith((".out.tmp-", ".out.old-")) or n == ".out.lock" for n in left), left
        assert_old_or_new(work, old_files, new_listing, new)
        # the next compile into out restores or removes them, says so once, and writes
        proc = spawn(work, *compile_argv(model, "--quiet", *NEW))
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("hetcc: WARNING: recovered from an interrupted write into out: "), err
        assert any(n in lines[0] for n in left if n != ".out.lock")
        assert names(work) == ["out"]
        assert assert_old_or_new(work, old_files, new_listing, new) == "new"
        return
    pytest.fail("the compile always finished before the kill")


def test_simultaneous_compiles_into_one_directory_never_crash(setup, tmp_path):
    model, _, new_listing, new = setup
    procs = [spawn(tmp_path, *compile_argv(model, "--quiet", *NEW)) for _ in range(2)]
    results = [(p.wait(timeout=600), p.communicate()[1]) for p in procs]
    codes = sorted(code for code, _ in results)
    assert set(codes) <= {0, 2} and codes[0] == 0, results
    for code, err in results:
        if code == 2:  # lost the race: one line, nothing touched
            assert err.strip().splitlines() == [
                "hetcc: error: another hetcc compile is writing out; wait for it or choose another -o"]
        else:
            assert err == ""
    assert names(tmp_path) == ["out"]
    assert listing(tmp_path / "out") == [p for p in new_listing if p != "NOTES.md"]
