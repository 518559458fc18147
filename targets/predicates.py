"""Named legality predicates: what cannot be data in a board file (after torch.fx ``OperatorSupport``).

A device lists predicate names (``predicates = ["max_rank_4"]``); the legality pass calls each on
every layer. Register your own with ``@register_predicate("name")`` before loading the target.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

# A predicate gets the layer, its top-level onnx-ir nodes and the tensor table
# (name -> hetcc.compiler.program.TensorInfo) and returns None when the layer is fine, else a short reason.
Predicate = Callable[[Any, Sequence[Any], Mapping[str, Any]], "str | None"]
PREDICATES: dict[str, Predicate] = {}


def register_predicate(name: str) -> Callable[[Predicate], Predicate]:
    """Decorator: make a legality predicate available to target files under ``name``."""

    def deco(fn: Predicate) -> Predicate:
        PREDICATES[name] = fn
        return fn

    return deco


def _attr_int(node: Any, name: str, default: int) -> int:
    a = node.attributes.get(name)
    return a.as_int() if a is not None else default


@register_predicate("conv_group_1")
def _conv_group_1(layer: Any, nodes: Sequence[Any], tensors: Mapping[str, Any]) -> str | None:
    """Grouped and depthwise convolutions unsupported."""
    for n in nodes:
        if n.op_type in ("Conv", "ConvTranspose") and _attr_int(n, "group", 1) != 1:
            return f"grouped Conv (node {n.name!r}, group={_attr_int(n, 'group', 1)}) unsupported"
    return None


@register_predicate("max_rank_4")
def _max_rank_4(layer: Any, nodes: Sequence[Any], tensors: Mapping[str, Any]) -> str | None:
    """Every tensor the layer reads or writes has at most 4 dimensions (NCHW accelerators)."""
    for n in nodes:
        for v in list(n.inputs) + list(n.outputs):
            if v is None or not v.name:
                continue
            info = tensors.get(v.name)
            if info is not None and len(info.shape) > 4:
                return f"tensor {v.name!r} has rank {len(info.shape)} > 4 (node {n.name!r})"
    return None


@register_predicate("batch_1")
def _batch_1(layer: Any, nodes: Sequence[Any], tensors: Mapping[str, Any]) -> str | None:
    """The layer's inputs and outputs have batch size 1 (single-image accelerators)."""
    for name in tuple(layer.inputs) + tuple(layer.outputs):
        info = tensors.get(name)
        if info is not None and len(info.shape) >= 1 and info.shape[0] != 1:
            return f"tensor {name!r} has batch {info.shape[0]} != 1"
    return None


__all__ = ["PREDICATES", "Predicate", "register_predicate"]
