"""Artifacts codegen writes: variants (shared slices stored once), remote slices, policy files,
workloads; and the Executor / Pipeline / verify facade over them."""
from __future__ import annotations

import json
import logging
import types

import numpy as np
import pytest

from hetcc.passes.codegen import emit_artifact, emit_workload
from hetcc.planners import Objective, WorkloadPlan
from hetcc.runtime import Executor, ManifestError, Pipeline, RemoteSliceError, load_manifest, verify
from hetcc.targets import load_target

from runtime_artifacts import CHAIN, SMALL, TARGET, build_program, feeds_for, plan_of, reference


@pytest.fixture(scope="module")
def target():
    return load_target(TARGET)


@pytest.fixture
def make_program(tmp_path, target):
    return lambda text, name: build_program(tmp_path, text, name, target)


# --- variants ------------------------------------------------------------------------------


@pytest.fixture
def two_variants(tmp_path, make_program, target):
    program = make_program(CHAIN, "chain")
    plans = {"fast": plan_of(program, [(0, 1, "cpu"), (2, 4, "gpu")]),
             "lean": plan_of(program, [(0, 1, "cpu"), (2, 3, "gpu"), (4, 4, "cpu")])}
    out = emit_artifact(tmp_path / "art", program, target, plans, default_variant="lean")
    return program, out


def test_variants_share_identical_slices(two_variants):
    program, out = two_variants
    doc = json.loads((out / "manifest.json").read_text())
    assert doc["schema"] == "hetcc.manifest/2" and doc["kind"] == "model"
    assert list(doc["variants"]) == ["fast", "lean"] and doc["default_variant"] == "lean"
    fast, lean = (doc["variants"][v]["slices"] for v in ("fast", "lean"))
    assert fast[0]["file"] == lean[0]["file"] and fast[0]["sha256"] == lean[0]["sha256"]  # stored once
    files = {s["file"] for s in fast + lean}
    assert len(files) == 4
    assert sorted(p.relative_to(out).as_posix() for p in (out / "slices").iterdir()) == sorted(files)


def test_executor_selects_variants(two_variants):
    program, out = two_variants
    ex = Executor(out)
    assert ex.variants == ("fast", "lean") and ex.variant == "lean" and ex.models == ()
    feeds = feeds_for(ex)
    want = reference(program, feeds)
    for variant, n in (("lean", 3), ("fast", 2), (None, 3)):
        got = ex.run(feeds, variant=variant)
        np.testing.assert_allclose(got["y"], want["y"], rtol=1e-6)
        assert len(ex.last_timings) == n
    assert isinstance(ex.pipeline("fast"), Pipeline) and ex.pipeline("fast") is ex.pipeline("fast")
    assert [s.first_layer for s in ex.pipeline("fast").slices] == [0, 2]
    assert Executor(out, variant="fast").variant == "fast"
    with pytest.raises(ManifestError, match="no variant 'slow'.*fast, lean"):
        Executor(out, variant="slow")
    with pytest.raises(ManifestError, match="no variant 'slow'"):
        ex.run(feeds, variant="slow")


def test_verify_each_variant(two_variants):
    _, out = two_variants
    ex = Executor(out)
    for v in ex.variants:
        assert verify(ex, variant=v).ok
    assert verify(out, variant="fast").ok
    assert verify(ex.pipeline("fast")).ok


def test_shared_file_tampered_fails_both_variants(two_variants):
    _, out = two_variants
    shared = out / load_manifest(out).variants["fast"].slices[0].file
    shared.write_bytes(shared.read_bytes() + b"\0")
    with pytest.raises(ManifestError, match="sha256 mismatch"):
        Executor(out, variant="fast")
    with pytest.raises(ManifestError, match="sha256 mismatch"):
        Executor(out, variant="lean")


def test_plan_details_recorded(tmp_path, make_program, target):
    program = make_program(CHAIN, "chain")
    obj = Objective("energy", deadline_ms=1e-6, deadline_spec="1.3x", power_cap_mw=None)
    plan = plan_of(program, [(0, 4, "cpu")], planner="dp", options={"k": (1, 2)},
                   stats={"evaluations": 3, "gap": float("inf")}, objective=obj)
    plan = plan.replace(hardware={"precision": "fp16"}, feasible=False, violations=("misses the deadline",))
    out = emit_artifact(tmp_path / "o", program, target, {"only": plan})
    v = load_manifest(out).variant()
    assert v.hardware == {"precision": "fp16"} and v.feasible is False and v.violations == ("misses the deadline",)
    assert v.objective.metric == "energy" and v.objective.deadline_spec == "1.3x"
    assert v.objective.deadline_ms == 1e-6 and v.predicted.meets_deadline is False
    assert v.planner.name == "dp" and v.planner.options == {"k": [1, 2]}
    assert v.planner.stats == {"evaluations": 3, "gap": None}
    assert v.predicted.energy_mj == pytest.approx(plan.energy_mj)  # the target has a power model
    assert v.slices[0].file == "slices/00_cpu.onnx"  # one variant: the plain names


def test_policy_file_recorded_and_checked(tmp_path, make_program, target):
    program = make_program(CHAIN, "chain")
    policy = tmp_path / "pick.json"
    policy.write_text('{"rule": "fast when plugged in"}')
    plans = {"a": plan_of(program, [(0, 4, "cpu")]), "b": plan_of(program, [(0, 4, "gpu")])}
    out = emit_artifact(tmp_path / "o", program, target, plans, policy=policy)
    m = load_manifest(out)
    assert m.policy.file == "policy/pick.json" and m.default_variant == "a"
    ex = Executor(out)
    assert ex.policy_path == (out / "policy/pick.json").resolve()
    (out / "policy/pick.json").write_text("{}")
    with pytest.raises(ManifestError, match="pick.json: sha256 mismatch"):
        Executor(out)


# --- remote devices ------------------------------------------------------------------------


@pytest.fixture
def remote_artifact(tmp_path, make_program, target):
    program = make_program(CHAIN, "chain")
    plan = plan_of(program, [(0, 1, "cpu"), (2, 4, "edge")])
    return program, emit_artifact(tmp_path / "remote", program, target, {"offload": plan})


def test_remote_slice_records_link(remote_artifact, target):
    _, out = remote_artifact
    s0, s1 = load_manifest(out).slices
    assert (s0.link, s0.remote) == (None, False)
    assert (s1.device, s1.link, s1.remote) == ("edge", "wifi-direct", True)
    assert s1.endpoint == getattr(target.device("edge"), "endpoint", None)


def test_remote_slice_refused_without_local_fallback(remote_artifact):
    _, out = remote_artifact
    ex = Executor(out)   # the endpoint is http:// (a hetcc serve): offloaded when run, and no server answers
    with pytest.raises(RemoteSliceError, match=r"slice 1 .*remote device 'edge'.*http://edge.local:7070.*--local-fallback"):
        ex.run(feeds_for(ex))
    assert issubclass(RemoteSliceError, ManifestError)


def test_remote_slice_runs_locally_with_one_warning(remote_artifact, caplog):
    program, out = remote_artifact
    with caplog.at_level(logging.WARNING, logger="hetcc.runtime"):
        ex = Executor(out, local_fallback=True)
        feeds = feeds_for(ex)
        got = ex.run(feeds)
        ex.run(feeds)
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1 and "slice 1" in warned[0] and "edge" in warned[0], warned
    assert ex.providers == ["CPUExecutionProvider", "http://edge.local:7070"]   # offloaded, and fell back here
    assert [(f.slice, f.device) for f in ex.last_fallbacks] == [(1, "edge")]
    np.testing.assert_allclose(got["y"], reference(program, feeds)["y"], rtol=1e-6)
    assert verify(ex).ok


def test_endpoint_recorded_when_the_device_has_one(tmp_path, make_program, target):
    program = make_program(CHAIN, "chain")

    class WithEndpoint:
        def __getattr__(self, name):
            return getattr(target, name)

        def device(self, name):
            d = target.device(name)
            if d.link is None:
                return d
            fields = {k: getattr(d, k) for k in d.__dataclass_fields__}
            fields["endpoint"] = "grpc://tab-s6.local:50051"
            return types.SimpleNamespace(**fields)

    plan = plan_of(program, [(0, 4, "cloud")])
    out = emit_artifact(tmp_path / "o", program, WithEndpoint(), {"cloud": plan})
    (sl,) = load_manifest(out).slices
    assert (sl.link, sl.endpoint) == ("wifi", "grpc://tab-s6.local:50051")
    with pytest.raises(RemoteSliceError, match="endpoint grpc://tab-s6.local:50051"):
        Executor(out)


# --- workloads -----------------------------------------------------------------------------


@pytest.fixture
def workload(tmp_path, make_program, target):
    chain, small = make_program(CHAIN, "chain"), make_program(SMALL, "small")
    p1 = plan_of(chain, [(0, 2, "cpu"), (3, 4, "gpu")], planner="dp")
    p2 = plan_of(small, [(0, 2, "gpu")], planner="dp")
    obj = Objective("latency", deadline_ms=100.0)
    wplan = WorkloadPlan(plans=(p1, p2), names=("chain", "small"), planner="independent",
                         options={"x": 1}, seconds=0.5, stats={"latency_ms": {"chain": p1.latency_ms}},
                         objective=obj)
    out = emit_workload(tmp_path / "wl", target, [("chain", chain, p1), ("small", small, p2)], wplan)
    return {"chain": chain, "small": small}, out


def test_workload_layout_and_manifest(workload):
    _, out = workload
    m = load_manifest(out)
    assert m.kind == "workload" and m.model is None and m.variants == {} and m.model_names == ("chain", "small")
    assert m.workload.planner.name == "independent" and m.workload.objective.deadline_ms == 100.0
    assert [w.dir for w in m.workload.models] == ["models/chain", "models/small"]
    for name in ("chain", "small"):
        sub = load_manifest(out / "models" / name)
        assert sub.kind == "model" and sub.model.name == name
        assert sub.variant().objective.deadline_ms == 100.0
        assert (out / "models" / name / "costs.json").is_file()


def test_workload_runs_and_verifies_each_model(workload):
    programs, out = workload
    ex = Executor(out)
    assert ex.models == ("chain", "small") and ex.variants == ()
    all_feeds = {}
    for name, program in programs.items():
        pipe = ex.pipeline(model=name)
        feeds = feeds_for(pipe)
        all_feeds[name] = feeds
        got = ex.run(feeds, model=name)
        np.testing.assert_allclose(got["y"], reference(program, feeds)["y"], rtol=1e-6)
        assert verify(ex, model=name).ok
    both = ex.run(all_feeds)
    assert set(both) == {"chain", "small"}
    with pytest.raises(ManifestError, match="no model 'big'"):
        ex.pipeline(model="big")
    with pytest.raises(ManifestError, match="name a model"):
        ex.inputs


def test_workload_member_tampered(workload):
    _, out = workload
    sub = out / "models/small/manifest.json"
    sub.write_text(sub.read_text().replace('"graph_optimization_level": "all"', '"graph_optimization_level": "basic"'))
    with pytest.raises(ManifestError, match=r"models/small/manifest.json: sha256 mismatch"):
        Executor(out)
