"""The ``hetcc`` command line: compile, run, inspect, targets, zoo.

Over 600 lines: besides the parser and ``main`` it holds ``compile`` (most of the parser's
arguments, the workload path, the summary lines); ``planners``, ``targets`` and ``zoo`` are a few
dozen lines each, and the other commands have modules of their own (``_add_command``).

Exit codes: 0 ok, 1 internal error, 2 bad usage or bad input, 3 no feasible plan.
"""
from __future__ import annotations

import argparse
import logging
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from hetcc import __version__
from hetcc.cli.signals import interrupted, pending, take_start, terminate_as_interrupt
from hetcc.cli.artifact import add_inspect_arguments, add_run_arguments, cmd_inspect, cmd_run
from hetcc.cli.common import float_in, int_in, json_text, make_console
from hetcc.compiler.depfile import check_depfile
from hetcc.core.paths import confine_libraries
from hetcc.core.errors import UsageError, is_user_error
from hetcc.core.limits import SEED_MAX

#: command-line limits (docs/limits.md, "Command-line values")
BUDGET_SECONDS_MAX = 86_400.0          # one day
BUDGET_STEPS_MAX = 10**9
MAX_CUT_TENSORS_MAX = 1024
PROFILE_REPEATS_MAX = 1000             # 10 s of profiling per layer


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's usage errors exit 2 with one line
        self.exit(2, f"hetcc: error: {message} (see {self.prog} --help)\n")


# ---------------------------------------------------------------- compile
def _budget(args: argparse.Namespace) -> Any:
    from hetcc.planners import Budget

    if args.budget_steps is None and args.budget_seconds is None:
        return None
    try:
        return Budget(steps=args.budget_steps, seconds=args.budget_seconds)
    except ValueError as exc:
        raise UsageError(f"--budget-steps/--budget-seconds: {exc}") from None


def _variants(text: str | None) -> list[str] | None:
    """``--variants P1,P2,...`` -> planner names; empty or repeated names refused."""
    if text is None:
        return None
    names = [v.strip() for v in text.split(",") if v.strip()]
    if not names:
        raise UsageError(f"--variants {text!r} names no planner; give planners separated by commas, e.g. dp,exact")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UsageError(f"--variants {text!r} names {dup[0]!r} twice; give each planner once")
    return names


def _check_planner_options(planner: str, options: dict[str, str], variants: list[str] | None) -> None:
    """Parse --planner-option values against a named planner's options now, before the model is
    loaded (``auto`` is resolved from the objective later; the same check runs then)."""
    from hetcc.planners import get_spec
    from hetcc.planners.registry import parse_options, split_name

    if planner != "auto" and not variants:
        spec = get_spec(planner)
        parse_options(spec, split_name(planner, spec, options))


def _policy_planner(planner: str, variants: list[str] | None) -> bool:
    """``planner`` makes a run-time policy's variants (kind ``policy``: autoscale)."""
    from hetcc.planners import get_spec

    return planner != "auto" and not variants and get_spec(planner).kind == "policy"


def _plan_line(plan: Any, states: Any) -> str:
    return " ".join(f"{states.label(s.state)}[L{s.first}-L{s.last}]" for s in plan.slices)


def _limits(obj: Any) -> str:
    parts = []
    if obj.deadline_ms is not None:
        spec = f" = {obj.deadline_spec}" if obj.deadline_spec else ""
        parts.append(f"deadline {obj.deadline_ms:.4g} ms{spec}")
    elif obj.deadline_spec:     # a workload's relative deadline: each model's own
        parts.append(f"deadline {obj.deadline_spec} of each model")
    if obj.power_cap_mw is not None:
        parts.append(f"cap {obj.power_cap_mw / 1e3:g} W")
    return f" ({', '.join(parts)})" if parts else ""


def _plan_summary(plan: Any, states: Any, has_power: bool) -> dict:
    return {"planner": plan.planner, "planner_ms": plan.seconds * 1e3, "options": dict(plan.options),
            "slices": [{"device": states.device[s.state], "frequency_mhz": float(states.freq_mhz[s.state]) or None,
                        "first_layer": s.first, "last_layer": s.last} for s in plan.slices],
            "latency_ms": plan.latency_ms, "energy_mj": plan.energy_mj if has_power else None,
            "hardware": dict(plan.hardware) if plan.hardware else None, "feasible": plan.feasible,
            "violations": list(plan.violations), "stats": dict(plan.stats)}


def _workload_model(plan: Any, states: Any, has_power: bool, objective: Any) -> dict:
    """A workload model's plan summary; with a relative deadline, each model's own (``deadline_ms``)."""
    out = _plan_summary(plan, states, has_power)
    if objective.deadline_ms is None and objective.deadline_spec and plan.objective is not None:
        out["deadline_ms"] = plan.objective.deadline_ms
    return out


def cmd_compile(args: argparse.Namespace) -> int:
    from hetcc.compiler.api import compile as hetcc_compile, compile_workload, parse_deadline, parse_hardware, parse_power
    from hetcc.compiler.frontend import parse_input_shapes
    from hetcc.planners import default_progress, parse_option_args
    from hetcc.planners.context import format_duration

    parse_deadline(args.deadline)   # refuse a bad --deadline / --power-cap before loading anything
    parse_power(args.power_cap)
    depfile = check_depfile(args.depfile, args.output, _input_files(args))   # and an unwritable --depfile
    options = parse_option_args(args.planner_option)
    variants = _variants(args.variants)
    _check_planner_options(args.planner, options, variants)
    console = make_console(stderr=args.json)
    progress = default_progress(quiet=args.quiet)   # stderr only: --json's stdout stays clean
    on_pass = None
    if args.verbose:
        def on_pass(t: Any) -> None:
            console.print(f"  [dim]pass[/dim] {t.name:<10} {t.seconds * 1e3:9.1f} ms  {t.summary}")
    common = dict(objective=args.objective, deadline=args.deadline, power_cap=args.power_cap,
                  planner=args.planner, planner_options=options, output_dir=args.output, seed=args.seed,
                  allow_infeasible=args.allow_infeasible, progress=progress)
    analyse_kw = dict(input_shapes=parse_input_shapes(args.input_shape), max_cut_tensors=args.max_cut_tensors,
                      profile_repeats=args.profile_repeats, profile_cache=not args.reprofile, on_pass=on_pass,
                      observations=args.observations or "board")
    common["write_timings"] = args.timings
    if len(args.model) > 1:
        if variants or args.hardware:
            raise UsageError("--variants and --hardware apply to one model; compile the models one by one")
        if args.min_accuracy is not None or args.calibration_data is not None:
            raise UsageError("--min-accuracy and --calibration-data apply to one model (--planner autoscale); "
                             "compile the models one by one")
        wresult = compile_workload(args.model, args.target, **common, **analyse_kw, budget=_budget(args))
        notes = _build_files(args, depfile, [a.program for a in wresult.analyses], wresult.analyses[0].target)
        notes = [*_memory_lines(wresult.analyses, True), *notes]
        return _compile_workload(args, console, wresult, progress, notes)
    common["objective"] = args.objective or (None if _policy_planner(args.planner, variants) else "latency")
    result = hetcc_compile(args.model[0], args.target, **common, **analyse_kw, budget=_budget(args),
                           hardware=parse_hardware(args.hardware), variants=variants, dump_after=args.dump_after,
                           min_accuracy=args.min_accuracy, calibration_data=args.calibration_data)
    plans = result.program.get("plan")
    states = result.analysis.problem.states
    has_power = result.target.has_power_model
    out = args.output
    progress.finish()   # the display's last line is gone before the summary prints
    notes = _build_files(args, depfile, [result.program], result.target)
    total = _elapsed(args)
    if result.policy is not None:
        from hetcc.cli.policy_view import policy_json, print_policy

        if args.json:
            for line in notes:
                console.print(line)
            print(json_text({"model": result.program.name, "target": result.target.name,
                             **result.objective.to_json(), "layers": result.analysis.problem.num_layers,
                             "planner": "autoscale", "policy": policy_json(result),
                             "variants": {n: _plan_summary(p, states, has_power) for n, p in plans.items()},
                             "compile_seconds": total, "step_seconds": _step_seconds(result.timings),
                             "output_dir": str(out) if out else None}))
            return 0
        print_policy(console, result)
        for line in notes:
            console.print(line)
        _finished(console, args, out, total, result.timings)
        return 0
    if args.json:
        for line in notes:
            console.print(line)   # stderr, beside the JSON
        rules = result.analysis.reported_memory
        print(json_text({"model": result.program.name, "target": result.target.name,
                         **result.objective.to_json(), "layers": result.analysis.problem.num_layers,
                         **_plan_summary(result.plan, states, has_power),
                         "variants": {n: _plan_summary(p, states, has_power) for n, p in plans.items()} if variants else None,
                         **({"reported_memory": [r.to_json() for r in rules.values()]} if rules else {}),
                         "compile_seconds": total, "step_seconds": _step_seconds(result.timings),
                         "output_dir": str(out) if out else None}))
        return 0
    console.print(f"[bold]{result.program.name}[/bold] on {result.target.name}: {result.analysis.problem.num_layers} "
                  f"layers, objective {result.objective.metric}{_limits(result.objective)}")
    for name, plan in plans.items():
        energy = f", {plan.energy_mj:.2f} mJ, {plan.average_power_mw / 1e3:.2f} W average" if has_power else ""
        flag = "" if plan.feasible else " [bold red]INFEASIBLE[/bold red]: " + "; ".join(plan.violations)
        n = len(plan.slices)
        console.print(f"  {name}: {n} slice{'s' * (n != 1)} ({plan.planner}, {format_duration(plan.seconds)})"
                      f" -> {plan.latency_ms:.2f} ms{energy}{flag}")
        console.print(f"    plan: {_plan_line(plan, states)}")
        if plan.hardware:
            console.print("    hardware: " + ", ".join(f"{k}={v}" for k, v in plan.hardware.items()))
        if plan.stats and plan.stats.get("optimal") is False:
            console.print("    " + _budget_ran_out(plan, result.objective.metric, args))
    for line in _memory_lines([result.analysis], False):
        console.print(line, markup=False)
    for line in notes:
        console.print(line)
    _finished(console, args, out, total, result.timings)
    return 0


def _memory_lines(analyses: Sequence[Any], named: bool) -> list[str]:
    """A line per memory row a compile applied (``--observations``): what the device's capacity
    rule charged the model, and where that size comes from."""
    out = []
    for a in analyses:
        for r in a.reported_memory.values():
            who = f"{a.name}: " if named else ""
            out.append(f"  {who}{r.device} capacity charged the {r.reported_bytes / 1e6:g} MB its runtime reports for "
                       f"the model ({r.source}), not the board's {r.board_bytes / 1e6:.1f} MB; --observations none "
                       "for the board's")
    return out


def _input_files(args: argparse.Namespace) -> list[str]:
    """The files a command names as inputs: models, a board or measurement file given as a path,
    observations files, ``@`` option files (what no output of the same command may be)."""
    files = [*(getattr(args, "model", None) or []), getattr(args, "target", None) or "",
             getattr(args, "observations", None) or ""]
    files += [o[1:] for o in getattr(args, "planner_option", None) or [] if isinstance(o, str) and o.startswith("@")]
    return [f for f in files if isinstance(f, str) and f and os.path.lexists(f)]


def _build_files(args: argparse.Namespace, depfile: Path | None, programs: Sequence[Any], target: Any) -> list[str]:
    """After a successful compile: write ``--depfile`` and say where it and ``--dump-after``'s
    file went (lines for the summary)."""
    notes = []
    if getattr(args, "dump_after", None):
        from hetcc.compiler.api import dump_path

        notes.append(f"  dumped the analyses after {args.dump_after} to {dump_path(args.dump_after, args.output)}")
    if depfile is not None:
        from hetcc.compiler.depfile import write_depfile
        from hetcc.measure.measured_target import is_measurement_file

        models = [m if Path(m).is_file() else str(p.source_path) for m, p in zip(args.model, programs)]
        from hetcc.measure.measured_target import memory_rows_file
        from hetcc.passes.costs import reported_memory

        target_files = [args.target] if is_measurement_file(args.target) else []
        target_files += [target.path] if getattr(target, "path", None) is not None else []
        rows = memory_rows_file(args.observations or "board", target) if any(map(reported_memory, programs)) else None
        target_files += [rows] if rows is not None else []
        write_depfile(depfile, args.output, models, target_files)
        notes.append(f"  wrote the depfile {depfile} (make: -include {depfile})")
    return notes


def _elapsed(args: argparse.Namespace) -> float:
    """Seconds since the command started (``_command_start``): the time a user waited, not the
    sum of the steps hetcc timed."""
    return time.perf_counter() - args.started


def process_age() -> float | None:
    """Seconds since this process started, from the kernel's record (Linux: /proc/self/stat's
    start time against CLOCK_BOOTTIME, both counted from boot, to 1/100 s); None where unknown."""
    import os

    try:
        stat = Path("/proc/self/stat").read_text()
        ticks = int(stat.rsplit(")", 1)[1].split()[19])       # field 22, after the command name
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return age if age >= 0 else None


def _command_start() -> float:
    """When the command started (``perf_counter``): through the console script or ``python -m
    hetcc.cli`` (``take_start`` then returns ``hetcc._entry``'s time, before now), the process's
    own start, so the interpreter's start-up and the imports before the entry count too; else
    (``main`` called from Python) the call."""
    now = time.perf_counter()
    entered = take_start()
    if entered >= now:
        return entered
    age = process_age()
    return min(entered, now - age) if age is not None else entered


def _step_seconds(timings: Sequence[Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for t in timings:
        out[t.name] = out.get(t.name, 0.0) + t.seconds
    return out


def _finished(console: Any, args: argparse.Namespace, out: Any, total: float, timings: Sequence[Any]) -> None:
    """The last lines of a compile: where it wrote (or that it wrote nothing: a plan-only run),
    the whole wall time, and with --verbose where it went."""
    if out:
        d = str(out).rstrip("/") or "/"
        console.print(f"  wrote {d}/ in {total:.2f} s  (next: hetcc inspect {d}; hetcc run {d} --verify)")
    else:
        console.print(f"  planned in {total:.2f} s; nothing written (plan only): add -o DIR to write the artifact")
    if args.verbose:
        steps = _step_seconds(timings)
        other = max(total - sum(steps.values()), 0.0)
        console.print("  time: " + ", ".join(f"{n} {v:.2f} s" for n, v in steps.items())
                      + f", other {other:.2f} s (start-up, imports, checks)")


def _budget_ran_out(plan: Any, metric: str, args: argparse.Namespace) -> str:
    """The line for an anytime planner stopped by its budget: how far from the optimum, and
    what to raise."""
    unit = {"latency": "ms", "energy": "mJ", "edp": "mJ*ms"}.get(metric, "")
    stats = plan.stats
    gap, bound = stats.get("gap"), stats.get("lower_bound")
    limit = ", ".join(f"{v}" for v in ([f"{args.budget_seconds:g} s"] if args.budget_seconds else [])
                      + ([f"{args.budget_steps} step{'s' * (args.budget_steps != 1)}"] if args.budget_steps else [])
                      ) or "its budget"
    within = (f"within {gap:.2%} of the optimum (lower bound {bound:.4g} {unit})"
              if isinstance(gap, (int, float)) and math.isfinite(gap) and isinstance(bound, (int, float))
              else "its distance to the optimum unknown")
    return (f"[yellow]not proved optimal[/yellow]: {plan.planner} stopped at {limit}; its best plan is {within}. "
            "Raise --budget-seconds/--budget-steps to search further")


def _compile_workload(args: argparse.Namespace, console: Any, result: Any, progress: Any,
                      notes: Sequence[str] = ()) -> int:
    wplan = result.plan
    progress.finish()
    total = _elapsed(args)
    states = result.analyses[0].problem.states
    has_power = result.analyses[0].target.has_power_model
    if args.json:
        print(json_text({"workload": list(wplan.names), "target": result.analyses[0].target.name,
                         **result.objective.to_json(), "planner": wplan.planner, "feasible": wplan.feasible,
                         "models": {n: _workload_model(p, states, has_power, result.objective)
                                    for n, p in zip(wplan.names, wplan.plans)},
                         **({"contention": {k: wplan.stats[k] for k in ("pipelines", "prediction", "score")}}
                            if "score" in wplan.stats else {}),
                         "compile_seconds": total, "step_seconds": _step_seconds(result.timings),
                         "output_dir": str(args.output) if args.output else None}))
        for line in notes:
            console.print(line)
        return 0
    console.print(f"workload of {len(wplan.names)} models on {result.analyses[0].target.name} "
                  f"({wplan.planner}, objective {result.objective.metric}{_limits(result.objective)})")
    for name, plan in zip(wplan.names, wplan.plans):
        energy = f", {plan.energy_mj:.2f} mJ" if has_power else ""
        flag = "" if plan.feasible else " INFEASIBLE: " + "; ".join(plan.violations)
        own = plan.objective.deadline_ms if result.objective.deadline_ms is None and plan.objective else None
        own = f" (deadline {own:.4g} ms)" if own is not None else ""
        console.print(f"  {name}: {plan.latency_ms:.2f} ms{own}{energy} {_plan_line(plan, states)}{flag}")
    if "score" in wplan.stats:      # a workload planned for models running at once
        sc, pred = wplan.stats["score"], wplan.stats["prediction"]
        each = ", ".join(f"{n} {pred['throughput'][n] or 0:.3g}" for n in wplan.names)
        console.print(f"  predicted at once: {each} inf/s; T_w {sc['T_w']:.4g} inf/s, T_norm {sc['T_norm']:.3f}, "
                      f"J {sc['J']:.3f}, O {sc['O']:.3f}")
    for line in notes:
        console.print(line)
    _finished(console, args, args.output, total, result.timings)
    return 0


# ---------------------------------------------------------------- planners
def cmd_planners(args: argparse.Namespace) -> int:
    from hetcc.planners import all_specs
    from hetcc.planners.registry import AUTO_OPTIMUM_SPACE, option_fields, type_name

    specs = [s for s in all_specs() if not args.name or s.name == args.name]
    if args.name and not specs:
        from hetcc.planners import get_spec

        get_spec(args.name)  # raises the unknown-planner error
    rows = [{"name": s.name + (f":<{s.positional}>" if s.positional else ""), "plans": s.kind,
             "summary": s.summary, "metrics": list(s.metrics), "constraints": list(s.constraints),
             "exact": s.exact, "hardware": s.hardware,
             "options": [{"name": n, "type": type_name(tp), "default": d, "doc": doc}
                         for n, tp, d, doc in option_fields(s) if n != s.positional]} for s in specs]
    if args.json:
        print(json_text(rows))
        return 0
    from rich.table import Table

    table = Table(show_edge=False, show_lines=True)
    for col in ("planner", "plans", "optimises", "honours", "exact", "options (default)", "what"):
        table.add_column(col)
    for r in rows:
        opts = "\n".join(f"{o['name']}: {o['type']} = {o['default']}  {o['doc']}" for o in r["options"]) or "-"
        table.add_row(r["name"], r["plans"], ",".join(r["metrics"]), ",".join(r["constraints"]) or "-",
                      "yes" if r["exact"] else "", opts, r["summary"])
    console = make_console()
    console.print(table)
    console.print("auto = the first exact planner whose metrics and constraints cover the objective (dp, then exact); "
                  "a plan that breaks a deadline or power cap exits 3 unless --allow-infeasible. "
                  "Set options with --planner-option KEY=VALUE.")
    console.print("Several models at once: auto = independent for latency|energy|edp; for "
                  f"throughput|fairness|overall optimum when its space holds at most {AUTO_OPTIMUM_SPACE:,} combinations "
                  "(e.g. 3 models on a 3-device board), else ga (fairboost only when named). A workload planner of contention gives each model a pipeline "
                  "(consecutive stages, one device each) scored by the contention model; a model never returns "
                  "to a device it has left (FairBoost's masking).")
    return 0


# ---------------------------------------------------------------- targets / zoo
def cmd_targets(args: argparse.Namespace) -> int:
    from rich.table import Table

    from hetcc.targets import builtin_targets, load_target

    console = make_console()
    if args.name:
        t = load_target(args.name)
        if args.json:
            print(json_text({"name": t.name, "kind": t.kind, "description": t.description, "path": str(t.path),
                             "devices": [d.name for d in t.devices], "states": len(t.states()),
                             "knobs": {k.name: {"effect": k.effect, "devices": list(k.devices), "values": list(k.values)}
                                       for k in t.knobs.values()}}))
            return 0
        console.print(f"[bold]{t.name}[/bold] ({t.kind}{': an analytical model from published specs, not measurements' if t.kind == 'modelled' else ': costs measured on this machine'}) — {t.description}")
        table = Table(show_edge=False)
        for col in ("device", "kind", "provider", "DVFS MHz", "capacity"):
            table.add_column(col)
        for d in t.devices:
            freqs = [lvl.freq_mhz for lvl in d.dvfs]
            mhz = ", ".join(f"{f:g}" for f in freqs if f) or "-"
            table.add_row(d.name, d.kind, d.execution_provider, mhz,
                          f"{d.capacity_bytes / 1e6:g} MB" if d.capacity_bytes else "unlimited")
        console.print(table)
        if t.knobs:
            knobs = Table(show_edge=False)
            for col in ("knob", "effect", "devices", "values (monotone: later = faster, hungrier)"):
                knobs.add_column(col)
            for k in t.knobs.values():
                knobs.add_row(k.name, k.effect, ", ".join(k.devices), ", ".join(f"{v:g}" if isinstance(v, float) else str(v)
                                                                                 for v in k.values))
            console.print(knobs)
            console.print("fix them with --hardware KNOB=VALUE (default: the last value of each)")
        console.print(f"{len(t.states())} device states; file {t.path}")
        return 0
    rows = []
    for name in builtin_targets():
        t = load_target(name)
        rows.append({"name": name, "kind": t.kind, "devices": [d.name for d in t.devices], "description": t.description,
                     "path": str(t.path)})   # the file a build system depends on (docs/build-systems.md)
    if args.json:
        print(json_text(rows))
        return 0
    table = Table(show_edge=False)
    for col in ("target", "kind", "devices", "description"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["name"], r["kind"], ", ".join(r["devices"]), r["description"])
    console.print(table)
    console.print("modelled = an analytical model from published specs and the papers' tables (not measured on a board); "
                  "measured = profiled on this machine with onnxruntime. Add your own with --target path/to/board.toml.")
    return 0


def cmd_zoo(args: argparse.Namespace) -> int:
    from hetcc.compiler import zoo

    if args.zoo_cmd == "list":
        from rich.table import Table

        table = Table(show_edge=False)
        for col in ("name", "input", "core", "description"):
            table.add_column(col)
        for e in zoo.list_models():
            table.add_row(e.name, "x".join(map(str, e.input_shape)), "yes" if e.core else "", e.description)
        make_console().print(table)
        return 0
    out = Path(args.output)
    if not args.output.strip() or out.is_dir():
        raise UsageError(f"zoo export -o {args.output!r}: give a file name, e.g. -o {args.name}.onnx")
    if args.name in zoo.ZOO:
        # the export in hetcc's cache, made on first use (as `hetcc compile NAME` makes it), copied to -o
        from hetcc.compiler.api import zoo_model
        from hetcc.files.atomic import atomic_write_bytes

        path = atomic_write_bytes(out, zoo_model(args.name, args.seed).read_bytes())
    else:
        path = zoo.export(args.name, out, seed=args.seed)      # an unknown name: the zoo's one-line error
    print(f"wrote {path}")
    return 0


# ---------------------------------------------------------------- main
def _add_command(parser: argparse.ArgumentParser, module: str) -> None:
    """Arguments and command of ``hetcc.cli.{sweep,tune,profile,calibrate,cache,train,serve}`` (light modules: Ray, scipy and
    the profiler are imported only by the command itself)."""
    import importlib

    mod = importlib.import_module(f"hetcc.cli.{module}")
    mod.add_arguments(parser)
    parser.set_defaults(func=getattr(mod, f"cmd_{module}"))


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="hetcc", description="Heterogeneity-aware compiler for ONNX models.")
    p.add_argument("--version", action="version", version=f"hetcc {__version__}")
    p.add_argument("--debug", action="store_true", help="log debug messages and show tracebacks")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)

    c = sub.add_parser("compile", help="slice a model (or several: a workload) across a board's devices")
    c.add_argument("model", nargs="+", help="an .onnx file or a zoo name (hetcc zoo list); several = a workload")
    c.add_argument("--target", "-t", default="hikey970",
                   help="built-in target name (hetcc targets) or path/to/board.toml (default hikey970)")
    c.add_argument("--objective", help="latency|energy|edp, or for several models throughput|fairness|overall "
                   "(default latency; a workload planner's own first metric, e.g. overall for ga; hetcc planners: "
                   "what each optimises)")
    c.add_argument("--observations", metavar="FILE.csv|NAME|none",
                   help="memory rows: the model sizes a device's runtime reports, which its capacity rule then charges "
                        "(default: the board's own; the built-in hikey970 has MOSAIC's Table I sizes; none: the "
                        "board's estimate; docs/calibration.md)")
    c.add_argument("--deadline", help="170ms, 0.17s, 170 (ms), short|medium|long (HERTI Eq. 12) or 1.3x the fastest plan")
    c.add_argument("--power-cap", help="average power cap: 5W, 5000mW or 5 (W)")
    c.add_argument("--planner", default="auto", help="a planner from hetcc planners (default auto)")
    c.add_argument("--planner-option", action="append", metavar="KEY=VALUE", help="planner option (repeatable; hetcc planners lists them)")
    c.add_argument("--variants", metavar="P1,P2,...", help="emit one plan per planner into one artifact (the first is the default)")
    c.add_argument("--hardware", action="append", metavar="KNOB=VALUE", help="fix a hardware knob of the target (repeatable)")
    c.add_argument("--allow-infeasible", action="store_true", help="write a plan that misses the deadline or cap, marked infeasible")
    c.add_argument("--min-accuracy", metavar="FRACTION|PCT",
                   help="--planner autoscale: leave out low-precision variants whose agreement with FP32 (top-1) is "
                        "below this, e.g. 0.9 or 90%% (default: keep all)")
    c.add_argument("--calibration-data", metavar="DIR",
                   help="--planner autoscale: INT8 calibration inputs, one NAME.npy per model input (default: "
                        "seeded random inputs)")
    c.add_argument("--budget-steps", type=int_in(1, BUDGET_STEPS_MAX),
                   help=f"stop a search planner after this many steps (1 to {BUDGET_STEPS_MAX:.0e})")
    c.add_argument("--budget-seconds", type=float_in(0, BUDGET_SECONDS_MAX, lo_open=True),
                   help="stop a search planner after this many seconds, at most 86400 (anytime planners return "
                   "their best plan)")
    c.add_argument("-o", "--output", help="artifact directory (slices/, manifest.json, costs.json)")
    c.add_argument("--input-shape", action="append", metavar="NAME=1x3x224x224", help="fix a dynamic input shape")
    c.add_argument("--max-cut-tensors", type=int_in(1, MAX_CUT_TENSORS_MAX), default=1, metavar="K",
                   help=f"tensors a cut may carry, 1 to {MAX_CUT_TENSORS_MAX} (default 1)")
    c.add_argument("--seed", type=int_in(0, SEED_MAX), default=0,
                   help="seed of the planner and of a zoo model's random weights, 0 to 2**32-1 (default 0)")
    c.add_argument("--profile-repeats", type=int_in(1, PROFILE_REPEATS_MAX), default=None,
                   help=f"host: profiling effort, 1 to {PROFILE_REPEATS_MAX} (x 10 ms per layer; default adaptive)")
    c.add_argument("--reprofile", action="store_true", help="host: measure again instead of using the cached profile")
    c.add_argument("--json", action="store_true", help="print the plan summary as JSON")
    c.add_argument("--quiet", "-q", action="store_true",
                   help="no progress lines (they show on stderr only when it is a terminal)")
    c.add_argument("--verbose", "-v", action="store_true",
                   help="print each step (export, load, every pass, planning, codegen) with its wall time")
    c.add_argument("--dump-after", metavar="PASS",
                   help="write the analyses after PASS to DIR.dump-PASS.json beside -o DIR (./hetcc-dump-PASS.json without -o)")
    c.add_argument("--depfile", metavar="FILE",
                   help="also write a Make rule: DIR/manifest.json depends on the model, its data, the target file "
                        "and hetcc's version stamp (docs/build-systems.md)")
    c.add_argument("--timings", action="store_true",
                   help="also write DIR/timings.json (planner and pass wall times); without it two compiles of the "
                        "same inputs write byte-identical artifacts")
    c.set_defaults(func=cmd_compile)

    pl = sub.add_parser("planners", help="list the planners, their options and what they optimise")
    pl.add_argument("name", nargs="?")
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(func=cmd_planners)

    add_run_arguments(sub.add_parser("run", help="execute a compiled artifact with onnxruntime")).set_defaults(func=cmd_run)
    add_inspect_arguments(sub.add_parser("inspect", help="show which layers run where, at what frequency, predicted cost")
                          ).set_defaults(func=cmd_inspect)

    t = sub.add_parser("targets", help="list built-in targets or show one")
    t.add_argument("name", nargs="?")
    t.add_argument("--json", action="store_true")
    t.set_defaults(func=cmd_targets)

    sw = sub.add_parser("sweep", help="many compiles at once on Ray: models x targets x objectives x deadlines x planners")
    _add_command(sw, "sweep")
    tu = sub.add_parser("tune", help="tune a planner's options with Ray Tune (median gap to exact)")
    _add_command(tu, "tune")
    pr = sub.add_parser("profile", help="measure a model's per-layer latency (and power, where readable) on this machine")
    _add_command(pr, "profile")
    ca = sub.add_parser("calibrate", help="fit a modelled board's parameters to measurements (least squares)")
    _add_command(ca, "calibrate")
    _add_command(sub.add_parser("train", help="train a learning planner's agent: hetcc train fairboost --target "
                                "orangepi5 -o agent.pt (or its VQ-VAE: hetcc train vqvae)"), "train")
    _add_command(sub.add_parser("cache", help="list or clear what hetcc cached (zoo exports, modules, host profiles)"),
                 "cache")
    _add_command(sub.add_parser("serve", help="serve a model or an artifact's slices to boards that offload to "
                                "this machine (HTTP, bearer token; the serve extra)"), "serve")

    z = sub.add_parser("zoo", help="torchvision architectures with random weights")
    zs = z.add_subparsers(dest="zoo_cmd", required=True, parser_class=_Parser)
    zs.add_parser("list")
    ze = zs.add_parser("export")
    ze.add_argument("name")
    ze.add_argument("-o", "--output", required=True)
    ze.add_argument("--seed", type=int_in(0, SEED_MAX), default=0, help="seed of the random weights")
    z.set_defaults(func=cmd_zoo)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. SIGTERM and SIGHUP are handled like Ctrl-C (SIGINT): a KeyboardInterrupt,
    so an output being written is removed and the old one kept; exit 128 + the signal number
    (130 SIGINT, 143 SIGTERM, 129 SIGHUP) with one line on stderr. The console script enters
    through ``hetcc._entry.main``, which extends this to the imports before it. A reader that
    closes the output early (``hetcc targets --json | head -1``) ends the command quietly with
    141, as SIGPIPE ends other Unix tools (see ``_closed_pipe``)."""
    started = _command_start()
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exc:   # --help, --version, or a one-line usage error (exit 2): return, not raise
            sys.stdout.flush()
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        args.started = started
        logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING,
                            format="hetcc: %(levelname)s: %(message)s")
        return _run(args)
    except BrokenPipeError:
        return _closed_pipe()
    except SystemExit as exc:
        if isinstance(exc.__context__, BrokenPipeError):   # rich's Console.on_broken_pipe exits 1
            return _closed_pipe()
        raise


def _run(args: argparse.Namespace) -> int:
    try:
        with terminate_as_interrupt():
            confine_libraries()   # matplotlib, Ray, torch: their files under hetcc's cache, set before they load
            code = args.func(args)
            sys.stdout.flush()      # a closed pipe shows here, inside the handling, not at exit
        if pending():       # a signal whose KeyboardInterrupt a library swallowed (an import it cut short)
            return interrupted()
        return code
    except BrokenPipeError:
        raise
    except Exception as exc:
        if pending():       # raised because of a signal (e.g. an import a Ctrl-C cut short)
            return interrupted()
        if args.debug or not is_user_error(exc):
            raise
        msg = " ".join(str(exc).split())
        print(f"hetcc: error: {msg}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return interrupted()


#: exit status when the reader of stdout went away: 128 + SIGPIPE, what the shell reports for
#: any tool that SIGPIPE ends (``set -o pipefail`` sees it; a plain pipeline reports the reader's)
CLOSED_PIPE_EXIT = 141


def _closed_pipe() -> int:
    """stdout's reader closed it: stop, print nothing (there is no one to read it), and point
    stdout and stderr at /dev/null so the interpreter's last flush does not fail again (the
    Python docs' note on SIGPIPE). Not 0: the output was cut short, so a ``run --verify`` that
    did not get to its verdict never reads as passed."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        for stream in (sys.stdout, sys.stderr):
            try:
                os.dup2(devnull, stream.fileno())
            except (OSError, ValueError, AttributeError):   # no file descriptor (captured in tests)
                pass
        os.close(devnull)
    except OSError:
        pass
    return CLOSED_PIPE_EXIT
