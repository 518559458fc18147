"""CheckLegality: which layer may run on which device of the target, and why not.

A layer is illegal on a device when it contains an op type the device does not support, an
element type it does not compute in (integer index types are not checked, see
``hetcc.targets.INDEX_DTYPES``), fails one of the device's named predicates, or holds more
than the device's per-slice capacity on its own: its parameters, plus its activations on a device
that counts them (``hetcc.planners.problem.capacity_charge``; the capacity of a whole slice is
the planners' check). A layer legal on no device makes the model infeasible on the target.
A memory row (``--observations``: the size a device's runtime reports for the model) can take
more layers off a device; the costs pass, which applies it to the capacities, adds those cells
to ``Legality`` with their reason (``passes.costs.apply_reported_memory``).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import ClassVar, Mapping, Sequence

import numpy as np
from hetcc.compiler.onnxir import ir

from hetcc.core.errors import InfeasibleError
from hetcc.compiler.graphutil import walk
from hetcc.compiler.passmanager import Pass, PassResult
from hetcc.planners.problem import capacity_reason
from hetcc.compiler.program import LAYERS, LEGALITY, TENSORS, Layer, Program, TensorInfo
from hetcc.targets import PREDICATES, Device, Target

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Legality:
    """mask[l, d]: layer l may run on ``devices[d]``; reasons[(layer id, device)]: why not."""

    devices: tuple[str, ...]
    mask: np.ndarray  # [L, D] bool
    reasons: dict[tuple[int, str], str]

    def reason(self, layer_id: int, device: str) -> str | None:
        return self.reasons.get((layer_id, device))


def device_reasons(layer: Layer, nodes: Sequence[ir.Node], tensors: Mapping[str, TensorInfo],
                   device: Device) -> list[str]:
    """Every reason ``layer`` cannot run on ``device`` (empty: legal)."""
    return op_reasons(layer, device) + predicate_reasons(layer, nodes, tensors, device)


def op_reasons(layer: Layer, device: Device) -> list[str]:
    """The reasons of ``device_reasons`` that depend on the layer's op types, element types and
    bytes alone (ops, dtypes, capacity): equal for equal such layers."""
    out: list[str] = []
    bad_ops = sorted(op for op in set(layer.op_types) if not device.supports_op(op))
    if bad_ops:
        out.append(f"op{'s' if len(bad_ops) > 1 else ''} {', '.join(bad_ops)} unsupported")
    bad_dtypes = sorted(dt for dt in set(layer.dtypes) if not device.supports_dtype(dt))
    if bad_dtypes:
        out.append(f"dtype{'s' if len(bad_dtypes) > 1 else ''} {', '.join(bad_dtypes)} unsupported")
    too_big = capacity_reason(layer.param_bytes, layer.activation_bytes, device.activation_factor,
                              device.capacity_bytes)
    if too_big:
        out.append(too_big)
    return out


def predicate_reasons(layer: Layer, nodes: Sequence[ir.Node], tensors: Mapping[str, TensorInfo],
                      device: Device) -> list[str]:
    """The reasons of ``device_reasons`` the device's named predicates give."""
    out: list[str] = []
    for name in device.predicates:
        why = PREDICATES[name](layer, nodes, tensors)
        if why:
            out.append(f"{name}: {why}")
    return out


class CheckLegality(Pass):
    """Ensures ``legality``: an [L, D] mask over the target's devices with a reason per illegal
    cell; raises InfeasibleError naming the layer when a layer is legal on no device."""

    name: ClassVar[str] = "legality"
    requires: ClassVar[tuple[str, ...]] = (LAYERS, TENSORS)
    ensures: ClassVar[tuple[str, ...]] = (LEGALITY,)

    def __init__(self, target: Target) -> None:
        self.target = target

    def run(self, program: Program) -> PassResult:
        layers: Sequence[Layer] = program.get(LAYERS)
        tensors: Mapping[str, TensorInfo] = program.get(TENSORS)
        by_name = {n.name: n for n in program.graph}
        devices = self.target.devices
        mask = np.ones((len(layers), len(devices)), dtype=bool)
        reasons: dict[tuple[int, str], str] = {}
        # a device's reasons but its predicates' are a function of a layer's op types, dtypes and
        # bytes alone: computed once per distinct such layer (a 20k-layer chain has one)
        known: dict[tuple, list[str]] = {}
        for li, layer in enumerate(layers):
            nodes = [by_name[n] for n in layer.nodes if n in by_name]
            legal_somewhere = False
            for di, dev in enumerate(devices):
                key = (di, tuple(layer.op_types), tuple(layer.dtypes), layer.param_bytes, layer.activation_bytes)
                ops = known.get(key)
                if ops is None:
                    ops = known[key] = op_reasons(layer, dev)
                why = ", ".join(ops + predicate_reasons(layer, nodes, tensors, dev) if dev.predicates else ops)
                if why:
                    mask[li, di] = False
                    reasons[(layer.id, dev.name)] = why
                else:
                    legal_somewhere = True
            if not legal_somewhere:
                raise InfeasibleError(self._nowhere(layer, nodes, reasons))
        program.put(LEGALITY, Legality(devices=self.target.device_names, mask=mask, reasons=reasons))
        n_illegal = int((~mask).sum())
        return PassResult(False, f"{len(layers)} layers x {len(devices)} devices: {n_illegal} illegal cells")

    def _nowhere(self, layer: Layer, nodes: Sequence[ir.Node], reasons: Mapping[tuple[int, str], str]) -> str:
        """One line: the layer, the node and op that block it (if an op does), each device's reason."""
        where = ""
        devs = self.target.devices
        for blocks in (lambda op: not any(d.supports_op(op) for d in devs),   # unsupported everywhere
                       lambda op: not all(d.supports_op(op) for d in devs)):  # else somewhere
            hit = next(((n, op) for n in nodes for op in (m.op_type for m in walk(n)) if blocks(op)), None)
            if hit is not None:
                where = f" (node {hit[0].name!r}, op {hit[1]!r})"
                break
        per_dev = "; ".join(f"{d.name}: {reasons[(layer.id, d.name)]}" for d in self.target.devices)
        return f"layer {layer.name}{where} is legal on no device of {self.target.name}: {per_dev}"


__all__ = ["CheckLegality", "Legality", "device_reasons", "op_reasons", "predicate_reasons"]
