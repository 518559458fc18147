"""EstimateCosts: the L x S cost table — from the analytical model for a modelled board, or
measured with onnxruntime on this machine for a measured target (``host``)."""
from __future__ import annotations

from typing import Any, ClassVar

from hetcc.compiler.passmanager import Pass, PassResult
from hetcc.compiler.program import COSTS, LAYERS, LEGALITY, TENSORS, Program


class EstimateCosts(Pass):
    name: ClassVar[str] = "costs"
    requires: ClassVar[tuple[str, ...]] = (TENSORS, LAYERS, LEGALITY)
    ensures: ClassVar[tuple[str, ...]] = (COSTS,)

    def __init__(self, target: Any, repeats: int | None = None, use_cache: bool = True) -> None:
        self.target = target
        self.repeats = repeats
        self.use_cache = use_cache

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
        program.put(COSTS, table)
        return PassResult(False, f"{table.source}: {len(table.layers)} layers x {len(table.states)} states")
