"""A run can be bounded (issue 33, class 12): ``hetcc run --timeout T`` and ``Executor(timeout=)``
stop an inference that runs past T with a one-line error, for a tampered slice that would never
finish (a Loop of a billion iterations put in place of a slice, its manifest hash updated)."""
from __future__ import annotations

import hashlib
import json
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from hetcc.cli import main
from hetcc.runtime import Executor
from hetcc.runtime.errors import InferenceTimeout
from text_models import CHAIN


def _runaway(x_name: str, y_name: str, opset: int, ir_version: int) -> onnx.ModelProto:
    """y = x after a Loop of 10**9 iterations that each add 0 (never finishes in a test's time)."""
    body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "zero"], ["acc_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor("zero", TensorProto.FLOAT, [1], [0.0])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trips", "cond", x_name], [y_name], body=body)],
        "runaway",
        [helper.make_tensor_value_info(x_name, TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info(y_name, TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor("trips", TensorProto.INT64, [], [10**9]),
         helper.make_tensor("cond", TensorProto.BOOL, [], [True])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir_version)


@pytest.fixture
def tampered(tmp_path, write_text_model):
    art = tmp_path / "art"
    assert main(["compile", str(write_text_model(CHAIN, tmp_path / "m.onnx")), "-o", str(art), "-q"]) == 0
    doc = json.loads((art / "manifest.json").read_text())
    sl = doc["variants"][doc["default_variant"]]["slices"][0]
    assert len(doc["variants"][doc["default_variant"]]["slices"]) == 1
    path = art / sl["file"]
    old = onnx.load(str(path))
    bad = _runaway(old.graph.input[0].name, old.graph.output[0].name, old.opset_import[0].version, old.ir_version)
    onnx.save(bad, str(path))
    sl["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    (art / "manifest.json").write_text(json.dumps(doc, indent=2))
    return art


def test_executor_timeout_stops_a_runaway_slice(tampered):
    ex = Executor(tampered, timeout=0.5)
    t0 = time.monotonic()
    with pytest.raises(InferenceTimeout, match="0.5 s limit"):
        ex.run({"x": np.ones((1, 8), np.float32)})
    assert time.monotonic() - t0 < 120          # stopped, not run to the end (a billion iterations)
    ex.close()


def test_hetcc_run_timeout_is_one_line(tampered, capsys):
    assert main(["run", str(tampered), "--timeout", "500ms", "--repeat", "1", "--warmup", "0"]) != 0
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("hetcc: error: ") and "--timeout" in err[0]


@pytest.mark.parametrize("value", ["0s", "-1s", "soon"])
def test_a_bad_timeout_is_refused(tampered, capsys, value):
    assert main(["run", str(tampered), f"--timeout={value}"]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "--timeout" in err[0]


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), float("inf"), "1"])
def test_executor_refuses_a_bad_timeout(tampered, value):
    with pytest.raises(ValueError, match="timeout"):
        Executor(tampered, timeout=value)
