"""Mixes in ``hetcc sweep`` and ``hetcc tune``: a models entry that is a list is a mix planned by
a workload planner; its row holds T_norm, J, O and the gap to ``optimum``; bad specs are one
line, exit 2; tune over ``ga``'s options (its problems and trials, without Ray). No Ray here: the
mix sweep on Ray is tests/test_sweep.py's test_a_mix_sweep_on_embedded_ray, on that module's
embedded Ray (a Ray start of its own here cost seconds of CPU more)."""
from __future__ import annotations

from pathlib import Path

import pytest

from extras import needs
from hetcc.core.errors import UsageError
from hetcc.experiments.sweep import COLUMNS, load_spec, parse_spec
from hetcc.experiments.sweep.cells import gap_pct, plan_mix_group
from text_models import CHAIN, IDENTITY_CHAIN

ROOT = Path(__file__).resolve().parents[1]
MIX = """models = [["a.onnx", "b.onnx"]]
targets = ["orangepi5"]
objectives = ["overall", "fairness", "latency"]
planners = ["auto", "optimum", "independent", "ga population=6 generations=3"]
"""


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    import onnx
    import onnx.parser

    d = tmp_path_factory.mktemp("mix-models")
    onnx.save(onnx.parser.parse_model(CHAIN), str(d / "a.onnx"))
    onnx.save(onnx.parser.parse_model(IDENTITY_CHAIN), str(d / "b.onnx"))
    return d


def write(d: Path, text: str, name: str) -> Path:
    (d / name).write_text(text)
    return d / name


def rows_of(spec, d):
    settings = {"max_cut_tensors": 1, "gap_to": spec.gap_to, "workload_gap_to": spec.workload_gap_to,
                "artifacts": False, "out": str(d)}
    return {(r["planner"], r["objective"]): r for batch in
            plan_mix_group([str(d / "a.onnx"), str(d / "b.onnx")], "orangepi5", spec.cells(), settings) for r in batch}


@pytest.mark.parametrize("text, needle", [
    ('models = [["a.onnx", "b.onnx"]]\nplanners = ["dp"]', "planners[0] 'dp' plans one model"),
    ('models = ["a.onnx"]\nplanners = ["ga"]', "planners[0] 'ga' plans several models at once"),
    ('models = [["a.onnx"]]', "a mix is two or more models"),
    ('models = ["a.onnx"]\nobjectives = ["overall"]', "objectives[0] 'overall' scores several models"),
    ('models = [["a.onnx", "b.onnx"]]\nobjectives = ["speed"]', "a mix also throughput"),
    ('models = [["a.onnx", "nosuch"]]', "'nosuch': not a zoo model"),
    ('models = [["a.onnx", "b.onnx"]]\ngap_to = ["optimum", "ga"]', "two workload planners"),
    ('models = [["a.onnx", "b.onnx"]]\nplanners = ["auto beam=2"]', "'auto' takes no options"),
    ('models = [["a.onnx", "b.onnx"]]\nplanners = ["ga population=-1"]', "population"),
])
def test_bad_mix_specs_are_one_line_errors_with_exit_2(models, tmp_path, capsys, text, needle):
    from hetcc.cli import main

    spec = write(models, text, f"bad-{abs(hash(text))}.toml")
    with pytest.raises(UsageError) as e:
        load_spec(spec)
    assert needle in str(e.value)
    assert main(["sweep", str(spec), "-o", str(tmp_path / "out"), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hetcc: error: ") and needle in err[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.multi
def test_a_mix_cell_reports_the_workload_metrics_and_its_gap_to_optimum(models):
    needs("multi")
    spec = load_spec(write(models, MIX, "mix.toml"))
    assert spec.mixes == {"a.onnx+b.onnx": ("a.onnx", "b.onnx")} and spec.workload_gap_to == "optimum"
    assert len(spec.cells()) == 3 * 4
    rows = rows_of(spec, models)
    assert all(r["mix_models"] == 2 and set(r) == set(COLUMNS) for r in rows.values())
    for planner in ("auto", "optimum", "ga"):
        r = rows[(planner, "overall")]
        assert r["status"] == "ok" and r["feasible"] is True, r["error"]
        assert r["overall"] == pytest.approx(r["t_norm"] * r["jain"]) and r["value"] == r["overall"]
        assert r["reference"] == rows[("optimum", "overall")]["value"] and r["gap_pct"] is not None
    assert rows[("optimum", "overall")]["gap_pct"] == 0.0 and rows[("auto", "overall")]["gap_pct"] == 0.0
    assert rows[("auto", "fairness")]["value"] == rows[("auto", "fairness")]["jain"]
    # a plan metric: independent (auto) with the models' summed latency, no contention score, no gap
    lat = rows[("auto", "latency")]
    assert lat["status"] == "ok" and lat["value"] == lat["latency_ms"] > 0 and lat["overall"] == ""
    assert lat["gap_pct"] == "" and rows[("independent", "latency")]["value"] == lat["value"]
    # a planner that does not optimise the objective is skipped, with the reason
    assert rows[("ga", "latency")]["status"] == "skipped" and "does not optimise latency" in rows[("ga", "latency")]["error"]
    assert rows[("independent", "overall")]["status"] == "skipped"


@pytest.mark.multi
def test_artifacts_true_writes_a_mix_cell_as_a_workload_artifact(models, tmp_path):
    needs("multi")
    from hetcc.runtime.manifest import load_manifest

    spec = parse_spec({"models": [["a.onnx", "b.onnx"]], "targets": ["orangepi5"], "objectives": ["overall"],
                       "artifacts": True}, models / "art.toml")
    settings = {"max_cut_tensors": 1, "gap_to": None, "workload_gap_to": None, "artifacts": True, "out": str(tmp_path)}
    [row] = [r for b in plan_mix_group([str(models / "a.onnx"), str(models / "b.onnx")], "orangepi5", spec.cells(),
                                       settings) for r in b]
    assert row["status"] == "ok" and row["planner"] == "auto" and row["artifact"]
    w = load_manifest(Path(row["artifact"])).workload
    assert w.planner.name == "optimum" and w.contention.metrics.overall == pytest.approx(row["overall"])


def test_the_gap_is_positive_when_worse_for_either_direction():
    assert gap_pct("latency", 12.0, 10.0) == pytest.approx(20.0)
    assert gap_pct("overall", 8.0, 10.0) == pytest.approx(20.0)       # O: higher is better
    assert gap_pct("overall", 10.0, 10.0) == 0.0 and gap_pct("overall", 1.0, None) is None


def test_gap_to_names_one_reference_per_kind(models):
    doc = {"models": [["a.onnx", "b.onnx"]]}
    p = models / "g.toml"
    assert (parse_spec(doc, p).gap_to, parse_spec(doc, p).workload_gap_to) == ("exact", "optimum")
    s = parse_spec(doc | {"gap_to": ["dp", "ga"]}, p)
    assert (s.gap_to, s.workload_gap_to) == ("dp", "ga")
    s = parse_spec(doc | {"gap_to": "none"}, p)
    assert (s.gap_to, s.workload_gap_to) == (None, None)


def test_the_workload_example_is_a_valid_spec():
    spec = load_spec(ROOT / "examples" / "sweep_workload.toml")
    assert spec.mixes and all(len(m) >= 2 for m in spec.mixes.values())
    assert {c.objective for c in spec.cells()} == {"overall"}


@pytest.mark.multi
def test_tune_a_workload_planner_against_optimum_without_ray(models):
    needs("multi")
    from hetcc.experiments.tune import evaluate, load_tune_spec, prepare_problems

    spec = load_tune_spec("ga", write(models, MIX.split("planners")[0].replace('"latency"', '"throughput"')
                                      + "samples = 2\n[space]\npopulation = {int = [4, 8]}\n", "tune.toml"))
    assert (spec.kind, spec.reference, spec.space) == ("workload", "optimum", {"population": ("int", 4, 8)})
    problems = prepare_problems(spec)
    assert len(problems) == 3 and all(p.reference > 0 for p in problems)
    gap = evaluate("ga", {"population": 4, "generations": 2}, problems, spec.seeds)
    assert 0.0 <= gap < 100.0
    with pytest.raises(UsageError, match="plans several models at once: give mixes"):
        load_tune_spec("ga", write(models, 'models = ["a.onnx"]\n', "tune1.toml"))
    with pytest.raises(UsageError, match="give a workload planner"):
        load_tune_spec("ga", write(models, 'models = [["a.onnx", "b.onnx"]]\nreference = "exact"\n'
                                    '[space]\npopulation = {int = [4, 8]}\n', "tune2.toml"))
