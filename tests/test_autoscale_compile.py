"""AutoScale's compile side (issue 32): the action table, FP16/INT8 variants, the policy artifact.

Tiny models only (a conv + fc net, a one-Gemm net whose logits are nearly equal so that low
precision flips its argmax); every compile is a few hundred milliseconds."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import hetcc
from hetcc.cli import main
from hetcc.compiler.autoscale import action_table, model_features, parse_accuracy
from hetcc.core.errors import UsageError
from hetcc.runtime.autoscale import Policy, QTable
from hetcc.runtime.executor import Executor
from hetcc.runtime.manifest import load_manifest

TARGET = "mi8pro-edge-cloud"
#: every action mi8pro-edge-cloud offers a float model: CPU 6 V/F steps x {FP32, INT8}, GPU 7 x {FP32, FP16},
#: the DSP at INT8, the edge and the cloud at FP32
CPU = [826, 1210, 1613, 1997, 2400, 2803]
GPU = [257, 342, 414, 520, 596, 675, 710]
ALL = ([f"cpu@{f}:fp32" for f in CPU] + [f"cpu@{f}:int8" for f in CPU] + [f"gpu@{f}:fp32" for f in GPU]
       + [f"gpu@{f}:fp16" for f in GPU] + ["dsp:int8", "edge", "cloud"])
NARROW = "cpu@2803:fp32,cpu@826:int8,gpu@710:fp16,dsp:int8,edge"


def _save(graph: onnx.GraphProto, path: Path) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def tiny_net(path: Path) -> Path:
    """x[1,3,16,16] -> Conv(8, 3x3) -> Relu -> GlobalAveragePool -> Flatten -> Gemm(10) -> y[1,10]."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
             for n, s in (("W", (8, 3, 3, 3)), ("B", (8,)), ("W2", (10, 8)), ("B2", (10,)))]
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "W2", "B2"], ["y"], transB=1, name="fc")]
    return _save(helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits), path)


def flat_net(path: Path) -> Path:
    """One Gemm whose 100 logits differ by ~1e-4: FP16 and INT8 flip its argmax (low agreement)."""
    w = (1.0 + 1e-4 * np.random.default_rng(0).standard_normal((100, 16))).astype(np.float32)
    return _save(helper.make_graph([helper.make_node("Gemm", ["x", "W"], ["y"], transB=1, name="fc")], "flat",
                                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 100])],
                                   [numpy_helper.from_array(w, "W")]), path)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("autoscale-models")
    return {"tiny": tiny_net(d / "tiny.onnx"), "flat": flat_net(d / "flat.onnx")}


@pytest.fixture(scope="module")
def analysis(models):
    return hetcc.analyse(models["tiny"], TARGET)


@pytest.fixture(scope="module")
def built(models, tmp_path_factory):
    out = tmp_path_factory.mktemp("autoscale-build") / "as"
    result = hetcc.compile(models["tiny"], TARGET, "energy", planner="autoscale", output_dir=out,
                           planner_options={"actions": NARROW})
    return result, out


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# ---- the action table -------------------------------------------------------------------------

def test_action_names_and_numbers(analysis):
    table = action_table(analysis)
    assert list(table.names) == ALL and len(table.names) == 29 and not table.excluded
    a = {x["variant"]: x for x in table.actions}
    assert a["dsp:int8"]["freq_mhz"] is None and a["cpu@2803:fp32"]["freq_mhz"] == pytest.approx(2803.2)
    assert a["edge"]["remote"] and a["edge"]["link"] == "wifi-direct" and a["cloud"]["link"] == "wifi"
    assert a["cpu@826:int8"]["compute_ms"] < a["cpu@826:fp32"]["compute_ms"]       # INT8 factor 0.5 on the CPU
    assert a["gpu@710:fp16"]["compute_ms"] < a["gpu@710:fp32"]["compute_ms"]       # FP32 factor 2 on the GPU
    assert all(x["accuracy"] == (1.0 if x["precision"] == "float32" else None) for x in table.actions)
    assert a["edge"]["bytes_in"] == 3 * 16 * 16 * 4 and a["edge"]["bytes_out"] == 10 * 4
    # a remote action's compute time leaves the link out: it is below the whole variant's latency
    p = table.problem
    edge = table.names.index("edge")
    assert a["edge"]["compute_ms"] < p.slice_cost(0, p.num_layers - 1, edge).latency_ms
    assert a["edge"]["busy_power_mw"] == pytest.approx(150.0)       # the phone's radio idle while it waits


def test_dsp_int8_is_legal_although_the_float_model_is_not(analysis):
    dsp = int(analysis.problem.states.of("dsp")[0])
    assert not analysis.problem.legal[:, dsp].any()
    table = action_table(analysis, actions=["dsp:int8"])
    assert table.names == ("dsp:int8",) and np.isfinite(table.actions[0]["compute_ms"])


def test_an_op_the_device_cannot_run_excludes_its_actions(models, tmp_path):
    from hetcc.targets import load_target

    text = load_target(TARGET).path.read_text()
    board = tmp_path / "nogemm.toml"
    board.write_text(text.replace('name = "mi8pro-edge-cloud"', 'name = "nogemm"')
                     .replace("[devices.dsp]\n", '[devices.dsp]\nunsupported_ops = ["Gemm"]\n'))
    table = action_table(hetcc.analyse(models["tiny"], board))
    assert "dsp:int8" not in table.names and len(table.names) == 28
    (ex,) = table.excluded
    assert ex["variant"] == "dsp:int8" and "Gemm" in ex["reason"]


def test_narrowing_keeps_table_order_and_refuses_unknown_names(analysis):
    assert action_table(analysis, actions="edge,gpu@710:fp16").names == ("gpu@710:fp16", "edge")
    assert action_table(analysis, precisions=("fp16",)).names == tuple(f"gpu@{f}:fp16" for f in GPU)
    with pytest.raises(UsageError, match=r"unknown action 'gpu@710:fp61'.*did you mean 'gpu@710:fp16'"):
        action_table(analysis, actions="gpu@710:fp61")
    with pytest.raises(UsageError, match="twice"):
        action_table(analysis, actions="edge,edge")


def test_model_features(analysis):
    assert model_features(analysis) == {"name": "tiny", "conv": 1, "fc": 1, "rc": 0,
                                        "macs": 3 * 3 * 3 * 8 * 16 * 16 + 8 * 10}


def se_net(path: Path) -> Path:
    """A squeeze-and-excitation block: x[1,8,8,8] -> Conv(8, 1x1) -> GlobalAveragePool -> Conv(2, 1x1)
    -> Relu -> Conv(8, 1x1) -> Sigmoid -> Mul (the feature map) -> y. The two 1x1 convolutions of the
    pooled 1x1 map are FC layers; the first, on the 8x8 map, is a convolution."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
             for n, s in (("W0", (8, 8, 1, 1)), ("W1", (2, 8, 1, 1)), ("W2", (8, 2, 1, 1)))]
    nodes = [helper.make_node("Conv", ["x", "W0"], ["c"], name="pointwise"),
             helper.make_node("GlobalAveragePool", ["c"], ["g"], name="squeeze"),
             helper.make_node("Conv", ["g", "W1"], ["s1"], name="se_reduce"),
             helper.make_node("Relu", ["s1"], ["s2"], name="relu"),
             helper.make_node("Conv", ["s2", "W2"], ["s3"], name="se_expand"),
             helper.make_node("Sigmoid", ["s3"], ["s4"], name="gate"),
             helper.make_node("Mul", ["c", "s4"], ["y"], name="excite")]
    return _save(helper.make_graph(nodes, "se", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8])],
                                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])], inits), path)


def test_model_features_count_squeeze_excitation_as_fc(tmp_path):
    # AutoScale Table 3 counts MobilenetV3's squeeze-and-excitation layers as FC (FC 20)
    f = model_features(hetcc.analyse(se_net(tmp_path / "se.onnx"), TARGET))
    assert (f["conv"], f["fc"], f["rc"]) == (1, 2, 0)


def test_parse_accuracy():
    assert parse_accuracy("90%") == pytest.approx(0.9) and parse_accuracy("0.75") == 0.75
    for bad in ("95", "x", "-1%", "nan"):
        with pytest.raises(UsageError):
            parse_accuracy(bad)


# ---- the artifact ------------------------------------------------------------------------------

def test_one_variant_per_action_and_the_policy_file(built):
    result, out = built
    m = load_manifest(out)
    assert list(m.variants) == NARROW.split(",")[:1] + ["cpu@826:int8", "gpu@710:fp16", "dsp:int8", "edge"]
    assert m.default_variant == result.policy.default and m.policy.file == "policy/autoscale.json"
    policy = Policy.load(out / m.policy.file, sha256=m.policy.sha256)
    assert list(policy.variants) == list(m.variants) and policy.qos_ms == 50.0       # AutoScale Sec. 5.2
    assert policy.model["conv"] == 1 and policy.links.keys() == {"wifi", "wifi-direct"}
    for a in policy.actions:
        v = m.variants[a["variant"]]
        assert v.precision == a["precision"] and len(v.slices) == 1
        assert a["accuracy"] == (1.0 if v.agreement is None else v.agreement.top1)


def test_variants_sharing_a_file_store_it_once(built):
    _, out = built
    m = load_manifest(out)
    files = {n: v.slices[0].file for n, v in m.variants.items()}
    assert files["cpu@2803:fp32"] == files["edge"] and files["cpu@826:int8"] == files["dsp:int8"]
    assert len(set(files.values())) == 3 == len(list((out / "slices").glob("*.onnx")))


def test_low_precision_variants_run_and_keep_the_model_types(built):
    _, out = built
    m = load_manifest(out)
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    ref = Executor(out, variant="cpu@2803:fp32").run({"x": x})["y"]
    for name, prec in (("gpu@710:fp16", "float16"), ("cpu@826:int8", "int8")):
        v = m.variants[name]
        assert v.precision == prec and v.agreement.inputs == 16 and 0.0 <= v.agreement.top1 <= 1.0
        assert v.agreement.rel_error < 0.2
        path = out / v.slices[0].file
        assert onnx.load(str(path)).ir_version == 8                      # the source's, not the converter's
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        assert [i.type for i in sess.get_inputs()] == ["tensor(float)"]
        assert [o.type for o in sess.get_outputs()] == ["tensor(float)"]
        y = Executor(out, variant=name).run({"x": x})["y"]
        assert y.dtype == np.float32 and y.shape == (1, 10)
        assert np.linalg.norm(y - ref) / np.linalg.norm(ref) < 0.2
    ops = {n.op_type for n in onnx.load(str(out / m.variants["cpu@826:int8"].slices[0].file)).graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops


def test_min_accuracy_leaves_out_low_agreement_variants(models, tmp_path):
    cal = tmp_path / "cal"
    cal.mkdir()
    np.save(cal / "x.npy", np.random.default_rng(2).standard_normal((4, 1, 16)).astype(np.float32))
    result = hetcc.compile(models["flat"], TARGET, "energy", planner="autoscale", output_dir=tmp_path / "o",
                           planner_options={"actions": "cpu@2803:fp32,cpu@2803:int8,gpu@710:fp16"},
                           min_accuracy="90%", calibration_data=cal)
    assert list(result.plans) == ["cpu@2803:fp32"]
    assert {b["variant"] for b in result.policy.below_accuracy} == {"cpu@2803:int8", "gpu@710:fp16"}
    assert list(load_manifest(tmp_path / "o").variants) == ["cpu@2803:fp32"]
    assert result.policy.policy["min_accuracy"] == pytest.approx(0.9)


def test_a_trained_qtable_is_shipped(models, tmp_path):
    names = ["cpu@2803:fp32", "edge"]
    table = QTable(names, target=TARGET)
    table.update("L|S|S|S|N|N|R|R", 1, 5.0, "L|S|S|S|N|N|R|R")
    table.save(tmp_path / "q.json")
    hetcc.compile(models["tiny"], TARGET, planner="autoscale", output_dir=tmp_path / "o",
                  planner_options={"actions": ",".join(names), "qtable": str(tmp_path / "q.json")})
    doc = json.loads((tmp_path / "o" / "policy" / "autoscale.json").read_text())
    assert doc["qtable"]["q"] == table.to_json()["q"] and doc["qtable"]["actions"] == names


# ---- the command line --------------------------------------------------------------------------

def test_cli_compile_and_inspect(capsys, models, tmp_path):
    out = tmp_path / "as"
    code, stdout, _ = run(capsys, "compile", models["tiny"], "--target", TARGET, "--planner", "autoscale",
                          "--planner-option", "actions=cpu@2803:fp32,edge,cloud", "-o", out)
    assert code == 0 and "3 variants, QoS target 50 ms" in stdout and "policy/autoscale.json" in stdout
    code, stdout, _ = run(capsys, "inspect", out)
    assert code == 0
    rows = [l for l in stdout.splitlines() if l.split() and l.split()[0] in ("cpu@2803:fp32", "edge", "cloud")]
    assert len(rows) == 3 and "wifi-direct" in rows[1]
    code, stdout, _ = run(capsys, "compile", models["tiny"], "--target", TARGET, "--planner", "autoscale",
                          "--planner-option", "actions=edge", "--json", "--deadline", "10ms")
    doc = json.loads(stdout)
    assert code == 0 and doc["policy"]["qos_ms"] == 10.0 and list(doc["variants"]) == ["edge"]


@pytest.mark.parametrize("argv, needle", [
    (["--planner", "autoscale", "--planner-option", "actions=npu@1:fp32"], "unknown action 'npu@1:fp32'"),
    (["--planner", "autoscale", "--planner-option", "actions=,"], "names no action"),
    (["--planner", "autoscale", "--planner-option", "qtable=/nonexistent/q.json"], "qtable=/nonexistent/q.json"),
    (["--planner", "autoscale", "--min-accuracy", "95"], "--min-accuracy '95'"),
    (["--planner", "autoscale", "--calibration-data", "/nonexistent"], "--calibration-data /nonexistent"),
    (["--planner", "dp", "--min-accuracy", "0.9"], "--min-accuracy applies"),
])
def test_cli_bad_options_are_one_line_errors(capsys, models, tmp_path, argv, needle):
    code, _, err = run(capsys, "compile", models["tiny"], "--target", TARGET, "-o", tmp_path / "o", *argv)
    lines = [l for l in err.splitlines() if l.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("hetcc: error: ") and needle in lines[0], err
    assert not (tmp_path / "o").exists()


def test_measure_agreement_of_the_whole_model(analysis):
    from hetcc.compiler.autoscale import measure_agreement

    got = measure_agreement(analysis, ("fp32", "fp16", "int8"))
    assert set(got) == {"float16", "int8"} and got["float16"].rel_error < got["int8"].rel_error
    assert measure_agreement(analysis, ("float32",)) == {}


def test_api_refusals(models, tmp_path):
    with pytest.raises(UsageError, match="--hardware"):
        hetcc.compile(models["tiny"], "orangepi5", planner="autoscale", hardware={"x": 1})
    with pytest.raises(UsageError, match="plans a policy, not a model"):
        hetcc.compile(models["tiny"], TARGET, variants=["autoscale", "dp"])
    with pytest.raises(UsageError, match="no .npy file"):
        hetcc.compile(models["tiny"], TARGET, planner="autoscale", calibration_data=tmp_path)
