"""Shared generators for the planner tests: small random PlanningProblems and brute force.

Test modules import these helpers as ``optimizer_cases`` (registered below): a plain
``from conftest import ...`` picks whichever conftest pytest imported last.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import strategies as st

from hetcc.planners import Objective, PlanningProblem, Slice, StateTable
from hetcc.planners.baselines import enumerate_plans

DEVICE_NAMES = ("big", "little", "gpu", "npu")


def make_problem(latency, power=None, *, legal=None, params=None, capacity=None, t_in=None, t_out=None,
                 e_in=None, e_out=None, base_power_mw=0.0, devices=None, freqs=None, fmax=None,
                 names=()) -> PlanningProblem:
    """A PlanningProblem from (nested) lists; omitted tables are zeros / all legal / unlimited."""
    lat = np.asarray(latency, dtype=np.float64)
    L, S = lat.shape
    zeros = np.zeros((L, S))

    def arr(x, default):
        return default.copy() if x is None else np.asarray(x, dtype=np.float64)

    devices = tuple(devices) if devices is not None else tuple(f"d{s}" for s in range(S))
    return PlanningProblem(
        latency_ms=lat, power_mw=arr(power, np.full((L, S), 1000.0)),
        transfer_in_ms=arr(t_in, zeros), transfer_out_ms=arr(t_out, zeros),
        transfer_in_mj=arr(e_in, zeros), transfer_out_mj=arr(e_out, zeros),
        legal=np.ones((L, S), dtype=bool) if legal is None else np.asarray(legal, dtype=bool),
        param_bytes=np.zeros(L, dtype=np.int64) if params is None else np.asarray(params, dtype=np.int64),
        capacity_bytes=np.full(S, np.inf) if capacity is None else np.asarray(capacity, dtype=np.float64),
        base_power_mw=float(base_power_mw),
        states=StateTable(device=devices, kind=("cpu",) * S,
                          freq_mhz=np.asarray(freqs if freqs is not None else [1000.0] * S, dtype=np.float64),
                          is_fmax=np.ones(S, dtype=bool) if fmax is None else np.asarray(fmax, dtype=bool)),
        layer_names=tuple(names))


@st.composite
def problems(draw, max_layers: int = 6, max_states: int = 4, structured: bool | None = None,
             allow_infeasible: bool = True) -> PlanningProblem:
    """Small random problems.

    ``structured``: states are DVFS levels of a few devices (a lower frequency is slower and draws
    less power; legality, capacity and transfers are per device), so max-frequency states are
    always fastest. Otherwise every cell is independent. Both draw random illegal cells,
    capacities, transfer costs and base power, and occasionally admit no legal plan at all.
    """
    L = draw(st.integers(1, max_layers))
    S = draw(st.integers(1, max_states))
    if structured is None:
        structured = draw(st.booleans())
    seed = draw(st.integers(0, 2**32 - 1))
    p_illegal = draw(st.sampled_from([0.0, 0.0, 0.15, 0.4]))
    cap_kind = draw(st.sampled_from(["none", "none", "some", "tight"]))
    transfers = draw(st.sampled_from(["zero", "small", "large"]))
    base = draw(st.sampled_from([0.0, 0.0, 300.0, 2000.0]))
    rng = np.random.default_rng(seed)
    if structured:
        n_dev = int(rng.integers(1, min(S, len(DEVICE_NAMES)) + 1))
        dev_of = np.sort(np.concatenate([np.arange(n_dev), rng.integers(0, n_dev, S - n_dev)]))
        devices = tuple(DEVICE_NAMES[d] for d in dev_of)
        freqs = np.empty(S)
        fmax = np.zeros(S, dtype=bool)
        for d in range(n_dev):
            cols = np.flatnonzero(dev_of == d)
            fs = np.sort(rng.choice(np.arange(200, 2400, 100), size=cols.size, replace=False))
            freqs[cols] = fs
            fmax[cols[-1]] = True
        work = rng.uniform(0.1, 10.0, size=(L, n_dev))
        dyn = rng.uniform(100.0, 3000.0, size=(L, n_dev))
        fmax_of = np.array([freqs[dev_of == d].max() for d in range(n_dev)])
        scale = fmax_of[dev_of] / freqs                          # >= 1
        lat = work[:, dev_of] * scale[None, :] + rng.uniform(0.0, 0.5, size=(L, n_dev))[:, dev_of]
        power = 50.0 + dyn[:, dev_of] / scale[None, :] ** 2
        legal = (rng.random((L, n_dev)) >= p_illegal)[:, dev_of]
        t_in = rng.uniform(0, 1, size=(L, n_dev))[:, dev_of]
        t_out = rng.uniform(0, 1, size=(L, n_dev))[:, dev_of]
        e_in = rng.uniform(0, 1, size=(L, n_dev))[:, dev_of]
        e_out = rng.uniform(0, 1, size=(L, n_dev))[:, dev_of]
    else:
        devices = tuple(DEVICE_NAMES[int(i)] for i in rng.integers(0, len(DEVICE_NAMES), S))
        freqs = rng.choice(np.arange(200, 2400, 100), size=S).astype(float)
        fmax = np.zeros(S, dtype=bool)
        for d in set(devices):
            cols = [s for s in range(S) if devices[s] == d]
            fmax[max(cols, key=lambda s: (freqs[s], -s))] = True
        lat = rng.uniform(0.1, 10.0, size=(L, S))
        power = rng.uniform(50.0, 3000.0, size=(L, S))
        legal = rng.random((L, S)) >= p_illegal
        t_in, t_out, e_in, e_out = (rng.uniform(0, 1, size=(L, S)) for _ in range(4))
    factor = {"zero": 0.0, "small": 0.3, "large": 5.0}[transfers]
    t_in, t_out, e_in, e_out = (a * factor for a in (t_in, t_out, e_in, e_out))
    params = rng.integers(0, 100, size=L)
    total = int(params.sum())
    if cap_kind == "none":
        capacity = np.full(S, np.inf)
    else:
        lo = 0.3 if cap_kind == "some" else 0.0
        n = n_dev if structured else S
        capacity = np.where(rng.random(n) < 0.5, np.inf, np.floor(rng.uniform(lo, 1.0, n) * total))
        if structured:
            capacity = capacity[dev_of]                    # one memory per device
    if allow_infeasible and draw(st.integers(0, 9)) == 0:
        legal = legal.copy()
        legal[int(rng.integers(0, L))] = False            # a layer legal nowhere
    lat = np.where(legal, lat, np.inf)                     # builders put +inf in illegal cells
    return make_problem(lat, power, legal=legal, params=params, capacity=capacity, t_in=t_in,
                        t_out=t_out, e_in=e_in, e_out=e_out, base_power_mw=base, devices=devices,
                        freqs=freqs, fmax=fmax, names=tuple(f"L{i}" for i in range(L)))


@dataclass(frozen=True)
class Brute:
    """Every legal plan of a problem with its latency and energy (exactly as evaluate sums)."""

    slices: list
    latency_ms: np.ndarray
    energy_mj: np.ndarray

    @classmethod
    def of(cls, problem: PlanningProblem) -> "Brute":
        rows = list(enumerate_plans(problem))
        return cls([r[0] for r in rows], np.array([r[1] for r in rows]), np.array([r[2] for r in rows]))

    def __len__(self) -> int:
        return len(self.slices)

    def feasible(self, objective: Objective) -> np.ndarray:
        pairs = zip(self.latency_ms, self.energy_mj)
        return np.array([objective.feasible(t, e) for t, e in pairs], dtype=bool)

    def values(self, objective: Objective) -> np.ndarray:
        return np.array([objective.key(t, e) for t, e in zip(self.latency_ms, self.energy_mj)])

    def best(self, objective: Objective, states_ok=None) -> float | None:
        """The optimum value (None when no plan is feasible); ``states_ok(slices)`` filters plans."""
        ok = self.feasible(objective)
        if states_ok is not None:
            ok &= np.array([states_ok(s) for s in self.slices], dtype=bool)
        if not ok.any():
            return None
        return float(self.values(objective)[ok].min())


def uses_only(states) -> callable:
    allowed = set(int(s) for s in states)
    return lambda slices: all(sl.state in allowed for sl in slices)


def close(a: float, b: float, rel: float = 1e-9) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


@pytest.fixture
def chain3() -> PlanningProblem:
    """Three layers on two devices: device 1 is faster but its transfers cost 2 ms each way."""
    return make_problem([[4.0, 1.0], [4.0, 1.0], [4.0, 1.0]], t_in=[[0, 2]] * 3, t_out=[[0, 2]] * 3,
                        devices=("big", "gpu"))


__all__ = ["Brute", "Slice", "close", "make_problem", "problems", "uses_only"]

sys.modules["planner_cases"] = sys.modules[__name__]
