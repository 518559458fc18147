"""The CLI on bad input: one line naming the culprit, the documented exit code, no partial output."""
from __future__ import annotations

import json

import pytest

from hetcc.cli import main
from text_models import CHAIN
from boards import board_text, device


DYN = """<ir_version: 8, opset_import: ["" : 17]>
dyn (float[N,8] x) => (float[N,8] y) {
    y = Relu(x)
}
"""

ONLY_RELU = board_text("onlyrelu", "a test board whose single device runs Relu and MatMul only",
                       devices={"cpu": device(supported_ops=["Relu", "MatMul"])})


@pytest.fixture
def chain(tmp_path, write_text_model):
    return str(write_text_model(CHAIN, tmp_path / "chain.onnx"))


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(err, *needles):
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("hetcc: error: ")
    for n in needles:
        assert n in lines[0], lines[0]


def test_compile_ok_writes_artifact(capsys, chain, tmp_path):
    out = tmp_path / "build"
    code, stdout, _ = run(capsys, "compile", chain, "--target", "hikey970", "-o", str(out), "--json")
    assert code == 0
    summary = json.loads(stdout)
    assert summary["layers"] == 4 and (out / "manifest.json").exists() and (out / "costs.json").exists()
    code, stdout, _ = run(capsys, "inspect", str(out), "--json")
    assert code == 0 and json.loads(stdout)["schema"] == "hetcc.manifest/2"
    code, stdout, _ = run(capsys, "run", str(out), "--verify")
    assert code == 0 and "outputs match" in stdout


def test_missing_model(capsys, tmp_path):
    code, _, err = run(capsys, "compile", str(tmp_path / "nope.onnx"), "-o", str(tmp_path / "o"))
    assert code == 2
    assert_one_line_error(err, "nope.onnx", "no such file")
    assert not (tmp_path / "o").exists()


def test_not_onnx(capsys, tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_text("hello, I am not a model")
    code, _, err = run(capsys, "compile", str(bad), "-o", str(tmp_path / "o"))
    assert code == 2
    assert_one_line_error(err, "bad.onnx")
    assert not (tmp_path / "o").exists()


def test_unknown_target(capsys, chain, tmp_path):
    code, _, err = run(capsys, "compile", chain, "--target", "hikey971", "-o", str(tmp_path / "o"))
    assert code == 2
    assert_one_line_error(err, "hikey971", "hikey970")


def test_dynamic_dim_needs_input_shape(capsys, tmp_path, write_text_model):
    m = str(write_text_model(DYN, tmp_path / "dyn.onnx"))
    code, _, err = run(capsys, "compile", m, "-o", str(tmp_path / "o"))
    assert code == 2
    assert_one_line_error(err, "--input-shape x=1x8", "'N'")
    code, _, _ = run(capsys, "compile", m, "--input-shape", "x=2x8", "-o", str(tmp_path / "o"))
    assert code == 0


def test_malformed_input_shape(capsys, chain, tmp_path):
    code, _, err = run(capsys, "compile", chain, "--input-shape", "x=1xZ", "-o", str(tmp_path / "o"))
    assert code == 2
    assert_one_line_error(err, "--input-shape")


@pytest.mark.parametrize("bad", ["fast", "170 parsecs", "-5ms", "0", "ms"])
def test_malformed_deadline(capsys, chain, tmp_path, bad):
    code, _, err = run(capsys, "compile", chain, f"--deadline={bad}", "-o", str(tmp_path / "o"))
    assert code == 2
    assert_one_line_error(err, "--deadline")


@pytest.mark.parametrize("good,ms", [("170ms", 170.0), ("0.17s", 170.0), ("170", 170.0), ("2.5e2ms", 250.0)])
def test_deadline_forms(good, ms):
    from hetcc.compiler.api import parse_deadline

    assert parse_deadline(good) == (pytest.approx(ms), None)


@pytest.mark.parametrize("good,mw", [("5W", 5000.0), ("5000mW", 5000.0), ("5", 5000.0), ("0.5w", 500.0)])
def test_power_forms(good, mw):
    from hetcc.compiler.api import parse_power

    assert parse_power(good) == pytest.approx(mw)


def test_unmeetable_deadline_exit_3_says_fastest(capsys, chain, tmp_path):
    out = tmp_path / "o"
    code, _, err = run(capsys, "compile", chain, "--objective", "energy", "--deadline", "0.000001ms", "-o", str(out))
    assert code == 3
    assert_one_line_error(err, "fastest reachable latency")
    assert not out.exists()


def test_failed_compile_keeps_previous_artifact(capsys, chain, tmp_path):
    out = tmp_path / "o"
    assert run(capsys, "compile", chain, "-o", str(out))[0] == 0
    before = (out / "manifest.json").read_bytes()
    code, _, _ = run(capsys, "compile", chain, "--objective", "energy", "--deadline", "1e-9ms", "-o", str(out))
    assert code == 3
    assert (out / "manifest.json").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp dirs left


def test_refuses_to_overwrite_foreign_directory(capsys, chain, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    code, _, err = run(capsys, "compile", chain, "-o", str(out))
    assert code == 2
    assert_one_line_error(err, "refusing to overwrite")
    assert (out / "thesis.tex").read_text() == "precious"


def test_layer_legal_on_no_device_exit_3(capsys, chain, tmp_path):
    board = tmp_path / "onlyrelu.toml"
    board.write_text(ONLY_RELU)
    code, _, err = run(capsys, "compile", chain, "--target", str(board), "-o", str(tmp_path / "o"))
    assert code == 3
    assert_one_line_error(err, "Sigmoid", "legal on no device")
    assert not (tmp_path / "o").exists()


def test_energy_on_host_is_refused(capsys, chain, tmp_path):
    code, _, err = run(capsys, "compile", chain, "--target", "host", "--objective", "energy")
    assert code == 2
    assert_one_line_error(err, "no power model")


def test_unknown_planner(capsys, chain):
    code, _, err = run(capsys, "compile", chain, "--planner", "magic")
    assert code == 2
    assert_one_line_error(err, "magic", "exact")


def test_run_missing_artifact(capsys, tmp_path):
    code, _, err = run(capsys, "run", str(tmp_path / "nothing"))
    assert code == 2
    assert_one_line_error(err, "nothing")


def test_targets_lists_modelled_and_measured(capsys):
    code, out, _ = run(capsys, "targets")
    assert code == 0
    assert "hikey970" in out and "host" in out and "measured" in out and "modelled" in out
    code, out, _ = run(capsys, "targets", "hikey970")
    assert code == 0 and "25 device states" in out


def test_inspect_table_and_plot(capsys, chain, tmp_path):
    out = tmp_path / "build"
    assert run(capsys, "compile", chain, "--objective", "energy", "--planner", "even:2", "-o", str(out))[0] == 0
    code, stdout, _ = run(capsys, "inspect", str(out))
    assert code == 0
    assert "slice" in stdout and "L0-L" in stdout and "total:" in stdout and "mJ" in stdout
    png = tmp_path / "plan.png"
    code, _, err = run(capsys, "inspect", str(out), "--plot", str(png))
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert code == 2
        assert_one_line_error(err, "matplotlib")
    else:
        assert code == 0 and png.stat().st_size > 0


def test_verbose_prints_every_pass(capsys, chain):
    code, stdout, _ = run(capsys, "compile", chain, "--verbose")
    assert code == 0
    for name in ("shapes", "constants", "layers", "legality", "costs", "partition"):
        assert f"pass {name}" in stdout


def test_dump_after_writes_the_analyses(capsys, chain, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "compile", chain, "--dump-after", "layers")[0] == 0
    dump = json.loads((tmp_path / "hetcc-dump-layers.json").read_text())
    assert {"tensors", "constants", "layers"} <= set(dump) and "costs" not in dump
    assert len(dump["layers"]) == 4


def test_dump_after_unknown_pass(capsys, chain):
    code, _, err = run(capsys, "compile", chain, "--dump-after", "nonsense")
    assert code == 2
    assert_one_line_error(err, "nonsense", "layers")
