"""Hostile models and model flags: files that are not models, malformed graphs (cycles, names
written twice, outputs nothing produces), versions newer than onnx, custom ops, outputs that are
inputs or constants, data-dependent shapes at a cut, sizes past the limits (--input-shape dims of
20 digits, 40 GB inputs), malformed --input-shape values and a 20k-node chain. Every refusal is
one line naming the culprit; every model that is valid compiles, runs and verifies."""
from __future__ import annotations

import json
from pathlib import Path

from harness import Case, compiled, text_model
from text_models import CHAIN, NONZERO

HEADER = '<ir_version: 8, opset_import: ["" : 17]>\n'
M = text_model(CHAIN)
ART = ["art"]


def _proto(build):
    """A setup writing the ModelProto ``build()`` returns to work/m.onnx (no checks: hostile)."""
    def setup(work: Path) -> None:
        (work / "m.onnx").write_bytes(build().SerializeToString())
    return setup


def _graph(nodes, inputs=(("x", [1, 8]),), outputs=(("y", [1, 8]),), initializers=(), opset=17, ir=8,
           domains=()):
    from onnx import TensorProto as T, helper as h

    g = h.make_graph(nodes, "g", [h.make_tensor_value_info(n, T.FLOAT, s) for n, s in inputs],
                     [h.make_tensor_value_info(n, T.FLOAT, s) for n, s in outputs], initializer=list(initializers))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)] + [h.make_opsetid(d, 1) for d in domains])
    m.ir_version = ir
    return m


def _node(op, ins, outs, name="", domain=""):
    from onnx import helper as h

    return h.make_node(op, ins, outs, name=name, domain=domain)


def _compiled_proto(build, *flags: str):
    """A setup writing ``build()`` to work/m.onnx and compiling it into work/art."""
    def setup(work: Path) -> None:
        from harness import _run_in_process

        _proto(build)(work)
        o = _run_in_process(Case("setup", ["compile", "m.onnx", "-o", "art", "-q", *flags], 0), work)
        if o.code != 0:
            raise RuntimeError(f"setup compile failed: {o.stderr}{o.escaped or ''}")
    return setup


def _unsorted():
    return _graph([_node("Relu", ["a"], ["y"]), _node("Sigmoid", ["x"], ["a"])])


def _bytes(data: bytes, name: str = "m.onnx"):
    def setup(work: Path) -> None:
        (work / name).write_bytes(data)
    return setup


def _truncated(work: Path) -> None:
    M(work)
    data = (work / "m.onnx").read_bytes()
    (work / "m.onnx").write_bytes(data[: len(data) // 2])


def _directory(work: Path) -> None:
    (work / "m.onnx").mkdir()


def _wrong_raw_data():
    import numpy as np
    import onnx

    w = onnx.TensorProto(name="w", data_type=onnx.TensorProto.FLOAT, dims=[8, 8],
                         raw_data=np.zeros(10, np.float32).tobytes())
    return _graph([_node("MatMul", ["x", "w"], ["y"])], initializers=[w])


def _big_chain(n: int):
    def build():
        return _graph([_node("Relu", [f"t{i}" if i else "x"], [f"t{i + 1}" if i < n - 1 else "y"], name=f"r{i}")
                       for i in range(n)])
    return _proto(build)


# ---------------------------------------------------------------- valid models that must run

#: NonZero's output is the model's output
NONZERO_OUT = HEADER + """
nonzeroout (float[1,8] x) => (float[2,M] y) {
    a = Relu(x)
    b = Sigmoid(a)
    nz = NonZero(a)
    y = Cast<to = 1>(nz)
}
"""

#: Range and TopK with a k computed from the input's values; a Reshape to a data-computed shape
COMPUTED_K = HEADER + """
computedk (float[1,8] x) => (float[K] y, float[N] v) <float[1] three = {3.0}, float[1] one = {1.0}> {
    a = Relu(x)
    s = ReduceSum<keepdims = 0>(a)
    m = Mul(s, three)
    c = Ceil(m)
    c1 = Add(c, one)
    n = Cast<to = 7>(c1)
    z = Constant<value = int64 {0}>()
    st = Constant<value = int64 {1}>()
    r = Range(z, n, st)
    rf = Cast<to = 1>(r)
    t = Relu(rf)
    v = Sigmoid(t)
    nmin = Constant<value = int64 {8}>()
    k0 = Min(n, nmin)
    one64 = Constant<value = int64[1] {1}>()
    k = Reshape(k0, one64)
    flat = Flatten<axis = 0>(a)
    sq = Squeeze(flat)
    vals, idx = TopK(sq, k)
    g = Relu(vals)
    y = Sigmoid(g)
}
"""

#: outputs that are an initializer and a Constant node's output, beside a computed one
CONSTANT_OUTPUTS = HEADER + """
constouts (float[1,8] x) => (float[1,8] y, float[1,8] w, float[2] c, float[1,8] y2) <float[1,8] w = {1,2,3,4,5,6,7,8}> {
    c = Constant<value = float[2] {1, 2}>()
    a = Relu(x)
    b = Add(a, w)
    y = Sigmoid(b)
    y2 = Relu(y)
}
"""

PASS_THROUGH = HEADER + """
passthrough (float[1,8] x) => (float[1,8] y, float[1,8] x) {
    y = Relu(x)
}
"""

DYNAMIC = HEADER + """
dyn (float[1,3,N,8] x) => (float[1,3,N,8] y) {
    a = Relu(x)
    y = Sigmoid(a)
}
"""

#: a static intermediate far past the per-tensor limit (Expand of a [1,8] input to 100000 x 12500 x 8)
HUGE_INTERMEDIATE = HEADER + """
hugemid (float[1,8] x) => (float[1,8] y) <int64[3] shp = {100000, 12500, 8}> {
    a = Relu(x)
    e = Expand(a, shp)
    s = ReduceSum<keepdims = 0>(e)
    y = Add(a, s)
}
"""

CUSTOM_OP_TEXT = """<ir_version: 8, opset_import: ["" : 17, "com.example" : 1]>
custom (float[1,8] x) => (float[1,8] y) {
    a = Relu(x)
    b = com.example.MyOp(a)
    y = Relu(b)
}
"""


def _slice_inputs(work: Path) -> set[str]:
    doc = json.loads((work / "art" / "manifest.json").read_text())
    return {i["name"] for v in doc["variants"].values() for s in v["slices"] for i in s["inputs"]}


def _cuts_only_at(*names: str):
    def check(work: Path, outcome) -> None:
        got = _slice_inputs(work)
        assert got <= {"x", *names}, f"slices read {sorted(got)}: a cut at a data-dependent shape"
        assert got - {"x"}, "the plan was meant to cut the model"
    return check


def _input_shape(spec: str, model=DYNAMIC) -> list:
    return ["compile", "m.onnx", "--input-shape", spec, "-o", "out"]


CASES = [
    # ------------------------------------------------------------ not a model
    Case("models/missing-file", ["compile", "nope.onnx", "-o", "out"], 2, ["nope.onnx", "no such file"]),
    Case("models/not-onnx", ["compile", "m.onnx", "-o", "out"], 2, ["m.onnx", "not a readable ONNX model"],
         setup=_bytes(b"hello, this is not protobuf\n" * 4)),
    Case("models/empty-file", ["compile", "m.onnx", "-o", "out"], 2, ["m.onnx", "empty"], setup=_bytes(b"")),
    Case("models/truncated-protobuf", ["compile", "m.onnx", "-o", "out"], 2, ["m.onnx", "not a readable"],
         setup=_truncated),
    Case("models/directory", ["compile", "m.onnx", "-o", "out"], 2, ["m.onnx", "directory"], setup=_directory),
    Case("models/no-nodes", ["compile", "m.onnx", "-o", "out"], 2, ["m.onnx", "no graph nodes"],
         setup=_proto(lambda: _graph([], outputs=(("x", [1, 8]),)))),
    Case("models/no-inputs", ["compile", "m.onnx", "-o", "out"], 2, ["no inputs", "constants"],
         setup=_proto(lambda: _graph([_node("Constant", [], ["y"])], inputs=()))),
    # ------------------------------------------------------------ malformed graphs
    Case("models/duplicate-node-names", ["compile", "m.onnx", "-o", "out"], 2, ["'n'", "unique name"],
         setup=_proto(lambda: _graph([_node("Relu", ["x"], ["a"], "n"), _node("Relu", ["a"], ["y"], "n")]))),
    Case("models/tensor-written-twice", ["compile", "m.onnx", "-o", "out"], 2, ["'a'", "two nodes", "Sigmoid"],
         setup=_proto(lambda: _graph([_node("Relu", ["x"], ["a"]), _node("Sigmoid", ["x"], ["a"]),
                                      _node("Relu", ["a"], ["y"])]))),
    Case("models/input-overwritten", ["compile", "m.onnx", "-o", "out"], 2, ["'x'", "model input"],
         setup=_proto(lambda: _graph([_node("Relu", ["x"], ["x"]), _node("Relu", ["x"], ["y"])]))),
    Case("models/cycle", ["compile", "m.onnx", "-o", "out"], 2, ["cycle", "'b'", "acyclic"],
         setup=_proto(lambda: _graph([_node("Add", ["x", "b"], ["a"]), _node("Relu", ["a"], ["b"]),
                                      _node("Relu", ["b"], ["y"])]))),
    Case("models/self-loop", ["compile", "m.onnx", "-o", "out"], 2, ["own output"],
         setup=_proto(lambda: _graph([_node("Add", ["x", "a"], ["a"]), _node("Relu", ["a"], ["y"])]))),
    Case("models/reads-undefined-tensor", ["compile", "m.onnx", "-o", "out"], 2, ["'ghost'", "no node"],
         setup=_proto(lambda: _graph([_node("Add", ["x", "ghost"], ["y"])]))),
    Case("models/unsorted-nodes-compile", ["compile", "m.onnx", "-o", "art", "-q"], 0, outputs=ART,
         setup=_proto(_unsorted)),
    Case("models/unsorted-nodes-verify", ["run", "art", "--verify"], 0, setup=_compiled_proto(_unsorted, "--planner", "even:2")),
    Case("models/orphan-output", ["compile", "m.onnx", "-o", "out"], 2, ["'z'", "produced by no node"],
         setup=_proto(lambda: _graph([_node("Relu", ["x"], ["y"])], outputs=(("y", [1, 8]), ("z", [1, 8]))))),
    Case("models/raw-data-wrong-size", ["compile", "m.onnx", "-o", "out"], 2, ["'w'", "256 bytes", "40"],
         setup=_proto(_wrong_raw_data)),
    # ------------------------------------------------------------ versions and ops
    Case("models/opset-newer-than-onnx", ["compile", "m.onnx", "-o", "out"], 2, ["opset 99", "opset_version"],
         setup=_proto(lambda: _graph([_node("Relu", ["x"], ["y"])], opset=99))),
    Case("models/ir-version-newer-than-onnx", ["compile", "m.onnx", "-o", "out"], 2, ["ir_version 99"],
         setup=_proto(lambda: _graph([_node("Relu", ["x"], ["y"])], ir=99))),
    Case("models/custom-op-domain", ["compile", "m.onnx", "-o", "out"], 2,
         ["'MyOp'", "'com.example'", "custom op", "neither onnx nor onnxruntime"], setup=text_model(CUSTOM_OP_TEXT)),
    Case("models/custom-op-named-node", ["compile", "m.onnx", "-o", "out"], 2, ["node 'mine'", "'MyOp'"],
         setup=_proto(lambda: _graph([_node("Relu", ["x"], ["a"]), _node("MyOp", ["a"], ["b"], "mine", "com.example"),
                                      _node("Relu", ["b"], ["y"])], domains=("com.example",)))),
    Case("models/unknown-standard-op", ["compile", "m.onnx", "-o", "out"], 2, ["'Relux'", "not an operator"],
         setup=_proto(lambda: _graph([_node("Relux", ["x"], ["y"])]))),
    Case("models/onnxruntime-contrib-op-compiles", ["compile", "m.onnx", "-o", "art", "-q"], 0, outputs=ART,
         setup=_proto(lambda: _graph([_node("Relu", ["x"], ["a"]), _node("Gelu", ["a"], ["y"], "g", "com.microsoft")],
                                     domains=("com.microsoft",)))),
    # ------------------------------------------------------------ outputs that no node computes
    Case("models/output-is-input", ["compile", "m.onnx", "-o", "out"], 2, ["output 'x'", "model input", "drop it"],
         setup=text_model(PASS_THROUGH)),
    Case("models/constant-outputs-verify", ["run", "art", "--verify"], 0,
         setup=compiled(CONSTANT_OUTPUTS, "--planner", "even:3")),
    Case("models/constant-outputs-single-slice", ["run", "art", "--verify", "--seed", "4"], 0,
         setup=compiled(CONSTANT_OUTPUTS)),
    # ------------------------------------------------------------ data-dependent shapes
    Case("models/nonzero-cut-seed-3", ["run", "art", "--seed", "3", "--verify"], 0,
         setup=compiled(NONZERO, "--planner", "even:3"), check=_cuts_only_at("a", "b")),
    Case("models/nonzero-cut-seed-7", ["run", "art", "--seed", "7", "--verify"], 0,
         setup=compiled(NONZERO, "--planner", "even:3"), check=_cuts_only_at("a", "b")),
    Case("models/nonzero-output-seed-5", ["run", "art", "--seed", "5", "--verify"], 0,
         setup=compiled(NONZERO_OUT, "--planner", "even:2"), check=_cuts_only_at("a")),
    Case("models/range-topk-computed-k-seed-3", ["run", "art", "--seed", "3", "--verify"], 0,
         setup=compiled(COMPUTED_K, "--planner", "even:2"), check=_cuts_only_at("a")),
    # ------------------------------------------------------------ sizes
    Case("models/declared-input-40gb", ["compile", "m.onnx", "-o", "out"], 2,
         ["input 'x'", "40.0 GB", "HETCC_MAX_TENSOR_BYTES"], child=True, timeout=60,
         setup=text_model(HEADER + "g (float[100000,100000] x) => (float[100000,100000] y) { y = Relu(x) }")),
    Case("models/intermediate-40gb", ["compile", "m.onnx", "-o", "out"], 2, ["tensor 'e'", "40.0 GB"],
         child=True, timeout=60, setup=text_model(HUGE_INTERMEDIATE)),
    Case("models/tensor-limit-lowered", ["compile", "m.onnx", "-o", "out"], 2, ["input 'x'", "HETCC_MAX_TENSOR_BYTES"],
         child=True, env={"HETCC_MAX_TENSOR_BYTES": "16"}, setup=M),
    Case("models/tensor-limit-not-a-number", ["compile", "m.onnx", "-o", "out"], 2, ["HETCC_MAX_TENSOR_BYTES", "lots"],
         child=True, env={"HETCC_MAX_TENSOR_BYTES": "lots"}, setup=M),
    Case("models/chain-20k-nodes-dp", ["compile", "m.onnx", "--planner", "dp", "-o", "art", "-q"], 0, outputs=ART,
         child=True, timeout=240, setup=_big_chain(20_000), slow=True),
    # ------------------------------------------------------------ --input-shape
    Case("models/input-shape-20-digits", _input_shape("x=1x3x99999999999999999999x8"), 2,
         ["99999999999999999999", "2147483647"], setup=text_model(DYNAMIC)),
    Case("models/input-shape-4000-digits", _input_shape("x=1x3x" + "9" * 4000 + "x8"), 2, ["2**31-1"],
         setup=text_model(DYNAMIC)),
    Case("models/input-shape-40gb", ["compile", "m.onnx", "--input-shape", "x=1x3x100000000x8", "-o", "out"], 2,
         ["--input-shape", "input 'x'", "9.6 GB"], child=True, timeout=60, setup=text_model(DYNAMIC)),
    Case("models/input-shape-zero", _input_shape("x=1x3x0x8"), 2, ["positive integer", "0"], setup=text_model(DYNAMIC)),
    Case("models/input-shape-negative", _input_shape("x=1x3x-4x8"), 2, ["positive integer", "-4"],
         setup=text_model(DYNAMIC)),
    Case("models/input-shape-not-integer", _input_shape("x=1x3x2.5x8"), 2, ["'2.5'", "not an integer"],
         setup=text_model(DYNAMIC)),
    Case("models/input-shape-empty-dims", _input_shape("x="), 2, ["malformed", "NAME=1x3x224x224"],
         setup=text_model(DYNAMIC)),
    Case("models/input-shape-no-equals", _input_shape("1x3x8x8"), 2, ["malformed", "NAME="], setup=text_model(DYNAMIC)),
    Case("models/input-shape-no-name", _input_shape("=1x3x8x8"), 2, ["malformed"], setup=text_model(DYNAMIC)),
    Case("models/input-shape-trailing-x", _input_shape("x=1x3x8x"), 2, ["not an integer"], setup=text_model(DYNAMIC)),
    Case("models/input-shape-unknown-input", _input_shape("img=1x3x8x8"), 2, ["'img'", "inputs are: x"],
         setup=text_model(DYNAMIC)),
    Case("models/input-shape-wrong-rank", _input_shape("x=1x3x8"), 2, ["rank 4"], setup=text_model(DYNAMIC)),
    Case("models/input-shape-contradicts-model", _input_shape("x=1x4x8x8"), 2, ["dimension 3 is fixed"],
         setup=text_model(DYNAMIC)),
    Case("models/input-shape-twice", ["compile", "m.onnx", "--input-shape", "x=1x3x8x8", "--input-shape", "x=1x3x9x8",
                                      "-o", "out"], 2, ["'x'", "twice"], setup=text_model(DYNAMIC)),
    Case("models/dynamic-dim-without-input-shape", ["compile", "m.onnx", "-o", "out"], 2, ["'N'", "--input-shape x="],
         setup=text_model(DYNAMIC)),
    Case("models/input-shape-ok", ["compile", "m.onnx", "--input-shape", "x=1x3x8x8", "-o", "art", "-q"], 0,
         setup=text_model(DYNAMIC), outputs=ART),
]
