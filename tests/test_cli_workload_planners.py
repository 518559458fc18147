"""``hetcc compile a.onnx b.onnx --planner ga|optimum|all-gpu|rr|mosaic``: the objective, the
manifest's contention block, ``hetcc inspect`` and ``--plot`` of it, ``hetcc planners``, and
the one-line errors."""
from __future__ import annotations

import json

import pytest

from extras import needs
from hetcc.runtime.manifest import load_manifest
from test_cli import assert_one_line_error, run
from text_models import CHAIN, IDENTITY_CHAIN


@pytest.fixture
def models(tmp_path, write_text_model):
    return [str(write_text_model(CHAIN, tmp_path / "a.onnx")), str(write_text_model(IDENTITY_CHAIN, tmp_path / "b.onnx"))]


@pytest.mark.multi
@pytest.mark.plot
def test_compile_a_workload_with_ga_then_inspect_and_plot_it(capsys, models, tmp_path):
    needs("multi")
    needs("plot")
    out = tmp_path / "mix"
    code, _, err = run(capsys, "compile", *models, "--target", "orangepi5", "--planner", "ga",
                       "--planner-option", "population=8", "--planner-option", "generations=3", "-o", str(out))
    assert code == 0, err
    m = load_manifest(out)
    w = m.workload
    assert w.objective.metric == "overall" and w.planner.name == "ga" and w.contention is not None
    c = w.contention
    assert set(c.models) == {"a", "b"} and set(c.devices) == {"big", "little", "gpu"}
    for name, model in c.models.items():
        sub = load_manifest(out / f"models/{name}")
        slices = sub.slices
        assert [(s.device, s.first_layer, s.last_layer + 1) for s in slices] == \
            [(st.device, st.first, st.stop) for st in model.pipeline]          # slice i = stage i
        assert 0 < model.throughput_ips <= model.alone_ips * (1 + 1e-9)
        for st in model.pipeline:
            assert name in c.devices[st.device].models
    assert c.metrics.overall == pytest.approx(c.metrics.normalised * c.metrics.jain)
    assert all(0 <= d.utilisation <= 1 for d in c.devices.values())
    code, text, err = run(capsys, "inspect", str(out))
    assert code == 0, err
    assert "utilisation" in text and "shared inf/s" in text and "Jain J" in text and "overall O" in text
    code, _, err = run(capsys, "inspect", str(out), "--plot", str(tmp_path / "mix.svg"))
    assert code == 0, err
    svg = (tmp_path / "mix.svg").read_text()
    assert "inf/s shared" in svg and "gpu" in svg


def test_compile_json_holds_the_prediction_and_independent_has_no_contention(capsys, models, tmp_path):
    code, out, err = run(capsys, "compile", *models, "--target", "orangepi5", "--planner", "all-gpu", "--json",
                         "--objective", "fairness")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["metric"] == "fairness"
    assert all(p == [{"device": "gpu", "first": 0, "stop": p[0]["stop"]}]
               for p in doc["contention"]["pipelines"].values())
    assert doc["contention"]["score"]["T_norm"] == pytest.approx(1.0)
    code, _, err = run(capsys, "compile", *models, "--target", "orangepi5", "-o", str(tmp_path / "ind"))
    assert code == 0, err
    assert load_manifest(tmp_path / "ind").workload.contention is None


@pytest.mark.parametrize("argv,code,needles", [
    (["--objective", "speed"], 2, ["unknown objective 'speed'", "overall"]),
    (["--planner", "ga", "--objective", "latency"], 2, ["does not optimise latency"]),
    (["--planner", "ga", "--planner-option", "population=1"], 2, ["population=1", "at least 4"]),   # before pymoo
    (["--planner", "rr:npu"], 2, ["rr", "expected one of cpu, gpu"]),
    (["--planner", "optimum", "--planner-option", "limit=3"], 2, ["exceed limit=3", "blocks="]),
    (["--planner", "all-gpu", "--deadline", "0.001ms"], 3, ["misses the 0.001 ms deadline"]),
])
def test_workload_errors_are_one_line_with_the_right_exit_code(capsys, models, argv, code, needles):
    got, _, err = run(capsys, "compile", *models, "--target", "orangepi5", *argv)
    assert got == code
    assert_one_line_error(err, *needles)


def test_a_workload_objective_for_one_model_is_one_line(capsys, models):
    got, _, err = run(capsys, "compile", models[0], "--target", "orangepi5", "--objective", "overall")
    assert got == 2
    assert_one_line_error(err, "several models")


def test_planners_lists_the_workload_planners_and_the_masking_rule(capsys):
    code, out, _ = run(capsys, "planners", "--json")
    rows = {r["name"]: r for r in json.loads(out)}
    for name in ("all-gpu", "rr:<on>", "mosaic", "ga", "optimum"):
        assert rows[name]["plans"] == "workload" and rows[name]["metrics"][0] == "overall"
    code, out, _ = run(capsys, "planners")
    assert "never returns to a device it has left" in " ".join(out.split())


def test_a_contention_block_naming_another_model_is_refused(capsys, models, tmp_path):
    from hetcc.runtime.errors import ManifestError

    out = tmp_path / "mix"
    code, _, err = run(capsys, "compile", *models, "--target", "orangepi5", "--planner", "all-gpu", "-o", str(out))
    assert code == 0, err
    path = out / "manifest.json"
    doc = json.loads(path.read_text())
    doc["workload"]["contention"]["models"]["z"] = doc["workload"]["contention"]["models"].pop("a")
    path.write_text(json.dumps(doc))
    with pytest.raises(ManifestError, match=r"workload\.contention\.models.*names models"):
        load_manifest(out)


@pytest.mark.learn
@pytest.mark.multi
def test_fairboost_records_its_agent_and_inspect_names_it(capsys, models, tmp_path):
    needs("learn", "torch", "torchrl")
    from hetcc.planners.fairboost import DEFAULT_AGENT, SHIPPED_NAME
    from hetcc.planners.fairboost.agent import sha256_of

    out = tmp_path / "mix"
    code, _, err = run(capsys, "compile", *models, "--target", "orangepi5", "--planner", "fairboost",
                       "--planner-option", "evaluations=200", "-o", str(out))
    assert code == 0, err
    agent = load_manifest(out).workload.planner.stats["agent"]
    assert agent["file"] == SHIPPED_NAME and agent["sha256"] == sha256_of(DEFAULT_AGENT)
    assert agent["target"] == "orangepi5"
    code, text, err = run(capsys, "inspect", str(out))
    assert code == 0, err
    assert f"agent {SHIPPED_NAME} (sha256 {agent['sha256'][:12]}…, trained on orangepi5" in text
