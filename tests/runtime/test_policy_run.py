"""The AutoScale policy runner (hetcc.runtime.policy_run): choose, run, reward, learn, persist
atomically into the artifact; failures penalised with a reported fallback; the CLI."""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from hetcc.runtime import Executor, load_manifest
from hetcc.runtime.autoscale import Policy
from hetcc.runtime.errors import PolicyError
from hetcc.runtime.observe import Observation
from hetcc.runtime.policy_run import PolicyOptions, PolicyRunner, parse_policy_options
from hetcc.targets import load_target

from policy_artifacts import ACTIONS, policy_artifact
from runtime_artifacts import TARGET, feeds_for, run_call


class FixedObserver:
    """Observations from a list (the last one held), no /proc."""

    def __init__(self, obs):
        self.obs = obs

    def observe(self, i=0):
        return self.obs[min(i, len(self.obs) - 1)]


QUIET = Observation(0.0, 0.0, -50.0, -50.0, "test")
BUSY = Observation(0.5, 0.0, -50.0, -90.0, "test")


@pytest.fixture(scope="module")
def target():
    return load_target(TARGET)


@pytest.fixture
def art(tmp_path, target):
    return policy_artifact(tmp_path, target)


def current_policy(art):
    m = load_manifest(art)
    path = art / m.policy.file
    assert hashlib.sha256(path.read_bytes()).hexdigest() == m.policy.sha256
    return Policy.load(path, m.policy.sha256), m.policy.file


def test_runs_learns_and_persists(art):
    ex = Executor(art)
    run = PolicyRunner(ex, PolicyOptions(epsilon=0.0), observer=FixedObserver([QUIET]))
    feeds = feeds_for(ex)
    for _ in range(6):
        out = run.run(feeds)
        assert set(out) == {"y"}
    d = run.last
    assert d.state == "S|S|S|S|N|N|R|R" and d.fallback is None
    # the gpu variant (accuracy 0.5 < 0.9) is never chosen; the edge one fails (no endpoint) and is
    # penalised once, after which greedy choice avoids it
    ran = {x.ran for x in run.decisions}
    assert "gpu@700:fp32" not in ran and "edge" not in ran
    assert d.decide_us > 0 and d.update_us > 0 and d.persist_us > 0
    run.close()
    pol, rel = current_policy(art)
    assert rel.startswith("policy/autoscale-") and sorted(p.name for p in (art / "policy").iterdir()) == [rel[7:]]
    visits = pol.qtable.visits("S|S|S|S|N|N|R|R")
    assert visits.sum() >= 6 and visits[2] == 0
    Executor(art)    # the manifest and the new file agree (the Executor checks the sha256)


def test_failure_is_penalised_with_a_reported_fallback(art):
    ex = Executor(art)
    run = PolicyRunner(ex, PolicyOptions(epsilon=1.0, seed=1, persist=0), observer=FixedObserver([QUIET]))
    feeds = feeds_for(ex)
    for _ in range(12):
        run.run(feeds)
    failed = [d for d in run.decisions if d.variant == "edge"]
    assert failed, "epsilon 1 tries every allowed variant"
    for d in failed:
        assert d.fallback in ("cpu@1000:fp32", "cpu@2000:fp32") and d.ran == d.fallback
        assert d.reward == run.penalty and "edge" in d.error
        assert d.to_json()["fallback"] == d.fallback
    assert run.summary()["fallbacks"] == len(failed)
    q = run.policy.qtable.values(failed[0].state)
    assert q[3] < min(q[0], q[1])              # the failing variant is learned to be worst
    run.close()


def test_exploration_leaves_out_what_failed(art):
    """Alg. 1's uniform exploration keeps retrying a failing variant; ``explore_within`` (default)
    draws only among the variants within a margin of the best, so once penalised it is left."""
    def edge_tries(**opts):
        ex = Executor(art)
        run = PolicyRunner(ex, PolicyOptions(epsilon=1.0, seed=1, persist=0, **opts),
                           observer=FixedObserver([QUIET]))
        feeds = feeds_for(ex)
        for _ in range(24):
            run.run(feeds)
        run.close(save=False)
        return sum(d.variant == "edge" for d in run.decisions)
    assert edge_tries() == 1
    assert edge_tries(explore_within=float("inf")) > 1


def test_min_accuracy_and_seeded_choices(art):
    def choices(seed):
        ex = Executor(art)
        run = PolicyRunner(ex, PolicyOptions(epsilon=1.0, seed=seed, learn=True, persist=0),
                           observer=FixedObserver([QUIET, BUSY]))
        feeds = feeds_for(ex)
        for _ in range(10):
            run.run(feeds)
        out = [d.variant for d in run.decisions]
        run.close(save=False)     # the next call starts from the same table
        return out, run.decisions
    a, ds = choices(3)
    b, _ = choices(3)
    assert a == b and "gpu@700:fp32" not in a
    assert ds[1].state == "S|S|S|S|M|N|R|W"     # the second observation: co-runner CPU 50%, weak p2p


def test_one_runner_at_a_time_and_no_policy(art, tmp_path, target):
    ex = Executor(art)
    run = PolicyRunner(ex, observer=FixedObserver([QUIET]))
    with pytest.raises(PolicyError, match="another policy run"):
        PolicyRunner(Executor(art), observer=FixedObserver([QUIET]))
    run.close()
    PolicyRunner(Executor(art), observer=FixedObserver([QUIET])).close()
    from runtime_artifacts import chain_artifact
    (tmp_path / "plain").mkdir()
    plain = chain_artifact(tmp_path / "plain", target)
    with pytest.raises(PolicyError, match="no policy file; compile with --planner autoscale"):
        PolicyRunner(Executor(plain))


def test_tampered_policy_refused(art):
    m = load_manifest(art)
    p = art / m.policy.file
    p.write_text(p.read_text().replace('"qos_ms": 50.0', '"qos_ms": 5.0'))
    with pytest.raises(Exception, match="sha256"):
        PolicyRunner(Executor(art))


def test_crash_leftovers_are_consistent_and_cleaned(art):
    """A crash after the new file was written but before the manifest named it: the manifest still
    names the old file, which is intact; the next runner removes the orphan."""
    m = load_manifest(art)
    orphan = art / "policy" / "autoscale-0123456789abcdef.json"
    orphan.write_text('{"schema": "hetcc.autoscale/1", "actions": []}')
    tmp = art / "policy" / ".autoscale-0123456789abcdef.json.tmp-abc123"
    tmp.write_text("partial")
    user = art / "policy" / "NOTES.md"
    user.write_text("mine")
    Executor(art)                                  # consistent as it is
    PolicyRunner(Executor(art), observer=FixedObserver([QUIET])).close()
    names = sorted(p.name for p in (art / "policy").iterdir())
    assert names == sorted(["NOTES.md", m.policy.file.split("/")[-1]])


def test_manifest_stays_loadable_after_many_saves(art):
    ex = Executor(art)
    run = PolicyRunner(ex, PolicyOptions(persist=1), observer=FixedObserver([QUIET]))
    feeds = feeds_for(ex)
    shas = set()
    for _ in range(4):
        run.run(feeds)
        shas.add(run.policy_ref.sha256)
    run.close()
    assert len(shas) >= 2
    doc = json.loads((art / "manifest.json").read_text())
    assert list(doc)[0] == "schema" and doc["policy"]["sha256"] == run.policy_ref.sha256
    current_policy(art)


def test_parse_policy_options():
    o = parse_policy_options(["lr=0.5", "discount=0.2", "epsilon=0", "seed=4", "learn=0", "persist=10",
                              "trace_by=time", "mem_baseline=1", "penalty=-50"])
    assert (o.learning_rate, o.discount, o.epsilon, o.seed, o.learn, o.persist, o.trace_by, o.mem_baseline,
            o.penalty) == (0.5, 0.2, 0.0, 4, False, 10, "time", True, -50.0)
    assert (o.unseen, o.explore_within) == ("nearest", 1.0)        # the defaults
    o = parse_policy_options(["unseen=random", "explore_within=all"])
    assert (o.unseen, o.explore_within) == ("random", float("inf"))
    assert parse_policy_options(["explore_within=0.5"]).explore_within == 0.5
    for bad, match in (("lr", "KEY=VALUE"), ("speed=1", "KEY=VALUE"), ("lr=fast", "finite number"),
                       ("lr=2", "learning_rate"), ("persist=-1", "integer"), ("trace_by=x", "inference"),
                       ("unseen=zero", "'nearest' or 'random'"), ("explore_within=0", "> 0 or 'all'"),
                       ("explore_within=nan", "> 0 or 'all'")):
        with pytest.raises(PolicyError, match=match):
            parse_policy_options([bad])


def test_cli_run_policy_json(art, capsys, tmp_path):
    trace = tmp_path / "rssi.csv"
    trace.write_text("t,wifi_dbm,p2p_dbm\n0,-50,-50\n1,-60,-85\n")
    code, out = run_call(capsys, art, "--policy", "--trace", trace, "--repeat", "5", "--json",
                         "--policy-option", "epsilon=0", "--warmup", "0")
    assert code == 0
    doc = json.loads(out)
    s = doc["policy"]
    assert s["inferences"] == 5 and len(doc["decisions"]) == 5
    assert doc["decisions"][1]["observation"]["rssi_p"] == -85 and doc["decisions"][1]["state"].endswith("|R|W")
    assert s["overhead_us"]["decide"]["p50"] > 0 and s["overhead_us"]["update"]["p50"] > 0
    assert s["hyper"]["epsilon"] == 0.0
    assert (s["unseen"], s["explore_within"]) == ("nearest", 1.0)
    pol, _ = current_policy(art)
    assert pol.qtable.hyper.epsilon == 0.1        # a run's option does not change the file's value


def test_cli_run_policy_text_and_refusals(art, capsys, tmp_path):
    code, out = run_call(capsys, art, "--policy", "--repeat", "3", "--warmup", "0")
    assert code == 0 and "variant" in out and "decision overhead" in out
    with pytest.raises(Exception, match="--variant"):
        run_call(capsys, art, "--policy", "--variant", "edge")
    with pytest.raises(Exception, match="--rssi with --policy"):
        run_call(capsys, art, "--policy", "--rssi", "wifi=-60")
    with pytest.raises(Exception, match="go with --policy"):
        run_call(capsys, art, "--trace", tmp_path / "x.csv")
    bad = tmp_path / "bad.csv"
    bad.write_text("t,wifi_dbm,p2p_dbm\n0,loud,-50\n")
    with pytest.raises(PolicyError, match="bad.csv: line 2"):
        run_call(capsys, art, "--policy", "--trace", bad)


def test_executor_policy_true(art):
    with Executor(art, policy=True) as ex:
        assert ex.policy_runner is not None
        feeds = feeds_for(ex)
        for _ in range(3):
            out = ex.run(feeds)
            assert set(out) == {"y"}
        assert ex.policy_runner.index == 3
        ex.run(feeds, variant="cpu@2000:fp32")          # a named variant bypasses the policy
        assert ex.policy_runner.index == 3
    _pol, rel = current_policy(art)
    assert rel.startswith("policy/autoscale-")
    PolicyRunner(Executor(art)).close()                  # released on close


def test_evaluate_runs_a_variant_outside_the_policy(art):
    ex = Executor(art)
    run = PolicyRunner(ex, observer=FixedObserver([QUIET]))
    feeds = feeds_for(ex)
    r = run.evaluate(feeds, "cpu@1000:fp32")
    assert r["ok"] and r["latency_ms"] > 0 and r["energy_mj"] > 0
    assert r["energy_mj"] == pytest.approx((500 + 300) * r["latency_ms"] / 1000)
    bad = run.evaluate(feeds, "edge")
    assert not bad["ok"] and bad["reward"] == run.penalty and "edge" in bad["error"]
    assert run.index == 0 and run.policy.qtable.states == ()
    run.close()


def test_tampered_variant_is_raised_not_fallen_back(art):
    from hetcc.runtime import ManifestError
    ex = Executor(art)
    run = PolicyRunner(ex, observer=FixedObserver([QUIET]))
    m = load_manifest(art)
    victim = art / m.variants["cpu@2000:fp32"].slices[0].file
    victim.write_bytes(victim.read_bytes() + b"\0")
    with pytest.raises(ManifestError, match="sha256 mismatch"):
        run.evaluate(feeds_for(ex), "cpu@2000:fp32")
    run.close()


def test_trace_in_options(art, tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("t,wifi_dbm,p2p_dbm\n0,-95,-95\n")
    opts = parse_policy_options([f"trace={trace}", "persist=0"])
    with Executor(art, policy=opts) as ex:
        ex.run(feeds_for(ex))
        assert ex.policy_runner.last.state.endswith("|W|W")


def test_cli_policy_with_apply_hardware(art, capsys, tmp_path):
    code, out = run_call(capsys, art, "--policy", "--repeat", "3", "--warmup", "0", "--json", "--apply-hardware",
                         "--sysfs-root", tmp_path)
    assert code == 0
    doc = json.loads(out)
    assert doc["policy"]["inferences"] == 3
    tried = {d["variant"] for d in doc["decisions"]} | {d["ran"] for d in doc["decisions"]}
    applied = {r["variant"] for r in doc["hardware"]["applied"]}
    assert applied and applied <= tried | {None}    # each variant's configuration, applied when it ran


def test_failure_while_writing_the_manifest_leaves_the_old_policy(art, monkeypatch):
    """The new file is written, then writing manifest.json fails (a full disk): one line, the
    artifact still names the old file, and the next runner removes the orphan."""
    import hetcc.runtime.policy_run as pr
    before = load_manifest(art).policy
    ex = Executor(art)
    run = PolicyRunner(ex, PolicyOptions(persist=0), observer=FixedObserver([QUIET]))
    run.run(feeds_for(ex))
    real = pr.write_atomic

    def failing(path, data):
        if str(path).endswith("manifest.json"):
            raise OSError(28, "No space left on device")
        real(path, data)
    monkeypatch.setattr(pr, "write_atomic", failing)
    with pytest.raises(PolicyError, match="cannot write the learned policy .*No space left"):
        run.save()
    monkeypatch.setattr(pr, "write_atomic", real)
    run.close(save=False)
    assert load_manifest(art).policy == before
    assert len(list((art / "policy").iterdir())) == 2            # the old file and the orphan
    Executor(art)                                                # consistent
    PolicyRunner(Executor(art), observer=FixedObserver([QUIET])).close()
    assert [p.name for p in (art / "policy").iterdir()] == [before.file.split("/")[-1]]


def test_failed_write_during_the_run_warns_and_the_inference_stands(art, monkeypatch, caplog):
    import hetcc.runtime.policy_run as pr
    real = pr.write_atomic
    monkeypatch.setattr(pr, "write_atomic", lambda path, data: (_ for _ in ()).throw(OSError(30, "Read-only file system")))
    ex = Executor(art)
    run = PolicyRunner(ex, PolicyOptions(persist=1), observer=FixedObserver([QUIET]))
    with caplog.at_level("WARNING"):
        for _ in range(3):
            assert set(run.run(feeds_for(ex))) == {"y"}
    assert sum("Read-only" in r.getMessage() for r in caplog.records) == 1
    assert "Read-only" in run.summary()["persist_error"]
    with pytest.raises(PolicyError, match="Read-only"):
        run.close()
    monkeypatch.setattr(pr, "write_atomic", real)
    PolicyRunner(Executor(art), observer=FixedObserver([QUIET])).close()    # released despite the failure


def test_recompile_during_a_run_is_not_overwritten(art, tmp_path, target):
    """The artifact recompiled under a running policy: the runner's write is refused in one line
    and the new artifact is left as the compile wrote it."""
    ex = Executor(art)
    run = PolicyRunner(ex, PolicyOptions(persist=0), observer=FixedObserver([QUIET]))
    run.run(feeds_for(ex))
    doc = json.loads((art / "manifest.json").read_text())
    doc["policy"]["sha256"] = "0" * 64             # as a recompile would change it
    (art / "manifest.json").write_text(json.dumps(doc, indent=2) + "\n")
    before = sorted(p.name for p in (art / "policy").iterdir())
    with pytest.raises(PolicyError, match="its policy changed while this run held the artifact"):
        run.close()
    assert sorted(p.name for p in (art / "policy").iterdir()) == before
    assert json.loads((art / "manifest.json").read_text()) == doc


def test_power_meter_when_readable(art, monkeypatch):
    """A readable meter's mean power over the inference times its latency is the energy."""
    import hetcc.runtime.power as power

    class Meter:
        name = "fake rail"

        def start(self):
            pass

        def sample(self):
            pass

        def stop(self):
            return 2500.0
    monkeypatch.setattr(power, "find_power_meter", lambda: (Meter(), ""))
    ex = Executor(art)
    run = PolicyRunner(ex, PolicyOptions(persist=0), observer=FixedObserver([QUIET]))
    run.run(feeds_for(ex))
    d = run.last
    assert d.energy_mj == pytest.approx(2500.0 * d.latency_ms / 1000)
    assert run.summary()["energy_source"] == "meter: fake rail"
    run.close(save=False)
    off = PolicyRunner(Executor(art), PolicyOptions(persist=0, meter=False), observer=FixedObserver([QUIET]))
    assert off.summary()["energy_source"].startswith("model")
    off.close(save=False)
