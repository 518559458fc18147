"""benchmarks/autoscale_real.py --quick runs on this machine (real co-runners, a walked signal, the
loopback server when the serve extra is installed) and writes the JSON its renderer reads.

Only that it works and is self-consistent is checked (every phase ran, every inference has its
oracle, Opt is never worse than the policy by its own reward); the numbers come from full runs.
"""
from __future__ import annotations

import json

import pytest

from benchmod import load

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

def test_quick_run_measures_policy_and_opt(tmp_path, capsys):
    pytest.importorskip("rich")
    bench = load("autoscale_real")
    out = tmp_path / "autoscale_real-quick.json"
    assert bench.main(["--quick", "--alg1-baseline", "yes", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["script"] == "autoscale_real" and doc["args"]["quick"] is True
    phases = {p["name"] for p in doc["phases"]}
    assert {r["phase"] for r in doc["decisions"]} == phases
    assert len(doc["decisions"]) == len(phases) * doc["args"]["per_phase"]
    for d in doc["decisions"]:
        assert set(d["oracle"]) == set(doc["variants"])
        assert d["latency_ms"] > 0 and d["energy_mj"] > 0
    weak = [d for d in doc["decisions"] if d["phase"].startswith("quiet, weak")]
    assert weak and all(d["state"].endswith("|W|W") for d in weak)      # the trace reached the state
    res = doc["passes"][0]
    assert res["opt"]["reward_mean"] >= res["policy"]["reward_mean"] - 1e-9 or res["policy"]["failed"]
    assert doc["overhead_us"]["decide"]["p50"] > 0
    if doc["server"]:      # every offload shows up in the server's request log, and nothing else does
        assert doc["served"]["offloads"] == doc["served"]["server_runs_ok"] > 0
    (run,) = doc["runs"]   # --quick: one run from an untrained table, the one detailed
    assert run["served"] == doc["served"] and run["passes"][0]["policy_matches_opt"] == res["policy_matches_opt"]
    # the board's rates were scaled to this machine's measured one-thread time, and the board says so
    cal = doc["board_calibration"]
    assert cal["scale"] == pytest.approx(cal["predicted_ms"] / cal["measured_ms"], rel=1e-2)
    assert "rates scaled" in doc["board_toml"] and doc["board_toml"] != load("autoscale_real").BOARD
    # the runner's departures from Alg. 1 are recorded, and the same seed ran without them beside
    assert doc["policy_options"] == {"unseen": "nearest", "explore_within": 1.0}
    (alg1,) = doc["alg1_runs"]
    assert alg1["seed"] == run["seed"] and len(alg1["passes"]) == len(run["passes"])
    if doc["server"]:
        assert alg1["served"]["offloads"] == alg1["served"]["server_runs_ok"] > 0
    tables = load("tables")
    sections = tables.r_autoscale_real(doc)
    assert "Alg. 1, pass 1" in sections[1][1] and "`unseen=nearest`" in sections[0][1]
    assert "rates are scaled" in sections[0][1]
    assert [s[0] for s in sections] == ["Per phase", "Whole passes", "Replay: the reward alone"]
    assert "policy / Opt" in sections[0][1]
    assert set(doc["replay"]["rewards"]) == {"current", "mJ, no miss penalty"}


def test_model_auto_picks_the_lightest_model_that_makes_opt_offload(tmp_path, monkeypatch):
    """--model auto's rule, with the machine's timings and the predictions stood in for: the lightest
    model whose local variant stays inside QoS under a CPU co-runner and loses to the edge by the
    margin; else the best-placed one that fits QoS; else the lightest."""
    bench = load("autoscale_real")
    for name in bench.AUTO_MODELS:
        bench.tiny_model(tmp_path / f"{name}.onnx")
    qos_cap = bench.AUTO_QOS_SHARE * bench.QOS_MS

    def pick(ms, ratios):
        monkeypatch.setattr(bench, "_local_ms", lambda path: ms[path.stem])
        by_ms = {v: k for k, v in ms.items()}
        monkeypatch.setattr(bench, "predicted_mj", lambda m, *a: (ratios[by_ms[m]], 1.0))
        name, path, rec = bench.pick_model(tmp_path, {}, bench.make_console())
        assert path == tmp_path / f"{name}.onnx" and rec["chosen"] == name
        return name, rec

    light, mid, heavy = bench.AUTO_MODELS
    assert pick({light: 3.0, mid: 17.0, heavy: 37.0}, {light: 0.5, mid: 1.6, heavy: 2.1})[0] == mid
    # the heavy one would win by more, but its local time leaves no room for a co-runner under QoS
    name, rec = pick({light: 3.0, mid: 17.0, heavy: qos_cap + 1}, {light: 0.5, mid: 1.2, heavy: 3.0})
    assert name == mid and [r["fits_qos"] for r in rec["candidates"]] == [True, True, False]
    too_slow = {light: qos_cap + 1, mid: qos_cap + 2, heavy: qos_cap + 3}
    assert pick(too_slow, {light: 1.1, mid: 2.0, heavy: 3.0})[0] == light


def test_predicted_energies_follow_the_board():
    """The local energy grows with the time, the edge's with a weaker signal (the board's link table)."""
    bench = load("autoscale_real")
    l1, e_strong = bench.predicted_mj(10.0, 600_000, 4_000, -50.0)
    l2, e_weak = bench.predicted_mj(20.0, 600_000, 4_000, -85.0)
    assert l2 == pytest.approx(2 * l1) and e_weak > 10 * e_strong
