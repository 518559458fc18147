"""Python API: analyse a model once, plan it many times, emit artifacts.

    session = hetcc.analyse("model.onnx", target="hikey970")      # load + analysis passes, once
    plan = session.plan("energy", deadline="medium", planner="exact")
    session.emit(plan, "build/")                                  # slices + manifest
    hetcc.compile(...)                                            # all three in one call

``deadline`` takes ``170ms``, ``0.17s``, a number of ms, HERTI's presets ``short|medium|long``
(T_best + zeta * (T_energy_opt - T_best), zeta = 0.25 / 0.5 / 1.0, both ends from ``dp``) or
``1.3x`` (relative to the fastest plan); ``power_cap`` ``5W``, ``5000mW`` or a number of W.
"""
from __future__ import annotations

import math
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .errors import UsageError
from .limits import check_seed
from .passmanager import PassManager, PassTiming
from .planners import METRICS, Budget, Objective, Plan, PlanContext, PlanningProblem, Progress, WorkloadPlan
from .planners import WorkloadProblem
from .planners import plan as run_planner
from .program import COSTS, PLAN, Program

_NUM = r"(\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
#: HERTI Eq. 12: deadline = T_best + zeta * (T_energy_opt - T_best)
DEADLINE_PRESETS = {"short": 0.25, "medium": 0.5, "long": 1.0}
#: limits of the command-line values (docs/limits.md, "Command-line values")
DEADLINE_MAX_MS = 86_400_000.0      # one day
DEADLINE_FACTOR_MAX = 1000.0        # "<k>x" the fastest plan
POWER_CAP_MAX_MW = 100_000_000.0    # 100 kW


def _in_range(flag: str, text: Any, value: float, hi: float, limit: str, example: str) -> float:
    """``value`` if finite and in (0, hi]; UsageError naming ``flag``, its ``limit`` and an example."""
    if not math.isfinite(value):
        raise UsageError(f"{flag} {text!r} is not a finite number; give at most {limit}, e.g. {example}")
    if not 0 < value <= hi:
        raise UsageError(f"{flag} {text!r} is out of range; give more than 0 and at most {limit}, e.g. {example}")
    return value


def parse_deadline(text: str | float | None) -> tuple[float | None, str | None]:
    """(milliseconds, None) for an absolute deadline; (None, spec) for ``short|medium|long|<k>x``."""
    if text is None:
        return None, None
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        t = str(text).strip().lower()
        if t in DEADLINE_PRESETS:
            return None, t
        m = re.fullmatch(rf"({_NUM})\s*x", t)
        if m:
            factor = float(m.group(1))
            if not 1.0 <= factor <= DEADLINE_FACTOR_MAX:   # also inf from 1e999x
                raise UsageError(f"--deadline {text!r}: a relative deadline is at least 1x and at "
                                 f"most {DEADLINE_FACTOR_MAX:g}x the fastest plan, e.g. 1.3x")
            return None, f"{factor:g}x"
        m = re.fullmatch(rf"({_NUM})\s*(ms|s|us)?", t)
        if not m:
            raise UsageError(f"malformed --deadline {text!r}; use e.g. 170ms, 0.17s, 170 (ms), "
                             "short|medium|long or 1.3x (relative to the fastest plan)")
        value = float(m.group(1)) * {"ms": 1.0, "s": 1e3, "us": 1e-3, None: 1.0}[m.group(3)]
    return _in_range("--deadline", text, value, DEADLINE_MAX_MS, f"1 day ({DEADLINE_MAX_MS:.0f} ms)", "170ms"), None


def reference_latencies(problem: PlanningProblem, energy: bool = True) -> tuple[float, float | None]:
    """(T_best, T_energy_opt) of ``problem``: the fastest plan's latency and the energy optimum's
    (``dp``; None without ``energy``, for a target without a power model)."""
    from .planners.dp import optimal

    t_best = optimal(problem, "latency").latency_ms
    return t_best, optimal(problem, "energy").latency_ms if energy else None


def preset_deadline_ms(spec: str, t_best: float, t_energy: float | None) -> float:
    """The milliseconds of a relative deadline: HERTI's Eq. 12 preset or ``<k>x`` the fastest plan
    (``spec`` as ``parse_deadline`` returns it)."""
    if spec in DEADLINE_PRESETS:
        if t_energy is None:
            raise UsageError(f"--deadline {spec} needs the energy optimum, which a target without a power model "
                             "lacks: give milliseconds or a factor such as 1.3x")
        return t_best + DEADLINE_PRESETS[spec] * (t_energy - t_best)
    return t_best * float(spec[:-1])


def parse_power(text: str | float | None) -> float | None:
    """``5W``, ``5000mW`` or a bare number of W -> mW (a Python number is taken as mW)."""
    if text is None:
        return None
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        m = re.fullmatch(rf"\s*({_NUM})\s*(W|w|mW|mw)?\s*", str(text))
        if not m:
            raise UsageError(f"malformed --power-cap {text!r}; use e.g. 5W, 5000mW or 5 (W)")
        value = float(m.group(1)) * (1.0 if (m.group(3) or "W").lower() == "mw" else 1e3)
    return _in_range("--power-cap", text, value, POWER_CAP_MAX_MW, f"100 kW ({POWER_CAP_MAX_MW / 1e3:.0f} W)", "5W")


def parse_hardware(items: Sequence[str] | Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``--hardware KNOB=VALUE[,KNOB=VALUE]`` (repeatable) -> {knob: value as written}; the space
    validates."""
    if items is None:
        return None
    if isinstance(items, Mapping):
        return dict(items)
    out: dict[str, Any] = {}
    for item in (part for group in items for part in group.split(",") if part.strip()):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"malformed --hardware {item!r}; use KNOB=VALUE, e.g. --hardware a57_cores=2")
        out[key.strip()] = value.strip()
    return out


def resolve_model(model: Any, input_shapes: Mapping[str, tuple[int, ...]] | None, seed: int = 0) -> Path:
    """A path to an ONNX file for a path, a zoo name or a torch.nn.Module."""
    if isinstance(model, (str, Path)):
        path = Path(model)
        if path.exists() or str(model).endswith(".onnx") or "/" in str(model):
            return path
        from . import zoo

        if str(model) in zoo.ZOO:
            return _zoo_model(str(model), seed)
        return path  # the frontend reports the missing file
    torch = sys.modules.get("torch")  # a Module can only exist if torch is loaded; never import it here
    if torch is not None and isinstance(model, torch.nn.Module):
        if not input_shapes or len(input_shapes) != 1:
            raise UsageError("compiling a torch.nn.Module needs input_shapes={'input': (1, 3, 224, 224)}")
        from . import zoo

        (name, shape), = input_shapes.items()
        out = Path(tempfile.mkdtemp(prefix="hetcc-module-")) / f"{type(model).__name__.lower()}.onnx"
        return zoo.export_module(model, shape, out)
    raise UsageError(f"cannot compile a {type(model).__name__}; pass a path to an .onnx file, a zoo name "
                     "or a torch.nn.Module")


def _zoo_model(name: str, seed: int) -> Path:
    """A zoo name given as MODEL: export once into the cache (~/.cache/hetcc/zoo) and reuse."""
    from . import zoo
    from .paths import cache_dir

    path = cache_dir() / "zoo" / f"seed{seed}" / f"{name}.onnx"  # the stem names the model
    if not path.exists():
        zoo.export(name, path, seed=seed)
    return path


@dataclass
class Analysis:
    """A model analysed for one target: plan it as often as you like, emit any plan."""

    program: Program
    target: Any
    problem: PlanningProblem
    timings: list[PassTiming] = field(default_factory=list)
    _reference: tuple[float, float] | None = None

    @property
    def name(self) -> str:
        return self.program.name

    # ---- objectives -----------------------------------------------------------------------
    def reference_latencies(self) -> tuple[float, float | None]:
        """(T_best, T_energy_opt): the fastest plan's latency and the energy optimum's (``dp``);
        T_energy_opt is None on a target without a power model."""
        if self._reference is None:
            self._reference = reference_latencies(self.problem, self.target.has_power_model)
        return self._reference

    def objective(self, metric: str = "latency", deadline: str | float | None = None,
                  power_cap: str | float | None = None) -> Objective:
        """An Objective with the deadline resolved to milliseconds (presets need ``dp`` runs)."""
        if metric not in METRICS:
            raise UsageError(f"unknown objective {metric!r}; choose one of {', '.join(METRICS)}")
        cap = parse_power(power_cap)
        if not self.target.has_power_model and (METRICS[metric].needs_power or cap is not None):
            raise UsageError(f"target {self.target.name!r} has no power model (its costs are measured, not "
                             "modelled): use --objective latency without --power-cap, or a modelled target "
                             "such as hikey970")
        ms, spec = parse_deadline(deadline)
        if spec is not None:
            if spec in DEADLINE_PRESETS and not self.target.has_power_model:
                raise UsageError(f"--deadline {spec} needs the energy optimum; target {self.target.name!r} "
                                 "has no power model: give milliseconds or a factor such as 1.3x")
            ms = preset_deadline_ms(spec, *self.reference_latencies())
        return Objective(metric=metric, deadline_ms=ms, power_cap_mw=cap, deadline_spec=spec)

    def problem_at(self, hardware: Mapping[str, Any] | None) -> PlanningProblem:
        """The problem with the board's knobs at ``hardware`` (unset knobs keep their default)."""
        if not hardware:
            return self.problem
        space = self.problem.hardware
        if space is None:
            raise UsageError(f"target {self.target.name!r} has no hardware knobs; drop --hardware")
        config = dict(self.problem.hardware_config or {})
        config.update(hardware)
        try:
            config = space.validate(config)
        except ValueError as exc:
            raise UsageError(f"--hardware: {exc}") from None
        return space.apply(self.problem, config)

    # ---- planning -------------------------------------------------------------------------
    def plan(self, objective: str | Objective = "latency", *, deadline: str | float | None = None,
             power_cap: str | float | None = None, planner: str = "auto",
             options: Mapping[str, Any] | None = None, seed: int = 0, budget: Budget | None = None,
             progress: Progress | None = None, allow_infeasible: bool = False,
             hardware: Mapping[str, Any] | None = None, cache_dir: str | Path | None = None) -> Plan:
        """Plan this model; raises InfeasibleError (exit 3) for a plan that breaks a limit unless
        ``allow_infeasible``."""
        obj = objective if isinstance(objective, Objective) else self.objective(objective, deadline, power_cap)
        if cache_dir is None:
            from .paths import cache_dir as root

            cache_dir = root() / "planners"
        ctx = PlanContext(check_seed(seed), budget=budget, progress=progress, cache_dir=cache_dir)
        return run_planner(self.problem_at(hardware), obj, planner, options, ctx, allow_infeasible=allow_infeasible)

    def emit(self, plans: Plan | Mapping[str, Plan], output_dir: str | Path, *,
             default_variant: str | None = None) -> Path:
        """Write the artifact: one plan, or several named variants of this model."""
        from .passes.codegen import emit_artifact

        if isinstance(plans, Plan):
            plans = {plans.planner or "plan": plans}
        out = emit_artifact(output_dir, self.program, self.target, dict(plans), default_variant=default_variant)
        from .why import write_why

        write_why(out, self.program)   # why.json: the legality reasons, for hetcc inspect --why
        return out


def analyse(model: Any, target: str | Path | Any = "hikey970", *,
            input_shapes: Mapping[str, tuple[int, ...]] | None = None, max_cut_tensors: int = 1, seed: int = 0,
            profile_repeats: int | None = None, profile_cache: bool = True,
            on_pass: Callable[[PassTiming], None] | None = None, dump_after: str | None = None) -> Analysis:
    """Load ``model`` (path, zoo name or torch.nn.Module) and run the analysis passes for ``target``."""
    from .frontend import load_model
    from .pipeline import PLAN_PASSES, analysis_passes
    from .targets import load_target

    if isinstance(max_cut_tensors, bool) or not isinstance(max_cut_tensors, int) or max_cut_tensors < 1:
        raise UsageError(f"--max-cut-tensors {max_cut_tensors!r}: give an integer of at least 1 (default 1)")
    if profile_repeats is not None and (isinstance(profile_repeats, bool) or not isinstance(profile_repeats, int)
                                        or profile_repeats < 1):
        raise UsageError(f"--profile-repeats {profile_repeats!r}: give an integer of at least 1 (or none: adaptive)")
    check_seed(seed)
    tgt = target if hasattr(target, "states") else load_target(target)
    passes = analysis_passes(tgt, max_cut_tensors=max_cut_tensors, profile_repeats=profile_repeats,
                             profile_cache=profile_cache)
    names = [p.name for p in passes] + list(PLAN_PASSES)
    if dump_after is not None and dump_after not in names:
        raise UsageError(f"--dump-after {dump_after!r}: no such pass; passes: {', '.join(names)}")
    if dump_after is not None:
        dump_path(dump_after)   # refuse an unusable dump file before the work, not after
    t0 = time.perf_counter()
    program = load_model(resolve_model(model, input_shapes, seed), input_shapes)
    load = PassTiming("load", time.perf_counter() - t0, f"{len(program.graph)} nodes")
    if on_pass is not None:
        on_pass(load)
    manager = PassManager(passes, on_pass=on_pass, dump_after=dump_after, dump=_dump)
    manager.run(program)
    from .pipeline import attach_hardware

    problem = attach_hardware(program.get(COSTS).problem(name=program.name), program, tgt)
    return Analysis(program=program, target=tgt, problem=problem, timings=[load, *manager.timings])


@dataclass
class CompileResult:
    """What ``compile`` returns: the chosen plan, the analysis, per-pass times, the artifact."""

    plan: Plan
    analysis: Analysis
    objective: Objective
    output_dir: Path | None
    timings: list[PassTiming] = field(default_factory=list)

    @property
    def program(self) -> Program:
        return self.analysis.program

    @property
    def target(self) -> Any:
        return self.analysis.target

    @property
    def total_seconds(self) -> float:
        return sum(t.seconds for t in self.timings)


def compile(model: Any, target: str | Path | Any = "hikey970", objective: str = "latency", *,
            deadline_ms: float | str | None = None, power_cap_mw: float | str | None = None,
            planner: str = "auto", planner_options: Mapping[str, Any] | None = None,
            output_dir: str | Path | None = None, input_shapes: Mapping[str, tuple[int, ...]] | None = None,
            max_cut_tensors: int = 1, seed: int = 0, profile_repeats: int | None = None,
            profile_cache: bool = True, allow_infeasible: bool = False, budget: Budget | None = None,
            progress: Progress | None = None, hardware: Mapping[str, Any] | None = None,
            variants: Sequence[str] | None = None,
            on_pass: Callable[[PassTiming], None] | None = None, dump_after: str | None = None) -> CompileResult:
    """Analyse, plan and (with ``output_dir``) emit in one call.

    ``deadline_ms``: ms as a number, or a string ('170ms', '0.17s', 'medium', '1.3x');
    ``power_cap_mw``: mW as a number, or a string ('5W', '5000mW'). ``variants``: planner names
    whose plans all go into the artifact (the first is the default). Raises HetccError subclasses
    on bad input and InfeasibleError when no plan meets the limits.
    """
    from .pipeline import Emit, Partition

    session = analyse(model, target, input_shapes=input_shapes, max_cut_tensors=max_cut_tensors, seed=seed,
                      profile_repeats=profile_repeats, profile_cache=profile_cache, on_pass=on_pass,
                      dump_after=dump_after)
    obj = session.objective(objective, deadline_ms, power_cap_mw)
    names = list(variants) if variants else [planner]

    def plan_all() -> dict[str, Plan]:
        plans = {}
        for name in names:
            p = session.plan(obj, planner=name, options=planner_options if len(names) == 1 else None, seed=seed,
                             budget=budget, progress=progress, allow_infeasible=allow_infeasible,
                             hardware=hardware)
            plans[name if variants else p.planner] = p
        return plans

    passes: list = [Partition(plan_all)]
    if output_dir is not None:
        passes.append(Emit(lambda plans: session.emit(plans, output_dir)))
    manager = PassManager(passes, on_pass=on_pass, dump_after=dump_after, dump=_dump)
    manager.run(session.program)
    plans = session.program.get(PLAN)
    return CompileResult(plan=next(iter(plans.values())), analysis=session, objective=obj,
                         output_dir=Path(output_dir) if output_dir is not None else None,
                         timings=session.timings + manager.timings)


@dataclass
class WorkloadResult:
    plan: WorkloadPlan
    analyses: list[Analysis]
    objective: Objective
    output_dir: Path | None
    seconds: float


def compile_workload(models: Sequence[Any], target: str | Path | Any = "hikey970", objective: str = "latency", *,
                     deadline_ms: float | str | None = None, power_cap_mw: float | str | None = None,
                     planner: str = "auto", planner_options: Mapping[str, Any] | None = None,
                     output_dir: str | Path | None = None, seed: int = 0, allow_infeasible: bool = False,
                     progress: Progress | None = None, **analyse_kw: Any) -> WorkloadResult:
    """Several models on one board: one analysis each, one workload plan, one artifact."""
    from .targets import load_target

    t0 = time.perf_counter()
    tgt = target if hasattr(target, "states") else load_target(target)
    analyses = [analyse(m, tgt, seed=seed, **analyse_kw) for m in models]
    names = [a.name for a in analyses]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UsageError(f"two models are named {dup[0]!r}; rename one file (the artifact keys models by name)")
    ms, spec = parse_deadline(deadline_ms)
    if spec is not None:
        raise UsageError("a workload takes an absolute --deadline (e.g. 100ms); presets are per model")
    obj = analyses[0].objective(objective, ms, power_cap_mw)
    workload = WorkloadProblem(tuple(a.problem for a in analyses), tuple(names))
    ctx = PlanContext(seed, progress=progress)
    wplan = run_planner(workload, obj, planner, planner_options, ctx, allow_infeasible=allow_infeasible)
    out = None
    if output_dir is not None:
        from .passes.codegen import emit_workload

        out = emit_workload(output_dir, tgt, [(n, a.program, p) for n, a, p in zip(names, analyses, wplan.plans)],
                            wplan)
        from .why import write_why_workload

        write_why_workload(out, [(n, a.program) for n, a in zip(names, analyses)])   # hetcc inspect --why
    return WorkloadResult(wplan, analyses, obj, out, time.perf_counter() - t0)


def _dump(program: Program, pass_name: str) -> None:
    """--dump-after PASS: write the analyses so far as JSON to ./hetcc-dump-PASS.json."""
    import dataclasses
    import json

    import numpy as np

    def enc(o: Any) -> Any:
        if dataclasses.is_dataclass(o):
            return {f.name: enc(getattr(o, f.name)) for f in dataclasses.fields(o)}
        if isinstance(o, np.ndarray):
            return enc(o.tolist())        # inf/nan items become null (strict JSON)
        if isinstance(o, dict):
            return {str(k): enc(v) for k, v in o.items()}
        if isinstance(o, (list, tuple, set, frozenset)):
            return [enc(v) for v in (sorted(o) if isinstance(o, (set, frozenset)) else o)]
        if isinstance(o, (np.floating, float)):
            return float(o) if np.isfinite(o) else None
        if isinstance(o, (np.integer,)):
            return int(o)
        if isinstance(o, (str, int, bool)) or o is None:
            return o
        return repr(o)

    from .fsutil import atomic_write_text

    path = dump_path(pass_name)
    text = json.dumps({k: enc(v) for k, v in program.analyses.items()}, indent=1, allow_nan=False)
    try:
        atomic_write_text(path, text)   # a temporary file renamed over it: never half-written
    except OSError as exc:
        raise UsageError(f"--dump-after {pass_name}: cannot write {path} ({exc.strerror or exc}); "
                         "run hetcc in a writable directory") from None


def dump_path(pass_name: str) -> Path:
    """``./hetcc-dump-PASS.json``, which ``--dump-after PASS`` (re)writes; refused when that name is
    a directory, a symlink or anything but a regular file (it is never followed or replaced)."""
    from .fsutil import check_replaceable_file

    path = Path(f"hetcc-dump-{pass_name}.json")
    check_replaceable_file(path, f"--dump-after {pass_name}")
    return path
