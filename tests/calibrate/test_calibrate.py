"""hetcc calibrate: recovers known parameters from observations the model itself generated, writes
a board that loads and predicts what was printed (comments kept), and refuses in one line."""
from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from hetcc.measure.calibrate import Board, Calibration, board_parameters, predict_observations, forced_optima as _forced
from hetcc.cli import main
from hetcc.measure.observations import read_observations, write_observations
from hetcc.targets import load_target

from extras import needs

pytestmark = pytest.mark.calibrate
needs("calibrate", "scipy", "tomlkit")

#: the board these tests fit (as conftest.BOARD): the hand-set prior of hikey970, a file that stays put
BOARD = str(Path(__file__).resolve().parents[2] / "targets" / "observations" / "hikey970-prior.toml")


def run(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(["calibrate", *map(str, args), "-q"])
    out, err = capsys.readouterr()
    return rc, out, err


def free_args(names) -> list[str]:
    return [a for n in names for a in ("--free", n)]


def test_parameters_are_enumerated_from_the_document():
    names = [p.name for p in Board.load(BOARD).params]
    assert names[0] == "base_power_mw"
    for n in ("big.peak_gflops.conv", "big.int8_peak_gops.other", "gpu.transfer.beta_ms_per_mb",
              "gpu.transfer.delta_ms", "npu.mem_bandwidth_gbps", "little.layer_overhead_ms",
              "little.node_overhead_ms", "gpu.dynamic_power_mw", "gpu.static_power_mw", "npu.static_power_mw"):
        assert n in names
    # a key a file adds (an op class, a level's own transfer) is a parameter without code changes
    doc = {"base_power_mw": 1000, "devices": {"x": {
        "peak_gflops": {"conv": 1.0, "dwconv": 2.0}, "dvfs": [
            {"freq_mhz": 100.0, "static_power_mw": 5.0, "transfer": {"beta_ms_per_mb": 0.5, "delta_ms": 0.1}},
            {"freq_mhz": 200.0, "static_power_mw": 10.0}]}}}
    params = {p.name: p for p in board_parameters(doc)}
    assert {"x.peak_gflops.dwconv", "x@100.transfer.beta_ms_per_mb", "x@100.transfer.delta_ms"} <= set(params)
    static = params["x.static_power_mw"]
    assert static.x0 == 10.0 and [s for _, s in static.slots] == [0.5, 1.0]   # one factor on every level


@pytest.mark.slow
def test_fit_recovers_known_parameters_and_the_file_round_trips(synthetic, capsys, tmp_path):
    d = synthetic["dir"]
    out = tmp_path / "fitted.toml"
    rc, text, err = run(capsys, BOARD, d / "synth.csv", "-o", out, "--json", *free_args(synthetic["truth"]))
    assert rc == 0, err
    doc = json.loads(text)
    fitted = {p["name"]: p for p in doc["parameters"]}
    for name, want in synthetic["truth"].items():
        assert fitted[name]["status"] == "fitted"
        assert fitted[name]["after"] == pytest.approx(want, rel=0.01), name
    assert doc["summary"]["after"]["latency"]["mape_pct"] < 0.01
    assert doc["summary"]["before"]["latency"]["mape_pct"] > 5
    # the written board loads and predicts what was printed
    load_target(out)
    again = predict_observations(out, d / "synth.csv")
    printed = [r["predicted"] for r in doc["observations"]]
    assert again == pytest.approx(printed, rel=1e-12)
    written = out.read_text()
    assert "},     # Table II; 250*(0.6/1.0)^2" in written             # the board's comments are kept
    assert "static_power_mw = 113.4 },    # fitted: static_power_mw was 81.0 -- Table II; 200*(0.7/1.1)^2" in written
    assert re.search(r"^layer_overhead_ms = 0\.15 +# fitted by hetcc calibrate from synth\.csv \(39 observations\), "
                     r"was 0\.1 -- calibrated, see above$", written, re.M), written
    assert ("peak_gflops = { conv = 234.0, matmul = 80.0, other = 10.0, dwconv = 100.0, pwconv = 40.0, "
            "dwconv_large = 1.0 }  # fitted by hetcc calibrate") in written
    # the GPU's int8 conv rate follows its fitted float rate: the file's speed-up (1x) is kept
    assert ("int8_peak_gops = { conv = 234.0, matmul = 80.0, other = 10.0 }  # fitted by hetcc calibrate from "
            "synth.csv (39 observations): conv was 180.0, scaled with gpu.peak_gflops.conv (the int8 speed-up "
            "kept)") in written
    assert fitted["gpu.int8_peak_gops.conv"]["status"] == "scaled"
    assert load_target(out).device("gpu").int8_speedup("conv") == pytest.approx(1.0)


@pytest.mark.slow
def test_set_puts_a_parameter_at_a_value_and_the_fit_recovers_the_rest(synthetic, capsys, tmp_path):
    """--set NAME=VALUE: the parameter is written at VALUE, noted as set (not fitted), and the
    fit runs around it: with it set to its true value the others are recovered exactly."""
    d = synthetic["dir"]
    truth = synthetic["truth"]
    out = tmp_path / "set.toml"
    others = [n for n in truth if n != "base_power_mw"]
    rc, text, err = run(capsys, BOARD, d / "synth.csv", "-o", out, "--json", *free_args(others),
                        "--set", f"base_power_mw={truth['base_power_mw']}")
    assert rc == 0, err
    fitted = {p["name"]: p for p in json.loads(text)["parameters"]}
    for name in others:
        assert fitted[name]["after"] == pytest.approx(truth[name], rel=0.01), name
    assert load_target(out).base_power_mw == pytest.approx(truth["base_power_mw"])
    assert re.search(rf"^base_power_mw = 2400\.0 +# set by hetcc calibrate --set base_power_mw=2400, was "
                     rf"2000\.0", out.read_text(), re.M), out.read_text()
    # set to a wrong value, the value is really held: the others run to their bounds making up for it
    msg = one_line_refusal(capsys, tmp_path / "zero.toml", BOARD, d / "synth.csv", *free_args(others),
                           "--set", "base_power_mw=0")
    assert "the fit pushed big.static_power_mw to its bound" in msg


@pytest.mark.parametrize("arg, message", [
    ("base_power_mw", "malformed --set 'base_power_mw'; write NAME=VALUE"),
    ("base_power_mw=lots", "malformed --set 'base_power_mw=lots'"),
    ("base_power_mw=-5", "--set 'base_power_mw=-5': a board's numbers are >= 0"),
    ("base_power_mv=0", "has no parameter 'base_power_mv' (did you mean 'base_power_mw'?)"),
])
def test_bad_set_is_one_line_exit_2(synthetic, capsys, tmp_path, arg, message):
    msg = one_line_refusal(capsys, tmp_path / "f.toml", BOARD, synthetic["dir"] / "synth.csv",
                           "--free", "gpu.peak_gflops.conv", "--set", arg)
    assert message in msg


def test_set_and_bound_on_one_parameter_is_refused(synthetic, capsys, tmp_path):
    msg = one_line_refusal(capsys, tmp_path / "f.toml", BOARD, synthetic["dir"] / "synth.csv",
                           "--set", "base_power_mw=100", "--bound", "base_power_mw=50:200")
    assert "--set base_power_mw and --bound base_power_mw: a set parameter is not fitted" in msg


def test_table_output(synthetic, capsys, tmp_path):
    d = synthetic["dir"]
    rc, text, err = run(capsys, BOARD, d / "synth.csv", "-o", tmp_path / "f.toml",
                        "--free", "gpu.peak_gflops.conv", "--free", "gpu.node_overhead_ms")
    assert rc == 0, err
    assert "synth.csv:3" in text and "latency: 24 rows, MAPE" in text and "gpu.peak_gflops.conv" in text
    assert f"wrote {tmp_path / 'f.toml'}" in text


def one_line_refusal(capsys, out: Path, *args) -> str:
    rc, text, err = run(capsys, *args, "-o", out)
    assert rc == 2, (text, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hetcc: error: "), err
    assert not out.exists()                   # no partial output
    return lines[0]


def test_refuses_a_parameter_at_its_bound(synthetic, capsys, tmp_path):
    msg = one_line_refusal(capsys, tmp_path / "f.toml", BOARD, synthetic["dir"] / "synth.csv",
                           "--free", "gpu.peak_gflops.conv", "--bound", "gpu.peak_gflops.conv=100:150")
    assert ("the fit pushed gpu.peak_gflops.conv to its bound 150 GFLOP/s: the observations want it higher; widen "
            "it with --bound gpu.peak_gflops.conv=LO:HI or fix it with --fix gpu.peak_gflops.conv") in msg


def reuse_fits(monkeypatch) -> None:
    """``hetcc calibrate`` run again with the same board, observations and options (another -o,
    another output format) prints the first run's fit instead of fitting again: the fit is
    deterministic, and what such a test checks is the printing."""
    import hetcc.cli.calibrate as command

    real, done = command.calibrate, {}

    def calibrate(board, observation_files, output, **kw):
        key = repr((board, list(observation_files), sorted((k, v) for k, v in kw.items() if k != "progress")))
        if key not in done:
            done[key] = real(board, observation_files, output, **kw)
        else:
            Path(output).write_text(done[key][2], encoding="utf-8")
        return done[key]

    monkeypatch.setattr(command, "calibrate", calibrate)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_without_free_the_fit_keeps_what_the_data_cannot_pin_down_at_the_files_value(synthetic, capsys, tmp_path,
                                                                                      monkeypatch):
    """No --free: every parameter a row moves is a candidate, and those the fit pushes to a bound
    or cannot separate are kept at the file's value, each named with why (a fit over all of them
    is refused); the rest are fitted and the written board predicts what was printed.

    The synthetic rows cannot tell the NPU's matmul and other rates apart (no row prices them
    separately), so some parameter is always dropped as not separated or not determined. Whether
    a first fit over all candidates also wanders to a bound along those undetermined directions
    depends on the floating-point path of the solver (numpy, scipy, BLAS): it did where this test
    was written and does not with numpy 2.4 / scipy 1.15-1.17 here, so the bound branch is checked
    where it is certain instead (the next test: the truth lies outside the bounds)."""
    reuse_fits(monkeypatch)
    d = synthetic["dir"]
    out = tmp_path / "auto.toml"
    rc, text, err = run(capsys, BOARD, d / "synth.csv", "-o", out, "--json")
    assert rc == 0, err
    doc = json.loads(text)
    params = {p["name"]: p for p in doc["parameters"]}
    dropped = {n: p for n, p in params.items() if p["status"] == "dropped"}
    assert dropped and all(p["why"] for p in dropped.values())
    assert all(re.search("pushed it to its bound|not separated from|not determined", p["why"]) for p in dropped.values())
    assert any("not separated from" in p["why"] or "not determined" in p["why"] for p in dropped.values())
    for name, p in dropped.items():
        assert p["after"] == p["before"], name
    fitted = [n for n, p in params.items() if p["status"] == "fitted"]
    assert len(fitted) >= 10 and not set(fitted) & set(dropped)
    assert doc["summary"]["after"]["latency"]["mape_pct"] < doc["summary"]["before"]["latency"]["mape_pct"] / 5
    board = Board.load(out)
    for name, p in dropped.items():
        assert board.x0[board.index(name)] == p["before"], name
    assert predict_observations(out, d / "synth.csv") == pytest.approx([r["predicted"] for r in doc["observations"]],
                                                                        rel=1e-5)
    rc, text, err = run(capsys, BOARD, d / "synth.csv", "-o", tmp_path / "auto2.toml")     # the same fit, as a table
    assert rc == 0, err
    line = next(x for x in text.splitlines() if x.startswith("kept at the file's value (no --free"))
    assert all(n in line for n in dropped), line
    # the same set named with --free is the caller's: that fit is refused, not narrowed
    msg = one_line_refusal(capsys, tmp_path / "all.toml", BOARD, d / "synth.csv",
                           *free_args([n for n, p in params.items() if p["status"] in ("fitted", "dropped")]))
    assert "the fit pushed" in msg or "not separated" in msg or "not determined" in msg


@pytest.mark.slow
def test_without_free_a_parameter_pushed_to_its_bound_is_kept_at_the_files_value(synthetic, capsys, tmp_path):
    """The truth is outside the bounds (--range 1.2; the GPU's conv rate is 1.3 x and its layer
    overhead 1.5 x the file's): the bare fit pushes such parameters to a bound, keeps them at the
    file's value with why, and fits the rest (the CPU and NPU fixed keep it small)."""
    d = synthetic["dir"]
    out = tmp_path / "bound.toml"
    fix = ["--fix", "big.*", "--fix", "little.*", "--fix", "npu.*"]
    rc, text, err = run(capsys, BOARD, d / "synth.csv", "-o", out, "--json", "--range", "1.2", *fix)
    assert rc == 0, err
    params = {p["name"]: p for p in json.loads(text)["parameters"]}
    dropped = {n: p for n, p in params.items() if p["status"] == "dropped"}
    at_bound = {n for n, p in dropped.items() if "pushed it to its bound" in p["why"]}
    assert at_bound and any(p["status"] == "fitted" for p in params.values())
    board = Board.load(out)
    for name, p in dropped.items():
        assert p["after"] == p["before"] == board.x0[board.index(name)], name
    rc, text, err = run(capsys, BOARD, d / "synth.csv", "-o", tmp_path / "bound2.toml", "--range", "1.2", *fix)
    assert rc == 0, err
    line = next(x for x in text.splitlines() if x.startswith("kept at the file's value (no --free"))
    assert all(n in line for n in at_bound), line


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_without_free_a_bounded_parameter_is_still_refused_at_its_bound(synthetic, capsys, tmp_path):
    """A --bound names a parameter the caller wants fitted: the default set never drops it."""
    msg = one_line_refusal(capsys, tmp_path / "f.toml", BOARD, synthetic["dir"] / "synth.csv",
                           "--bound", "gpu.peak_gflops.conv=100:150")
    assert msg.endswith("the fit pushed gpu.peak_gflops.conv to its bound 150 GFLOP/s: the observations want it "
                        "higher; widen it with --bound gpu.peak_gflops.conv=LO:HI or fix it with --fix "
                        "gpu.peak_gflops.conv")


def test_refuses_parameters_the_observations_cannot_separate(synthetic, capsys, tmp_path):
    whole = tmp_path / "whole.csv"
    rows = [r for r in read_observations(synthetic["dir"] / "synth.csv") if r.layer is None and r.kind == "latency"]
    write_observations(whole, rows, base_dir=synthetic["dir"])
    shutil.copy(whole, synthetic["dir"] / "whole.csv")
    # whole-model runs pay one per-slice overhead and two transfer deltas: only a combination shows
    msg = one_line_refusal(capsys, tmp_path / "f.toml", BOARD, synthetic["dir"] / "whole.csv",
                           "--free", "gpu.layer_overhead_ms", "--free", "gpu.transfer.delta_ms")
    assert re.search(r"gpu\.(layer_overhead_ms|transfer\.delta_ms) and gpu\.(transfer\.delta_ms|layer_overhead_ms) "
                     r"are not separated by these observations \(only a combination of them is\): fix one with "
                     r"--fix", msg), msg


def test_refuses_free_parameters_nothing_depends_on_and_too_many(synthetic, capsys, tmp_path):
    d = synthetic["dir"]
    msg = one_line_refusal(capsys, tmp_path / "f.toml", BOARD, d / "synth.csv", "--free", "little.peak_gflops.conv")
    assert "--free little.peak_gflops.conv: no observation depends on it" in msg
    msg = one_line_refusal(capsys, tmp_path / "f.toml", BOARD, d / "synth.csv", "--free", "nothing.*")
    assert "--free 'nothing.*' matches no parameter of this board" in msg
    few = tmp_path / "few.csv"
    write_observations(few, read_observations(d / "synth.csv")[:3], base_dir=d)
    shutil.copy(few, d / "few.csv")
    msg = one_line_refusal(capsys, tmp_path / "f.toml", BOARD, d / "few.csv", "--free", "big.*")
    assert re.search(r"\d+ free parameters but 3 observations: a least-squares fit needs at least as many", msg), msg
    msg = one_line_refusal(capsys, tmp_path / "f.toml", BOARD, d / "synth.csv", "--bound", "gpu.speed=1:2")
    assert "hikey970-prior.toml has no parameter 'gpu.speed'" in msg
    msg = one_line_refusal(capsys, tmp_path / "f.toml", BOARD, d / "synth.csv", "--bound", "gpu.node_overhead_ms=2:1")
    assert "need 0 < LO < HI" in msg


HEADER = "kind,model,model_sha256,device,freq_mhz,layer,value,unit"
BAD_FILES = [
    ("missing column", "kind,model,value\nlatency,a.onnx,3\n", "missing required column 'unit'"),
    ("unknown device", f"{HEADER}\nlatency,a.onnx,,dsp,,,3,ms\n", "column 'device': 'dsp' is not a device of hikey970"),
    ("negative time", f"{HEADER}\nlatency,a.onnx,,gpu,,,-3,ms\n", "column 'value': '-3' is negative"),
    ("non-finite", f"{HEADER}\nlatency,a.onnx,,gpu,,,inf,ms\n", "column 'value': 'inf' is not finite"),
    ("bad unit", f"{HEADER}\nenergy,a.onnx,,gpu,,,3,J\n", "column 'unit': 'J' is not the unit of a energy; write 'mJ'"),
    ("hash mismatch", f"{HEADER}\nlatency,a.onnx,{'0' * 64},gpu,,,3,ms\n",
     "model a.onnx has sha256 "),
    ("unknown kind", f"{HEADER}\nthroughput,a.onnx,,gpu,,,3,ms\n", "column 'kind': 'throughput' is not a kind"),
    ("layer out of range", f"{HEADER}\nlatency,a.onnx,,gpu,,7-99,3,ms\n",
     "column 'layer': '7-99' is out of range; a has 9 layers (0-8) on hikey970"),
    ("not runnable", f"{HEADER}\nlatency,a.onnx,,npu,,,3,ms\n" if False else f"{HEADER}\nlatency,a.onnx,,big,700,,3,ms\n",
     "column 'freq_mhz': '700' is not a DVFS level of hikey970's big"),
]


@pytest.mark.parametrize("case,text,message", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_observation_files_are_one_line_exit_2(synthetic, capsys, tmp_path, case, text, message):
    d = synthetic["dir"]
    bad = d / f"bad-{case.replace(' ', '-')}.csv"
    bad.write_text(text)
    msg = one_line_refusal(capsys, tmp_path / "f.toml", BOARD, bad)
    assert str(bad) in msg and message in msg, msg


def test_memory_rows_set_what_the_capacity_rule_charges_a_model(synthetic, capsys, tmp_path):
    """A memory row (the size a device's runtime reports for a model) is not fitted: the device's
    capacity rule charges that model the reported size, slices in proportion. A model the board
    alone fits whole on the NPU no longer does when its runtime reports it above the capacity."""
    d = synthetic["dir"]
    whole_npu = f"{HEADER}\nlatency,c.onnx,,npu,,,3,ms\n"
    (d / "npu.csv").write_text(whole_npu)
    assert predict_observations(BOARD, d / "npu.csv")[0] > 0                 # fits whole: priced
    big = d / "npu-big.csv"
    big.write_text(whole_npu + "memory,c.onnx,,npu,,,250,MB\n")
    msg = one_line_refusal(capsys, tmp_path / "f.toml", BOARD, big)
    assert (f"{big} line 2: c (the whole model) cannot run as one slice on npu: its share of the 250 MB a memory "
            "row reports for the model (250.0 MB) exceeds the device's capacity (100.0 MB)") in msg, msg
    # predicted for a memory row: the board's own count, MB; the fit prints the rows it applied
    small = d / "npu-small.csv"
    ms = predict_observations(BOARD, d / "npu.csv")[0] * 1.2          # a latency the fit can reach
    small.write_text(f"{HEADER}\nlatency,c.onnx,,npu,,,{ms:.6g},ms\nmemory,c.onnx,,npu,,,50,MB\n")
    pred = predict_observations(BOARD, small)
    board_mb = pred[1]
    assert 0 < board_mb < 100 and board_mb != 50
    rc, text, err = run(capsys, BOARD, small, "-o", tmp_path / "m.toml", "--free", "npu.layer_overhead_ms", "--json")
    assert rc == 0, err
    doc = json.loads(text)
    assert [(m["model"], m["device"], m["reported_mb"]) for m in doc["memory"]] == [("c.onnx", "npu", 50.0)]
    assert doc["memory"][0]["board_mb"] == pytest.approx(board_mb)
    assert len(doc["observations"]) == 1                      # the memory row is not a residual
    twice = d / "npu-twice.csv"
    twice.write_text(whole_npu + "memory,c.onnx,,npu,,,50,MB\nmemory,c.onnx,,npu,,,60,MB\n")
    msg = one_line_refusal(capsys, tmp_path / "g.toml", BOARD, twice)
    assert "line 4: a second memory row for c on npu; give one" in msg


@pytest.mark.slow
def test_with_reported_memory_scales_slices_in_proportion():
    from hetcc.planners.problem import PlanningProblem  # noqa: F401  (the method under test)
    from hetcc.compiler.api import analyse

    p = analyse("mobilenet_v2", "hikey970").problem
    npu = [s for s, dev in enumerate(p.states.device) if dev == "npu"][0]
    L = p.num_layers
    total = float(p.memory_prefix()[-1][npu])
    assert p.slice_fits(0, L - 1, npu)                  # the board alone: ~92 MB within 100 MB
    q = p.with_reported_memory("npu", 2 * total)
    assert not q.slice_fits(0, L - 1, npu)              # reported twice that: the whole no longer fits
    half = int(np.searchsorted(p.memory_prefix()[:, npu], total / 2))
    assert q.slice_fits(0, max(half - 2, 0), npu)       # a slice of under half its charge still does
    assert q.with_reported_memory("gpu", 1e12).capacity_bytes[0] == q.capacity_bytes[0]   # no capacity: unchanged
    others = [s for s in range(p.num_states) if s != npu]
    assert np.array_equal(q.capacity_bytes[others], p.capacity_bytes[others])


def test_a_measured_board_and_a_missing_file_are_refused(synthetic, capsys, tmp_path):
    msg = one_line_refusal(capsys, tmp_path / "f.toml", "host", synthetic["dir"] / "synth.csv")
    assert "is measured, not modelled" in msg
    msg = one_line_refusal(capsys, tmp_path / "f.toml", BOARD, tmp_path / "nope.csv")
    assert "cannot read the observations file" in msg


# --- plan_uses and gain ------------------------------------------------------------------------------

def test_forced_optima_are_exact_against_enumeration():
    from hetcc.planners.baselines import enumerate_plans
    from hetcc.planners.problem import PlanningProblem, StateTable

    rng = np.random.default_rng(3)
    L, S = 5, 3
    legal = rng.random((L, S)) > 0.2
    legal[:, 0] = True
    z = lambda: rng.uniform(0.1, 2.0, (L, S))  # noqa: E731
    p = PlanningProblem(latency_ms=z(), power_mw=z() * 1000, transfer_in_ms=z(), transfer_out_ms=z(),
                        transfer_in_mj=z(), transfer_out_mj=z(), legal=legal, param_bytes=np.ones(L, np.int64),
                        capacity_bytes=np.array([np.inf, 2.0, np.inf]), base_power_mw=500.0,
                        states=StateTable.build(["a", "b", "c"], [1.0, 1.0, 1.0]))
    plans = list(enumerate_plans(p))
    for metric, k in (("latency", 1), ("energy", 2)):
        for t in range(S):
            use, use_sl, avoid, not_sl = _forced(p, metric, np.arange(S), t)
            want_use = min((pl[k] for pl in plans if any(s.state == t for s in pl[0])), default=math.inf)
            want_not = min((pl[k] for pl in plans if not any(s.state == t for s in pl[0])), default=math.inf)
            assert use == pytest.approx(want_use) and avoid == pytest.approx(want_not)
            if use_sl:
                assert any(s.state == t for s in use_sl)
                ev = p.evaluate(use_sl)
                assert (ev.latency_ms if metric == "latency" else ev.energy_mj) == pytest.approx(use)
            if not_sl:
                assert not any(s.state == t for s in not_sl)


@pytest.mark.slow
def test_plan_uses_hinge_flips_the_plan_and_gain_is_matched(synthetic, capsys, tmp_path):
    d = synthetic["dir"]
    board = Board.load(BOARD)
    rows = [{"kind": "plan_uses", "model": "b.onnx", "device": "big", "objective": "latency", "value": 1,
             "unit": "bool"},
            {"kind": "plan_uses", "model": "b.onnx", "device": "gpu", "objective": "latency", "value": 0,
             "unit": "bool"}]
    obs = read_observations(_written(d, "uses.csv", rows), board.target())
    cal = Calibration(board, obs)
    start = cal.evaluate()
    # at the file's values the latency-optimal plan of b runs its convolutions on the GPU (and its tail on
    # big): the gpu row is off by its margin (log of the best plan that avoids the GPU over the best that
    # uses it, plus MARGIN); the big row holds with more than MARGIN to spare, so its hinge is 0
    assert list(start.predicted) == [1.0, 1.0]
    assert start.signal[0] < -0.01 and start.residual[0] == 0.0
    assert start.residual[1] > 0 and start.residual[1] == pytest.approx(-start.signal[1] + 0.01)
    # a faster big conv flips the gpu row: the fit finds it, the residuals vanish, the plan changes
    rc, text, err = run(capsys, BOARD, d / "uses.csv", "-o", tmp_path / "f.toml", "--json",
                        "--free", "big.peak_gflops.conv")
    assert rc == 0, err
    doc = json.loads(text)
    assert [r["agrees"] for r in doc["observations"]] == [True, True]
    assert [r["predicted"] for r in doc["observations"]] == [1.0, 0.0]
    assert [r["predicted_before"] for r in doc["observations"]] == [1.0, 1.0]
    big = next(p for p in doc["parameters"] if p["name"] == "big.peak_gflops.conv")
    assert big["after"] > big["before"]
    fitted = Calibration(Board.load(tmp_path / "f.toml"), obs).evaluate()
    assert list(fitted.residual) == [0.0, 0.0] and fitted.signal[0] < -0.01 < 0.01 < fitted.signal[1]

    # gain: dp over single:big for latency grows as big slows down; the fit meets an observed gain
    rows = [{"kind": "gain", "model": "a.onnx+b.onnx", "objective": "latency", "baseline": "single:big",
             "value": 0.5, "unit": "fraction"}]
    cal_gain = Calibration(board, read_observations(_written(d, "gain.csv", rows), board.target()))
    start = cal_gain.evaluate()
    assert 0 < start.predicted[0] < 0.5 and start.residual[0] < 0     # the model starts below the observation
    rc, text, err = run(capsys, BOARD, d / "gain.csv", "-o", tmp_path / "g.toml", "--json",
                        "--free", "big.peak_gflops.conv")
    assert rc == 0, err
    doc = json.loads(text)
    assert doc["observations"][0]["predicted"] == pytest.approx(0.5, abs=1e-4)   # ... and the fit meets it
    big = next(p for p in doc["parameters"] if p["name"] == "big.peak_gflops.conv")
    assert big["after"] < big["before"]


def _written(d: Path, name: str, rows) -> Path:
    write_observations(d / name, rows)
    return d / name


def test_the_command_imports_cheaply():
    """Registering the command (hetcc's parser) loads neither scipy, tomlkit nor numpy; they come with
    the fit."""
    import subprocess
    import sys

    code = ("import sys, hetcc.cli.app, hetcc.measure.observations; hetcc.cli.app.build_parser(); "
            "print(sorted(m for m in ('scipy', 'tomlkit', 'numpy', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_missing_extra_is_one_line_naming_it(synthetic, capsys, tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "scipy" else real(name, *a))
    msg = one_line_refusal(capsys, tmp_path / "f.toml", BOARD, synthetic["dir"] / "synth.csv")
    assert "pip install 'hetcc[calibrate]'" in msg
