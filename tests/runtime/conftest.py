"""A tiny hand-sliced artifact for the runtime tests.

Model (x: float32[2,8])::

    h1 = MatMul(x, W)        slice 0
    r  = Relu(h1)            slice 1   (r is also a model output)
    h3 = Add(r, x)           slice 1   (skip connection from the model input)
    y  = Softmax(h3)         slice 2

Model outputs: y (from slice 2) and r (from slice 1). The slices are written by hand with
onnx.helper, keeping the model's ir_version and opsets, with a manifest (built from the
runtime's manifest dataclasses) and sha256s as a compile would write them.
"""
from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import hetcc.runtime.manifest as M

IR_VERSION = 8
OPSETS = [helper.make_opsetid("", 17)]
SHAPE = [2, 8]


def sha256_of(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _vi(name: str, elem=TensorProto.FLOAT, shape=SHAPE):
    return helper.make_tensor_value_info(name, elem, shape)


def _weights() -> np.ndarray:
    return np.random.default_rng(42).standard_normal((8, 8)).astype(np.float32)


def _model(name: str, nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, [_vi(n) for n in inputs], [_vi(n) for n in outputs],
                              initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=OPSETS, producer_name="hetcc-tests")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model


def full_model() -> onnx.ModelProto:
    w = numpy_helper.from_array(_weights(), "W")
    return _model(
        "tiny",
        [
            helper.make_node("MatMul", ["x", "W"], ["h1"]),
            helper.make_node("Relu", ["h1"], ["r"]),
            helper.make_node("Add", ["r", "x"], ["h3"]),
            helper.make_node("Softmax", ["h3"], ["y"], axis=-1),
        ],
        ["x"], ["y", "r"], [w],
    )


def slice_models() -> list[onnx.ModelProto]:
    w = numpy_helper.from_array(_weights(), "W")
    return [
        _model("tiny_s0", [helper.make_node("MatMul", ["x", "W"], ["h1"])], ["x"], ["h1"], [w]),
        _model(
            "tiny_s1",
            [helper.make_node("Relu", ["h1"], ["r"]), helper.make_node("Add", ["r", "x"], ["h3"])],
            ["h1", "x"], ["h3", "r"],
        ),
        _model("tiny_s2", [helper.make_node("Softmax", ["h3"], ["y"], axis=-1)], ["h3"], ["y"]),
    ]


def wrong_last_slice() -> onnx.ModelProto:
    """Same interface as slice 2, different function (Sigmoid instead of Softmax)."""
    return _model("tiny_s2_wrong", [helper.make_node("Sigmoid", ["h3"], ["y"])], ["h3"], ["y"])


def _tensor(name: str) -> M.TensorSpec:
    return M.TensorSpec(name=name, dtype="float32", shape=tuple(SHAPE))


def _input(name: str, source) -> M.SliceInput:
    return M.SliceInput(name=name, dtype="float32", shape=tuple(SHAPE), source=source)


def slices_of(doc: dict, variant: str = "default") -> list:
    """The slice list of one variant of a manifest document."""
    return doc["variants"][variant]["slices"]


SLICE_FILES = ["slices/00_big.onnx", "slices/01_gpu.onnx", "slices/02_npu.onnx"]


@dataclass
class TinyArtifact:
    dir: Path
    model_path: Path

    @property
    def manifest_path(self) -> Path:
        return self.dir / "manifest.json"

    def manifest(self) -> dict:
        return json.loads(self.manifest_path.read_text())

    def write_manifest(self, doc: dict) -> None:
        self.manifest_path.write_text(json.dumps(doc, indent=2))

    def edit(self, fn) -> None:
        """Apply ``fn(doc)`` to the manifest on disk."""
        doc = self.manifest()
        fn(doc)
        self.write_manifest(doc)

    def replace_slice(self, index: int, model: onnx.ModelProto) -> None:
        """Swap a slice file and re-compute its sha256, as a careless hand edit would."""
        doc = self.manifest()
        sl = slices_of(doc)[index]
        path = self.dir / sl["file"]
        onnx.save(model, path)
        sl["sha256"] = sha256_of(path)
        self.write_manifest(doc)

    def feeds(self, seed: int = 0) -> dict[str, np.ndarray]:
        return {"x": np.random.default_rng(seed).standard_normal(SHAPE).astype(np.float32)}


VARIANT = "default"


def make_manifest(model_path: Path, slice_paths: list[Path], root: Path) -> dict:
    """The manifest a compile would write, built from the runtime's own dataclasses."""
    devices = ["big", "gpu", "npu"]
    inputs = [[_input("x", "model")], [_input("h1", 0), _input("x", "model")], [_input("h3", 1)]]
    outputs = [[_tensor("h1")], [_tensor("h3"), _tensor("r")], [_tensor("y")]]
    slices = tuple(
        M.SliceSpec(
            id=i, file=path.relative_to(root).as_posix(), sha256=sha256_of(path), device=devices[i],
            frequency_mhz=None, execution_provider="CPUExecutionProvider", provider_options={}, affinity=None,
            link=None, endpoint=None, first_layer=i, last_layer=i, inputs=tuple(inputs[i]),
            outputs=tuple(outputs[i]),
            predicted=M.SlicePredicted(latency_ms=0.1, energy_mj=0.01, transfer_ms=0.0),
        )
        for i, path in enumerate(slice_paths)
    )
    variant = M.Variant(
        objective=M.ObjectiveInfo(metric="latency", deadline_ms=None, deadline_spec=None, power_cap_mw=None),
        planner=M.PlannerInfo(name="dp", options={}, seconds=0.001, stats={}),
        hardware=None, feasible=True, violations=(), slices=slices,
        predicted=M.Predicted(latency_ms=0.3, energy_mj=0.03, edp_mj_ms=0.009, meets_deadline=None),
    )
    manifest = M.Manifest(
        schema=M.SCHEMA_ID, hetcc_version="0.1.0", kind="model",
        target=M.TargetInfo(name="host", sha256="0" * 64, kind="measured"),
        runtime=M.RuntimeInfo(allow_spinning=False, graph_optimization_level="all", intra_op_num_threads=1),
        model=M.ModelInfo(name="tiny", sha256=sha256_of(model_path), source_path=str(model_path.resolve()),
                          ir_version=IR_VERSION, inputs=(_tensor("x"),), outputs=(_tensor("y"), _tensor("r"))),
        default_variant=VARIANT, variants={VARIANT: variant}, policy=None, workload=None,
    )
    return manifest.to_json()


def build_tiny_artifact(base: Path) -> TinyArtifact:
    base.mkdir(parents=True, exist_ok=True)
    model_path = base / "tiny.onnx"
    onnx.save(full_model(), model_path)
    art = base / "build"
    (art / "slices").mkdir(parents=True)
    paths = []
    for rel, model in zip(SLICE_FILES, slice_models()):
        onnx.save(model, art / rel)
        paths.append(art / rel)
    (art / "manifest.json").write_text(json.dumps(make_manifest(model_path, paths, art), indent=2))
    return TinyArtifact(art, model_path)


@pytest.fixture
def tiny(tmp_path: Path) -> TinyArtifact:
    return build_tiny_artifact(tmp_path)


@pytest.fixture
def tiny_manifest(tiny: TinyArtifact) -> dict:
    return copy.deepcopy(tiny.manifest())


@pytest.fixture
def wrong_slice() -> onnx.ModelProto:
    """A drop-in for slice 2 that computes the wrong function (fixtures, not imports: other
    test folders have their own conftest.py)."""
    return wrong_last_slice()


@pytest.fixture(scope="module")
def target():
    """The board the run tests' artifacts are compiled for (``runtime_artifacts.TARGET``)."""
    from hetcc.targets import load_target
    from runtime_artifacts import TARGET

    return load_target(TARGET)


@pytest.fixture
def artifact(tmp_path, target):
    """Two slices (cpu, gpu) of a chain of identities: what ``hetcc run``'s tests run."""
    from runtime_artifacts import chain_artifact

    return chain_artifact(tmp_path, target)
