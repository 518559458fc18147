"""benchmarks/herti.py --quick runs and writes the JSON and plots it promises.

Only that it works, reports measured positive numbers and is self-consistent is checked here (exact
is its own optimum, feasible means within the deadline); the figures come from full runs by hand.
The quick mode also runs the ablation of dqn (one workload, few steps) and writes the claim table:
their structure and consistency are checked, not their values.
"""
from __future__ import annotations

import contextlib
import io
import json
import statistics
import types
from pathlib import Path

import pytest

from extras import needs

pytestmark = [pytest.mark.zoo, pytest.mark.learn, pytest.mark.plot, pytest.mark.slow, pytest.mark.timeout(1800)]
needs("zoo", "torch", "torchvision")
needs("learn", "torchrl", "gymnasium")
needs("plot", "matplotlib")

from hetcc.planners.metrics import RTOL  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: HERTI's 13 versions (Sec. V-A)
VERSIONS = [f"TFL-{d}-{g}" for g in "PO" for d in ("BIG", "LITTLE", "GPU", "NPU")] + [
    "MOSAIC-P", "MOSAIC-E", "AutoScale", "exhaustive", "HERTI"]
QUICK = {"MN-1.0": "mnasnet1_0", "MO-1.3": "mobilenet_v2_1.3"}  # --quick's workloads -> zoo models
SUBSETS = ("CPU", "CPU+GPU", "CPU+NPU", "all")
#: dqn's training steps in the quick run: past the ablation's restart episode (50), so "+ restarts" restarts once
STEPS = 60


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    """The two quick workloads, from the session's zoo cache (tests/zoo_models.py)."""
    from zoo_models import linked_zoo_models

    return linked_zoo_models(tmp_path_factory.mktemp("herti-models"), list(QUICK.values()))


@pytest.fixture(scope="module")
def quick(tmp_path_factory, models_dir):
    """One ``--quick`` run (the figures on two workloads, the ablation on one): its folder and what
    it printed. The script's ``main`` runs in this process (tests/benchmod.py): a process of its own
    imported torch, torchrl and matplotlib again, half of the run's 14 s of CPU."""
    from benchmod import load

    tmp_path = tmp_path_factory.mktemp("herti-quick")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = load("herti").main(["--quick", "--dqn-steps", str(STEPS), "--models-dir", str(models_dir),
                                       "--out", str(tmp_path / "h.json")])
        except SystemExit as e:          # the script's own one-line refusals
            code = e.code
    proc = types.SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return tmp_path, proc


@pytest.mark.timeout(900)          # the quick run (the figures and the ablation): minutes on a loaded machine
def test_herti_quick(quick):
    tmp_path, proc = quick
    out = tmp_path / "h.json"
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


#: the ablation's rows, cumulative: Alg. 1 alone, then one search addition at a time (the last is dqn's default)
ABLATION = {"Alg. 1 alone": {"episode": 0, "elite": 1, "mosaic_e": False, "polish": False},
            "+ restarts": {"episode": 50, "elite": 1, "mosaic_e": False, "polish": False},
            "+ elite pool": {"episode": 50, "elite": 8, "mosaic_e": False, "polish": False},
            "+ MOSAIC-E start": {"episode": 50, "elite": 8, "mosaic_e": True, "polish": False},
            "+ polish": {"episode": 50, "elite": 8, "mosaic_e": True, "polish": True}}
VERDICTS = {"reproduced", "missed", "not checked"}


@pytest.mark.timeout(900)
def test_herti_quick_ablation_and_claims(quick):
    tmp_path, proc = quick
    out = tmp_path / "h.json"
    doc = json.loads((tmp_path / "h-ablation.json").read_text())
    assert doc["script"] == "herti" and doc["part"] == "ablation" and doc["args"]["workloads"] == ["MN-1.0"]
    assert doc["args"]["deadline"] == "medium" and doc["args"]["steps_options"] == {"steps": STEPS}
    assert len(doc["args"]["left_out"]) == 6 and "MN-1.0" not in doc["args"]["left_out"]
    assert doc["command"].startswith("python benchmarks/herti.py --quick")
    from hetcc.experiments.sweep import read_table

    table = read_table(tmp_path / "h-ablation-sweep" / "cells.csv")
    # exact and Alg. 1 alone on both quick workloads (the DQN-alone target), the other four rows on MN-1.0
    assert len(table) == doc["sweep"]["cells"] == 2 + 2 + len(ABLATION) - 1
    assert {r["status"] for r in table} <= {"ok", "infeasible"}
    # every row ran dqn with its options and the same step budget, judged against exact
    rows = doc["runs"]
    assert not [r for r in rows if "error" in r], rows
    assert [r["config"] for r in rows] == list(ABLATION)
    for r in rows:
        assert r["options"] == {**ABLATION[r["config"]], "steps": STEPS}
        assert r["stats"]["steps"] == STEPS and r["optimum_mj"] > 0 and r["deadline_ms"] > 0
        assert r["feasible"] == (r["latency_ms"] <= r["deadline_ms"] * (1 + RTOL)), r
        if r["feasible"]:
            assert r["gap_to_exact"] == pytest.approx(r["energy_mj"] / r["optimum_mj"] - 1)
            assert r["gap_to_exact"] >= -1e-9        # nothing feasible beats the proven optimum
        if not r["options"]["polish"]:
            assert r["stats"]["polish_moves"] == 0
    summary = doc["ablation"]
    assert [a["config"] for a in summary] == list(ABLATION)
    for a in summary:
        gap = a["gap_by_workload"]["MN-1.0"]
        assert a["median_gap"] == a["worst_gap"] == gap and a["runs"] == 1
    # the target is judged on Alg. 1 alone over every workload of the run (the same cell on MN-1.0)
    t = doc["dqn_alone_target"]
    assert t["workloads"] == list(QUICK) and set(t["gap_by_workload"]) == set(QUICK)
    assert t["gap_by_workload"]["MN-1.0"] == summary[0]["gap_by_workload"]["MN-1.0"]
    assert t["alg1_alone_median_gap"] == pytest.approx(statistics.median(t["gap_by_workload"].values()))
    assert t["met"] == (t["alg1_alone_median_gap"] <= t["median_gap_at_most"] == 0.05)
    assert [r["config"] for r in doc["target_runs"]] == ["Alg. 1 alone"] * len(QUICK)
    # the claim table: every claim placed in the paper, with both values, a verdict, a cause for each miss
    claims = doc["claims"]
    assert doc["claims_from"] == str(out) and doc["figures_here"] is None   # the quick run has Figs. 8 and 10
    ids = [c["id"] for c in claims]
    assert len(ids) == len(set(ids)) >= 20
    assert {"fig5-tfl-npu-p", "fig5-autoscale", "fig8-cpu+gpu-vs-mosaic-p", "table4-first-npu",
            "fig6-optimal"} <= set(ids)
    for c in claims:
        assert set(c) == {"id", "where", "claim", "paper", "ours", "verdict", "cause"}, c
        assert c["where"].startswith("Sec. ") and c["claim"] and c["paper"] and c["ours"], c
        assert c["verdict"] in VERDICTS
        assert bool(c["cause"]) == (c["verdict"] != "reproduced"), c     # a cause exactly when it is not reproduced
    counts = doc["claim_counts"]
    verdicts = [c["verdict"] for c in claims]
    assert counts == {"claims": len(claims), "checked": len(claims) - verdicts.count("not checked"),
                      "reproduced": verdicts.count("reproduced"), "missed": verdicts.count("missed"),
                      "not_checked": verdicts.count("not checked")}
    # the claims the quick run has data for are checked (it lacks the short and long deadlines only)
    checked = {c["id"] for c in claims if c["verdict"] != "not checked"}
    assert {"fig5-herti", "fig6-vs-mosaic-p", "fig8-cpu+gpu-vs-mosaic-p", "fig10-optimal", "table4-first-npu",
            "fig6-optimal"} <= checked
    assert {"fig7-growth", "fig9-generality"}.isdisjoint(checked)
    assert "ablation" in proc.stdout and "claims" in proc.stdout
