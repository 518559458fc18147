"""From pipelines to a ``WorkloadPlan``: what every workload planner of contention returns.

A workload planner of contention (``all-gpu``, ``rr``, ``mosaic``, ``ga``, ``optimum``,
``fairboost``) chooses one pipeline per model (``mix.Pipeline``); ``workload_plan`` turns them into
the ``WorkloadPlan`` the compiler writes: ``plans[m]`` is an ordinary ``Plan`` of model m's
pipeline (slice i = stage i, each at the mix's one state of its device), and ``stats`` holds

- ``pipelines``: name -> [{device, first, stop}] (device by name, ``stop`` one past the last layer);
- ``prediction``: the contention model's answer: ``throughput``, ``alone``, ``ideal`` (name ->
  inferences/s), ``utilisation`` (device -> busy fraction), ``busy`` (device -> name -> fraction),
  ``sharing`` (shared | slice);
- ``score``: ``T_w``, ``T_norm``, ``J``, ``O`` (FairBoost Table 3);
- ``states``: device -> the state label it runs at (one per device, for every model);
- ``shared_latency_ms``: name -> one inference's latency while all models run (its plan's
  latency x alone / shared throughput: Little's law with the same inferences in flight; null when
  it never completes) and ``power_mw``: the board's average power while they run (base power
  once, plus each model's dynamic energy per inference x its throughput; null without a power
  model). The feasibility policy judges the workload on these two (``registry.apply_policy``).

``mix_of`` builds the mix and refuses, in one line, a model that runs on no device.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from hetcc.core.errors import InfeasibleError, UsageError
from hetcc.planners.metrics import Objective, get_metric
from hetcc.planners.problem import WorkloadPlan, WorkloadProblem

from .contention import Prediction, predict
from .mix import MixProblem, Pipeline, Stage
from .scores import Score, baseline_throughput, score

#: what an illegal or starved candidate scores (a planner minimises the key)
WORST = math.inf


def mix_of(workload: WorkloadProblem) -> MixProblem:
    """The mix of ``workload`` (every device at its top state, the GPU the reference); a model
    that can run on no device (no legal pipeline) is an InfeasibleError naming it."""
    try:
        mix = MixProblem.from_workload(workload)
    except ValueError as exc:
        raise UsageError(f"workload: {exc}") from None
    for m, name in enumerate(mix.names):
        if mix.best_alone(m)[0] <= 0:
            L = mix.n_layers(m)
            bad = [l for l in range(L) if not np.isfinite(np.asarray(mix.layer_ms[m])[l]).any()]
            where = f" (layer {bad[0]} is legal on none of {', '.join(mix.devices)})" if bad else ""
            raise InfeasibleError(f"model {name!r} cannot run on any device of the board{where}; "
                                  "drop it from the workload or compile it for another target")
    return mix


#: what a plan under a fairness floor adds to its key (more than any workload score spans)
BELOW_FLOOR = 1e6


class Scorer:
    """Scores pipelines for one objective (a workload metric) with the baseline computed once."""

    def __init__(self, mix: MixProblem, objective: Objective, *, sharing: str = "shared",
                 quantum_ms: float | None = None) -> None:
        self.mix = mix
        self.metric = get_metric(objective.metric)
        if self.metric.scope != "workload":
            raise UsageError(f"objective {objective.metric!r} scores one model's plan; a workload planner of "
                             "contention optimises throughput, fairness or overall")
        self.sharing, self.quantum_ms = sharing, quantum_ms
        self.baseline = baseline_throughput(mix)
        self.calls = 0

    def predict(self, pipelines: Sequence[Pipeline]) -> Prediction:
        self.calls += 1
        return predict(self.mix, pipelines, sharing=self.sharing, quantum_ms=self.quantum_ms)

    def score(self, prediction: Prediction) -> Score:
        return score(self.mix, np.where(np.isfinite(prediction.throughput), prediction.throughput, 0.0),
                     baseline=self.baseline)

    def key(self, pipelines: Sequence[Pipeline], min_jain: float = 0.0) -> float:
        """The number to minimise (the metric negated); ``WORST`` for an illegal pipeline. With a
        fairness floor ``min_jain``, a plan whose Jain index is below it takes ``BELOW_FLOOR`` more: it
        ranks after every plan that reaches the floor, and among such plans by the metric."""
        try:
            pred = self.predict(pipelines)
        except ValueError:
            return WORST
        sc = self.score(pred)
        k = self.metric.score_key(sc)
        return k if sc.jain >= min_jain else k + BELOW_FLOOR


def pipeline_json(mix: MixProblem, pipeline: Pipeline) -> list[dict[str, Any]]:
    return [{"device": mix.devices[st.device], "first": int(st.first), "stop": int(st.stop)} for st in pipeline]


def pipeline_from_json(mix: MixProblem, doc: Sequence[Mapping[str, Any]]) -> Pipeline:
    return tuple(Stage(mix.devices.index(str(s["device"])), int(s["first"]), int(s["stop"])) for s in doc)


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def workload_plan(workload: WorkloadProblem, mix: MixProblem, pipelines: Sequence[Pipeline], scorer: Scorer,
                  stats: Mapping[str, Any] | None = None) -> WorkloadPlan:
    """The WorkloadPlan of ``pipelines`` (one per model, workload order) with the stats of the
    module docstring (``stats`` adds the planner's own)."""
    pipelines = tuple(tuple(p) for p in pipelines)
    for m, pipe in enumerate(pipelines):
        try:
            mix.check(m, pipe)
        except ValueError as exc:
            raise InfeasibleError(f"no legal pipeline: {exc}") from None
    pred = scorer.predict(pipelines)
    sc = scorer.score(pred)
    plans = tuple(p.evaluate(mix.slices(m, pipe)) for m, (p, pipe) in enumerate(zip(workload.problems, pipelines)))
    names = mix.names
    shared_latency = {}
    for n, plan, x, alone in zip(names, plans, pred.throughput, pred.alone):
        shared_latency[n] = (plan.latency_ms * float(alone) / float(x)) if x > 0 and math.isfinite(alone) else None
    base = float(workload.problems[0].base_power_mw)
    dynamic = [plan.energy_mj - base * plan.latency_ms / 1000.0 for plan in plans]
    power = base + sum(float(x) * e for x, e in zip(pred.throughput, dynamic)) \
        if all(math.isfinite(e) for e in dynamic) and np.isfinite(pred.throughput).all() else None
    states = workload.states
    ideal = mix.ideal()
    out = {
        "pipelines": {n: pipeline_json(mix, pipe) for n, pipe in zip(names, pipelines)},
        "prediction": {"throughput": {n: _finite(x) for n, x in zip(names, pred.throughput)},
                       "alone": {n: _finite(x) for n, x in zip(names, pred.alone)},
                       "ideal": {n: _finite(x) for n, x in zip(names, ideal)},
                       "utilisation": {d: float(u) for d, u in zip(mix.devices, pred.utilisation)},
                       "busy": {d: {n: float(pred.busy[m, i]) for m, n in enumerate(names) if pred.busy[m, i] > 0}
                                for i, d in enumerate(mix.devices)},
                       "sharing": scorer.sharing},
        "score": {"T_w": sc.throughput, "T_norm": sc.normalised, "J": sc.jain, "O": sc.overall},
        "states": {d: states.label(s) for d, s in zip(mix.devices, mix.state)},
        "shared_latency_ms": shared_latency,
        "power_mw": _finite(power) if power is not None else None,
        **dict(stats or {}),
    }
    return WorkloadPlan(plans=plans, names=names, stats=out)


__all__ = ["Scorer", "WORST", "mix_of", "pipeline_from_json", "pipeline_json", "workload_plan"]
