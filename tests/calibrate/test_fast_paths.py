"""The calibration's fast paths give the numbers of the plain ones, bit for bit: the forced optima
of several targets in one DP (``forced_optima_batch``) are ``forced_optima``'s, and the stacked,
partly recomputed cost tables (``StackedTables``) are ``cost_tables``' model by model, their slice
costs each model's own problem's."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hetcc.core.opclasses import DEFAULT_CLASS, OP_CLASSES
from hetcc.measure.calibrate.model import forced_optima, forced_optima_batch, slice_tensor
from hetcc.measure.calibrate.tables import StackedTables
from hetcc.planners.hardware import TABLES, DeviceParams, cost_tables
from hetcc.planners.problem import FEATURES, LayerFeatures, PlanningProblem, StateTable


def _problem(rng, L: int, S: int, *, ties: bool) -> PlanningProblem:
    legal = rng.random((L, S)) > 0.25
    legal[:, 0] = True
    if ties:      # few distinct values: many equal sums, where the first state and start must be kept
        z = lambda: rng.integers(1, 4, (L, S)).astype(np.float64) / 4  # noqa: E731
    else:
        z = lambda: rng.uniform(0.1, 2.0, (L, S))  # noqa: E731
    devices = [f"d{s}" for s in range(S)]
    return PlanningProblem(latency_ms=z(), power_mw=z() * 1000, transfer_in_ms=z(), transfer_out_ms=z(),
                           transfer_in_mj=z(), transfer_out_mj=z(), legal=legal, param_bytes=np.ones(L, np.int64),
                           capacity_bytes=np.array([np.inf] + [float(rng.integers(2, 6)) for _ in range(S - 1)]),
                           base_power_mw=250.0 if ties else 500.0, states=StateTable.build(devices, [1.0] * S))


@pytest.mark.parametrize("seed", range(12))
def test_forced_optima_batch_is_forced_optima_target_by_target(seed):
    rng = np.random.default_rng(seed)
    jobs = []
    for _ in range(3):                  # problems of different sizes in one DP
        p = _problem(rng, int(rng.integers(2, 12)), int(rng.integers(2, 6)), ties=seed % 2 == 0)
        S = p.num_states
        for metric in ("latency", "energy"):
            for states in (np.arange(S), np.arange(S)[rng.random(S) > 0.3]):
                if states.size:
                    jobs.append((p, metric, states, [int(t) for t in rng.permutation(states)], None))
    jobs.append((p, "latency", np.arange(S), [], None))
    got = forced_optima_batch(jobs)
    want = [[forced_optima(p, metric, states, t) for t in targets] for p, metric, states, targets, _ in jobs]
    assert got == want and got[-1] == []
    assert forced_optima_batch([]) == []


def test_forced_optima_batch_leaves_a_tensor_with_nan_to_forced_optima():
    rng = np.random.default_rng(5)
    p = _problem(rng, 6, 3, ties=False)
    states = np.arange(3)
    cost = slice_tensor(p, "latency", states)
    cost[3, 1, 2] = np.nan
    got = forced_optima_batch([(p, "latency", states, [0, 2], cost), (p, "energy", states, [1], None)])
    want = [[forced_optima(p, "latency", states, t, cost=cost) for t in (0, 2)],
            [forced_optima(p, "energy", states, 1)]]
    assert repr(got) == repr(want)           # NaN costs: the same (nan != nan)


def _bits(cost) -> list[str]:
    return [float(x).hex() for x in dataclasses.astuple(cost)]


def _params(rng, S: int, *, link: bool) -> DeviceParams:
    u = lambda lo, hi: rng.uniform(lo, hi, S)  # noqa: E731
    bw = np.full(S, np.nan)
    if link:
        bw[-1] = 50.0
    # every op class its own rate, but some states' optional classes at their default class's rate
    peak = rng.uniform(1, 100, (S, len(OP_CLASSES)))
    for c, d in DEFAULT_CLASS.items():
        peak[::2, OP_CLASSES.index(c)] = peak[::2, OP_CLASSES.index(d)]
    return DeviceParams(
        device=tuple(f"d{s // 2}" for s in range(S)), freq_mhz=u(500, 2000), fmax_mhz=np.full(S, 2000.0),
        dvfs_scale=u(0.2, 1.0), static_mw=u(10, 100), dynamic_mw=u(100, 3000), peak_gflops=peak,
        mem_bandwidth_gbps=u(1, 20), layer_overhead_ms=u(0, 2), node_overhead_ms=u(0, 0.1),
        transfer_beta_ms_per_mb=u(0, 5), transfer_delta_ms=u(0, 1),
        transfer_power_mw=np.where(u(0, 1) > 0.5, np.nan, 900.0),
        link_bandwidth_mbps=bw, link_rtt_ms=np.where(np.isnan(bw), np.nan, 20.0),
        link_tx_mw=np.where(np.isnan(bw), np.nan, 800.0), link_rx_mw=np.where(np.isnan(bw), np.nan, 600.0),
        capacity_bytes=np.where(u(0, 1) > 0.5, np.inf, 4e6), base_power_mw=300.0)


@pytest.mark.parametrize("link", [False, True])
def test_stacked_tables_are_cost_tables_model_by_model(link):
    rng = np.random.default_rng(7)
    S = 6
    feats, legal = [], []
    for L in (3, 7, 5):
        v = rng.integers(0, 5, (L, len(FEATURES))).astype(np.float64) * rng.uniform(1e3, 1e7, len(FEATURES))
        feats.append(LayerFeatures(tuple(FEATURES), v))
        legal.append(rng.random((L, S)) > 0.2)
    base = _params(rng, S, link=link)
    states = StateTable.build(list(base.device), list(base.freq_mhz))
    tables = StackedTables(feats, legal, states)
    moved = dataclasses.replace(base, dynamic_mw=np.where(np.arange(S) == 1, base.dynamic_mw * 1.5, base.dynamic_mw))
    other = dataclasses.replace(base, peak_gflops=base.peak_gflops * 0.9)
    for params in (base, moved, base, other, moved):          # full, partial (one state), known, full, partial
        snap = tables.at(params)
        for i, (f, lg) in enumerate(zip(feats, legal)):
            want, got = cost_tables(f, params, lg), snap.model(i)
            for k in (*TABLES, "legal"):
                assert got[k].tobytes() == want[k].tobytes() and got[k].shape == want[k].shape, k
            for k in ("in_ms", "out_ms", "in_mj", "out_mj"):
                assert getattr(got["communication"], k).tobytes() == getattr(want["communication"], k).tobytes()
            own = PlanningProblem(**{k: want[k] for k in TABLES}, legal=want["legal"],
                                  param_bytes=np.zeros(lg.shape[0], np.int64), capacity_bytes=params.capacity_bytes,
                                  base_power_mw=params.base_power_mw, states=states)
            for first in range(lg.shape[0]):
                for last in range(first, lg.shape[0]):
                    for s in range(S):
                        got_c, want_c = snap.slice_cost(i, first, last, s), own.slice_cost(first, last, s)
                        assert _bits(got_c) == _bits(want_c)
            with pytest.raises(IndexError):
                snap.slice_cost(i, 0, lg.shape[0], 0)
    a, b = tables.at(base).column, tables.at(moved).column
    assert [s for s in range(S) if a[s] != b[s]] == [1]       # one state's numbers moved: one column renamed
