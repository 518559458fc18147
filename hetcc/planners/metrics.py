"""Metrics and the objective: what a planner minimises (or maximises) and under which limits.

A metric is a registered object, not a string compared in ``if`` chains: it says how to read its
value off a plan's summed costs, in which direction it improves and whether it needs a power
model. ``latency``, ``energy`` and ``edp`` are built in; a planner family that needs another one
(``throughput`` and ``fairness`` for several DNNs at once) registers it with ``register_metric``
and the CLI, the manifest and ``hetcc planners`` pick it up from ``METRICS`` (a workload's from
``WORKLOAD_METRICS``).

A metric has a ``scope``. A ``plan`` metric is read off one plan's latency and energy
(``value``). A ``workload`` metric (``throughput``, ``fairness``, ``overall``: FairBoost's
Table 3) exists only for several models running at once: ``value`` cannot express it, so it reads
its number off the workload's score instead (``score``: any object with ``throughput`` (T_w,
inferences/s), ``normalised``, ``jain`` and ``overall``; ``hetcc.planners.multi.scores.Score``).

Feasibility is one definition for every planner (``Objective.violations``): the deadline bounds
the plan's latency; the power cap bounds its average power (energy / latency). A workload planned
for contention is judged as a whole (``Objective.workload_violations``): the deadline bounds each
model's latency while all models run, the power cap the board's average power while they run.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

#: relative tolerance of the deadline and power-cap checks (float sums of many cells)
RTOL = 1e-9


@dataclass(frozen=True)
class Metric:
    """One quantity a planner can optimise. ``value(latency_ms, energy_mj)`` reads it off a plan;
    ``sense`` +1 = lower is better, -1 = higher is better. A ``scope="workload"`` metric reads its
    value off a workload's score with ``score`` instead (its ``value`` refuses)."""

    name: str
    unit: str
    doc: str
    value: Callable[[float, float], float]
    sense: int = 1
    needs_power: bool = True
    scope: str = "plan"
    score: Callable[[Any], float] | None = None

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise ValueError(f"metric {self.name!r}: scope must be one of {SCOPES}")
        if (self.scope == "workload") != (self.score is not None):
            raise ValueError(f"metric {self.name!r}: a workload metric reads a score, a plan metric does not")

    def key(self, latency_ms: float, energy_mj: float) -> float:
        """The number to minimise (the value, negated for a higher-is-better metric)."""
        return self.sense * self.value(latency_ms, energy_mj)

    def score_key(self, score: Any) -> float:
        """A workload metric's number to minimise, read off a workload's score."""
        if self.score is None:
            raise ValueError(f"metric {self.name!r} is read off one plan, not a workload's score")
        return self.sense * self.score(score)


#: what a metric is read off: one plan (latency, energy) or a workload of models running at once
SCOPES = ("plan", "workload")
#: the metrics of one plan (what model planners optimise)
METRICS: dict[str, Metric] = {}
#: the metrics of a workload of models running at once (what workload planners of contention optimise)
WORKLOAD_METRICS: dict[str, Metric] = {}


def register_metric(metric: Metric) -> Metric:
    """Register ``metric`` once, in ``METRICS`` or (scope workload) ``WORKLOAD_METRICS``."""
    table = WORKLOAD_METRICS if metric.scope == "workload" else METRICS
    other = METRICS if table is WORKLOAD_METRICS else WORKLOAD_METRICS
    if (metric.name in table and table[metric.name] != metric) or metric.name in other:
        raise ValueError(f"metric {metric.name!r} is registered twice")
    table[metric.name] = metric
    return metric


register_metric(Metric("latency", "ms", "end-to-end latency of one inference", lambda t, e: t,
                       needs_power=False))
register_metric(Metric("energy", "mJ", "energy of one inference, board base power included", lambda t, e: e))
register_metric(Metric("edp", "mJ·ms", "energy-delay product", lambda t, e: e * t))


def _per_plan(name: str) -> Callable[[float, float], float]:
    def value(latency_ms: float, energy_mj: float) -> float:
        raise ValueError(f"{name} is a workload metric: it scores several models running at once, not one plan")
    return value


# FairBoost's Table 3, for several models running at once (their scores come from the contention
# model, hetcc.planners.multi): higher is better
register_metric(Metric("throughput", "inf/s", "workload throughput T_w: mean inferences/s of the models running at once",
                       _per_plan("throughput"), sense=-1, needs_power=False, scope="workload",
                       score=lambda s: float(s.throughput)))
register_metric(Metric("fairness", "", "Jain's index J of each model's throughput over its own alone on the GPU",
                       _per_plan("fairness"), sense=-1, needs_power=False, scope="workload",
                       score=lambda s: float(s.jain)))
register_metric(Metric("overall", "", "overall gain O = normalised throughput x Jain's index",
                       _per_plan("overall"), sense=-1, needs_power=False, scope="workload",
                       score=lambda s: float(s.overall)))


def metric_names() -> tuple[str, ...]:
    """Every metric's name: a plan's, then a workload's."""
    return (*METRICS, *WORKLOAD_METRICS)


def get_metric(name: str) -> Metric:
    found = METRICS.get(name) or WORKLOAD_METRICS.get(name)
    if found is None:
        raise ValueError(f"unknown metric {name!r}; choose one of {', '.join(metric_names())}")
    return found


@dataclass(frozen=True)
class Violation:
    """A limit a plan breaks: which (``deadline`` / ``power_cap``), by how much, and a sentence."""

    kind: str
    limit: float
    actual: float
    message: str

    def to_json(self) -> dict:
        return {"kind": self.kind, "limit": self.limit, "actual": self.actual, "message": self.message}


@dataclass(frozen=True)
class Objective:
    """What to optimise and under which constraints (None = unconstrained).

    ``deadline_ms`` is always resolved milliseconds; ``deadline_spec`` keeps what the user wrote
    when it was relative (``medium``, ``1.3x``) so the summary and manifest can show both.
    """

    metric: str = "latency"
    deadline_ms: float | None = None
    power_cap_mw: float | None = None
    deadline_spec: str | None = None

    def __post_init__(self) -> None:
        get_metric(self.metric)

    @property
    def measure(self) -> Metric:
        return get_metric(self.metric)

    @property
    def constraints(self) -> frozenset[str]:
        """The constraints this objective sets: a subset of {'deadline', 'power_cap'}."""
        out = set()
        if self.deadline_ms is not None:
            out.add("deadline")
        if self.power_cap_mw is not None:
            out.add("power_cap")
        return frozenset(out)

    @property
    def constrained(self) -> bool:
        return bool(self.constraints)

    def value(self, latency_ms: float, energy_mj: float) -> float:
        """The metric's value (as the user reads it)."""
        return self.measure.value(latency_ms, energy_mj)

    def key(self, latency_ms: float, energy_mj: float) -> float:
        """The scalar to minimise."""
        return self.measure.key(latency_ms, energy_mj)

    def violations(self, latency_ms: float, energy_mj: float, rtol: float = RTOL) -> tuple[Violation, ...]:
        """The limits a plan of this latency and energy breaks (empty when feasible)."""
        out = []
        d = self.deadline_ms
        if d is not None and latency_ms > d * (1 + rtol):
            out.append(Violation("deadline", d, latency_ms,
                                 f"{latency_ms:.4g} ms misses the {d:.4g} ms deadline by {latency_ms - d:.4g} ms"))
        c = self.power_cap_mw
        if c is not None and energy_mj - c * latency_ms / 1000.0 > rtol * max(1.0, energy_mj):
            avg = energy_mj / latency_ms * 1000.0 if latency_ms > 0 else float("inf")
            out.append(Violation("power_cap", c, avg,
                                 f"{avg / 1e3:.4g} W average exceeds the {c / 1e3:.4g} W power cap "
                                 f"by {(avg - c) / 1e3:.4g} W"))
        return tuple(out)

    def workload_violations(self, latency_ms: Mapping[str, float | None], power_mw: float | None,
                            rtol: float = RTOL) -> tuple[str, ...]:
        """The limits a workload planned for contention breaks, as sentences: the deadline bounds
        each model's latency while all run (``latency_ms``: name -> ms), the power cap the board's
        average power while they run (``power_mw``; None: unknown, so not judged)."""
        out = []
        d = self.deadline_ms
        for name, ms in latency_ms.items():
            ms = math.inf if ms is None else ms        # a model that never completes
            if d is not None and ms > d * (1 + rtol):
                out.append(f"{name}: {ms:.4g} ms while the models run at once misses the {d:.4g} ms deadline "
                           f"by {ms - d:.4g} ms")
        c = self.power_cap_mw
        if c is not None and power_mw is not None and power_mw > c * (1 + rtol):
            out.append(f"board: {power_mw / 1e3:.4g} W average while the models run at once exceeds the "
                       f"{c / 1e3:.4g} W power cap by {(power_mw - c) / 1e3:.4g} W")
        return tuple(out)

    def feasible(self, latency_ms: float, energy_mj: float, rtol: float = RTOL) -> bool:
        return not self.violations(latency_ms, energy_mj, rtol)

    def to_json(self) -> Mapping[str, object]:
        return {"metric": self.metric, "deadline_ms": self.deadline_ms, "deadline_spec": self.deadline_spec,
                "power_cap_mw": self.power_cap_mw}


__all__ = ["METRICS", "Metric", "Objective", "SCOPES", "Violation", "get_metric", "register_metric", "RTOL",
           "WORKLOAD_METRICS", "metric_names"]
