"""Baselines: MOSAIC's device-preferred plans (``single:<device>``) and brute force (``brute``).

``single:<device>`` is the TF-*-P baseline of MOSAIC (PACT'19, Sec. VI-A): every device runs at
its maximum frequency; each slice holds as many consecutive layers as the preferred device can
take; a layer that would overflow the slice's memory starts the next slice on the preferred
device; a layer the preferred device cannot run at all (unsupported, or too large on its own)
runs alone in a separate slice on the NPU if it can, else the GPU, else the big cluster, else
(our addition, for boards without those names) the first state at maximum frequency that can.
With ``governor=ondemand`` it is HERTI's TFL-*-O instead: the same plan under the on-demand
governor model of ``governor.py`` (the device starts at its lowest frequency and jumps to the
maximum at the governor's first sample). ``device_preferred`` builds the plan for any one state
of the preferred device (``autoscale-static`` tries them all).

``brute`` enumerates every plan; the tests use it as the ground truth on small problems.
"""
from __future__ import annotations

import logging
import math
from typing import Iterator, Literal

import numpy as np

from dataclasses import dataclass, field

from hetcc.core.errors import InfeasibleError, UsageError
from .governor import GOVERNORS, ondemand
from .metrics import Objective
from .problem import Plan, PlanningProblem, Slice
from .registry import PlannerSpec

logger = logging.getLogger(__name__)

#: MOSAIC's fallback path for a layer the preferred device cannot run.
FALLBACK_DEVICES = ("npu", "gpu", "big")


@dataclass(frozen=True)
class SingleOptions:
    device: str = field(default="", metadata={"doc": "the preferred device (single:<device>)"})
    governor: Literal["performance", "ondemand"] = field(default="performance", metadata={
        "doc": "performance: the device at f_max (HERTI's TFL-*-P); ondemand: it starts at its lowest "
               "frequency and jumps to f_max at the first sample (TFL-*-O; model in hetcc.planners.governor)"})
    sampling_ms: float = field(default=0.0, metadata={
        "doc": "ondemand's sampling period in ms; 0 = 20 for a CPU (cpufreq ondemand), 50 for a GPU or "
               "other device (devfreq simple_ondemand polling)"})

    def validate(self) -> str | None:
        if not (math.isfinite(self.sampling_ms) and self.sampling_ms >= 0):
            return f"sampling_ms must be a finite number >= 0 (0 = the device's default), not {self.sampling_ms}"
        if self.sampling_ms and self.governor != "ondemand":
            return "sampling_ms applies to governor=ondemand only"
        return None


def device_preferred(problem: PlanningProblem, preferred: int) -> Plan:
    """MOSAIC's plan preferring device state ``preferred``; see the module docstring."""
    fmax_state = problem.states.fmax_state
    fallbacks = [s for s in (fmax_state(d) for d in FALLBACK_DEVICES) if s is not None]
    fallbacks += [s for s in range(problem.num_states)
                  if bool(problem.states.is_fmax[s]) and s not in fallbacks]
    # ``slice_legal`` read from the problem's arrays once (its per-call numpy work made this O(L)
    # loop the planner's whole cost): the capacity test on the int64 prefix sums is exact, as
    # slice_bytes; every layer of the open slice is legal on ``preferred``, so extending it only
    # needs that test
    legal = np.asarray(problem.legal, dtype=bool)
    prefix = problem.memory_prefix()
    cap = problem.capacity_bytes

    def fits(a: int, b: int, s: int) -> bool:
        return float(prefix[b + 1, s] - prefix[a, s]) <= float(cap[s])

    slices: list[Slice] = []
    first = None          # first layer of the open preferred slice
    for i in range(problem.num_layers):
        if legal[i, preferred] and fits(i, i, preferred):
            if first is not None and not fits(first, i, preferred):
                slices.append(Slice(first, i - 1, preferred))   # memory full: next slice
                first = None
            if first is None:
                first = i
            continue
        if first is not None:
            slices.append(Slice(first, i - 1, preferred))
            first = None
        for s in fallbacks:
            if legal[i, s] and fits(i, i, s):
                slices.append(Slice(i, i, s))
                break
        else:
            raise InfeasibleError(f"{problem.layer_label(i)} is legal on no device at its maximum "
                                  "frequency; no plan can run it")
    if first is not None:
        slices.append(Slice(first, problem.num_layers - 1, preferred))
    return problem.evaluate(slices)


def single_device(problem: PlanningProblem, device: str, governor: str = "performance",
                  sampling_ms: float = 0.0) -> Plan:
    """MOSAIC's ``device``-preferred plan at f_max, or under the ondemand governor model."""
    preferred = problem.states.fmax_state(device)
    if preferred is None:
        raise UsageError(f"unknown device {device!r} for planner single:{device}; "
                         f"the target has {', '.join(problem.devices)}")
    if governor not in GOVERNORS:
        raise UsageError(f"unknown governor {governor!r}; choose one of {', '.join(GOVERNORS)}")
    plan = device_preferred(problem, preferred)
    return ondemand(problem, plan, device, sampling_ms) if governor == "ondemand" else plan


def count_plans(num_layers: int, num_states: int) -> int:
    """Plans without legality: S * (S + 1)^(L - 1) (each gap between layers is a cut or not)."""
    if num_layers == 0:
        return 0
    return num_states * (num_states + 1) ** (num_layers - 1)


def enumerate_plans(problem: PlanningProblem) -> Iterator[tuple[tuple[Slice, ...], float, float]]:
    """Every legal plan as (slices, latency_ms, energy_mj), summed in slice order like evaluate."""
    L, S = problem.num_layers, problem.num_states
    costs: dict[tuple[int, int], list[tuple[int, float, float]]] = {}
    for a in range(L):
        for b in range(a, L):
            row = []
            for s in range(S):
                if problem.slice_legal(a, b, s):
                    c = problem.slice_cost(a, b, s)
                    row.append((s, c.latency_ms, c.energy_mj))
            costs[a, b] = row

    def rec(a: int, prefix: tuple[Slice, ...], t: float, e: float):
        if a == L:
            yield prefix, t, e
            return
        for b in range(a, L):
            for s, ct, ce in costs[a, b]:
                yield from rec(b + 1, prefix + (Slice(a, b, s),), t + ct, e + ce)

    yield from rec(0, (), 0, 0)


@dataclass(frozen=True)
class BruteOptions:
    max_plans: int = field(default=200_000, metadata={"doc": "refuse problems with more plans than this"})


def brute(problem: PlanningProblem, objective: Objective, max_plans: int = 200_000) -> Plan:
    """The optimum by exhaustive enumeration (ties: first in enumeration order)."""
    n = count_plans(problem.num_layers, problem.num_states)
    if n > max_plans:
        raise UsageError(f"brute force would enumerate {n} plans ({problem.num_layers} layers x "
                         f"{problem.num_states} states), more than max_plans={max_plans}; "
                         "use --planner exact")
    obj = objective
    best, best_v, any_legal = None, np.inf, False
    for slices, t, e in enumerate_plans(problem):
        any_legal = True
        if obj.feasible(t, e):
            v = obj.key(t, e)
            if v < best_v:
                best, best_v = slices, v
    if best is None:
        if not any_legal:
            raise InfeasibleError("no legal plan: some layer is legal on no device")
        raise InfeasibleError("no plan meets the deadline / power cap")
    return problem.evaluate(best)


SPECS = (
    PlannerSpec("single", "MOSAIC's device-preferred baseline (TF-*-P): longest legal slices on the device at "
                "f_max, else NPU, GPU, big; governor=ondemand: HERTI's TFL-*-O",
                lambda p, o, ctx: single_device(p, ctx.options.device, ctx.options.governor,
                                                ctx.options.sampling_ms),
                SingleOptions, positional="device"),
    PlannerSpec("brute", "every plan enumerated (the ground truth of the tests; small problems only)",
                lambda p, o, ctx: brute(p, o, ctx.options.max_plans), BruteOptions,
                constraints=("deadline", "power_cap"), exact=True),
)
