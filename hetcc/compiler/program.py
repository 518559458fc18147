"""Program: the model in one in-memory IR (onnx-ir) plus named, typed analysis results.

Passes read and write analyses through ``program.get(key)`` / ``program.put(key, value)``;
nothing is stored on nodes or in globals.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hetcc.compiler.onnxir import ir

from hetcc.core.errors import PipelineError

# Analysis keys (one per producing pass).
TENSORS = "tensors"        # dict[str, TensorInfo]            passes.shapes
CONSTANTS = "constants"    # ConstantInfo                      passes.constants
LAYERS = "layers"          # tuple[Layer, ...]                 passes.layers
LEGALITY = "legality"      # Legality                          passes.legality
COSTS = "costs"            # CostTable                         passes.costs
PLAN = "plan"              # planners.Plan                     passes.partition
ARTIFACT = "artifact"      # Path of the written artifact dir  passes.codegen


@dataclass(frozen=True)
class TensorInfo:
    """Static type of one value: element type name (onnx, e.g. 'float32'), shape, size in bytes.

    ``data_dependent``: the shape depends on the input values (NonZero, a Reshape to a computed
    shape, ...); ``shape`` and ``nbytes`` are then one run's, an estimate, and no cut crosses it.
    """

    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    data_dependent: bool = False


@dataclass(frozen=True)
class ConstantInfo:
    """Values and nodes computable from initializers alone (never a layer, never cut)."""

    values: frozenset[str]
    nodes: frozenset[str]


@dataclass(frozen=True)
class Layer:
    """A run of non-constant nodes between two valid cut points.

    ``inputs``: non-constant tensors it reads that were produced before it (or are model
    inputs); ``outputs``: tensors it produces that later layers read or that are model outputs.
    ``flops_by_class`` splits ``flops`` into the op classes of ``hetcc.core.opclasses`` ('conv',
    'matmul', 'other': element-wise, pooling, normalisation; 'dwconv' / 'dwconv_large': depthwise
    and grouped convolutions; 'pwconv': dense 1x1) so a target can give each class its own peak
    throughput.
    """

    id: int
    nodes: tuple[str, ...]
    op_types: tuple[str, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    param_bytes: int
    flops: float
    flops_by_class: dict[str, float]
    input_bytes: int
    output_bytes: int
    dtypes: tuple[str, ...]
    node_classes: dict[str, int] = field(default_factory=dict)   # nodes per op class
    geometry: dict[str, int] = field(default_factory=dict)       # largest Conv kernel, stride, channels
    #: the part of ``flops_by_class`` integer kernels compute (QLinearConv, QDQ groups: hetcc.compiler.flops.runs_int8)
    int8_flops_by_class: dict[str, float] = field(default_factory=dict)
    #: Quantize/DequantizeLinear nodes a runtime folds into the integer kernel they wrap (no launch)
    fused_nodes: int = 0
    #: bytes of every tensor its nodes produce (not only those leaving it), as the model holds them:
    #: what a device that counts activations against its capacity charges (passes.layers.build_layers)
    activation_bytes: int = 0
    #: FairBoost's Eq. 2 layer vector (22 numbers: index, type, ifm/ofm/weights 4-D shapes, biases,
    #: activation, pad-stride) of its dominant node (``passes.layer_vectors``); () when not computed
    vector: tuple[float, ...] = ()

    @property
    def name(self) -> str:
        return f"L{self.id:02d}"


@dataclass
class Program:
    """The model being compiled and the analyses computed on it so far."""

    model: ir.Model
    source_path: Path | None = None
    source_sha256: str = ""
    name: str = "model"
    analyses: dict[str, Any] = field(default_factory=dict)
    #: tensor -> the shape one onnxruntime run on random inputs gave, for the tensors whose shape
    #: depends on the input values (their IR shape is unknown); the frontend fills it
    observed_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)

    @property
    def graph(self) -> ir.Graph:
        return self.model.graph

    def has(self, key: str) -> bool:
        return key in self.analyses

    def get(self, key: str) -> Any:
        try:
            return self.analyses[key]
        except KeyError:
            raise PipelineError(f"analysis {key!r} is missing; run the pass that produces it first") from None

    def put(self, key: str, value: Any) -> None:
        self.analyses[key] = value
