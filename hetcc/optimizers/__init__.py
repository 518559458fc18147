"""Planners: functions ``(problem, **options) -> Plan`` registered by name.

A planner sees a PlanningProblem (numbers only, never ONNX) and proposes slices; this module
resolves a planner name (``auto``, ``dp``, ``exact``, ``single:<device>``, ...), checks its
options, times it and records the name, options and seconds in the returned Plan.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import logging
import time
from typing import Callable

from ..errors import UsageError
from .problem import Objective, Plan, PlanningProblem, Slice

logger = logging.getLogger(__name__)

Planner = Callable[..., Plan]

PLANNERS: dict[str, Planner] = {}

#: ``single:<device>`` runs the MOSAIC device-preferred baseline on ``<device>``.
SINGLE_PREFIX = "single:"
#: ``even:<N>`` cuts the model into N equal-latency slices on one device (measures cutting).
EVEN_PREFIX = "even:"


def register(name: str) -> Callable[[Planner], Planner]:
    """Decorator: make ``fn(problem, **options) -> Plan`` available as planner ``name``."""

    def deco(fn: Planner) -> Planner:
        if name in PLANNERS and PLANNERS[name] is not fn:
            raise ValueError(f"planner {name!r} is registered twice")
        PLANNERS[name] = fn
        return fn

    return deco


def planner_names() -> tuple[str, ...]:
    """Every name ``plan`` accepts (``single:<device>`` stands for one per device)."""
    return ("auto", *sorted(PLANNERS), f"{SINGLE_PREFIX}<device>", f"{EVEN_PREFIX}<N>")


def resolve(problem: PlanningProblem, name: str) -> str:
    """The concrete planner ``auto`` stands for on ``problem`` (other names unchanged).

    ``auto`` is ``exact`` when the objective is not a plain additive metric (a deadline, a power
    cap or edp) and MOSAIC's ``dp`` otherwise.
    """
    if name != "auto":
        return name
    obj = problem.objective
    return "exact" if obj.constrained or obj.metric == "edp" else "dp"


def get_planner(name: str) -> Planner:
    """The planner function registered as ``name``; ``single:<device>`` is bound to its device."""
    if name.startswith(SINGLE_PREFIX):
        device = name[len(SINGLE_PREFIX):]
        if not device:
            raise UsageError(f"planner {name!r} names no device; use single:<device>, e.g. single:gpu")
        from .baselines import single_device

        return functools.partial(single_device, device=device)
    if name.startswith(EVEN_PREFIX):
        count = name[len(EVEN_PREFIX):]
        if not count.isdigit() or int(count) < 1:
            raise UsageError(f"planner {name!r}: use even:<N> with N >= 1 slices, e.g. even:4")
        from .fixed import even_split

        return functools.partial(even_split, slices=int(count))
    try:
        return PLANNERS[name]
    except KeyError:
        raise UsageError(f"unknown planner {name!r}; choose one of {', '.join(planner_names())}") from None


def _check_options(name: str, fn: Planner, problem: PlanningProblem, options: dict) -> None:
    try:
        inspect.signature(fn).bind(problem, **options)
    except TypeError:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind is p.KEYWORD_ONLY
                  or (p.kind is p.POSITIONAL_OR_KEYWORD and p.default is not p.empty)]
        params = [p for p in params if p not in ("device", "slices")]
        valid = ", ".join(params) if params else "none"
        raise UsageError(f"planner {name!r} does not take option(s) {', '.join(sorted(options))}; "
                         f"its options: {valid}") from None


def plan(problem: PlanningProblem, planner: str = "auto", **options) -> Plan:
    """Run ``planner`` on ``problem`` and return its Plan, stamped with name, options and seconds."""
    name = resolve(problem, planner)
    fn = get_planner(name)
    _check_options(name, fn, problem, options)
    logger.debug("planning %d layers x %d states with %s", problem.num_layers, problem.num_states, name)
    t0 = time.perf_counter()
    result = fn(problem, **options)
    seconds = time.perf_counter() - t0
    logger.debug("%s: %.3f ms latency, %.3f mJ in %.1f ms", name, result.latency_ms, result.energy_mj,
                 seconds * 1e3)
    return dataclasses.replace(result, planner=name, options=dict(options), seconds=seconds)


# Importing the planner modules registers them (they use ``register`` defined above).
from . import baselines, dp, exact  # noqa: E402,F401

__all__ = ["PLANNERS", "Objective", "Plan", "PlanningProblem", "Slice", "get_planner", "plan",
           "planner_names", "register", "resolve"]
