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
    assert bench.main(["--quick", "--out", str(out)]) == 0
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
    tables = load("tables")
    sections = tables.r_autoscale_real(doc)
    assert [s[0] for s in sections] == ["Per phase", "Whole passes", "Replay: the reward alone"]
    assert "policy / Opt" in sections[0][1]
    assert set(doc["replay"]["rewards"]) == {"current", "mJ, no miss penalty"}
