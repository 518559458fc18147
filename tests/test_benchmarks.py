"""The benchmark scripts run (``--quick``, in a subprocess) and write the JSON they promise.

Only that they work and report measured, positive numbers is checked here; the figures
themselves come from full runs of the scripts, by hand (STYLE: no timed assertions in tests).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from extras import needs

pytestmark = [pytest.mark.zoo, pytest.mark.slow, pytest.mark.timeout(1800)]
needs("zoo", "torch", "torchvision")
pytest.importorskip("rich")

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
QUICK_MODEL = "squeezenet1_1"
PASSES = ("shapes", "constants", "canonical", "layers", "legality", "costs", "partition", "codegen")


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory):
    """One exported quick model for every script (from the session's zoo cache: tests/zoo_models.py)."""
    from zoo_models import linked_zoo_models

    return linked_zoo_models(tmp_path_factory.mktemp("bench-models"), [QUICK_MODEL])


def run_script(name: str, tmp_path: Path, models_dir: Path) -> tuple[dict, str]:
    out = tmp_path / f"{name}.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH / f"{name}.py"), "--quick", "--models-dir", str(models_dir), "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, f"{name}.py --quick exited {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    doc = json.loads(out.read_text())
    assert doc["script"] == name
    assert doc["date"]
    assert doc["machine"]["cpu_count"] >= 1 and doc["machine"]["onnxruntime"]
    assert doc["args"]["quick"] is True
    assert QUICK_MODEL in proc.stdout  # the table was printed
    return doc, proc.stdout


def test_compile_benchmark(tmp_path, models_dir):
    doc, stdout = run_script("compile", tmp_path, models_dir)
    assert set(doc["targets"]) == {"dp_ms", "exact_ms", "compile_s", "compile_model"}
    (row,) = doc["results"]
    assert row["model"] == QUICK_MODEL and row["target"] == "hikey970"
    assert row["nodes"] > 0 and row["layers"] > 0 and row["states"] == 25
    assert set(PASSES) <= set(row["passes_s"])
    assert all(row["passes_s"][p] > 0 for p in PASSES)
    assert row["compile_s"] > 0 and row["frontend_s"] > 0
    assert len(row["compile_runs_s"]) == doc["args"]["compile_repeats"]
    for planner in ("dp", "exact"):
        assert row[planner]["median_ms"] > 0 and all(t > 0 for t in row[planner]["runs_ms"])
        assert row[planner]["plan"]["num_slices"] >= 1
    exact = row["exact"]
    assert exact["fastest_latency_ms"] <= exact["deadline_ms"] <= exact["energy_optimal_latency_ms"]
    assert exact["plan"]["latency_ms"] <= exact["deadline_ms"] * (1 + 1e-9)
    assert set(row["targets_met"]) == {"dp", "exact", "compile"}
    assert row["targets_met"]["compile"] is None  # the compile target is ResNet-50's
    assert "PASS" in stdout or "MISS" in stdout


def test_runtime_overhead_benchmark(tmp_path, models_dir):
    doc, _ = run_script("runtime_overhead", tmp_path, models_dir)
    fit = doc["boundary_fit"]
    assert fit["delta_ms"] >= 0 and fit["beta_ms_per_byte"] >= 0 and len(fit["samples"]) >= 2
    (row,) = doc["results"]
    assert row["model"] == QUICK_MODEL and row["target"] == "host"
    assert row["mono_ms"] > 0 and row["mono_basic_ms"] > 0
    assert set(row["slices"]) == {"4", "8"}
    for n, d in row["slices"].items():
        assert d["chain_ms"] > 0 and d["hetcc_ms"] > 0 and d["chain_basic_ms"] > 0
        for key in ("chain_overhead_pct", "per_boundary_us", "fit_per_boundary_us", "hetcc_vs_chain_pct",
                    "hetcc_target_met"):
            assert key in d
        assert len(row["plans"][n]["slices"]) == int(n)
        assert len(row["plans"][n]["boundaries"]) == int(n) - 1
    # every variant (chains, hetcc runtime, BASIC) computes the same model
    assert row["max_rel_diff"] and all(v <= 1e-4 for v in row["max_rel_diff"].values())
    spin = row["spinning"]
    assert spin["slices"] == 8
    assert all(spin[k] > 0 for k in ("mono_ms", "chain_ms", "mono_spin_ms", "chain_spin_ms"))
    assert len(row["measurements"]["mono"]["runs_ms"]) == doc["args"]["rounds"]


def test_verify_zoo_benchmark(tmp_path, models_dir):
    doc, stdout = run_script("verify_zoo", tmp_path, models_dir)
    rows = doc["results"]
    assert {(r["target"], r["objective"]) for r in rows} == {
        ("hikey970", "latency"), ("hikey970", "energy"), ("host", "latency")}
    for r in rows:
        assert r["model"] == QUICK_MODEL
        assert r["ok"], r
        assert r["slices"] >= 1 and r["compile_s"] > 0
        assert r["max_rel_diff"] <= doc["rtol"] == 1e-4
        assert r["runtime_rel_diff"] and r["chain_rel_diff"]
    assert doc["failed"] == []
    assert "all 3 checks ok" in stdout


def test_exact_vs_spine_benchmark(tmp_path, models_dir):
    """--quick: exact and dp against the spine's (read from git history) on the quick model; in a
    checkout without that commit, a one-line error with exit 2 saying what to do."""
    has_spine = subprocess.run(["git", "cat-file", "-e", "07a1af3^{commit}"], cwd=ROOT,
                               capture_output=True).returncode == 0
    out = tmp_path / "exact_vs_spine.json"
    proc = subprocess.run([sys.executable, str(BENCH / "exact_vs_spine.py"), "--quick", "--models-dir",
                           str(models_dir), "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    if not has_spine:
        assert proc.returncode == 2 and "full git clone" in proc.stderr and not out.exists()
        return
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    doc = json.loads(out.read_text())
    assert doc["script"] == "exact_vs_spine" and doc["args"]["quick"] is True
    (row,) = doc["rows"]
    assert row["model"] == QUICK_MODEL and row["energy_mj"] > 0
    for key in ("ours_ms", "spine_ms", "plan_ms", "dp_ms", "dp_spine_ms"):
        assert row[key] > 0 and len(row["runs_ms"][key.removesuffix("_ms")]) == 3
    assert doc["summary"]["exact"]["models"] == doc["summary"]["dp"]["models"] == 1
    assert QUICK_MODEL in proc.stdout


def test_planners_benchmark(tmp_path):
    """Synthetic problems only (no model): every objective x constraint case at L = 20 and 250,
    exact's anytime mode, and the written JSON."""
    out = tmp_path / "planners.json"
    proc = subprocess.run([sys.executable, str(BENCH / "planners.py"), "--quick", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    doc = json.loads(out.read_text())
    assert doc["script"] == "planners" and doc["args"]["quick"] is True
    cases = {(r["layers"], r["metric"], r["constraint"]) for r in doc["summary"] if r["planner"] == "exact"}
    for metric in ("latency", "energy", "edp"):
        for constraint in ("none", "deadline", "power cap", "both"):
            assert (250, metric, constraint) in cases
    assert all(r["median_ms"] > 0 for r in doc["summary"])
    for a in doc["anytime"]:
        assert a["gap"] >= 0 and a["value"] >= a["lower_bound"] * (1 - 1e-9)
        assert a["excess_over_optimum"] >= -1e-9
    assert "PASS" in proc.stdout or "MISS" in proc.stdout


def test_planners_benchmark_on_a_real_graph(tmp_path, models_dir):
    """--graphs: the 12 exact cases on an exported model, each timed, in the JSON's graphs."""
    out = tmp_path / "planners-graphs.json"
    graph = models_dir / f"{QUICK_MODEL}-seed0.onnx"
    proc = subprocess.run([sys.executable, str(BENCH / "planners.py"), "--sizes", "20", "--seeds", "1", "--repeats",
                           "1", "--graphs", str(graph), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    doc = json.loads(out.read_text())
    rows = doc["graphs"]
    assert {(r["metric"], r["constraint"]) for r in rows} == {(m, c) for m in ("latency", "energy", "edp")
                                                               for c in ("none", "deadline", "power cap", "both")}
    assert all(r["graph"] == f"{QUICK_MODEL}-seed0" and r["ms"] > 0 and r["value"] > 0 for r in rows)
    assert all(r["optimal"] and r["target_met"] == (r["ms"] <= 1000) for r in rows)
    assert "exact on real graphs" in proc.stdout


def test_hostile_benchmark_counts_the_catalogue(tmp_path):
    """--quick runs the first two cases of each area and prints the five counts."""
    out = tmp_path / "hostile.json"
    proc = subprocess.run([sys.executable, str(BENCH / "hostile.py"), "--quick", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    doc = json.loads(out.read_text())
    assert doc["script"] == "hostile" and doc["args"]["quick"] is True
    areas = {r["id"].split("/")[0] for r in doc["cases"]}
    assert len(doc["cases"]) == 2 * len(areas) and {"flags", "models"} <= areas
    total = doc["summary"]["total"]
    assert total["cases"] == len(doc["cases"])
    assert proc.returncode == (1 if any(r["problems"] for r in doc["cases"]) else 0), proc.stderr[-3000:]
    for head in ("tracebacks", "wrong exit codes", "files lost", "written/read outside"):
        assert head in proc.stdout


def test_sweep_scaling_benchmark(tmp_path):
    """--quick: 1 and 2 embedded Ray workers on a 48-cell grid, the per-task overhead, the JSON."""
    out = tmp_path / "sweep.json"
    proc = subprocess.run([sys.executable, str(BENCH / "sweep_scaling.py"), "--quick", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    doc = json.loads(out.read_text())
    assert doc["cells"] == 48 and set(doc["median_sweep_s"]) == {"1", "2"}
    assert all(r["cells"] == 48 and r["errors"] == 0 for w in doc["runs"].values() for r in w)
    assert doc["ray_task_overhead_ms"]["batched_ms"] > 0 and doc["embedded_start_s"] > 0
    assert len(doc["speedup_per_pair"]) == 1 and doc["median_pair_speedup"] == doc["speedup_per_pair"][0]
    assert all(r["total_s"] >= r["sweep_s"] > 0 for w in doc["runs"].values() for r in w)
    assert "speed-up" in proc.stdout.lower() and "per interleaved pair" in proc.stdout


@pytest.mark.zoo
def test_sweep_agreement_benchmark(tmp_path):
    """--quick: a 3-cell zoo sweep (dp, exact, single:gpu), each cell compiled with the hetcc command; all agree."""
    out = tmp_path / "agree.json"
    proc = subprocess.run([sys.executable, str(BENCH / "sweep_agreement.py"), "--quick", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    doc = json.loads(out.read_text())
    assert doc["finished_cells"] == 3 and doc["sampled"] == 3 == doc["agree"]
    assert all(c["agree"] and c["rel_diff"] <= 1e-6 and c["compile"]["latency_ms"] > 0 for c in doc["cells"])
    assert "3 of 3 sampled cells" in proc.stdout
