"""onnxruntime failing inside a slice (an index input out of range) is one line, exit 2."""
from __future__ import annotations

import numpy as np
import onnx
import onnx.parser
from onnx import numpy_helper

from hetcc.cli import main

GATHER = """<ir_version: 8, opset_import: ["" : 17]>
g (int64[1,4] idx) => (float[1,4,8] y)
<float[2,8] table> {
    y = Gather <axis = 0> (table, idx)
}
"""


def test_an_onnxruntime_failure_in_a_slice_is_one_line(tmp_path, capsys):
    m = onnx.parser.parse_model(GATHER)
    m.graph.initializer.append(numpy_helper.from_array(np.ones((2, 8), np.float32), "table"))
    onnx.save(m, str(tmp_path / "g.onnx"))
    assert main(["compile", str(tmp_path / "g.onnx"), "--target", "hikey970", "-o", str(tmp_path / "b"), "-q"]) == 0
    np.save(tmp_path / "ok.npy", np.array([[0, 1, 1, 0]], np.int64))
    np.save(tmp_path / "bad.npy", np.array([[0, 1, 5, 1]], np.int64))
    capsys.readouterr()
    assert main(["run", str(tmp_path / "b"), "--input", f"idx={tmp_path / 'ok.npy'}"]) == 0
    capsys.readouterr()
    assert main(["run", str(tmp_path / "b"), "--input", f"idx={tmp_path / 'bad.npy'}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hetcc: error: slice slices/") and "idx=5" in err[0], err
