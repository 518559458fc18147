"""Small models compiled by codegen for the runtime tests (imported by test modules here)."""
from __future__ import annotations

from pathlib import Path

import onnx
import onnx.parser
import onnxruntime as ort

from hetcc.passes.constants import FindConstants
from hetcc.passes.costs import EstimateCosts
from hetcc.passes.layers import GroupLayers
from hetcc.passes.legality import CheckLegality
from hetcc.passes.shapes import AnnotateTensors
from hetcc.compiler.passmanager import PassManager
from hetcc.planners import Slice
from text_models import IDENTITY_CHAIN

CHAIN = IDENTITY_CHAIN

SMALL = """<ir_version: 8, opset_import: ["" : 17]>
small (float[2,4] x) => (float[2,4] y) {
    a = Relu(x)
    b = Sigmoid(a)
    y = Tanh(b)
}
"""

TARGET = "mi8pro-edge-cloud"


def build_program(directory: Path, text: str, name: str, target):
    """The ONNX-text model saved as directory/<name>.onnx, analysed up to its cost table."""
    from hetcc.compiler.frontend import load_model

    model = onnx.parser.parse_model(text)
    onnx.checker.check_model(model)
    path = Path(directory) / f"{name}.onnx"
    onnx.save(model, str(path))
    program = load_model(path, None)
    PassManager([AnnotateTensors(), FindConstants(), GroupLayers(1), CheckLegality(target),
                 EstimateCosts(target)]).run(program)
    return program


def state(program, device: str) -> int:
    """The top-frequency state of ``device``."""
    return int(program.get("costs").problem().states.fmax_state(device))


def plan_of(program, cuts, **fields):
    """cuts: [(first, last, device)] -> an evaluated Plan."""
    fields.setdefault("planner", "fixed")
    problem = program.get("costs").problem()
    return problem.evaluate([Slice(a, b, state(program, d)) for a, b, d in cuts], **fields)


def reference(program, feeds):
    sess = ort.InferenceSession(str(program.source_path), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


def feeds_for(ex_or_pipe, seed=0):
    from hetcc.runtime import random_inputs

    return random_inputs(ex_or_pipe.inputs, seed=seed)


def run_parser():
    """``hetcc run``'s arguments alone, parsed as the CLI parses them (errors raise, no exit)."""
    import argparse

    from hetcc.cli.artifact import add_run_arguments, cmd_run

    p = argparse.ArgumentParser(prog="hetcc", exit_on_error=False)
    sub = p.add_subparsers(dest="cmd", required=True)
    add_run_arguments(sub.add_parser("run", exit_on_error=False)).set_defaults(func=cmd_run)
    return p


def run_call(capsys, *argv):
    """``hetcc run ARGV``: (exit code, stdout)."""
    args = run_parser().parse_args(["run", *map(str, argv)])
    code = args.func(args)
    return code, capsys.readouterr().out


def chain_artifact(tmp_path, target):
    """Two slices (cpu, gpu) of a chain of identities."""
    from hetcc.passes.codegen import emit_artifact

    program = build_program(tmp_path, CHAIN, "chain", target)
    return emit_artifact(tmp_path / "a", program, target, {"dp": plan_of(program, [(0, 1, "cpu"), (2, 4, "gpu")])})


def refuse_opens(monkeypatch, exc, when=lambda path, mode: "w" in mode):
    """The sysfs layer's ``open`` raises ``exc`` for the paths and modes ``when`` picks (a write,
    by default): the OS refusing a value, as a board's sysfs does."""
    import builtins

    from hetcc.runtime import sysfs

    real = builtins.open

    def fake_open(path, mode="r", *a, **kw):
        if when(str(path), mode):
            raise exc
        return real(path, mode, *a, **kw)
    monkeypatch.setattr(sysfs, "open", fake_open, raising=False)
