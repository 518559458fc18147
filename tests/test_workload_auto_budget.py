"""``auto`` for a workload (optimum on small mixes, else ga; independent for plan metrics) and
the budget of ``compile_workload`` / ``hetcc compile a.onnx b.onnx --budget-*``."""
from __future__ import annotations

import numpy as np
import pytest

from extras import needs
from hetcc.planners import Budget, PlanContext, plan
from hetcc.planners.metrics import Objective
from hetcc.planners.problem import PlanningProblem, StateTable, WorkloadProblem
from hetcc.planners.registry import AUTO_OPTIMUM_SPACE, optimum_space, resolve
from test_cli import run
from text_models import CHAIN, IDENTITY_CHAIN

DEVICES = ("big", "little", "gpu")


def problem(rng, L):
    S = len(DEVICES)
    lat = rng.lognormal(0.0, 1.0, size=(L, 1)) / np.array([1.0, 0.4, 2.5])[None, :]
    z = np.zeros((L, S))
    return PlanningProblem(
        latency_ms=lat, power_mw=np.full((L, S), 1500.0), transfer_in_ms=z + 0.05, transfer_out_ms=z + 0.05,
        transfer_in_mj=z, transfer_out_mj=z, legal=np.ones((L, S), bool),
        param_bytes=np.zeros(L, np.int64), capacity_bytes=np.full(S, np.inf), base_power_mw=500.0,
        states=StateTable(device=DEVICES, kind=("cpu", "cpu", "gpu"), freq_mhz=np.array([2400.0, 1800.0, 1000.0]),
                          is_fmax=np.ones(S, bool)),
        switch_ms=np.array([0.2, 0.2, 1.9]))


def workload(n, L=6, seed=0):
    rng = np.random.default_rng(seed)
    return WorkloadProblem(tuple(problem(rng, L) for _ in range(n)), tuple(f"m{i}" for i in range(n)))


def test_auto_takes_optimum_on_a_small_mix_and_ga_beyond_its_bound():
    small, large = workload(2), workload(4)
    # 3 devices, 3 blocks, <= 3 stages: 3 + 2*6 + 1*6 = 21 pipelines per model
    assert optimum_space(small) == 21 ** 2 <= AUTO_OPTIMUM_SPACE < optimum_space(large) == 21 ** 4
    assert resolve("auto", Objective("overall"), "workload", small) == "optimum"
    assert resolve("auto", Objective("fairness"), "workload", large) == "ga"
    assert resolve("auto", Objective("latency"), "workload", small) == "independent"
    assert resolve("auto", Objective("overall"), "workload") == "ga"          # no problem to size: ga
    got = plan(small, Objective("overall"), "auto", {}, PlanContext(0))
    direct = plan(small, Objective("overall"), "optimum", {}, PlanContext(0))
    assert got.planner == "optimum" and got.stats["complete"]
    assert got.stats["pipelines"] == direct.stats["pipelines"]


def test_a_budget_reaches_the_planner_auto_chose():
    w = workload(3)                                   # 9261 combinations: optimum, stopped after 256
    assert optimum_space(w) == 21 ** 3
    cut = plan(w, Objective("overall"), "auto", {}, PlanContext(0, budget=Budget(steps=256)))
    assert cut.planner == "optimum" and not cut.stats["complete"] and cut.stats["enumerated"] == 256


@pytest.fixture
def models(tmp_path, write_text_model):
    return [str(write_text_model(CHAIN, tmp_path / "a.onnx")), str(write_text_model(IDENTITY_CHAIN, tmp_path / "b.onnx"))]


@pytest.mark.multi
def test_compile_workload_takes_a_budget(models):
    needs("multi")
    import hetcc

    res = hetcc.compile_workload(models, "orangepi5", "overall", planner="ga",
                                 planner_options={"generations": 30, "population": 6}, budget=Budget(steps=2))
    assert res.plan.planner == "ga" and res.plan.stats["generations"] <= 5       # stopped, not 30
    full = hetcc.compile_workload(models, "orangepi5", "overall", planner="ga",
                                  planner_options={"generations": 30, "population": 6})
    assert full.plan.stats["generations"] >= 30          # (pymoo counts one past the last)


def test_the_command_line_passes_the_budget_to_compile_workload(capsys, models, monkeypatch):
    import hetcc.compiler.api as api

    seen = {}
    real = api.compile_workload

    def spy(*args, **kw):
        seen["budget"] = kw.get("budget")
        return real(*args, **kw)

    monkeypatch.setattr(api, "compile_workload", spy)
    code, _, err = run(capsys, "compile", *models, "--target", "orangepi5", "--objective", "overall",
                       "--budget-seconds", "30", "--budget-steps", "7", "--json")
    assert code == 0, err
    assert seen["budget"] == Budget(steps=7, seconds=30.0)
    code, out, err = run(capsys, "compile", *models, "--target", "orangepi5", "--objective", "overall", "--json")
    assert code == 0 and '"planner": "optimum"' in out                   # auto on a 2-model mix
