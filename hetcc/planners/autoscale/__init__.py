"""``autoscale``: AutoScale's actions as variants (a planner of kind ``policy``; numbers only).

AutoScale (Kim and Wu, MICRO'20) picks, before each inference, one execution target: the whole
model on one processor at one V/F step and one precision, or offloaded to a connected edge device
or the cloud (AutoScale Sec. 4.2, 5.3), learning the choice with Q-learning at run time. This
planner produces the candidates it chooses among: one whole-model plan per column of the problem
it is given. The compile side (``hetcc.compiler.autoscale``) builds that problem with one column
per AutoScale action (device state x precision, the precision's latency factor applied, the
legality judged at the precision); given an ordinary analysis problem, the columns are its device
states and the plans the FP32 actions on every state that can run the whole model.

It returns a ``PolicyPlan``: every action's plan (each stamped feasible or not against the
objective's limits: a run-time policy may still choose one that misses the QoS target) and the
default variant, the one the runtime runs without a policy: the best objective value among the
plans meeting the deadline, else the fastest. The feasibility policy does not refuse a policy.

``whole_model_cost`` is the one definition of an action's numbers: its compute time with the link
excluded (``compute_ms``) and the device's power while it computes (``busy_power_mw``), as the
``hetcc.autoscale/1`` policy file records them.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

from hetcc.core.errors import InfeasibleError
from ..context import PlanContext
from ..metrics import Objective
from ..problem import Plan, PlanningProblem, Slice
from ..registry import PlannerSpec


@dataclass(frozen=True)
class AutoScaleOptions:
    actions: str | None = field(default=None, metadata={
        "doc": "the actions to keep, comma-separated names (cpu@2803:fp32,gpu@710:fp16,dsp:int8,edge; "
               "default: every action the target offers)"})
    qtable: str | None = field(default=None, metadata={
        "doc": "a trained hetcc.qtable/1 file (hetcc train autoscale) the policy ships (default: an "
               "untrained table)"})

    def validate(self) -> str | None:
        if self.actions is not None and not [a for a in self.actions.split(",") if a.strip()]:
            return f"option actions={self.actions!r} names no action; give names separated by commas"
        if self.qtable is not None and not self.qtable.strip():
            return "option qtable names no file"
        return None


@dataclass(frozen=True)
class PolicyPlan:
    """What a planner of kind ``policy`` returns: one plan per action (the problem's columns, in
    order; None where the whole model cannot run there) and the index of the default one."""

    plans: tuple[Plan | None, ...]
    default: int
    planner: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    stats: Mapping[str, Any] = field(default_factory=dict)
    objective: Any = None
    feasible: bool = True
    violations: tuple[str, ...] = ()

    @property
    def plan(self) -> Plan:
        """The default action's plan."""
        p = self.plans[self.default]
        assert p is not None
        return p

    def replace(self, **changes: Any) -> "PolicyPlan":
        return dataclasses.replace(self, **changes)


def whole_model_cost(problem: PlanningProblem, state: int, remote: bool = False) -> tuple[float, float]:
    """(compute_ms, busy_power_mw) of the whole model as one slice on ``state``: its latency and
    the device's average power over it, base power excluded; for a ``remote`` state the link's
    share (``problem.communication``) is taken out of both (AutoScale Eq. 4 charges the radio
    separately, at the signal strength seen at run time)."""
    L = problem.num_layers
    cost = problem.slice_cost(0, L - 1, state)
    t = cost.latency_ms
    e = cost.energy_mj - problem.base_power_mw * t / 1000.0
    comm = problem.communication
    if remote and comm is not None:
        t -= float(comm.in_ms[0, state] + comm.out_ms[L - 1, state])
        e -= float(comm.in_mj[0, state] + comm.out_mj[L - 1, state])
    t = max(t, 0.0)
    return t, (max(e, 0.0) / t * 1000.0 if t > 0 else 0.0)


def plan_autoscale(problem: PlanningProblem, objective: Objective, ctx: PlanContext | None = None) -> PolicyPlan:
    """See the module docstring."""
    L = problem.num_layers
    plans: list[Plan | None] = []
    for s in range(problem.num_states):
        if not problem.slice_legal(0, L - 1, s):
            plans.append(None)
            continue
        p = problem.evaluate([Slice(0, L - 1, s)], objective=objective)
        found = tuple(v.message for v in objective.violations(p.latency_ms, p.energy_mj))
        plans.append(p.replace(feasible=not found, violations=found,
                               stats={"action": s, "state": problem.states.label(s)}))
    usable = [i for i, p in enumerate(plans) if p is not None]
    if not usable:
        raise InfeasibleError(f"autoscale: no device state runs the whole of {problem.name} (every action "
                              "needs one that does: hetcc inspect --why shows why each is refused)")
    meeting = [i for i in usable if plans[i].feasible]   # type: ignore[union-attr]
    if meeting:
        best = min(meeting, key=lambda i: (objective.key(plans[i].latency_ms, plans[i].energy_mj), i))  # type: ignore[union-attr]
    else:
        best = min(usable, key=lambda i: (plans[i].latency_ms, i))   # type: ignore[union-attr]
    return PolicyPlan(plans=tuple(plans), default=best,
                      stats={"actions": len(usable), "meeting_deadline": len(meeting),
                             "default": problem.states.label(best)})


SPECS = (PlannerSpec("autoscale", "AutoScale: one whole-model variant per action (device state x precision, or "
                     "offload) and a Q-learning policy that picks one per inference at run time",
                     plan_autoscale, AutoScaleOptions, metrics=("energy", "latency", "edp"),
                     constraints=("deadline", "power_cap"), kind="policy"),)

__all__ = ["AutoScaleOptions", "PolicyPlan", "SPECS", "plan_autoscale", "whole_model_cost"]
