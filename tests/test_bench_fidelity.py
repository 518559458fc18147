"""benchmarks/fidelity.py: its paper numbers are the observations file's, its Fig. 5 plans are what
they say, its leave-out folds leave out what they say, and ``--quick`` runs and writes a well-formed
JSON of finite numbers, every row fitted or held out with a prediction from a refit that did not see it.

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

from extras import needs

from hetcc.planners.baselines import device_preferred
from hetcc.planners.problem import PlanningProblem, Slice, StateTable

pytestmark = [pytest.mark.zoo, pytest.mark.slow, pytest.mark.timeout(1800)]

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


# ---- leave-out refits --------------------------------------------------------------------------

def test_every_fitted_csv_row_has_a_kind_and_memory_rows_none():
    kinds = [fidelity.row_kind(r) for r in csv_rows()]
    assert kinds.count(None) == 10                    # the memory rows: inputs, never fitted
    assert {k for k in kinds if k} == set(fidelity.KINDS)
    assert kinds.count("table1") == 10 and kinds.count("table3") + kinds.count("table4") == 43
    assert kinds.count("gains-latency") == kinds.count("gains-energy") == 8


def test_table_rows_map_to_the_kinds_they_are_fitted_from():
    kind = fidelity.row_kind
    assert kind({"part": "table1", "what": "Table I: IN on the GPU, ms"}) == "table1"
    assert kind({"part": "gains", "what": "x", "metric": "energy"}) == "gains-energy"
    assert kind({"part": "plans", "what": "Table III: devices ..."}) == "table3"
    assert kind({"part": "plans", "what": "Table IV: device states ..."}) == "table4"
    assert kind({"part": "little", "what": "Table IV: IN's energy plan uses LITTLE"}) == "table4"
    assert all(kind({"part": p, "what": "x"}) is None for p in ("fig5", "fig10", "fig11", "herti"))


def test_a_fold_file_leaves_out_its_rows_and_names_the_exported_files(tmp_path):
    obs = fidelity.Observations(CSV)
    files = {m: tmp_path / f"{m}-seed0.onnx" for m in ("mnasnet1_0", "mnasnet0_5", "mobilenet_v2")}
    out = tmp_path / "fold.csv"
    n = obs.write(out, lambda r: not (r["kind"] in ("latency", "plan_uses") and r["model"] == "mnasnet1_0"), files)
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# hetcc.observations/1")       # the comments kept
    rows = list(csv.DictReader([ln for ln in text.splitlines() if not ln.startswith("#")]))
    # the quick models' rows only (a gain row names models not in ``files``), MN-1.0's fitted rows gone
    assert {r["model"] for r in rows} == {str(files["mnasnet1_0"]), str(files["mnasnet0_5"]), str(files["mobilenet_v2"])}
    assert [r["kind"] for r in rows if r["model"] == str(files["mnasnet1_0"])] == ["memory"]
    assert n == 2 == sum(r["kind"] != "memory" for r in rows)   # the latency rows of MN-0.5 and MO-1.0


def test_the_committed_fit_options_and_the_base_power_variants():
    opts = fidelity.refit_options(fidelity.REFIT_ARGS.read_text(encoding="utf-8"))
    assert opts.sets == ["base_power_mw=0"] and opts.range_factor == 100.0
    assert "gpu.peak_gflops.conv" in opts.free and "big.peak_gflops.conv=2:75" in opts.bounds
    free = fidelity.with_base_power(opts, "free")
    assert free.sets == [] and free.free == [*opts.free, "base_power_mw"] and free.bounds == opts.bounds
    at = fidelity.with_base_power(opts, "250")
    assert at.sets == ["base_power_mw=250"] and at.free == opts.free
    assert vars(fidelity.with_base_power(opts, "0")) == vars(opts)      # the built-in board's own fit


def test_folds_by_model_deal_every_model_into_exactly_one_fold():
    labels = list(fidelity.MODELS)
    for k in (1, 2, 5, 10, 50):
        folds = fidelity.folds_by_model(labels, k)
        assert len(folds) == min(k, len(labels)) and all(folds)
        assert sorted(w for f in folds for w in f) == sorted(labels)
    assert all(set(f) & set(fidelity.LARGE) for f in fidelity.folds_by_model(labels, 5))


def test_held_out_predictions_are_attached_by_scheme():
    rows = [fidelity.numeric_row("table1", "Table I: IN on the GPU, ms", 430.0, 420.0),
            fidelity.numeric_row("gains", "Sec. VI: g", 0.5, 0.5, metric="latency"),
            fidelity.numeric_row("herti", "held out, HERTI", 0.28, 0.1)]
    by_model = {rows[0]["what"]: (fidelity.numeric_row("table1", "x", 430.0, 300.0), "1/5 (IN, RN)", None),
                rows[1]["what"]: (fidelity.numeric_row("gains", "x", 0.5, 0.5), "all", None)}
    by_kind = {rows[0]["what"]: (fidelity.numeric_row("table1", "x", 430.0, 431.0), "table1", None),
               rows[1]["what"]: (None, "gains-latency", "refit failed: UsageError: no")}
    fidelity.attach_held_out(rows, by_model, by_kind)
    t1, gain, h = rows
    assert t1["fit"] == gain["fit"] == "fitted" and h["fit"] == "held out"
    assert t1["held_out"] == {**t1["by_model"], "scheme": "by model"} and t1["held_out"]["verdict"] == "MISS"
    assert t1["by_kind"]["ours"] == 431.0 and t1["by_kind"]["verdict"] == "ok"
    # a gain row spans several models: the by-kind refit is its held-out prediction, even when it failed
    assert gain["held_out"]["scheme"] == "by kind" and gain["held_out"]["verdict"] == "n/a"
    assert "refit failed" in gain["held_out"]["note"]
    assert h["held_out"]["ours"] == 0.1 and h["held_out"]["scheme"] == "never fitted"
    s = fidelity.summarise(rows)
    assert s["fitted"] == {"rows": 2, "ok": 2, "MISS": 0, "n/a": 0}
    assert s["held_out"] == {"rows": 3, "ok": 0, "MISS": 2, "n/a": 1}
    assert s["by_kind"] == {"rows": 2, "ok": 1, "MISS": 0, "n/a": 1}


def test_a_refused_refit_keeps_the_pushed_parameters_at_the_prior_and_fits_again(tmp_path, monkeypatch):
    """As hetcc calibrate does for a parameter it cannot fit: the refusal's parameters are fixed, the
    fit repeated; a refusal with nothing left to keep is the refit's error."""
    needs("calibrate", "scipy", "tomlkit")
    import hetcc.measure.calibrate as calibration
    from types import SimpleNamespace

    calls = []

    class Refused(Exception):
        def __init__(self, drops):
            super().__init__("pushed to a bound")
            self.drops = drops

    def fake(prior, files, out, *, free, fix, bounds, range_factor, sets):
        calls.append(list(fix))
        if len(calls) == 1:
            raise Refused([("big.dynamic_power_mw", "bound"), ("little.dynamic_power_mw", "bound")])
        Path(out).write_text("base_power_mw = 0.0\n", encoding="utf-8")
        return (SimpleNamespace(obs=[]), SimpleNamespace(free=[0], nfev=3, converged=True,
                                                          after=SimpleNamespace(predicted=np.zeros(0))), "")

    monkeypatch.setattr(calibration, "calibrate", fake)
    opts = fidelity.refit_options(fidelity.REFIT_ARGS.read_text(encoding="utf-8"))
    refits = fidelity.Refits(Path("prior.toml"), CSV, opts, {}, SimpleNamespace(print=lambda *a, **k: None))
    try:
        info = refits.fit("f", lambda r: True)
        assert calls == [[], ["big.dynamic_power_mw", "little.dynamic_power_mw"]]
        assert info["kept_at_prior"] == ["big.dynamic_power_mw", "little.dynamic_power_mw"] and "error" not in info
        assert info["target"] and info["base_power_mw"] == 0.0
        calls.clear()
        monkeypatch.setattr(calibration, "calibrate", lambda *a, **k: (_ for _ in ()).throw(Refused([])))
        failed = refits.fit("g", lambda r: True)
        assert failed["target"] is None and failed["error"].startswith("Refused: ")
    finally:
        refits.close()


@pytest.mark.parametrize("argv, culprit", [(["--folds", "-1"], "--folds -1"), (["--base-powers", "0,lots"], "'lots'")])
def test_bad_options_are_one_line_errors(argv, culprit, capsys):
    with pytest.raises(SystemExit) as e:
        fidelity.main(argv)
    assert e.value.code == 2 and culprit in capsys.readouterr().err


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    """--quick's models, from the session's zoo cache (tests/zoo_models.py)."""
    needs("zoo", "torch", "torchvision")
    from zoo_models import linked_zoo_models

    labels = sorted({*fidelity.QUICK["large"], *fidelity.QUICK["small"], fidelity.QUICK["fig5"]})
    return linked_zoo_models(tmp_path_factory.mktemp("fidelity-models"), [fidelity.MODELS[x][0] for x in labels])


def no_constant(text: str) -> float:
    raise AssertionError(f"non-finite number {text} in the JSON")


@pytest.mark.zoo
@pytest.mark.slow
@pytest.mark.timeout(900)              # eight refits: a few seconds each, minutes on a loaded machine
def test_fidelity_quick(tmp_path, models_dir):
    needs("calibrate", "scipy", "tomlkit")
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
    # fitted or held out, and a prediction from a refit that did not see each fitted row
    assert doc["args"]["folds"] == 2 and doc["args"]["base_powers"] == ["0", "1000"]
    refits = doc["refits"]
    assert [(f["scheme"], f["fold"]) for f in refits] == [("by model", "1/2"), ("by model", "2/2"),
                                                          ("by kind", "table3"), ("by kind", "table4")]
    assert all("error" not in f and f["rows"] > 0 and f["free"] == 1 for f in refits), refits
    assert sorted(w for f in refits[:2] for w in f["held_out"]) == sorted(doc["models"])
    for r in rows:
        fitted = r["part"] in ("table1", "gains", "plans", "little")
        assert r["fit"] == ("fitted" if fitted else "held out"), r
        h = r["held_out"]
        assert h["verdict"] in ("ok", "MISS", "n/a")
        if not fitted:
            assert h["ours"] == r["ours"] and h["scheme"] == "never fitted"
        elif r["part"] == "gains":           # --quick has no gain fold: its models have no gain rows
            assert h["verdict"] == "n/a" and "by_model" not in r
        else:                                 # one model's numbers: its by-model fold
            assert h["scheme"] == "by model" and h == {**r["by_model"], "scheme": "by model"}
            assert h["ours"] is not None
    for r in by["table1"]:                    # judged as the fitted board's value is, in the fold of its model
        h, label = r["held_out"], r["what"].split(" ")[2]
        assert h["verdict"] == ("ok" if abs(h["ours"] / r["paper"] - 1) <= 0.2 else "MISS")
        assert label in h["fold"].split(" (")[1].rstrip(")").split(", ")
    # each model planned on the refit that left it out: not the fitted board's numbers
    assert any(not math.isclose(r["held_out"]["ours"], r["ours"], rel_tol=1e-6) for r in by["table1"])
    kinds = [r for r in rows if "by_kind" in r]
    assert {fidelity.row_kind(r) for r in kinds} == {"table3", "table4"} and all(r["by_kind"]["ours"] is not None
                                                                                for r in kinds)
    s = doc["summary"]
    assert s["held_out"]["rows"] == len(rows) == s["fitted"]["rows"] + s["never_fitted"]["rows"]
    assert s["held_out"]["ok"] == sum(r["held_out"]["verdict"] == "ok" for r in rows)
    assert s["by_model"]["rows"] == sum("by_model" in r for r in rows) == len(by["table1"]) + len(by["plans"]) \
        + len(by["little"])
    # the sensitivity: the held-out HERTI rows at each base power, from a refit that set it
    values = doc["base_power"]["values"]
    assert doc["base_power"]["built_in_mw"] == 0.0
    assert [(v["base_power"], v["base_power_mw"]) for v in values] == [("0", 0.0), ("1000", 1000.0)]
    for v in values:
        assert [r["what"] for r in v["rows"]] == [r["what"] for r in by["herti"]]
        assert all(math.isfinite(r["ours"]) and r["verdict"] in ("ok", "MISS") for r in v["rows"])
        assert v["refit"]["fit"]["latency"]["rows"] == 3
    assert values[0]["rows"][0]["ours"] != pytest.approx(values[1]["rows"][0]["ours"], rel=1e-3)
