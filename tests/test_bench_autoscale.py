"""benchmarks/autoscale.py --quick runs, writes the JSON it promises, and tables.py renders it.

Only that it works and is self-consistent is checked (every environment and policy scored, Opt
never beaten on QoS, the verdicts printed); the figures come from full runs by hand.
"""
from __future__ import annotations

import json

import pytest

from benchmod import load
from extras import needs

pytestmark = [pytest.mark.slow, pytest.mark.learn]
needs("learn", "gymnasium")


def test_quick_run_scores_every_environment_and_policy_and_renders(tmp_path, capsys):
    bench = load("autoscale")
    out = tmp_path / "autoscale-quick.json"
    assert bench.main(["--quick", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["script"] == "autoscale" and doc["args"]["quick"] is True and doc["paper"]["selection_accuracy"] == 0.979
    (board,) = doc["boards"].values()
    assert list(board["environments"]) == ["S1", "S2", "S3", "S4", "S5", "D1", "D2", "D3"]
    for env in board["environments"].values():
        pol = env["policies"]
        assert {"AutoScale", "AutoScale(frozen)", "Edge(CPU FP32)", "Edge(Best)", "Cloud", "Connected edge", "Opt",
                "Opt(hindsight)", "Opt(reward)"} <= set(pol)
        assert pol["Edge(CPU FP32)"]["efficiency"] == pytest.approx(1.0)
        # the oracle that knows each inference's noise violates QoS no more often than any policy
        assert all(pol["Opt(hindsight)"]["qos_violation"] <= v["qos_violation"] + 1e-12 for v in pol.values())
        sel = env["selection"]
        assert 0.0 <= sel["opt"] <= sel["near_opt"] <= 1.0 and "Table 4" in env["source"]
        assert 0.0 < sel["state_ceiling"] <= 1.0 and 0.0 <= sel["tie_0.001"] <= sel["tie_0.01"] <= 1.0
    assert len(board["convergence"]["scratch"]) == 5 * 2 and board["decision"]["trained_us"] > 0
    assert len(board["verdicts"]) == 4 and sum(line.startswith(("met", "MISSED")) for line in printed.splitlines()) == 4
    tables = load("tables")
    text = "\n".join(body for _, body in tables.r_autoscale(doc))
    assert "| S3: Memory-intensive co-running app |" in text and "paper 97.9%" in text and "Targets" in text
    assert "a fixed choice per network and Table 1 state can match" in text
    assert "within 0.1% / 1% of Opt by its criterion" in text
