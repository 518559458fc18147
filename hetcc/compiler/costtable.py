"""CostTable: the L x S numbers a planner sees, and their ``costs.json`` form.

Produced by ``passes.costs`` (from the analytical cost model or from measurements), turned
into a PlanningProblem for a given objective, and written beside the manifest so any tool can
re-check the plan.
"""
from __future__ import annotations

import json
import math
import operator
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from hetcc.core.opclasses import OP_CLASSES
from hetcc.planners.problem import FEATURES, LayerFeatures, PlanningProblem, StateTable
from hetcc.compiler.program import Layer
from hetcc.targets import State


#: the Eq. 2 columns of ``FEATURES`` (``Layer.vector``)
EQ2 = tuple(name for name in FEATURES if name.startswith("eq2_"))


#: per op class: its ``FEATURES`` names for node count, FLOPs and integer FLOPs
_CLASS_KEYS = tuple((c, f"{c}_nodes", f"{c}_flops", f"{c}_int8_flops") for c in OP_CLASSES)
_GEOMETRY = ("kernel", "stride", "in_channels", "out_channels")


def layer_features(layers: tuple[Layer, ...]) -> LayerFeatures:
    """The named per-layer numbers of ``FEATURES`` (planners' layer vectors and states)."""
    pick = operator.itemgetter(*FEATURES)
    rows = []
    for l in layers:
        nc, g, fc, i8 = l.node_classes, l.geometry, l.flops_by_class, l.int8_flops_by_class
        row = {"nodes": len(l.nodes) - l.fused_nodes, "flops": l.flops, "param_bytes": l.param_bytes,
               "input_bytes": l.input_bytes, "output_bytes": l.output_bytes}
        for c, nodes, flops, int8 in _CLASS_KEYS:
            row[nodes] = nc.get(c, 0)
            row[flops] = fc.get(c, 0.0)
            row[int8] = i8.get(c, 0.0)
        for k in _GEOMETRY:
            row[k] = g.get(k, 0)
        row["activation_bytes"] = l.activation_bytes
        eq2 = l.vector or (float(l.id),) + (0.0,) * (len(EQ2) - 1)    # a Layer built without its vector
        row.update(zip(EQ2, eq2))
        rows.append(pick(row))
    # numpy turns each number into a float64 as float() does
    return LayerFeatures(FEATURES, np.array(rows, dtype=np.float64).reshape(len(layers), len(FEATURES)))


class JSONText(str):
    """Text that is JSON already: ``CostTable.to_json(encoded=True)`` holds its [L, S] tables so,
    for an encoder that writes such a value as it is (``passes.codegen``; ``json.dumps`` would
    quote it as a string)."""


def json_rows(a: np.ndarray, ok: np.ndarray | None = None) -> JSONText:
    """The text ``json.dumps(rows, allow_nan=False)`` gives for ``rows``, the list of the rows of
    the 2-D numeric array ``a`` as Python numbers (``a.astype(object).tolist()``) with None
    (null) in the cells where ``ok`` is False. Each distinct row (bit for bit, and in ``ok``) is
    converted and encoded once: a model of repeated blocks has few, and float repr is the slow
    part of writing costs.json."""
    a = np.ascontiguousarray(a)
    ok = np.ones(a.shape, dtype=bool) if ok is None else np.ascontiguousarray(ok, dtype=bool)
    rows = a.shape[0]
    if a.dtype.kind not in "biuf" or a.ndim != 2 or ok.shape != a.shape:
        raise ValueError(f"json_rows: a 2-D numeric array and a mask of its shape, not {a.dtype} {a.shape}, {ok.shape}")
    if rows == 0:
        return JSONText("[]")
    if a.size == 0:
        return JSONText("[" + ", ".join(["[]"] * rows) + "]")
    clean = np.where(ok, a, np.zeros((), dtype=a.dtype))      # a cell written as null is any value
    key = np.concatenate([clean.view(np.uint8).reshape(rows, -1), ok.view(np.uint8).reshape(rows, -1)], axis=1)
    width, data = key.shape[1], key.tobytes()
    index: dict[bytes, int] = {}      # a distinct row -> its number
    first: list[int] = []             # the first row of each distinct row
    which: list[int] = []             # each row's distinct row
    for i in range(rows):
        k = data[i * width:(i + 1) * width]
        u = index.get(k)
        if u is None:
            u = index[k] = len(first)
            first.append(i)
        which.append(u)
    distinct = a[first].astype(object)
    distinct[~ok[first]] = None
    text = json.dumps(distinct.tolist(), allow_nan=False)
    if len(first) == rows:
        return JSONText(text)
    # numbers, null, true and false only: each row's text is "[...]" without brackets inside
    inner = text[2:-2].split("], [")
    assert len(inner) == len(first)
    row_text = [f"[{t}]" for t in inner]
    return JSONText("[" + ", ".join([row_text[u] for u in which]) + "]")


@dataclass(frozen=True)
class CostTable:
    layers: tuple[Layer, ...]
    states: tuple[State, ...]
    latency_ms: np.ndarray        # [L, S]
    power_mw: np.ndarray          # [L, S]
    transfer_in_ms: np.ndarray    # [L, S]
    transfer_out_ms: np.ndarray   # [L, S]
    transfer_in_mj: np.ndarray    # [L, S]
    transfer_out_mj: np.ndarray   # [L, S]
    legal: np.ndarray             # [L, S] bool
    capacity_bytes: np.ndarray    # [S], inf = unlimited
    base_power_mw: float
    source: str = "analytical"    # 'analytical' or 'measured'
    #: [S] share of a layer's activation bytes each state counts against its capacity (None: no
    #: state counts them, parameters only; hetcc.planners.problem.capacity_charge)
    activation_factor: np.ndarray | None = None
    #: the communication share of transfer_* (``hetcc.planners.problem.Communication``; None: unknown)
    communication: Any = None

    def state_table(self) -> StateTable:
        return StateTable(device=tuple(s.device for s in self.states), kind=tuple(s.kind for s in self.states),
                          freq_mhz=np.array([float(s.frequency_mhz or 0.0) for s in self.states]),
                          is_fmax=np.array([s.is_fmax for s in self.states], dtype=bool))

    def problem(self, name: str = "model", hardware: Any = None,
                hardware_config: Mapping[str, Any] | None = None) -> PlanningProblem:
        """The planners' view of this table (numbers only)."""
        counts = self.activation_factor is not None
        return PlanningProblem(
            latency_ms=self.latency_ms, power_mw=self.power_mw,
            transfer_in_ms=self.transfer_in_ms, transfer_out_ms=self.transfer_out_ms,
            transfer_in_mj=self.transfer_in_mj, transfer_out_mj=self.transfer_out_mj,
            legal=self.legal,
            param_bytes=np.array([l.param_bytes for l in self.layers], dtype=np.int64),
            capacity_bytes=self.capacity_bytes, base_power_mw=self.base_power_mw, states=self.state_table(),
            layer_names=tuple(l.name for l in self.layers), layer_features=layer_features(self.layers),
            hardware=hardware, hardware_config=hardware_config, name=name,
            activation_bytes=np.array([l.activation_bytes for l in self.layers], dtype=np.int64) if counts else None,
            activation_factor=self.activation_factor, communication=self.communication,
        )

    def to_json(self, encoded: bool = False) -> dict[str, Any]:
        """The ``costs.json`` document. ``encoded``: its [L, S] tables (the costs and ``legal``)
        as their JSON text (``JSONText``, ``json_rows``), for an encoder that writes them as they
        are: the same text, much faster for a large model."""
        keep = np.asarray(self.legal, dtype=bool)

        def table(a: np.ndarray) -> list[list[float | None]] | JSONText:
            # Python floats where legal and finite, None elsewhere (an object array's tolist: the
            # same values as float(v) per cell, without a Python loop over L x S cells)
            a = np.asarray(a, dtype=np.float64)
            ok = keep & np.isfinite(a)
            if encoded:
                return json_rows(a, ok)
            out = a.astype(object)
            out[~ok] = None
            return out.tolist()

        counts = self.activation_factor is not None
        doc: dict[str, Any] = {
            "schema": "hetcc.costs/1",
            "source": self.source,
            "layers": [{"id": l.id, "nodes": list(l.nodes), "op_types": list(l.op_types),
                        "param_bytes": int(l.param_bytes), "flops": float(l.flops),
                        "input_bytes": int(l.input_bytes), "output_bytes": int(l.output_bytes)}
                       for l in self.layers],
            "states": [{"device": s.device, "kind": s.kind, "frequency_mhz": s.frequency_mhz} for s in self.states],
            "latency_ms": table(self.latency_ms),
            "power_mw": table(self.power_mw),
            "transfer_in_ms": table(self.transfer_in_ms),
            "transfer_out_ms": table(self.transfer_out_ms),
            "transfer_in_mj": table(self.transfer_in_mj),
            "transfer_out_mj": table(self.transfer_out_mj),
            "legal": json_rows(self.legal.astype(bool)) if encoded else self.legal.astype(bool).tolist(),
            "capacity_bytes": [None if not math.isfinite(c) else int(c) for c in self.capacity_bytes.tolist()],
            "base_power_mw": float(self.base_power_mw),
        }
        if counts:   # only then: a table whose states count parameters alone is written as before
            for entry, l in zip(doc["layers"], self.layers):
                entry["activation_bytes"] = int(l.activation_bytes)
            doc["activation_factor"] = [float(f) for f in np.asarray(self.activation_factor).tolist()]
        return doc
