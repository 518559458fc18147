"""benchmarks/host_fit.py --quick runs through the CLI (profile, calibrate, profile) and writes its JSON.

Only that it works and reports finite numbers is checked (no timed assertions: the figures come
from full runs, by hand)."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from extras import needs

pytestmark = [pytest.mark.calibrate, pytest.mark.slow, pytest.mark.timeout(900)]
needs("calibrate", "scipy", "tomlkit")

ROOT = Path(__file__).resolve().parents[2]


def test_host_fit_quick(tmp_path):
    out = tmp_path / "host_fit.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "host_fit.py"), "--quick", "--json", str(out),
                           "--keep", str(tmp_path / "work")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    res = doc["result"]
    assert doc["script"] == "host_fit" and doc["args"]["quick"] is True
    assert res["layers"] == 8 and len(res["per_layer"]) == 9
    for key in ("layer_mape", "model_error", "before_layer_mape", "before_model_error", "noise_layer_mape",
                "noise_model_error"):
        assert math.isfinite(res[key]) and res[key] >= 0, key
    assert all(x["fitted_ms"] > 0 and x["b_ms"] > 0 for x in res["per_layer"])
    assert res["free"] == ["cpu.peak_gflops.conv", "cpu.node_overhead_ms"]
    fitted = (tmp_path / "work" / "fitted.toml").read_text()
    assert 'name = "host-analytical"' in fitted
    assert "per-layer MAPE vs B" in proc.stdout and "noise floor" in proc.stdout
