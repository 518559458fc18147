"""Finer layering (a larger --max-cut-tensors) only adds choices: the same slicing costs the same
under both layerings, so the optimum never gets worse.

Models: small residual and two-skip (transformer-like) graphs built here, whose cuts are crossed
by 1, 2 or 3 tensors, and torchvision's ResNet-18 (zoo marker); plus a property test of the cost
formulas over random layer features, split at random.
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest

from extras import needs
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

import hetcc
from hetcc.planners import plan
from hetcc.planners.hardware import DeviceParams, cost_tables
from hetcc.planners.metrics import Objective
from hetcc.planners.problem import PlanningProblem, Slice, StateTable
from hetcc.compiler.program import LAYERS

RTOL = 1e-9


# --- models ----------------------------------------------------------------------------------------

def _conv(name: str, x: str, c: int, rng, nodes: list, inits: list, k: int = 3) -> str:
    w = rng.standard_normal((c, c, k, k)).astype(np.float32) * 0.1
    inits.append(numpy_helper.from_array(w, f"{name}_w"))
    nodes.append(helper.make_node("Conv", [x, f"{name}_w"], [name], pads=[k // 2] * 4))
    return name


def residual_model(blocks: int = 3, c: int = 8, hw: int = 16) -> onnx.ModelProto:
    """ResNet-like blocks: conv-relu-conv + skip, relu (cuts inside a block are crossed by 2 tensors)."""
    rng = np.random.default_rng(0)
    nodes: list = []
    inits: list = []
    x = _conv("stem", "x", c, rng, nodes, inits)
    for b in range(blocks):
        a = _conv(f"b{b}c1", x, c, rng, nodes, inits)
        nodes.append(helper.make_node("Relu", [a], [f"b{b}r1"]))
        d = _conv(f"b{b}c2", f"b{b}r1", c, rng, nodes, inits)
        nodes.append(helper.make_node("Add", [d, x], [f"b{b}add"]))
        nodes.append(helper.make_node("Relu", [f"b{b}add"], [f"b{b}out"]))
        x = f"b{b}out"
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["y"]))
    return _model(nodes, inits, [1, c, hw, hw], [1, c, 1, 1])


def two_skip_model(blocks: int = 2, d: int = 16, n: int = 8) -> onnx.ModelProto:
    """Transformer-like blocks: a skip around an inner chain that itself has a skip, so the cuts
    inside are crossed by up to 3 tensors (the outer skip, the inner skip, the chain's tensor)."""
    rng = np.random.default_rng(1)
    nodes: list = []
    inits: list = []
    x = "x"
    for b in range(blocks):
        w1, w2, w3 = (f"b{b}w{i}" for i in (1, 2, 3))
        for w in (w1, w2, w3):
            inits.append(numpy_helper.from_array(rng.standard_normal((d, d)).astype(np.float32) * 0.1, w))
        nodes += [helper.make_node("MatMul", [x, w1], [f"b{b}m1"]),
                  helper.make_node("Relu", [f"b{b}m1"], [f"b{b}h"]),
                  helper.make_node("MatMul", [f"b{b}h", w2], [f"b{b}m2"]),
                  helper.make_node("Sigmoid", [f"b{b}m2"], [f"b{b}s"]),
                  helper.make_node("Add", [f"b{b}s", f"b{b}h"], [f"b{b}inner"]),
                  helper.make_node("MatMul", [f"b{b}inner", w3], [f"b{b}m3"]),
                  helper.make_node("Add", [f"b{b}m3", x], [f"b{b}out"])]
        x = f"b{b}out"
    nodes.append(helper.make_node("Relu", [x], ["y"]))
    return _model(nodes, inits, [n, d], [n, d])


def _model(nodes, inits, in_shape, out_shape) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


MODELS = {"residual": residual_model, "two_skip": two_skip_model}


@pytest.fixture(scope="module")
def analyses(tmp_path_factory):
    """name -> {k: Analysis} on hikey970 (cached per module: analysing is the slow part)."""
    cache: dict = {}

    def get(name: str, k: int):
        if (name, k) not in cache:
            if name in MODELS:
                path = tmp_path_factory.mktemp(name) / f"{name}.onnx"
                onnx.save(MODELS[name](), path)
                model = path
            else:
                model = name
            cache[name, k] = hetcc.analyse(model, "hikey970", max_cut_tensors=k)
        return cache[name, k]
    return get


def refinement(coarse, fine) -> list[tuple[int, int]]:
    """For each coarse layer the run of fine layers (first, last) that holds exactly its nodes."""
    c_layers, f_layers = coarse.program.get(LAYERS), fine.program.get(LAYERS)
    spans, j = [], 0
    for layer in c_layers:
        first, nodes = j, []
        while len(nodes) < len(layer.nodes):
            nodes.extend(f_layers[j].nodes)
            j += 1
        assert set(nodes) == set(layer.nodes), f"fine layers {first}..{j - 1} do not make coarse {layer.name}"
        spans.append((first, j - 1))
    assert j == len(f_layers)
    return spans


def assert_same_slice_costs(coarse: PlanningProblem, fine: PlanningProblem, spans) -> None:
    """Every slice the coarse layering allows costs the same on the fine one, on every state."""
    for a in range(coarse.num_layers):
        for b in range(a, coarse.num_layers):
            fa, fb = spans[a][0], spans[b][1]
            for s in range(coarse.num_states):
                legal = coarse.slice_legal(a, b, s)
                assert fine.slice_legal(fa, fb, s) == legal
                if not legal:
                    continue
                c, f = coarse.slice_cost(a, b, s), fine.slice_cost(fa, fb, s)
                assert f.latency_ms == pytest.approx(c.latency_ms, rel=RTOL), (a, b, s)
                assert f.energy_mj == pytest.approx(c.energy_mj, rel=RTOL), (a, b, s)


def objectives(problem: PlanningProblem) -> list[Objective]:
    fastest = plan(problem, Objective("latency"), "dp").latency_ms
    frugal = plan(problem, Objective("energy"), "dp")
    return [Objective("latency"), Objective("energy"),
            Objective("energy", deadline_ms=1.2 * fastest),
            Objective("latency", power_cap_mw=1.1 * frugal.average_power_mw),
            Objective("edp", deadline_ms=1.5 * fastest)]


def assert_never_worse(coarse: PlanningProblem, fine: PlanningProblem) -> int:
    """The optimum of each objective on the fine layering is no worse; returns how many improved."""
    better = 0
    for obj in objectives(coarse):
        planner = "dp" if not obj.constrained and obj.metric != "edp" else "exact"
        c = plan(coarse, obj, planner)
        f = plan(fine, obj, planner)
        assert c.stats.get("optimal", True) and f.stats.get("optimal", True)
        value = {"latency": lambda p: p.latency_ms, "energy": lambda p: p.energy_mj,
                 "edp": lambda p: p.edp_mj_ms}[obj.metric]
        assert value(f) <= value(c) * (1 + RTOL), (obj, value(f), value(c))
        better += value(f) < value(c) * (1 - 1e-6)
    return better


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("k_coarse,k_fine", [(1, 2), (2, 3), (1, 3)])
def test_finer_layering_keeps_costs_and_never_worsens_the_optimum(analyses, name, k_coarse, k_fine) -> None:
    coarse, fine = analyses(name, k_coarse), analyses(name, k_fine)
    spans = refinement(coarse, fine)
    assert_same_slice_costs(coarse.problem, fine.problem, spans)
    assert_never_worse(coarse.problem, fine.problem)


def test_the_models_do_layer_finer(analyses) -> None:
    """The comparisons above are not vacuous: each model gains layers with a wider cut."""
    for name in MODELS:
        counts = [analyses(name, k).problem.num_layers for k in (1, 2, 3)]
        assert counts[0] < counts[1], (name, counts)
    assert analyses("two_skip", 2).problem.num_layers < analyses("two_skip", 3).problem.num_layers


@pytest.mark.slow
@pytest.mark.zoo
def test_resnet18_k1_vs_k2(analyses) -> None:
    needs("zoo", "torch", "torchvision")
    coarse, fine = analyses("resnet18", 1), analyses("resnet18", 2)
    assert fine.problem.num_layers > coarse.problem.num_layers
    spans = refinement(coarse, fine)
    # the whole model as one slice, and every slice that starts and ends at a coarse cut, per state
    assert_same_slice_costs(coarse.problem, fine.problem, spans)
    assert_never_worse(coarse.problem, fine.problem)


# --- the formulas, over random features --------------------------------------------------------------

def _params(rng, S: int) -> DeviceParams:
    f = rng.uniform(200, 2000, S)
    return DeviceParams(
        device=tuple(f"d{i}" for i in range(S)), freq_mhz=f, fmax_mhz=f * rng.uniform(1, 2, S),
        dvfs_scale=rng.uniform(0.2, 1, S), static_mw=rng.uniform(10, 500, S), dynamic_mw=rng.uniform(100, 5000, S),
        peak_gflops=rng.uniform(1, 400, (S, 3)), mem_bandwidth_gbps=rng.uniform(1, 30, S),
        layer_overhead_ms=rng.uniform(0, 2, S), node_overhead_ms=rng.uniform(0, 0.3, S),
        transfer_beta_ms_per_mb=rng.uniform(0, 3, S), transfer_delta_ms=rng.uniform(0, 2, S),
        transfer_power_mw=np.where(rng.random(S) < 0.5, np.nan, rng.uniform(100, 3000, S)),
        link_bandwidth_mbps=np.where(rng.random(S) < 0.3, rng.uniform(10, 500, S), np.nan),
        link_rtt_ms=rng.uniform(1, 50, S), link_tx_mw=rng.uniform(100, 2000, S), link_rx_mw=rng.uniform(100, 2000, S),
        capacity_bytes=np.full(S, np.inf), base_power_mw=float(rng.uniform(0, 2000)),
        mem_slowdown=rng.uniform(1, 3, S))


def _problem(feat: dict, params: DeviceParams) -> PlanningProblem:
    L, S = len(feat["nodes"]), len(params)
    t = cost_tables(feat, params, np.ones((L, S), dtype=bool))
    return PlanningProblem(latency_ms=t["latency_ms"], power_mw=t["power_mw"], transfer_in_ms=t["transfer_in_ms"],
                           transfer_out_ms=t["transfer_out_ms"], transfer_in_mj=t["transfer_in_mj"],
                           transfer_out_mj=t["transfer_out_mj"], legal=t["legal"],
                           param_bytes=feat["param_bytes"].astype(np.int64), capacity_bytes=params.capacity_bytes,
                           base_power_mw=params.base_power_mw, states=StateTable.build(params.device))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 12), S=st.integers(1, 4))
def test_splitting_layers_keeps_every_slicing_cost(seed: int, n: int, S: int) -> None:
    """A chain of n nodes (per-node FLOPs, parameters; tensor t_i between node i and i+1), layered
    once by a random set of cuts and once by a superset of them: costs and optima agree."""
    rng = np.random.default_rng(seed)
    flops = rng.uniform(0, 1e9, (n, 3)) * (rng.random((n, 3)) < 0.7)
    par = rng.integers(0, 5_000_000, n) * (rng.random(n) < 0.6)
    tensor = rng.integers(1, 2_000_000, n + 1)      # tensor[i] enters node i; tensor[n] is the output
    cuts_fine = sorted(set(rng.choice(np.arange(1, n), size=rng.integers(0, n), replace=True).tolist())) if n > 1 else []
    cuts_coarse = [c for c in cuts_fine if rng.random() < 0.5]

    def layering(cuts: list[int]) -> tuple[dict, list[int]]:
        b = [0, *cuts, n]
        feat = {"conv_flops": [], "matmul_flops": [], "other_flops": [], "nodes": [], "param_bytes": [],
                "input_bytes": [], "output_bytes": []}
        for lo, hi in zip(b, b[1:]):
            for j, key in enumerate(("conv_flops", "matmul_flops", "other_flops")):
                feat[key].append(flops[lo:hi, j].sum())
            feat["nodes"].append(hi - lo)
            feat["param_bytes"].append(par[lo:hi].sum())
            feat["input_bytes"].append(tensor[lo])
            feat["output_bytes"].append(tensor[hi])
        return {k: np.asarray(v, dtype=np.float64) for k, v in feat.items()}, b

    params = _params(rng, S)
    (fc, bc), (ff, bf) = layering(cuts_coarse), layering(cuts_fine)
    coarse, fine = _problem(fc, params), _problem(ff, params)
    spans = [(bf.index(lo), bf.index(hi) - 1) for lo, hi in zip(bc, bc[1:])]
    assert_same_slice_costs(coarse, fine, spans)
    # the optimum over a random plan of the coarse layering, mapped: same cost
    sl, a = [], 0
    while a < coarse.num_layers:
        b = int(rng.integers(a, coarse.num_layers))
        sl.append((a, b, int(rng.integers(0, S))))
        a = b + 1
    pc = coarse.evaluate([Slice(a, b, s) for a, b, s in sl])
    pf = fine.evaluate([Slice(spans[a][0], spans[b][1], s) for a, b, s in sl])
    assert pf.latency_ms == pytest.approx(pc.latency_ms, rel=RTOL)
    assert pf.energy_mj == pytest.approx(pc.energy_mj, rel=RTOL)
    for metric in ("latency", "energy"):
        c, f = plan(coarse, Objective(metric), "dp"), plan(fine, Objective(metric), "dp")
        assert getattr(f, f"{metric}_{'ms' if metric == 'latency' else 'mj'}") <= \
            getattr(c, f"{metric}_{'ms' if metric == 'latency' else 'mj'}") * (1 + RTOL)
