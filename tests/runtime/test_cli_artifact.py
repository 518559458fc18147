"""``hetcc run`` / ``hetcc inspect`` (hetcc.cli.artifact) on variant, remote and workload artifacts."""
from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from extras import needs
from runtime_artifacts import CHAIN, SMALL, TARGET, build_program, plan_of

from hetcc.cli.artifact import add_inspect_arguments, add_run_arguments, cmd_inspect, cmd_run
from hetcc.core.errors import UsageError
from hetcc.passes.codegen import emit_artifact, emit_workload
from hetcc.planners import Objective, WorkloadPlan
from hetcc.runtime import ManifestError, RemoteSliceError
from hetcc.targets import load_target


def parse(*argv):
    p = argparse.ArgumentParser(prog="hetcc")
    sub = p.add_subparsers(dest="cmd", required=True)
    add_run_arguments(sub.add_parser("run")).set_defaults(func=cmd_run)
    add_inspect_arguments(sub.add_parser("inspect")).set_defaults(func=cmd_inspect)
    return p.parse_args([str(a) for a in argv])


def call(capsys, *argv):
    args = parse(*argv)
    code = args.func(args)
    out = capsys.readouterr().out
    return code, out


@pytest.fixture(scope="module")
def target():
    return load_target(TARGET)


@pytest.fixture
def variants(tmp_path, target):
    program = build_program(tmp_path, CHAIN, "chain", target)
    plans = {"fast": plan_of(program, [(0, 1, "cpu"), (2, 4, "gpu")], planner="dp"),
             "edge": plan_of(program, [(0, 1, "cpu"), (2, 4, "edge")], planner="dp",
                             hardware={"precision": "fp16"}, feasible=False, violations=("too slow",))}
    return emit_artifact(tmp_path / "v", program, target, plans)


@pytest.fixture
def workload(tmp_path, target):
    chain, small = build_program(tmp_path, CHAIN, "chain", target), build_program(tmp_path, SMALL, "small", target)
    p1, p2 = plan_of(chain, [(0, 4, "cpu")]), plan_of(small, [(0, 2, "gpu")])
    wplan = WorkloadPlan(plans=(p1, p2), names=("chain", "small"), planner="independent",
                         objective=Objective("latency"))
    return emit_workload(tmp_path / "w", target, [("chain", chain, p1), ("small", small, p2)], wplan)


def test_run_variants(capsys, variants):
    code, out = call(capsys, "run", variants, "--verify", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["variant"] == "fast" and doc["verify"]["ok"] and len(doc["slices_ms_median"]) == 2
    with pytest.raises(RemoteSliceError, match="--local-fallback"):
        call(capsys, "run", variants, "--variant", "edge")
    # an endpoint that refuses at once (the board's edge.local waits on a name lookup each attempt)
    code, out = call(capsys, "run", variants, "--variant", "edge", "--local-fallback", "--verify",
                     "--endpoint", "edge=http://127.0.0.1:9")
    assert code == 0 and "variant edge" in out and "remote, run here" in out and "outputs match" in out
    with pytest.raises(ManifestError, match="no variant 'nope'"):
        call(capsys, "run", variants, "--variant", "nope")


def test_run_inputs_from_files(capsys, variants, tmp_path):
    np.save(tmp_path / "x.npy", np.ones((1, 8), np.float32))
    code, _ = call(capsys, "run", variants, "--input", f"x={tmp_path / 'x.npy'}", "--verify")
    assert code == 0
    with pytest.raises(UsageError, match="--input z: no such input"):
        call(capsys, "run", variants, "--input", f"z={tmp_path / 'x.npy'}")
    with pytest.raises(UsageError, match="malformed --input"):
        call(capsys, "run", variants, "--input", "x")


def test_run_workload_all_models_and_one(capsys, workload):
    code, out = call(capsys, "run", workload, "--verify")
    assert code == 0 and "model chain" in out and "model small" in out and "all 2 model(s) match" in out
    code, out = call(capsys, "run", workload, "--model", "small", "--json")
    assert code == 0 and list(json.loads(out)["models"]) == ["small"]
    with pytest.raises(ManifestError, match="no model 'big'"):
        call(capsys, "run", workload, "--model", "big")
    with pytest.raises(ManifestError, match="no variants"):
        call(capsys, "run", workload, "--variant", "dp")


def test_inspect_variants(capsys, variants):
    code, out = call(capsys, "inspect", variants)
    assert code == 0
    assert "2 variants: fast, edge" in out and "variant fast (default)" in out and "variant edge" in out
    assert "edge via wifi-direct" in out and "hardware: precision=fp16" in out and "INFEASIBLE: too slow" in out
    assert "L0-L1" in out and "total:" in out
    code, out = call(capsys, "inspect", variants, "--variant", "edge")
    assert code == 0 and "variant fast" not in out and "variant edge" in out
    code, out = call(capsys, "inspect", variants, "--json")
    doc = json.loads(out)
    assert doc["schema"] == "hetcc.manifest/2" and list(doc["variants"]) == ["fast", "edge"]
    code, out = call(capsys, "inspect", variants, "--json", "--costs")
    assert set(json.loads(out)) == {"manifest", "costs"}


def test_inspect_workload(capsys, workload):
    code, out = call(capsys, "inspect", workload)
    assert code == 0 and "workload of 2 models" in out and "model chain" in out and "model small" in out
    assert "planner independent" in out
    code, out = call(capsys, "inspect", workload, "--model", "small", "--json")
    doc = json.loads(out)
    assert doc["manifest"]["kind"] == "workload" and list(doc["models"]) == ["small"]
    with pytest.raises(UsageError, match="--model big: no such model"):
        call(capsys, "inspect", workload, "--model", "big")


@pytest.mark.slow
@pytest.mark.plot
def test_inspect_plot(capsys, variants, workload, tmp_path):
    needs("plot", "matplotlib")
    png = tmp_path / "v.png"
    assert call(capsys, "inspect", variants, "--variant", "edge", "--plot", png)[0] == 0 and png.stat().st_size
    with pytest.raises(UsageError, match="pick one with --model"):
        call(capsys, "inspect", workload, "--plot", tmp_path / "w.png")
    assert call(capsys, "inspect", workload, "--model", "chain", "--plot", tmp_path / "w.png")[0] == 0


def test_inspect_costs_without_json_is_refused(capsys, variants):
    from hetcc.cli import main

    assert main(["inspect", str(variants), "--costs"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert not captured.out and len(err) == 1 and err[0].startswith("hetcc: error: --costs") and "--json" in err[0]
