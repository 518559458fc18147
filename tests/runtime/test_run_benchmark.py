"""``hetcc run`` as a benchmark: --repeat N or --duration T after --warmup, p50/p90/p99 latency,
mean throughput and each slice's p50 and mean beside the predicted ms, in text and strict JSON;
``Pipeline.benchmark`` underneath. The clock and the runs' samples are faked where numbers are
checked, so every number is exact and nothing depends on how fast this machine is."""
from __future__ import annotations

import argparse
import json
import math
import types

import numpy as np
import pytest
from runtime_artifacts import run_call, run_parser, CHAIN, SMALL, build_program, plan_of

from hetcc.cli.app import main
from hetcc.cli.artifact import DURATION_MAX_S, REPEAT_DEFAULT, duration_seconds
from hetcc.core.errors import UsageError
from hetcc.passes.codegen import emit_workload
from hetcc.planners import Objective, WorkloadPlan
from hetcc.runtime import Executor, Pipeline, random_inputs
from hetcc.runtime import executor as executor_module
from hetcc.runtime.__main__ import main as runtime_main


@pytest.fixture
def workload(tmp_path, target):
    chain, small = build_program(tmp_path, CHAIN, "chain", target), build_program(tmp_path, SMALL, "small", target)
    p1, p2 = plan_of(chain, [(0, 4, "cpu")]), plan_of(small, [(0, 2, "gpu")])
    wplan = WorkloadPlan(plans=(p1, p2), names=("chain", "small"), planner="independent",
                         objective=Objective("latency"))
    return emit_workload(tmp_path / "w", target, [("chain", chain, p1), ("small", small, p2)], wplan)


#: the total ms of the timed runs, in the order they run: 1..101 shuffled (p50 51, p90 91, p99 100)
SAMPLES = [float(x) for x in np.random.default_rng(5).permutation(np.arange(1, 102))]


@pytest.fixture
def fake(monkeypatch):
    """Pipeline.run without onnxruntime: run k (0-based, warm-up runs included) reports SAMPLES[k]
    ms in total and slice i (i+1) x that; ``interrupt_at`` = k makes run k a Ctrl-C. The runtime's
    clock advances 0.125 s per reading. ``calls`` counts the runs."""
    state = types.SimpleNamespace(calls=0, interrupt_at=None, clock=0.0)

    def run(self, feeds):
        k = state.calls
        if k == state.interrupt_at:
            raise KeyboardInterrupt
        state.calls += 1
        total = SAMPLES[k % len(SAMPLES)]
        self.last_total_ms = total
        self.last_timings = [total * (i + 1) for i in range(len(self.slices))]
        return {s.name: np.zeros(s.shape, dtype=s.dtype) for s in self.outputs}

    def perf_counter():
        now = state.clock
        state.clock += 0.125
        return now

    monkeypatch.setattr(Pipeline, "run", run)
    monkeypatch.setattr(executor_module, "time", types.SimpleNamespace(perf_counter=perf_counter))
    return state


def numbers(doc):
    """Every number in a JSON document."""
    if isinstance(doc, dict):
        return [x for v in doc.values() for x in numbers(v)]
    if isinstance(doc, list):
        return [x for v in doc for x in numbers(v)]
    return [doc] if isinstance(doc, (int, float)) and not isinstance(doc, bool) else []


def strict(text):
    def refuse(token):
        raise AssertionError(f"{token} in --json output")
    return json.loads(text, parse_constant=refuse)


# ---------------------------------------------------------------- the numbers, from the recorded samples
def test_percentiles_throughput_and_slices_come_from_the_samples(capsys, artifact, fake):
    code, out = run_call(capsys, artifact, "--repeat", 101, "--warmup", 0, "--json")
    doc = strict(out)
    assert code == 0 and fake.calls == 101 and doc["runs"] == 101 and doc["repeat"] == 101
    assert doc["latency_ms"] == {"p50": 51.0, "p90": 91.0, "p99": 100.0, "mean": 51.0, "min": 1.0, "max": 101.0}
    assert doc["total_ms_median"] == 51.0 and doc["slices_ms_median"] == [51.0, 102.0]
    # 101 runs between the clock's first reading (0 s) and its 102nd (101 x 0.125 s)
    assert doc["timed_s"] == 12.625 and doc["throughput_per_s"] == 8.0 and doc["stopped"] == "repeat"
    assert [(s["id"], s["p50_ms"], s["mean_ms"]) for s in doc["slices"]] == [(0, 51.0, 51.0), (1, 102.0, 102.0)]
    manifest = Executor(artifact).manifest.variants["dp"]
    assert [s["predicted_ms"] for s in doc["slices"]] == [s.predicted.latency_ms for s in manifest.slices]
    assert doc["predicted_ms"] == manifest.predicted.latency_ms and doc["duration_s"] is None


def test_text_shows_the_percentiles_throughput_and_slice_columns(capsys, artifact, fake):
    code, out = run_call(capsys, artifact, "--repeat", 101, "--warmup", 0)
    assert code == 0
    assert "p50 51.000 ms, p90 91.000 ms, p99 100.000 ms, mean 51.000 ms" in out
    assert "over 101 run(s) (no warm-up" in out
    assert "throughput: 8.0 inferences/s (101 run(s) in 12.625 s)" in out
    header = next(line for line in out.splitlines() if "provider" in line)
    assert all(col in header for col in ("p50 ms", "mean ms", "predicted ms"))
    assert "102.000" in out                                   # slice 1's p50 and mean


def test_warmup_runs_are_not_samples(capsys, artifact, fake):
    code, out = run_call(capsys, artifact, "--repeat", 2, "--warmup", 3, "--json")
    doc = strict(out)
    assert code == 0 and fake.calls == 5 and doc["runs"] == 2 and doc["warmup"] == 3
    assert doc["latency_ms"]["min"] == min(SAMPLES[3:5]) and doc["latency_ms"]["max"] == max(SAMPLES[3:5])


def test_default_times_several_runs(capsys, artifact, fake):
    code, out = run_call(capsys, artifact, "--json")
    doc = strict(out)
    assert REPEAT_DEFAULT > 1 and code == 0 and doc["runs"] == REPEAT_DEFAULT == doc["repeat"]
    assert fake.calls == 3 + REPEAT_DEFAULT and doc["warmup"] == 3


# ---------------------------------------------------------------- --duration
def test_duration_runs_until_the_time_has_passed(capsys, artifact, fake):
    code, out = run_call(capsys, artifact, "--duration", "1s", "--warmup", 0, "--json")
    doc = strict(out)
    # the clock reads 0 s at the start and 0.125 s more after each run: the 8th run ends at 1 s
    assert code == 0 and fake.calls == 8 and doc["runs"] == 8 and doc["stopped"] == "duration"
    assert doc["duration_s"] == 1.0 and doc["repeat"] is None and doc["timed_s"] == 1.0
    assert doc["latency_ms"]["p50"] == float(np.median(SAMPLES[:8]))
    code, out = run_call(capsys, artifact, "--duration", "1s", "--warmup", 0)
    assert "(8 run(s) in 1.000 s, --duration 1 s)" in out


def test_duration_stops_at_the_run_limit(capsys, artifact, fake, monkeypatch):
    monkeypatch.setattr(executor_module, "BENCHMARK_RUNS_MAX", 5)
    code, out = run_call(capsys, artifact, "--duration", "1h", "--warmup", 0, "--json")
    doc = strict(out)
    assert code == 0 and doc["runs"] == 5 and doc["stopped"] == "max_runs"
    code, out = run_call(capsys, artifact, "--duration", "1h", "--warmup", 0)
    assert "stopped at 5 runs before --duration 3600 s" in out


@pytest.mark.parametrize("text, seconds", [("10s", 10.0), ("500ms", 0.5), ("2m", 120.0), ("2min", 120.0),
                                           ("1h", 3600.0), (" 1.5 S ", 1.5), ("1e-3s", 0.001)])
def test_duration_values(text, seconds):
    assert duration_seconds(text) == seconds
    assert run_parser().parse_args(["run", "d", "--duration", text]).duration == seconds


@pytest.mark.parametrize("text, says", [("10", "has no unit"), ("0s", "out of range"), ("-1s", "out of range"),
                                        ("2h", "out of range"), ("3601s", "out of range"), ("nan s", "out of range"),
                                        ("inf ms", "out of range"), ("1e999s", "out of range"),
                                        ("ms", "not a duration"), ("10x", "not a duration"), ("", "not a duration")])
def test_bad_durations_are_refused(text, says):
    with pytest.raises(argparse.ArgumentTypeError, match=says):
        duration_seconds(text)
    assert DURATION_MAX_S == 3600.0


def test_a_bad_duration_is_one_line_exit_2(capsys, artifact, fake):
    assert main(["run", str(artifact), "--duration=10"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--duration" in err and "'10' has no unit" in err
    assert fake.calls == 0


def test_repeat_with_duration_is_refused_before_running(capsys, artifact, fake):
    with pytest.raises(UsageError, match="--repeat and --duration both given"):
        run_call(capsys, artifact, "--repeat", 5, "--duration", "1s")
    assert fake.calls == 0
    assert main(["run", str(artifact), "--repeat", "5", "--duration", "1s"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hetcc: error: --repeat and --duration") and len(err.strip().splitlines()) == 1
    assert runtime_main(["run", str(artifact), "--duration", "1s", "--repeat", "1"]) == 2     # python -m hetcc.runtime
    assert "--repeat and --duration" in capsys.readouterr().err and fake.calls == 0


# ---------------------------------------------------------------- Ctrl-C
def test_ctrl_c_during_duration_reports_the_runs_so_far(capsys, artifact, fake):
    fake.interrupt_at = 3 + 4                                  # after 3 warm-up runs and 4 timed runs
    with pytest.raises(KeyboardInterrupt):
        run_call(capsys, artifact, "--duration", "1h", "--json")
    doc = strict(capsys.readouterr().out)
    assert doc["runs"] == 4 and doc["stopped"] == "interrupted" and doc["timed_s"] == 0.5
    assert doc["latency_ms"]["max"] == max(SAMPLES[3:7])
    fake.calls = 0
    assert main(["run", str(artifact), "--duration", "1h"]) == 130                # the report, then the one line
    out, err = capsys.readouterr()
    assert "over 4 run(s)" in out and "interrupted)" in out and err.strip() == "hetcc: interrupted"


def test_ctrl_c_before_any_timed_run_or_with_repeat_reports_nothing(capsys, artifact, fake):
    fake.interrupt_at = 3                                      # the first timed run
    with pytest.raises(KeyboardInterrupt):
        run_call(capsys, artifact, "--duration", "1h")
    assert capsys.readouterr().out == ""
    fake.calls, fake.interrupt_at = 0, 5
    with pytest.raises(KeyboardInterrupt):
        run_call(capsys, artifact, "--repeat", 10)
    assert capsys.readouterr().out == ""


def test_ctrl_c_in_a_workload_reports_the_models_measured(capsys, workload, fake):
    fake.interrupt_at = 3 + 8 + 3 + 1          # model 1: 3 warm-up + 8 timed runs (1 s); model 2's second timed run
    with pytest.raises(KeyboardInterrupt):
        run_call(capsys, workload, "--duration", "1s", "--json")
    doc = strict(capsys.readouterr().out)
    assert list(doc["models"]) == ["chain", "small"]
    assert doc["models"]["chain"]["stopped"] == "duration" and doc["models"]["small"]["stopped"] == "interrupted"
    assert doc["models"]["small"]["runs"] == 1


# ---------------------------------------------------------------- real runs: JSON fields, workloads, --verify
LATENCY = {"p50", "p90", "p99", "mean", "min", "max"}
SLICE = {"id", "device", "provider", "p50_ms", "mean_ms", "predicted_ms"}


def check_timing(doc, runs):
    assert doc["runs"] == runs and set(doc["latency_ms"]) == LATENCY
    lat = doc["latency_ms"]
    assert 0 <= lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"] and lat["min"] <= lat["mean"]
    assert doc["timed_s"] > 0 and doc["throughput_per_s"] > 0
    assert all(set(s) == SLICE for s in doc["slices"]) and len(doc["slices"]) == len(doc["providers"])
    assert all(isinstance(x, (int, float)) and math.isfinite(x) for x in numbers(doc))


def test_json_fields_present_and_finite(capsys, artifact):
    code, out = run_call(capsys, artifact, "--repeat", 4, "--warmup", 1, "--json")
    doc = strict(out)
    assert code == 0
    check_timing(doc, 4)
    assert doc["stopped"] == "repeat" and doc["predicted_ms"] > 0
    assert all(s["predicted_ms"] > 0 for s in doc["slices"])


def test_workload_is_timed_per_model(capsys, workload):
    code, out = run_call(capsys, workload, "--warmup", 0, "--json")
    doc = strict(out)
    assert code == 0 and set(doc["models"]) == {"chain", "small"}
    for m in doc["models"].values():
        check_timing(m, REPEAT_DEFAULT)
    code, out = run_call(capsys, workload, "--warmup", 0, "--repeat", 2)
    assert code == 0 and out.count("throughput:") == 2 and out.count("over 2 run(s)") == 2
    assert "model chain" in out and "model small" in out


def test_verify_keeps_its_meaning_and_the_timing_is_reported(capsys, artifact):
    code, out = run_call(capsys, artifact, "--verify", "--repeat", 2, "--json")
    doc = strict(out)
    assert code == 0 and doc["verify"]["ok"] and len(doc["verify"]["inputs"]) == 3
    check_timing(doc, 2)


# ---------------------------------------------------------------- the Python API
def test_pipeline_benchmark(artifact):
    ex = Executor(artifact)
    feeds = random_inputs(ex.inputs, seed=0)
    b = ex.benchmark(feeds, repeat=3, warmup=1)
    assert b.runs == 3 and b.slice_ms.shape == (3, 2) and b.stopped == "repeat" and b.warmup == 1
    assert np.array_equal(b.outputs["y"], ex.run(feeds)["y"])
    assert b.percentile(50) == float(np.median(b.total_ms)) and b.throughput > 0
    b = ex.pipeline().benchmark(feeds, duration_s=0.01)
    assert b.runs >= 1 and b.stopped in ("duration", "max_runs") and b.duration_s == 0.01


@pytest.mark.parametrize("how", [{}, {"repeat": 2, "duration_s": 1.0}, {"repeat": 0}, {"repeat": 1.5},
                                 {"duration_s": 0.0}, {"duration_s": float("nan")}, {"repeat": 1, "warmup": -1}])
def test_pipeline_benchmark_refuses_bad_arguments(artifact, how):
    ex = Executor(artifact)
    with pytest.raises(ValueError, match="benchmark"):
        ex.pipeline().benchmark(random_inputs(ex.inputs, seed=0), **how)


def test_percentiles_interpolate_between_the_closest_samples():
    b = executor_module.Benchmark(np.array([50.0, 10.0, 40.0, 20.0, 30.0]),
                                  np.array([[1.0], [3.0], [2.0], [5.0], [4.0]]),
                                  wall_s=0.25, warmup=0, stopped="repeat", outputs={})
    assert b.percentile(50) == 30.0 and b.percentile(90) == pytest.approx(46.0)
    assert b.percentile(99) == pytest.approx(49.6)
    assert b.mean_ms == 30.0 and b.throughput == 20.0 and b.runs == 5
    assert b.slice_percentile(50) == [3.0] and b.slice_percentile(90) == [pytest.approx(4.6)]
    assert b.slice_mean_ms == [3.0]
    assert executor_module.Benchmark(np.array([1.0]), np.zeros((1, 1)), wall_s=0.0, warmup=0, stopped="repeat",
                                     outputs={}).throughput is None
