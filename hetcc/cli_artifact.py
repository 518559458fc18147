"""The artifact commands of the ``hetcc`` CLI: ``run`` and ``inspect``.

``hetcc.cli`` builds the sub-parsers with ``add_run_arguments`` / ``add_inspect_arguments``
and dispatches to ``cmd_run`` / ``cmd_inspect``. Both understand every artifact kind: a
model artifact with one or more variants (``--variant``) and a workload artifact
(``--model``; ``run`` defaults to every model, ``run --verify`` verifies each).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .errors import UsageError

__all__ = ["add_run_arguments", "add_inspect_arguments", "cmd_run", "cmd_inspect"]

#: exit status of ``hetcc run --verify`` when an output differs from the unsliced model
VERIFY_FAILED = 4


def _console(stderr: bool = False) -> Any:
    from rich.console import Console

    console = Console(stderr=stderr, highlight=False, soft_wrap=True)
    if not console.is_terminal:  # piped or captured: do not squeeze tables into 80 columns
        console = Console(stderr=stderr, highlight=False, soft_wrap=True, width=160)
    return console


def _fmt(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


# ---------------------------------------------------------------- arguments
def add_run_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The arguments of ``hetcc run`` (the caller sets ``func``)."""
    parser.add_argument("dir", help="the artifact directory hetcc compile wrote (-o)")
    parser.add_argument("--input", action="append", metavar="NAME=x.npy",
                        help="feed an input from a .npy file (default: random inputs); repeatable")
    parser.add_argument("--repeat", type=int, default=1, help="runs to time (the median is shown)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    parser.add_argument("--variant", metavar="NAME", help="which plan of a multi-variant artifact to run "
                        "(default: the artifact's default variant)")
    parser.add_argument("--model", metavar="NAME", help="workload artifact: run this model only (default: all)")
    parser.add_argument("--verify", action="store_true", help="compare outputs with the unsliced model "
                        "(every model of a workload)")
    parser.add_argument("--reference", help="the unsliced model (default: the path recorded at compile time)")
    parser.add_argument("--rtol", type=float, default=1e-4, help="relative tolerance of --verify (default 1e-4)")
    parser.add_argument("--strict-providers", action="store_true",
                        help="fail if a slice's execution provider is missing")
    parser.add_argument("--local-fallback", action="store_true",
                        help="run slices planned for a remote device here, on the CPU (one warning per slice)")
    parser.add_argument("--apply-hardware", action="store_true",
                        help="set the plan's hardware configuration on this board first (knobs, each device's "
                        "frequency; needs root and a target with control tables) and put it back on exit; what "
                        "cannot be set is reported and the run goes on")
    parser.add_argument("--keep-hardware", action="store_true",
                        help="with --apply-hardware: leave the board as set instead of restoring it on exit")
    parser.add_argument("--sysfs-root", default="/", metavar="DIR",
                        help="with --apply-hardware: prefix of every path written (a fake sysfs tree for tests)")
    parser.add_argument("--json", action="store_true", help="print the timings (and verify results) as JSON")
    return parser


def add_inspect_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The arguments of ``hetcc inspect`` (the caller sets ``func``)."""
    parser.add_argument("dir", help="the artifact directory hetcc compile wrote (-o)")
    parser.add_argument("--variant", metavar="NAME", help="show this variant only (default: all)")
    parser.add_argument("--model", metavar="NAME", help="workload artifact: show this model only (default: all)")
    parser.add_argument("--json", action="store_true", help="print the manifest as JSON")
    parser.add_argument("--costs", action="store_true", help="with --json: include costs.json")
    parser.add_argument("--plot", metavar="PNG", help="draw the schedule (needs matplotlib)")
    return parser


# ---------------------------------------------------------------- run
def _feeds(pipe: Any, inputs: dict[str, Any], seed: int) -> dict[str, Any]:
    from .runtime import random_inputs

    feeds = random_inputs(pipe.inputs, seed=seed)
    names = {s.name for s in pipe.inputs}
    feeds.update({k: v for k, v in inputs.items() if k in names})
    return feeds


def _load_inputs(specs: list[str] | None) -> dict[str, Any]:
    import numpy as np

    out = {}
    for spec in specs or ():
        name, _, file = spec.partition("=")
        if not name or not file:
            raise UsageError(f"malformed --input {spec!r}; expected NAME=path.npy")
        try:
            out[name] = np.load(file)
        except (OSError, ValueError) as exc:
            raise UsageError(f"--input {name}: cannot read {file!r} ({exc})") from None
    return out


def _run_one(pipe: Any, feeds: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    from .runtime import verify

    totals, per_slice = [], []
    for _ in range(max(1, args.repeat)):
        pipe.run(feeds)
        totals.append(pipe.last_total_ms)
        per_slice.append(list(pipe.last_timings))
    med = np.median(np.array(per_slice), axis=0)
    report = None
    if args.verify:
        report = verify(pipe, feeds=feeds, reference_path=args.reference, rtol=args.rtol)
    return {"pipe": pipe, "total_ms_median": float(np.median(totals)), "slices_ms_median": [float(x) for x in med],
            "runs": len(totals), "report": report}


def _run_json(r: dict[str, Any], repeat: int) -> dict[str, Any]:
    pipe, report = r["pipe"], r["report"]
    return {"variant": pipe.name, "total_ms_median": r["total_ms_median"], "slices_ms_median": r["slices_ms_median"],
            "providers": list(pipe.providers), "repeat": repeat,
            "verify": None if report is None else {"ok": report.ok, "outputs": [o.__dict__ for o in report.outputs]}}


def _print_run(console: Any, r: dict[str, Any], rtol: float, title: str | None) -> None:
    from rich.table import Table

    pipe, report = r["pipe"], r["report"]
    if title:
        console.print(f"[bold]{title}[/bold]")
    table = Table(show_edge=False)
    for col in ("slice", "device", "provider", "median ms", "predicted ms"):
        table.add_column(col, justify="right" if "ms" in col or col == "slice" else "left")
    for s, ms, prov in zip(pipe.slices, r["slices_ms_median"], pipe.providers):
        device = f"{s.device} (remote, run here)" if s.remote else s.device
        table.add_row(str(s.id), device, prov, f"{ms:.2f}", _fmt(s.predicted.latency_ms))
    console.print(table)
    console.print(f"total: {r['total_ms_median']:.2f} ms median over {r['runs']} run(s)")
    if report is not None:
        for o in report.outputs:
            console.print(f"verify {o.name}: max |diff| {o.max_abs_diff:.3g}, relative {o.rel_diff:.3g} "
                          f"{'ok' if o.ok else 'MISMATCH'} (rtol {rtol:g})")
        console.print("verify: outputs match the unsliced model" if report.ok else "verify: FAILED")


def _print_hardware(console: Any, reports: list, restored: Any, keep: bool) -> None:
    for r in reports:
        title = f" (variant {r.variant})" if r.variant else ""
        console.print(f"hardware{title}" + (f", under {r.root}" if r.root not in ("", "/") else "") + ":")
        for line in r.lines():
            console.print(f"  {line}", markup=False)
    if keep:
        console.print("hardware: left as set (--keep-hardware)")
    elif restored is not None and restored.settings:
        bad = restored.skipped
        console.print(f"hardware: restored {len(restored.settings) - len(bad)} setting(s)"
                      + (f"; could not restore {len(bad)}: " + "; ".join(f"{s.what}: {s.reason}" for s in bad)
                         if bad else ""), markup=False)


def cmd_run(args: argparse.Namespace) -> int:
    """``hetcc run DIR``: run (and with --verify check) a model artifact's variant or a workload's models."""
    from .runtime import Executor

    variant = getattr(args, "variant", None)
    model = getattr(args, "model", None)
    inputs = _load_inputs(args.input)
    apply_hw = getattr(args, "apply_hardware", False)
    keep = apply_hw and getattr(args, "keep_hardware", False)
    ex = Executor(args.dir, strict_providers=args.strict_providers,
                  local_fallback=getattr(args, "local_fallback", False), variant=variant,
                  apply_hardware=apply_hw, sysfs_root=getattr(args, "sysfs_root", "/"), restore_hardware=not keep)
    try:
        results = _run_all(ex, args, inputs, model)
    finally:
        restored = ex.close()
    failed = any(r["report"] is not None and not r["report"].ok for _, r in results)
    if args.json:
        if ex.kind == "workload":
            doc: dict[str, Any] = {"models": {n: _run_json(r, args.repeat) for n, r in results}}
        else:
            doc = _run_json(results[0][1], args.repeat)
        if apply_hw:
            doc["hardware"] = {"applied": [r.to_json() for r in ex.hardware_reports], "kept": keep,
                               "restored": None if restored is None else restored.to_json()}
        print(json.dumps(doc, indent=2, default=float))
    else:
        console = _console()
        if apply_hw:
            _print_hardware(console, ex.hardware_reports, restored, keep)
        for n, r in results:
            title = f"model {n} ({r['pipe'].name})" if n is not None else (
                f"variant {r['pipe'].name}" if len(ex.variants) > 1 else None)
            _print_run(console, r, args.rtol, title)
        if ex.kind == "workload" and args.verify:
            bad = [n for n, r in results if not r["report"].ok]
            console.print(f"verify: all {len(results)} model(s) match" if not bad
                          else f"verify: FAILED for {', '.join(bad)}")
    return VERIFY_FAILED if failed else 0


def _run_all(ex: Any, args: argparse.Namespace, inputs: dict[str, Any], model: str | None) -> list:
    if ex.kind == "workload":
        names = [model] if model is not None else list(ex.models)
        for n in names:
            ex.model_executor(n)  # unknown --model: one-line error naming the models
        if args.reference and len(names) > 1:
            raise UsageError("--reference: a workload has several models; pick one with --model")
        pipes = [(n, ex.pipeline(model=n)) for n in names]
    else:
        pipes = [(None, ex.pipeline(model=model))]
    if inputs:
        known = {s.name for _, p in pipes for s in p.inputs}
        unknown = sorted(set(inputs) - known)
        if unknown:
            raise UsageError(f"--input {unknown[0]}: no such input (inputs: {', '.join(sorted(known))})")
    return [(n, _run_one(p, _feeds(p, inputs, args.seed), args)) for n, p in pipes]


# ---------------------------------------------------------------- inspect
def _costs(root: Path) -> dict | None:
    """The artifact's ``costs.json`` (None when it has none); one-line ManifestError when it is a
    symlink out of the artifact, not a regular file, or not JSON."""
    from .runtime.errors import ManifestError
    from .runtime.manifest import COSTS_NAME, artifact_file, read_json

    shown = str(root / COSTS_NAME)
    path = artifact_file(root, COSTS_NAME, shown)  # never follow a symlink out of the artifact
    if not path.exists():
        return None
    if not path.is_file():
        raise ManifestError(f"{shown}: not a regular file; the artifact is damaged, recompile")
    doc = read_json(path, shown)
    if not isinstance(doc, dict):
        raise ManifestError(f"{shown}: expected a JSON object; the file is damaged, recompile")
    return doc


def _print_variant(console: Any, name: str, v: Any, costs: dict | None, *, default: bool, many: bool) -> None:
    from rich.table import Table

    obj, planner = v.objective, v.planner
    limits = ""
    if obj.deadline_ms is not None:
        spec = f" ({obj.deadline_spec})" if obj.deadline_spec else ""
        limits += f", deadline {obj.deadline_ms:g} ms{spec}"
    if obj.power_cap_mw is not None:
        limits += f", power cap {obj.power_cap_mw / 1e3:g} W"
    head = f"variant [bold]{name}[/bold]{' (default)' if default else ''}: " if many else ""
    console.print(f"{head}objective {obj.metric}{limits}; planner {planner.name} ({planner.seconds * 1e3:.1f} ms)")
    if v.hardware:
        console.print("  hardware: " + ", ".join(f"{k}={val}" for k, val in v.hardware.items()))
    if not v.feasible:
        console.print("  [bold]INFEASIBLE[/bold]: " + ("; ".join(v.violations) or "(no reason recorded)"))
    table = Table(show_edge=False)
    for col in ("slice", "layers", "#", "device", "MHz", "latency ms", "energy mJ", "transfer", "ops"):
        table.add_column(col, justify="right" if col not in ("device", "ops", "layers") else "left")
    for s in v.slices:
        p = s.predicted
        ops = ""
        if costs:
            names = sorted({op for l in costs["layers"][s.first_layer:s.last_layer + 1] for op in l["op_types"]})
            ops = ",".join(names[:5]) + ("…" if len(names) > 5 else "")
        share = p.transfer_ms / p.latency_ms if p.latency_ms else 0.0
        device = s.device + (f" via {s.link}" + (f" ({s.endpoint})" if s.endpoint else "") if s.remote else "")
        table.add_row(str(s.id), f"L{s.first_layer}-L{s.last_layer}", str(s.last_layer - s.first_layer + 1),
                      device, _fmt(s.frequency_mhz, 0) if s.frequency_mhz else "-",
                      _fmt(p.latency_ms), _fmt(p.energy_mj), f"{share:.0%}", ops)
    console.print(table)
    pr = v.predicted
    line = f"total: {_fmt(pr.latency_ms)} ms"
    if pr.energy_mj is not None:
        line += f", {_fmt(pr.energy_mj)} mJ, EDP {_fmt(pr.edp_mj_ms, 1)} mJ·ms"
    if pr.meets_deadline is not None:
        line += ", meets deadline" if pr.meets_deadline else ", MISSES deadline"
    console.print(line)


def _print_model(console: Any, m: Any, root: Path, variant: str | None, title: str | None = None) -> None:
    costs = _costs(root)
    names = [variant] if variant is not None else list(m.variants)
    for n in names:
        m.variant(n)  # unknown --variant: one-line error naming the variants
    console.print(f"[bold]{title or m.model.name}[/bold] for {m.target.name} ({m.target.kind})"
                  + (f"; {len(m.variants)} variants: {', '.join(m.variants)}" if len(m.variants) > 1 else "")
                  + (f"; policy {m.policy.file}" if m.policy else ""))
    for n in names:
        _print_variant(console, n, m.variants[n], costs, default=n == m.default_variant, many=len(m.variants) > 1)


def cmd_inspect(args: argparse.Namespace) -> int:
    """``hetcc inspect DIR``: which layers run where, at what frequency, predicted cost; for
    every variant of a model artifact and every model of a workload."""
    from .runtime.manifest import artifact_root, load_manifest

    root = artifact_root(args.dir)
    manifest = load_manifest(args.dir)
    variant = getattr(args, "variant", None)
    model = getattr(args, "model", None)
    subs: list[tuple[str, Path, Any]] = []
    if manifest.kind == "workload":
        if variant is not None and model is None:
            raise UsageError("--variant: a workload artifact has no variants of its own; add --model NAME")
        wanted = [model] if model is not None else list(manifest.model_names)
        by_name = {w.name: w for w in manifest.workload.models}
        for n in wanted:
            if n not in by_name:
                raise UsageError(f"--model {n}: no such model (models: {', '.join(by_name)})")
            sub_root = root / by_name[n].dir
            subs.append((n, sub_root, load_manifest(sub_root)))
    elif model is not None and model != manifest.model.name:
        raise UsageError(f"--model: not a workload artifact; its one model is {manifest.model.name!r}")
    if args.plot:
        if manifest.kind == "workload":
            if len(subs) != 1:
                raise UsageError("--plot: a workload has several models; pick one with --model")
            _plot(subs[0][2], Path(args.plot), variant)
        else:
            _plot(manifest, Path(args.plot), variant)
    if args.json:
        if manifest.kind == "workload":
            doc: dict[str, Any] = {"manifest": manifest.to_json(),
                                   "models": {n: (m.to_json() if not args.costs else
                                                  {"manifest": m.to_json(), "costs": _costs(r)})
                                              for n, r, m in subs}}
            print(json.dumps(doc, indent=2))
        else:
            doc = manifest.to_json()
            print(json.dumps({"manifest": doc, "costs": _costs(root)} if args.costs else doc, indent=2))
        return 0
    console = _console()
    if manifest.kind == "workload":
        w = manifest.workload
        obj = w.objective
        console.print(f"[bold]workload[/bold] of {len(w.models)} models for {manifest.target.name} "
                      f"({manifest.target.kind}), objective {obj.metric}"
                      + (f", deadline {obj.deadline_ms:g} ms" if obj.deadline_ms is not None else "")
                      + (f", power cap {obj.power_cap_mw / 1e3:g} W" if obj.power_cap_mw is not None else "")
                      + f"; planner {w.planner.name} ({w.planner.seconds * 1e3:.1f} ms)")
        if not w.feasible:
            console.print("  [bold]INFEASIBLE[/bold]: " + ("; ".join(w.violations) or "(no reason recorded)"))
        for n, sub_root, m in subs:
            console.print("")
            _print_model(console, m, sub_root, variant, title=f"model {n}")
        return 0
    _print_model(console, manifest, root, variant)
    return 0


def _plot(manifest: Any, path: Path, variant: str | None = None) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("--plot needs matplotlib: pip install matplotlib") from None
    v = manifest.variant(variant)
    name = variant or manifest.default_variant
    devices = sorted({s.device for s in v.slices})
    fig, ax = plt.subplots(figsize=(10, 1 + 0.5 * len(devices)))
    t = 0.0
    for s in v.slices:
        lat = s.predicted.latency_ms
        ax.barh(devices.index(s.device), lat, left=t)
        ax.text(t + lat / 2, devices.index(s.device), f"L{s.first_layer}-{s.last_layer}",
                ha="center", va="center", fontsize=7)
        t += lat
    ax.set_yticks(range(len(devices)), devices)
    ax.set_xlabel("predicted time (ms)")
    suffix = f" ({name})" if len(manifest.variants) > 1 else ""
    ax.set_title(f"{manifest.model.name} on {manifest.target.name}{suffix}")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
