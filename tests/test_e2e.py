"""End to end: zoo model -> compile -> slices + manifest -> run; outputs equal the unsliced model.

The CI set is small models (the whole zoo runs in benchmarks/verify_zoo.py, by hand)."""
from __future__ import annotations

import json

import numpy as np
import onnxruntime as ort
import pytest

from extras import needs

import hetcc
from hetcc.planners.problem import problem_from_costs_json
from hetcc.planners import Objective, Slice
from hetcc.planners.exact import exact
from hetcc.runtime import Executor, random_inputs, verify

pytestmark = [pytest.mark.zoo, pytest.mark.slow, pytest.mark.timeout(900)]
torch = needs("zoo", "torchvision", "torch")

MODELS = ["squeezenet1_1", "mobilenet_v2", "googlenet"]


@pytest.fixture(scope="session")
def zoo_models(tmp_path_factory):
    """Each model exported once for the run (the session's zoo cache, tests/zoo_models.py), at a path of its own."""
    from zoo_models import linked_zoo_model

    root = tmp_path_factory.mktemp("zoo")
    return {name: linked_zoo_model(name, root / f"{name}.onnx") for name in MODELS}


def default_variant(manifest: dict) -> dict:
    return manifest["variants"][manifest["default_variant"]]


def chain_with_plain_ort(artifact, feeds):
    """Run the slices in manifest order with plain onnxruntime (no hetcc runtime)."""
    manifest = json.loads((artifact / "manifest.json").read_text())
    env = dict(feeds)
    for s in default_variant(manifest)["slices"]:
        sess = ort.InferenceSession(str(artifact / s["file"]), providers=["CPUExecutionProvider"])
        outs = sess.run([o["name"] for o in s["outputs"]], {i["name"]: env[i["name"]] for i in s["inputs"]})
        env.update({o["name"]: v for o, v in zip(s["outputs"], outs)})
    return {o["name"]: env[o["name"]] for o in manifest["model"]["outputs"]}


def reference(model_path, feeds):
    sess = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


def rel_diff(a, b):
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-12))


def check_costs_consistent(artifact):
    """The manifest's prediction equals costs.json summed over the chosen slices."""
    variant = default_variant(json.loads((artifact / "manifest.json").read_text()))
    costs = json.loads((artifact / "costs.json").read_text())
    obj = Objective(**{k: variant["objective"][k] for k in ("metric", "deadline_ms", "power_cap_mw")})
    problem = problem_from_costs_json(costs)
    state_of = {(s["device"], s["frequency_mhz"]): i for i, s in enumerate(costs["states"])}
    slices = [Slice(s["first_layer"], s["last_layer"], state_of[(s["device"], s["frequency_mhz"])])
              for s in variant["slices"]]
    plan = problem.evaluate(slices)
    assert plan.latency_ms == pytest.approx(variant["predicted"]["latency_ms"], rel=1e-9)
    if variant["predicted"]["energy_mj"] is not None:
        assert plan.energy_mj == pytest.approx(variant["predicted"]["energy_mj"], rel=1e-9)
    assert variant["feasible"] and not variant["violations"]
    return problem, obj, plan


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("objective,deadline", [("latency", None), ("energy", None), ("energy", "medium")])
def test_hikey970_slices_reproduce_model(zoo_models, tmp_path, name, objective, deadline):
    model = zoo_models[name]
    out = tmp_path / "build"
    result = hetcc.compile(model, target="hikey970", objective=objective, deadline_ms=deadline, output_dir=out)
    if deadline is not None:
        assert result.plan.objective.deadline_spec == "medium"
        assert result.plan.latency_ms <= result.plan.objective.deadline_ms * (1 + 1e-9)
    feeds = random_inputs(Executor(out).inputs, seed=1)
    ref = reference(model, feeds)
    plain = chain_with_plain_ort(out, feeds)
    ours = Executor(out).run(feeds)
    for k in ref:
        assert rel_diff(plain[k], ref[k]) <= 1e-4
        assert rel_diff(ours[k], ref[k]) <= 1e-4
    assert verify(out).ok
    problem, obj, plan = check_costs_consistent(out)
    # optimality against the table the planner saw, re-derived from costs.json by code that
    # shares nothing with the planner's search: a plain MOSAIC recursion for an unconstrained
    # metric, the unpruned label DP under a deadline
    value = obj.value(plan.latency_ms, plan.energy_mj)
    if obj.constrained:
        best = exact(problem, obj, prune=False)
        best_value = obj.value(best.latency_ms, best.energy_mj)
    else:
        best_value = reference_optimum(problem, obj)
    assert value == pytest.approx(best_value, rel=1e-9)


def reference_optimum(problem, objective):
    """MOSAIC Eq. 9 written out in plain Python over every (k, l, state)."""
    use_fmax = objective.metric == "latency"
    best = [0.0] + [float("inf")] * problem.num_layers
    for l in range(1, problem.num_layers + 1):
        for k in range(l):
            for s in range(problem.num_states):
                if (use_fmax and not problem.states.is_fmax[s]) or not problem.slice_legal(k, l - 1, s):
                    continue
                c = problem.slice_cost(k, l - 1, s)
                cost = c.latency_ms if objective.metric == "latency" else c.energy_mj
                best[l] = min(best[l], best[k] + cost)
    return best[-1]


def test_host_compile_and_verify(zoo_models, tmp_path):
    out = tmp_path / "host"
    hetcc.compile(zoo_models["squeezenet1_1"], target="host", output_dir=out, profile_repeats=1)
    report = verify(out)
    assert report.ok
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["target"]["kind"] == "measured"
    assert default_variant(manifest)["predicted"]["energy_mj"] is None
    check_costs_consistent(out)


def test_forced_cuts_verify(zoo_models, tmp_path):
    """Many slices on one device still reproduce the model exactly."""
    out = tmp_path / "many"
    result = hetcc.compile(zoo_models["mobilenet_v2"], target="hikey970", planner="even:12", output_dir=out)
    assert len(result.plan.slices) == 12
    assert len({s.state for s in result.plan.slices}) == 1
    assert verify(out).ok


def test_every_layer_its_own_slice(zoo_models, tmp_path):
    out = tmp_path / "all"
    n = hetcc.analyse(zoo_models["squeezenet1_1"], target="hikey970").problem.num_layers
    result = hetcc.compile(zoo_models["squeezenet1_1"], target="hikey970", planner=f"even:{n}", output_dir=out)
    assert len(result.plan.slices) == n
    assert verify(out).ok


def test_two_tensor_cuts_verify(zoo_models, tmp_path):
    """--max-cut-tensors 2: finer layers, slices fed by two tensors, outputs unchanged."""
    model = zoo_models["squeezenet1_1"]
    k1 = hetcc.analyse(model, target="hikey970").problem.num_layers
    out = tmp_path / "k2"
    result = hetcc.compile(model, target="hikey970", max_cut_tensors=2, planner="even:24", output_dir=out)
    assert len(result.program.get("layers")) > k1
    manifest = json.loads((out / "manifest.json").read_text())
    assert max(len(s["inputs"]) for s in default_variant(manifest)["slices"]) == 2
    assert verify(out).ok


def test_workload_of_three_models_compiles_runs_and_verifies_each(zoo_models, tmp_path):
    from hetcc.cli import main

    out = tmp_path / "mix"
    models = [str(zoo_models[n]) for n in MODELS]
    assert main(["compile", *models, "--target", "orangepi5", "-o", str(out), "-q"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kind"] == "workload"
    assert [m["name"] for m in manifest["workload"]["models"]] == MODELS
    ex = Executor(out)
    for name in MODELS:
        assert (out / "models" / name / "manifest.json").exists()
        report = verify(ex, model=name)
        assert report.ok, name
    assert main(["run", str(out), "--verify"]) == 0


def test_variants_artifact_selects_by_name(zoo_models, tmp_path):
    out = tmp_path / "variants"
    result = hetcc.compile(zoo_models["squeezenet1_1"], target="hikey970",
                           variants=["single:big", "single:gpu", "dp"], output_dir=out)
    plans = result.program.get("plan")
    assert list(plans) == ["single:big", "single:gpu", "dp"]
    ex = Executor(out)
    assert set(ex.variants) == {"single:big", "single:gpu", "dp"}
    feeds = random_inputs(ex.inputs, seed=2)
    ref = reference(zoo_models["squeezenet1_1"], feeds)
    manifest = json.loads((out / "manifest.json").read_text())
    for name in plans:
        got = ex.run(feeds, variant=name)
        assert all(rel_diff(got[k], ref[k]) <= 1e-4 for k in ref)
        devices = {s["device"] for s in manifest["variants"][name]["slices"]}
        if name == "single:gpu":
            assert devices == {"gpu"}
    files = {s["file"] for v in manifest["variants"].values() for s in v["slices"]}
    assert len(files) == len(list((out / "slices").iterdir()))      # each distinct slice stored once


def test_jetson_plan_carries_its_hardware_configuration(zoo_models, tmp_path):
    out = tmp_path / "tx2"
    result = hetcc.compile(zoo_models["squeezenet1_1"], target="jetson-tx2", hardware={"a57_cores": 2},
                           output_dir=out)
    assert result.plan.hardware["a57_cores"] == 2
    variant = default_variant(json.loads((out / "manifest.json").read_text()))
    assert variant["hardware"] == dict(result.plan.hardware)
    assert verify(out).ok


@pytest.mark.learn
def test_dqn_compiles_meets_the_deadline_verifies_and_repeats_its_plan(zoo_models, tmp_path):
    """HERTI's planner from the CLI and the API: same seed, same plan; an artifact like any other."""
    needs("learn", "torchrl")
    from hetcc.cli import main

    model = str(zoo_models["squeezenet1_1"])
    out = tmp_path / "dqn"
    argv = ["compile", model, "--target", "hikey970", "--objective", "energy", "--deadline", "medium",
            "--planner", "dqn", "--seed", "0", "--planner-option", "steps=400", "--planner-option", "width=64",
            "-o", str(out), "-q"]
    assert main(argv) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    variant = default_variant(manifest)
    planner = variant["planner"]
    assert planner["name"] == "dqn" and planner["stats"]["steps"] == 400 and planner["options"]["width"] == 64
    assert planner["stats"]["explored"] > 1 and planner["stats"]["measured_ms"] > 0
    assert variant["feasible"] is True
    assert (out / "costs.json").exists() and verify(out).ok
    analysis = hetcc.analyse(model, "hikey970")
    objective = analysis.objective("energy", deadline="medium")
    api = analysis.plan(objective, planner="dqn", options={"steps": 400, "width": 64}, seed=0)
    assert api.latency_ms <= objective.deadline_ms * (1 + 1e-9)
    assert [(s["first_layer"], s["last_layer"]) for s in variant["slices"]] == [(s.first, s.last) for s in api.slices]
    again = analysis.plan(objective, planner="dqn", options={"steps": 400, "width": 64}, seed=0)
    assert again.slices == api.slices
