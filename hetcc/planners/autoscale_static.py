"""``autoscale-static``: AutoScale as HERTI evaluates it, the whole model on one device at one DVFS level.

AutoScale (Kim and Wu, MICRO'20) picks, per inference, an execution target and its DVFS setting
that meet the deadline at the least energy, learning the choice with reinforcement learning.
HERTI (Sec. V-A) compares against it as "finding a single device and its DVFS setting and
executing the entire inference workload (i.e., no model slicing) on the device". This planner is
that choice made statically with the cost model instead of learnt: for every device state s it
builds the device-preferred plan of ``single`` with the preferred device at state s (one slice,
unless memory forces more; layers the device cannot run fall back as in ``single``), and returns
the candidate with the least objective value among those meeting the deadline; when none meets
it, the fastest (the feasibility policy then reports the miss). Ties go to the first state.

``plan.stats``: ``state`` (the chosen state's label), ``candidates`` (states tried) and
``meeting_deadline`` (how many of them met the deadline; all of them without one). A power cap is
left to the feasibility policy, as for every planner that does not list it.
"""
from __future__ import annotations

from hetcc.core.errors import InfeasibleError
from .baselines import device_preferred
from .context import PlanContext
from .metrics import Objective
from .problem import Plan, PlanningProblem
from .registry import PlannerSpec


def meets_deadline(objective: Objective, plan: Plan) -> bool:
    """``plan`` keeps the objective's deadline (always, without one); the policy's tolerance."""
    return not any(v.kind == "deadline" for v in objective.violations(plan.latency_ms, plan.energy_mj))


def autoscale_static(problem: PlanningProblem, objective: Objective, ctx: PlanContext | None = None) -> Plan:
    """See the module docstring."""
    candidates: list[tuple[int, Plan]] = []
    error = None
    for s in range(problem.num_states):
        try:
            candidates.append((s, device_preferred(problem, s)))
        except InfeasibleError as exc:   # a layer no state at f_max can run: no candidate can
            error = exc
    if not candidates:
        raise error
    meeting = [c for c in candidates if meets_deadline(objective, c[1])]
    if meeting:
        state, best = min(meeting, key=lambda c: objective.key(c[1].latency_ms, c[1].energy_mj))
    else:
        state, best = min(candidates, key=lambda c: c[1].latency_ms)
    return best.replace(stats={"state": problem.states.label(state), "candidates": len(candidates),
                               "meeting_deadline": len(meeting)})


SPECS = (PlannerSpec("autoscale-static", "AutoScale as HERTI compares it: the whole model on the one device "
                     "state that meets the deadline at the best objective (else the fastest)",
                     autoscale_static, constraints=("deadline",)),)
