"""The planner registry: specs, typed options, ``auto`` from capabilities, the feasibility policy."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field

import numpy as np
import pytest

from hetcc.core.errors import InfeasibleError, UsageError
from hetcc.planners import (Budget, Objective, PlanContext, PlannerSpec, Slice, all_specs, get_spec,
                            parse_option_args, plan, planner_names, register, resolve)
from hetcc.planners.registry import _SPECS
from planner_cases import make_problem


def test_builtin_planners_have_specs_with_capabilities():
    names = {s.name for s in all_specs()}
    assert {"dp", "exact", "brute", "single", "even", "random", "independent"} <= names
    assert "auto" in planner_names()
    assert get_spec("exact").exact and set(get_spec("exact").constraints) == {"deadline", "power_cap"}
    assert get_spec("dp").metrics == ("latency", "energy")
    assert get_spec("single:gpu").name == "single"
    assert get_spec("independent").kind == "workload"


def test_unknown_planner_names_the_valid_ones():
    with pytest.raises(UsageError, match="unknown planner 'nope'; choose one of auto, .*dp, .*exact"):
        get_spec("nope")


@pytest.mark.parametrize("objective, expected", [
    (Objective("latency"), "dp"), (Objective("energy"), "dp"), (Objective("edp"), "exact"),
    (Objective("latency", deadline_ms=9.0), "exact"), (Objective("energy", power_cap_mw=900.0), "exact"),
])
def test_auto_picks_the_first_exact_planner_whose_capabilities_cover_the_objective(chain3, objective, expected):
    assert resolve("auto", objective) == expected
    result = plan(chain3, objective)
    assert result.planner == expected
    assert result.seconds > 0 and result.objective == objective


def test_plan_records_name_options_and_seconds(chain3):
    result = plan(chain3, Objective("latency"), "random", {"samples": "7"})
    assert result.planner == "random" and result.options == {"samples": 7}
    assert result.stats["samples"] == 7
    assert result.seconds > 0


def test_single_device_planner_by_name(chain3):
    result = plan(chain3, Objective("latency"), "single:big")
    assert result.planner == "single:big" and result.slices == (Slice(0, 2, 0),)
    assert result.options == {"device": "big", "governor": "performance", "sampling_ms": 0.0}
    with pytest.raises(UsageError, match="unknown device 'npu'.*big, gpu"):
        plan(chain3, Objective("latency"), "single:npu")
    with pytest.raises(UsageError, match="names no device"):
        plan(chain3, Objective("latency"), "single:")
    with pytest.raises(UsageError, match="takes no ':' argument"):
        plan(chain3, Objective("latency"), "dp:3")


def test_options_are_typed_and_validated(chain3):
    with pytest.raises(UsageError, match="planner 'hcca' has no option 'beam'; its options: none"):
        plan(chain3, Objective("latency"), "hcca", {"beam": "3"})
    with pytest.raises(UsageError, match="planner 'random' has no option 'sample'; its options: samples"):
        plan(chain3, Objective("latency"), "random", {"sample": "3"})
    with pytest.raises(UsageError, match=r"planner 'random': option samples='many': expected an integer"):
        plan(chain3, Objective("latency"), "random", {"samples": "many"})
    assert parse_option_args(["a=1", " b = x=y "]) == {"a": "1", "b": "x=y"}
    with pytest.raises(UsageError, match="malformed --planner-option 'oops'"):
        parse_option_args(["oops"])


def test_a_planner_that_does_not_optimise_the_metric_is_refused(chain3):
    with pytest.raises(UsageError, match="'dp' does not optimise edp"):
        plan(chain3, Objective("edp"), "dp")
    with pytest.raises(UsageError, match="plans a workload, not a model"):
        plan(chain3, Objective("latency"), "independent")


@dataclass(frozen=True)
class _Opts:
    level: int = field(default=1, metadata={"doc": "a test option"})
    mode: str = "a"


def test_register_adds_a_planner_and_refuses_duplicates(chain3):
    def first(problem, objective, ctx):
        assert isinstance(ctx, PlanContext) and ctx.options.level == 4
        return problem.evaluate([Slice(0, problem.num_layers - 1, 0)])

    spec = register(PlannerSpec("test-first-state", "all on state 0", first, _Opts))
    try:
        result = plan(chain3, Objective("latency"), "test-first-state", {"level": "4"})
        assert result.planner == "test-first-state" and result.options == {"level": 4, "mode": "a"}
        with pytest.raises(ValueError, match="registered twice"):
            register(PlannerSpec("test-first-state", "x", lambda *a: None))
        assert spec in all_specs()
    finally:
        del _SPECS["test-first-state"]


def test_context_seeds_and_budgets():
    a, b = PlanContext(3), PlanContext(3)
    assert a.rng.integers(1 << 30) == b.rng.integers(1 << 30)
    ctx = PlanContext(budget=Budget(steps=5))
    assert not ctx.out_of_budget(4) and ctx.out_of_budget(5)
    with pytest.raises(ValueError):
        Budget(steps=0)


# ---- the feasibility policy, applied after every planner ------------------------------------

BASELINES = ["dp", "single:big", "single:gpu", "even:2", "random"]


@pytest.mark.parametrize("planner", BASELINES)
def test_a_plan_missing_the_deadline_is_exit_3_with_the_amount(chain3, planner):
    obj = Objective("latency", deadline_ms=1.0)          # nothing runs 3 layers in 1 ms
    with pytest.raises(InfeasibleError, match=r"misses the 1 ms deadline by [0-9.]+ ms") as info:
        plan(chain3, obj, planner)
    assert info.value.exit_code == 3
    allowed = plan(chain3, obj, planner, allow_infeasible=True)
    assert not allowed.feasible and "misses the 1 ms deadline" in allowed.violations[0]


@pytest.mark.parametrize("planner", BASELINES)
def test_a_plan_over_the_power_cap_is_exit_3_with_the_amount(chain3, planner):
    obj = Objective("energy", power_cap_mw=100.0)        # no plan averages 0.1 W or less
    with pytest.raises(InfeasibleError, match=r"[0-9.]+ W average exceeds the 0.1 W power cap by [0-9.]+ W"):
        plan(chain3, obj, planner)
    allowed = plan(chain3, obj, planner, allow_infeasible=True)
    assert not allowed.feasible and allowed.violations


@pytest.mark.parametrize("planner", BASELINES + ["exact"])
def test_feasible_plans_are_marked_feasible(chain3, planner):
    result = plan(chain3, Objective("latency", deadline_ms=100.0, power_cap_mw=2000.0), planner)
    assert result.feasible and result.violations == ()


def test_exact_proves_infeasibility_and_allow_infeasible_writes_the_fastest_plan(chain3):
    with pytest.raises(InfeasibleError):
        plan(chain3, Objective("latency", deadline_ms=1.0), "exact")
    closest = plan(chain3, Objective("latency", deadline_ms=1.0), "exact", allow_infeasible=True)
    assert not closest.feasible and closest.latency_ms == plan(chain3, Objective("latency"), "exact").latency_ms


def test_read_only_problem_arrays(chain3):
    with pytest.raises(ValueError):
        chain3.latency_ms[0, 0] = 5.0
    src = np.ones((2, 2))
    make_problem(src)
    src[0, 0] = 3.0        # the caller's array stays writable


def test_planner_modules_import_neither_onnx_nor_torch():
    import inspect

    all_specs()
    mods = [m for name, m in sys.modules.items() if name.startswith("hetcc.planners")]
    assert len(mods) >= 8
    for mod in mods:
        imported = [v.__name__ for v in vars(mod).values() if inspect.ismodule(v)]
        assert not [n for n in imported if n.split(".")[0] in ("onnx", "onnxruntime", "onnx_ir", "torch")], mod
