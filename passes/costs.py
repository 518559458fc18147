"""EstimateCosts: the L x S cost table — from the analytical model for a modelled board, or
measured with onnxruntime on this machine for a measured target (``host``) — with the memory
rows that apply to the model (``--observations``): the size a device's runtime reports for the
whole model, which that device's capacity rule charges instead of the board's estimate
(``PlanningProblem.with_reported_memory``: the table's capacity and legality become the ones the
planners use, and ``REPORTED_MEMORY`` records the rule for ``costs.json`` and ``inspect --why``)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Mapping

import numpy as np

from hetcc.compiler.passmanager import Pass, PassResult
from hetcc.core.errors import InfeasibleError
from hetcc.compiler.program import COSTS, LAYERS, LEGALITY, TENSORS, Program
from hetcc.passes.legality import Legality

#: analysis key: {device: ReportedMemory}, only when a memory row applied to the model
REPORTED_MEMORY = "reported_memory"


@dataclass(frozen=True)
class ReportedMemory:
    """The capacity rule a memory row set for ``device``: its runtime reports the whole model
    takes ``reported_bytes`` where the board's rule charges ``board_bytes``, so each slice is
    charged its share of the reported size against the device's ``capacity_bytes`` (the table's
    capacity becomes capacity x board / reported in the board's units); ``source`` names the row."""

    device: str
    reported_bytes: float
    board_bytes: int
    capacity_bytes: float
    source: str

    def share(self, charge: float) -> float:
        """The reported bytes a slice the board charges ``charge`` is charged."""
        return float(charge) * self.reported_bytes / self.board_bytes

    def reason(self, charge: float) -> str:
        """Why a layer the board charges ``charge`` cannot run on the device (legality's words)."""
        return (f"its share of the {self.reported_bytes / 1e6:g} MB {self.device}'s runtime reports for the model "
                f"({self.share(charge) / 1e6:.1f} MB; memory row {self.source}) exceeds the capacity "
                f"({self.capacity_bytes / 1e6:.1f} MB)")

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device, "reported_bytes": round(self.reported_bytes),
                "board_bytes": int(self.board_bytes), "capacity_bytes": int(self.capacity_bytes),
                "source": self.source}


#: what the costs pass asks for the memory rows of the program: {device: size} (an object with
#: ``nbytes`` and ``source``, ``hetcc.measure.measured_target.ReportedSize``)
MemoryLookup = Callable[[Program], Mapping[str, Any]]


class EstimateCosts(Pass):
    name: ClassVar[str] = "costs"
    requires: ClassVar[tuple[str, ...]] = (TENSORS, LAYERS, LEGALITY)
    ensures: ClassVar[tuple[str, ...]] = (COSTS,)

    def __init__(self, target: Any, repeats: int | None = None, use_cache: bool = True,
                 memory: MemoryLookup | None = None) -> None:
        self.target = target
        self.repeats = repeats
        self.use_cache = use_cache
        self.memory = memory

    def run(self, program: Program) -> PassResult:
        layers = program.get(LAYERS)
        legality = program.get(LEGALITY)
        if self.target.kind == "measured":
            from hetcc.measure.profiler import measured_costs

            table = measured_costs(program, self.target, legality.mask, repeats=self.repeats,
                                   use_cache=self.use_cache)
        else:
            from hetcc.compiler.costmodel import analytical_costs

            table = analytical_costs(layers, self.target, legality.mask)
        rule = ""
        if self.memory is not None:
            table = apply_reported_memory(program, table, self.memory(program))
            rule = "".join(f"; {r.device} charged the {r.reported_bytes / 1e6:g} MB reported ({r.source})"
                           for r in reported_memory(program).values())
        program.put(COSTS, table)
        return PassResult(False, f"{table.source}: {len(table.layers)} layers x {len(table.states)} states{rule}")


def reported_memory(program: Program) -> dict[str, ReportedMemory]:
    """The capacity rules memory rows set for ``program`` ({} when none applied)."""
    return dict(program.get(REPORTED_MEMORY)) if program.has(REPORTED_MEMORY) else {}


def apply_reported_memory(program: Program, table: Any, sizes: Mapping[str, Any]) -> Any:
    """``table`` (a CostTable) with each device of ``sizes`` charging the model the size its
    runtime reports (``PlanningProblem.with_reported_memory``, the one definition): its capacity
    and legality are the planners'. The layers this takes off a device get legality's reason
    (naming the reported size and the row) and ``REPORTED_MEMORY`` records the rule; a device
    without states in the table is skipped."""
    if not sizes:
        return table
    problem = before = table.problem()
    devices = [s.device for s in table.states]
    rules: dict[str, ReportedMemory] = {}
    for device, size in sizes.items():
        if device not in devices:
            continue
        k = devices.index(device)
        rules[device] = ReportedMemory(device, float(size.nbytes), int(problem.memory_bytes[:, k].sum()),
                                       float(table.capacity_bytes[k]), str(size.source))
        problem = problem.with_reported_memory(device, float(size.nbytes))
    if not rules:
        return table
    legality = program.get(LEGALITY)
    mask, reasons = np.array(legality.mask, dtype=bool), dict(legality.reasons)
    for device, rule in rules.items():
        cols = [k for k, d in enumerate(devices) if d == device]
        di = list(legality.devices).index(device)
        for i, layer in enumerate(program.get(LAYERS)):
            if before.legal[i, cols].any() and not problem.legal[i, cols].any():
                mask[i, di] = False
                reasons[(layer.id, device)] = rule.reason(problem.memory_bytes[i, cols[0]])
    for i, layer in enumerate(program.get(LAYERS)):
        if not mask[i].any():       # as the legality pass refuses such a layer, naming each device's reason
            per_dev = "; ".join(f"{d}: {reasons.get((layer.id, d), '?')}" for d in legality.devices)
            raise InfeasibleError(f"layer {layer.name} is legal on no device: {per_dev}; drop the memory row "
                                  "(--observations none) or compile for a board with more room")
    program.put(LEGALITY, Legality(devices=legality.devices, mask=mask, reasons=reasons))
    program.put(REPORTED_MEMORY, rules)
    return dataclasses.replace(table, capacity_bytes=np.array(problem.capacity_bytes, dtype=np.float64),
                               legal=np.array(problem.legal, dtype=bool))


def costs_document(program: Program, encoded: bool = False) -> dict[str, Any]:
    """The ``costs.json`` document of ``program``: its cost table's, with ``reported_memory`` (the
    capacity rule each memory row set: the table's ``capacity_bytes`` are those it gave) only when
    a row applied, so other artifacts keep the bytes they always had. ``encoded``: the tables as
    their JSON text (``CostTable.to_json``)."""
    doc = program.get(COSTS).to_json(encoded=encoded)
    rules = reported_memory(program)
    if rules:
        doc["reported_memory"] = [r.to_json() for r in rules.values()]
    return doc


__all__ = ["EstimateCosts", "MemoryLookup", "REPORTED_MEMORY", "ReportedMemory", "apply_reported_memory",
           "costs_document", "reported_memory"]
