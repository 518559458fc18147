"""Analyse a model once, plan it several ways, emit one plan, run it with the board-side runtime.

    python examples/python_api.py [OUT_DIR]

Analyses SqueezeNet 1.1 from the zoo (random weights; a zoo name is exported once into hetcc's
cache, a path to an .onnx file is read as it is) once for the HiKey 970 model; then plans it without re-analysing (the fastest plan, the least-energy plan, the least
energy under HERTI's "medium" deadline, half way between the two, and the fastest under a 3 W
average power cap), writes the "medium" one, runs it and checks it against the unsliced model.

Limits take the command line's units: ``deadline="170ms"|"medium"|"1.3x"``, ``power_cap="3W"``;
bare numbers go to ``deadline_ms=`` / ``power_cap_mw=``."""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import hetcc
from hetcc.runtime import Executor, random_inputs, verify


def main(out: Path) -> None:
    session = hetcc.analyse("squeezenet1_1", target="hikey970")  # load + analysis passes, once
    fastest = session.plan("latency")                            # auto -> dp
    frugal = session.plan("energy")                              # auto -> dp
    plan = session.plan("energy", deadline="medium")             # auto -> exact
    deadline = plan.objective.deadline_ms
    capped = session.plan("latency", power_cap="3W")           # as --power-cap 3W; or power_cap_mw=3000
    assert capped.objective.power_cap_mw == 3000.0 and capped.average_power_mw <= 3000.0 * (1 + 1e-9)
    print(f"fastest plan {fastest.latency_ms:.1f} ms; least-energy plan {frugal.energy_mj:.1f} mJ "
          f"at {frugal.latency_ms:.1f} ms")
    print(f"medium deadline {deadline:.1f} ms -> {len(plan.slices)} slices, {plan.latency_ms:.1f} ms, "
          f"{plan.energy_mj:.1f} mJ ({plan.planner}, {plan.seconds * 1e3:.1f} ms)")
    print(session.describe(plan))                                # devices and MHz per slice
    session.emit(plan, out)

    ex = Executor(out)  # what ships to the board: numpy + onnxruntime only
    outputs = ex.run(random_inputs(ex.inputs, seed=0))
    print("outputs:", {k: v.shape for k, v in outputs.items()}, f"in {ex.last_total_ms:.1f} ms")
    report = verify(ex)
    print("matches the unsliced model:", report.ok)
    assert report.ok and plan.latency_ms <= deadline
    assert abs(deadline - (fastest.latency_ms + 0.5 * (frugal.latency_ms - fastest.latency_ms))) < 1e-9


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "build")
