"""benchmarks/host_fit.py --quick runs through the CLI (profile, calibrate, profile) and writes its JSON.

Only that it works and reports finite numbers is checked (no timed assertions: the figures come
from full runs, by hand)."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

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
    # what this machine's data drive to a bound is kept at the file's value (calibrate's advice), the rest fitted
    assert sorted(res["free"] + res["kept_at_bound_refusal"]) == ["cpu.node_overhead_ms", "cpu.peak_gflops.conv"]
    assert res["free"]
    fitted = (tmp_path / "work" / "fitted.toml").read_text()
    assert 'name = "host-analytical"' in fitted
    assert "per-layer MAPE vs B" in proc.stdout and "noise floor" in proc.stdout


def test_a_parameter_driven_to_its_bound_is_kept_and_the_fit_runs_again(tmp_path, monkeypatch):
    """calibrate's "pushed NAME to its bound" refusal: the benchmark fixes NAME and fits the rest; a
    refusal of the last free parameter, or any other failure, ends it with calibrate's message."""
    from benchmod import load
    host_fit = load("host_fit")
    calls = []

    def fake(*argv, check=True):
        calls.append([a for i, a in enumerate(argv) if i and argv[i - 1] == "--free"])
        if "cpu.node_overhead_ms" in calls[-1]:
            return SimpleNamespace(returncode=2, stdout="", stderr="hetcc: error: the fit pushed "
                                   "cpu.node_overhead_ms to its bound 2e-06 ms: the observations want it lower; ...\n")
        return SimpleNamespace(returncode=0, stdout='{"parameters": []}', stderr="")

    monkeypatch.setattr(host_fit, "hetcc", fake)
    cal, free, kept = host_fit.fit(tmp_path / "A.csv", tmp_path / "f.toml", [], host_fit.QUICK_FREE, 1000.0, [])
    assert calls == [list(host_fit.QUICK_FREE), ["cpu.peak_gflops.conv"]]
    assert free == ["cpu.peak_gflops.conv"] and kept == ["cpu.node_overhead_ms"] and cal == {"parameters": []}
    with pytest.raises(SystemExit, match="exited 2"):
        host_fit.fit(tmp_path / "A.csv", tmp_path / "f.toml", [], ["cpu.node_overhead_ms"], 1000.0, [])
