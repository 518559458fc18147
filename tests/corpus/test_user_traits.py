"""What the corpus found, pinned down on tiny ONNX-text models (no extra needed): a model with
weights in an external data file profiled for --target host from another directory (dynamo's
default output); a two-row table indexed by an int64 input (BERT's token types) under random
inputs; several inputs with dynamic axes named in one error."""
from __future__ import annotations

import onnx
import onnx.numpy_helper
import onnx.parser
import pytest

from hetcc.cli import main

TABLE = """
<ir_version: 8, opset_import: ["" : 17]>
g (int64[1, 4] ids, float[1, 4, 8] x) => (float[1, 4, 8] y) <float[2, 8] types = {%s}> {
  e = Gather(types, ids)
  s = Add(e, x)
  y = Relu(s)
}
""" % ", ".join(str(0.25 * i - 2) for i in range(16))


def cli(capsys, *argv) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out + err


def test_external_data_and_a_two_row_table_on_the_host_target(tmp_path, monkeypatch, capsys):
    model = onnx.parser.parse_model(TABLE)
    onnx.checker.check_model(model)
    table = onnx.numpy_helper.to_array(model.graph.initializer[0])
    model.graph.initializer[0].CopyFrom(onnx.numpy_helper.from_array(table, "types"))  # raw_data: external
    (tmp_path / "m").mkdir()
    onnx.save(model, str(tmp_path / "m" / "m.onnx"), save_as_external_data=True, location="m.onnx.data",
              size_threshold=0)
    assert (tmp_path / "m" / "m.onnx.data").stat().st_size == 2 * 8 * 4
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("HETCC_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "art"
    code, text = cli(capsys, "compile", tmp_path / "m" / "m.onnx", "--target", "host", "-o", out, "-q")
    assert code == 0, text   # the profiler's sessions from bytes could not find m.onnx.data
    code, text = cli(capsys, "run", out, "--verify", "--verify-inputs", "4")
    assert code == 0, text   # random ids over 1 made Gather fail
    assert "outputs match the unsliced model on 4 input set(s)" in text


def test_every_dynamic_input_is_named_in_one_error(tmp_path, capsys):
    text = """
    <ir_version: 8, opset_import: ["" : 17]>
    g (int64[batch, seq] input_ids, int64[batch, seq] attention_mask, float[1, 8] w) => (int64[batch, seq] y) {
      y = Add(input_ids, attention_mask)
    }
    """
    onnx.save(onnx.parser.parse_model(text), str(tmp_path / "m.onnx"))
    code, out = cli(capsys, "compile", tmp_path / "m.onnx", "--target", "hikey970", "-o", tmp_path / "art")
    assert code == 2
    assert out.strip() == ("hetcc: error: input 'input_ids' has dynamic dimensions 'batch', 'seq' (so do "
                           "'attention_mask'); pass --input-shape input_ids=1x1 --input-shape attention_mask=1x1")
    assert not (tmp_path / "art").exists()

    code, out = cli(capsys, "compile", tmp_path / "m.onnx", "--target", "hikey970", "-o", tmp_path / "art",
                    "--input-shape", "input_ids=1x4", "--input-shape", "attention_mask=1x4", "-q")
    assert code == 0, out
