"""CheckLegality: per (layer, device) mask and reasons; a layer legal nowhere is infeasible."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
import pytest

from hetcc.core.errors import InfeasibleError, PipelineError
from hetcc.passes.legality import CheckLegality, Legality
from hetcc.compiler.passmanager import PassManager
from hetcc.compiler.program import LAYERS, LEGALITY, TENSORS, Layer, Program, TensorInfo
from hetcc.targets import load_target

from boards import board_text, device

MODEL = """
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4,8,8] x, float[4,1,3,3] w) => (float[1,4,8,8] y) {
  c = Conv <group = 4, pads = [1, 1, 1, 1]> (x, w)
  r = Relu (c)
  y = Erf (r)
}
"""

FANCY = """
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4,8,8] x) => (float[1,4,8,8] y) {
  r = Relu (x)
  y = FancyOp (r)
}
"""

_PICKY = dict(freq_mhz=500.0, peak_gflops={"conv": 10.0, "matmul": 10.0, "other": 1.0}, layer_overhead_ms=0.1,
              transfer={"beta_ms_per_mb": 1.0, "delta_ms": 1.0})
TINY = board_text("tiny", "two picky accelerators", devices={
    "a": device(kind="npu", execution_provider="NnapiExecutionProvider", **_PICKY, capacity_bytes=1_000,
                supported_ops=["Conv", "Relu"], dtypes=["float16", "float32"], predicates=["conv_group_1"]),
    "b": device(kind="dsp", execution_provider="QNNExecutionProvider", **_PICKY, unsupported_ops=["FancyOp", "Erf"],
                dtypes=["int8", "float32"])})


def program(text: str) -> Program:
    model = ir.serde.deserialize_model(onnx.parser.parse_model(text))
    for i, node in enumerate(model.graph):
        node.name = f"{node.op_type}_{i}"
    return Program(model=model, name="test")


def mk_layer(i: int, nodes: tuple[str, ...], ops: tuple[str, ...], params: int = 0,
             dtypes: tuple[str, ...] = ("float32",), inputs=("x",), outputs=("y",)) -> Layer:
    return Layer(id=i, nodes=nodes, op_types=tuple(sorted(set(ops))), inputs=inputs, outputs=outputs,
                 param_bytes=params, flops=1e6, flops_by_class={"conv": 1e6, "matmul": 0.0, "other": 0.0},
                 input_bytes=1024, output_bytes=1024, dtypes=dtypes)


def tensors(**shapes: tuple[int, ...]) -> dict[str, TensorInfo]:
    return {k: TensorInfo(k, "float32", v, 4 * int(np.prod(v))) for k, v in shapes.items()}


@pytest.fixture
def tiny(tmp_path: Path):
    p = tmp_path / "tiny.toml"
    p.write_text(TINY)
    return load_target(p)


def run(prog: Program, target) -> Legality:
    CheckLegality(target).run(prog)
    return prog.get(LEGALITY)


def test_declares_its_contract() -> None:
    assert CheckLegality.name == "legality"
    assert CheckLegality.requires == (LAYERS, TENSORS) and CheckLegality.ensures == (LEGALITY,)
    with pytest.raises(PipelineError, match="requires analysis 'layers'"):
        PassManager([CheckLegality(load_target("hikey970"))]).run(program(MODEL))


def test_unsupported_op_on_the_npu() -> None:
    hikey = load_target("hikey970")
    prog = program(MODEL)
    prog.put(LAYERS, (mk_layer(0, ("Conv_0", "Relu_1"), ("Conv", "Relu")),
                      mk_layer(1, ("Erf_2",), ("Erf",))))
    prog.put(TENSORS, tensors(x=(1, 4, 8, 8), c=(1, 4, 8, 8), r=(1, 4, 8, 8), y=(1, 4, 8, 8)))
    PassManager([CheckLegality(hikey)]).run(prog)
    leg: Legality = prog.get(LEGALITY)
    assert leg.devices == ("big", "little", "gpu", "npu")
    assert leg.mask.dtype == bool and leg.mask.shape == (2, 4)
    assert leg.mask.tolist() == [[True] * 4, [True, True, True, False]]
    assert leg.reasons == {(1, "npu"): "op Erf unsupported"}
    assert leg.reason(1, "npu") == "op Erf unsupported" and leg.reason(0, "npu") is None


def test_predicate_capacity_and_dtype(tiny) -> None:
    prog = program(MODEL)
    prog.put(LAYERS, (mk_layer(0, ("Conv_0",), ("Conv",), params=144),      # grouped Conv: 'a' refuses
                      mk_layer(1, ("Relu_1",), ("Relu",), params=5_000),     # too big for 'a'
                      mk_layer(2, ("Erf_2",), ("Relu",), dtypes=("float16", "int64"))))  # fp16: 'b' refuses
    prog.put(TENSORS, tensors(x=(1, 4, 8, 8), w=(4, 1, 3, 3), c=(1, 4, 8, 8), r=(1, 4, 8, 8), y=(1, 4, 8, 8)))
    leg = run(prog, tiny)
    assert leg.mask.tolist() == [[False, True], [False, True], [True, False]]
    assert leg.reasons[(0, "a")] == "conv_group_1: grouped Conv (node 'Conv_0', group=4) unsupported"
    assert leg.reasons[(1, "a")] == "parameters 5.0 kB exceed capacity 1.0 kB"
    assert leg.reasons[(2, "b")] == "dtype float16 unsupported"  # int64 (an index type) is not checked


def test_every_reason_is_listed(tiny) -> None:
    prog = program(MODEL)
    prog.put(LAYERS, (mk_layer(0, ("Conv_0", "Relu_1", "Erf_2"), ("Conv", "Relu", "Erf"),
                               params=2_000, dtypes=("float64",)),))
    prog.put(TENSORS, tensors(x=(1, 4, 8, 8), w=(4, 1, 3, 3)))
    with pytest.raises(InfeasibleError) as e:
        run(prog, tiny)
    msg = str(e.value)
    assert msg == ("layer L00 (node 'Erf_2', op 'Erf') is legal on no device of tiny: "
                   "a: op Erf unsupported, dtype float64 unsupported, parameters 2.0 kB exceed capacity "
                   "1.0 kB, conv_group_1: grouped Conv (node 'Conv_0', group=4) unsupported; "
                   "b: op Erf unsupported, dtype float64 unsupported")


def test_layer_legal_nowhere_is_infeasible(tiny) -> None:
    prog = program(FANCY)
    prog.put(LAYERS, (mk_layer(0, ("Relu_0",), ("Relu",)), mk_layer(1, ("FancyOp_1",), ("FancyOp",))))
    prog.put(TENSORS, tensors(x=(1, 4, 8, 8), r=(1, 4, 8, 8), y=(1, 4, 8, 8)))
    with pytest.raises(InfeasibleError) as e:
        run(prog, tiny)
    msg = str(e.value)
    assert msg == ("layer L01 (node 'FancyOp_1', op 'FancyOp') is legal on no device of tiny: "
                   "a: op FancyOp unsupported; b: op FancyOp unsupported")
    assert "\n" not in msg and e.value.exit_code == 3
    assert not prog.has(LEGALITY)


def test_layer_too_big_for_the_npu_stays_legal_elsewhere() -> None:
    hikey = load_target("hikey970")
    prog = program(FANCY)
    prog.put(LAYERS, (mk_layer(0, ("Relu_0",), ("Relu",), params=150_000_000),))
    prog.put(TENSORS, tensors(x=(1, 4, 8, 8), r=(1, 4, 8, 8)))
    leg = run(prog, hikey)
    assert leg.mask.tolist() == [[True, True, True, False]]
    # hikey970's NPU counts parameters and activations against its capacity (MOSAIC's 100 MB)
    assert leg.reasons[(0, "npu")] == "parameters 150.0 MB + activations 0 B exceed capacity 100.0 MB"


def test_rank_and_batch_predicates_on_the_npu() -> None:
    hikey = load_target("hikey970")
    prog = program(FANCY)
    prog.put(LAYERS, (mk_layer(0, ("Relu_0",), ("Relu",), inputs=("x",), outputs=("r",)),))
    prog.put(TENSORS, tensors(x=(1, 2, 4, 8, 8), r=(1, 2, 4, 8, 8)))
    leg = run(prog, hikey)
    assert not leg.mask[0, 3] and leg.mask[0, :3].all()
    assert leg.reasons[(0, "npu")].startswith("max_rank_4: tensor 'x' has rank 5 > 4")

    prog = program(FANCY)
    prog.put(LAYERS, (mk_layer(0, ("Relu_0",), ("Relu",), inputs=("x",), outputs=("r",)),))
    prog.put(TENSORS, tensors(x=(8, 4, 8, 8), r=(8, 4, 8, 8)))
    leg = run(prog, hikey)
    assert leg.reasons[(0, "npu")] == "batch_1: tensor 'x' has batch 8 != 1"


def test_mask_feeds_the_cost_model() -> None:
    from hetcc.compiler.costmodel import analytical_costs

    hikey = load_target("hikey970")
    prog = program(MODEL)
    layers = (mk_layer(0, ("Conv_0", "Relu_1"), ("Conv", "Relu")), mk_layer(1, ("Erf_2",), ("Erf",)))
    prog.put(LAYERS, layers)
    prog.put(TENSORS, tensors(x=(1, 4, 8, 8)))
    leg = run(prog, hikey)
    table = analytical_costs(layers, hikey, leg.mask)
    assert table.legal[0].all() and table.legal[1, :24].all() and not table.legal[1, 24]
