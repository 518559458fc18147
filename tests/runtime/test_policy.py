"""AutoScale's run-time policy (hetcc.runtime.autoscale): Table 1 states, Eq. 5 rewards, Eq. 1-4
energy, Alg. 1's update and epsilon-greedy choice, the two file formats and their refusals."""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from hetcc.runtime.autoscale import (POLICY_SCHEMA, QTABLE_SCHEMA, Hyper, Policy, QTable, energy_mj,
                                     reference_energy_mj, reward, state_bins, state_key, write_atomic)
from hetcc.runtime.errors import ManifestError, PolicyError

WIFI = {"kind": "wifi", "signal_dbm": [-90.0, -50.0], "bandwidth_mbps": [10.0, 100.0],
        "tx_power_mw": [1200.0, 400.0], "rx_power_mw": [600.0, 200.0], "rtt_ms": 4.0, "default_signal_dbm": -50.0}


def action(variant, device="cpu", freq=None, precision="float32", remote=False, link=None, compute_ms=10.0,
           busy=1000.0, accuracy=1.0, kind=None):
    return {"variant": variant, "device": device, "kind": kind or device, "freq_mhz": freq, "precision": precision,
            "remote": remote, "link": link, "compute_ms": compute_ms, "busy_power_mw": busy,
            "bytes_in": 150528, "bytes_out": 4000, "accuracy": accuracy}


def policy_doc(qtable=None, min_accuracy=0.0):
    acts = [action("cpu@1000:fp32", freq=1000.0), action("cpu@2000:fp32", freq=2000.0),
            action("cpu@2000:int8", freq=2000.0, precision="int8", accuracy=0.9),
            action("cloud", device="cloud", kind="remote", remote=True, link="wifi", busy=100.0)]
    doc = {"schema": POLICY_SCHEMA, "model": {"name": "m", "conv": 20, "fc": 1, "rc": 0, "macs": 3e8},
           "qos_ms": 50.0, "min_accuracy": min_accuracy, "base_power_mw": 500.0, "links": {"wifi": WIFI},
           "actions": acts}
    if qtable is not None:
        doc["qtable"] = qtable
    return doc


# -- Table 1


@pytest.mark.parametrize("conv,bin_", [(0, "S"), (29, "S"), (30, "M"), (49, "M"), (50, "L"), (89, "L"), (90, "XL")])
def test_conv_bins(conv, bin_):
    assert state_bins(conv, 0, 0, 0, 0, 0, -50, -50)[0] == bin_


def test_table1_boundaries():
    assert state_bins(0, 9, 9, 999e6, 0, 0, -50, -50)[1:4] == ("S", "S", "S")
    assert state_bins(0, 10, 10, 1000e6, 0, 0, -50, -50)[1:4] == ("L", "L", "M")
    assert state_bins(0, 0, 0, 1999e6, 0, 0, -50, -50)[3] == "M"
    assert state_bins(0, 0, 0, 2000e6, 0, 0, -50, -50)[3] == "L"
    co = [(0.0, "N"), (0.004, "N"), (0.01, "S"), (0.2499, "S"), (0.25, "M"), (0.7499, "M"), (0.75, "L"), (1.0, "L")]
    for x, b in co:
        assert state_bins(0, 0, 0, 0, x, x, -50, -50)[4:6] == (b, b), x
    assert state_bins(0, 0, 0, 0, 0, 0, -79.9, -80.0)[6:] == ("R", "W")
    assert state_bins(0, 0, 0, 0, 0, 0, None, -95)[6:] == ("R", "W")


def test_state_key_format():
    assert state_key(53, 1, 0, 4.1e9, 0, 0, -50, -50) == "L|S|S|L|N|N|R|R"
    assert state_key(95, 12, 11, 1.5e9, 0.5, 0.9, -85, -60) == "XL|L|L|M|M|L|W|R"


# -- Eq. 5


def test_reward_branches():
    h = Hyper(alpha=0.1, beta=0.1, qos_penalty=10.0)
    # accuracy below the target: minus the accuracy in percent, whatever the energy
    assert reward(10, 500, 0.6, 50, 0.7, h, 100.0) == pytest.approx(-60.0)
    # QoS met: -E/E_ref + alpha * slack / qos + beta * accuracy
    assert reward(30, 200, 0.95, 50, 0.7, h, 100.0) == pytest.approx(-2.0 + 0.1 * 20 / 50 + 0.1 * 0.95)
    # QoS missed: -E/E_ref + beta * accuracy - penalty * latency / qos
    assert reward(60, 200, 0.95, 50, 0.7, h, 100.0) == pytest.approx(-2.0 + 0.1 * 0.95 - 10 * 60 / 50)
    assert reward(50, 200, 1.0, 50, 0.0, h, 100.0) == pytest.approx(-2.0 + 0.1 - 10)  # at the target is not under it
    # meeting QoS comes first: five reference energies under the target beat a tenth of one over it
    assert reward(49, 500, 1.0, 50, 0.0, h, 100.0) > reward(51, 10, 1.0, 50, 0.0, h, 100.0)
    # among the actions meeting it, less energy wins; among those missing it, the faster
    assert reward(40, 50, 1.0, 50, 0.0, h, 100.0) > reward(20, 60, 1.0, 50, 0.0, h, 100.0)
    assert reward(60, 90, 1.0, 50, 0.0, h, 100.0) > reward(70, 50, 1.0, 50, 0.0, h, 100.0)
    # the reward does not depend on the energy's unit, only on its ratio to the reference
    assert reward(30, 2.0, 1.0, 50, 0.0, h, 1.0) == pytest.approx(reward(30, 2000.0, 1.0, 50, 0.0, h, 1000.0))
    assert reward(80, 200, 1.0, 50, 0.0, Hyper(qos_penalty=0.0), 100.0) == pytest.approx(-2.0 + 0.1)
    with pytest.raises(PolicyError, match="reference energy"):
        reward(30, 200, 1.0, 50, 0.0, h, 0.0)


def test_reference_energy_is_the_least_predicted_action_energy():
    acts = [action("cpu@1000:fp32", freq=1000.0, compute_ms=40.0, busy=800.0),
            action("cpu@2000:fp32", freq=2000.0, compute_ms=20.0, busy=2000.0),
            action("cpu@2000:int8", freq=2000.0, precision="int8", compute_ms=5.0, busy=2000.0),
            action("gpu@700:fp16", device="gpu", freq=700.0, precision="float16", compute_ms=90.0, busy=3000.0)]
    links = {"wifi": WIFI}
    # the INT8 CPU step, whatever the order: (2000 + 500) mW x 5 ms
    assert reference_energy_mj(acts[::-1], 500.0, links) == pytest.approx(2500 * 5 / 1000)
    # without it the least of (800 + 500) x 40 = 52 mJ, (2000 + 500) x 20 = 50 mJ and the GPU's 315 mJ
    assert reference_energy_mj(acts[:2] + acts[3:], 500.0, links) == pytest.approx(2500 * 20 / 1000)
    assert reference_energy_mj([], 500.0, links) == 1.0


def test_hyper_qos_penalty_defaults_for_old_files():
    assert Hyper.from_json({"learning_rate": 0.9, "alpha": 0.1}).qos_penalty == 100.0
    assert Hyper.from_json({"qos_penalty": 3}).qos_penalty == 3.0
    assert Hyper().to_json()["qos_penalty"] == 100.0
    with pytest.raises(PolicyError, match="qos_penalty"):
        Hyper(qos_penalty=-1.0)


def test_policy_reward_uses_its_reference_energy(tmp_path):
    p = tmp_path / "autoscale.json"
    p.write_text(json.dumps(policy_doc()))
    pol = Policy.load(p)
    # the least predicted energy of the file's actions
    ref = pol.energy_ref_mj
    assert ref == pytest.approx(min(reference_energy_mj([a], pol.base_power_mw, pol.links) for a in pol.actions))
    assert ref < reference_energy_mj(pol.actions[:1], pol.base_power_mw, pol.links) or len(pol.actions) == 1
    assert pol.reward("cpu@1000:fp32", 10.0, 15.0) == pytest.approx(-15.0 / ref + 0.1 * 40 / 50 + 0.1)
    assert pol.reward("cloud", 100.0, 7.5) == pytest.approx(-7.5 / ref + 0.1 - 100 * 2)


# -- Eq. 1-4


def test_energy_local_and_remote():
    a = action("cpu@2000:fp32", busy=1500.0)
    assert energy_mj(a, 20.0, 500.0, {}) == pytest.approx((1500 + 500) * 20 / 1000)
    r = action("cloud", remote=True, link="wifi", busy=100.0)
    links = {"wifi": WIFI}
    e = energy_mj(r, 30.0, 500.0, links, rssi=-50.0, t_tx_ms=10.0, t_rx_ms=2.0)
    assert e == pytest.approx((400 * 10 + 200 * 2 + 600 * 18) / 1000)
    weak = energy_mj(r, 30.0, 500.0, links, rssi={"wifi": -90.0}, t_tx_ms=10.0, t_rx_ms=2.0)
    assert weak == pytest.approx((1200 * 10 + 600 * 2 + 600 * 18) / 1000)
    # estimated transfers: slower and costlier at a weak signal
    assert energy_mj(r, 500.0, 500.0, links, rssi=-90) > energy_mj(r, 500.0, 500.0, links, rssi=-50)
    with pytest.raises(PolicyError, match="link 'lte'"):
        energy_mj(action("x", remote=True, link="lte"), 1.0, 0.0, links)


# -- Alg. 1


def test_update_follows_alg1():
    qt = QTable(["a", "b", "c"], Hyper(learning_rate=0.9, discount=0.1))
    s, s2 = "S|S|S|S|N|N|R|R", "S|S|S|S|L|N|R|R"
    q0 = qt.values(s)
    assert np.all(np.abs(q0) <= 1e-6) and np.any(q0 != 0)        # tiny random init
    assert np.array_equal(qt.values(s), q0)                       # the same every time (seeded by key)
    nxt = qt.values(s2)
    qt.update(s, 1, 10.0, s2)
    expect = q0[1] + 0.9 * (10.0 + 0.1 * nxt.max() - q0[1])
    assert qt.values(s)[1] == pytest.approx(expect)
    assert qt.values(s)[0] == q0[0] and qt.visits(s).tolist() == [0, 1, 0]
    qt.update(s2, 2, -5.0, s)
    qt.update(s, 1, 10.0, s2)
    expect2 = expect + 0.9 * (10.0 + 0.1 * qt.values(s2).max() - expect)
    assert qt.values(s)[1] == pytest.approx(expect2)
    assert qt.visits(s)[1] == 2 and qt.states == tuple(sorted((s, s2)))
    with pytest.raises(PolicyError, match="state key"):
        qt.update("bogus", 0, 1.0, s)


def test_choose_greedy_epsilon_and_mask():
    qt = QTable(["a", "b", "c", "d"], Hyper(epsilon=0.0))
    s = "S|S|S|S|N|N|R|R"
    for _ in range(3):
        qt.update(s, 2, 100.0, s)
    qt.update(s, 3, 50.0, s)
    rng = np.random.default_rng(0)
    assert qt.choose(s, rng) == 2
    mask = np.array([True, True, False, True])
    assert qt.choose(s, rng, allowed=mask) == 3
    # epsilon 1: uniform over the allowed actions only, reproducible with a seeded generator
    qt.hyper = Hyper(epsilon=1.0)
    picks = [qt.choose(s, np.random.default_rng(7), allowed=mask) for _ in range(3)]
    assert len(set(picks)) == 1                                     # same seed, same choice
    many = {qt.choose(s, rng, allowed=mask) for _ in range(200)}
    assert many == {0, 1, 3}
    assert qt.choose(s, rng, allowed=mask, explore=False) == 3     # explore=False is greedy
    qt.hyper = Hyper(epsilon=0.5)
    seq1 = [qt.choose(s, np.random.default_rng(3)) for _ in range(1)] + [
        qt.choose(s, r) for r in [np.random.default_rng(3)] for _ in range(20)]
    seq2 = [qt.choose(s, np.random.default_rng(3)) for _ in range(1)] + [
        qt.choose(s, r) for r in [np.random.default_rng(3)] for _ in range(20)]
    assert seq1 == seq2 and len(set(seq1)) > 1
    with pytest.raises(PolicyError, match="no action is allowed"):
        qt.choose(s, rng, allowed=np.zeros(4, dtype=bool))


def test_unseen_state_starts_from_the_nearest_learned_one():
    qt = QTable(["local", "edge"], Hyper(learning_rate=1.0, discount=0.0))
    quiet_weak, cpu_weak = "S|S|S|M|N|N|W|W", "S|S|S|M|S|N|W|W"
    quiet_strong = "S|S|S|M|N|N|R|R"
    qt.update(quiet_strong, 1, -0.2, quiet_strong)       # strong signal: the edge is cheap
    qt.update(quiet_strong, 0, -0.3, quiet_strong)
    qt.update(quiet_weak, 1, -17.0, quiet_weak)           # weak signal: the edge is ruinous
    qt.update(quiet_weak, 0, -0.3, quiet_weak)
    # Alg. 1's random start: the new state looks near 0 everywhere, so greedy would try the edge
    assert np.all(np.abs(qt.values(cpu_weak)) <= 1e-6)
    qt.unseen = "nearest"
    # one co-runner bin away from quiet_weak, two signal bins from quiet_strong
    assert qt.nearest(cpu_weak) == quiet_weak
    assert qt.values(cpu_weak).tolist() == [-0.3, -17.0]
    assert qt.choose(cpu_weak, np.random.default_rng(0), explore=False) == 0
    qt.update(cpu_weak, 0, -0.4, cpu_weak)                # learning there starts from the copy
    assert qt.values(cpu_weak).tolist() == [-0.4, -17.0] and qt.visits(cpu_weak).tolist() == [1, 0]
    assert qt.values(quiet_weak).tolist() == [-0.3, -17.0]      # the neighbour is untouched
    # another network's states are not neighbours: random start
    other = "L|S|S|L|N|N|W|W"
    assert qt.nearest(other) is None and np.all(np.abs(qt.values(other)) <= 1e-6)
    # ties in steps: the most visited wins
    qt.update(quiet_strong, 0, -0.3, quiet_strong)
    assert qt.nearest("S|S|S|M|N|N|R|W") == quiet_strong     # one step from quiet_strong and quiet_weak
    assert qt.nearest("bogus") is None
    with pytest.raises(PolicyError, match="unseen 'zero'"):
        qt.unseen = "zero"


def test_exploration_within_a_margin_of_the_best():
    qt = QTable(["a", "b", "c"], Hyper(learning_rate=1.0, discount=0.0, epsilon=1.0))
    s = "S|S|S|S|N|N|W|W"
    for a, r in enumerate((-0.3, -0.5, -17.0)):
        qt.update(s, a, r, s)
    assert qt.explorable(s).tolist() == [0, 1, 2]                  # Alg. 1: any
    assert qt.explorable(s, within=1.0).tolist() == [0, 1]         # the ruinous one is left out
    assert qt.explorable(s, within=0.1).tolist() == [0]
    assert qt.explorable(s, np.array([False, True, True]), within=1.0).tolist() == [1]
    rng = np.random.default_rng(0)
    assert {qt.choose(s, rng, within=1.0) for _ in range(100)} == {0, 1}
    assert {qt.choose(s, rng) for _ in range(100)} == {0, 1, 2}


def test_qtable_round_trip(tmp_path):
    qt = QTable(["cpu@1000:fp32", "cpu@2000:fp32"], Hyper(epsilon=0.2), target="host", trained={"runs": 3})
    qt.update("S|S|S|S|N|N|R|R", 0, 3.5, "S|S|S|S|S|N|R|R")
    p = tmp_path / "q.json"
    qt.save(p)
    back = QTable.load(p)
    assert back.to_json() == qt.to_json()
    assert back.to_json()["schema"] == QTABLE_SCHEMA and back.hyper.epsilon == 0.2
    assert np.array_equal(back.values("M|S|S|S|N|N|R|R"), qt.values("M|S|S|S|N|N|R|R"))
    assert [f.name for f in tmp_path.iterdir()] == ["q.json"]      # no temporary left behind


def test_policy_round_trip_and_sha(tmp_path):
    p = tmp_path / "autoscale.json"
    p.write_text(json.dumps(policy_doc()))
    pol = Policy.load(p)
    assert pol.variants == ("cpu@1000:fp32", "cpu@2000:fp32", "cpu@2000:int8", "cloud")
    assert pol.state_key(0.0, 0.3, -85, None) == "S|S|S|S|N|M|W|R"
    s = pol.state_key(0, 0, -50, -50)
    pol.qtable.update(s, 3, pol.reward("cloud", 20.0, pol.energy_mj("cloud", 20.0, rssi=-50)), s)
    out = tmp_path / "copy.json"
    sha = pol.save(out)
    assert sha == hashlib.sha256(out.read_bytes()).hexdigest()
    back = Policy.load(out, sha256=sha)
    assert back.to_json() == pol.to_json()
    assert back.qtable.values(s)[3] == pol.qtable.values(s)[3]


def test_min_accuracy_mask(tmp_path):
    p = tmp_path / "autoscale.json"
    p.write_text(json.dumps(policy_doc(min_accuracy=0.95)))
    pol = Policy.load(p)
    assert pol.allowed().tolist() == [True, True, False, True]
    rng = np.random.default_rng(0)
    pol.qtable.hyper = Hyper(epsilon=1.0)
    assert 2 not in {pol.qtable.choose("S|S|S|S|N|N|R|R", rng, pol.allowed()) for _ in range(100)}


@pytest.mark.parametrize("mutate,match", [
    (lambda d: d.update(schema="hetcc.autoscale/9"), "schema"),
    (lambda d: d.update(qos_ms=0), "qos_ms: expected a QoS target above 0"),
    (lambda d: d["actions"][0].update(accuracy=1.5), r"actions\[0\]: accuracy"),
    (lambda d: d["actions"][3].update(link="lte"), "link 'lte'"),
    (lambda d: d.update(qtable={"schema": QTABLE_SCHEMA, "actions": ["x"]}), "qtable.actions must equal"),
    (lambda d: d.update(qtable={"schema": QTABLE_SCHEMA, "actions": ["cpu@1000:fp32", "cpu@2000:fp32",
                                                                     "cpu@2000:int8", "cloud"],
                                "q": {"S|S|S|S|N|N|R|R": [1, 2]}}), "expected 4 numbers"),
    (lambda d: d.update(qtable={"schema": QTABLE_SCHEMA, "actions": ["cpu@1000:fp32", "cpu@2000:fp32",
                                                                     "cpu@2000:int8", "cloud"],
                                "hyper": {"learning_rate": 2}}), "learning_rate"),
])
def test_malformed_policy_is_one_line(tmp_path, mutate, match):
    doc = policy_doc()
    mutate(doc)
    p = tmp_path / "autoscale.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(PolicyError, match=match) as e:
        Policy.load(p)
    assert str(p) in str(e.value) and "\n" not in str(e.value)


def test_tampered_missing_and_wrong_sha(tmp_path):
    p = tmp_path / "autoscale.json"
    p.write_text(json.dumps(policy_doc()))
    sha = hashlib.sha256(p.read_bytes()).hexdigest()
    Policy.load(p, sha)
    p.write_text(p.read_text().replace('"qos_ms": 50.0', '"qos_ms": 5.0'))
    with pytest.raises(PolicyError, match="does not match the manifest") as e:
        Policy.load(p, sha)
    assert str(p) in str(e.value) and "\n" not in str(e.value)
    assert isinstance(e.value, ManifestError) and e.value.exit_code == 2
    with pytest.raises(PolicyError, match="no such policy file") as e:
        Policy.load(tmp_path / "gone.json")
    assert "gone.json" in str(e.value)
    p.write_text('{"schema": "hetcc.autoscale/1", "qos_ms": NaN')
    with pytest.raises(PolicyError, match="not valid JSON|not a JSON number"):
        Policy.load(p)
    p.write_bytes(b"\xff\xfe")
    with pytest.raises(PolicyError, match="not UTF-8"):
        Policy.load(p)


def test_transfer_to_another_action_set():
    old = QTable(["cpu@826:fp32", "cpu@2803:fp32", "gpu@710:fp16", "dsp:int8", "cloud"])
    s = "L|S|S|L|N|N|R|R"
    for a, r in enumerate([1.0, 2.0, 3.0, 4.0, 5.0]):
        old.update(s, a, r, s)
    vals = old.values(s)
    new = old.transfer(["cpu@2700:fp32", "cpu@1000:fp32", "cpu@1800:fp32", "gpu@600:fp32", "edge", "npu:int8"])
    got = new.values(s)
    assert new.actions[0] == "cpu@2700:fp32"
    assert got[0] == vals[1]               # the top CPU step takes the top CPU step's value
    assert got[1] == vals[0]               # the lowest takes the lowest
    assert got[3] == vals[2]               # same device, other precision
    assert got[4] == vals[4]               # remote for remote
    assert abs(got[5]) <= 1e-6             # no match: unvisited
    assert new.visits(s).tolist() == [0] * 6
    # dicts of the policy file work too (matched on their kind)
    d = old.transfer([action("gpu@700:fp16", device="gpu", freq=700.0, precision="float16")])
    assert d.actions == ("gpu@700:fp16",) and d.values(s)[0] == vals[2]


def test_write_atomic_keeps_old_on_failure(tmp_path, monkeypatch):
    p = tmp_path / "f.json"
    write_atomic(p, b"old")
    import os

    def boom(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        write_atomic(p, b"new")
    assert p.read_bytes() == b"old" and [f.name for f in tmp_path.iterdir()] == ["f.json"]
