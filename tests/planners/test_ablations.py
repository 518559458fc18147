"""MOSAIC's ablations ``hca`` (communication-oblivious) and ``hcca`` (DVFS-oblivious) against dp and
brute force, on hand-built chains, random problems and the command line."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings

from hetcc.cli import main
from hetcc.core.errors import InfeasibleError
from hetcc.planners import Objective, Slice, plan
from hetcc.planners.ablations import at_fmax, merge_runs, without_transfers
from planner_cases import Brute, close, make_problem, problems, uses_only

SETTINGS = settings(max_examples=80, deadline=None)
METRICS = ("latency", "energy")


def value(p, metric):
    return p.latency_ms if metric == "latency" else p.energy_mj


def run_or_none(problem, metric, planner, **options):
    try:
        return plan(problem, Objective(metric), planner, options)
    except InfeasibleError:
        return None


# ---- hca -----------------------------------------------------------------------------------

def test_hca_takes_the_excursion_that_transfers_make_unprofitable():
    # layer 1 is faster on device 1 (3 < 5 ms) but moving there and back costs 1.5 ms each way
    p = make_problem([[1.0, 2.0], [5.0, 3.0], [1.0, 2.0]], t_in=[[0, 1.5]] * 3, t_out=[[0, 1.5]] * 3)
    dp = plan(p, Objective("latency"), "dp")
    hca = plan(p, Objective("latency"), "hca")
    assert dp.slices == (Slice(0, 2, 0),) and dp.latency_ms == pytest.approx(7.0)
    assert hca.slices == (Slice(0, 0, 0), Slice(1, 1, 1), Slice(2, 2, 0))
    assert hca.latency_ms == pytest.approx(1 + 1.5 + 3 + 1.5 + 1)      # priced with the transfers
    assert hca.stats["oblivious_latency_ms"] == pytest.approx(5.0)    # what it believed
    assert hca.stats["transfer_ms"] == pytest.approx(3.0)
    assert hca.planner == "hca"


def test_without_transfers_zeroes_finite_transfers_and_keeps_the_rest():
    inf = np.inf
    p = make_problem([[1.0, 2.0]] * 2, t_in=[[0.5, inf], [0.2, 0.1]], t_out=[[0.3, 0.4], [inf, 0.1]],
                     e_in=[[1.0, 1.0]] * 2, e_out=[[2.0, 2.0]] * 2)
    z = without_transfers(p)
    assert np.array_equal(z.transfer_in_ms, [[0, inf], [0, 0]])
    assert np.array_equal(z.transfer_out_ms, [[0, 0], [inf, 0]])
    assert not z.transfer_in_mj.any() and not z.transfer_out_mj.any()
    assert np.array_equal(z.latency_ms, p.latency_ms) and np.array_equal(z.legal, p.legal)
    assert p.transfer_in_ms[0, 0] == 0.5                               # the original is untouched


def test_merge_runs_joins_one_states_slices_within_its_memory():
    p = make_problem([[1.0, 2.0]] * 4, params=[60, 60, 10, 10], capacity=[100, np.inf])
    split = (Slice(0, 0, 0), Slice(1, 1, 0), Slice(2, 2, 0), Slice(3, 3, 1))
    assert merge_runs(p, split) == [Slice(0, 0, 0), Slice(1, 2, 0), Slice(3, 3, 1)]


@pytest.mark.slow
@SETTINGS
@given(problems())
def test_hca_is_never_better_than_dp_and_believes_the_transfer_free_optimum(problem):
    for metric in METRICS:
        dp = run_or_none(problem, metric, "dp")
        hca = run_or_none(problem, metric, "hca")
        assert (dp is None) == (hca is None)
        if dp is None:
            continue
        assert value(hca, metric) >= value(dp, metric) - 1e-9 * max(1.0, value(dp, metric))
        problem.check_slices(hca.slices)
        again = problem.evaluate(hca.slices)                          # priced on the real problem
        assert close(hca.latency_ms, again.latency_ms) and close(hca.energy_mj, again.energy_mj)
        if metric == "latency":
            assert all(problem.states.is_fmax[s.state] for s in hca.slices)
        # it believed the optimum of the transfer-free problem over dp's states (Eq. 6 / Eq. 7)
        blind = without_transfers(problem)
        fmax = np.flatnonzero(problem.states.is_fmax)
        best = Brute.of(blind).best(Objective(metric), uses_only(fmax) if metric == "latency" else None)
        believed = hca.stats[f"oblivious_{'latency_ms' if metric == 'latency' else 'energy_mj'}"]
        assert close(believed, best, 1e-7)
        assert believed <= value(hca, metric) + 1e-9 * max(1.0, believed)


@pytest.mark.slow
@SETTINGS
@given(problems())
def test_hca_equals_dp_when_transfers_are_free(problem):
    free = without_transfers(problem)
    for metric in METRICS:
        dp = run_or_none(free, metric, "dp")
        hca = run_or_none(free, metric, "hca")
        assert (dp is None) == (hca is None)
        if dp is not None:
            assert close(value(hca, metric), value(dp, metric), 1e-7)


@pytest.mark.slow
@SETTINGS
@given(problems())
def test_hca_without_dvfs_keeps_maximum_frequency(problem):
    hca = run_or_none(problem, "energy", "hca", dvfs="false")
    if hca is None:
        return
    assert all(problem.states.is_fmax[s.state] for s in hca.slices)
    assert hca.options == {"dvfs": False}
    assert hca.energy_mj >= plan(problem, Objective("energy"), "hcca").energy_mj - 1e-9 * max(1.0, hca.energy_mj)


# ---- hcca ----------------------------------------------------------------------------------

@pytest.mark.slow
@SETTINGS
@given(problems())
def test_hcca_is_dps_optimum_over_maximum_frequency_states(problem):
    fmax = np.flatnonzero(problem.states.is_fmax)
    brute = Brute.of(problem)
    for metric in METRICS:
        dp = run_or_none(problem, metric, "dp")
        hcca = run_or_none(problem, metric, "hcca")
        best = brute.best(Objective(metric), uses_only(fmax))
        assert (hcca is None) == (best is None)
        if hcca is None:
            continue
        assert all(problem.states.is_fmax[s.state] for s in hcca.slices)
        assert close(value(hcca, metric), best, 1e-7)
        assert value(hcca, metric) >= value(dp, metric) - 1e-9 * max(1.0, value(dp, metric))
        if metric == "latency":
            assert close(hcca.latency_ms, dp.latency_ms, 1e-7)       # Eq. 6: dp's own state set


def test_hcca_misses_the_energy_that_a_lower_frequency_saves():
    # one device at 1000 MHz (2 ms, 2000 mW: 4 mJ) or 500 MHz (3 ms, 500 mW: 1.5 mJ)
    p = make_problem([[2.0, 3.0]], [[2000.0, 500.0]], devices=("gpu", "gpu"), freqs=[1000.0, 500.0],
                     fmax=[True, False])
    assert plan(p, Objective("energy"), "dp").slices == (Slice(0, 0, 1),)
    hcca = plan(p, Objective("energy"), "hcca")
    assert hcca.slices == (Slice(0, 0, 0),) and hcca.energy_mj == pytest.approx(4.0)
    assert at_fmax(p).legal.tolist() == [[True, False]]


def test_a_layer_no_maximum_frequency_state_runs_is_infeasible():
    p = make_problem([[2.0, 3.0]], legal=[[False, True]], fmax=[True, False])
    assert plan(p, Objective("energy"), "dp").slices == (Slice(0, 0, 1),)
    with pytest.raises(InfeasibleError, match="layer 0"):
        plan(p, Objective("energy"), "hcca")


# ---- the command line ----------------------------------------------------------------------

def conv_chain(path):
    """Three 3x3 convolutions with ReLU (weights as initializers), saved to ``path``."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
             for name, shape in (("w1", (16, 3, 3, 3)), ("w2", (16, 16, 3, 3)), ("w3", (16, 16, 3, 3)))]
    nodes, x = [], "x"
    for i in (1, 2, 3):
        nodes += [helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{i}"], ["y" if i == 3 else f"r{i}"])]
        x = f"r{i}"
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 32, 32])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return str(path)


def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("planner", ["hca", "hcca"])
def test_compile_with_an_ablation_planner(capsys, tmp_path, planner):
    model = conv_chain(tmp_path / "chain.onnx")
    code, out, err = cli(capsys, "compile", model, "--target", "hikey970", "--objective", "energy",
                         "--planner", planner, "--json")
    assert code == 0, err
    got = json.loads(out)
    code, out, err = cli(capsys, "compile", model, "--target", "hikey970", "--objective", "energy",
                         "--planner", "dp", "--json")
    assert code == 0, err
    dp = json.loads(out)
    assert got["planner"] == planner
    assert got["energy_mj"] >= dp["energy_mj"] * (1 - 1e-9)
    assert [s["first_layer"] for s in got["slices"]][0] == 0


def test_planners_lists_both(capsys):
    code, out, err = cli(capsys, "planners", "--json")
    assert code == 0, err
    rows = {r["name"]: r for r in json.loads(out)}
    for name in ("hca", "hcca"):
        assert rows[name]["metrics"] == ["latency", "energy"] and rows[name]["constraints"] == []
        assert "MOSAIC" in rows[name]["summary"] and not rows[name]["exact"]
    assert [o["name"] for o in rows["hca"]["options"]] == ["dvfs"]


# ---- what hca ignores: communication, not the cost of running a slice --------------------------

def test_without_transfers_drops_only_the_communication_share():
    from hetcc.planners.problem import Communication

    inf = np.inf
    p = make_problem([[1.0, 2.0]] * 2, t_in=[[0.5, inf], [0.2, 0.1]], t_out=[[0.3, 0.4], [inf, 0.1]],
                     e_in=[[1.0, 1.0]] * 2, e_out=[[2.0, 2.0]] * 2)
    share = Communication(in_ms=[[0.4, 0.3], [0.2, 0.0]], out_ms=[[0.3, 0.1], [0.2, 0.1]],
                          in_mj=[[0.5, 0.5]] * 2, out_mj=[[2.0, 0.5]] * 2)
    z = without_transfers(p.replace(communication=share))
    assert np.allclose(z.transfer_in_ms, [[0.1, inf], [0.0, 0.1]])     # illegal ends stay illegal
    assert np.allclose(z.transfer_out_ms, [[0.0, 0.3], [inf, 0.0]])
    assert np.allclose(z.transfer_in_mj, 0.5) and np.allclose(z.transfer_out_mj, [[0.0, 1.5]] * 2)
    assert z.communication is None


def test_the_cost_model_splits_communication_from_the_slice_overhead():
    """hikey970's analytical tables: transfer_in = Eq. 1-2 communication + the device's per-slice
    overhead + the input's memory time; hca keeps the last two (MOSAIC's HCA sees a device's fixed
    costs, which its per-layer measurements include), dp's problem keeps all three."""
    from hetcc.compiler.costmodel import device_params
    from hetcc.planners.hardware import cost_tables, transfer_ms
    from hetcc.targets import load_target

    params = device_params(load_target("hikey970"))
    S = len(params)
    feat = {"conv_flops": np.array([1e9, 2e9]), "matmul_flops": np.zeros(2), "other_flops": np.zeros(2),
            "nodes": np.array([3.0, 2.0]), "param_bytes": np.array([1e6, 2e6]),
            "input_bytes": np.array([6e5, 4e5]), "output_bytes": np.array([4e5, 4e3])}
    t = cost_tables(feat, params, np.ones((2, S), dtype=bool))
    comm = t["communication"]
    eq12 = transfer_ms(feat["input_bytes"][:, None], params.transfer_beta_ms_per_mb[None, :],
                       params.transfer_delta_ms[None, :])
    assert np.allclose(comm.in_ms, eq12)
    rest = t["transfer_in_ms"] - comm.in_ms
    assert (rest >= params.layer_overhead_ms[None, :] - 1e-12).all()
    npu = [i for i, d in enumerate(params.device) if d == "npu"]
    assert npu and (params.layer_overhead_ms[npu] > 0).all() and (comm.in_ms[:, npu] > 0).all()
    assert (t["transfer_out_mj"] - comm.out_mj >= -1e-12).all()
