"""Python API: analyse once, plan many times, emit (one module: its entry points share unit parsing, model resolution).

    session = hetcc.analyse("model.onnx", target="hikey970")      # load + analysis passes, once
    plan = session.plan("energy", deadline="medium", planner="exact")
    session.emit(plan, "build/")                                  # slices + manifest
    hetcc.compile(...)                                            # all three in one call

Units are the command line's. ``deadline`` takes what ``--deadline`` takes: ``170ms``, ``0.17s``,
``170`` (ms), HERTI's presets ``short|medium|long`` (T_best + zeta * (T_energy_opt - T_best),
zeta = 0.25 / 0.5 / 1.0, both ends from ``dp``) or ``1.3x`` (relative to the fastest plan); a
Python number is milliseconds. ``power_cap`` takes what ``--power-cap`` takes: ``5W``,
``5000mW`` or ``"5"`` (W); a Python number is refused there (W or mW? say which). Bare numbers go
to the keywords with their unit in the name: ``deadline_ms=170``, ``power_cap_mw=5000``, which
also take a string with its unit (``deadline_ms="medium"``, ``power_cap_mw="5W"``).

The heavy passes and planners are imported inside the functions.
"""
from __future__ import annotations

import math
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from hetcc.core.errors import UsageError
from hetcc.core.limits import check_seed
from hetcc.compiler.passmanager import PassManager, PassTiming
from hetcc.planners import Budget, Objective, Plan, PlanContext, PlanningProblem, Progress, WorkloadPlan
from hetcc.planners import WorkloadProblem
from hetcc.planners.metrics import WORKLOAD_METRICS, get_metric, metric_names
from hetcc.planners import plan as run_planner
from hetcc.planners import resolve as resolve_planner
from hetcc.compiler.program import COSTS, PLAN, Program

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
    from hetcc.planners.dp import optimal

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


def parse_power(text: str | None, flag: str = "--power-cap") -> float | None:
    """``5W``, ``5000mW`` or a bare ``5`` (W, as ``--power-cap 5``) -> mW. A Python number is
    refused: use ``power_cap_mw=`` (see ``limits``)."""
    if text is None:
        return None
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        raise UsageError(f"{flag}={text!r} is a bare number: say the unit, {flag}='{text:g}W' "
                         f"(as --power-cap {text:g}) or power_cap_mw={text:g}")
    m = re.fullmatch(rf"\s*({_NUM})\s*(W|w|mW|mw)?\s*", str(text))
    if not m:
        raise UsageError(f"malformed {flag} {text!r}; use e.g. 5W, 5000mW or 5 (W)")
    value = float(m.group(1)) * (1.0 if (m.group(3) or "W").lower() == "mw" else 1e3)
    return _in_range(flag, text, value, POWER_CAP_MAX_MW, f"100 kW ({POWER_CAP_MAX_MW / 1e3:.0f} W)", "5W")


def limits(deadline: str | float | None = None, power_cap: str | None = None, *,
           deadline_ms: float | str | None = None,
           power_cap_mw: float | str | None = None) -> tuple[tuple[float | None, str | None], float | None]:
    """The API's deadline and power cap in the CLI's units: ((ms, relative spec), cap in mW).

    ``deadline`` is read as ``--deadline`` (a number: ms); ``power_cap`` as ``--power-cap`` (a
    string; a bare number is refused as ambiguous). ``deadline_ms`` / ``power_cap_mw`` take a
    number in the unit of their name, or a string that carries its unit (``"5W"``; a unitless
    string is refused for ``power_cap_mw``, since ``--power-cap 5`` means 5 W). Giving both
    forms of one limit is refused."""
    for a, b, va, vb in (("deadline", "deadline_ms", deadline, deadline_ms),
                         ("power_cap", "power_cap_mw", power_cap, power_cap_mw)):
        if va is not None and vb is not None:
            raise UsageError(f"give {a}= or {b}=, not both ({a}={va!r}, {b}={vb!r})")
    dl = parse_deadline(deadline if deadline is not None else deadline_ms)
    if power_cap_mw is None:
        return dl, parse_power(power_cap, "power_cap")
    if isinstance(power_cap_mw, bool) or not isinstance(power_cap_mw, (int, float, str)):
        raise UsageError(f"power_cap_mw={power_cap_mw!r}: give a number of mW or a string with its unit, e.g. '5W'")
    if isinstance(power_cap_mw, str):
        if not re.search(r"[wW]\s*$", power_cap_mw):
            raise UsageError(f"power_cap_mw={power_cap_mw!r}: a string needs its unit ('5W' or '5000mW'); "
                             "or pass the number of mW")
        return dl, parse_power(power_cap_mw, "power_cap_mw")
    value = float(power_cap_mw)
    return dl, _in_range("power_cap_mw", power_cap_mw, value, POWER_CAP_MAX_MW, f"{POWER_CAP_MAX_MW:.0f} mW", "5000")


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


def resolve_model(model: Any, input_shapes: Mapping[str, tuple[int, ...]] | Sequence[int] | None, seed: int = 0,
                  *, progress: Progress | None = None, timings: list[PassTiming] | None = None) -> Path:
    """A path to an ONNX file for a path, a zoo name or a torch.nn.Module (the last two exported
    into hetcc's cache, under a progress line, the time appended to ``timings`` as ``export``)."""
    if isinstance(model, (str, Path)):
        path = Path(model)
        if path.exists() or str(model).endswith(".onnx") or "/" in str(model):
            return path
        from hetcc.compiler import zoo

        if str(model) in zoo.ZOO:
            return _exported(f"exporting zoo model {model} (first use; cached)", timings, progress,
                             lambda: zoo_model(str(model), seed), lambda: _zoo_path(str(model), seed))
        return path  # the frontend reports the missing file
    torch = sys.modules.get("torch")  # a Module can only exist if torch is loaded; never import it here
    if torch is not None and isinstance(model, torch.nn.Module):
        name, shape = module_input(model, input_shapes)
        return _exported(f"exporting {type(model).__name__} to ONNX", timings, progress,
                         lambda: _module_model(model, name, shape, seed), lambda: None)
    raise UsageError(f"cannot compile a {type(model).__name__}; pass a path to an .onnx file, a zoo name "
                     "or a torch.nn.Module")


def zoo_name(model: Any) -> str | None:
    """The zoo name ``model`` stands for: a zoo name ``resolve_model`` exports, or the file it
    exports it to (hetcc's cache, ``zoo/seedN/NAME.onnx``, as a sweep compiles it); else None.
    Memory rows without a sha256 name a model this way."""
    if not isinstance(model, (str, Path)):
        return None
    from hetcc.compiler import zoo

    if Path(model).exists() or str(model).endswith(".onnx") or "/" in str(model):
        from hetcc.core.paths import cache_dir

        try:
            seed, name = Path(model).resolve().relative_to((cache_dir() / "zoo").resolve()).parts
        except ValueError:
            return None
        stem = name[:-len(".onnx")] if name.endswith(".onnx") else None
        return stem if seed.startswith("seed") and stem in zoo.ZOO else None
    return str(model) if str(model) in zoo.ZOO else None


def _exported(label: str, timings: list[PassTiming] | None, progress: Progress | None,
              export: Callable[[], Path], cached: Callable[[], Path | None]) -> Path:
    """Run ``export`` under a progress line ``label`` and record it as the ``export`` step (a
    model already in the cache is no step)."""
    from hetcc.compiler.passmanager import step

    hit = cached()
    if hit is not None and hit.exists():
        return hit
    t0 = time.perf_counter()
    with step(progress, label):
        path = export()
    if timings is not None:
        timings.append(PassTiming("export", time.perf_counter() - t0, f"-> {path}"))
    return path


def module_input(module: Any, input_shapes: Mapping[str, Sequence[int]] | Sequence[int] | None
                 ) -> tuple[str, tuple[int, ...]]:
    """(input name, shape) for exporting ``module``: ``{'x': (1, 3, 224, 224)}`` names it;
    a bare shape takes the name of ``forward``'s first parameter."""
    if isinstance(input_shapes, Mapping):
        if len(input_shapes) != 1:
            raise UsageError("compiling a torch.nn.Module needs its one input's shape: input_shapes=(1, 3, 224, 224) "
                             f"or {{'x': (1, 3, 224, 224)}}; got {dict(input_shapes)!r}")
        (name, shape), = input_shapes.items()
        return str(name), tuple(shape)
    if input_shapes is None or isinstance(input_shapes, (str, bytes)):
        raise UsageError("compiling a torch.nn.Module needs its input's shape: input_shapes=(1, 3, 224, 224) "
                         "(or {'x': (1, 3, 224, 224)} to name the input)")
    import inspect

    try:
        params = [p for p in inspect.signature(module.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return (params[0].name if params else "input"), tuple(input_shapes)


def _module_model(module: Any, input_name: str, shape: tuple[int, ...], seed: int) -> Path:
    """A torch.nn.Module exported into the cache (~/.cache/hetcc/modules/SHA/NAME.onnx, keyed
    by the ONNX bytes: the same module is one file however often it is compiled, and ``hetcc run
    --verify`` finds the unsliced model there); no temporary file is left behind."""
    from hetcc.compiler import zoo
    from hetcc.files.atomic import write_file
    from hetcc.core.paths import cache_dir

    import hashlib

    data = zoo.module_onnx_bytes(module, shape, seed=seed, input_name=input_name)
    digest = hashlib.sha256(data).hexdigest()[:16]
    path = cache_dir() / "modules" / digest / f"{type(module).__name__.lower()}.onnx"
    if not path.is_file():
        write_file(path, data, "exporting the module", "set HETCC_CACHE_DIR to a writable directory")
    return path


def _zoo_path(name: str, seed: int) -> Path:
    from hetcc.core.paths import cache_dir

    return cache_dir() / "zoo" / f"seed{seed}" / f"{name}.onnx"  # the stem names the model


def zoo_model(name: str, seed: int = 0) -> Path:
    """Zoo model ``name`` (weights from ``seed``) in hetcc's cache (~/.cache/hetcc/zoo): exported
    there on first use, reused after (a zoo name given as MODEL, ``hetcc zoo export``)."""
    from hetcc.compiler import zoo

    path = _zoo_path(name, seed)
    if not path.exists():
        zoo.export(name, path, seed=seed)
    return path


def board_of(target: str | Path | Any) -> tuple[Any, Any]:
    """(board, measurements) of a ``target``: a Target as it is; a built-in name or a .toml path
    loaded; a measurement file (``*.csv``, ``hetcc.measure.measured_target``) read: its board (host) and
    the Measurements the costs pass plans with instead of profiling."""
    from hetcc.measure.measured_target import Measurements, is_measurement_file, load_measurements

    if isinstance(target, Measurements):
        return target.board, target
    if hasattr(target, "states"):
        return target, None
    if is_measurement_file(target):
        m = load_measurements(target)
        return m.board, m
    from hetcc.targets import load_target

    return load_target(target), None


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

    @property
    def reported_memory(self) -> dict[str, Any]:
        """{device: ``hetcc.passes.costs.ReportedMemory``}: the capacity rule each memory row
        (``observations=``) set for this model; {} when none applied."""
        from hetcc.passes.costs import reported_memory

        return reported_memory(self.program)

    # ---- objectives -----------------------------------------------------------------------
    def reference_latencies(self) -> tuple[float, float | None]:
        """(T_best, T_energy_opt): the fastest plan's latency and the energy optimum's (``dp``);
        T_energy_opt is None on a target without a power model."""
        if self._reference is None:
            self._reference = reference_latencies(self.problem, self.target.has_power_model)
        return self._reference

    def objective(self, metric: str = "latency", deadline: str | float | None = None,
                  power_cap: str | None = None, *, deadline_ms: float | str | None = None,
                  power_cap_mw: float | str | None = None) -> Objective:
        """An Objective with the deadline resolved to milliseconds (presets need ``dp`` runs);
        units as in the module docstring (``limits``)."""
        if metric not in metric_names():
            raise UsageError(f"unknown objective {metric!r}; choose one of {', '.join(metric_names())}")
        (ms, spec), cap = limits(deadline, power_cap, deadline_ms=deadline_ms, power_cap_mw=power_cap_mw)
        if not self.target.has_power_model and (get_metric(metric).needs_power or cap is not None):
            raise UsageError(f"target {self.target.name!r} has no power model (its costs are measured, not "
                             "modelled): use --objective latency without --power-cap, or a modelled target "
                             "such as hikey970")
        if spec is not None:
            if spec in DEADLINE_PRESETS and not self.target.has_power_model:
                raise UsageError(f"--deadline {spec} needs the energy optimum; target {self.target.name!r} "
                                 "has no power model: give milliseconds or a factor such as 1.3x")
            ms = preset_deadline_ms(spec, *self.reference_latencies())
        return Objective(metric=metric, deadline_ms=ms, power_cap_mw=cap, deadline_spec=spec)

    # ---- reading a plan -------------------------------------------------------------------
    def slices(self, plan: Plan) -> list[dict[str, Any]]:
        """``plan``'s slices by name: device, frequency (MHz; None for a device without DVFS
        levels), first and last layer (0-based, inclusive)."""
        states = self.problem.states
        return [{"device": states.device[s.state], "frequency_mhz": float(states.freq_mhz[s.state]) or None,
                 "first_layer": s.first, "last_layer": s.last} for s in plan.slices]

    def describe(self, plan: Plan) -> str:
        """``plan`` in words: its cost, then one line per slice with device and MHz."""
        energy = f", {plan.energy_mj:.2f} mJ" if self.target.has_power_model else ""
        n = len(plan.slices)
        lines = [f"{plan.planner or 'plan'}: {n} slice{'s' * (n != 1)} of {self.name} on {self.target.name}, "
                 f"{plan.latency_ms:.2f} ms{energy}" + ("" if plan.feasible else " INFEASIBLE: " +
                                                       "; ".join(plan.violations))]
        for s in self.slices(plan):
            mhz = f" @ {s['frequency_mhz']:g} MHz" if s["frequency_mhz"] else ""
            lines.append(f"  layers {s['first_layer']}-{s['last_layer']}: {s['device']}{mhz}")
        return "\n".join(lines)

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
             power_cap: str | None = None, deadline_ms: float | str | None = None,
             power_cap_mw: float | str | None = None, planner: str = "auto",
             options: Mapping[str, Any] | None = None, seed: int = 0, budget: Budget | None = None,
             progress: Progress | None = None, allow_infeasible: bool = False,
             hardware: Mapping[str, Any] | None = None, cache_dir: str | Path | None = None) -> Plan:
        """Plan this model; raises InfeasibleError (exit 3) for a plan that breaks a limit unless
        ``allow_infeasible``."""
        if isinstance(objective, Objective):
            if any(v is not None for v in (deadline, power_cap, deadline_ms, power_cap_mw)):
                raise UsageError("an Objective carries its own deadline and power cap; drop deadline=/power_cap=")
            obj = objective
        else:
            obj = self.objective(objective, deadline, power_cap, deadline_ms=deadline_ms, power_cap_mw=power_cap_mw)
        if cache_dir is None:
            from hetcc.core.paths import cache_dir as root

            cache_dir = root() / "planners"
        ctx = PlanContext(check_seed(seed), budget=budget, progress=progress, cache_dir=cache_dir)
        if hardware and "knobs" not in (options or {}):
            from hetcc.planners.registry import resolve

            if resolve(planner, obj, "model").split(":")[0] == "exact":
                # knobs the user set are kept: exact's default (knobs=search) would choose its own
                options = {**(options or {}), "knobs": "fixed"}
        return run_planner(self.problem_at(hardware), obj, planner, options, ctx, allow_infeasible=allow_infeasible)

    def emit(self, plans: Plan | Mapping[str, Plan], output_dir: str | Path, *,
             default_variant: str | None = None, timings: Sequence[PassTiming] | None = None,
             precisions: Mapping[str, str] | None = None, converter: Any = None,
             policy: str | Path | None = None) -> Path:
        """Write the artifact: one plan, or several named variants of this model; ``timings``
        (pass timings, or ``[]``) also writes ``timings.json`` (wall times: the one file that
        differs between two compiles of the same inputs). ``precisions`` (variant -> float16 or
        int8; ``converter`` a ``hetcc.passes.precision.Converter``) converts a variant's slices;
        ``policy`` a file the artifact ships in ``policy/`` (``passes.codegen.emit_artifact``)."""
        from hetcc.passes.codegen import emit_artifact

        if isinstance(plans, Plan):
            plans = {plans.planner or "plan": plans}
        return emit_artifact(output_dir, self.program, self.target, dict(plans), default_variant=default_variant,
                             timings=timings, precisions=precisions, converter=converter,
                             policy=Path(policy) if policy is not None else None)


def load_program(model: Any, input_shapes: Mapping[str, tuple[int, ...]] | Sequence[int] | None = None,
                 seed: int = 0, *, progress: Progress | None = None,
                 on_pass: Callable[[PassTiming], None] | None = None,
                 timings: list[PassTiming] | None = None) -> Program:
    """``model`` (path, zoo name or torch.nn.Module; see ``analyse``) exported if need be, loaded,
    checked and shape-inferred, before any analysis pass; each step's time is appended to
    ``timings`` and passed to ``on_pass``."""
    from hetcc.compiler.frontend import load_model
    from hetcc.compiler.passmanager import step

    timings = [] if timings is None else timings
    path = resolve_model(model, input_shapes, seed, progress=progress, timings=timings)
    if timings and on_pass is not None:
        on_pass(timings[-1])
    shapes = input_shapes if isinstance(input_shapes, Mapping) or input_shapes is None else None
    if not isinstance(model, (str, Path)):
        shapes = None            # an exported module has static shapes, under the name given
    elif shapes is None and input_shapes is not None:
        raise UsageError(f"input_shapes={input_shapes!r}: name the input of an ONNX model, "
                         "e.g. {'x': (1, 3, 224, 224)} (a bare shape is for a torch.nn.Module)")
    t0 = time.perf_counter()
    with step(progress, f"loading {path.name} (checks, shape inference)"):
        program = load_model(path, shapes)
    load = PassTiming("load", time.perf_counter() - t0, f"{len(program.graph)} nodes")
    timings.append(load)
    if on_pass is not None:
        on_pass(load)
    return program


def analyse(model: Any, target: str | Path | Any = "hikey970", *,
            input_shapes: Mapping[str, tuple[int, ...]] | Sequence[int] | None = None, max_cut_tensors: int = 1,
            seed: int = 0, profile_repeats: int | None = None, profile_cache: bool = True,
            on_pass: Callable[[PassTiming], None] | None = None, dump_after: str | None = None,
            progress: Progress | None = None, dump_beside: str | Path | None = None,
            observations: str | Path | None = "board") -> Analysis:
    """Load ``model`` (path, zoo name or torch.nn.Module) and run the analysis passes for ``target``.

    ``input_shapes``: ``{name: shape}`` fixes dynamic input shapes; for a torch.nn.Module, its
    input's shape (a bare shape takes the name of ``forward``'s first parameter). ``progress``
    (``hetcc.RichProgress()`` for bars on stderr) shows each step while it runs; ``on_pass`` is
    called after each with its wall time (export of a zoo model or module, load, every pass).
    ``dump_after`` writes beside the artifact ``dump_beside`` (``dump_path``).
    ``observations`` (``--observations``): the memory rows whose reported model sizes the
    devices' capacity rules charge (``hetcc.measure.measured_target``): ``"board"`` (the
    default) the board's own (the built-in hikey970: MOSAIC's Table I sizes), None or
    ``"none"`` none, else an observations file or a built-in file's name."""
    from hetcc.compiler.pipeline import PLAN_PASSES, analysis_passes

    if isinstance(max_cut_tensors, bool) or not isinstance(max_cut_tensors, int) or max_cut_tensors < 1:
        raise UsageError(f"--max-cut-tensors {max_cut_tensors!r}: give an integer of at least 1 (default 1)")
    if profile_repeats is not None and (isinstance(profile_repeats, bool) or not isinstance(profile_repeats, int)
                                        or profile_repeats < 1):
        raise UsageError(f"--profile-repeats {profile_repeats!r}: give an integer of at least 1 (or none: adaptive)")
    check_seed(seed)
    tgt, measurements = board_of(target)
    passes = analysis_passes(tgt, max_cut_tensors=max_cut_tensors, profile_repeats=profile_repeats,
                             profile_cache=profile_cache, measurements=measurements,
                             memory=_memory_lookup(observations, tgt, measurements, model))
    names = [p.name for p in passes] + list(PLAN_PASSES)
    if dump_after is not None and dump_after not in names:
        raise UsageError(f"--dump-after {dump_after!r}: no such pass; passes: {', '.join(names)}")
    if dump_after is not None:
        dump_path(dump_after, dump_beside)   # refuse an unusable dump file before the work, not after
    timings: list[PassTiming] = []
    program = load_program(model, input_shapes, seed, progress=progress, on_pass=on_pass, timings=timings)
    manager = PassManager(passes, on_pass=on_pass, dump_after=dump_after, progress=progress,
                          dump=lambda prog, name: _dump(prog, name, dump_beside))
    manager.run(program)
    from hetcc.compiler.pipeline import attach_hardware

    problem = attach_hardware(program.get(COSTS).problem(name=program.name), program, tgt)
    switch = {d.name: float(getattr(d, "switch_ms", 0.0)) for d in getattr(tgt, "devices", ())}
    if any(switch.values()):   # devices.<name>.switch_ms, per state: what workload planners charge
        problem = problem.replace(switch_ms=[switch.get(dev, 0.0) for dev in problem.states.device])
    return Analysis(program=program, target=tgt, problem=problem, timings=[*timings, *manager.timings])


def _memory_lookup(observations: str | Path | None, board: Any, measurements: Any, model: Any) -> Any:
    """The costs pass's memory rows for ``model`` on ``board`` (None: no rows), read and checked
    now, before the work (``hetcc.measure.measured_target.load_memory_rows``)."""
    from hetcc.measure.measured_target import BOARD_ROWS, NO_ROWS, load_memory_rows

    explicit = observations is not None and str(observations) not in (BOARD_ROWS, NO_ROWS)
    if measurements is not None:
        if explicit:
            raise UsageError("--observations applies memory rows to a modelled board's capacity; --target FILE.csv "
                             "plans host with measured costs: drop --observations")
        return None
    rows = load_memory_rows(observations, board)
    if rows is None:
        return None
    if getattr(board, "knobs", None):
        raise UsageError(f"--observations: {board.name} has hardware knobs, which recompute its capacities; memory "
                         "rows apply to a board without knobs: drop --observations")
    zoo = zoo_name(model)
    return lambda program: rows.for_model(board, program.source_sha256, zoo, program.source_path)


@dataclass
class CompileResult:
    """What ``compile`` returns: the chosen plan, the analysis, per-step times, the artifact.

    ``seconds``: the wall time of the whole call (export, load, passes, planning, codegen and
    what lies between them), so ``seconds >= sum(t.seconds for t in timings)``."""

    plan: Plan
    analysis: Analysis
    objective: Objective
    output_dir: Path | None
    timings: list[PassTiming] = field(default_factory=list)
    seconds: float = 0.0
    #: a policy compile's (``--planner autoscale``) actions, exclusions and policy file
    #: (``hetcc.compiler.autoscale.PolicyVariants``); None otherwise
    policy: Any = None

    @property
    def program(self) -> Program:
        return self.analysis.program

    @property
    def target(self) -> Any:
        return self.analysis.target

    def __repr__(self) -> str:
        """A short summary (the analyses behind it are hundreds of KB as text)."""
        p = self.plan
        energy = f", {p.energy_mj:.4g} mJ" if p.energy_mj == p.energy_mj and p.energy_mj is not None else ""
        out = f", wrote {self.output_dir}" if self.output_dir is not None else ""
        return (f"CompileResult({self.analysis.name} on {self.target.name}: {p.planner or 'plan'} "
                f"{len(p.slices)} slice(s), {p.latency_ms:.4g} ms{energy}"
                f"{'' if p.feasible else ', INFEASIBLE'}; {self.seconds:.2f} s{out})")

    @property
    def plans(self) -> dict[str, Plan]:
        """Every plan made (one, or one per variant), by name."""
        return dict(self.program.get(PLAN))

    def describe(self) -> str:
        """The plan(s) in words: devices and MHz per slice, not state indices."""
        return "\n".join(self.analysis.describe(p) for p in self.plans.values())

    def __str__(self) -> str:
        return self.describe()


def compile(model: Any, target: str | Path | Any = "hikey970", objective: str | None = "latency", *,
            deadline: str | float | None = None, power_cap: str | None = None,
            deadline_ms: float | str | None = None, power_cap_mw: float | str | None = None,
            planner: str = "auto", planner_options: Mapping[str, Any] | None = None,
            output_dir: str | Path | None = None,
            input_shapes: Mapping[str, tuple[int, ...]] | Sequence[int] | None = None,
            max_cut_tensors: int = 1, seed: int = 0, profile_repeats: int | None = None,
            profile_cache: bool = True, allow_infeasible: bool = False, budget: Budget | None = None,
            progress: Progress | None = None, hardware: Mapping[str, Any] | None = None,
            variants: Sequence[str] | None = None,
            on_pass: Callable[[PassTiming], None] | None = None, dump_after: str | None = None,
            write_timings: bool = False, observations: str | Path | None = "board",
            min_accuracy: float | str | None = None, calibration_data: str | Path | None = None) -> CompileResult:
    """Analyse, plan and (with ``output_dir``) emit in one call.

    ``deadline`` / ``power_cap``: as ``--deadline`` / ``--power-cap`` ('170ms', 'medium', '1.3x';
    '5W', '5000mW'); ``deadline_ms`` / ``power_cap_mw``: numbers in the unit of their name (see
    ``limits``). ``variants``: planner names whose plans all go into the artifact (the first is
    the default). Raises HetccError subclasses on bad input and InfeasibleError when no plan
    meets the limits. The artifact is the same, byte for byte, for the same inputs;
    ``write_timings`` adds ``timings.json`` (wall times). ``dump_after`` writes beside
    ``output_dir`` (``dump_path``). ``observations``: the memory rows (``analyse``). ``objective``
    None: energy on a target with a power model, else latency.

    A planner of kind ``policy`` (``autoscale``) writes one variant per action and the policy
    file (``hetcc.compiler.autoscale``): the deadline is its QoS target (default 50 ms),
    ``min_accuracy`` (a fraction or ``"90%"``) leaves out low-precision variants whose agreement
    with FP32 is below it, ``calibration_data`` a directory of ``NAME.npy`` INT8 calibration inputs.
    """
    from hetcc.compiler.pipeline import Emit, Partition

    t_start = time.perf_counter()
    policy = _is_policy(planner, variants)
    if policy and deadline is None and deadline_ms is None:
        from hetcc.compiler.autoscale import DEFAULT_QOS

        deadline = DEFAULT_QOS
    _check_policy_args(planner, policy, min_accuracy, calibration_data, planner_options)
    if policy and hardware:
        raise UsageError(f"--hardware with --planner {planner}: its variants are the board's device states at its "
                         "default knob configuration; drop --hardware")
    limits(deadline, power_cap, deadline_ms=deadline_ms, power_cap_mw=power_cap_mw)  # refused before the work
    for name in (variants or [planner]):
        _check_planner(name, "policy" if policy else "model", objective, planner_options if not variants else None)
    session = analyse(model, target, input_shapes=input_shapes, max_cut_tensors=max_cut_tensors, seed=seed,
                      profile_repeats=profile_repeats, profile_cache=profile_cache, on_pass=on_pass,
                      dump_after=dump_after, progress=progress, dump_beside=output_dir, observations=observations)
    if objective is None:   # a policy's default: energy where the target models power
        objective = "energy" if session.target.has_power_model else "latency"
    obj = session.objective(objective, deadline, power_cap, deadline_ms=deadline_ms, power_cap_mw=power_cap_mw)
    names = list(variants) if variants else [planner]
    built: list[Any] = []

    def plan_all() -> dict[str, Plan]:
        if policy:
            from hetcc.compiler.autoscale import policy_variants

            ctx = PlanContext(check_seed(seed), budget=budget, progress=progress)
            built.append(policy_variants(session, obj, planner_options, min_accuracy=min_accuracy,
                                         calibration_data=calibration_data, seed=seed, ctx=ctx))
            return built[0].plans
        plans = {}
        for name in names:
            p = session.plan(obj, planner=name, options=planner_options if len(names) == 1 else None, seed=seed,
                             budget=budget, progress=progress, allow_infeasible=allow_infeasible,
                             hardware=hardware)
            plans[name if variants else p.planner] = p
        return plans

    limit = f"budget {budget.describe()}" if budget is not None and budget.limited else \
        "no budget: --budget-seconds bounds a search"
    passes: list = [Partition(plan_all, label=f"planning ({', '.join(names)}; {limit})")]
    if output_dir is not None:
        def emit(plans: dict[str, Plan]) -> Path:
            timings = [*session.timings, *manager.timings] if write_timings else None
            if built:
                return built[0].emit(session, output_dir, timings)
            return session.emit(plans, output_dir, timings=timings)

        passes.append(Emit(emit, label=f"writing {output_dir}"))
    manager = PassManager(passes, on_pass=on_pass, dump_after=dump_after, progress=progress,
                          dump=lambda prog, name: _dump(prog, name, output_dir))
    manager.run(session.program)
    plans = session.program.get(PLAN)
    return CompileResult(plan=plans[built[0].default] if built else next(iter(plans.values())), analysis=session,
                         objective=obj, output_dir=Path(output_dir) if output_dir is not None else None,
                         timings=session.timings + manager.timings, seconds=time.perf_counter() - t_start,
                         policy=built[0] if built else None)


def _is_policy(planner: str, variants: Sequence[str] | None) -> bool:
    """``planner`` is a run-time policy's (kind ``policy``: ``autoscale``)."""
    from hetcc.planners.registry import get_spec

    return not variants and planner != "auto" and get_spec(planner).kind == "policy"


def _check_policy_args(planner: str, policy: bool, min_accuracy: Any, calibration_data: Any,
                       options: Mapping[str, Any] | None = None) -> None:
    """--min-accuracy, --calibration-data and a shipped Q-table (``qtable=``) checked before the
    work; the first two refused for a planner that makes no low-precision variants."""
    if not policy:
        given = [f for f, v in (("--min-accuracy", min_accuracy), ("--calibration-data", calibration_data))
                 if v is not None]
        if given:
            raise UsageError(f"{given[0]} applies to a planner that makes low-precision variants (--planner "
                             f"autoscale), not {planner}; drop it")
        return
    from hetcc.compiler.autoscale import parse_accuracy
    from hetcc.passes.precision import check_calibration_dir

    if min_accuracy is not None:
        parse_accuracy(min_accuracy)
    check_calibration_dir(calibration_data)
    if (options or {}).get("qtable"):
        from hetcc.compiler.autoscale import check_qtable

        check_qtable(str(options["qtable"]))


@dataclass
class WorkloadResult:
    plan: WorkloadPlan
    analyses: list[Analysis]
    objective: Objective
    output_dir: Path | None
    seconds: float
    timings: list[PassTiming] = field(default_factory=list)

    def __repr__(self) -> str:
        """A short summary (the analyses behind it are hundreds of KB as text)."""
        target = self.analyses[0].target.name if self.analyses else "?"
        out = f", wrote {self.output_dir}" if self.output_dir is not None else ""
        return (f"WorkloadResult({len(self.analyses)} models ({', '.join(self.plan.names)}) on {target}: "
                f"{self.plan.planner or 'plan'}{'' if self.plan.feasible else ', INFEASIBLE'}; "
                f"{self.seconds:.2f} s{out})")


def compile_workload(models: Sequence[Any], target: str | Path | Any = "hikey970", objective: str | None = None, *,
                     deadline: str | float | None = None, power_cap: str | None = None,
                     deadline_ms: float | str | None = None, power_cap_mw: float | str | None = None,
                     planner: str = "auto", planner_options: Mapping[str, Any] | None = None,
                     output_dir: str | Path | None = None, seed: int = 0, allow_infeasible: bool = False,
                     progress: Progress | None = None, write_timings: bool = False, budget: Budget | None = None,
                     **analyse_kw: Any) -> WorkloadResult:
    """Several models on one board: one analysis each, one workload plan, one artifact (limits
    in the units of ``compile``). A relative deadline (``medium``, ``1.3x``) is each model's own,
    from its fastest plan (and energy optimum), so the models are planned each with its own;
    ``independent`` is the workload planner that takes one.

    ``objective`` None: the named planner's first metric (``overall`` for the contention planners:
    ga, optimum, all-gpu, rr, mosaic), ``latency`` for ``auto``. ``auto`` is ``independent`` for
    latency, energy or edp; for throughput, fairness or overall ``optimum`` when the mix is small
    enough for it (``registry.AUTO_OPTIMUM_SPACE``), else ``ga``. ``budget`` bounds the planner
    (a search such as ga or optimum stops with its best so far) as in ``compile``."""
    from hetcc.compiler.passmanager import step

    t0 = time.perf_counter()
    objective = default_workload_objective(planner) if objective is None else objective
    _workload_limits(objective, planner, planner_options, deadline, power_cap, deadline_ms,
                     power_cap_mw)                   # its errors before minutes of analysis
    tgt, measurements = board_of(target)
    analyses = [analyse(m, measurements or tgt, seed=seed, progress=progress, **analyse_kw) for m in models]
    names = [a.name for a in analyses]
    timings = [t for a in analyses for t in a.timings]
    t1 = time.perf_counter()
    with step(progress, f"planning the workload ({planner})"):
        wplan, obj = plan_workload(analyses, objective, deadline=deadline, power_cap=power_cap,
                                   deadline_ms=deadline_ms, power_cap_mw=power_cap_mw, planner=planner,
                                   planner_options=planner_options, seed=seed, budget=budget,
                                   allow_infeasible=allow_infeasible, progress=progress)
    timings.append(PassTiming("partition", time.perf_counter() - t1, f"{wplan.planner}: {len(names)} models"))
    out = None
    if output_dir is not None:
        from hetcc.passes.codegen import emit_workload

        t1 = time.perf_counter()
        with step(progress, f"writing {output_dir}"):
            out = emit_workload(output_dir, tgt, [(n, a.program, p) for n, a, p in zip(names, analyses, wplan.plans)],
                                wplan, timings=list(timings) if write_timings else None)
        timings.append(PassTiming("codegen", time.perf_counter() - t1, f"-> {out}"))
    return WorkloadResult(wplan, analyses, obj, out, time.perf_counter() - t0, timings)


def _workload_limits(objective: str, planner: str, planner_options: Mapping[str, Any] | None,
                     deadline: str | float | None, power_cap: str | None, deadline_ms: float | str | None,
                     power_cap_mw: float | str | None) -> tuple[float | None, str | None, float | None]:
    """(deadline ms, relative deadline spec, cap mW) of a workload request, after the checks that
    need no analysis: the objective, the planner (kind, metric, options) and a relative deadline
    only for ``independent``."""
    if objective not in metric_names():
        raise UsageError(f"unknown objective {objective!r}; choose one of {', '.join(metric_names())}")
    (ms, spec), cap = limits(deadline, power_cap, deadline_ms=deadline_ms, power_cap_mw=power_cap_mw)
    _check_planner(planner, "workload", objective, planner_options)
    if spec is not None and objective in WORKLOAD_METRICS:
        raise UsageError(f"--deadline {spec} is relative, so each model's own: give --objective {objective} an "
                         "absolute --deadline (e.g. 100ms), which bounds each model's latency while all run")
    if spec is not None and resolve_planner(planner, Objective(), "workload") != "independent":
        raise UsageError(f"--deadline {spec} is relative, so each model's own: only the independent workload planner "
                         f"plans models each with its own deadline; give {planner} an absolute --deadline (e.g. 100ms)")
    return ms, spec, cap


def plan_workload(analyses: Sequence[Analysis], objective: str, *, deadline: str | float | None = None,
                  power_cap: str | None = None, deadline_ms: float | str | None = None,
                  power_cap_mw: float | str | None = None, planner: str = "auto",
                  planner_options: Mapping[str, Any] | None = None, seed: int = 0, budget: Budget | None = None,
                  allow_infeasible: bool = False, progress: Progress | None = None) -> tuple[WorkloadPlan, Objective]:
    """The workload plan of models analysed on one board, and the objective it was planned for:
    what ``compile_workload`` does after the analyses (and a sweep's or tune's mix runs), with
    its arguments and errors."""
    ms, spec, cap = _workload_limits(objective, planner, planner_options, deadline, power_cap, deadline_ms,
                                     power_cap_mw)
    names = [a.name for a in analyses]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UsageError(f"two models are named {dup[0]!r}; rename one file (the artifact keys models by name)")
    obj = analyses[0].objective(objective, deadline_ms=ms, power_cap_mw=cap)
    ctx = PlanContext(seed, budget=budget, progress=progress)
    if spec is None:
        wplan = run_planner(workload_problem(analyses), obj, planner, planner_options, ctx,
                            allow_infeasible=allow_infeasible)
    else:
        own = [a.objective(objective, spec, deadline_ms=None, power_cap_mw=cap) for a in analyses]
        obj = Objective(metric=obj.metric, power_cap_mw=cap, deadline_spec=spec)
        wplan = _plan_each(analyses, own, obj, planner, planner_options, ctx, allow_infeasible)
    return wplan, obj


def workload_problem(analyses: Sequence[Analysis]) -> WorkloadProblem:
    """The workload of ``analyses`` (one board), each problem carrying what a device pays to switch
    between models' work (the target's ``devices.<name>.switch_ms``; 0 where the board gives none),
    which the workload planners of contention read (``PlanningProblem.switch_ms``)."""
    import numpy as np

    target = analyses[0].target
    by_name = {d.name: float(getattr(d, "switch_ms", 0.0) or 0.0) for d in getattr(target, "devices", ())}
    problems = []
    for a in analyses:
        p = a.problem
        if p.switch_ms is None and any(by_name.values()):
            p = p.replace(switch_ms=np.array([by_name.get(d, 0.0) for d in p.states.device]))
        problems.append(p)
    return WorkloadProblem(tuple(problems), tuple(a.name for a in analyses))


def default_workload_objective(planner: str) -> str:
    """The objective of a workload compiled without one: the named planner's first metric (so
    ``--planner ga`` plans ``overall``), ``latency`` for ``auto``."""
    from hetcc.planners.registry import get_spec

    return "latency" if planner == "auto" else get_spec(planner).metrics[0]


def _check_planner(planner: str, kind: str, metric: str, options: Mapping[str, Any] | None) -> None:
    """A named planner that plans another kind, does not optimise ``metric`` or has options it
    does not take is refused now, before the models are analysed (``auto`` is resolved later)."""
    from hetcc.planners.registry import check_planner, parse_options, split_name

    if planner != "auto":
        spec = check_planner(planner, kind, metric if metric in metric_names() else None)
        parse_options(spec, split_name(planner, spec, options or {}))


def _plan_each(analyses: Sequence[Analysis], objectives: Sequence[Objective], objective: Objective, planner: str,
               options: Mapping[str, Any] | None, ctx: PlanContext, allow_infeasible: bool) -> WorkloadPlan:
    """A workload whose models each have their own ``objectives`` (a relative deadline): each
    model planned by ``planner`` as a workload of one, the plans put together into one workload
    plan for ``objective`` (the limits as written), its feasibility the models'."""
    from hetcc.planners.registry import apply_policy

    parts = [run_planner(WorkloadProblem((a.problem,), (a.name,)), o, planner, options, ctx, allow_infeasible=True)
             for a, o in zip(analyses, objectives)]
    stats = {k: ({kk: vv for p in parts for kk, vv in p.stats[k].items()} if isinstance(v, Mapping) else v)
             for k, v in parts[0].stats.items()}
    wplan = WorkloadPlan(plans=tuple(p.plans[0] for p in parts), names=tuple(a.name for a in analyses),
                         planner=parts[0].planner, options=parts[0].options, seconds=sum(p.seconds for p in parts),
                         stats=stats, objective=objective)
    return apply_policy(wplan, objective, allow_infeasible)


def _dump(program: Program, pass_name: str, beside: str | Path | None = None) -> None:
    """--dump-after PASS: write the analyses so far as JSON to ``dump_path(PASS, beside)``."""
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

    from hetcc.files.atomic import write_file

    path = dump_path(pass_name, beside)
    text = json.dumps({k: enc(v) for k, v in program.analyses.items()}, indent=1, allow_nan=False)
    write_file(path, text, f"--dump-after {pass_name}", "run hetcc in a writable directory")


def dump_path(pass_name: str, beside: str | Path | None = None) -> Path:
    """The file ``--dump-after PASS`` (re)writes: ``DIR.dump-PASS.json`` beside the artifact
    ``beside`` (``-o DIR``; never inside it, which would change the artifact), else
    ``./hetcc-dump-PASS.json``. Refused when that name is a directory, a symlink or anything but
    a regular file (it is never followed or replaced)."""
    from hetcc.files.atomic import check_replaceable_file

    out = Path(beside) if beside is not None and str(beside) else None
    if out is not None and out.name in ("", ".", ".."):
        out = out.resolve()
    path = out.parent / f"{out.name}.dump-{pass_name}.json" if out is not None and out.name \
        else Path(f"hetcc-dump-{pass_name}.json")
    check_replaceable_file(path, f"--dump-after {pass_name}")
    return path
