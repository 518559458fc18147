"""MOSAIC's ablations (PACT'19, Sec. VI-D, Fig. 10/11): ``hca`` and ``hcca``, built on ``dp``.

MOSAIC isolates what each of its components buys by planning without it:

* ``hca`` (heterogeneity- and constraint-aware, communication-oblivious): MOSAIC's DP on the
  problem with its communication costs set to zero (below), so moving tensors between devices
  looks free; the plan is then priced on the real problem, so its latency and energy include
  the communication it ignored. Latency: the devices at maximum frequency (Eq. 6);
  energy: every state (Eq. 7), or the maximum frequency only with ``dvfs=false``.
* ``hcca`` (heterogeneity-, constraint- and communication-aware, DVFS-oblivious): MOSAIC's DP
  over the devices at their maximum frequency only (Eq. 6's state set) for energy as well;
  for latency that is ``dp`` itself.

The gap hca - dp is what communication-aware slicing buys, hcca - dp (energy) what DVFS buys.
Fig. 11 chains HCA -> HCCA -> MOSAIC, adding one component per step; its HCA is therefore
DVFS-oblivious too: ``--planner hca --planner-option dvfs=false`` is that version.

"Communication" is MOSAIC's: the transfer of Eq. 1-2 (C = beta * MB + delta) and a remote
device's link, the problem's ``communication`` share of what a slice pays at its ends
(``problem.py``). The rest of that (the device's per-slice overhead, the boundary activations'
memory time) is the cost of running a slice at all, which MOSAIC's per-layer measurements include
and its HCA therefore sees: it is kept. A problem without that split (measured costs, a
``costs.json``) has all of it zeroed. A non-finite transfer cell marks a slice that cannot start
or end there and is kept. No copy of the DP: both planners run ``dp.optimal`` on a derived
PlanningProblem and re-evaluate its slices on the real one. Deadline and power cap are left to the feasibility
policy, as for ``dp``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .context import PlanContext
from .dp import optimal
from .metrics import Objective
from .problem import Plan, PlanningProblem, Slice
from .registry import PlannerSpec

_TRANSFERS = ("transfer_in_ms", "transfer_out_ms", "transfer_in_mj", "transfer_out_mj")


def without_transfers(problem: PlanningProblem) -> PlanningProblem:
    """``problem`` without its communication: each finite transfer cost (ms and mJ, in and out)
    less its ``communication`` share, or zero when the problem has no such split."""
    comm = problem.communication
    shares = (None,) * 4 if comm is None else (comm.in_ms, comm.out_ms, comm.in_mj, comm.out_mj)
    zeroed = {}
    for key, share in zip(_TRANSFERS, shares):
        a = getattr(problem, key)
        rest = 0.0 if share is None else np.maximum(a - share, 0.0)
        zeroed[key] = np.where(np.isfinite(a), rest, a)
    return problem.replace(**zeroed, communication=None)


def at_fmax(problem: PlanningProblem) -> PlanningProblem:
    """``problem`` with every state below its device's maximum frequency made illegal."""
    return problem.replace(legal=np.asarray(problem.legal, dtype=bool) & problem.states.is_fmax[None, :])


def merge_runs(problem: PlanningProblem, slices: tuple[Slice, ...]) -> list[Slice]:
    """Consecutive slices on the same state joined where the joined slice is legal (capacity).

    Without transfers the DP is indifferent between one slice and several on the same state
    (rounding picks among them); a communication-oblivious plan still runs consecutive layers of
    one device as one slice, which this makes canonical."""
    out: list[Slice] = []
    for sl in slices:
        if out and out[-1].state == sl.state and problem.slice_legal(out[-1].first, sl.last, sl.state):
            out[-1] = Slice(out[-1].first, sl.last, sl.state)
        else:
            out.append(sl)
    return out


@dataclass(frozen=True)
class HcaOptions:
    dvfs: bool = field(default=True, metadata={
        "doc": "false: energy over the devices at maximum frequency only (Fig. 11's HCA, DVFS-oblivious too)"})


def plan_hca(problem: PlanningProblem, objective: Objective, ctx: PlanContext) -> Plan:
    """Communication-oblivious: dp on the transfer-free problem, priced on the real one."""
    blind = without_transfers(problem)
    if objective.metric == "energy" and not ctx.options.dvfs:
        blind = at_fmax(blind)
    believed = optimal(blind, objective.metric)
    slices = merge_runs(problem, believed.slices)
    real = problem.evaluate(slices)
    return real.replace(stats={"oblivious_latency_ms": believed.latency_ms, "oblivious_energy_mj": believed.energy_mj,
                               "transfer_ms": float(sum(c.transfer_ms for c in real.slice_costs))})


def plan_hcca(problem: PlanningProblem, objective: Objective, ctx: PlanContext) -> Plan:
    """DVFS-oblivious: dp over the maximum-frequency states, priced on the real problem."""
    restricted = optimal(at_fmax(problem), objective.metric)
    return problem.evaluate(restricted.slices)


SPECS = (
    PlannerSpec("hca", "MOSAIC's HCA ablation (Sec. VI-D): dp with communication (Eq. 1-2 transfers) priced at zero "
                "(communication-oblivious), the plan then costed with them; ignores deadline and power cap",
                plan_hca, HcaOptions, metrics=("latency", "energy")),
    PlannerSpec("hcca", "MOSAIC's HCCA ablation (Sec. VI-D): dp over the devices at maximum frequency only "
                "(DVFS-oblivious; for latency the same as dp); ignores deadline and power cap",
                plan_hcca, metrics=("latency", "energy")),
)

__all__ = ["HcaOptions", "SPECS", "at_fmax", "merge_runs", "plan_hca", "plan_hcca", "without_transfers"]
