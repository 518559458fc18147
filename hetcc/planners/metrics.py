"""Metrics and the objective: what a planner minimises (or maximises) and under which limits.

A metric is a registered object, not a string compared in ``if`` chains: it says how to read its
value off a plan's summed costs, in which direction it improves and whether it needs a power
model. ``latency``, ``energy`` and ``edp`` are built in; a planner family that needs another one
(``throughput`` and ``fairness`` for several DNNs at once) registers it with ``register_metric``
and the CLI, the manifest and ``hetcc planners`` pick it up from ``METRICS``.

Feasibility is one definition for every planner (``Objective.violations``): the deadline bounds
the plan's latency; the power cap bounds its average power (energy / latency).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

#: relative tolerance of the deadline and power-cap checks (float sums of many cells)
RTOL = 1e-9


@dataclass(frozen=True)
class Metric:
    """One quantity a planner can optimise. ``value(latency_ms, energy_mj)`` reads it off a plan;
    ``sense`` +1 = lower is better, -1 = higher is better."""

    name: str
    unit: str
    doc: str
    value: Callable[[float, float], float]
    sense: int = 1
    needs_power: bool = True

    def key(self, latency_ms: float, energy_mj: float) -> float:
        """The number to minimise (the value, negated for a higher-is-better metric)."""
        return self.sense * self.value(latency_ms, energy_mj)


METRICS: dict[str, Metric] = {}


def register_metric(metric: Metric) -> Metric:
    if metric.name in METRICS and METRICS[metric.name] != metric:
        raise ValueError(f"metric {metric.name!r} is registered twice")
    METRICS[metric.name] = metric
    return metric


register_metric(Metric("latency", "ms", "end-to-end latency of one inference", lambda t, e: t,
                       needs_power=False))
register_metric(Metric("energy", "mJ", "energy of one inference, board base power included", lambda t, e: e))
register_metric(Metric("edp", "mJ·ms", "energy-delay product", lambda t, e: e * t))


def get_metric(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise ValueError(f"unknown metric {name!r}; choose one of {', '.join(METRICS)}") from None


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
        return METRICS[self.metric]

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

    def feasible(self, latency_ms: float, energy_mj: float, rtol: float = RTOL) -> bool:
        return not self.violations(latency_ms, energy_mj, rtol)

    def to_json(self) -> Mapping[str, object]:
        return {"metric": self.metric, "deadline_ms": self.deadline_ms, "deadline_spec": self.deadline_spec,
                "power_cap_mw": self.power_cap_mw}


__all__ = ["METRICS", "Metric", "Objective", "Violation", "get_metric", "register_metric", "RTOL"]
