"""benchmarks/concurrent_runs.py --quick: two tiny generated models on host-cores, compiled with a
fixed pipeline each, run at once; the JSON holds the measured and predicted throughputs. Only that
it runs and reports measured, positive numbers is checked (no timing is asserted)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

ROOT = Path(__file__).resolve().parents[1]


def test_quick_run_writes_measured_and_predicted(tmp_path):
    out = tmp_path / "concurrent_runs.json"
    env = {**os.environ, "HETCC_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "concurrent_runs.py"), "--quick", "--duration",
                           "0.2", "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=110, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["script"] == "concurrent_runs" and doc["args"]["quick"] is True and doc["target"] == "host-cores"
    (row,) = doc["results"]
    assert row["sharing"] == "queue" and [m["model"] for m in row["models"]] == ["tiny_a", "tiny_b"]
    for m in row["models"]:
        assert m["measured"]["alone_ips"] > 0 and m["measured"]["shared_ips"] > 0
        assert m["predicted"]["analytical"] > 0 and m["predicted"]["calibrated"] > 0
        assert m["error"]["analytical"] == pytest.approx(
            (m["predicted"]["analytical"] - m["measured"]["shared_ips"]) / m["measured"]["shared_ips"])
    assert [s["device"] for s in row["models"][1]["pipeline"]] == ["core0", "core1"]
    assert doc["summary"]["queue"]["models"] == 2
    assert "tiny_a" in proc.stdout and "median |error|" in proc.stdout
