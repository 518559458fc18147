"""``why.json`` (written by a compile) and ``hetcc inspect --why``: why a layer cannot use a device,
and what the best other device/frequency for each slice would cost."""
from __future__ import annotations

import argparse
import json
import shutil

import onnx
import onnx.parser
import pytest

import hetcc
from hetcc.cli.artifact import add_inspect_arguments, cmd_inspect
from hetcc.planners.problem import problem_from_costs_json
from hetcc.runtime import ManifestError
from hetcc.compiler.why import WHY_NAME, layer_reasons, layer_runs

# Erf is not in the hikey970 NPU's operator list; everything else runs anywhere
ERF = """<ir_version: 8, opset_import: ["" : 17]>
g (float[1,8] x) => (float[1,8] y) {
    a = Relu(x)
    b = Erf(a)
    c = Sigmoid(b)
    y = Tanh(c)
}
"""


def inspect(capsys, *argv):
    p = argparse.ArgumentParser(prog="hetcc")
    sub = p.add_subparsers(dest="cmd", required=True)
    add_inspect_arguments(sub.add_parser("inspect")).set_defaults(func=cmd_inspect)
    args = p.parse_args(["inspect", *map(str, argv)])
    code = args.func(args)
    return code, capsys.readouterr().out


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("m") / "erf.onnx"
    onnx.save(onnx.parser.parse_model(ERF), str(path))
    return path


@pytest.fixture(scope="module")
def artifact(model, tmp_path_factory):
    out = tmp_path_factory.mktemp("a") / "erf"
    hetcc.compile(model, "hikey970", "energy", deadline_ms="medium", output_dir=out)
    return out


def copy(artifact, tmp_path):
    return shutil.copytree(artifact, tmp_path / "copy")


def test_compile_writes_the_legality_reasons(artifact):
    doc = json.loads((artifact / WHY_NAME).read_text())
    assert doc["schema"] == "hetcc.why/1" and "npu" in doc["devices"]
    assert [(e["layer"], e["device"]) for e in doc["illegal"]] == [(1, "npu")]
    assert "Erf" in doc["illegal"][0]["reason"]


def test_inspect_why_names_the_layer_device_and_op(capsys, artifact):
    code, out = inspect(capsys, artifact, "--why")
    assert code == 0 and "why not other devices" in out
    line = next(l for l in out.splitlines() if "Erf unsupported" in l)
    assert "L1" in line and "npu" in line and "unsupported" in line
    assert "the other 3 layer(s) can run on every device" in out
    assert "next best per slice" in out and "next-best plan: slice" in out


def test_alternatives_are_the_best_legal_state_with_exact_deltas(capsys, artifact):
    code, out = inspect(capsys, artifact, "--why", "--json")
    doc = json.loads(out)
    costs = json.loads((artifact / "costs.json").read_text())
    manifest = json.loads((artifact / "manifest.json").read_text())
    problem = problem_from_costs_json(costs)
    (name, variant), = manifest["variants"].items()
    deadline = variant["objective"]["deadline_ms"]
    total_t, total_e = variant["predicted"]["latency_ms"], variant["predicted"]["energy_mj"]
    assert doc["reasons_recorded"] and [r["first_layer"] for r in doc["layers"] if r["blocked"]] == [1]
    slices = doc["variants"][name]["slices"]
    assert len(slices) == len(variant["slices"])
    for got, sl in zip(slices, variant["slices"]):
        a, b = sl["first_layer"], sl["last_layer"]
        here = next(k for k, s in enumerate(costs["states"])
                    if s["device"] == sl["device"] and s["frequency_mhz"] == sl["frequency_mhz"])
        c0 = problem.slice_cost(a, b, here)
        options = []     # brute force: every other legal state, limits first, then energy
        for s in range(problem.num_states):
            if s != here and problem.slice_legal(a, b, s):
                c = problem.slice_cost(a, b, s)
                lat, en = total_t + c.latency_ms - c0.latency_ms, total_e + c.energy_mj - c0.energy_mj
                options.append((lat > deadline * (1 + 1e-9), en, s, c))
        assert got["legal_alternatives"] == len(options)
        _, _, s, c = min(options)
        best = got["best_alternative"]
        assert best["state"].startswith(costs["states"][s]["device"] + "@")
        assert best["d_latency_ms"] == pytest.approx(c.latency_ms - c0.latency_ms, abs=1e-12)
        assert best["d_energy_mj"] == pytest.approx(c.energy_mj - c0.energy_mj, abs=1e-12)
        assert best["meets_deadline"] == (best["latency_ms"] <= deadline * (1 + 1e-9))
    assert doc["variants"][name]["next_best"]["slice"] in {s["slice"] for s in slices}


def test_without_why_json_the_cost_tables_still_say_which_devices(capsys, artifact, tmp_path):
    art = copy(artifact, tmp_path)
    (art / WHY_NAME).unlink()
    code, out = inspect(capsys, art, "--why")
    assert code == 0 and f"no {WHY_NAME}" in out and "reason not recorded" in out
    doc = json.loads(inspect(capsys, art, "--why", "--json")[1])
    assert not doc["reasons_recorded"] and doc["layers"][1]["blocked"][0]["device"] == "npu"


def test_a_stale_or_damaged_why_json(capsys, artifact, tmp_path):
    art = copy(artifact, tmp_path)
    costs = json.loads((art / "costs.json").read_text())
    (art / "costs.json").write_text(json.dumps(costs, indent=1))     # same tables, another file
    code, out = inspect(capsys, art, "--why")
    assert code == 0 and "from another compile" in out and "reason not recorded" in out
    (art / WHY_NAME).write_text('{"schema": "hetcc.why/1", "costs_sha256": "x", "illegal": [{"layer": "1"}]}')
    with pytest.raises(ManifestError, match=r"why.json: illegal\[0\]"):
        inspect(capsys, art, "--why")


def test_capacity_is_explained_from_the_cost_tables():
    costs = {"layers": [{"id": 0, "param_bytes": 10}, {"id": 1, "param_bytes": 3_000_000}],
             "states": [{"device": "cpu", "frequency_mhz": 1.0}, {"device": "npu", "frequency_mhz": 1.0}],
             "legal": [[True, True], [True, False]], "capacity_bytes": [None, 2_000_000]}
    assert layer_reasons(costs, None) == [{}, {"npu": "parameters 3.0 MB exceed capacity 2.0 MB"}]
    assert [(r.first, r.last) for r in layer_runs({**costs, "legal": [[True, False], [True, False]]}, None)] == [(0, 0),
                                                                                                              (1, 1)]


def test_workload_models_get_why_json(capsys, model, tmp_path):
    other = tmp_path / "other.onnx"
    shutil.copyfile(model, other)
    out = tmp_path / "w"
    hetcc.compile_workload([model, other], "hikey970", "latency", output_dir=out)
    assert len(list(out.glob(f"models/*/{WHY_NAME}"))) == 2
    doc = json.loads(inspect(capsys, out, "--why", "--json")[1])
    assert len(doc["models"]) == 2 and all(m["reasons_recorded"] for m in doc["models"].values())
