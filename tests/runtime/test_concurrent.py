"""``hetcc run DIR --concurrent`` and ``hetcc.runtime.concurrent.run_concurrent``: every model of a
workload at once, a worker per stage, measured throughput beside the prediction; Ctrl-C; the
one-line errors; the pinned-core board (host-cores) it is checked on. Tiny models, short phases:
no timing is asserted, only what was counted and reported."""
from __future__ import annotations

import _thread
import hashlib
import json
import math
import os
import shutil
import signal
import threading
import types

import pytest
from runtime_artifacts import CHAIN, SMALL, build_program, plan_of, run_call

from hetcc.cli.app import main
from hetcc.core.errors import UsageError
from hetcc.passes.codegen import emit_workload
from hetcc.planners import Objective, WorkloadPlan
from hetcc.runtime import ManifestError
from hetcc.runtime import concurrent as C

SHORT = 0.05   # seconds per phase


@pytest.fixture(scope="module")
def workload(tmp_path_factory, target):
    """chain: two stages (cpu, gpu); small: one stage (gpu), on mi8pro-edge-cloud (its cpu's
    cores 4-7 are not on a 2-core machine). Built once: tests that edit it edit a copy (``own``)."""
    tmp = tmp_path_factory.mktemp("concurrent")
    chain, small = build_program(tmp, CHAIN, "chain", target), build_program(tmp, SMALL, "small", target)
    p1, p2 = plan_of(chain, [(0, 1, "cpu"), (2, 4, "gpu")]), plan_of(small, [(0, 2, "gpu")])
    wplan = WorkloadPlan(plans=(p1, p2), names=("chain", "small"), planner="independent",
                         objective=Objective("latency"))
    return emit_workload(tmp / "w", target, [("chain", chain, p1), ("small", small, p2)], wplan)


@pytest.fixture
def own(workload, tmp_path):
    """A copy of the workload artifact this test may edit."""
    return shutil.copytree(workload, tmp_path / "w")


def pin_first_stage(workload, cores):
    """Give slice 0 of model chain the affinity ``cores`` (its manifest and the workload's sha256 follow)."""
    sub = workload / "models" / "chain" / "manifest.json"
    doc = json.loads(sub.read_text())
    doc["variants"][next(iter(doc["variants"]))]["slices"][0]["affinity"] = list(cores)
    sub.write_text(json.dumps(doc))
    top = json.loads((workload / "manifest.json").read_text())
    for m in top["workload"]["models"]:
        if m["name"] == "chain":
            m["manifest_sha256"] = hashlib.sha256(sub.read_bytes()).hexdigest()
    (workload / "manifest.json").write_text(json.dumps(top))


def test_every_model_runs_alone_then_at_once(workload):
    r = C.run_concurrent(workload, SHORT, warmup=1)
    assert [m.name for m in r.models] == ["chain", "small"] and r.stopped == "duration"
    assert [m.devices for m in r.models] == [("cpu", "gpu"), ("gpu",)]
    for m in r.models:
        assert m.alone_runs > 0 and m.shared_runs > 0 and m.alone_ips > 0 and m.shared_ips > 0
        assert m.predicted_ips is None and m.error is None
    assert [(s.model, s.index, s.device) for s in r.stages] == [("chain", 0, "cpu"), ("chain", 1, "gpu"),
                                                                 ("small", 0, "gpu")]
    assert all(s.alone_runs > 0 and s.shared_runs > 0 and s.shared_ms > 0 for s in r.stages)
    # bounded: between chain's two stages at most one inference queued, one held, one running
    first, second = r.stages[0], r.stages[1]
    assert 0 <= first.shared_runs - second.shared_runs <= C.QUEUE_SIZE + 2
    # no prediction from the independent planner, and it says so
    assert r.predicted is None and r.prediction.startswith("none") and "independent" in r.prediction
    assert r.measured.throughput_ips == pytest.approx((r.models[0].shared_ips + r.models[1].shared_ips) / 2)
    assert 0.5 <= r.measured.jain_alone <= 1.0
    doc = r.to_json()
    json.dumps(doc, allow_nan=False)
    assert set(doc["window_s"]["alone"]) == {"chain", "small"} and doc["window_s"]["shared"] >= SHORT


def test_stages_are_pinned_where_the_board_gives_cores_that_are_here(own, monkeypatch):
    workload = own
    usable = sorted(os.sched_getaffinity(0))
    pin_first_stage(workload, [usable[0]])
    calls = []
    real = os.sched_setaffinity
    monkeypatch.setattr(C.os, "sched_setaffinity",
                        lambda pid, cores: (calls.append((pid, tuple(cores), threading.current_thread().name)),
                                            real(pid, cores)))
    r = C.run_concurrent(workload, SHORT, warmup=0, alone=False)
    first = r.stages[0]
    assert first.cores == (usable[0],) and first.threads == 1 and first.note == ""
    # the worker thread pins itself (pid 0: that thread), never the main thread
    assert calls and all(c == (0, (usable[0],), "hetcc-chain-0") for c in calls)
    assert all(s.cores is None and s.note.startswith("not pinned") for s in r.stages[1:])
    assert r.models[0].alone_ips is None and r.models[0].shared_ips > 0


def test_cores_that_are_not_here_are_not_pinned_and_it_says_so(own):
    workload = own
    pin_first_stage(workload, [max(os.sched_getaffinity(0)) + 1])
    r = C.run_concurrent(workload, SHORT, warmup=0, alone=False)
    assert r.stages[0].cores is None and "are not all here" in r.stages[0].note
    assert any("are not all here" in n for n in r.notes)


def test_the_prediction_is_compared(workload):
    block = {"models": {"chain": {"pipeline": [], "throughput_ips": 1000.0, "alone_ips": 2000.0, "ideal_ips": 2000.0},
                        "small": {"pipeline": [], "throughput_ips": 500.0, "alone_ips": 500.0, "ideal_ips": 1000.0}},
             "metrics": {"throughput_ips": 750.0, "normalised": 1.5, "jain": 0.9, "overall": 1.35}}
    r = C.run_concurrent(workload, SHORT, warmup=0, prediction=block)
    chain, small = r.models
    assert chain.error == pytest.approx((1000.0 - chain.shared_ips) / chain.shared_ips)
    assert small.alone_error == pytest.approx((500.0 - small.alone_ips) / small.alone_ips)
    assert r.median_error == pytest.approx((abs(chain.error) + abs(small.error)) / 2)   # the median of two
    p = r.predicted
    assert (p.throughput_ips, p.normalised, p.jain, p.overall) == (750.0, 1.5, 0.9, 1.35)
    assert p.jain_alone == pytest.approx(C.jain([0.5, 1.0]))
    # measured T_norm divides by the predicted all-on-the-reference throughput (750 / 1.5 = 500)
    assert r.measured.normalised == pytest.approx(r.measured.throughput_ips / 500.0)
    assert r.measured.overall == pytest.approx(r.measured.normalised * r.measured.jain)
    assert r.prediction == "given by the caller"


def test_read_prediction_takes_the_manifest_block():
    block = {"models": {}, "metrics": {"throughput_ips": 1.0}}
    typed = types.SimpleNamespace(to_json=lambda: block)
    assert C.read_prediction(types.SimpleNamespace(workload=types.SimpleNamespace(contention=typed))) == block
    assert C.read_prediction(types.SimpleNamespace(workload=types.SimpleNamespace(contention=block))) == block
    assert C.read_prediction(types.SimpleNamespace(workload=types.SimpleNamespace())) is None


def test_jain_closed_forms():
    assert C.jain([2.0, 2.0, 2.0]) == pytest.approx(1.0)
    assert C.jain([1.0, 0.0]) == pytest.approx(0.5)
    assert C.jain([]) is None and C.jain([0.0, 0.0]) is None


def interrupt_when(label):
    """An on_phase that sends the main thread a Ctrl-C shortly after phase ``label`` starts."""
    def on_phase(now):
        if now == label:
            threading.Timer(0.05, _thread.interrupt_main).start()
    return on_phase


@pytest.fixture
def default_sigint():
    """Python's own Ctrl-C handler for the test: ``_thread.interrupt_main`` does nothing when an
    earlier test on this worker left SIGINT ignored or handled outside Python (the test would
    then wait out its 30 s window)."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def test_ctrl_c_returns_what_was_measured(workload, default_sigint):
    r = C.run_concurrent(workload, 30.0, alone_s=SHORT, warmup=0, on_phase=interrupt_when("shared"))
    assert r.stopped == "interrupted" and r.window_s["shared"] < 30.0
    assert all(m.alone_ips > 0 for m in r.models)
    workers = tuple(f"hetcc-{m.name}-" for m in r.models)       # this run's stage workers (other tests'
    assert not any(t.name.startswith(workers) for t in threading.enumerate())   # hetcc- threads may live on)
    r = C.run_concurrent(workload, 30.0, warmup=0, on_phase=interrupt_when("alone:chain"))
    assert r.stopped == "interrupted" and r.models[1].alone_ips is None and r.models[1].shared_ips is None
    assert r.measured.throughput_ips is None


def test_cli_ctrl_c_prints_then_exits_130(workload, capsys, monkeypatch, default_sigint):
    real = C.run_concurrent
    monkeypatch.setattr(C, "run_concurrent",
                        lambda *a, **kw: real(*a, **{**kw, "on_phase": interrupt_when("alone:chain")}))
    assert main(["run", str(workload), "--concurrent", "--duration", "30s", "--warmup", "0"]) == 130
    out, err = capsys.readouterr()
    assert "concurrent run" in out and "interrupted" in out and err.strip() == "hetcc: interrupted"


def test_cli_table_and_json(workload, capsys):
    code, out = run_call(capsys, workload, "--concurrent", "--duration", "50ms", "--warmup", "0")
    assert code == 0 and "chain" in out and "cpu > gpu" in out and "T_w" in out and "prediction: none" in out
    assert "load:" in out
    code, out = run_call(capsys, workload, "--concurrent", "--duration", "50ms", "--warmup", "0", "--json")
    doc = json.loads(out)
    assert code == 0 and [m["name"] for m in doc["models"]] == ["chain", "small"]
    assert all(m["measured"]["shared_ips"] > 0 for m in doc["models"]) and doc["predicted"] is None
    assert doc["duration_s"] == pytest.approx(0.05) and doc["stopped"] == "duration"


@pytest.mark.parametrize("argv, says", [
    (["--duration", "0s"], "out of range"),
    (["--duration=-2s"], "out of range"),
    (["--duration", "soon"], "not a duration"),
    (["--verify"], "--verify is not taken with --concurrent"),
    (["--model", "chain"], "--model is not taken with --concurrent"),
    (["--repeat", "3"], "--repeat is not taken with --concurrent"),
])
def test_cli_errors_are_one_line_exit_2(workload, capsys, argv, says):
    assert main(["run", str(workload), "--concurrent", *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1


def test_a_model_artifact_is_refused(workload, capsys):
    model_dir = workload / "models" / "chain"
    assert main(["run", str(model_dir), "--concurrent", "--duration", "1s"]) == 2
    err = capsys.readouterr().err
    assert "a model artifact" in err and "workload" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(ManifestError, match="a model artifact"):
        C.run_concurrent(model_dir, 1.0)


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf, "1s", True])
def test_bad_durations_in_the_api(workload, bad):
    with pytest.raises(ValueError, match="give a finite number of seconds above 0"):
        C.run_concurrent(workload, bad)
    with pytest.raises(ValueError, match="alone_s"):
        C.run_concurrent(workload, 1.0, alone_s=bad)


def test_refuse_with_concurrent_names_the_option():
    from hetcc.cli.concurrent import refuse_with_concurrent

    args = types.SimpleNamespace(input=["x=a.npy"])
    with pytest.raises(UsageError, match="^--input is not taken"):
        refuse_with_concurrent(args)
    refuse_with_concurrent(types.SimpleNamespace(repeat=None, verify=False))


def executions(monkeypatch):
    """Record every stage execution as (device, start, end) (perf_counter)."""
    import time

    seen = []
    real = C.run_stage

    def step(st, feeds, message):
        t0 = time.perf_counter()
        out = real(st, feeds, message)
        seen.append((st.info.device, t0, time.perf_counter()))
        return out
    monkeypatch.setattr(C, "run_stage", step)
    return seen


def test_queue_sharing_runs_one_execution_at_a_time_per_device(workload, monkeypatch):
    seen = executions(monkeypatch)
    r = C.run_concurrent(workload, SHORT, warmup=0, alone=False)
    assert r.sharing == "queue" and r.to_json()["sharing"] == "queue"
    gpu = sorted((a, b) for d, a, b in seen if d == "gpu")
    assert len(gpu) > 10 and all(b1 <= a2 for (_, b1), (a2, _) in zip(gpu, gpu[1:]))


def test_the_device_queue_is_first_come_first_served():
    dev, stop, order = C.DeviceQueue(), threading.Event(), []
    assert dev.acquire(stop)                       # held by the main thread
    started = []

    def wait(k):
        started.append(k)
        if dev.acquire(stop):
            order.append(k)
            dev.release()
    threads = []
    for k in range(3):                             # queued in this order
        threads.append(threading.Thread(target=wait, args=(k,)))
        threads[-1].start()
        while len(dev._waiting) < k + 1:
            pass
    dev.release()
    for t in threads:
        t.join()
    assert order == [0, 1, 2] and not dev._busy
    # a stage waiting when the phase stops leaves the queue without the device
    assert dev.acquire(stop)
    t = threading.Thread(target=wait, args=(9,))
    t.start()
    while not dev._waiting:
        pass
    stop.set()
    t.join()
    assert order == [0, 1, 2] and not dev._waiting
    dev.release()
    assert not dev._busy


def test_os_sharing_and_its_flag(workload, capsys):
    with pytest.raises(ValueError, match="sharing"):
        C.run_concurrent(workload, 1.0, sharing="fifo")
    code, out = run_call(capsys, workload, "--concurrent", "--sharing", "os", "--duration", "50ms", "--warmup", "0",
                         "--json")
    assert code == 0 and json.loads(out)["sharing"] == "os"
    assert main(["run", str(workload), "--sharing", "os"]) == 2
    assert "--sharing is taken with --concurrent only" in capsys.readouterr().err
    assert main(["run", str(workload), "--rounds", "2"]) == 2
    assert "--rounds is taken with --concurrent only" in capsys.readouterr().err
    assert main(["run", str(workload), "--concurrent", "--rounds", "0"]) == 2
    assert "--rounds" in capsys.readouterr().err
    code, out = run_call(capsys, workload, "--concurrent", "--rounds", "2", "--duration", "50ms", "--warmup", "0",
                         "--json")
    assert code == 0 and json.loads(out)["rounds"] == 2


def test_rounds_take_turns_and_count_together(workload):
    seen = []
    r = C.run_concurrent(workload, 2 * SHORT, warmup=0, rounds=2, on_phase=seen.append)
    assert seen == ["alone:chain", "alone:small", "shared"] * 2 and r.rounds == 2
    assert r.window_s["shared"] >= 2 * SHORT and r.window_s["alone"]["chain"] >= 2 * SHORT
    assert all(m.shared_runs > 0 and m.alone_runs > 0 for m in r.models)
    assert set(r.load["others_cores"]) <= {"alone:chain", "alone:small", "shared"}
    with pytest.raises(ValueError, match="rounds"):
        C.run_concurrent(workload, 1.0, rounds=0)


@pytest.fixture(scope="module")
def predicted(tmp_path_factory, target):
    """The workload of ``workload`` with a contention block, as a workload planner of contention writes it."""
    tmp = tmp_path_factory.mktemp("predicted")
    chain, small = build_program(tmp, CHAIN, "chain", target), build_program(tmp, SMALL, "small", target)
    p1, p2 = plan_of(chain, [(0, 1, "cpu"), (2, 4, "gpu")]), plan_of(small, [(0, 2, "gpu")])
    stats = {"pipelines": {"chain": [{"device": "cpu", "first": 0, "stop": 2}, {"device": "gpu", "first": 2, "stop": 5}],
                           "small": [{"device": "gpu", "first": 0, "stop": 3}]},
             "prediction": {"utilisation": {"cpu": 0.5, "gpu": 1.0},
                            "throughput": {"chain": 300.0, "small": 200.0}, "alone": {"chain": 600.0, "small": 400.0},
                            "ideal": {"chain": 500.0, "small": 400.0}},
             "score": {"T_w": 250.0, "T_norm": 0.5, "J": 0.9, "O": 0.45}}
    wplan = WorkloadPlan(plans=(p1, p2), names=("chain", "small"), planner="optimum", objective=Objective("latency"),
                         stats=stats)
    return emit_workload(tmp / "w", target, [("chain", chain, p1), ("small", small, p2)], wplan)


def test_the_manifest_prediction_is_read_and_compared(predicted, capsys):
    r = C.run_concurrent(predicted, SHORT, warmup=0)
    assert "contention block" in r.prediction and "optimum" in r.prediction
    chain, small = r.models
    assert (chain.predicted_ips, chain.predicted_alone_ips, chain.ideal_ips) == (300.0, 600.0, 500.0)
    assert small.error == pytest.approx((200.0 - small.shared_ips) / small.shared_ips)
    assert (r.predicted.throughput_ips, r.predicted.normalised, r.predicted.jain, r.predicted.overall) == \
        (250.0, 0.5, 0.9, 0.45)
    assert r.predicted.jain_alone == pytest.approx(1.0)          # 300/600 and 200/400
    assert r.measured.normalised == pytest.approx(r.measured.throughput_ips / 500.0)   # 250 / 0.5
    assert r.measured.jain == pytest.approx(C.jain([chain.shared_ips / 500.0, small.shared_ips / 400.0]))
    code, out = run_call(capsys, predicted, "--concurrent", "--duration", "50ms", "--warmup", "0")
    assert code == 0 and "300.0" in out and "median |error|" in out and "contention block" in out
