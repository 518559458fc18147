"""``ga``: the genetic algorithm of FairBoost's ref. [2] (Kang et al., IEEE Access 2020) on pymoo.

Kang et al. evolve, per DNN, where its layers are cut and which processor runs each part, with
the throughput of the whole workload as fitness. Here the genome is a random-key encoding that
every vector decodes to a legal-by-construction pipeline under FairBoost's masking rule:

- per model, ``D - 1`` cut genes in [0, 1] (a cut after ``round(g x L)`` layers; cuts at 0 or L
  or equal to another fall away, so a model has 1..D stages) and ``D`` device keys in [0, 1]
  (the devices sorted by key; stage i runs on the i-th, so no device repeats);
- fitness: the objective's score (``overall`` by default: O = T_norm x J; ``throughput``;
  ``fairness``) of the decoded pipelines under THE contention model (``contention.predict``); a
  pipeline with an illegal stage scores worst.

pymoo's single-objective GA (tournament selection, simulated binary crossover, polynomial
mutation, duplicates eliminated) with ``population`` and ``generations`` as options, seeded from
the planner's context; half its first population at most is seeded (``seeds``: FairBoost's
baseline, so the GA never returns a plan worse than ``all-gpu`` under its objective; each model's
fastest pipeline alone and its least-latency one; models whole on devices dealt round the board),
the rest random. pymoo is the
``multi`` extra (imported when the planner runs).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from hetcc.core.errors import UsageError
from hetcc.planners.context import PlanContext
from hetcc.planners.metrics import Objective
from hetcc.planners.problem import WorkloadPlan, WorkloadProblem
from hetcc.planners.registry import PlannerSpec

from .baselines import WORKLOAD
from .mix import MixProblem, Pipeline, Stage
from .plans import WORST, Scorer, mix_of, workload_plan


@dataclass(frozen=True)
class GAOptions:
    population: int = field(default=40, metadata={"doc": "individuals per generation (>= 4)"})
    generations: int = field(default=40, metadata={"doc": "generations (a step budget stops earlier: one step "
                                                           "per generation)"})

    def validate(self) -> str | None:
        if self.population < 4:
            return f"population={self.population}: the GA needs at least 4 individuals"
        if self.generations < 1:
            return f"generations={self.generations}: run at least 1 generation"
        return None


class Genome:
    """The random-key encoding of one pipeline per model (see the module docstring)."""

    def __init__(self, mix: MixProblem) -> None:
        self.mix = mix
        self.D = mix.n_devices
        self.per_model = 2 * self.D - 1
        self.size = self.per_model * mix.n_models

    def decode(self, x: Sequence[float]) -> tuple[Pipeline, ...]:
        out = []
        D = self.D
        for m in range(self.mix.n_models):
            g = np.asarray(x[m * self.per_model:(m + 1) * self.per_model], dtype=np.float64)
            L = self.mix.n_layers(m)
            cuts = {int(round(float(c) * L)) for c in np.clip(g[:D - 1], 0.0, 1.0)}
            bounds = sorted({0, L} | {c for c in cuts if 0 < c < L})
            order = np.argsort(g[D - 1:], kind="stable")
            out.append(tuple(Stage(int(order[i]), bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)))
        return tuple(out)

    def encode(self, pipelines: Sequence[Pipeline]) -> np.ndarray:
        """A vector that decodes to ``pipelines`` (each at most D stages on distinct devices)."""
        x = np.zeros(self.size)
        D = self.D
        for m, pipe in enumerate(pipelines):
            L = self.mix.n_layers(m)
            cuts = [st.stop / L for st in pipe[:-1]] + [1.0] * (D - len(pipe))
            keys = np.full(D, 0.9)
            for i, st in enumerate(pipe):
                keys[st.device] = 0.1 * (i + 1) / (D + 1)
            rest = [d for d in range(D) if d not in {st.device for st in pipe}]
            for j, d in enumerate(rest):
                keys[d] = 0.5 + 0.4 * (j + 1) / (D + 1)
            x[m * self.per_model:(m + 1) * self.per_model] = [*cuts, *keys]
        return x


def seeds(mix: MixProblem, rng: np.random.Generator) -> list[tuple[Pipeline, ...]]:
    """Individuals of the first population besides random ones: FairBoost's baseline (all whole
    on the GPU), every model's own fastest pipeline alone, its least-latency pipeline (mosaic),
    and models whole on the devices dealt round the board in random orders."""
    from .baselines import latency_pipeline

    out = [mix.baseline(), tuple(mix.best_alone(m)[1] for m in range(mix.n_models)),
           tuple(latency_pipeline(mix, m) for m in range(mix.n_models))]
    for _ in range(2 * mix.n_devices):
        order = rng.permutation(mix.n_devices)
        out.append(tuple(mix.whole(m, int(order[m % mix.n_devices])) for m in range(mix.n_models)))
    return out


def plan_ga(workload: WorkloadProblem, objective: Objective, ctx: PlanContext) -> WorkloadPlan:
    opts: GAOptions = ctx.options
    try:
        from pymoo.algorithms.soo.nonconvex.ga import GA
        from pymoo.core.callback import Callback
        from pymoo.core.problem import Problem
        from pymoo.optimize import minimize
    except ImportError:
        raise UsageError("planner 'ga' needs pymoo: pip install 'hetcc[multi]'") from None
    mix = mix_of(workload)
    scorer = Scorer(mix, objective)
    genome = Genome(mix)
    cache: dict[tuple, float] = {}

    def key(pipes: tuple[Pipeline, ...]) -> float:
        if pipes not in cache:
            cache[pipes] = scorer.key(pipes)
        return cache[pipes]

    class Mapping(Problem):
        def __init__(self) -> None:
            super().__init__(n_var=genome.size, n_obj=1, xl=0.0, xu=1.0)

        def _evaluate(self, X: np.ndarray, out: dict, *args: Any, **kwargs: Any) -> None:
            f = np.array([key(genome.decode(x)) for x in X])
            out["F"] = np.where(np.isfinite(f), f, 1e9)[:, None]

    start = ctx.rng.random((opts.population, genome.size))
    for i, seed_pipes in enumerate(seeds(mix, ctx.rng)[:opts.population // 2]):
        start[i] = genome.encode(seed_pipes)
    bar = ctx.progress.task("ga", total=opts.generations)

    class Progress(Callback):
        def notify(self, algorithm: Any) -> None:
            best = float(algorithm.opt.get("F").min())
            bar.update(1, best=f"{-best:.4g}" if best < 1e9 else "-")
            if ctx.out_of_budget(algorithm.n_gen):
                algorithm.termination.force_termination = True

    seed = int(ctx.rng.integers(0, 2**31 - 1))
    with bar:
        res = minimize(Mapping(), GA(pop_size=opts.population, sampling=start, eliminate_duplicates=True),
                       ("n_gen", opts.generations), seed=seed, callback=Progress(), verbose=False)
    x = np.atleast_2d(res.X)[0]
    best = genome.decode(x)
    if key(best) == WORST:
        best = mix.baseline()
    return workload_plan(workload, mix, best, scorer,
                         {"generations": int(res.algorithm.n_gen), "evaluations": scorer.calls,
                          "population": opts.population})


SPECS = (PlannerSpec("ga", "genetic algorithm of FairBoost's ref. [2] on pymoo: per model cut points and a device per "
                     "stage, the objective's score under the contention model as fitness", plan_ga, GAOptions,
                     metrics=WORKLOAD, kind="workload"),)
