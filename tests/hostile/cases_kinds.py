"""No traceback, whatever the model (issue 33, class 8): model-local ONNX functions are inlined
and compile like any graph; a model without outputs, or with STRING inputs, outputs or weights,
is refused in one line; ``inspect --why`` on a ``costs.json`` that does not match its manifest is
one line."""
from __future__ import annotations

import json
from pathlib import Path

from harness import Case, compiled
from text_models import CHAIN


def _save(name: str, build):
    def setup(work: Path) -> None:
        import onnx

        onnx.save(build(), str(work / name))
    return setup


def _function_model():
    from onnx import TensorProto, helper

    f = helper.make_function("local", "MyRelu", ["x"], ["y"], [helper.make_node("Relu", ["x"], ["y"])],
                             [helper.make_opsetid("", 17)])
    g = helper.make_graph([helper.make_node("MyRelu", ["a"], ["b"], domain="local"),
                           helper.make_node("Sigmoid", ["b"], ["c"])], "g",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 8])],
                          [helper.make_tensor_value_info("c", TensorProto.FLOAT, [1, 8])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
                             functions=[f], ir_version=8)


def _string_model():
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("Identity", ["s"], ["t"])], "g",
                          [helper.make_tensor_value_info("s", TensorProto.STRING, [2])],
                          [helper.make_tensor_value_info("t", TensorProto.STRING, [2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _no_outputs():
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("Relu", ["a"], ["b"])], "g",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 8])], [])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _costs_without(key: str):
    def then(work: Path) -> None:
        p = work / "art" / "costs.json"
        doc = json.loads(p.read_text())
        doc.pop(key)
        p.write_text(json.dumps(doc))
    return then


CASES = [
    Case("kinds/model-local-functions-are-inlined", ["compile", "f.onnx", "-o", "art", "-q"], 0,
         setup=_save("f.onnx", _function_model), outputs=["art"]),
    Case("kinds/string-input-and-output", ["compile", "s.onnx", "-o", "art", "-q"], 2,
         ["s.onnx", "'s'", "STRING", "numeric"], setup=_save("s.onnx", _string_model)),
    Case("kinds/a-model-without-outputs", ["compile", "n.onnx", "-o", "art", "-q"], 2,
         ["n.onnx", "no outputs"], setup=_save("n.onnx", _no_outputs)),
    Case("kinds/why-on-costs-that-do-not-match", ["inspect", "art", "--why"], 2,
         ["costs.json", "does not match", "recompile"], setup=compiled(CHAIN, then=_costs_without("legal"))),
]
