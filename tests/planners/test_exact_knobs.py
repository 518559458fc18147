"""``exact`` with ``knobs=search``: the optimum over the board's hardware knobs x every slicing.

Small boards built from numbers (two DVFS levels on a CPU and a GPU, a core-count knob, a memory
clock and sometimes a GPU knob) are checked against brute force over every configuration and
every plan; ties must go to the more capable configuration, here and in ``evosh search=optimum``.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hetcc
from hetcc.compiler.costtable import layer_features
from hetcc.compiler.program import Layer
from hetcc.core.errors import InfeasibleError, UsageError
from hetcc.planners import plan as run_planner
from hetcc.planners.exact import knobs as knobs_module
from hetcc.planners.evosh import optimum
from hetcc.planners.evosh.space import ConfigSpace
from hetcc.planners.exact import exact
from hetcc.planners.hardware import DeviceParams, HardwareSpace, Knob, capability
from hetcc.planners.metrics import Objective
from hetcc.planners.problem import PlanningProblem, StateTable
from planner_cases import Brute, close

KINDS = ("cpu", "cpu", "gpu", "gpu")


def _layer(i: int, rng: np.random.Generator) -> Layer:
    conv, other = float(rng.uniform(1e7, 2e9)), float(rng.uniform(0, 1e8))
    nodes = int(rng.integers(1, 4))
    return Layer(id=i, nodes=tuple(f"n{i}_{k}" for k in range(nodes)), op_types=("Conv",) * nodes,
                 inputs=(f"t{i}",), outputs=(f"t{i + 1}",), param_bytes=int(rng.integers(0, 4_000_000)),
                 flops=conv + other, flops_by_class={"conv": conv, "matmul": 0.0, "other": other},
                 input_bytes=int(rng.integers(1, 3_000_000)), output_bytes=int(rng.integers(1, 3_000_000)),
                 dtypes=("float32",), node_classes={"conv": nodes, "matmul": 0, "other": 0})


def board(seed: int, layers: int = 3, gpu_knob: bool = False, zero_cores: bool = True,
          gpu_peak: float | None = None) -> PlanningProblem:
    """A problem on a CPU (1 or 2 GHz) and a GPU (0.5 or 1 GHz) with knobs: CPU cores (0-)1-2,
    the memory clock, and optionally GPU cores; at the default (most capable) configuration."""
    rng = np.random.default_rng(seed)
    feats = layer_features(tuple(_layer(i, rng) for i in range(layers)))
    cpu, gpu = float(rng.uniform(5, 40)), float(gpu_peak if gpu_peak is not None else rng.uniform(20, 200))
    freq = [1000.0, 2000.0, 500.0, 1000.0]
    fmax = [2000.0, 2000.0, 1000.0, 1000.0]
    S = 4
    params = DeviceParams(
        device=("cpu", "cpu", "gpu", "gpu"), freq_mhz=freq, fmax_mhz=fmax,
        dvfs_scale=[f / m for f, m in zip(freq, fmax)],
        static_mw=[float(rng.uniform(50, 400))] * 2 + [float(rng.uniform(100, 800))] * 2,
        dynamic_mw=[float(rng.uniform(300, 3000))] * 2 + [float(rng.uniform(500, 6000))] * 2,
        peak_gflops=[[cpu, cpu, cpu / 4]] * 2 + [[gpu, gpu, gpu / 10]] * 2,
        mem_bandwidth_gbps=[float(rng.uniform(2, 20))] * S, layer_overhead_ms=[float(rng.uniform(0, 2))] * S,
        node_overhead_ms=[0.01] * S, transfer_beta_ms_per_mb=[0.0, 0.0, float(rng.uniform(0, 3))] + [0.0],
        transfer_delta_ms=[0.0] * S, transfer_power_mw=[np.nan] * S, link_bandwidth_mbps=[np.nan] * S,
        link_rtt_ms=[np.nan] * S, link_tx_mw=[np.nan] * S, link_rx_mw=[np.nan] * S, capacity_bytes=[np.inf] * S,
        base_power_mw=float(rng.uniform(200, 1500)))
    knobs = [Knob("cores", (0, 1, 2) if zero_cores else (1, 2), ("cpu",), "active_cores",
                  {"parallel_fraction": float(rng.uniform(0.5, 0.95)), "max_cores": 2}),
             Knob("emc", (400.0, 800.0), ("cpu", "gpu"), "memory_frequency",
                  {"power_mw_at_max": float(rng.uniform(0, 500))})]
    if gpu_knob:
        knobs.append(Knob("gpu_sm", (1, 2), ("gpu",), "active_cores", {"parallel_fraction": 0.9}))
    space = HardwareSpace(knobs=tuple(knobs), features=feats, params=params, legal=np.ones((layers, S), dtype=bool))
    t = space.tables()
    skeleton = PlanningProblem(
        latency_ms=t["latency_ms"], power_mw=t["power_mw"], transfer_in_ms=t["transfer_in_ms"],
        transfer_out_ms=t["transfer_out_ms"], transfer_in_mj=t["transfer_in_mj"],
        transfer_out_mj=t["transfer_out_mj"], legal=t["legal"], param_bytes=np.zeros(layers, dtype=np.int64),
        capacity_bytes=np.full(S, np.inf), base_power_mw=t["base_power_mw"],
        states=StateTable(device=params.device, kind=KINDS, freq_mhz=np.array(freq),
                          is_fmax=np.array([False, True, False, True])))
    return space.apply(skeleton, space.default_config())


def brute(problem: PlanningProblem, objective: Objective) -> dict[tuple, float]:
    """The optimum of every configuration that has a feasible plan, by enumeration."""
    hw = problem.hardware
    out = {}
    for cfg in hw.configs():
        q = hw.apply(problem, cfg)
        if not np.asarray(q.legal).any(axis=1).all():
            continue
        v = Brute.of(q).best(objective)
        if v is not None:
            out[tuple(cfg.items())] = v
    return out


def limits(problem: PlanningProblem, rng: np.random.Generator) -> tuple[float, float]:
    """A deadline and a cap inside the range of the plans of every configuration."""
    hw = problem.hardware
    T, P = [], []
    for cfg in hw.configs():
        q = hw.apply(problem, cfg)
        if np.asarray(q.legal).any(axis=1).all():
            b = Brute.of(q)
            T += list(b.latency_ms)
            P += list(b.energy_mj / b.latency_ms * 1000.0)
    return float(np.quantile(T, rng.uniform(0.05, 0.9))), float(np.quantile(P, rng.uniform(0.05, 0.9)))


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1), metric=st.sampled_from(["latency", "energy", "edp"]),
       kind=st.sampled_from(["none", "deadline", "cap", "both"]), layers=st.integers(1, 4), gpu_knob=st.booleans())
def test_knob_search_is_the_optimum_over_knobs_and_plans(seed, metric, kind, layers, gpu_knob):
    problem = board(seed, layers, gpu_knob)
    D, cap = limits(problem, np.random.default_rng(seed + 1))
    objective = Objective(metric, deadline_ms=D if kind in ("deadline", "both") else None,
                          power_cap_mw=cap if kind in ("cap", "both") else None)
    best = brute(problem, objective)
    if not best:
        with pytest.raises(InfeasibleError):
            run_planner(problem, objective, "exact")
        return
    v = min(best.values())
    plan = run_planner(problem, objective, "exact")
    assert close(objective.key(plan.latency_ms, plan.energy_mj), v, 1e-7)
    assert plan.stats["optimal"] and plan.stats["knobs"]["configurations"] == problem.hardware.size
    hw = problem.hardware
    got = tuple(hw.validate(plan.hardware).items())
    assert close(best[got], v, 1e-7)                       # the plan's configuration reaches the optimum
    # ties: the most capable of the configurations that reach it
    tied = [c for c, x in best.items() if x <= v + 1e-9 * max(1.0, abs(v))]
    assert hw.capability(dict(got)) == max(hw.capability(dict(c)) for c in tied)
    # the plan is the plan of that configuration: re-evaluated there, the same numbers
    again = hw.apply(problem, dict(got)).evaluate(plan.slices)
    assert close(again.latency_ms, plan.latency_ms) and close(again.energy_mj, plan.energy_mj)


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1), metric=st.sampled_from(["latency", "energy", "edp"]),
       emc=st.sampled_from([400.0, 800.0]))
def test_knobs_fixed_is_exact_at_the_problems_configuration(seed, metric, emc):
    problem = board(seed, 3)
    at = problem.hardware.apply(problem, {"emc": emc})          # as --hardware emc=... makes it
    D, cap = limits(problem, np.random.default_rng(seed))
    objective = Objective(metric, power_cap_mw=cap)
    try:
        want = exact(at, objective)
    except InfeasibleError:
        with pytest.raises(InfeasibleError):
            run_planner(at, objective, "exact", {"knobs": "fixed"})
        return
    got = run_planner(at, objective, "exact", {"knobs": "fixed"})
    assert got.slices == want.slices and got.latency_ms == want.latency_ms and got.energy_mj == want.energy_mj
    assert got.hardware == at.hardware_config and got.options == {"knobs": "fixed"}
    searched = run_planner(at, objective, "exact")
    assert objective.key(searched.latency_ms, searched.energy_mj) <= \
        objective.key(got.latency_ms, got.energy_mj) * (1 + 1e-9)


def test_ties_go_to_the_more_capable_configuration():
    """A GPU far faster than the CPU: the fastest plan runs on the GPU alone, so the CPU's core count
    changes nothing; the plan keeps every core online (not 0), and the memory clock at its top."""
    problem = board(3, 3, zero_cores=True, gpu_peak=5000.0)
    plan = run_planner(problem, Objective("latency"), "exact")
    assert {problem.states.device[s.state] for s in plan.slices} == {"gpu"}
    assert plan.hardware == {"cores": 2, "emc": 800.0}
    # the same plan is optimal at cores=0 and 1: brute force agrees they tie
    best = brute(problem, Objective("latency"))
    assert close(best[(("cores", 0), ("emc", 800.0))], best[(("cores", 2), ("emc", 800.0))])
    # the hardware space's optimum (evosh search=optimum) breaks the tie the same way
    space = ConfigSpace.build(problem, "hardware", blocks=1, mapping="gpu")
    config, _ = space.exhaustive(np.inf)
    assert space.describe(config)["cores"] == 2
    assert space.describe(config)["cpu_freq_mhz"] == 2000.0      # an idle CPU's level: its top one too
    opt = optimum(space, np.inf)
    assert opt.hardware["cores"] == 2


def test_capability_orders_by_dominance_then_sum():
    assert capability((1, 2)) > capability((1, 1)) > capability((0, 1))
    assert capability((0, 3)) > capability((2, 0))          # more positions up in all
    assert capability((2, 1)) > capability((1, 2))          # a tie in sum: the first knob decides


def test_bad_knobs_value_is_one_line_naming_the_option():
    problem = board(0, 2)
    with pytest.raises(UsageError) as err:
        run_planner(problem, Objective("latency"), "exact", {"knobs": "all"})
    msg = str(err.value)
    assert "\n" not in msg and "knobs" in msg and "search" in msg and "fixed" in msg


def test_too_many_configurations_is_refused_naming_the_option(monkeypatch):
    problem = board(0, 2)
    monkeypatch.setattr(knobs_module, "MAX_KNOB_CONFIGS", 4)
    with pytest.raises(UsageError) as err:
        run_planner(problem, Objective("latency"), "exact")
    assert "\n" not in str(err.value) and "knobs=fixed" in str(err.value) and "6 hardware" in str(err.value)
    assert run_planner(problem, Objective("latency"), "exact", {"knobs": "fixed"}).hardware == {"cores": 2, "emc": 800.0}


def test_problem_without_knobs_is_planned_as_before():
    problem = board(5, 3)
    bare = problem.replace(hardware=None, hardware_config=None)
    objective = Objective("energy", power_cap_mw=limits(problem, np.random.default_rng(0))[1])
    try:
        want = exact(bare, objective)
    except InfeasibleError:
        return
    got = run_planner(bare, objective, "exact")
    drop = ("seconds",)
    assert got.slices == want.slices and "knobs" not in got.stats
    assert {k: v for k, v in got.stats.items() if k not in drop} == {k: v for k, v in want.stats.items() if k not in drop}


@pytest.mark.slow
def test_jetson_tx2_plan_records_the_knobs_it_chose(tmp_path):
    """Under a 3 W cap the default knobs are not the best on the TX2 model: the plan's knobs
    reach the manifest, and no configuration of EvoSh's hardware space beats the plan."""
    from hetcc.compiler import zoo

    model = tmp_path / "squeezenet1_1.onnx"
    zoo.export("squeezenet1_1", model, seed=0)
    out = tmp_path / "tx2"
    result = hetcc.compile(model, target="jetson-tx2", objective="latency", power_cap="3W", planner="exact",
                           output_dir=out)
    fixed = hetcc.analyse(model, "jetson-tx2").plan("latency", power_cap="3W", planner="exact",
                                                     options={"knobs": "fixed"})
    plan = result.plan
    assert plan.latency_ms < fixed.latency_ms and plan.stats["optimal"]
    assert plan.hardware != fixed.hardware
    manifest = json.loads((out / "manifest.json").read_text())
    variant = manifest["variants"][manifest["default_variant"]]
    assert variant["hardware"] == dict(plan.hardware)
    assert variant["planner"]["options"] == {"knobs": "search"}
    problem = hetcc.analyse(model, "jetson-tx2").problem
    hw_opt = optimum(ConfigSpace.build(problem, "hardware"), 3000.0)
    assert plan.latency_ms <= hw_opt.latency_ms * (1 + 1e-9)


@pytest.mark.parametrize("objective, words", [
    (Objective("latency", power_cap_mw=1.0), ["the 1 mW power cap", "on any of the 6 hardware configurations",
                                              "lowest reachable average power", "relax --power-cap"]),
    (Objective("energy", deadline_ms=1e-6), ["deadline on any of the 6 hardware configurations",
                                             "fastest reachable latency", "relax --deadline"]),
])
def test_no_configuration_meets_the_limits_is_one_line(objective, words):
    problem = board(1, 3)
    with pytest.raises(InfeasibleError) as err:
        run_planner(problem, objective, "exact")
    msg = str(err.value)
    assert "\n" not in msg and all(w in msg for w in words), msg
