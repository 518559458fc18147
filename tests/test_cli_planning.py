"""The planning flags of ``hetcc compile`` and ``hetcc planners``: feasibility policy (exit 3 /
--allow-infeasible), --planner-option, deadline presets, budgets, --hardware."""
from __future__ import annotations

import json

import pytest

from test_cli import run

CHAIN = """<ir_version: 8, opset_import: ["" : 17]>
chain (float[1,64] x) => (float[1,64] y) {
    a = Relu(x)
    b = Sigmoid(a)
    c = Tanh(b)
    y = Relu(c)
}
"""


@pytest.fixture
def chain(tmp_path, write_text_model):
    return str(write_text_model(CHAIN, tmp_path / "chain.onnx"))


def one_line(err: str) -> str:
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1, err
    return lines[0]


def summary(capsys, chain, *flags):
    code, out, err = run(capsys, "compile", chain, "--target", "hikey970", "--json", *flags)
    assert code == 0, err
    return json.loads(out)


@pytest.mark.slow
@pytest.mark.parametrize("planner", ["single:big", "single:gpu", "single:little", "dp", "even:2", "random"])
def test_baselines_that_miss_the_deadline_exit_3_naming_the_amount(capsys, chain, tmp_path, planner):
    out = tmp_path / "o"
    code, _, err = run(capsys, "compile", chain, "--target", "hikey970", "--objective", "energy",
                       "--deadline", "0.001ms", "--planner", planner, "-o", str(out))
    line = one_line(err)
    assert code == 3 and "misses the 0.001 ms deadline by" in line and "--allow-infeasible" in line
    assert not out.exists()
    s = summary(capsys, chain, "--objective", "energy", "--deadline", "0.001ms", "--planner", planner,
                "--allow-infeasible")
    assert s["feasible"] is False and "misses the 0.001 ms deadline" in s["violations"][0]


@pytest.mark.parametrize("planner", ["single:big", "single:gpu", "dp", "random"])
def test_baselines_over_the_power_cap_exit_3(capsys, chain, planner):
    code, _, err = run(capsys, "compile", chain, "--target", "hikey970", "--objective", "energy",
                       "--power-cap", "1mW", "--planner", planner)
    assert code == 3 and "exceeds the 0.001 W power cap" in one_line(err)


def test_deadline_presets_resolve_between_the_fastest_and_the_energy_optimum(capsys, chain):
    fastest = summary(capsys, chain, "--objective", "latency")["latency_ms"]
    frugal = summary(capsys, chain, "--objective", "energy")["latency_ms"]
    got = {p: summary(capsys, chain, "--objective", "energy", "--deadline", p)["deadline_ms"]
           for p in ("short", "medium", "long", "1.5x")}
    for preset, zeta in (("short", 0.25), ("medium", 0.5), ("long", 1.0)):
        assert got[preset] == pytest.approx(fastest + zeta * (frugal - fastest))
    assert got["1.5x"] == pytest.approx(1.5 * fastest)
    s = summary(capsys, chain, "--objective", "energy", "--deadline", "medium")
    assert s["deadline_spec"] == "medium" and s["latency_ms"] <= s["deadline_ms"] * (1 + 1e-9)


@pytest.mark.parametrize("flags, needles", [
    (["--planner", "random", "--planner-option", "sampels=3"], ["'random' has no option 'sampels'", "samples"]),
    (["--planner", "random", "--planner-option", "samples=x"], ["option samples='x'", "integer"]),
    (["--planner", "random", "--planner-option", "samples"], ["malformed --planner-option 'samples'"]),
    (["--planner", "nope"], ["unknown planner 'nope'", "hetcc planners"]),
    (["--deadline", "0.5x"], ["at least 1x"]),
    (["--deadline", "soon"], ["malformed --deadline 'soon'", "short|medium|long"]),
    (["--hardware", "cores=2"], ["has no hardware knobs"]),
    (["--objective", "speed"], ["unknown objective 'speed'"]),
    (["--planner", "dp", "--objective", "edp"], ["'dp' does not optimise edp"]),
    (["--budget-steps", "0"], ["--budget-steps"]),
])
def test_bad_planning_flags_are_one_line_exit_2(capsys, chain, flags, needles):
    code, _, err = run(capsys, "compile", chain, "--target", "hikey970", *flags)
    line = one_line(err)
    assert code == 2, line
    for n in needles:
        assert n in line, line


def test_planner_option_reaches_the_planner_and_the_summary(capsys, chain):
    s = summary(capsys, chain, "--planner", "random", "--planner-option", "samples=5", "--seed", "3")
    assert s["options"] == {"samples": 5} and s["stats"]["samples"] == 5
    again = summary(capsys, chain, "--planner", "random", "--planner-option", "samples=5", "--seed", "3")
    assert again["slices"] == s["slices"]
    short = summary(capsys, chain, "--planner", "random", "--budget-steps", "2")
    assert short["stats"]["samples"] == 2


def test_planners_lists_every_planner_with_options(capsys):
    code, out, _ = run(capsys, "planners", "--json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert code == 0
    assert {"dp", "exact", "single:<device>", "even:<slices>", "random", "brute", "independent"} <= set(rows)
    assert rows["random"]["options"][0]["name"] == "samples" and rows["random"]["options"][0]["default"] == 1000
    assert rows["exact"]["exact"] and rows["independent"]["plans"] == "workload"
    code, out, _ = run(capsys, "planners")
    assert code == 0 and "random" in out and "--planner-option" in out
    code, _, err = run(capsys, "planners", "nope")
    assert code == 2 and "unknown planner" in one_line(err)
