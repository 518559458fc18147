"""The planner registry: names, ``auto``, ``single:<device>``, options and the recorded timing."""
from __future__ import annotations

import sys

import pytest

from hetcc.errors import UsageError
from hetcc.planners import PLANNERS, get_planner, plan, planner_names, register, resolve
from hetcc.planners.problem import Objective, Slice


def test_builtin_planners_are_registered():
    assert {"dp", "exact", "brute"} <= set(PLANNERS)
    assert "auto" in planner_names() and "single:<device>" in planner_names()


def test_unknown_planner_names_the_valid_ones():
    with pytest.raises(UsageError, match="unknown planner 'nope'; choose one of auto, .*dp, exact"):
        get_planner("nope")
    with pytest.raises(UsageError, match="names no device"):
        get_planner("single:")


@pytest.mark.parametrize("objective, expected", [
    (Objective("latency"), "dp"), (Objective("energy"), "dp"), (Objective("edp"), "exact"),
    (Objective("latency", deadline_ms=9.0), "exact"), (Objective("energy", power_cap_mw=900.0), "exact"),
])
def test_auto_is_exact_unless_the_metric_is_additive_and_unconstrained(chain3, objective, expected):
    problem = chain3.with_objective(objective)
    assert resolve(problem, "auto") == expected
    result = plan(problem)
    assert result.planner == expected
    assert result.seconds > 0


def test_plan_records_name_options_and_seconds(chain3):
    result = plan(chain3, "exact", stream=False)
    assert result.planner == "exact" and result.options == {"stream": False}
    assert result.slices == (Slice(0, 2, 1),)
    assert 0 < result.seconds < 5


def test_single_device_planner_by_name(chain3):
    result = plan(chain3, "single:big")
    assert result.planner == "single:big" and result.slices == (Slice(0, 2, 0),)
    with pytest.raises(UsageError, match="unknown device 'npu'.*big, gpu"):
        plan(chain3, "single:npu")


def test_unknown_options_are_usage_errors(chain3):
    with pytest.raises(UsageError, match="'dp' does not take option.*beam.*its options: none"):
        plan(chain3, "dp", beam=3)
    with pytest.raises(UsageError, match="its options: stream"):
        plan(chain3, "exact", beam=3)


def test_register_adds_a_planner_and_refuses_duplicates(chain3):
    @register("test-first-layer-on-0")
    def first(problem):
        return problem.evaluate([Slice(0, problem.num_layers - 1, 0)])

    try:
        assert plan(chain3, "test-first-layer-on-0").planner == "test-first-layer-on-0"
        with pytest.raises(ValueError, match="registered twice"):
            register("test-first-layer-on-0")(lambda problem: None)
    finally:
        del PLANNERS["test-first-layer-on-0"]


def test_planner_modules_do_not_import_onnx():
    import inspect

    mods = [m for name, m in sys.modules.items() if name.startswith("hetcc.planners")]
    assert len(mods) >= 5
    for mod in mods:
        imported = [v.__name__ for v in vars(mod).values() if inspect.ismodule(v)]
        assert not [n for n in imported if n.split(".")[0] in ("onnx", "onnxruntime", "onnx_ir")], mod
