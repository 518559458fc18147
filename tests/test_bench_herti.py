"""benchmarks/herti.py --quick runs (in a subprocess) and writes the JSON and plots it promises.

Only that it works, reports measured positive numbers and is self-consistent is checked here (exact
is its own optimum, feasible means within the deadline); the figures come from full runs by hand.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.zoo
for _mod in ("torch", "torchvision", "torchrl", "gymnasium", "matplotlib", "rich"):
    pytest.importorskip(_mod)

from hetcc.planners.metrics import RTOL  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: HERTI's 13 versions (Sec. V-A)
VERSIONS = [f"TFL-{d}-{g}" for g in "PO" for d in ("BIG", "LITTLE", "GPU", "NPU")] + [
    "MOSAIC-P", "MOSAIC-E", "AutoScale", "exhaustive", "HERTI"]
QUICK = {"MN-1.0": "mnasnet1_0", "MO-1.3": "mobilenet_v2_1.3"}  # --quick's workloads -> zoo models
SUBSETS = ("CPU", "CPU+GPU", "CPU+NPU", "all")


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    """The two quick workloads, exported here (not into the repo's model cache)."""
    from hetcc.compiler import zoo

    root = tmp_path_factory.mktemp("herti-models")
    for name in QUICK.values():
        zoo.export(name, root / f"{name}-seed0.onnx", seed=0)
    return root


def test_herti_quick(tmp_path, models_dir):
    out = tmp_path / "h.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "herti.py"), "--quick", "--dqn-steps", "100",
                           "--models-dir", str(models_dir), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    doc = json.loads(out.read_text())
    assert doc["script"] == "herti" and doc["args"]["quick"] is True and doc["machine"]["cpu_count"] >= 1
    assert doc["args"]["dqn_planner"] == "dqn" and doc["args"]["deadlines"] == ["medium"]
    # the grid ran as a `hetcc sweep` (its table beside the JSON), not in a loop of the script's own
    from hetcc.experiments.sweep import read_table

    table = read_table(tmp_path / "h-sweep" / "cells.csv")
    assert len(table) == doc["sweep"]["cells"] > 0 and {r["status"] for r in table} <= {"ok", "infeasible"}
    assert [w["workload"] for w in doc["workloads"]] == list(QUICK)
    runs = doc["runs"]
    assert not [r for r in runs if "error" in r], [r for r in runs if "error" in r]
    for label in QUICK:
        main = {r["version"]: r for r in runs if r["part"] == "main" and r["workload"] == label}
        assert set(main) == set(VERSIONS)
        for part, key in (("edp", {}), *(("subset", {"subset": s}) for s in SUBSETS)):
            sel = [r for r in runs if r["part"] == part and r["workload"] == label
                   and all(r.get(k) == v for k, v in key.items())]
            assert {"MOSAIC-P", "AutoScale", "exhaustive", "HERTI"} <= {r["version"] for r in sel}
            main.update({f"{part}{key}{r['version']}": r for r in sel})
        for r in main.values():
            assert r["latency_ms"] > 0 and r["energy_mj"] > 0 and r["edp"] > 0 and r["wall_s"] > 0, r
            assert r["deadline_ms"] > 0
            # feasible <=> within the deadline (up to the registry's float tolerance)
            assert r["feasible"] == (r["latency_ms"] <= r["deadline_ms"] * (1 + RTOL)), r
            if r["version"] == "exhaustive":
                assert r["feasible"] and abs(r["gap_to_exact"]) < 1e-12
            elif r["feasible"]:
                assert r["gap_to_exact"] >= -1e-9, r  # nothing feasible beats the proven optimum
    herti_rows = [r for r in runs if r["version"] == "HERTI"]
    assert all(r["planner"] == "dqn" and r["stats"]["measured_ms"] > 0 for r in herti_rows)
    s = doc["summary"]
    assert s["edp_geomean_vs_mosaic_edp"]["MOSAIC-EDP"] == pytest.approx(1.0)
    assert s["edp_geomean_vs_mosaic_edp"]["exhaustive"] >= 1 - 1e-9
    assert set(s["training"]) == set(QUICK)
    assert len(doc["plots"]) >= 6 and all(Path(p).stat().st_size > 0 for p in doc["plots"])
    assert all(Path(p).parent == tmp_path and Path(p).name.startswith("h-") for p in doc["plots"])
    for label in QUICK:
        assert label in proc.stdout  # the tables were printed
