"""The workload planners of contention (all-gpu, rr, mosaic, ga, optimum), the workload metrics
and the whole-workload feasibility policy (hetcc.planners.multi.baselines/ga/optimum/plans)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from hetcc.core.errors import InfeasibleError, UsageError
from hetcc.planners import Objective, PlanContext, PlanningProblem, StateTable, WorkloadProblem, plan
from hetcc.planners.metrics import METRICS, WORKLOAD_METRICS, get_metric
from hetcc.planners.multi.baselines import latency_pipeline
from hetcc.planners.multi.contention import predict
from hetcc.planners.multi.ga import Genome
from hetcc.planners.multi.mix import Stage
from hetcc.planners.multi.optimum import boundaries
from hetcc.planners.multi.plans import mix_of
from hetcc.planners.multi.scores import score
from hetcc.planners.registry import check_planner, resolve
from extras import needs

DEVICES = ("big", "little", "gpu")
SPEED = np.array([1.0, 0.4, 2.5])


def problem(rng, L, *, legal=None, base_power=500.0):
    S = len(DEVICES)
    lat = rng.lognormal(0.0, 1.0, size=(L, 1)) / SPEED[None, :] * rng.uniform(0.8, 1.25, size=(L, S))
    z = np.zeros((L, S))
    return PlanningProblem(
        latency_ms=lat, power_mw=np.full((L, S), 1500.0), transfer_in_ms=z + 0.05, transfer_out_ms=z + 0.05,
        transfer_in_mj=z, transfer_out_mj=z, legal=np.ones((L, S), bool) if legal is None else legal,
        param_bytes=np.zeros(L, np.int64), capacity_bytes=np.full(S, np.inf), base_power_mw=base_power,
        states=StateTable(device=DEVICES, kind=("cpu", "cpu", "gpu"), freq_mhz=np.array([2400.0, 1800.0, 1000.0]),
                          is_fmax=np.ones(S, bool)),
        switch_ms=np.array([0.2, 0.2, 1.9]))


def workload(seed, sizes=(4, 5)):
    rng = np.random.default_rng(seed)
    return WorkloadProblem(tuple(problem(rng, L) for L in sizes), tuple(f"m{i}" for i in range(len(sizes))))


def run(w, planner, metric="overall", seed=0, **options):
    return plan(w, Objective(metric), planner, options, PlanContext(seed))


# ---- metrics ---------------------------------------------------------------------------------

def test_workload_metrics_are_registered_once_beside_the_plan_metrics():
    assert set(WORKLOAD_METRICS) == {"throughput", "fairness", "overall"}
    assert not set(WORKLOAD_METRICS) & set(METRICS) and list(METRICS) == ["latency", "energy", "edp"]
    with pytest.raises(ValueError, match="workload metric"):
        get_metric("overall").value(1.0, 1.0)

    class S:
        throughput, normalised, jain, overall = 10.0, 2.0, 0.5, 1.0
    assert get_metric("fairness").score_key(S) == -0.5 and get_metric("throughput").score_key(S) == -10.0
    with pytest.raises(ValueError, match="one plan"):
        get_metric("latency").score_key(S)


def test_a_workload_metric_for_one_model_and_auto_for_a_workload():
    with pytest.raises(UsageError, match="several models"):
        resolve("auto", Objective("overall"), "model")
    with pytest.raises(UsageError, match="several models"):
        check_planner("dp", "model", "throughput")
    assert resolve("auto", Objective("overall"), "workload") == "ga"
    assert resolve("auto", Objective("latency"), "workload") == "independent"
    with pytest.raises(UsageError, match="does not optimise overall"):
        check_planner("independent", "workload", "overall")


# ---- the planners -----------------------------------------------------------------------------

def pipelines(wp):
    return {n: [(s["device"], s["first"], s["stop"]) for s in p] for n, p in wp.stats["pipelines"].items()}


def test_baselines_place_models_as_the_paper_says():
    w = workload(1, (4, 5, 6))
    gpu = run(w, "all-gpu")
    assert all(p == [("gpu", 0, L)] for p, L in zip(pipelines(gpu).values(), (4, 5, 6)))
    assert gpu.stats["score"]["T_norm"] == pytest.approx(1.0)
    cpu = run(w, "rr:cpu")
    assert {p[0][0] for p in pipelines(cpu).values()} <= {"big", "little"}
    assert all(len(p) == 1 for p in pipelines(cpu).values()) and cpu.stats["prediction"]["sharing"] == "slice"
    assert {p[0][0] for p in pipelines(run(w, "rr:gpu")).values()} == {"gpu"}
    # every model's plan is its pipeline: slice i = stage i, at the mix's one state of the device
    for p, pipe in zip(gpu.plans, pipelines(gpu).values()):
        assert [(s.first, s.last + 1) for s in p.slices] == [(a, b) for _, a, b in pipe]


def all_pipelines(mix, m, cuts=None, max_stages=3):
    """Every pipeline of model m under the masking rule (cuts at ``cuts``, default every layer)."""
    L, D = mix.n_layers(m), mix.n_devices
    inner = list(range(1, L)) if cuts is None else cuts
    for k in range(1, min(max_stages, D) + 1):
        for cs in itertools.combinations(inner, k - 1):
            b = (0, *cs, L)
            for devs in itertools.permutations(range(D), k):
                yield tuple(Stage(d, b[i], b[i + 1]) for i, d in enumerate(devs))


def test_mosaic_is_each_models_least_latency_pipeline_under_the_masking_rule():
    w = workload(2, (5, 4))
    mix = mix_of(w)
    for m in range(2):
        best = min(mix.stages_ms(m, p).sum() for p in all_pipelines(mix, m))
        assert mix.stages_ms(m, latency_pipeline(mix, m)).sum() == pytest.approx(best)
        dp = plan(w.problems[m], Objective("latency"), "dp")
        devs = [w.states.device[s.state] for s in dp.slices]
        if len(devs) == len(set(devs)):      # dp's plan is a pipeline: the same latency
            assert mix.stages_ms(m, latency_pipeline(mix, m)).sum() == pytest.approx(dp.latency_ms)


@pytest.mark.parametrize("seed,metric", [(3, "overall"), (4, "throughput"), (5, "fairness")])
def test_optimum_equals_brute_force_enumeration(seed, metric):
    w = workload(seed, (4, 5))
    mix = mix_of(w)
    blocks = 3
    cands = [list(all_pipelines(mix, m, boundaries(mix.n_layers(m), blocks))) for m in range(2)]
    key = get_metric(metric)
    best = max(key.score(score(mix, predict(mix, c).throughput)) for c in itertools.product(*cands))
    got = run(w, "optimum", metric, blocks=blocks)
    value = {"overall": "O", "throughput": "T_w", "fairness": "J"}[metric]
    assert got.stats["score"][value] == pytest.approx(best)
    assert got.stats["space"] == math.prod(len(c) for c in cands)


def test_optimum_under_a_fairness_floor_is_the_brute_force_best_that_reaches_it():
    w = workload(3, (4, 5))
    mix = mix_of(w)
    cands = [list(all_pipelines(mix, m, boundaries(mix.n_layers(m), 3))) for m in range(2)]
    scores = [score(mix, predict(mix, c).throughput) for c in itertools.product(*cands)]
    free = run(w, "optimum", blocks=3)
    assert free.stats["score"]["O"] == pytest.approx(max(s.overall for s in scores))
    floor = (free.stats["score"]["J"] + max(s.jain for s in scores)) / 2     # above the free optimum's J
    got = run(w, "optimum", blocks=3, min_jain=floor)
    assert got.stats["score"]["J"] >= floor and got.stats["min_jain"] == floor
    assert got.stats["score"]["O"] == pytest.approx(max(s.overall for s in scores if s.jain >= floor))
    # a floor no plan reaches: the best of all, as without one
    top = max(s.jain for s in scores)
    assert top < 1.0
    unreachable = run(w, "optimum", blocks=3, min_jain=(top + 1.0) / 2)
    assert unreachable.stats["score"]["O"] == pytest.approx(free.stats["score"]["O"])


@pytest.mark.multi
def test_ga_is_seeded_never_below_the_baseline_and_near_the_optimum():
    needs("multi")
    w = workload(6, (5, 6))
    a = run(w, "ga", seed=7, population=30, generations=15)
    b = run(w, "ga", seed=7, population=30, generations=15)
    assert pipelines(a) == pipelines(b)
    for seeded in ("all-gpu", "mosaic"):       # in its first population, and the best survives
        assert a.stats["score"]["O"] >= run(w, seeded).stats["score"]["O"] - 1e-12
    opt = run(w, "optimum", blocks=2)
    assert a.stats["score"]["O"] >= 0.9 * opt.stats["score"]["O"]
    for name, pipe in pipelines(a).items():       # the masking rule: no device twice
        assert len({d for d, _, _ in pipe}) == len(pipe)


def test_the_genome_round_trips_a_pipeline():
    w = workload(8, (6, 7))
    mix = mix_of(w)
    g = Genome(mix)
    pipes = ((Stage(2, 0, 3), Stage(0, 3, 6)), (Stage(1, 0, 7),))
    assert g.decode(g.encode(pipes)) == pipes


# ---- errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("planner,options,match", [
    ("ga", {"population": "2"}, "at least 4"),
    ("ga", {"generations": "0"}, "at least 1"),
    ("rr:npu", {}, "expected one of cpu, gpu"),
    ("rr", {"quantum_ms": "0"}, "must be > 0"),
    ("optimum", {"blocks": "0"}, "at least 1 block"),
    ("optimum", {"colour": "red"}, "has no option"),
    ("optimum", {"min_jain": "1.5"}, "Jain's index lies in 0..1"),
])
def test_bad_options_are_one_line(planner, options, match):
    with pytest.raises(UsageError, match=match) as e:
        plan(workload(0), Objective("overall"), planner, options)
    assert "\n" not in str(e.value)


def test_optimum_refuses_a_space_beyond_its_limit_naming_the_bound_and_options():
    with pytest.raises(UsageError, match=r"exceed limit=50; lower --planner-option blocks=") as e:
        run(workload(0, (6, 6, 6)), "optimum", limit=50)
    assert "\n" not in str(e.value)


def test_a_model_that_runs_on_no_device_is_infeasible_naming_it():
    rng = np.random.default_rng(0)
    legal = np.ones((3, 3), bool)
    legal[1] = False
    w = WorkloadProblem((problem(rng, 4), problem(rng, 3, legal=legal)), ("ok", "stuck"))
    for planner in ("all-gpu", "optimum", "mosaic", "rr:cpu"):
        with pytest.raises(InfeasibleError, match=r"model 'stuck' cannot run on any device.*layer 1"):
            run(w, planner)


def test_the_workload_is_judged_as_a_whole():
    w = workload(9, (5, 6))
    free = run(w, "all-gpu")
    shared = free.stats["shared_latency_ms"]
    assert all(shared[n] >= p.latency_ms - 1e-9 for n, p in zip(free.names, free.plans))   # contention slows
    tight = min(shared.values()) * 0.5
    with pytest.raises(InfeasibleError, match="while the models run at once misses"):
        plan(w, Objective("overall", deadline_ms=tight), "all-gpu")
    kept = plan(w, Objective("overall", deadline_ms=tight), "all-gpu", allow_infeasible=True)
    assert not kept.feasible and len(kept.violations) == 2
    cap = free.stats["power_mw"] * 0.9
    with pytest.raises(InfeasibleError, match="average while the models run at once exceeds"):
        plan(w, Objective("overall", power_cap_mw=cap), "all-gpu")
    assert plan(w, Objective("overall", power_cap_mw=cap * 2), "all-gpu").feasible


def test_a_budget_stops_optimum_with_the_best_so_far():
    from hetcc.planners import Budget

    w = workload(10, (5, 5, 5))
    full = run(w, "optimum", blocks=2)          # 9 pipelines a model, 729 combinations
    cut = plan(w, Objective("overall"), "optimum", {"blocks": 2}, PlanContext(0, budget=Budget(steps=256)))
    assert full.stats["complete"] and full.stats["enumerated"] == full.stats["space"] == 729
    assert not cut.stats["complete"] and cut.stats["enumerated"] == 256
    assert cut.stats["score"]["O"] <= full.stats["score"]["O"] + 1e-12
