"""The planner registry: ``PlannerSpec``s, typed options, ``auto``, and the feasibility policy.

A planner is a module that defines ``SPECS`` (one or more ``PlannerSpec``) and is named in
``BUILTIN`` below (name -> module); the module is imported only when that planner is asked for,
so ``--planner dp`` never loads what ``dqn`` needs. Planner modules import heavy libraries
(torch) inside their functions, never at module level, so ``hetcc planners`` stays light too.

``run(problem, objective, planner, options, ctx)`` resolves the name, parses the options into the
spec's dataclass, runs ``spec.run(problem, objective, ctx)``, stamps name, options and seconds,
and applies the one feasibility policy: a plan that breaks the deadline or power cap is an
``InfeasibleError`` (exit 3) naming the amount, unless ``allow_infeasible``, which returns it
with ``feasible=False`` and the violations.
"""
from __future__ import annotations

import dataclasses
import difflib
import importlib
import math
import time
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from hetcc.core.errors import InfeasibleError, UsageError
from .context import PlanContext
from .metrics import METRICS, WORKLOAD_METRICS, Objective
from .problem import Plan, PlanningProblem, WorkloadPlan, WorkloadProblem

#: bounds every integer option takes (counts, sizes, steps; docs/limits.md); a float option is finite
INT_OPTION_RANGE = (0, 2**31 - 1)
#: what a planner plans: one model, several models at once, or a run-time policy
KINDS = ("model", "workload", "policy")
CONSTRAINTS = ("deadline", "power_cap")


@dataclass(frozen=True)
class NoOptions:
    """For planners without options."""


@dataclass(frozen=True)
class PlannerSpec:
    """One planner: its name, what it optimises and honours, its options and its function.

    ``metrics``: the metrics it optimises; ``constraints``: the limits it plans within (others
    are left to the feasibility policy); ``exact``: returns a proven optimum; ``positional``: the
    option that ``name:VALUE`` sets (``single:gpu`` -> device='gpu'); ``hardware``: it chooses
    the board's hardware configuration too."""

    name: str
    summary: str
    run: Callable[[Any, Objective, PlanContext], Any]
    options: type = NoOptions
    metrics: tuple[str, ...] = ("latency", "energy", "edp")
    constraints: tuple[str, ...] = ()
    exact: bool = False
    kind: str = "model"
    positional: str | None = None
    hardware: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"planner {self.name!r}: kind must be one of {KINDS}")
        if not dataclasses.is_dataclass(self.options):
            raise ValueError(f"planner {self.name!r}: options must be a dataclass")
        unknown = set(self.constraints) - set(CONSTRAINTS)
        if unknown:
            raise ValueError(f"planner {self.name!r}: unknown constraints {sorted(unknown)}")

    def supports(self, objective: Objective) -> bool:
        return objective.metric in self.metrics and objective.constraints <= set(self.constraints)


#: built-in planners: name -> module defining SPECS (imported on first use)
BUILTIN: dict[str, str] = {
    "dp": "hetcc.planners.dp",
    "exact": "hetcc.planners.exact",
    "single": "hetcc.planners.baselines",
    "brute": "hetcc.planners.baselines",
    "even": "hetcc.planners.fixed",
    "random": "hetcc.planners.random",
    "independent": "hetcc.planners.workload",
    "dqn": "hetcc.planners.dqn",
    "evosh": "hetcc.planners.evosh",
    "autoscale-static": "hetcc.planners.autoscale_static",
    "hca": "hetcc.planners.ablations",
    "hcca": "hetcc.planners.ablations",
    "all-gpu": "hetcc.planners.multi.baselines",
    "rr": "hetcc.planners.multi.baselines",
    "mosaic": "hetcc.planners.multi.baselines",
    "ga": "hetcc.planners.multi.ga",
    "optimum": "hetcc.planners.multi.optimum",
    "fairboost": "hetcc.planners.fairboost",
    "autoscale": "hetcc.planners.autoscale",
}
#: ``auto`` picks the first of these whose capabilities cover the objective
AUTO_ORDER = ("dp", "exact")
#: ``auto`` for a workload: ``independent`` for a plan metric (latency, energy, edp); for a workload
#: metric (throughput, fairness, overall) ``optimum`` when its search space at its default options
#: holds at most ``AUTO_OPTIMUM_SPACE`` combinations (the proven best of that space, deterministic,
#: about 1 s at that size), else the planner below, which answers for a mix of any size
AUTO_WORKLOAD = "ga"
#: the most combinations ``auto`` lets ``optimum`` enumerate (3 models on a 3-device board: 21^3)
AUTO_OPTIMUM_SPACE = 10_000
_SPECS: dict[str, PlannerSpec] = {}


def register(spec: PlannerSpec) -> PlannerSpec:
    """Make a planner available by name (built-in modules are found through ``BUILTIN``)."""
    old = _SPECS.get(spec.name)
    if old is not None and old.run is not spec.run:
        raise ValueError(f"planner {spec.name!r} is registered twice")
    _SPECS[spec.name] = spec
    return spec


def get_spec(name: str) -> PlannerSpec:
    """The spec registered as ``name`` (the part before ':' of ``single:gpu``)."""
    base = name.split(":", 1)[0]
    if base not in _SPECS and base in BUILTIN:
        for spec in importlib.import_module(BUILTIN[base]).SPECS:
            register(spec)
    try:
        return _SPECS[base]
    except KeyError:
        names = planner_names()
        close = difflib.get_close_matches(base, names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UsageError(f"unknown planner {name!r}{hint}; choose one of {', '.join(names)} "
                         "(hetcc planners lists them)") from None


def all_specs() -> list[PlannerSpec]:
    """Every planner, built-in and registered (imports every built-in planner module)."""
    for name in BUILTIN:
        get_spec(name)
    return sorted(_SPECS.values(), key=lambda s: (KINDS.index(s.kind), s.name))


def planner_names() -> tuple[str, ...]:
    names = set(BUILTIN) | set(_SPECS)
    return ("auto", *sorted(names))


def resolve(name: str, objective: Objective, kind: str = "model", problem: WorkloadProblem | None = None) -> str:
    """The concrete planner ``auto`` stands for (other names unchanged): the first exact planner
    in ``AUTO_ORDER`` whose metrics and constraints cover the objective. For a workload metric,
    ``optimum`` when ``problem`` is given and small enough (``AUTO_OPTIMUM_SPACE``), else ``ga``."""
    if name != "auto":
        return name
    if kind == "workload":
        if objective.metric not in WORKLOAD_METRICS:
            return "independent"
        if problem is not None and optimum_space(problem) <= AUTO_OPTIMUM_SPACE:
            return "optimum"
        return AUTO_WORKLOAD
    refuse_workload_metric(objective.metric, kind)
    for cand in AUTO_ORDER:
        if get_spec(cand).supports(objective):
            return cand
    raise UsageError(f"no exact planner supports {objective.metric} with {sorted(objective.constraints)}")


def optimum_space(problem: WorkloadProblem) -> int:
    """How many combinations ``optimum`` enumerates for ``problem`` at its default options (0 when
    a model has no legal pipeline: ``optimum`` then refuses it at once)."""
    optimum = importlib.import_module(BUILTIN["optimum"])      # as every planner is reached: no import cycle
    plans = importlib.import_module("hetcc.planners.multi.plans")
    opts = optimum.OptimumOptions()
    mix = plans.mix_of(problem)
    return math.prod(len(optimum.candidates(mix, m, opts.blocks, opts.max_stages)) for m in range(mix.n_models))


def refuse_workload_metric(metric: str | None, kind: str) -> None:
    """A workload metric (throughput, fairness, overall) asked of one model: a UsageError."""
    if kind == "model" and metric in WORKLOAD_METRICS:
        raise UsageError(f"objective {metric!r} scores several models running at once; compile two or more "
                         f"models, or use {'|'.join(METRICS)} for one")


def check_planner(name: str, kind: str, metric: str | None = None) -> PlannerSpec:
    """The spec of ``name`` (not ``auto``) if it plans a ``kind`` (``model``/``workload``) and
    optimises ``metric``; else the UsageError ``run`` would raise, before any model is loaded."""
    refuse_workload_metric(metric, kind)
    spec = get_spec(name)
    if spec.kind != kind:
        raise UsageError(f"planner {spec.name!r} plans a {spec.kind}, not a {kind}; "
                         + (f"give it alone, --planner {spec.name} on one model (it writes a variant per action)"
                            if spec.kind == "policy" and kind == "model" else
                            "compile several models for a workload planner" if kind == "model"
                            else "choose a workload planner (hetcc planners)"))
    if metric is not None and metric not in spec.metrics:
        raise UsageError(f"planner {spec.name!r} does not optimise {metric} (it optimises "
                         f"{', '.join(spec.metrics)}); use --planner auto")
    return spec


# ---- options ------------------------------------------------------------------------------

def option_fields(spec: PlannerSpec) -> list[tuple[str, Any, Any, str]]:
    """(name, type, default, one-line doc) of each option of ``spec``."""
    hints = typing.get_type_hints(spec.options)
    out = []
    for f in dataclasses.fields(spec.options):
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        out.append((f.name, hints[f.name], default, f.metadata.get("doc", "")))
    return out


def type_name(tp: Any) -> str:
    if typing.get_origin(tp) is typing.Literal:
        return "|".join(map(str, typing.get_args(tp)))
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if args and (typing.get_origin(tp) in (typing.Union, types.UnionType)):
        return f"{type_name(args[0])} or none"
    return getattr(tp, "__name__", str(tp))


def _convert(tp: Any, value: Any) -> Any:
    """``value`` (a CLI string or a Python value) as type ``tp``; ValueError when it is not."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if type(None) in args and (value is None or (isinstance(value, str) and value.lower() in ("none", "null"))):
            return None
        for a in args:
            if a is type(None):
                continue
            try:
                return _convert(a, value)
            except ValueError:
                continue
        raise ValueError(f"expected {type_name(tp)}")
    if origin is typing.Literal:
        choices = typing.get_args(tp)
        for c in choices:
            if value == c or (isinstance(value, str) and str(c) == value):
                return c
        raise ValueError(f"expected one of {', '.join(map(str, choices))}")
    if tp is bool:
        if isinstance(value, bool):
            return value
        text = str(value).lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise ValueError("expected true or false")
    if tp is int:
        if isinstance(value, bool):
            raise ValueError("expected an integer")
        if isinstance(value, int):
            return value
        try:
            return int(str(value).strip())
        except ValueError:
            raise ValueError("expected an integer") from None
    if tp is float:
        if isinstance(value, bool):
            raise ValueError("expected a number")
        try:
            return float(value)
        except (TypeError, ValueError, OverflowError):
            raise ValueError("expected a number") from None
    if tp is str:
        return str(value)
    raise ValueError(f"unsupported option type {tp!r}")


def parse_options(spec: PlannerSpec, raw: Mapping[str, Any] | None) -> Any:
    """The options dataclass of ``spec`` from ``raw`` (strings from the CLI or Python values).

    An unknown key or a bad value is a UsageError naming the planner, the key and the valid keys."""
    fields = {name: (tp, doc) for name, tp, _, doc in option_fields(spec)}
    values = {}
    for key, value in (raw or {}).items():
        if key not in fields:
            valid = ", ".join(fields) or "none"
            raise UsageError(f"planner {spec.name!r} has no option {key!r}; its options: {valid} "
                             "(hetcc planners shows them)")
        tp, _ = fields[key]
        try:
            values[key] = _convert(tp, value)
        except ValueError as exc:
            raise UsageError(f"planner {spec.name!r}: option {key}={value!r}: {exc}") from None
    try:
        opts = spec.options(**values)
    except TypeError as exc:  # a required option without a default
        raise UsageError(f"planner {spec.name!r}: {exc}") from None
    check = getattr(opts, "validate", None)
    if check is not None:
        problem = check()
        if problem:
            raise UsageError(f"planner {spec.name!r}: {problem}")
    for key, value in values.items():   # the planner's own check speaks first; these bounds hold for all
        problem = _out_of_bounds(value)
        if problem:
            raise UsageError(f"planner {spec.name!r}: option {key}={raw[key]!r}: {problem}")
    return opts


def _out_of_bounds(value: Any) -> str | None:
    """Why an option value is refused whatever the planner: a float that is not finite (nan, inf,
    1e999) or an integer outside ``INT_OPTION_RANGE``; None when it is fine."""
    if isinstance(value, float) and not math.isfinite(value):
        return "expected a finite number"
    lo, hi = INT_OPTION_RANGE
    if isinstance(value, int) and not isinstance(value, bool) and not lo <= value <= hi:
        return f"expected an integer from {lo} to {hi}"
    return None


def parse_option_args(items: list[str] | None) -> dict[str, str]:
    """``--planner-option KEY=VALUE`` (repeatable) -> {KEY: VALUE}; ``@FILE`` reads ``key = value``
    lines of a TOML file (what ``hetcc tune`` writes), later items override earlier ones."""
    out: dict[str, str] = {}
    for item in items or ():
        if item.startswith("@"):
            out.update(_option_file(item[1:]))
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"malformed --planner-option {item!r}; use KEY=VALUE, e.g. --planner-option beam=16")
        out[key.strip()] = value.strip()
    return out


def _option_file(path: str) -> dict[str, str]:
    from hetcc.core.read import read_toml

    doc = read_toml(path, f"--planner-option @{path}")
    bad = [k for k, v in doc.items() if isinstance(v, (dict, list))]
    if bad:
        raise UsageError(f"--planner-option @{path}: {bad[0]!r} is a table or list; write key = value lines")
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in doc.items()}


# ---- running ------------------------------------------------------------------------------

def display_name(name: str, spec: PlannerSpec) -> str:
    return name if spec.positional and ":" in name else spec.name


def split_name(name: str, spec: PlannerSpec, options: Mapping[str, Any]) -> dict[str, Any]:
    """Options with the positional part of ``name:VALUE`` added."""
    opts = dict(options)
    if ":" in name:
        if spec.positional is None:
            raise UsageError(f"planner {spec.name!r} takes no ':' argument (got {name!r})")
        value = name.split(":", 1)[1]
        if not value:
            raise UsageError(f"planner {name!r} names no {spec.positional}; use {spec.name}:<{spec.positional}>")
        opts[spec.positional] = value
    return opts


def parse_planner_entry(entry: str, defaults: Mapping[str, Mapping[str, Any]] | None = None, *,
                        not_model: str = ", not one model", pair_note: str = "",
                        unknown_with_arg: bool = True,
                        kinds: tuple[str, ...] = ("model",)) -> tuple[str, PlannerSpec, dict[str, Any]]:
    """A planner entry ``NAME[:ARG] [key=value ...]`` (an observations file's planner column, a
    sweep's planners entry) -> (NAME[:ARG], its spec, its options: ``defaults[spec.name]``, then the
    entry's pairs). One parser for both; UsageError for an unknown planner (named with its ':'
    argument unless not ``unknown_with_arg``), one of a kind not in ``kinds`` (the message ends
    with the caller's ``not_model``) and a pair that is not key=value (``pair_note`` follows it)."""
    name, *pairs = entry.split()
    spec = get_spec(name if unknown_with_arg else name.split(":")[0])
    if spec.kind not in kinds:
        raise UsageError(f"planner {spec.name!r} plans a {spec.kind}{not_model}")
    given = dict((defaults or {}).get(spec.name, {}))
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise UsageError(f"{pair!r}{pair_note}: write options as key=value after the planner's name")
        given[key] = value
    return name, spec, given


def apply_policy(plan: Plan | WorkloadPlan, objective: Objective, allow_infeasible: bool) -> Any:
    """The feasibility policy: stamp ``feasible``/``violations``; raise unless allowed. A
    workload planned for contention (its stats hold ``shared_latency_ms``: each model's latency
    while all run) is judged as a whole (``Objective.workload_violations``); any other workload is
    feasible when each of its models' plans is."""
    if isinstance(plan, WorkloadPlan) and "shared_latency_ms" in plan.stats:
        found = list(objective.workload_violations(plan.stats["shared_latency_ms"], plan.stats.get("power_mw")))
    elif isinstance(plan, WorkloadPlan):
        found = [f"{n}: {v}" for n, p in zip(plan.names, plan.plans) for v in p.violations]
    else:
        found = [v.message for v in objective.violations(plan.latency_ms, plan.energy_mj)]
    plan = plan.replace(feasible=not found, violations=tuple(found))
    if found and not allow_infeasible:
        raise InfeasibleError(f"{plan.planner}: {'; '.join(found)} (--allow-infeasible writes it anyway, "
                              "marked infeasible; --planner auto finds a feasible plan if one exists)")
    return plan


def closest_plan(problem: PlanningProblem, objective: Objective, why: str) -> Plan:
    """The plan closest to meeting ``objective``'s limits when none meets them (what
    ``--allow-infeasible`` writes when a planner finds no feasible plan): with a deadline, the
    fastest plan (within the power cap when some plan meets it); with a power cap alone, the
    fastest plan among those of the lowest reachable average power. ``stats["closest"]`` says so."""
    exact_module = importlib.import_module(BUILTIN["exact"])      # as every planner is reached: no import cycle

    def exact(p: PlanningProblem, o: Objective) -> Plan:
        return get_spec("exact").run(p, o, PlanContext())

    cap = objective.power_cap_mw
    if objective.deadline_ms is not None:
        try:
            plan = exact(problem, Objective("latency", power_cap_mw=cap)) if cap is not None else None
        except InfeasibleError:
            plan = None
        plan = plan or exact(problem, Objective("latency"))
        what = "the fastest plan" + (" within the power cap" if plan and cap is not None and
                                     plan.energy_mj / plan.latency_ms * 1e3 <= cap * (1 + 1e-9) else "")
    else:
        floor = exact_module.lowest_average_power_mw(problem)
        plan = exact(problem, Objective("latency", power_cap_mw=floor * (1 + 1e-9)))
        what = "the fastest plan of the lowest reachable average power"
    return plan.replace(stats={**plan.stats, "closest": f"{what} ({why})"})


def run(problem: PlanningProblem | WorkloadProblem, objective: Objective, planner: str = "auto",
        options: Mapping[str, Any] | None = None, ctx: PlanContext | None = None, *,
        allow_infeasible: bool = False) -> Any:
    """Plan ``problem`` for ``objective`` with ``planner``; see the module docstring."""
    kind = "workload" if isinstance(problem, WorkloadProblem) else "model"
    name = resolve(planner, objective, kind, problem if kind == "workload" else None)
    if kind == "model" and get_spec(name).kind == "policy":   # a run-time policy: variants of one model
        kind = "policy"
    spec = check_planner(name, kind, objective.metric)
    opts = parse_options(spec, split_name(name, spec, options or {}))
    ctx = (ctx or PlanContext()).with_options(opts)
    t0 = time.perf_counter()
    try:
        result = spec.run(problem, objective, ctx)
    except InfeasibleError as exc:
        if not allow_infeasible or kind != "model" or not objective.constraints:
            raise
        result = closest_plan(problem, objective, str(exc))
    seconds = time.perf_counter() - t0
    ctx.logger.debug("%s: planned in %.1f ms", name, seconds * 1e3)
    result = result.replace(planner=display_name(name, spec), options=dataclasses.asdict(opts), seconds=seconds,
                            objective=objective)
    if kind == "policy":   # each variant carries its own feasibility: a policy may choose one that misses a limit
        return result
    if isinstance(result, WorkloadPlan):     # a workload planner's own model plans carry its name
        result = result.replace(plans=tuple(p if p.planner else p.replace(planner=result.planner, objective=objective)
                                            for p in result.plans))
    return apply_policy(result, objective, allow_infeasible)


__all__ = ["AUTO_OPTIMUM_SPACE", "AUTO_WORKLOAD", "BUILTIN", "KINDS", "NoOptions", "PlannerSpec", "all_specs", "apply_policy", "check_planner", "get_spec",
           "optimum_space", "option_fields", "parse_option_args", "parse_options", "parse_planner_entry", "planner_names", "register",
           "refuse_workload_metric", "resolve", "run", "type_name"]
