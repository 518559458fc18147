"""``random``: uniform random legal plans within the budget; the best one found (a baseline).

Plans are drawn uniformly from all legal plans: n[i], the number of legal plans of layers i..L-1,
is counted backwards (in logs: it reaches (S+1)^L), and slice (i..j, s) is drawn with weight
n[j+1]. Feasible plans rank by the objective, infeasible ones after them by how far they miss.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hetcc.core.errors import InfeasibleError
from .context import PlanContext
from .metrics import Objective
from .problem import Plan, PlanningProblem, Slice
from .registry import PlannerSpec


@dataclass(frozen=True)
class RandomOptions:
    samples: int = field(default=1000, metadata={"doc": "plans to draw (a step budget stops earlier)"})

    def validate(self) -> str | None:
        return None if self.samples >= 1 else f"samples must be at least 1, got {self.samples}"


def plan_random(problem: PlanningProblem, objective: Objective, ctx: PlanContext) -> Plan:
    L, S = problem.num_layers, problem.num_states
    ok = np.array([[[j >= i and problem.slice_legal(i, j, s) for s in range(S)] for j in range(L)]
                   for i in range(L)])                                   # [i, j, s]
    logn = np.full(L + 1, -np.inf)
    logn[L] = 0.0
    for i in range(L - 1, -1, -1):
        w = np.where(ok[i], logn[1:, None], -np.inf)
        logn[i] = np.logaddexp.reduce(w, axis=None)
    if not np.isfinite(logn[0]):
        raise InfeasibleError("no legal plan: some layer is legal on no device")
    best, best_key, drawn = None, (np.inf, np.inf), 0
    with ctx.progress.task("random", total=ctx.options.samples) as bar:
        while drawn < ctx.options.samples and not (drawn and ctx.out_of_budget(drawn)):
            drawn += 1
            slices, i = [], 0
            while i < L:
                p = np.exp(np.where(ok[i], logn[1:, None], -np.inf) - logn[i]).ravel()
                j, s = divmod(int(ctx.rng.choice(L * S, p=p / p.sum())), S)
                slices.append(Slice(i, j, s))
                i = j + 1
            cand = problem.evaluate(slices)
            miss = sum(v.actual / v.limit - 1 for v in objective.violations(cand.latency_ms, cand.energy_mj))
            key = (miss, objective.key(cand.latency_ms, cand.energy_mj))
            if key < best_key:
                best, best_key = cand, key
            bar.update(1, best=float(best_key[1]), feasible=best_key[0] == 0)
    return best.replace(stats={"samples": drawn, "log10_legal_plans": float(logn[0] / np.log(10))})


SPECS = (PlannerSpec("random", "uniform random legal plans within the budget, the best kept (a baseline)",
                     plan_random, RandomOptions, constraints=("deadline", "power_cap")),)
