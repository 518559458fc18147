"""Compile a model from Python, then run the artifact with the board-side runtime.

    python examples/python_api.py [OUT_DIR]

Exports SqueezeNet 1.1 (random weights) from the zoo, asks for the least energy on the
HiKey 970 model under a deadline halfway between the fastest plan and the energy-optimal one,
writes the artifact, runs it and checks it against the unsliced model."""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import hetcc
from hetcc import zoo
from hetcc.runtime import Executor, random_inputs, verify


def main(out: Path) -> None:
    model = zoo.export("squeezenet1_1", out.parent / "squeezenet1_1.onnx")
    fastest = hetcc.compile(model, target="hikey970", objective="latency").plan
    frugal = hetcc.compile(model, target="hikey970", objective="energy").plan
    deadline = (fastest.latency_ms + frugal.latency_ms) / 2
    result = hetcc.compile(model, target="hikey970", objective="energy", deadline_ms=deadline, output_dir=out)
    plan = result.plan
    print(f"fastest plan {fastest.latency_ms:.1f} ms; least-energy plan {frugal.energy_mj:.1f} mJ "
          f"at {frugal.latency_ms:.1f} ms")
    print(f"deadline {deadline:.1f} ms -> {len(plan.slices)} slices, {plan.latency_ms:.1f} ms, "
          f"{plan.energy_mj:.1f} mJ ({plan.planner}, {plan.seconds * 1e3:.1f} ms)")

    ex = Executor(out)  # what ships to the board: numpy + onnxruntime only
    outputs = ex.run(random_inputs(ex.inputs, seed=0))
    print("outputs:", {k: v.shape for k, v in outputs.items()}, f"in {ex.last_total_ms:.1f} ms")
    report = verify(ex)
    print("matches the unsliced model:", report.ok)
    assert report.ok and plan.latency_ms <= deadline


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "build")
