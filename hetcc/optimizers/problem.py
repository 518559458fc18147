"""PlanningProblem (numbers only) and Plan: the contract between the partition pass and planners.

A planner never sees ONNX: it gets L layers x S device states as numpy arrays and returns a
list of slices (first layer, last layer, state). The cost of a slice of layers a..b on state s is

    latency = transfer_in_ms[a, s] + sum(latency_ms[a..b, s]) + transfer_out_ms[b, s]
    energy  = transfer_in_mj[a, s] + sum(latency_ms * power_mw / 1000)[a..b, s]
              + transfer_out_mj[b, s] + base_power_mw * latency / 1000

and it is legal when every layer in a..b is legal on s and sum(param_bytes[a..b]) <=
capacity_bytes[s]. A plan's latency and energy are the sums over its slices (slices run one
after another). Units: ms, mW, mJ, bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

METRICS = ("latency", "energy", "edp")


@dataclass(frozen=True)
class Objective:
    """What to minimise and under which constraints (None = unconstrained)."""

    metric: str = "latency"
    deadline_ms: float | None = None
    power_cap_mw: float | None = None

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise ValueError(f"unknown metric {self.metric!r}; choose one of {', '.join(METRICS)}")

    @property
    def constrained(self) -> bool:
        return self.deadline_ms is not None or self.power_cap_mw is not None

    def value(self, latency_ms: float, energy_mj: float) -> float:
        """The scalar being minimised."""
        if self.metric == "latency":
            return latency_ms
        if self.metric == "energy":
            return energy_mj
        return energy_mj * latency_ms

    def feasible(self, latency_ms: float, energy_mj: float, rtol: float = 1e-9) -> bool:
        """Deadline met and average power (energy / latency) within the cap."""
        if self.deadline_ms is not None and latency_ms > self.deadline_ms * (1 + rtol):
            return False
        if self.power_cap_mw is not None and energy_mj - self.power_cap_mw * latency_ms / 1000.0 > rtol * max(1.0, energy_mj):
            return False
        return True


@dataclass(frozen=True)
class Slice:
    """Layers first..last (inclusive, 0-based) run on device state ``state``."""

    first: int
    last: int
    state: int


@dataclass(frozen=True)
class Cost:
    latency_ms: float
    energy_mj: float
    transfer_ms: float = 0.0

    @property
    def edp_mj_ms(self) -> float:
        return self.energy_mj * self.latency_ms


@dataclass(frozen=True)
class Plan:
    """A planner's proposal: consecutive slices covering every layer, plus its evaluated cost."""

    slices: tuple[Slice, ...]
    latency_ms: float
    energy_mj: float
    planner: str = ""
    options: dict = field(default_factory=dict)
    seconds: float = 0.0
    slice_costs: tuple[Cost, ...] = ()

    @property
    def edp_mj_ms(self) -> float:
        return self.energy_mj * self.latency_ms


@dataclass(frozen=True)
class PlanningProblem:
    """L layers x S states of costs; see the module docstring for the slice cost formula.

    Illegal cells may hold any value in the cost arrays (builders put +inf); ``legal`` decides.
    ``state_device[s]`` / ``state_freq_mhz[s]`` name each state; ``state_is_fmax[s]`` marks a
    device's highest frequency (MOSAIC's latency planner uses only those states).
    """

    latency_ms: np.ndarray          # [L, S] float64
    power_mw: np.ndarray            # [L, S] float64
    transfer_in_ms: np.ndarray      # [L, S]: cost to bring layer l's inputs onto state s
    transfer_out_ms: np.ndarray     # [L, S]: cost to take layer l's outputs off state s
    transfer_in_mj: np.ndarray      # [L, S]
    transfer_out_mj: np.ndarray     # [L, S]
    legal: np.ndarray               # [L, S] bool
    param_bytes: np.ndarray         # [L] int64
    capacity_bytes: np.ndarray      # [S] float64, +inf = unlimited
    base_power_mw: float
    objective: Objective
    state_device: tuple[str, ...]
    state_freq_mhz: tuple[float, ...]
    state_is_fmax: np.ndarray       # [S] bool
    layer_names: tuple[str, ...] = ()

    @property
    def num_layers(self) -> int:
        return int(self.latency_ms.shape[0])

    @property
    def num_states(self) -> int:
        return int(self.latency_ms.shape[1])

    @property
    def devices(self) -> tuple[str, ...]:
        """Distinct device names in state order."""
        return tuple(dict.fromkeys(self.state_device))

    def with_objective(self, objective: Objective) -> "PlanningProblem":
        import dataclasses

        return dataclasses.replace(self, objective=objective)

    # ---- evaluation (the one definition every planner and test uses) ----
    def slice_legal(self, first: int, last: int, state: int) -> bool:
        if not bool(np.all(self.legal[first:last + 1, state])):
            return False
        return float(self.param_bytes[first:last + 1].sum()) <= float(self.capacity_bytes[state])

    def slice_cost(self, first: int, last: int, state: int) -> Cost:
        """Latency and energy of one slice (does not check legality)."""
        lat = self.latency_ms[first:last + 1, state]
        pw = self.power_mw[first:last + 1, state]
        t_in = float(self.transfer_in_ms[first, state])
        t_out = float(self.transfer_out_ms[last, state])
        latency = t_in + float(lat.sum()) + t_out
        energy = (float(self.transfer_in_mj[first, state]) + float((lat * pw).sum()) / 1000.0
                  + float(self.transfer_out_mj[last, state]) + self.base_power_mw * latency / 1000.0)
        return Cost(latency_ms=latency, energy_mj=energy, transfer_ms=t_in + t_out)

    def check_slices(self, slices: Sequence[Slice]) -> None:
        """Raise ValueError unless ``slices`` cover 0..L-1 consecutively with legal slices."""
        expect = 0
        for sl in slices:
            if sl.first != expect or sl.last < sl.first or not 0 <= sl.state < self.num_states:
                raise ValueError(f"slices do not cover the layers consecutively at {sl}")
            if not self.slice_legal(sl.first, sl.last, sl.state):
                raise ValueError(f"slice {sl} is illegal")
            expect = sl.last + 1
        if expect != self.num_layers:
            raise ValueError(f"slices end at layer {expect - 1}, model has {self.num_layers}")

    def evaluate(self, slices: Sequence[Slice], planner: str = "", options: dict | None = None,
                 seconds: float = 0.0) -> Plan:
        """Check ``slices`` and return the Plan with its summed cost."""
        slices = tuple(slices)
        self.check_slices(slices)
        costs = tuple(self.slice_cost(s.first, s.last, s.state) for s in slices)
        return Plan(slices=slices,
                    latency_ms=sum(c.latency_ms for c in costs),
                    energy_mj=sum(c.energy_mj for c in costs),
                    planner=planner, options=dict(options or {}), seconds=seconds,
                    slice_costs=costs)

