"""benchmarks/fairboost.py --quick runs and writes the JSON it promises, and tables.py renders it.

Only that it works and is self-consistent is checked (every manager scored every mix, optimum is
the best of them under O, all-gpu is the T_norm baseline); the numbers come from full runs by hand.
"""
from __future__ import annotations

import json

import pytest

from benchmod import load
from extras import needs

pytestmark = [pytest.mark.slow, pytest.mark.multi]
needs("multi", "pymoo")


def test_quick_run_writes_scores_for_every_manager_and_renders(tmp_path, capsys):
    bench = load("fairboost")
    out = tmp_path / "fairboost-quick.json"
    assert bench.main(["--quick", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    labels = [m["label"] for m in doc["managers"]]
    assert labels[:6] == ["all-gpu", "rr:cpu", "rr:gpu", "mosaic", "ga", "optimum"]
    assert len(doc["mixes"]) == 2 and all(len(r["models"]) == 3 for r in doc["mixes"])
    for r in doc["mixes"]:
        got = r["managers"]
        assert set(got) == set(labels) and all("O" in v for v in got.values()), got
        assert got["all-gpu"]["T_norm"] == pytest.approx(1.0)
        for v in got.values():
            assert v["O"] == pytest.approx(v["T_norm"] * v["J"]) and 0 < v["J"] <= 1 + 1e-12
            assert v["decision_s"] >= 0
        assert got["optimum"]["O"] >= max(v["O"] for k, v in got.items() if k not in ("optimum", "optimum-2", "ga")) - 1e-9
    per = doc["summary"]["3"]
    assert per["optimum"]["gap_to_optimum_median"] == 0.0 and per["all-gpu"]["T_norm"] == pytest.approx(1.0)
    assert doc["paper_ratios"]["3"]["ga"] == pytest.approx(1.47) and doc["paper_ratios"]["3"]["all-gpu"] == 2.85
    tables = load("tables")
    text = "\n".join(body for _, body in tables.r_fairboost(doc))
    assert "| `optimum` | 2 |" in text and "×2.85" in text and "Mixes of 3 models" not in text.split("\n")[0]
