"""Synthetic but realistic PlanningProblems: random CNNs costed by the real cost model on hikey970.

Shared by the planner tests and ``benchmarks/planners.py`` (a test/benchmark fixture, not part of
the shipped package). A VGG/MobileNet-like chain of layers is drawn at random (kind, kernel,
channels, a per-layer efficiency factor on its FLOPs), turned into ``hetcc.compiler.program.Layer``
objects and costed by ``hetcc.compiler.costmodel.analytical_costs`` on the built-in ``hikey970`` target
(MOSAIC Table II DVFS levels: big 9, LITTLE 7, GPU 8, NPU 1 = 25 states; the NPU's 100 MB
parameter limit per slice). Legality is drawn at random as the legality pass would find it on a
real model (on hikey970): the GPU now and then rejects pooling / fully-connected layers, the NPU pooling and
depthwise layers, and any accelerator a rare layer.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from hetcc.compiler.costmodel import analytical_costs, hardware_space
from hetcc.compiler.costtable import layer_features
from hetcc.planners.problem import PlanningProblem
from hetcc.compiler.program import Layer
from hetcc.targets import Target, load_target

TARGET = "hikey970"

#: per device: (share of layers it cannot run, the layer kinds that share applies to 4x as often)
UNSUPPORTED: dict[str, tuple[float, tuple[str, ...]]] = {
    "big": (0.0, ()),
    "little": (0.0, ()),
    "gpu": (0.05, ("pool", "fc")),
    "npu": (0.15, ("pool", "dwconv")),
}


@lru_cache(maxsize=8)
def _target(name: str = TARGET) -> Target:
    return load_target(name)


def _cnn_layers(num_layers: int, rng: np.random.Generator) -> list[Layer]:
    """A VGG/MobileNet-like chain: five stages of shrinking maps and growing channels, then FCs."""
    n_fc = 1 if num_layers < 8 else int(rng.integers(1, 4))
    n_body = max(num_layers - n_fc, 0)
    stages = np.array_split(np.arange(n_body), 5) if n_body else []
    specs: list[dict] = []
    c_in = 3
    for si, stage in enumerate(stages):
        c_out = (64, 128, 256, 512, 512)[si]
        side = (112, 56, 28, 14, 7)[si]
        for _ in stage:
            kind = str(rng.choice(["conv", "dwconv", "pool"], p=[0.72, 0.2, 0.08]))
            eff = float(rng.lognormal(0.0, 0.25))     # per-layer efficiency noise on its FLOPs
            if kind == "conv":
                k = int(rng.choice([1, 3], p=[0.3, 0.7]))
                fl = {"conv": 2.0 * side * side * k * k * c_in * c_out * eff, "other": side * side * c_out}
                params, ops = 4 * k * k * c_in * c_out, ("Conv", "Relu")
                geo = {"kernel": k, "stride": 1, "in_channels": c_in, "out_channels": c_out}
            elif kind == "dwconv":
                fl = {"conv": 2.0 * side * side * 9 * c_out * eff, "other": side * side * c_out}
                params, ops = 4 * 9 * c_out, ("Conv", "Relu")
                geo = {"kernel": 3, "stride": 1, "in_channels": c_out, "out_channels": c_out}
            else:
                fl = {"other": side * side * c_out * 4.0 * eff}
                params, ops = 0, ("MaxPool",)
                geo = {}
            specs.append({"kind": kind, "flops": fl, "params": params, "ops": ops, "geo": geo,
                          "in_bytes": 4 * side * side * c_in, "out_bytes": 4 * side * side * c_out})
            c_in = c_out
    width = c_in * 7 * 7
    for j in range(num_layers - len(specs)):
        hidden = 4096 if j < n_fc - 1 else 1000
        eff = float(rng.lognormal(0.0, 0.25))
        specs.append({"kind": "fc", "flops": {"matmul": 2.0 * width * hidden * eff, "other": float(hidden)},
                      "params": 4 * width * hidden, "ops": ("Gemm", "Relu"), "geo": {},
                      "in_bytes": 4 * width, "out_bytes": 4 * hidden})
        width = hidden
    specs = specs[:num_layers]
    if specs:
        specs[0]["in_bytes"] = 4 * 224 * 224 * 3
    layers = []
    for i, sp in enumerate(specs):
        fl = {c: float(sp["flops"].get(c, 0.0)) for c in ("conv", "matmul", "other")}
        classes = {"conv": 0, "matmul": 0, "other": 0}
        for op in sp["ops"]:
            classes["conv" if op == "Conv" else "matmul" if op == "Gemm" else "other"] += 1
        layers.append(Layer(
            id=i, nodes=tuple(f"{sp['kind']}{i}_{k}" for k in range(len(sp["ops"]))), op_types=sp["ops"],
            inputs=(f"t{i}",), outputs=(f"t{i + 1}",), param_bytes=int(sp["params"]),
            flops=sum(fl.values()), flops_by_class=fl, input_bytes=int(sp["in_bytes"]),
            output_bytes=int(sp["out_bytes"]), dtypes=("float32",), node_classes=classes,
            geometry=dict(sp["geo"])))
    return layers


def synthetic_layers(num_layers: int = 60, seed: int = 0,
                     target: str = TARGET) -> tuple[list[Layer], np.ndarray]:
    """The random layers of ``synthetic_problem`` and their [L, D] device legality mask."""
    rng = np.random.default_rng(seed)
    layers = _cnn_layers(num_layers, rng)
    board = _target(target)
    kinds = [l.nodes[0].rstrip("0123456789_") for l in layers]
    legal_dev = np.ones((len(layers), len(board.devices)), dtype=bool)
    for di, d in enumerate(board.devices):
        share, often = UNSUPPORTED.get(d.name, (0.0, ()))
        u = rng.random(len(layers))
        v = rng.random(len(layers))
        blocked = np.array([(k in often and u[i] < 4 * share) or v[i] < share / 5 for i, k in enumerate(kinds)],
                           dtype=bool)
        legal_dev[:, di] = ~blocked
    return layers, legal_dev


def synthetic_problem(num_layers: int = 60, seed: int = 0, target: str = TARGET) -> PlanningProblem:
    """A random CNN of ``num_layers`` layers costed on hikey970 (25 states), or on another
    modelled built-in ``target``; a board with hardware knobs (``jetson-tx2``) gives a problem
    carrying its HardwareSpace at the default configuration."""
    layers, legal_dev = synthetic_layers(num_layers, seed, target)
    board = _target(target)
    t = analytical_costs(layers, board, legal_dev)
    problem = PlanningProblem(
        latency_ms=t.latency_ms, power_mw=t.power_mw, transfer_in_ms=t.transfer_in_ms,
        transfer_out_ms=t.transfer_out_ms, transfer_in_mj=t.transfer_in_mj,
        transfer_out_mj=t.transfer_out_mj, legal=t.legal,
        param_bytes=np.array([l.param_bytes for l in layers], dtype=np.int64),
        capacity_bytes=t.capacity_bytes, base_power_mw=t.base_power_mw, states=t.state_table(),
        layer_names=tuple(l.nodes[0].rsplit("_", 1)[0] for l in layers),
        layer_features=layer_features(tuple(layers)), name=f"synthetic{num_layers}-{seed}")
    space = hardware_space(board, problem.layer_features, legal_dev)
    return problem if space is None else space.apply(problem, space.default_config())


__all__ = ["synthetic_layers", "synthetic_problem", "TARGET"]
