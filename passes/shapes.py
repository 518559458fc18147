"""AnnotateTensors: dtype, static shape and byte size of every top-level value."""
from __future__ import annotations

import math
from typing import ClassVar

import onnx_ir as ir

from hetcc.errors import ModelError
from hetcc.passmanager import Pass, PassResult
from hetcc.program import TENSORS, Program, TensorInfo


def tensor_info(value: ir.Value) -> TensorInfo:
    """TensorInfo of a value whose type and shape are known; ModelError otherwise."""
    if value.dtype is None or value.shape is None:
        raise ModelError(f"tensor {value.name!r} has no known type or shape; fix the input shapes with --input-shape")
    dims = []
    for d in value.shape:
        if not isinstance(d, int):
            raise ModelError(f"tensor {value.name!r} has a dynamic dimension {d!s}; pass --input-shape for the model inputs")
        dims.append(d)
    itemsize = value.dtype.itemsize
    return TensorInfo(name=value.name or "", dtype=_dtype_name(value.dtype), shape=tuple(dims),
                      nbytes=int(math.ceil(math.prod(dims) * itemsize)))


def _dtype_name(dtype: ir.DataType) -> str:
    try:
        return str(dtype.numpy())
    except Exception:  # types without a numpy equivalent (e.g. float8)
        return dtype.name.lower()


class AnnotateTensors(Pass):
    name: ClassVar[str] = "shapes"
    ensures: ClassVar[tuple[str, ...]] = (TENSORS,)

    def run(self, program: Program) -> PassResult:
        graph = program.graph
        infos: dict[str, TensorInfo] = {}
        for value in graph.inputs:
            infos[value.name] = tensor_info(value)
        for name, value in graph.initializers.items():
            if value.const_value is not None:
                t = value.const_value
                infos[name] = TensorInfo(name, _dtype_name(t.dtype), tuple(int(d) for d in t.shape), int(t.nbytes))
            else:
                infos[name] = tensor_info(value)
        for node in graph:
            for out in node.outputs:
                if out.name and out.name not in infos:
                    infos[out.name] = tensor_info(out)
        program.put(TENSORS, infos)
        total = sum(i.nbytes for i in infos.values())
        return PassResult(False, f"{len(infos)} tensors, {total / 1e6:.1f} MB")
