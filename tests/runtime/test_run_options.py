"""``hetcc run --warmup N`` (untimed runs first) and ``--save-outputs DIR`` (one NAME.npy per output)."""
from __future__ import annotations

import argparse
import json
import os

import numpy as np
import pytest
from runtime_artifacts import run_call, run_parser, CHAIN, SMALL, build_program, plan_of

from hetcc.cli.artifact import REPEAT_DEFAULT, REPEAT_MAX, safe_file_name
from hetcc.core.errors import UsageError
from hetcc.passes.codegen import emit_workload
from hetcc.planners import Objective, WorkloadPlan
from hetcc.runtime import Executor, Pipeline, random_inputs


@pytest.fixture
def cold_first(monkeypatch):
    """Pipeline.run whose first call reports 1000 ms (a cold start) and later calls 1 ms; the calls are counted."""
    real = Pipeline.run
    calls = []

    def run(self, feeds):
        out = real(self, feeds)
        calls.append(1)
        self.last_total_ms = 1000.0 if len(calls) == 1 else 1.0
        self.last_timings = [self.last_total_ms / len(self.last_timings)] * len(self.last_timings)
        return out

    monkeypatch.setattr(Pipeline, "run", run)
    return calls


def test_warmup_runs_are_not_timed(capsys, artifact, cold_first):
    code, out = run_call(capsys, artifact, "--repeat", 3, "--warmup", 2, "--json")
    doc = json.loads(out)
    assert code == 0 and len(cold_first) == 5 and doc["warmup"] == 2 and doc["repeat"] == 3
    assert doc["total_ms_median"] == 1.0            # the cold first run was a warm-up run


def test_warmup_zero_times_the_cold_run(capsys, artifact, cold_first):
    code, out = run_call(capsys, artifact, "--repeat", 1, "--warmup", 0, "--json")
    assert code == 0 and len(cold_first) == 1 and json.loads(out)["total_ms_median"] == 1000.0


def test_warmup_default_and_text(capsys, artifact, cold_first):
    code, out = run_call(capsys, artifact)
    assert code == 0 and len(cold_first) == 3 + REPEAT_DEFAULT and "after 3 warm-up run(s)" in out
    code, out = run_call(capsys, artifact, "--warmup", 0)
    assert "no warm-up" in out


@pytest.mark.parametrize("value", ["-1", "x", str(REPEAT_MAX + 1)])
def test_warmup_and_repeat_are_bounded(value):
    for flag in ("--warmup", "--repeat"):
        with pytest.raises(argparse.ArgumentError, match="integer"):
            run_parser().parse_args(["run", "d", flag, value])
    with pytest.raises(argparse.ArgumentError, match="out of range"):
        run_parser().parse_args(["run", "d", "--repeat", "0"])


def test_save_outputs_writes_each_output(capsys, artifact, tmp_path):
    out_dir = tmp_path / "outs"
    code, out = run_call(capsys, artifact, "--save-outputs", out_dir, "--seed", 7, "--warmup", 0)
    assert code == 0 and f"in {out_dir}" in out and "y -> y.npy" in out
    assert sorted(os.listdir(out_dir)) == ["y.npy"]         # no temporary file left behind
    ex = Executor(artifact)
    want = ex.run(random_inputs(ex.inputs, seed=7))["y"]
    got = np.load(out_dir / "y.npy", allow_pickle=False)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    # an existing directory is reused, its file replaced; --json says where
    code, out = run_call(capsys, artifact, "--save-outputs", out_dir, "--seed", 8, "--json")
    assert json.loads(out)["saved_outputs"] == {"y": str(out_dir / "y.npy")}
    assert not np.array_equal(np.load(out_dir / "y.npy"), want)


def test_save_outputs_refuses_a_file_a_symlink_and_a_missing_parent(capsys, artifact, tmp_path, cold_first):
    (tmp_path / "f").write_text("keep")
    with pytest.raises(UsageError, match="--save-outputs .*not a directory"):
        run_call(capsys, artifact, "--save-outputs", tmp_path / "f")
    assert (tmp_path / "f").read_text() == "keep" and not cold_first     # refused before running
    with pytest.raises(UsageError, match="create it first"):
        run_call(capsys, artifact, "--save-outputs", tmp_path / "no" / "such")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "y.npy").symlink_to(tmp_path / "f")
    with pytest.raises(UsageError, match="symlink"):
        run_call(capsys, artifact, "--save-outputs", tmp_path / "d")
    assert (tmp_path / "f").read_text() == "keep"


def test_save_outputs_of_a_workload_one_directory_per_model(capsys, tmp_path, target):
    chain, small = build_program(tmp_path, CHAIN, "chain", target), build_program(tmp_path, SMALL, "small", target)
    p1, p2 = plan_of(chain, [(0, 4, "cpu")]), plan_of(small, [(0, 2, "gpu")])
    wplan = WorkloadPlan(plans=(p1, p2), names=("chain", "small"), planner="independent",
                         objective=Objective("latency"))
    w = emit_workload(tmp_path / "w", target, [("chain", chain, p1), ("small", small, p2)], wplan)
    code, _ = run_call(capsys, w, "--save-outputs", tmp_path / "o", "--warmup", 1)
    assert code == 0
    assert sorted(p.relative_to(tmp_path / "o").as_posix() for p in (tmp_path / "o").rglob("*.npy")) == [
        "chain/y.npy", "small/y.npy"]


def test_safe_file_names():
    taken: set[str] = set()
    names = [safe_file_name(n, taken) for n in ("out/logits:0", "out_logits_0", "OUT_LOGITS_0", "..", "a b\n")]
    assert names == ["out_logits_0", "out_logits_0-2", "OUT_LOGITS_0-3", "output", "a_b_"]
    assert len(safe_file_name("x" * 500)) == 120
