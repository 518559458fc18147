"""``hetcc tune PLANNER SPEC.toml -o BEST.toml``: Ray Tune over a planner's options.

The spec names the problems (the sweep's keys: ``models``, ``targets``, ``objectives``,
``deadlines``, ``power_caps``, ``seeds``) and the search::

    samples = 16                 # trials
    scheduler = "asha"           # asha | hyperband | fifo (HERTI tunes its DQN with Hyperband)
    [space]                      # option = {loguniform|uniform|int = [lo, hi]} or {choice = [...]}
    lr = {loguniform = [1e-4, 3e-3]}
    [fixed]                      # options every trial uses (e.g. a step budget)
    steps = 2000

A workload planner (``ga``, ...) is tuned the same way over mixes: the spec's ``models`` are
then mixes (``[["a.onnx", "b.onnx"], ...]``), the reference is ``optimum`` and the gap is O's (or
the objective's) shortfall from it.

Without ``[space]`` the search space is the planner's own: the options whose dataclass field
carries ``metadata["tune"]`` (``dqn`` and ``evosh`` declare theirs). The driver analyses every
(model, target) once, resolves each objective and runs the reference planner (``exact``) once
per problem; each trial then plans the problems in turn and reports, after each, the median gap
to the reference so far (an infeasible plan counts as a 100% gap), so ASHA / Hyperband stop poor
trials after a few problems. The best options go to ``BEST.toml`` as ``key = value`` lines, which
``hetcc compile --planner-option @BEST.toml`` reads.
"""
from __future__ import annotations

import dataclasses
import math
import os
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from hetcc.core.errors import UsageError

KINDS = ("loguniform", "uniform", "int", "choice")
SCHEDULERS = ("asha", "hyperband", "fifo")
INFEASIBLE_GAP = 100.0
MAX_SAMPLES = 10_000
TUNE_KEYS = ("samples", "scheduler", "space", "fixed", "reference")


@dataclass
class TuneSpec:
    planner: str
    sweep: Any                                   # the problems, as a SweepSpec
    samples: int = 16
    scheduler: str = "asha"
    space: dict[str, tuple] = field(default_factory=dict)
    fixed: dict[str, Any] = field(default_factory=dict)
    reference: str = "exact"
    kind: str = "model"                          # what the planner plans: model or workload

    @property
    def seeds(self) -> list[int]:
        """The planner seeds of the problems' cells."""
        return list(dict.fromkeys(c.seed for c in self.sweep.cells()))


def _dimension(spec_path: Path, name: str, value: Any) -> tuple:
    """{loguniform = [lo, hi]} -> ("loguniform", lo, hi), {choice = [...]} -> ("choice", [...])."""
    if isinstance(value, tuple):                              # from the dataclass metadata
        value = {value[0]: list(value[1:]) if value[0] != "choice" else value[1]}
    if not isinstance(value, dict) or len(value) != 1 or next(iter(value)) not in KINDS:
        raise UsageError(f"{spec_path}: [space] {name}: use one of {', '.join(k + ' = [...]' for k in KINDS)}")
    kind, args = next(iter(value.items()))
    if not isinstance(args, list) or not args:
        raise UsageError(f"{spec_path}: [space] {name}: {kind} needs a list")
    if kind == "choice":
        return ("choice", list(args))
    if len(args) != 2 or not all(isinstance(a, (int, float)) and not isinstance(a, bool) and math.isfinite(a)
                                 for a in args) or not args[0] < args[1]:
        raise UsageError(f"{spec_path}: [space] {name}: {kind} needs [lo, hi] with lo < hi, got {args}")
    if kind == "loguniform" and args[0] <= 0:
        raise UsageError(f"{spec_path}: [space] {name}: loguniform needs lo > 0")
    if kind == "int" and not all(isinstance(a, int) for a in args):
        raise UsageError(f"{spec_path}: [space] {name}: int needs integer bounds")
    return (kind, *args)


def load_tune_spec(planner: str, path: str | os.PathLike) -> TuneSpec:
    """The problems (validated as a sweep spec) and the search; one-line errors naming the key."""
    from hetcc.planners.registry import get_spec, option_fields, parse_options
    from hetcc.experiments.sweep import parse_spec

    from hetcc.core.read import read_toml

    p = Path(path)
    doc = read_toml(p, str(p))
    ps = get_spec(planner)
    if ps.kind not in ("model", "workload") or ps.exact:
        raise UsageError(f"planner {planner!r} has nothing to tune (it is {'exact' if ps.exact else 'a ' + ps.kind} "
                         "planner); tune a search or learning planner such as dqn, evosh, random or ga")
    grids = doc.get("grid") if isinstance(doc.get("grid"), list) else []
    for g in (doc, *grids):
        models = g.get("models") if isinstance(g, dict) else None
        for i, m in enumerate(models if isinstance(models, list) else []):
            if isinstance(m, list) != (ps.kind == "workload"):
                raise UsageError(f"{p}: models[{i}] {m!r}: {ps.name!r} plans " + (
                    'several models at once: give mixes, e.g. models = [["a.onnx", "b.onnx"]]'
                    if ps.kind == "workload" else "one model: give models, not mixes (lists)"))
    problems = {k: v for k, v in doc.items() if k not in TUNE_KEYS and k != "planners"}
    sweep = parse_spec(problems | {"planners": [ps.name]}, p)      # the problems: a sweep of one planner
    samples = doc.get("samples", 16)
    if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= MAX_SAMPLES:
        raise UsageError(f"{p}: 'samples' must be an integer from 1 to {MAX_SAMPLES}")
    scheduler = doc.get("scheduler", "asha")
    if scheduler not in SCHEDULERS:
        raise UsageError(f"{p}: 'scheduler' {scheduler!r}: choose one of {', '.join(SCHEDULERS)}")
    fields = {f.name: f.metadata for f in dataclasses.fields(ps.options)}
    declared = {n: m["tune"] for n, m in fields.items() if "tune" in m}
    raw_space = doc.get("space", declared)
    if not isinstance(raw_space, dict):
        raise UsageError(f"{p}: [space] must be a table of option = {{kind = [...]}}")
    if not raw_space:
        raise UsageError(f"{p}: planner {ps.name!r} declares no tunable options; give a [space] table, "
                         f"e.g. [space] {next(iter(fields), 'option')} = {{choice = [...]}}")
    space = {}
    for name, value in raw_space.items():
        if name not in fields:
            raise UsageError(f"{p}: [space] {name}: planner {ps.name!r} has no such option; its options: "
                             f"{', '.join(n for n, *_ in option_fields(ps))}")
        space[name] = _dimension(p, name, value)
    fixed = doc.get("fixed", {})
    if not isinstance(fixed, dict):
        raise UsageError(f"{p}: [fixed] must be a table of option = value")
    clash = sorted(set(fixed) & set(space))
    if clash:
        raise UsageError(f"{p}: option {clash[0]!r} is both in [space] and [fixed]")
    parse_options(ps, fixed)                            # unknown keys / bad values: one line
    reference = doc.get("reference", "exact" if ps.kind == "model" else "optimum")
    if not isinstance(reference, str) or get_spec(reference).kind != ps.kind:
        raise UsageError(f"{p}: 'reference' {reference!r}: give a {ps.kind} planner as {ps.name!r} is "
                         f"(e.g. {'exact' if ps.kind == 'model' else 'optimum'})")
    return TuneSpec(ps.name, sweep, samples, scheduler, space, fixed, reference, ps.kind)


@dataclass(frozen=True)
class Problem:
    name: str
    problem: Any
    objective: Any
    reference: float | None


def prepare_problems(spec: TuneSpec, console: Any = None) -> list[Problem]:
    """Analyse each (model, target) once; resolve every objective; the reference value of each."""
    from hetcc.compiler.api import analyse, resolve_model
    from hetcc.core.errors import HetccError
    from hetcc.experiments.sweep import objective_of, restrict

    sw = spec.sweep
    out = []
    analyses: dict[tuple[str, str, str], Any] = {}
    seen = set()
    for c in sw.cells():
        what = (c.model, c.target, c.devices, c.objective, c.deadline, c.power_cap)
        if what in seen:
            continue
        seen.add(what)
        for m in sw.mixes.get(c.model, (c.model,)):
            if (m, c.target, "all") not in analyses:
                path = str(sw.model_paths.get(m) or resolve_model(m, None, 0))
                analyses[(m, c.target, "all")] = analyse(path, sw._target_arg(c.target),
                                                         max_cut_tensors=sw.max_cut_tensors)
            if (m, c.target, c.devices) not in analyses:
                analyses[(m, c.target, c.devices)] = restrict(analyses[(m, c.target, "all")], c.devices)
        try:
            if c.model in sw.mixes:
                problem, obj, value = _mix_problem([analyses[(m, c.target, c.devices)] for m in sw.mixes[c.model]],
                                                   c, spec.reference)
            else:
                a = analyses[(c.model, c.target, c.devices)]
                obj = objective_of(a, c.objective, c.deadline, c.power_cap)
                ref = a.plan(obj, planner=spec.reference)
                problem, value = a.problem, obj.value(ref.latency_ms, ref.energy_mj)
        except HetccError:                # does not apply here: not a problem
            continue
        devices = "" if c.devices == "all" else f"[{c.devices}]"
        out.append(Problem(f"{c.model}@{c.target}{devices}/{c.objective}/{c.deadline}/{c.power_cap}", problem,
                           obj, value))
    if not out:
        raise UsageError("no problem of the spec has a feasible reference plan; widen deadlines or caps")
    return out


def _mix_problem(mix: list[Any], cell: Any, reference: str) -> tuple[Any, Any, float]:
    """A mix's WorkloadProblem, its objective and the reference planner's value (a HetccError
    where the reference does not apply, e.g. a relative deadline, which only independent takes)."""
    from hetcc.compiler.api import plan_workload, workload_problem
    from hetcc.core.errors import InfeasibleError
    from hetcc.experiments.sweep.cells import mix_numbers

    ref, obj = plan_workload(mix, cell.objective, deadline=None if cell.deadline == "none" else cell.deadline,
                             power_cap=None if cell.power_cap == "none" else cell.power_cap, planner=reference,
                             seed=cell.seed)
    value = mix_numbers(ref, obj)["value"]
    if value is None or not math.isfinite(value) or value == 0:
        raise InfeasibleError(f"{reference}: no value to compare with")
    return workload_problem(mix), obj, value


def evaluate(planner: str, options: Mapping[str, Any], problems: list[Problem], seeds: list[int],
             report: Any = None) -> float:
    """The median gap (%) of ``planner`` with ``options`` over the problems (x seeds); calls
    ``report({"gap": median so far, "problems": n})`` after each."""
    from hetcc.core.errors import HetccError
    from hetcc.experiments.sweep.cells import gap_pct, mix_numbers
    from hetcc.planners import PlanContext, WorkloadPlan
    from hetcc.planners import plan as run_planner

    gaps: list[float] = []
    for pr in problems:
        for seed in seeds:
            try:
                plan = run_planner(pr.problem, pr.objective, planner, dict(options), PlanContext(seed),
                                   allow_infeasible=True)
                value = (mix_numbers(plan, pr.objective)["value"] if isinstance(plan, WorkloadPlan)
                         else pr.objective.value(plan.latency_ms, plan.energy_mj))
                gap = gap_pct(pr.objective.metric, value, pr.reference) if plan.feasible else None
                gap = INFEASIBLE_GAP if gap is None else gap
            except HetccError:             # no plan (InfeasibleError) or options it refuses: the worst
                gap = INFEASIBLE_GAP
            gaps.append(max(gap, 0.0))
            if report is not None:
                report({"gap": statistics.median(gaps), "problems": len(gaps)})
    return statistics.median(gaps)


def _search_space(space: Mapping[str, tuple]) -> dict[str, Any]:
    from ray import tune

    out = {}
    for name, (kind, *args) in space.items():
        out[name] = {"loguniform": lambda a: tune.loguniform(*a), "uniform": lambda a: tune.uniform(*a),
                     "int": lambda a: tune.randint(a[0], a[1] + 1), "choice": lambda a: tune.choice(a[0])}[kind](args)
    return out


def _trainable(config: dict[str, Any], planner: str, fixed: dict, problems: list, seeds: list) -> None:
    from ray import tune

    evaluate(planner, {**fixed, **config}, problems, seeds, report=tune.report)


@dataclass
class TuneResult:
    best: dict[str, Any]
    best_gap: float
    default_gap: float
    trials: int
    stopped_early: int
    problems: int
    seconds: float


def run_tune(spec: TuneSpec, *, address: str | None = None, workers: int | None = None, seed: int = 0,
             console: Any = None) -> TuneResult:
    from hetcc.experiments.sweep import init_ray

    t0 = time.perf_counter()
    problems = prepare_problems(spec, console)
    default_gap = evaluate(spec.planner, spec.fixed, problems, spec.seeds)
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")      # no experiment banner (verbose=0 is honoured)
    init_ray(address, workers)
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, HyperBandScheduler
    from ray.tune.search.basic_variant import BasicVariantGenerator

    n = len(problems) * len(spec.seeds)
    scheduler = {"asha": lambda: ASHAScheduler(time_attr="problems", max_t=n, grace_period=min(2, n),
                                               reduction_factor=2),
                 "hyperband": lambda: HyperBandScheduler(time_attr="problems", max_t=n, reduction_factor=2),
                 "fifo": FIFOScheduler}[spec.scheduler]()
    with tempfile.TemporaryDirectory(prefix="hetcc-tune-") as storage:   # Tune's trial logs: not kept
        tuner = tune.Tuner(
            tune.with_parameters(_trainable, planner=spec.planner, fixed=spec.fixed, problems=problems,
                                 seeds=spec.seeds),
            param_space=_search_space(spec.space),
            tune_config=tune.TuneConfig(metric="gap", mode="min", num_samples=spec.samples, scheduler=scheduler,
                                        search_alg=BasicVariantGenerator(random_state=seed)),
            run_config=tune.RunConfig(storage_path=storage, name="hetcc-tune", verbose=0),
        )
        grid = tuner.fit()
        errors = [r.error for r in grid if r.error is not None]
        if errors and len(errors) == len(grid):
            raise RuntimeError(f"every trial failed; the first: {errors[0]}")
        best = grid.get_best_result(metric="gap", mode="min", scope="last")
        finished = sum(1 for r in grid if r.metrics and r.metrics.get("problems") == n)
        # the best trial's options re-measured on every problem (a stopped trial saw only some)
        best_config = {**spec.fixed, **best.config}
    best_gap = evaluate(spec.planner, best_config, problems, spec.seeds)
    return TuneResult(best_config, best_gap, default_gap, len(grid), len(grid) - finished, n,
                      time.perf_counter() - t0)


def write_best(path: Path, planner: str, result: TuneResult) -> None:
    """``key = value`` lines (TOML) that ``--planner-option @path`` reads."""
    from hetcc.files.atomic import atomic_write_text

    lines = [f"# hetcc tune {planner}: median gap {result.best_gap:.3f}% over {result.problems} problems "
             f"(defaults: {result.default_gap:.3f}%), {result.trials} trials"]
    for k, v in sorted(result.best.items()):
        if isinstance(v, bool):
            lines.append(f"{k} = {'true' if v else 'false'}")
        elif isinstance(v, (int, float)):
            lines.append(f"{k} = {v!r}")
        else:
            lines.append(f'{k} = "{v}"')
    atomic_write_text(path, "\n".join(lines) + "\n")


# ---------------------------------------------------------------- command line


