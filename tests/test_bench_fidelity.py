"""benchmarks/fidelity.py: its paper numbers are the observations file's, its Fig. 5 plans are what
they say, and ``--quick`` runs and writes a well-formed JSON of finite numbers.

No assertion on the verdicts: they judge the board model, which is being refitted.
"""
from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hetcc.planners.baselines import device_preferred
from hetcc.planners.problem import PlanningProblem, Slice, StateTable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import fidelity  # noqa: E402

CSV = ROOT / "targets" / "observations" / "hikey970-mosaic.csv"
PARTS = {"table1", "gains", "plans", "little", "fig5", "fig10", "fig11", "herti"}


def csv_rows() -> list[dict[str, str]]:
    lines = [ln for ln in CSV.read_text(encoding="utf-8").splitlines() if not ln.startswith("#")]
    return list(csv.DictReader(lines))


def test_paper_numbers_match_the_observations_file():
    """The script's PAPER and the CSV state the same numbers (one is not edited without the other)."""
    label = {zoo: w for w, (zoo, _) in fidelity.MODELS.items()}
    rows = csv_rows()
    latency = {label[r["model"]]: float(r["value"]) for r in rows if r["kind"] == "latency"}
    assert latency == fidelity.PAPER["table1_gpu_ms"]
    assert {r["device"] for r in rows if r["kind"] == "latency"} == {"gpu"}
    gains: dict[str, dict[str, float]] = {}
    for r in (r for r in rows if r["kind"] == "gain"):
        models = tuple(label[m] for m in r["model"].split("+"))
        which = {fidelity.LARGE: "large", fidelity.SMALL: "small"}[models]
        name, _, governor = r["baseline"].partition(" ")
        assert governor == ("governor=ondemand" if r["objective"] == "energy" else "")
        gains.setdefault(f"{which} {r['objective']}", {})[name.split(":")[1]] = float(r["value"])
    assert gains == fidelity.PAPER["gains"]
    uses = [r for r in rows if r["kind"] == "plan_uses"]
    assert all(r["value"] == "1" and r["planner"] == "dp" for r in uses)
    t3: dict[str, set] = {}
    t4: dict[str, set] = {}
    for r in uses:
        if r["objective"] == "latency":
            assert r["freq_mhz"] == ""
            t3.setdefault(label[r["model"]], set()).add(r["device"])
        else:
            t4.setdefault(label[r["model"]], set()).add((r["device"], int(r["freq_mhz"])))
    assert t3 == fidelity.PAPER["table3_devices"] and t4 == fidelity.PAPER["table4_states"]
    assert all("MOSAIC PACT'19" in r["source"] and "(l. " in r["source"] for r in rows)


def chain(num_layers: int, npu_illegal: tuple[int, ...] = ()) -> PlanningProblem:
    """A problem over (big, gpu, npu) with boundary costs that differ per layer."""
    rng = np.random.default_rng(7)
    L, S = num_layers, 3
    legal = np.ones((L, S), bool)
    legal[list(npu_illegal), 2] = False
    t_in, t_out = rng.uniform(0.1, 2.0, (L, S)), rng.uniform(0.1, 2.0, (L, S))
    return PlanningProblem(latency_ms=rng.uniform(1, 5, (L, S)), power_mw=np.full((L, S), 1000.0),
                           transfer_in_ms=t_in, transfer_out_ms=t_out, transfer_in_mj=t_in, transfer_out_mj=t_out,
                           legal=legal, param_bytes=np.zeros(L, np.int64), capacity_bytes=np.full(S, np.inf),
                           base_power_mw=0.0, states=StateTable.build(("big", "gpu", "npu"), (2000, 700, 960)))


def test_three_slice_plans_are_what_they_say():
    p = chain(6)
    cuts, lat, n = fidelity.three_slice_latencies(p, 2)
    assert cuts == [(a, b) for a in range(1, 6) for b in range(a + 1, 6)] and (n == 3).all()
    for (c1, c2), t in zip(cuts, lat):
        want = p.evaluate([Slice(0, c1 - 1, 2), Slice(c1, c2 - 1, 2), Slice(c2, 5, 2)]).latency_ms
        assert math.isclose(t, want, rel_tol=1e-12)
    assert len(set(np.round(lat, 9))) > 1           # the cuts matter: boundary costs differ per layer


def test_three_slice_plans_take_the_fallback_path():
    """Layer 2 cannot run on the NPU: it runs alone on the first fallback (the NPU, else the GPU)."""
    p = chain(5, npu_illegal=(2,))
    whole = fidelity._Segment(p, 0, 4)
    assert device_preferred(whole, 2) == device_preferred(p, 2).slices
    cuts, lat, n = fidelity.three_slice_latencies(p, 2)
    i = cuts.index((1, 3))            # [0] [1, 2] [3, 4] -> npu | npu, gpu | npu
    want = p.evaluate([Slice(0, 0, 2), Slice(1, 1, 2), Slice(2, 2, 1), Slice(3, 4, 2)]).latency_ms
    assert n[i] == 4 and math.isclose(lat[i], want, rel_tol=1e-12)


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    """--quick's models, exported here (not into the repo's model cache)."""
    pytest.importorskip("torch")
    pytest.importorskip("torchvision")
    from hetcc.compiler import zoo

    root = tmp_path_factory.mktemp("fidelity-models")
    for label in {*fidelity.QUICK["large"], *fidelity.QUICK["small"], fidelity.QUICK["fig5"]}:
        name = fidelity.MODELS[label][0]
        zoo.export(name, root / f"{name}-seed0.onnx", seed=0)
    return root


def no_constant(text: str) -> float:
    raise AssertionError(f"non-finite number {text} in the JSON")


@pytest.mark.zoo
def test_fidelity_quick(tmp_path, models_dir):
    out = tmp_path / "f.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fidelity.py"), "--quick",
                           "--models-dir", str(models_dir), "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    doc = json.loads(out.read_text(), parse_constant=no_constant)
    assert doc["script"] == "fidelity" and doc["target"] == "hikey970" and doc["args"]["quick"] is True
    assert doc["args"]["herti_planner"] == "exact" and doc["tolerance"] == 0.2
    assert all(m["analysed"] and m["layers"] > 0 and m["error"] is None for m in doc["models"].values())
    rows = doc["rows"]
    assert {r["part"] for r in rows} == PARTS
    for r in rows:
        assert {"part", "what", "paper", "ours", "ratio", "verdict", "note"} <= set(r), r
        assert r["verdict"] in ("ok", "MISS") and r["ours"] is not None, r   # everything is built for --quick
    by = {p: [r for r in rows if r["part"] == p] for p in PARTS}
    assert len(by["table1"]) == 3 and len(by["gains"]) == 16 and len(by["herti"]) == 2
    for r in by["table1"] + by["gains"] + by["fig5"] + by["herti"]:
        assert isinstance(r["ours"], float) and math.isfinite(r["ours"]) and math.isfinite(r["ratio"])
        assert r["verdict"] == ("ok" if abs(r["ours"] / r["paper"] - 1) <= 0.2 else "MISS")
    for r in by["table1"]:
        assert r["ours"] > 0
    for r in by["gains"]:
        ratios = list(r["per_model_ratio"].values())
        assert r["ours"] < 1 and math.isclose(1 - r["ours"], math.prod(ratios) ** (1 / len(ratios)), rel_tol=1e-9)
        assert r["ours"] >= -1e-9          # dp is the optimum of its metric: never worse than a baseline
    f5 = by["fig5"][0]
    assert 0 < f5["best_ms"] <= f5["worst_ms"] and math.isclose(f5["ours"], 1 - f5["best_ms"] / f5["worst_ms"])
    for fig in ("fig10", "fig11"):
        norm = by[fig][0]["normalised"]
        assert norm["TF-GPU-O"] == 1.0 and all(v > 0 for v in norm.values())
    assert by["fig11"][0]["normalised"]["MOSAIC"] <= by["fig11"][0]["normalised"]["HCCA"] * (1 + 1e-9)
    for r in by["herti"]:              # the optimum under the deadline: no more energy than either reference
        assert all(v > 0 for e in r["energy_mj"].values() for v in e.values()) and r["ours"] >= -1e-9
    assert "paper vs ours" in proc.stdout and str(out) in proc.stdout
