"""Reproducible artifacts (docs/build-systems.md): two compiles of the same inputs and flags write
the same bytes; wall times only in the optional timings.json; the umask decides the modes;
--dump-after writes beside -o; --depfile is a Make rule naming every input, escaped."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnx.parser
import pytest
from onnx import numpy_helper

from hetcc.cli import main
from hetcc.compiler.depfile import make_escape, version_stamp
from hetcc.files.atomic import created_mode
from text_models import CHAIN, IDENTITY_CHAIN


def cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (relative POSIX path -> bytes)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def assert_same_tree(a: Path, b: Path) -> dict[str, bytes]:
    ta, tb = tree(a), tree(b)
    assert sorted(ta) == sorted(tb)
    differ = [rel for rel in ta if ta[rel] != tb[rel]]
    assert not differ, f"files differ between two compiles: {differ}"
    assert "manifest.json" in ta and any(r.endswith("costs.json") for r in ta)
    assert any(r.startswith("slices/") or "/slices/" in r for r in ta)
    return ta


@pytest.fixture
def model(tmp_path, write_text_model) -> Path:
    return write_text_model(IDENTITY_CHAIN, tmp_path / "m.onnx")


def _external_model(directory: Path, name: str = "m.onnx", location: str = "m.onnx.data") -> Path:
    """CHAIN with its weight stored as external data in ``location`` beside it."""
    directory.mkdir(parents=True, exist_ok=True)
    proto = onnx.parser.parse_model(CHAIN)
    w = numpy_helper.to_array(proto.graph.initializer[0])
    proto.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.ascontiguousarray(w), "w"))
    path = directory / name
    onnx.save(proto, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location=location,
              size_threshold=0)
    assert (directory / location).is_file()
    return path


# ---------------------------------------------------------------------------------------------
# byte-identical artifacts


@pytest.mark.parametrize("flags", [
    ["--objective", "energy", "--deadline", "medium", "--planner", "exact"],
    ["--objective", "energy", "--planner", "dp"],
    ["--objective", "latency", "--variants", "dp,exact"],
    ["--objective", "edp", "--target", "jetson-tx2", "--max-cut-tensors", "2"],
], ids=["exact", "dp", "variants", "jetson-k2"])
@pytest.mark.slow
def test_two_compiles_write_byte_identical_artifacts(capsys, tmp_path, model, flags):
    for out in ("a", "b"):
        code, _, err = cli(capsys, "compile", model, *flags, "-o", tmp_path / out)
        assert code == 0, err
    files = assert_same_tree(tmp_path / "a", tmp_path / "b")
    doc = json.loads(files["manifest.json"])
    for variant in doc["variants"].values():
        assert variant["planner"]["seconds"] is None            # the wall time is not in the manifest
        assert not {"seconds", "wall_s"} & set(variant["planner"]["stats"])
    assert "timings.json" not in files


@pytest.mark.slow
def test_identical_across_processes_and_hash_seeds(tmp_path, model):
    # string hashing differs between the two processes: no set order may leak into a file
    for out, seed in (("a", "1"), ("b", "2")):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        r = subprocess.run([sys.executable, "-m", "hetcc.cli", "compile", str(model), "--objective", "energy",
                            "--deadline", "long", "--variants", "exact,dp", "-o", str(tmp_path / out), "-q"],
                           capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 0, r.stderr
    assert_same_tree(tmp_path / "a", tmp_path / "b")


def test_workload_artifacts_are_byte_identical(capsys, tmp_path, write_text_model):
    m1 = write_text_model(CHAIN, tmp_path / "one.onnx")
    m2 = write_text_model(IDENTITY_CHAIN, tmp_path / "two.onnx")
    for out in ("a", "b"):
        assert cli(capsys, "compile", m1, m2, "--objective", "latency", "-o", tmp_path / out)[0] == 0
    files = assert_same_tree(tmp_path / "a", tmp_path / "b")
    assert {"models/one/manifest.json", "models/two/manifest.json"} <= set(files)


def test_external_data_slices_are_byte_identical(capsys, tmp_path):
    m = _external_model(tmp_path / "src")
    for out in ("a", "b"):
        assert cli(capsys, "compile", m, "-o", tmp_path / out)[0] == 0
    assert_same_tree(tmp_path / "a", tmp_path / "b")


def test_timings_json_is_the_only_difference_and_inspect_reads_it(capsys, tmp_path, model):
    flags = ["--objective", "energy", "--deadline", "medium", "--planner", "exact"]
    assert cli(capsys, "compile", model, *flags, "-o", tmp_path / "plain")[0] == 0
    assert cli(capsys, "compile", model, *flags, "-o", tmp_path / "timed", "--timings")[0] == 0
    plain, timed = tree(tmp_path / "plain"), tree(tmp_path / "timed")
    assert sorted(timed) == sorted([*plain, "timings.json"])
    assert all(plain[rel] == timed[rel] for rel in plain)
    doc = json.loads(timed["timings.json"])
    assert doc["schema"] == "hetcc.timings/1" and set(doc["planner_seconds"]) == {"exact"}
    assert doc["planner_seconds"]["exact"] > 0 and "seconds" in doc["planner_stats"]["exact"]
    assert {"load", "partition"} <= {p["name"] for p in doc["passes"]}

    code, out, _ = cli(capsys, "inspect", tmp_path / "timed")
    assert code == 0 and f"planner exact ({doc['planner_seconds']['exact'] * 1e3:.1f} ms)" in out
    code, out, _ = cli(capsys, "inspect", tmp_path / "plain")
    assert code == 0 and "planner exact\n" in out             # no time to show, none invented

    # timings.json is hetcc's own file: a recompile without --timings drops it
    assert cli(capsys, "compile", model, *flags, "-o", tmp_path / "timed")[0] == 0
    assert tree(tmp_path / "timed") == plain


def test_damaged_timings_json_is_one_line(capsys, tmp_path, model):
    assert cli(capsys, "compile", model, "-o", tmp_path / "a", "--timings")[0] == 0
    (tmp_path / "a" / "timings.json").write_text('{"schema": "hetcc.timings/1", "planner_seconds": {"dp": -1}}')
    code, _, err = cli(capsys, "inspect", tmp_path / "a")
    assert code == 2 and err.count("\n") == 1 and "timings.json" in err and "planner_seconds" in err


# ---------------------------------------------------------------------------------------------
# the umask


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_artifact_modes_follow_the_umask(capsys, tmp_path, model, mask):
    old = os.umask(mask)
    try:
        assert created_mode("file") == 0o666 & ~mask and created_mode("dir") == 0o777 & ~mask
        out = tmp_path / "art"
        code, _, err = cli(capsys, "compile", model, "-o", out, "--depfile", tmp_path / "art.d",
                           "--dump-after", "layers", "--timings")
    finally:
        os.umask(old)
    assert code == 0, err
    dirs = [out, *(p for p in out.rglob("*") if p.is_dir())]
    files = [p for p in out.rglob("*") if p.is_file()] + [tmp_path / "art.d", tmp_path / "art.dump-layers.json"]
    assert len(dirs) >= 2 and len(files) >= 5
    for d in dirs:
        assert stat.S_IMODE(d.stat().st_mode) == 0o777 & ~mask, d
    for f in files:
        assert stat.S_IMODE(f.stat().st_mode) == 0o666 & ~mask, f


def test_recompile_keeps_the_directory_mode(capsys, tmp_path, model):
    out = tmp_path / "art"
    assert cli(capsys, "compile", model, "-o", out)[0] == 0
    out.chmod(0o750)
    assert cli(capsys, "compile", model, "-o", out, "--objective", "energy")[0] == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o750


# ---------------------------------------------------------------------------------------------
# --dump-after


def test_dump_after_writes_beside_the_artifact(capsys, tmp_path, model, monkeypatch):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    out = tmp_path / "build" / "art"
    code, stdout, err = cli(capsys, "compile", model, "-o", out, "--dump-after", "layers")
    assert code == 0, err
    dump = tmp_path / "build" / "art.dump-layers.json"
    assert json.loads(dump.read_text())["layers"]
    assert f"dumped the analyses after layers to {dump}" in stdout
    assert list(cwd.iterdir()) == []                            # nothing in the current directory
    assert not any("dump" in p.name for p in out.rglob("*"))    # nor inside the artifact


def test_dump_after_without_output_stays_in_the_current_directory(capsys, tmp_path, model, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, stdout, _ = cli(capsys, "compile", model, "--dump-after", "costs")
    assert code == 0 and (tmp_path / "hetcc-dump-costs.json").is_file()
    assert "hetcc-dump-costs.json" in stdout


# ---------------------------------------------------------------------------------------------
# --depfile


def _rule(text: str) -> tuple[str, list[str]]:
    """(target, prerequisites) of a depfile's first rule, still escaped."""
    body = text.split("\n\n")[0]
    lines = [ln for ln in body.splitlines() if not ln.startswith("#")]
    joined = " ".join(ln.rstrip("\\").strip() for ln in lines)
    target, _, deps = joined.partition(": ")
    return target, deps.split()


def test_depfile_names_model_data_target_and_version_stamp(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _external_model(tmp_path / "src")
    code, stdout, err = cli(capsys, "compile", "src/m.onnx", "-o", "build/art", "--depfile", "build/art.d")
    assert code == 0, err
    text = (tmp_path / "build" / "art.d").read_text()
    target, deps = _rule(text)
    from hetcc.targets import load_target

    assert target == "build/art/manifest.json"
    assert deps == ["src/m.onnx", "src/m.onnx.data", str(load_target("hikey970").path), str(version_stamp())]
    for d in deps:
        assert f"\n{d}:\n" in text                              # gcc -MP: a deleted input is no error
    assert "wrote the depfile build/art.d" in stdout


def test_depfile_escapes_paths_for_make(capsys, tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    src = tmp_path / "my models"
    m = _external_model(src, name="net #1.onnx", location="w$eights:v1.bin")
    board = tmp_path / "my boards" / "hi key.toml"
    board.parent.mkdir()
    shutil.copy(load_builtin("hikey970"), board)
    dep = tmp_path / "dep.d"
    out = tmp_path / "out dir"
    assert cli(capsys, "compile", m, "--target", board, "-o", out, "--depfile", dep)[0] == 0
    text = dep.read_text()
    assert make_escape(str(m)) in text and "net\\ \\#1.onnx" in text and "w$$eights\\:v1.bin" in text
    # make itself reads the rule: up to date now, out of date once any input is newer
    mk = tmp_path / "Makefile"
    mk.write_text(f"include {make_escape(str(dep))}\n{make_escape(str(out))}/manifest.json:\n\t@exit 1\n")

    def up_to_date() -> bool:
        r = subprocess.run(["make", "-q", "-f", str(mk), f"{out}/manifest.json"], capture_output=True, text=True)
        assert r.returncode in (0, 1), r.stderr
        return r.returncode == 0

    assert up_to_date()
    newer = (out / "manifest.json").stat().st_mtime + 10
    for path in (src / "w$eights:v1.bin", board, m):
        before = path.stat()
        os.utime(path, (newer, newer))
        assert not up_to_date(), path
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert up_to_date()


def load_builtin(name: str) -> Path:
    from hetcc.targets import load_target

    return Path(load_target(name).path)


def test_depfile_refusals(capsys, tmp_path, model):
    code, _, err = cli(capsys, "compile", model, "--depfile", tmp_path / "x.d")
    assert code == 2 and err.count("\n") == 1 and "--depfile needs -o" in err
    (tmp_path / "adir").mkdir()
    code, _, err = cli(capsys, "compile", model, "-o", tmp_path / "o", "--depfile", tmp_path / "adir")
    assert code == 2 and err.count("\n") == 1 and "--depfile" in err and not (tmp_path / "o").exists()
    code, _, err = cli(capsys, "compile", model, "-o", tmp_path / "50%", "--depfile", tmp_path / "p.d")
    assert code == 2 and "'%'" in err and not (tmp_path / "50%").exists()


def test_failed_compile_writes_no_depfile(capsys, tmp_path, model):
    dep = tmp_path / "art.d"
    code, _, err = cli(capsys, "compile", model, "--deadline", "0.000001ms", "-o", tmp_path / "art",
                       "--depfile", dep)
    assert code == 3, err
    assert not dep.exists() and not (tmp_path / "art").exists()


def test_targets_json_gives_each_builtin_file(capsys):
    code, out, _ = cli(capsys, "targets", "--json")
    rows = json.loads(out)
    assert code == 0 and rows
    for row in rows:
        path = Path(row["path"])
        assert path.is_absolute() and path.is_file() and path.name == f"{row['name']}.toml"
    code, out, _ = cli(capsys, "targets", "hikey970", "--json")
    assert Path(json.loads(out)["path"]) == Path(rows[0]["path"]).with_name("hikey970.toml")
