"""A small multi-variant artifact with an AutoScale policy file, for the policy runner's tests
(until ``hetcc compile --planner autoscale`` builds them, and beside it: no planner involved)."""
from __future__ import annotations

import json
from pathlib import Path

from hetcc.passes.codegen import emit_artifact

from runtime_artifacts import CHAIN, build_program, plan_of

WIFI = {"kind": "wifi", "signal_dbm": [-90.0, -50.0], "bandwidth_mbps": [10.0, 100.0],
        "tx_power_mw": [1200.0, 400.0], "rx_power_mw": [600.0, 200.0], "rtt_ms": 4.0, "default_signal_dbm": -50.0}


def action(variant, device, *, freq=None, precision="float32", remote=False, link=None, compute_ms=1.0,
           busy=1000.0, accuracy=1.0):
    return {"variant": variant, "device": device, "kind": device if not remote else "remote", "freq_mhz": freq,
            "precision": precision, "remote": remote, "link": link, "compute_ms": compute_ms,
            "busy_power_mw": busy, "bytes_in": 32, "bytes_out": 32, "accuracy": accuracy}


ACTIONS = [
    action("cpu@1000:fp32", "cpu", freq=1000.0, compute_ms=2.0, busy=500.0),
    action("cpu@2000:fp32", "cpu", freq=2000.0, compute_ms=1.0, busy=2000.0),
    action("gpu@700:fp32", "gpu", freq=700.0, compute_ms=1.0, busy=800.0, accuracy=0.5),
    action("edge", "edge", remote=True, link="wifi-direct", compute_ms=0.5, busy=100.0),
]


def policy_doc(actions=ACTIONS, qos_ms=50.0, min_accuracy=0.9, qtable=None):
    doc = {"schema": "hetcc.autoscale/1", "model": {"name": "chain", "conv": 0, "fc": 2, "rc": 0, "macs": 128},
           "qos_ms": qos_ms, "min_accuracy": min_accuracy, "base_power_mw": 300.0,
           "links": {"wifi-direct": {**WIFI, "kind": "wifi-direct"}}, "actions": list(actions)}
    if qtable is not None:
        doc["qtable"] = qtable
    return doc


def policy_artifact(tmp_path: Path, target, name="as", **policy) -> Path:
    """Four variants of CHAIN (cpu twice, gpu, the remote edge) and a policy over them; edge has no
    endpoint, so running it fails (a RemoteSliceError) unless local fallback is on."""
    program = build_program(tmp_path, CHAIN, "chain", target)
    plans = {"cpu@1000:fp32": plan_of(program, [(0, 4, "cpu")]),
             "cpu@2000:fp32": plan_of(program, [(0, 1, "cpu"), (2, 4, "cpu")]),
             "gpu@700:fp32": plan_of(program, [(0, 4, "gpu")]),
             "edge": plan_of(program, [(0, 4, "edge")])}
    src = tmp_path / "autoscale.json"
    src.write_text(json.dumps(policy_doc(**policy)))
    return emit_artifact(tmp_path / name, program, target, plans, default_variant="cpu@1000:fp32", policy=src)
