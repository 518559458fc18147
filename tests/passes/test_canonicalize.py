"""The canonical pass (passes/canonicalize.py): each rewrite computes what the original did
(onnxruntime on random inputs), patterns that only look alike are left alone, a rewrite happens
for a target only where a device gains and none loses, and what it did reaches --verbose,
why.json and ``inspect --why``; benchmarks/exporters.py --quick shows the dynamo form planned
like the legacy one."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
import onnxruntime as ort
import pytest

import hetcc
from boards import board_text, device
from hetcc.cli.artifact import add_inspect_arguments, cmd_inspect
from hetcc.compiler.frontend import load_model
from hetcc.compiler.passmanager import PassManager
from hetcc.compiler.program import CONSTANTS, LAYERS, TENSORS
from hetcc.compiler.why import WHY_NAME, check_why, rewrite_lines
from hetcc.passes.canonicalize import DEFAULT_RULES, REWRITES, RULES, Canonicalize
from hetcc.passes.constants import FindConstants
from hetcc.passes.layers import GroupLayers
from hetcc.passes.shapes import AnnotateTensors
from hetcc.runtime import ManifestError, verify
from hetcc.targets import load_target

ROOT = Path(__file__).resolve().parents[2]


def header(opset: int = 18) -> str:
    return f'<ir_version: 8, opset_import: ["" : {opset}]>\n'


def mean(axes: str, keepdims: int = 1, shape: str = "1,8,5,7", out: str = "1,8,1,1", dtype: str = "float",
         opset: int = 18) -> str:
    """x -> Relu -> ReduceMean(axes) -> Sigmoid -> y (axes an initializer, or the attribute before opset 18)."""
    if opset >= 18:
        init, call = f" <int64[{len(axes.split(','))}] axes = {{{axes}}}>", f"ReduceMean<keepdims = {keepdims}>(r, axes)"
    else:
        init, call = "", f"ReduceMean<keepdims = {keepdims}, axes = [{axes}]>(r)"
    act = "Sigmoid" if dtype.startswith("float") or dtype == "double" else "Neg"
    return header(opset) + f"""
g ({dtype}[{shape}] x) => ({dtype}[{out}] y){init} {{
    r = Relu(x)
    m = {call}
    y = {act}(m)
}}
"""


def compile_passes(write_text_model, tmp_path, text, target=None, layers=False, rules=DEFAULT_RULES):
    path = write_text_model(text, tmp_path / "m.onnx")
    program = load_model(path)
    passes = [AnnotateTensors(), FindConstants(), Canonicalize(target, rules)] + ([GroupLayers(1)] if layers else [])
    PassManager(passes).run(program)
    return path, program


def ops(program):
    return [n.op_type for n in program.graph]


def run(model, feeds):
    proto = model if isinstance(model, onnx.ModelProto) else ir.to_proto(model)
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def assert_same_function(path, program, seeds=(0, 1, 2)):
    """The rewritten graph gives the original model's outputs (rtol 1e-5) on random inputs."""
    source = onnx.load(str(path))
    onnx.checker.check_model(ir.to_proto(program.model), full_check=True)
    for seed in seeds:
        rng = np.random.default_rng(seed)
        feeds = {}
        for v in program.graph.inputs:
            shape = [int(d) for d in v.shape]
            data = rng.standard_normal(shape) * 3
            feeds[v.name] = data.astype(v.dtype.numpy()) if v.dtype.numpy().kind == "f" else \
                rng.integers(-9, 9, shape).astype(v.dtype.numpy())
        want, got = run(source, feeds), run(program.model, feeds)
        assert len(want) == len(got)
        for w, g in zip(want, got):
            assert w.shape == g.shape and w.dtype == g.dtype
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- ReduceMean over H, W
@pytest.mark.parametrize("text", [
    mean("2,3"), mean("-1,-2"), mean("3,2"), mean("2,3", opset=13), mean("-2,-1", opset=17),
    mean("2,3,4", shape="1,4,3,5,6", out="1,4,1,1,1"), mean("2,3", shape="3,8,5,7", out="3,8,1,1"),
    mean("2,3", dtype="float16"),
], ids=["2,3", "-1,-2", "3,2", "attr-opset13", "attr-neg-opset17", "rank5", "batch3", "float16"])
def test_spatial_mean_becomes_global_average_pool(write_text_model, tmp_path, text):
    path, program = compile_passes(write_text_model, tmp_path, text)
    assert ops(program) == ["Relu", "GlobalAveragePool", "Sigmoid"]
    pool = list(program.graph)[1]
    (rw,) = program.get(REWRITES)
    assert pool.outputs[0].name == "m" and pool.name == rw.node == rw.replaced[0]    # the name a layer knows
    assert (rw.rule, rw.before, rw.after, rw.devices) == ("spatial-mean", ("ReduceMean",), ("GlobalAveragePool",), ())
    assert "axes" not in program.graph.initializers and "axes" not in program.get(TENSORS)   # nothing reads it now
    assert "axes" not in program.get(CONSTANTS).values
    assert_same_function(path, program)


def test_spatial_mean_without_keepdims_becomes_pool_and_flatten(write_text_model, tmp_path):
    path, program = compile_passes(write_text_model, tmp_path, mean("2,3", keepdims=0, out="1,8"), rules=RULES)
    assert ops(program) == ["Relu", "GlobalAveragePool", "Flatten", "Sigmoid"]
    pool, flat = list(program.graph)[1:3]
    assert flat.attributes["axis"].as_int() == 1 and flat.outputs[0].name == "m"
    tensors = program.get(TENSORS)
    assert tensors[pool.outputs[0].name].shape == (1, 8, 1, 1) and tensors["m"].shape == (1, 8)
    (rw,) = program.get(REWRITES)
    assert rw.after == ("GlobalAveragePool", "Flatten") and rw.nodes == (pool.name, flat.name)
    assert_same_function(path, program)


def test_the_pipeline_keeps_mean_without_keepdims(write_text_model, tmp_path):
    """x.mean((2, 3)) is ReduceMean keepdims=0 from either exporter (MNASNet): the default rules,
    those hikey970 was fitted with, leave it."""
    for target in (None, load_target("hikey970")):
        _, program = compile_passes(write_text_model, tmp_path, mean("2,3", keepdims=0, out="1,8"), target)
        assert "ReduceMean" in ops(program) and program.get(REWRITES) == ()


@pytest.mark.parametrize("text", [
    mean("1", out="1,1,5,7"),                      # over the channels
    mean("1,2,3", out="1,1,1,1"),                  # channels and space
    mean("0,2,3", out="1,8,1,1"),                  # batch and space
    mean("2", out="1,8,1,7"),                      # one of the two spatial axes
    mean("-1", out="1,8,5,1"),
    mean("1", shape="3,8", out="3,1"),             # a matrix: no spatial axes
    mean("2", shape="2,6,9", out="2,6,1"),         # [B, T, C]: a sequence's features (LayerNorm's mean)
    mean("2,3", dtype="int32"),                    # GlobalAveragePool computes floats only
    mean("2,3", dtype="double"),                   # and onnxruntime has no float64 kernel for it
    mean("1", keepdims=0, out="1,5,7"),
], ids=["channels", "chw", "nhw", "h-only", "w-only", "rank2", "rank3", "int32", "double", "channels-keepdims0"])
def test_other_reductions_are_left_alone(write_text_model, tmp_path, text):
    _, program = compile_passes(write_text_model, tmp_path, text, rules=RULES)
    assert "ReduceMean" in ops(program) and "GlobalAveragePool" not in ops(program)
    assert program.get(REWRITES) == ()
    assert "axes" in program.graph.initializers or "opset" in text


def test_mean_over_every_axis_is_left_alone(write_text_model, tmp_path):
    text = header() + """
g (float[1,8,5,7] x) => (float[1,1,1,1] y) {
    y = ReduceMean<keepdims = 1>(x)
}
"""
    _, program = compile_passes(write_text_model, tmp_path, text)
    assert ops(program) == ["ReduceMean"] and program.get(REWRITES) == ()


def test_a_shared_axes_initializer_stays_while_another_node_reads_it(write_text_model, tmp_path):
    text = header() + """
g (float[1,4,3,3] x) => (float[1,4,1,1] y, float[1,4,1,1] z) <int64[2] axes = {2, 3}> {
    y = ReduceMean(x, axes)
    z = ReduceSum(x, axes)
}
"""
    path, program = compile_passes(write_text_model, tmp_path, text)
    assert ops(program) == ["GlobalAveragePool", "ReduceSum"]
    assert "axes" in program.graph.initializers and "axes" in program.get(CONSTANTS).values
    assert [v.name for v in program.graph.outputs] == ["y", "z"]     # a model output keeps its name
    assert_same_function(path, program)


# ---------------------------------------------------------------- Reshape <-> Flatten
@pytest.mark.parametrize("shape, to, axis", [
    ("1,8,2,2", "1,32", 1), ("2,3,4", "6,4", 2), ("1,3,4", "3,4", 2), ("5,6", "1,30", 0), ("1,6", "1,6", 1),
])
def test_reshape_to_a_matrix_becomes_flatten(write_text_model, tmp_path, shape, to, axis):
    text = header() + f"""
g (float[{shape}] x) => (float[{to}] y) <int64[2] s = {{{to}}}> {{
    r = Relu(x)
    y = Reshape(r, s)
}}
"""
    path, program = compile_passes(write_text_model, tmp_path, text)
    assert ops(program) == ["Relu", "Flatten"]
    assert list(program.graph)[1].attributes["axis"].as_int() == axis
    assert "s" not in program.graph.initializers
    assert_same_function(path, program)


@pytest.mark.parametrize("shape, to", [("2,3,4", "4,6"), ("1,8,2,2", "1,8,4"), ("4,6", "24")])
def test_other_reshapes_are_left_alone(write_text_model, tmp_path, shape, to):
    n = len(to.split(","))
    text = header() + f"""
g (float[{shape}] x) => (float[{to}] y) <int64[{n}] s = {{{to}}}> {{
    r = Relu(x)
    y = Reshape(r, s)
}}
"""
    _, program = compile_passes(write_text_model, tmp_path, text)
    assert ops(program) == ["Relu", "Reshape"] and program.get(REWRITES) == ()


FLATTEN = header() + """
g (float[2,3,4] x) => (float[2,12] y) {
    r = Relu(x)
    y = Flatten<axis = 1>(r)
}
"""


def board(tmp_path, name, **acc_fields):
    """A board with a CPU that runs everything and an accelerator with ``acc_fields``."""
    path = tmp_path / f"{name}.toml"
    path.write_text(board_text(name, devices={"cpu": device(), "acc": device(kind="npu", **acc_fields)}))
    return load_target(path)


def test_flatten_becomes_reshape_only_for_a_device_that_lists_reshape_alone(write_text_model, tmp_path):
    _, program = compile_passes(write_text_model, tmp_path, FLATTEN)
    assert ops(program) == ["Relu", "Flatten"]                  # no target: Flatten is the canonical form
    acc = board(tmp_path, "reshaper", supported_ops=["Relu", "Reshape"])
    path, program = compile_passes(write_text_model, tmp_path, FLATTEN, acc)
    assert ops(program) == ["Relu", "Reshape"]
    shape = list(program.graph)[1].inputs[1]
    assert shape.const_value.numpy().tolist() == [2, 12] and shape.name in program.get(TENSORS)
    assert shape.name in program.get(CONSTANTS).values
    assert program.get(REWRITES)[0].devices == ("acc",)
    assert_same_function(path, program)


# ---------------------------------------------------------------- MatMul + Add -> Gemm
def matmul_add(bias_shape: str, add: str = "Add(y0, b)", a_shape: str = "3,4", extra: str = "",
               outs: str = "float[3,5] y") -> str:
    n = int(np.prod([int(d) for d in bias_shape.split(",")]))
    values = ", ".join(str(0.5 * i - 1) for i in range(n))
    return header() + f"""
g (float[{a_shape}] a) => ({outs}) <float[4,5] w = {{{", ".join(str(0.1 * i) for i in range(20))}}},
                                    float[{bias_shape}] b = {{{values}}}> {{
    y0 = MatMul(a, w)
    y = {add}
    {extra}
}}
"""


@pytest.mark.parametrize("text", [matmul_add("5"), matmul_add("1,5"), matmul_add("5", add="Add(b, y0)")],
                         ids=["bias-n", "bias-1n", "bias-first"])
def test_matmul_and_bias_add_become_gemm(write_text_model, tmp_path, text):
    path, program = compile_passes(write_text_model, tmp_path, text)
    assert ops(program) == ["Gemm"]
    gemm = list(program.graph)[0]
    assert [v.name for v in gemm.inputs] == ["a", "w", "b"] and gemm.outputs[0].name == "y"
    assert "y0" not in program.get(TENSORS)
    (rw,) = program.get(REWRITES)
    assert rw.before == ("MatMul", "Add") and rw.after == ("Gemm",)
    assert_same_function(path, program)


@pytest.mark.parametrize("text", [
    matmul_add("3,5"),                                               # a full matrix, not a bias
    matmul_add("5", extra="z = Relu(y0)", outs="float[3,5] y, float[3,5] z"),   # the product is read twice
    matmul_add("5", a_shape="2,3,4", outs="float[2,3,5] y"),         # a batched product: Gemm is 2-D
    matmul_add("5", add="Add(y0, y0)"),
], ids=["matrix", "two-readers", "batched", "self-add"])
def test_other_matmuls_are_left_alone(write_text_model, tmp_path, text):
    _, program = compile_passes(write_text_model, tmp_path, text)
    assert "MatMul" in ops(program) and "Gemm" not in ops(program) and program.get(REWRITES) == ()


# ---------------------------------------------------------------- only where a device gains
def test_hikey970_gets_the_pool_and_keeps_clip_and_matmul(write_text_model, tmp_path):
    text = header() + """
g (float[1,8,5,7] x) => (float[1,8,1,1] y, float[3,5] z) <int64[2] axes = {2, 3}, float lo = {0.0}, float hi = {6.0},
          float[4,5] w = {0,1,2,3,4,5,6,7,8,9,0,1,2,3,4,5,6,7,8,9}, float[5] b = {1,2,3,4,5}, float[3,4] k = {0,1,2,3,4,5,6,7,8,9,0,1}> {
    c = Clip(x, lo, hi)
    y = ReduceMean(c, axes)
    z0 = MatMul(k, w)
    z1 = Relu(z0)
    z = Add(z1, b)
}
"""
    hikey = load_target("hikey970")
    path, program = compile_passes(write_text_model, tmp_path, text, hikey)
    assert ops(program)[:2] == ["Clip", "GlobalAveragePool"]       # no device lists a ReLU6: Clip stays
    (rw,) = program.get(REWRITES)
    assert rw.devices == ("npu",) and rw.text().endswith(": ReduceMean -> GlobalAveragePool (for npu)")
    assert_same_function(path, program)
    two = matmul_add("5")
    _, program = compile_passes(write_text_model, tmp_path, two, hikey)    # the NPU lists MatMul and Add
    assert ops(program) == ["MatMul", "Add"] and program.get(REWRITES) == ()


def test_no_rewrite_where_every_device_runs_the_original(write_text_model, tmp_path):
    host = load_target("host-analytical")
    for text in (mean("2,3"), mean("2,3", keepdims=0, out="1,8"), matmul_add("5")):
        _, program = compile_passes(write_text_model, tmp_path, text, host, rules=RULES)
        assert program.get(REWRITES) == () and "GlobalAveragePool" not in ops(program)


def test_no_rewrite_that_a_device_would_lose(write_text_model, tmp_path):
    acc = board(tmp_path, "meanonly", supported_ops=["Relu", "ReduceMean", "Sigmoid"])
    _, program = compile_passes(write_text_model, tmp_path, mean("2,3"), acc)
    assert ops(program) == ["Relu", "ReduceMean", "Sigmoid"] and program.get(REWRITES) == ()


def test_layers_see_the_rewritten_graph(write_text_model, tmp_path):
    _, program = compile_passes(write_text_model, tmp_path, mean("2,3", keepdims=0, out="1,8"),
                                load_target("hikey970"), layers=True, rules=RULES)
    layer_ops = [op for layer in program.get(LAYERS) for op in layer.op_types]
    assert "ReduceMean" not in layer_ops and {"GlobalAveragePool", "Flatten"} <= set(layer_ops)
    tensors = program.get(TENSORS)
    assert all(o.name in tensors for n in program.graph for o in n.outputs)


# ---------------------------------------------------------------- compile, why.json, inspect --why, verify
SE = header() + """
g (float[1,8,6,6] x) => (float[1,8,6,6] y) <int64[2] axes = {-1, -2}, float[2,8,1,1] w1 = {
    1,0,0,0,0,0,0,0, 0,1,0,0,0,0,0,0}, float[8,2,1,1] w2 = {1,0, 0,1, 1,0, 0,1, 1,0, 0,1, 1,0, 0,1}> {
    r = Relu(x)
    p = ReduceMean(r, axes)
    s1 = Conv(p, w1)
    s2 = Relu(s1)
    s3 = Conv(s2, w2)
    g = Sigmoid(s3)
    y = Mul(r, g)
}
"""


def inspect(capsys, *argv):
    p = argparse.ArgumentParser(prog="hetcc")
    sub = p.add_subparsers(dest="cmd", required=True)
    add_inspect_arguments(sub.add_parser("inspect")).set_defaults(func=cmd_inspect)
    args = p.parse_args(["inspect", *map(str, argv)])
    code = args.func(args)
    return code, capsys.readouterr().out


@pytest.fixture(scope="module")
def se_artifact(tmp_path_factory):
    root = tmp_path_factory.mktemp("se")
    model = root / "se.onnx"
    onnx.save(onnx.parser.parse_model(SE), str(model))
    out = root / "art"
    hetcc.compile(model, "hikey970", "latency", output_dir=out)
    return out


def test_why_json_records_the_rewrite_and_where_it_made_the_layer_legal(se_artifact):
    doc = json.loads((se_artifact / WHY_NAME).read_text())
    (rw,) = doc["rewrites"]
    assert rw["from"] == ["ReduceMean"] and rw["to"] == ["GlobalAveragePool"] and rw["rule"] == "spatial-mean"
    assert rw["for"] == ["npu"] and rw["legal_on"] == ["npu"] and isinstance(rw["layer"], int)
    assert not any(e["layer"] == rw["layer"] and e["device"] == "npu" for e in doc["illegal"])
    assert check_why(doc, "why.json") is doc


def test_inspect_why_shows_the_rewrite(capsys, se_artifact):
    code, out = inspect(capsys, se_artifact, "--why")
    assert code == 0
    line = next(l for l in out.splitlines() if "ReduceMean -> GlobalAveragePool" in l)
    assert line.strip().startswith("L") and "canonical form; legal on npu" in line
    code, out = inspect(capsys, se_artifact, "--why", "--json")
    assert json.loads(out)["rewrites"][0]["legal_on"] == ["npu"]


def test_the_artifact_verifies_against_the_source_model(se_artifact):
    report = verify(se_artifact, inputs=3)
    assert report.ok, report.summary()


def test_artifacts_without_rewrites_have_no_rewrites_key(tmp_path, capsys):
    model = tmp_path / "plain.onnx"
    onnx.save(onnx.parser.parse_model(mean("1", out="1,1,5,7")), str(model))
    hetcc.compile(model, "hikey970", "latency", output_dir=tmp_path / "a")
    doc = json.loads((tmp_path / "a" / WHY_NAME).read_text())
    assert "rewrites" not in doc and rewrite_lines(doc) == []
    code, out = inspect(capsys, tmp_path / "a", "--why")
    assert code == 0 and "canonical pass" not in out


def test_old_why_json_reads_and_a_bad_rewrites_entry_is_one_line():
    old = {"schema": "hetcc.why/1", "costs_sha256": "0" * 64, "devices": ["cpu"], "illegal": []}
    assert check_why(dict(old), "why.json") == old and rewrite_lines(old) == []
    for bad in ({"layer": "2", "node": "n", "rule": "r", "from": [], "to": [], "for": [], "legal_on": []},
                {"layer": 2, "node": "n", "rule": "r", "from": "ReduceMean", "to": [], "for": [], "legal_on": []},
                "x"):
        with pytest.raises(ManifestError) as err:
            check_why({**old, "rewrites": [bad]}, "why.json")
        assert "rewrites[0]" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ManifestError, match="rewrites: expected an array"):
        check_why({**old, "rewrites": {}}, "why.json")


@pytest.mark.slow
def test_verbose_lists_every_rewrite(tmp_path):
    model = tmp_path / "se.onnx"
    onnx.save(onnx.parser.parse_model(SE), str(model))
    proc = subprocess.run([sys.executable, "-m", "hetcc.cli", "compile", str(model), "-t", "hikey970",
                           "-o", str(tmp_path / "a"), "--verbose"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    i = next(i for i, l in enumerate(lines) if "pass canonical" in l)
    assert "1 rewrite (ReduceMean -> GlobalAveragePool x1)" in lines[i]
    assert "ReduceMean -> GlobalAveragePool (for npu)" in lines[i + 1]


# ---------------------------------------------------------------- the benchmark
@pytest.mark.slow
def test_exporters_benchmark_quick(tmp_path):
    out = tmp_path / "exporters-quick.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "exporters.py"), "--quick", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    doc = json.loads(out.read_text())
    rows = {(r["exporter"], r["canonical"]): r for r in doc["rows"]}
    assert len(rows) == 4 and all(r["verify_ok"] for r in rows.values())
    assert rows[("dynamo", False)]["illegal_cells"] > 0 and rows[("dynamo", True)]["rewrites"] > 0
    assert rows[("dynamo", False)]["devices"] != rows[("legacy", False)]["devices"]     # the exporter changed the plan
    assert rows[("dynamo", True)]["plan"] == rows[("legacy", True)]["plan"]
    assert abs(rows[("dynamo", True)]["latency_ms"] / rows[("legacy", True)]["latency_ms"] - 1) <= 0.01
    assert doc["passed"] and doc["same_devices_after"] and not doc["same_devices_before"]
