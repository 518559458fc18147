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
