"""One (model, target) of a sweep, run in a Ray worker: analyse once, then plan each of its cells
and stream their rows back (``plan_group``); a planner that raises is recorded with its error, a
combination that does not apply (``dp`` with ``edp``, energy on a target without a power model)
as skipped, and the gap column compares with the spec's reference planner.

A mix (several models planned at once) is ``plan_mix_group``: each model analysed once, each
cell planned by ``hetcc.compiler.api.plan_workload`` (what ``hetcc compile a.onnx b.onnx`` runs),
its row holding the contention model's T_w, T_norm, J and O where the planner scores them (every
planner but ``independent``), and latency / energy as the sum over the models (one inference of
each, one after another)."""
from __future__ import annotations

import json
import math
import os
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from hetcc.experiments.sweep.table import COLUMNS, one_line

if TYPE_CHECKING:
    from hetcc.experiments.sweep.spec import Cell


def _row(cell: Cell, **values: Any) -> dict[str, Any]:
    return row_of(cell, **values)


def row_of(cell: Cell, **values: Any) -> dict[str, Any]:
    """A cells.csv row of ``cell`` with ``values`` (the rest empty)."""
    row = {c: "" for c in COLUMNS}
    row.update(cell=cell.key, model=cell.model, target=cell.target, objective=cell.objective,
               deadline=cell.deadline, power_cap=cell.power_cap, planner=cell.planner, options=cell.options,
               seed=cell.seed, device_set=cell.devices, budget=cell.budget,
               worker=f"{socket.gethostname()}:{os.getpid()}",
               finished=time.strftime("%Y-%m-%dT%H:%M:%S"))
    row.update({k: v for k, v in values.items() if v is not None})
    return row


def _batched(rows: Iterator[dict]) -> Iterator[list[dict]]:
    """The rows in batches, one every 0.2 s (one Ray object per row would cost the driver ~1 ms of
    CPU each)."""
    batch: list[dict] = []
    last = time.monotonic()
    for row in rows:
        batch.append(row)
        if time.monotonic() - last > 0.2:
            yield batch
            batch, last = [], time.monotonic()
    if batch:
        yield batch


def plan_group(model_path: str, target: str, cells: list[Cell], settings: dict[str, Any]) -> Iterator[list[dict]]:
    """Analyse ``model_path`` for ``target`` once, then plan each cell; yields the finished rows
    every 0.2 s (one Ray object per row would cost the driver ~1 ms of CPU each)."""
    yield from _batched(_plan_rows(model_path, target, cells, settings))


def _plan_rows(model_path: str, target: str, cells: list[Cell], settings: dict[str, Any]) -> Iterator[dict]:
    from hetcc.compiler.api import analyse
    from hetcc.core.errors import HetccError, InfeasibleError

    try:
        whole = analyse(model_path, target, max_cut_tensors=settings["max_cut_tensors"])
    except Exception as e:                            # recorded per cell; the sweep goes on
        for cell in cells:
            yield _row(cell, status="error", error=f"analysis: {one_line(e)}")
        return
    analyses: dict[str, Any] = {}
    references: dict[tuple, float | None] = {}
    for cell in cells:
        if cell.devices not in analyses:
            analyses[cell.devices] = restrict(whole, cell.devices)
        analysis = analyses[cell.devices]
        size = {"layers": analysis.problem.num_layers, "states": analysis.problem.num_states}
        try:
            obj = objective_of(analysis, cell.objective, cell.deadline, cell.power_cap)
        except HetccError as e:
            yield _row(cell, status="skipped", error=one_line(e), **size)
            continue
        options, budget = json.loads(cell.options), _budget(cell.budget)
        try:
            _warm_planner(analysis, obj, cell.planner, options)
            plan = analysis.plan(obj, planner=cell.planner, options=options, seed=cell.seed, budget=budget,
                                 allow_infeasible=True)
        except InfeasibleError as e:                  # no plan at all (e.g. nothing meets the cap)
            yield _row(cell, status="infeasible", feasible=False, error=one_line(e),
                       deadline_ms=obj.deadline_ms, **size)
            continue
        except HetccError as e:                       # the planner does not apply (dp with edp, ...)
            yield _row(cell, status="skipped", error=one_line(e), **size)
            continue
        except Exception as e:
            yield _row(cell, status="error", error=one_line(e), **size)
            continue
        value = obj.value(plan.latency_ms, plan.energy_mj)
        ref = _reference(analysis, obj, cell, settings.get("gap_to"), references, plan, value)
        gap = (value - ref) / ref * 100.0 if ref and plan.feasible and math.isfinite(ref) else None
        artifact = None
        if settings.get("artifacts"):
            artifact = str(Path(settings["out"]) / "artifacts" / cell.key)
            analysis.emit(plan, artifact)
        yield _row(cell, status="ok" if plan.feasible else "infeasible", feasible=plan.feasible,
                   deadline_ms=obj.deadline_ms, latency_ms=plan.latency_ms, energy_mj=plan.energy_mj,
                   edp_mj_ms=plan.edp_mj_ms, value=value, reference=ref, gap_pct=gap,
                   planner_seconds=plan.seconds, slices=len(plan.slices),
                   devices=",".join(dict.fromkeys(analysis.problem.states.device[s.state] for s in plan.slices)),
                   artifact=artifact, error="; ".join(plan.violations) or None, stats=_stats(plan.stats), **size)


def plan_mix_group(model_paths: list[str], target: str, cells: list[Cell],
                   settings: dict[str, Any]) -> Iterator[list[dict]]:
    """``plan_group`` for a mix: analyse each of ``model_paths`` for ``target`` once, then plan
    each cell as a workload; yields the finished rows in batches."""
    yield from _batched(_mix_rows(model_paths, target, cells, settings))


def _mix_rows(model_paths: list[str], target: str, cells: list[Cell], settings: dict[str, Any]) -> Iterator[dict]:
    from hetcc.compiler.api import analyse
    from hetcc.core.errors import HetccError, InfeasibleError

    def mix_row(cell: Cell, **values: Any) -> dict[str, Any]:
        return row_of(cell, mix_models=len(model_paths), **values)

    try:
        whole = [analyse(m, target, max_cut_tensors=settings["max_cut_tensors"]) for m in model_paths]
    except Exception as e:                            # recorded per cell; the sweep goes on
        for cell in cells:
            yield mix_row(cell, status="error", error=f"analysis: {one_line(e)}")
        return
    analyses: dict[str, list[Any]] = {}
    references: dict[tuple, float | None] = {}
    for cell in cells:
        if cell.devices not in analyses:
            analyses[cell.devices] = [restrict(a, cell.devices) for a in whole]
        mix = analyses[cell.devices]
        size = {"layers": sum(a.problem.num_layers for a in mix), "states": mix[0].problem.num_states}
        options, budget = json.loads(cell.options), _budget(cell.budget)
        try:
            _warm_mix_planner(mix, cell, options)
            wplan, obj = _plan_mix(mix, cell, cell.planner, options, budget, allow_infeasible=True)
        except InfeasibleError as e:                  # no plan at all (e.g. a model runs on no device)
            yield mix_row(cell, status="infeasible", feasible=False, error=one_line(e), **size)
            continue
        except HetccError as e:                       # does not apply (ga with latency, optimum past its limit)
            yield mix_row(cell, status="skipped", error=one_line(e), **size)
            continue
        except Exception as e:
            yield mix_row(cell, status="error", error=one_line(e), **size)
            continue
        numbers = mix_numbers(wplan, obj)
        value = numbers.pop("value")
        ref = _mix_reference(mix, cell, settings.get("workload_gap_to"), references, wplan, value)
        gap = gap_pct(obj.metric, value, ref) if wplan.feasible else None
        artifact = None
        if settings.get("artifacts"):
            from hetcc.compiler.api import board_of
            from hetcc.passes.codegen import emit_workload

            artifact = str(Path(settings["out"]) / "artifacts" / cell.key)
            emit_workload(artifact, board_of(target)[0], [(n, a.program, p) for n, a, p in
                                                          zip(wplan.names, mix, wplan.plans)], wplan)
        used = [a.problem.states.device[s.state] for a, p in zip(mix, wplan.plans) for s in p.slices]
        yield mix_row(cell, status="ok" if wplan.feasible else "infeasible", feasible=wplan.feasible,
                   deadline_ms=obj.deadline_ms, value=value, reference=ref, gap_pct=gap,
                   planner_seconds=wplan.seconds, slices=sum(len(p.slices) for p in wplan.plans),
                   devices=",".join(dict.fromkeys(used)), artifact=artifact,
                   error="; ".join(wplan.violations) or None, stats=_stats(wplan.stats), **numbers, **size)


def _plan_mix(mix: list[Any], cell: Cell, planner: str, options: dict, budget: Any, *,
              allow_infeasible: bool) -> tuple[Any, Any]:
    from hetcc.compiler.api import plan_workload

    return plan_workload(mix, cell.objective, deadline=None if cell.deadline == "none" else cell.deadline,
                         power_cap=None if cell.power_cap == "none" else cell.power_cap, planner=planner,
                         planner_options=options, seed=cell.seed, budget=budget, allow_infeasible=allow_infeasible)


def mix_numbers(wplan: Any, objective: Any) -> dict[str, Any]:
    """A workload plan's row numbers: ``value`` (the objective's metric: read off the contention
    score for throughput, fairness, overall; off the summed latency and energy otherwise),
    latency_ms / energy_mj / edp_mj_ms (the models' plans summed: one inference of each, one
    after another) and, where the planner scored the mix, throughput_ips (T_w), t_norm, jain and
    overall (FairBoost's Table 3)."""
    from types import SimpleNamespace

    from hetcc.planners.metrics import WORKLOAD_METRICS

    latency = sum(p.latency_ms for p in wplan.plans)
    energy = sum(p.energy_mj for p in wplan.plans)
    out: dict[str, Any] = {"latency_ms": latency, "energy_mj": energy, "edp_mj_ms": latency * energy}
    score = wplan.stats.get("score")
    if score:
        out.update(throughput_ips=score["T_w"], t_norm=score["T_norm"], jain=score["J"], overall=score["O"])
    metric = objective.measure
    if objective.metric in WORKLOAD_METRICS:
        out["value"] = metric.score(SimpleNamespace(throughput=score["T_w"], normalised=score["T_norm"],
                                                    jain=score["J"], overall=score["O"])) if score else None
    else:
        out["value"] = objective.value(latency, energy)
    return out


def gap_pct(metric: str, value: float | None, ref: float | None) -> float | None:
    """How far ``value`` is from the reference's ``ref``, in % of it, positive = worse (for a
    metric where higher is better, such as O, the shortfall); None without both."""
    from hetcc.planners.metrics import get_metric

    if value is None or not ref or not math.isfinite(ref):
        return None
    return get_metric(metric).sense * (value - ref) / abs(ref) * 100.0 + 0.0     # + 0.0: no -0.0


def _mix_reference(mix: list[Any], cell: Cell, gap_to: str | None, cache: dict, wplan: Any,
                   value: float | None) -> float | None:
    """The workload reference planner's value for this cell's objective (cached per objective,
    seed and device set); None where it does not apply (a plan metric, a mix past its limit)."""
    from hetcc.core.errors import HetccError

    if not gap_to:
        return None
    key = (cell.objective, cell.deadline, cell.power_cap, cell.seed, cell.devices)
    if wplan.planner == gap_to and wplan.feasible and cell.options == "{}" and not cell.budget:
        cache[key] = value
    if key not in cache:
        try:
            ref, obj = _plan_mix(mix, cell, gap_to, {}, None, allow_infeasible=False)
            cache[key] = mix_numbers(ref, obj)["value"]
        except HetccError:                            # does not apply, or nothing feasible
            cache[key] = None
    return cache[key]


def _warm_mix_planner(mix: list[Any], cell: Cell, options: dict) -> None:
    """``_warm_planner`` for a mix: its planner once, untimed, for one step."""
    from hetcc.planners import Budget

    base = "mix:" + cell.planner.split(":")[0]
    if base in _WARM:
        return
    _WARM.add(base)
    try:
        _plan_mix(mix, cell, cell.planner, options, Budget(steps=1), allow_infeasible=True)
    except Exception:                                 # the timed run reports what goes wrong
        pass


def restrict(analysis: Any, devices: str) -> Any:
    """``analysis`` with only ``devices`` (``all`` or ``big+gpu``) legal; presets such as
    ``--deadline medium`` are then relative to what those devices can do."""
    if devices == "all":
        return analysis
    import dataclasses

    import numpy as np

    problem = analysis.problem
    mask = np.isin(np.array(problem.states.device), devices.split("+"))
    return dataclasses.replace(analysis, problem=problem.replace(legal=problem.legal & mask[None, :]),
                               _reference=None)


def _budget(text: str) -> Any:
    from hetcc.planners import Budget

    if not text:
        return None
    parts = dict(pair.split("=") for pair in text.split(","))
    return Budget(steps=int(parts["steps"]) if "steps" in parts else None,
                  seconds=float(parts["seconds"]) if "seconds" in parts else None)


#: planners this worker process has run once (their imports and first-call set-up are done)
_WARM: set[str] = set()


def _warm_planner(analysis: Any, obj: Any, planner: str, options: dict) -> None:
    """Run ``planner`` once, untimed, for one step: planner_seconds then measures planning, not
    importing torch (dqn) or first-call set-up."""
    from hetcc.planners import Budget

    base = planner.split(":")[0]
    if base in _WARM:
        return
    _WARM.add(base)
    try:
        analysis.plan(obj, planner=planner, options=options, budget=Budget(steps=1), allow_infeasible=True)
    except Exception:                                 # the timed run reports what goes wrong
        pass


def _stats(stats: Mapping[str, Any]) -> str | None:
    """The plan's numeric statistics as compact JSON: numbers, flags and lists of numbers (a
    list's inf or nan as null, e.g. a search's best-so-far curve before anything fitted)."""
    def number(v: Any) -> bool:
        return isinstance(v, (int, float))

    keep: dict[str, Any] = {}
    for k, v in dict(stats or {}).items():
        if isinstance(v, bool) or (isinstance(v, int) and number(v)) or (isinstance(v, float) and math.isfinite(v)):
            keep[k] = v
        elif isinstance(v, (list, tuple)) and all(number(x) and not isinstance(x, bool) for x in v):
            keep[k] = [x if math.isfinite(x) else None for x in v]
    return json.dumps(keep, sort_keys=True, separators=(",", ":")) if keep else None


def objective_of(analysis: Any, metric: str, deadline: str, power_cap: str) -> Any:
    """The Objective of a spec's (objective, deadline, power cap) for ``analysis`` ("none": no limit)."""
    return analysis.objective(metric, None if deadline == "none" else deadline,
                              None if power_cap == "none" else power_cap)


def _reference(analysis: Any, obj: Any, cell: Cell, gap_to: str | None, cache: dict, plan: Any,
               value: float) -> float | None:
    """The reference planner's value for this objective (cached per objective and seed)."""
    from hetcc.core.errors import HetccError

    if not gap_to:
        return None
    key = (cell.objective, cell.deadline, cell.power_cap, cell.seed)
    if cell.planner == gap_to and plan.feasible:
        cache[key] = value
    if key not in cache:
        try:
            ref = analysis.plan(obj, planner=gap_to, seed=cell.seed)
            cache[key] = obj.value(ref.latency_ms, ref.energy_mj)
        except HetccError:                            # does not apply, or nothing feasible
            cache[key] = None
    return cache[key]
