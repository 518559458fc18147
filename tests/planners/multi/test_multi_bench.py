"""benchmarks/contention.py --quick runs (synthetic CNNs, a subprocess) and writes its JSON."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from extras import needs

pytestmark = [pytest.mark.sim, pytest.mark.slow]
needs("sim")
ROOT = Path(__file__).resolve().parents[3]


def test_contention_benchmark_quick(tmp_path):
    out = tmp_path / "contention.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "contention.py"), "--quick", "--inferences", "30",
                           "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["script"] == "contention" and doc["args"]["quick"] is True and doc["args"]["source"] == "synthetic"
    assert len(doc["mixes"]) == 3
    assert doc["switch_ms"]["gpu"] > doc["switch_ms"]["big"] > 0
    for label in ("shared, cv 0", "shared, cv 0, open queues", "shared, cv 0.1", "shared, cv 1", "shared, cv 0, optimised", "shared, cv 0, ga", "slice"):
        v = doc["summary"][label]
        assert v["models"] == sum(len(r["models"]) for r in doc["mixes"])
        assert 0 <= v["median_pct"] <= v["p90_pct"] <= v["max_pct"]
    for r in doc["mixes"]:
        assert 2 <= len(r["models"]) <= 5
        for v in r["variants"].values():
            assert all(x > 0 for x in v["simulated_ips"]) and all(x > 0 for x in v["predicted_ips"])
    assert "PASS" in proc.stdout or "MISS" in proc.stdout
