"""Why a plan is what it is: ``why.json`` (written by codegen into every model artifact) and ``hetcc inspect --why``.

Two questions, answered from the artifact alone:

* **Why was a device not used for a layer?** The legality pass knows (an op the device does not
  support, an element type it does not compute in, parameters over its capacity, a named
  predicate); codegen calls ``write_why`` to store those reasons beside ``costs.json`` as
  ``why.json``, stamped with the sha256 of that ``costs.json`` so a stale file is never shown.
* **Which nodes did hetcc rewrite, and did that make a layer legal?** The canonical pass
  (``passes.canonicalize``) replaces an exporter's form by the one a device lists (``ReduceMean``
  over H, W -> ``GlobalAveragePool``); ``why.json`` lists each rewrite under ``rewrites`` (only
  when there is one: older hetcc neither writes nor needs the key) with its layer and the
  devices on which that layer is now legal.
* **Did a reported model size decide it?** A memory row (``--observations``: the size a device's
  runtime reports for the whole model, MOSAIC's TensorFlow Lite sizes) makes that device's
  capacity rule charge each slice its share of the reported size; ``costs.json`` records the rule
  under ``reported_memory`` (its ``capacity_bytes`` are the ones the plan used), and the layers
  and slices it keeps off the device name the reported size (``capacity_lines``, the slices'
  notes).
* **What would the next-best choice cost?** For every slice of a plan, each other legal device
  state (device and frequency) for the same layers, scored with the cost tables of
  ``costs.json`` (the one slice-cost formula of ``hetcc.planners.problem``); the best one under
  the plan's objective, with its latency and energy difference and whether the deadline and
  power cap still hold.

Over the parsed JSON and ``hetcc.planners.problem`` (numpy only: no onnx), so ``inspect --why``
also runs on a board that holds only numpy and onnxruntime.
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

__all__ = ["WHY_NAME", "SCHEMA", "why_document", "write_why", "check_why", "layer_reasons", "rewrite_lines",
           "layer_runs", "slice_alternatives", "next_best", "why_report", "LayerRun", "Alternative", "SliceWhy",
           "capacity_lines", "reported_rules"]

WHY_NAME = "why.json"
SCHEMA = "hetcc.why/1"


# ---------------------------------------------------------------- compile side
def why_document(program: Any, costs_bytes: bytes) -> dict[str, Any]:
    """The ``why.json`` document of an analysed program: every (layer, device) the legality pass
    refused, with its reason; ``costs_sha256`` ties it to the ``costs.json`` written with it."""
    from hetcc.compiler.program import LEGALITY

    legality = program.get(LEGALITY)
    illegal = [{"layer": int(layer), "device": str(device), "reason": str(reason)}
               for (layer, device), reason in sorted(legality.reasons.items(), key=lambda kv: (kv[0][0], kv[0][1]))]
    doc = {"schema": SCHEMA, "costs_sha256": hashlib.sha256(costs_bytes).hexdigest(),
           "devices": list(legality.devices), "illegal": illegal}
    rewrites = _rewrites(program, legality)
    if rewrites:    # only then: an artifact without rewrites keeps the bytes it always had
        doc["rewrites"] = rewrites
    return doc


def _rewrites(program: Any, legality: Any) -> list[dict[str, Any]]:
    """The canonical pass's rewrites (analysis ``rewrites``): node, rule, op types before and
    after, its layer (None: a constant node, no layer), the devices it was done for and those of
    them on which the layer is now legal."""
    from hetcc.compiler.program import LAYERS
    from hetcc.passes.canonicalize import REWRITES

    if not program.has(REWRITES) or not program.get(REWRITES):
        return []
    layer_of = {n: layer.id for layer in program.get(LAYERS) for n in layer.nodes}
    row_of = {layer.id: i for i, layer in enumerate(program.get(LAYERS))}
    devices = list(legality.devices)
    out = []
    for r in program.get(REWRITES):
        layer = next((layer_of[n] for n in r.nodes if n in layer_of), None)
        legal = [d for d in r.devices if layer is not None and d in devices
                 and bool(legality.mask[row_of[layer], devices.index(d)])]
        out.append({"layer": layer, "node": r.node, "rule": r.rule, "from": list(r.before), "to": list(r.after),
                    "for": list(r.devices), "legal_on": legal})
    return out


def write_why(root: Path, program: Any) -> Path | None:
    """Write ``why.json`` beside the ``costs.json`` just written into ``root``, the temporary
    directory of an artifact being emitted (``passes.codegen``): it appears with the artifact,
    atomically, or not at all."""
    from hetcc.compiler.program import LEGALITY
    from hetcc.runtime.manifest import COSTS_NAME

    if not program.has(LEGALITY):   # costs from elsewhere: inspect --why falls back to costs.json's table
        return None
    doc = why_document(program, (Path(root) / COSTS_NAME).read_bytes())
    path = Path(root) / WHY_NAME
    path.write_text(json.dumps(doc, allow_nan=False) + "\n")
    return path


def check_why(doc: Any, shown: str) -> dict[str, Any]:
    """``doc`` (a parsed ``why.json``) if it has the shape ``write_why`` gives, else a one-line
    ManifestError naming ``shown`` and the key."""
    from hetcc.runtime.errors import ManifestError

    def bad(what: str) -> ManifestError:
        return ManifestError(f"{shown}: {what}; the file is damaged, recompile (or delete it)")

    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise bad(f"expected an object with \"schema\": \"{SCHEMA}\"")
    if not isinstance(doc.get("costs_sha256"), str):
        raise bad("costs_sha256: expected a string")
    illegal = doc.get("illegal")
    if not isinstance(illegal, list):
        raise bad("illegal: expected an array")
    for i, e in enumerate(illegal):
        if not (isinstance(e, dict) and isinstance(e.get("layer"), int) and not isinstance(e.get("layer"), bool)
                and isinstance(e.get("device"), str) and isinstance(e.get("reason"), str)):
            raise bad(f"illegal[{i}]: expected {{\"layer\": int, \"device\": str, \"reason\": str}}")
    rewrites = doc.get("rewrites", [])      # absent in artifacts of older hetcc, and without rewrites
    if not isinstance(rewrites, list):
        raise bad("rewrites: expected an array")
    for i, e in enumerate(rewrites):
        if not (isinstance(e, dict) and (e.get("layer") is None or _is_int(e.get("layer")))
                and isinstance(e.get("node"), str) and isinstance(e.get("rule"), str)
                and all(_strings(e.get(k)) for k in ("from", "to", "for", "legal_on"))):
            raise bad(f"rewrites[{i}]: expected {{\"layer\": int or null, \"node\": str, \"rule\": str, "
                      "\"from\", \"to\", \"for\", \"legal_on\": arrays of strings}")
    return doc


#: the [L][S] tables of costs.json that --why reads (each cell a number, or null where illegal)
COST_TABLES = ("latency_ms", "power_mw", "transfer_in_ms", "transfer_out_ms", "transfer_in_mj", "transfer_out_mj")


def check_costs_for_why(costs: Any, shown: str) -> None:
    """A one-line ManifestError naming ``shown`` and the key unless ``costs`` (a parsed
    ``costs.json`` that passed ``check_costs``) has every key ``inspect --why`` reads, in the
    shapes the compiler writes: ``states`` (objects with a ``device``), ``legal`` and the cost
    tables (one row per layer, one cell per state), per-state ``capacity_bytes`` and
    ``activation_factor`` (optional), a numeric ``base_power_mw``, integer layer sizes."""
    from hetcc.runtime.errors import ManifestError

    def bad(key: str, want: str) -> ManifestError:
        return ManifestError(f"{shown}: {key}: expected {want}; it does not match its manifest, recompile")

    def number(x: Any) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool)

    layers, states = costs["layers"], costs.get("states")
    if not isinstance(states, list) or not states or not all(
            isinstance(st, dict) and isinstance(st.get("device"), str)
            and (st.get("frequency_mhz") is None or number(st.get("frequency_mhz"))) for st in states):
        raise bad("states", "an array of objects with a device name")
    L, S = len(layers), len(states)
    for key, cell in (("legal", lambda v: isinstance(v, bool)), *((k, lambda v: v is None or number(v))
                                                                  for k in COST_TABLES)):
        rows = costs.get(key)
        if not (isinstance(rows, list) and len(rows) == L and all(
                isinstance(r, list) and len(r) == S and all(cell(v) for v in r) for r in rows)):
            raise bad(key, f"{L} rows of {S} cells (layers x states)")
    for key in ("capacity_bytes", "activation_factor"):
        v = costs.get(key)
        if v is not None and not (isinstance(v, list) and len(v) == S and all(x is None or number(x) for x in v)):
            raise bad(key, f"{S} numbers or nulls (one per state)")
    if not number(costs.get("base_power_mw")):
        raise bad("base_power_mw", "a number")
    for i, layer in enumerate(layers):
        for key in ("id", "param_bytes", "activation_bytes"):
            if key in layer and not _is_int(layer[key]):
                raise bad(f"layers[{i}].{key}", "an integer")


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _strings(x: Any) -> bool:
    return isinstance(x, list) and all(isinstance(v, str) for v in x)


def rewrite_lines(why: Mapping[str, Any] | None) -> list[str]:
    """One line per rewrite of a checked ``why.json``: ``L7: ReduceMean -> GlobalAveragePool
    (node node_mean; canonical form; legal on npu)``."""
    lines = []
    for e in (why or {}).get("rewrites", []):
        where = "no layer (constant)" if e["layer"] is None else f"L{e['layer']}"
        legal, wanted = e["legal_on"], [d for d in e["for"] if d not in e["legal_on"]]
        note = "canonical form"
        if legal:
            note += f"; legal on {', '.join(legal)}"
        if wanted:
            note += f"; {', '.join(wanted)} still refuse{'s' if len(wanted) == 1 else ''} the layer"
        lines.append(f"{where}: {' + '.join(e['from'])} -> {' + '.join(e['to'])} (node {e['node']}; {note})")
    return lines


# ---------------------------------------------------------------- reported model sizes
def reported_rules(costs: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """{device: rule} of ``costs.json``'s ``reported_memory`` (absent: {}); a rule holds
    ``reported_bytes``, ``board_bytes``, ``capacity_bytes`` (the device's own) and ``source``."""
    out = {}
    for r in costs.get("reported_memory") or []:
        if isinstance(r, dict) and isinstance(r.get("device"), str) and all(
                isinstance(r.get(k), (int, float)) and not isinstance(r.get(k), bool) and r.get(k) > 0
                for k in ("reported_bytes", "board_bytes", "capacity_bytes")):
            out[r["device"]] = r
    return out


def _share_reason(rule: Mapping[str, Any], charge: float, what: str = "its share") -> str:
    """``what`` of the reported size exceeds the capacity, in MB (the legality pass's words)."""
    share = float(charge) * rule["reported_bytes"] / rule["board_bytes"]
    return (f"{what} of the {rule['reported_bytes'] / 1e6:g} MB {rule['device']}'s runtime reports for the model "
            f"({share / 1e6:.1f} MB; memory row {rule.get('source', '?')}) exceeds the capacity "
            f"({rule['capacity_bytes'] / 1e6:.1f} MB)")


def capacity_lines(costs: Mapping[str, Any] | None) -> list[str]:
    """One line per capacity rule a memory row set (``costs.json``'s ``reported_memory``):
    ``npu: charged the 321.9 MB its runtime reports for the model (hikey970-mosaic.csv line 11),
    not the board's 80.8 MB; a slice fits where its share is within 100.0 MB``."""
    return [f"{d}: charged the {r['reported_bytes'] / 1e6:g} MB its runtime reports for the model "
            f"({r.get('source', '?')}), not the board's {r['board_bytes'] / 1e6:.1f} MB; a slice fits where its "
            f"share is within {r['capacity_bytes'] / 1e6:.1f} MB" for d, r in reported_rules(costs or {}).items()]


# ---------------------------------------------------------------- layers: which devices, why not
@dataclass(frozen=True)
class LayerRun:
    """Layers ``first``..``last`` (costs.json indices) share one answer: ``blocked`` maps each
    device they cannot use to the reason."""

    first: int
    last: int
    blocked: tuple[tuple[str, str], ...]

    def to_json(self) -> dict[str, Any]:
        return {"first_layer": self.first, "last_layer": self.last,
                "blocked": [{"device": d, "reason": r} for d, r in self.blocked]}


def _devices(costs: Mapping[str, Any]) -> list[str]:
    seen: dict[str, None] = {}
    for s in costs["states"]:
        seen.setdefault(str(s["device"]), None)
    return list(seen)


def layer_reasons(costs: Mapping[str, Any], why: Mapping[str, Any] | None) -> list[dict[str, str]]:
    """Per layer of ``costs.json``: {device: reason} for each device it cannot use. With no
    ``why.json`` the refusals still come from costs.json's legality table, with the capacity
    reason where that explains it and "reason not recorded" otherwise."""
    from hetcc.planners.problem import capacity_reason   # numpy only

    layers, states, legal = costs["layers"], costs["states"], costs["legal"]
    devices = _devices(costs)
    by_id = {int(l.get("id", i)): i for i, l in enumerate(layers)}
    out: list[dict[str, str]] = [{} for _ in layers]
    if why is not None:
        for e in why["illegal"]:
            i = by_id.get(e["layer"])
            if i is not None:
                out[i][e["device"]] = e["reason"]
    caps = costs.get("capacity_bytes") or [None] * len(states)
    factors = costs.get("activation_factor") or [0.0] * len(states)   # absent: parameters only
    rules = reported_rules(costs)
    for i, layer in enumerate(layers):
        row = legal[i] if i < len(legal) else []
        for d in devices:
            idx = [k for k, s in enumerate(states) if s["device"] == d]
            if d in out[i] or any(bool(row[k]) for k in idx if k < len(row)):
                continue
            k = next((k for k in idx if k < len(caps) and caps[k] is not None), None)
            cap = None if k is None else caps[k]
            f = float(factors[k]) if k is not None and k < len(factors) else 0.0
            too_big = capacity_reason(int(layer.get("param_bytes", 0)), int(layer.get("activation_bytes", 0)), f, cap)
            if too_big and d in rules:      # the capacity was set by a reported model size: say so
                charge = int(layer.get("param_bytes", 0)) + round(f * int(layer.get("activation_bytes", 0)))
                too_big = _share_reason(rules[d], charge)
            out[i][d] = too_big or "not legal (reason not recorded: no why.json; recompile to see it)"
    return [{d: r[d] for d in devices if d in r} for r in out]


def layer_runs(costs: Mapping[str, Any], why: Mapping[str, Any] | None) -> list[LayerRun]:
    """``layer_reasons`` as runs of consecutive layers with the same answer (readable for 200 layers)."""
    runs: list[LayerRun] = []
    for i, reasons in enumerate(layer_reasons(costs, why)):
        blocked = tuple(reasons.items())
        if runs and runs[-1].blocked == blocked and runs[-1].last == i - 1:
            runs[-1] = LayerRun(runs[-1].first, i, blocked)
        else:
            runs.append(LayerRun(i, i, blocked))
    return runs


# ---------------------------------------------------------------- slices: the next-best choice
@dataclass(frozen=True)
class Alternative:
    """Slice layers moved to another state: its label (``gpu@767``), the change of the plan's
    totals, and whether the plan's limits still hold (None: no such limit)."""

    state: str
    d_latency_ms: float
    d_energy_mj: float | None
    latency_ms: float
    energy_mj: float | None
    meets_deadline: bool | None
    within_power_cap: bool | None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class SliceWhy:
    """One slice: its planned state and the best alternative (None: no other state can run it,
    ``note`` says why)."""

    slice_id: int
    first_layer: int
    last_layer: int
    planned: str
    best: Alternative | None
    legal_alternatives: int
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"slice": self.slice_id, "first_layer": self.first_layer, "last_layer": self.last_layer,
                "planned": self.planned, "legal_alternatives": self.legal_alternatives,
                "best_alternative": None if self.best is None else self.best.to_json(), "note": self.note}


def _label(state: Mapping[str, Any]) -> str:
    f = state.get("frequency_mhz")
    return f"{state['device']}@{f:g}" if f else str(state["device"])


def _state_of(costs: Mapping[str, Any], device: str, freq: float | None) -> int | None:
    for k, s in enumerate(costs["states"]):
        f = s.get("frequency_mhz")
        if s["device"] == device and ((not f and not freq) or (f and freq and abs(f - freq) <= 1e-6 * f)):
            return k
    return None


def _metric_key(metric: str, latency: float, energy: float | None) -> float:
    if metric == "latency" or energy is None:
        return latency
    if metric == "energy":
        return energy
    if metric == "edp":
        return energy * latency
    return latency   # a metric this module does not know: rank by latency


def slice_alternatives(variant: Any, costs: Mapping[str, Any]) -> list[SliceWhy]:
    """For every slice of ``variant`` (a manifest Variant), the best other legal state for its
    layers: deadline and power cap kept first, then the objective's metric on the plan's totals
    with only that slice moved."""
    from hetcc.planners.metrics import RTOL
    from hetcc.planners.problem import problem_from_costs_json

    obj = variant.objective
    deadline, cap = obj.deadline_ms, obj.power_cap_mw
    total_t = variant.predicted.latency_ms
    total_e = variant.predicted.energy_mj     # None: the target has no power model
    problem = problem_from_costs_json(costs)
    rules = reported_rules(costs)
    out: list[SliceWhy] = []
    for j, sl in enumerate(variant.slices):
        first, last = sl.first_layer, sl.last_layer
        planned = f"{sl.device}@{sl.frequency_mhz:g}" if sl.frequency_mhz else sl.device
        if last >= problem.num_layers:
            out.append(SliceWhy(sl.id, first, last, planned, None, 0, "costs.json has fewer layers; recompile"))
            continue
        here = _state_of(costs, sl.device, sl.frequency_mhz)
        if here is None:
            out.append(SliceWhy(sl.id, first, last, planned, None, 0,
                                "its state is not in costs.json (remote or re-configured device)"))
            continue
        now = problem.slice_cost(first, last, here)
        candidates: list[tuple[tuple, Alternative]] = []
        for s, state in enumerate(costs["states"]):
            if s == here or not problem.slice_legal(first, last, s):
                continue
            alt_cost = problem.slice_cost(first, last, s)
            if not math.isfinite(alt_cost.latency_ms):
                continue
            dt = alt_cost.latency_ms - now.latency_ms
            de = None if total_e is None else alt_cost.energy_mj - now.energy_mj
            lat = total_t + dt
            en = None if de is None else total_e + de
            meets = None if deadline is None else lat <= deadline * (1 + RTOL)
            within = None if cap is None or en is None else (en / lat * 1000.0 if lat > 0 else 0.0) <= cap * (1 + RTOL)
            alt = Alternative(_label(state), dt, de, lat, en, meets, within)
            candidates.append((_rank(obj.metric, alt), alt))
        note = "; ".join(_reported_notes(problem, costs, rules, variant.slices[j - 1] if j else None, sl, here))
        if not candidates:
            out.append(SliceWhy(sl.id, first, last, planned, None, 0,
                                f"no other device or frequency can run L{first}-L{last}" + (f"; {note}" if note else "")))
            continue
        best = min(candidates, key=lambda c: c[0])[1]
        out.append(SliceWhy(sl.id, first, last, planned, best, len(candidates), note))
    return out


def _reported_notes(problem: Any, costs: Mapping[str, Any], rules: Mapping[str, Any], prev: Any, sl: Any,
                    here: int) -> list[str]:
    """Where a reported model size (``reported_rules``) decided slice ``sl``: a device whose
    capacity alone keeps its layers off it, and a split from ``prev`` (the slice before, on the
    same device) that one slice would not fit."""
    first, last = sl.first_layer, sl.last_layer
    out: dict[str, str] = {}
    for s, state in enumerate(costs["states"]):
        d = str(state["device"])
        if (d in rules and d != sl.device and d not in out and bool(problem.legal[first:last + 1, s].all())
                and not problem.slice_fits(first, last, s)):
            out[d] = (f"{d} cannot hold L{first}-L{last} as one slice: "
                      + _share_reason(rules[d], problem.slice_bytes(first, last, s), "their share"))
    if (prev is not None and sl.device in rules and prev.device == sl.device
            and bool(problem.legal[prev.first_layer:last + 1, here].all())
            and not problem.slice_fits(prev.first_layer, last, here)):
        out[""] = (f"split from slice {prev.id}: {sl.device} cannot hold L{prev.first_layer}-L{last} as one slice: "
                   + _share_reason(rules[sl.device], problem.slice_bytes(prev.first_layer, last, here), "their share"))
    return list(out.values())


def _rank(metric: str, alt: Alternative) -> tuple:
    """Limits kept first, then the objective's metric on the plan's new totals."""
    return (alt.meets_deadline is False, alt.within_power_cap is False,
            _metric_key(metric, alt.latency_ms, alt.energy_mj))


def next_best(variant: Any, slices: Sequence[SliceWhy]) -> SliceWhy | None:
    """The single-slice change that ranks best (the next-best plan one step from this one)."""
    movable = [s for s in slices if s.best is not None]
    return min(movable, key=lambda s: _rank(variant.objective.metric, s.best), default=None)


def why_report(manifest: Any, costs: Mapping[str, Any] | None, why: Mapping[str, Any] | None,
               variants: Sequence[str]) -> dict[str, Any]:
    """The ``inspect --why --json`` document of one model artifact."""
    if costs is None:
        return {"model": manifest.model.name, "layers": None, "variants": None,
                "note": "no costs.json in this artifact; recompile to see why"}
    rules = reported_rules(costs)
    extra = {"reported_memory": list(rules.values()), "capacity": capacity_lines(costs)} if rules else {}
    return {"model": manifest.model.name, "reasons_recorded": why is not None, **extra,
            "layers": [r.to_json() for r in layer_runs(costs, why)],
            "rewrites": list((why or {}).get("rewrites", [])),
            "variants": {n: _variant_json(manifest.variants[n], costs) for n in variants}}


def _variant_json(variant: Any, costs: Mapping[str, Any]) -> dict[str, Any]:
    slices = slice_alternatives(variant, costs)
    best = next_best(variant, slices)
    return {"slices": [s.to_json() for s in slices], "next_best": None if best is None else best.to_json()}
