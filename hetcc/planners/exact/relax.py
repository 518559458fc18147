"""Relaxations: the same problem with a limit dropped, solved before the search when cheaper.

A plan that is optimal with a limit dropped and meets that limit anyway is optimal with it; when
it misses, its value is still a lower bound. The planner (``exact._try_relaxed``) solves the model
``without(m, droppable(m, h))`` first where the plans' hull says the dropped limits are most likely
idle at the optimum:

* energy under both limits, when the slowest hull vertex within the deadline meets the cap: the
  hull's edge from there to the next vertex (slower, leaner: lower average power) holds the
  deadline-alone relaxation's LP optimum. Solving the deadline alone keeps labels Pareto in
  (T, E) instead of (T, E - cap * T): vit_tiny at --max-cut-tensors 2, 224 layers, 868 k labels
  -> 84 k (2.0 -> 0.24 s);
* edp under any limit, when the least-edp vertex of the opening pass (the hull's first vertices)
  meets them: edp without limits is mostly solved by the hull alone (``incumbent``) and its
  optimum lies at a hull vertex; it is tried before this problem's hull rounds, sharing the
  opening pass. vit_b_16 at --max-cut-tensors 2 under a cap (284 layers): the unconstrained
  optimum draws 2.24 W under a 2.32 W cap, and the search under the cap kept 4.9 M labels (8.5 s)
  on a root bound 9 % low.

And one model for feasibility: ``fastest_within_cap(m)``, latency under the cap alone. Under both
limits its optimum is feasible iff any plan is (every other plan within the cap is slower).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .model import Model
from .pareto import INF


def droppable(m: Model, h) -> tuple[str, ...]:
    """The limits of ``m`` ("deadline", "power cap") to drop first, () for none; ``h`` has the
    vertices' T and E (a ``Hull``, or the ``opening`` pass for edp)."""
    limits = ("deadline",) * bool(np.isfinite(m.deadline)) + ("power cap",) * m.has_cap
    if m.metric == "edp" and limits:
        j = int(np.argmin([m.value(t, e) for t, e in zip(h.T, h.E)]))
        return limits if m.feasible(h.T[j], h.E[j]) else ()
    if m.metric != "energy" or len(limits) < 2:
        return ()
    within = [(t, e) for t, e in zip(h.T, h.E) if t <= m.Dtol]
    return ("power cap",) if within and m.feasible(*max(within)) else ()


def without(m: Model, drop: tuple[str, ...]) -> Model:
    """``m`` without the limits ``drop``."""
    if "power cap" in drop:
        m = dataclasses.replace(m, has_cap=False, c=0.0, tolX=INF, cX=m.cE, X3=m.E3)
    if "deadline" in drop:
        m = dataclasses.replace(m, deadline=INF, Dtol=INF)
    return m


def fastest_within_cap(m: Model) -> Model:
    """Latency under ``m``'s cap alone."""
    return dataclasses.replace(m, metric="latency", deadline=INF, Dtol=INF)


__all__ = ["droppable", "fastest_within_cap", "without"]
