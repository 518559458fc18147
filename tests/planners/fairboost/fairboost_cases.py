"""Synthetic models for FairBoost's tests: three devices (big, little, gpu), random latencies and
random Eq. 2 columns in ``layer_features``."""
from __future__ import annotations

import numpy as np

from hetcc.planners import FEATURES, LayerFeatures, PlanningProblem, StateTable, WorkloadProblem

DEVICES = ("big", "little", "gpu")
SPEED = np.array([1.0, 0.4, 2.5])


def problem(rng, L, name="m"):
    S = len(DEVICES)
    lat = rng.lognormal(0.0, 1.0, size=(L, 1)) / SPEED[None, :] * rng.uniform(0.8, 1.25, size=(L, S))
    z = np.zeros((L, S))
    feats = np.zeros((L, len(FEATURES)))
    eq2 = [i for i, n in enumerate(FEATURES) if n.startswith("eq2_")]
    feats[:, eq2] = rng.integers(0, 300, size=(L, len(eq2)))
    feats[:, eq2[0]] = np.arange(L)
    return PlanningProblem(
        latency_ms=lat, power_mw=np.full((L, S), 1500.0), transfer_in_ms=z + 0.05, transfer_out_ms=z + 0.05,
        transfer_in_mj=z, transfer_out_mj=z, legal=np.ones((L, S), bool), param_bytes=np.zeros(L, np.int64),
        capacity_bytes=np.full(S, np.inf), base_power_mw=500.0,
        states=StateTable(device=DEVICES, kind=("cpu", "cpu", "gpu"), freq_mhz=np.array([2400.0, 1800.0, 1000.0]),
                          is_fmax=np.ones(S, bool)),
        layer_features=LayerFeatures(FEATURES, feats), switch_ms=np.array([0.2, 0.2, 1.9]), name=name)


def workload(seed, sizes=(4, 6, 5)):
    rng = np.random.default_rng(seed)
    return WorkloadProblem(tuple(problem(rng, L, f"m{i}") for i, L in enumerate(sizes)),
                           tuple(f"m{i}" for i in range(len(sizes))))
