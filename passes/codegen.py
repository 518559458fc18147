"""EmitArtifact: apply the plan to the graph — one ONNX file per slice, manifest.json and
costs.json — written to a temporary directory and renamed into place, so a failed or
interrupted compile leaves nothing behind and an existing output is replaced only on success."""
from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Iterator

import onnx_ir as ir

from hetcc import __version__
from hetcc.costtable import CostTable
from hetcc.errors import UsageError
from hetcc.optimizers.problem import Objective, Plan
from hetcc.passmanager import Pass, PassResult
from hetcc.runtime.manifest import sha256_file
from hetcc.program import ARTIFACT, COSTS, LAYERS, PLAN, TENSORS, Layer, Program, TensorInfo

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
COSTS_FILE = "costs.json"


@dataclass(frozen=True)
class RuntimeSettings:
    """Session settings the runtime applies (see DESIGN.md, 'Runtime physics')."""

    allow_spinning: bool = False
    graph_optimization_level: str = "all"
    intra_op_num_threads: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"allow_spinning": self.allow_spinning, "graph_optimization_level": self.graph_optimization_level,
                "intra_op_num_threads": self.intra_op_num_threads}


@contextlib.contextmanager
def atomic_directory(final: Path) -> Iterator[Path]:
    """Yield a fresh temporary directory beside ``final``; on success it replaces ``final``."""
    final = Path(final)
    if final.exists() and (not final.is_dir() or (any(final.iterdir()) and not (final / MANIFEST).exists())):
        raise UsageError(f"refusing to overwrite {final}: it exists and is not a hetcc output directory; "
                         "choose another -o or remove it")
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
    try:
        yield tmp
        backup = None
        if final.exists():
            backup = final.parent / f".{final.name}.old-{os.getpid()}"
            os.replace(final, backup)
        os.replace(tmp, final)
        if backup is not None:
            shutil.rmtree(backup, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _spec(info: TensorInfo) -> dict[str, Any]:
    return {"name": info.name, "dtype": info.dtype, "shape": list(info.shape)}


@dataclass(frozen=True)
class SliceBoundary:
    """Which tensors a slice reads from outside (and from where) and which it must export."""

    nodes: tuple[str, ...]
    inputs: tuple[tuple[str, str | int], ...]   # (tensor, "model" | producing slice id)
    outputs: tuple[str, ...]


def slice_boundaries(layers: tuple[Layer, ...], plan: Plan, model_outputs: list[str]) -> list[SliceBoundary]:
    slice_of_layer = {}
    for sid, sl in enumerate(plan.slices):
        for l in range(sl.first, sl.last + 1):
            slice_of_layer[l] = sid
    producer_slice: dict[str, int] = {}
    for layer in layers:
        for out in layer.outputs:
            producer_slice[out] = slice_of_layer[layer.id]
    needed_later: dict[str, int] = {}
    for layer in layers:
        for name in layer.inputs:
            needed_later[name] = max(needed_later.get(name, -1), slice_of_layer[layer.id])
    result = []
    for sid, sl in enumerate(plan.slices):
        members = layers[sl.first:sl.last + 1]
        inputs: dict[str, str | int] = {}
        for layer in members:
            for name in layer.inputs:
                src = producer_slice.get(name)
                if src is None:
                    inputs.setdefault(name, "model")
                elif src != sid:
                    inputs.setdefault(name, src)
        outputs = [name for layer in members for name in layer.outputs
                   if needed_later.get(name, -1) > sid or name in model_outputs]
        result.append(SliceBoundary(nodes=tuple(n for layer in members for n in layer.nodes),
                                    inputs=tuple(inputs.items()), outputs=tuple(dict.fromkeys(outputs))))
    return result


class EmitArtifact(Pass):
    name: ClassVar[str] = "codegen"
    requires: ClassVar[tuple[str, ...]] = (TENSORS, LAYERS, COSTS, PLAN)
    ensures: ClassVar[tuple[str, ...]] = (ARTIFACT,)

    def __init__(self, output_dir: str | Path, target: Any, objective: Objective,
                 runtime: RuntimeSettings | None = None, has_power_model: bool = True) -> None:
        self.output_dir = Path(output_dir)
        self.target = target
        self.objective = objective
        self.runtime = runtime or RuntimeSettings()
        self.has_power_model = has_power_model

    def run(self, program: Program) -> PassResult:
        from hetcc.runtime.manifest import validate_manifest

        tensors: dict[str, TensorInfo] = program.get(TENSORS)
        layers: tuple[Layer, ...] = program.get(LAYERS)
        costs: CostTable = program.get(COSTS)
        plan: Plan = program.get(PLAN)
        graph = program.graph
        model_inputs = [v.name for v in graph.inputs if v.name not in graph.initializers]
        model_outputs = [v.name for v in graph.outputs]
        bounds = slice_boundaries(layers, plan, model_outputs)
        with atomic_directory(self.output_dir) as tmp:
            (tmp / "slices").mkdir()
            slices_json = []
            for sid, (sl, bnd, cost) in enumerate(zip(plan.slices, bounds, plan.slice_costs)):
                state = costs.states[sl.state]
                device = self.target.device(state.device)
                rel = f"slices/{sid:02d}_{state.device}.onnx"
                self._write_slice(program, bnd, tmp / rel, f"{program.name}_slice{sid:02d}")
                slices_json.append({
                    "id": sid, "file": rel, "sha256": sha256_file(tmp / rel), "device": state.device,
                    "frequency_mhz": state.frequency_mhz,
                    "execution_provider": device.execution_provider,
                    "provider_options": dict(device.provider_options),
                    "affinity": list(device.affinity) if device.affinity else None,
                    "first_layer": sl.first, "last_layer": sl.last,
                    "inputs": [{**_spec(tensors[n]), "source": src} for n, src in bnd.inputs],
                    "outputs": [_spec(tensors[n]) for n in bnd.outputs],
                    "predicted": {"latency_ms": cost.latency_ms,
                                  "energy_mj": cost.energy_mj if self.has_power_model else None,
                                  "transfer_ms": cost.transfer_ms},
                })
            obj = self.objective
            manifest = {
                "schema": "hetcc.manifest/1", "hetcc_version": __version__,
                "model": {"name": program.name, "sha256": program.source_sha256,
                          "source_path": str(program.source_path) if program.source_path else None,
                          "ir_version": program.model.ir_version,
                          "inputs": [_spec(tensors[n]) for n in model_inputs],
                          "outputs": [_spec(tensors[n]) for n in model_outputs]},
                "target": {"name": self.target.name, "sha256": self.target.sha256, "kind": self.target.kind},
                "objective": {"metric": obj.metric, "deadline_ms": obj.deadline_ms, "power_cap_mw": obj.power_cap_mw},
                "planner": {"name": plan.planner, "options": plan.options, "seconds": plan.seconds},
                "hardware": None,
                "runtime": self.runtime.to_json(),
                "slices": slices_json,
                "predicted": {"latency_ms": plan.latency_ms,
                              "energy_mj": plan.energy_mj if self.has_power_model else None,
                              "edp_mj_ms": plan.edp_mj_ms if self.has_power_model else None,
                              "meets_deadline": (None if obj.deadline_ms is None
                                                 else bool(plan.latency_ms <= obj.deadline_ms * (1 + 1e-9)))},
            }
            validate_manifest(manifest)
            (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
            (tmp / COSTS_FILE).write_text(json.dumps(costs.to_json()) + "\n")
        program.put(ARTIFACT, self.output_dir)
        return PassResult(False, f"{len(plan.slices)} slices -> {self.output_dir}")

    def _write_slice(self, program: Program, bnd: SliceBoundary, path: Path, name: str) -> None:
        src = program.model
        graph = ir.convenience.extract(src.graph, [n for n, _ in bnd.inputs], list(bnd.outputs))
        extracted = {n.name for n in graph}
        missing = set(bnd.nodes) - extracted
        if missing:  # the layer analysis and the extractor must agree on what a slice holds
            raise RuntimeError(f"slice {name}: extractor dropped nodes {sorted(missing)[:3]}")
        graph.name = name
        model = ir.Model(graph, ir_version=src.ir_version, producer_name="hetcc", producer_version=__version__,
                         functions=list(src.functions.values()))
        ir.save(model, path)
