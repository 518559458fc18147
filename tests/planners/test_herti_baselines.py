"""HERTI's baselines (Sec. V-A): ``single:<device>`` under the on-demand governor model (TFL-*-O) and
``autoscale-static`` (AutoScale: one device state for the whole model), on a hand-made board whose
plans are computed by hand below, and through ``hetcc compile``."""
from __future__ import annotations

import json

import numpy as np
import pytest

from hetcc.core.errors import InfeasibleError, UsageError
from hetcc.planners import Objective, Slice, StateTable, plan
from hetcc.planners.autoscale_static import autoscale_static
from hetcc.planners.baselines import device_preferred, single_device
from hetcc.planners.governor import CPU_SAMPLING_MS, DEVFREQ_SAMPLING_MS
from planner_cases import close, make_problem
from test_cli import run
from test_cli_planning import CHAIN, one_line

# states: 0 big@500, 1 big@1000, 2 big@2000 (cpu); 3 gpu@200, 4 gpu@600; 5 npu (no DVFS)
B500, B1000, B2000, G200, G600, NPU = range(6)
DEVICES = ("big", "big", "big", "gpu", "gpu", "npu")
FREQS = (500.0, 1000.0, 2000.0, 200.0, 600.0, 0.0)
KINDS = ("cpu", "cpu", "cpu", "gpu", "gpu", "npu")
BIG = np.array([4.0, 6.0, 2.0, 8.0])          # ms per layer at 2000 MHz; x2 at 1000, x4 at 500
POWER = (50.0, 600.0, 2000.0, 300.0, 1500.0, 6000.0)
BASE_MW = 100.0


def board(legal=None, params=None, capacity=None):
    """4 layers; the gpu pays 0.5 ms to bring a slice's inputs in and 0.5 ms to take its outputs
    out; layer 2 cannot run on the npu."""
    lat = np.column_stack([BIG * 4, BIG * 2, BIG, np.full(4, 9.0), np.full(4, 3.0), np.ones(4)])
    if legal is None:
        legal = np.ones((4, 6), dtype=bool)
        legal[2, NPU] = False
    lat = np.where(legal, lat, np.inf)
    t = np.zeros((4, 6))
    t[:, [G200, G600]] = 0.5
    p = make_problem(lat, np.tile(POWER, (4, 1)), legal=legal, params=params, capacity=capacity, t_in=t,
                     t_out=t, base_power_mw=BASE_MW, names=("l0", "l1", "l2", "l3"))
    return p.replace(states=StateTable.build(DEVICES, FREQS, kind=KINDS))


def cost(*parts):
    """Latency and energy of slices given as (busy ms, power mW, transfer ms): by hand."""
    t = sum(ms + tr for ms, _, tr in parts)
    return t, sum(ms * pw for ms, pw, _ in parts) / 1000.0 + BASE_MW * t / 1000.0


def ondemand(problem, device, sampling_ms=0.0):
    return single_device(problem, device, "ondemand", sampling_ms)


def check(problem, got, slices, expected):
    """``got`` has ``slices``, costs what evaluate says they cost, and that is ``expected``."""
    assert got.slices == tuple(slices)
    ref = problem.evaluate(slices)
    assert (got.latency_ms, got.energy_mj) == (ref.latency_ms, ref.energy_mj)
    assert close(got.latency_ms, expected[0]) and close(got.energy_mj, expected[1])


# ---- the on-demand governor (TFL-*-O) -------------------------------------------------------

def test_defaults_are_documented_numbers():
    assert (CPU_SAMPLING_MS, DEVFREQ_SAMPLING_MS) == (20.0, 50.0)


def test_big_switches_at_the_first_layer_starting_after_the_sample_point():
    # at 500 MHz layer 0 runs 0-16 ms, layer 1 starts at 16 < 20 (default cpu period), layer 2 at 40
    got = ondemand(board(), "big")
    check(board(), got, [Slice(0, 1, B500), Slice(2, 3, B2000)], cost((16 + 24, 50, 0), (2 + 8, 2000, 0)))
    assert got.stats == {"governor": "ondemand", "sampling_ms": 20.0, "low_state": "big@500", "switch_layer": 2}
    perf = single_device(board(), "big")
    assert perf.slices == (Slice(0, 3, B2000),) and got.latency_ms > perf.latency_ms


@pytest.mark.parametrize("sampling_ms, first_fast", [(10.0, 1), (16.0, 1), (16.001, 2), (48.0, 3)])
def test_a_layer_starting_before_the_sample_point_runs_slow(sampling_ms, first_fast):
    got = ondemand(board(), "big", sampling_ms)
    assert got.slices == (Slice(0, first_fast - 1, B500), Slice(first_fast, 3, B2000))
    assert got.stats["switch_layer"] == first_fast
    slow, fast = (BIG * 4)[:first_fast].sum(), BIG[first_fast:].sum()
    check(board(), got, got.slices, cost((slow, 50, 0), (fast, 2000, 0)))


def test_sampling_longer_than_the_run_keeps_everything_at_the_lowest_frequency():
    got = ondemand(board(), "big", 1000.0)
    check(board(), got, [Slice(0, 3, B500)], cost((80, 50, 0)))
    assert got.stats["switch_layer"] is None


def test_gpu_default_period_and_its_transfers_count_as_run_time():
    # at 200 MHz: inputs in by 0.5, layers start at 0.5, 9.5, 18.5, 27.5: all before 50 ms
    check(board(), ondemand(board(), "gpu"), [Slice(0, 3, G200)], cost((36, 300, 1.0)))
    assert ondemand(board(), "gpu").stats["sampling_ms"] == 50.0
    # 10 ms: layer 2 starts at 18.5; the cut is a slice boundary and pays its transfers
    got = ondemand(board(), "gpu", 10.0)
    check(board(), got, [Slice(0, 1, G200), Slice(2, 3, G600)], cost((18, 300, 1.0), (6, 1500, 1.0)))


def test_a_device_without_dvfs_gives_the_performance_plan():
    perf = single_device(board(), "npu")
    got = single_device(board(), "npu", "ondemand", 1000.0)
    assert perf.slices == (Slice(0, 1, NPU), Slice(2, 2, G600), Slice(3, 3, NPU))   # layer 2 falls back
    assert (got.slices, got.latency_ms, got.energy_mj) == (perf.slices, perf.latency_ms, perf.energy_mj)
    assert got.stats == {"governor": "ondemand", "sampling_ms": 1000.0, "dvfs": False}


def test_fallback_slices_stay_at_max_frequency_and_do_not_advance_the_clock():
    legal = np.ones((4, 6), dtype=bool)
    legal[1, [B500, B1000, B2000]] = False        # layer 1 runs on the npu
    # big: layer 0 at 0-16 ms; the npu's 1 ms does not count; layer 2 starts at 16, layer 3 at 24
    p = board(legal=legal)
    got = ondemand(p, "big")
    check(p, got, [Slice(0, 0, B500), Slice(1, 1, NPU), Slice(2, 2, B500), Slice(3, 3, B2000)],
          cost((16 + 8, 50, 0), (1, 6000, 0), (8, 2000, 0)))


def test_a_layer_the_lowest_state_cannot_run_brings_the_switch_forward():
    legal = np.ones((4, 6), dtype=bool)
    legal[1, B500] = False                      # no built-in target does this; the plan stays legal
    p = board(legal=legal)
    got = ondemand(p, "big")
    check(p, got, [Slice(0, 0, B500), Slice(1, 3, B2000)], cost((16, 50, 0), (16, 2000, 0)))
    assert got.stats["switch_layer"] == 1


def test_memory_slices_are_kept_and_the_switch_can_fall_inside_a_later_one():
    p = board(params=[40, 40, 40, 40], capacity=[100, 100, 100, np.inf, np.inf, np.inf])
    assert single_device(p, "big").slices == (Slice(0, 1, B2000), Slice(2, 3, B2000))
    got = ondemand(p, "big", 45.0)              # layer 2 starts at 40, layer 3 at 48
    check(p, got, [Slice(0, 1, B500), Slice(2, 2, B500), Slice(3, 3, B2000)], cost((48, 50, 0), (8, 2000, 0)))


def test_default_governor_is_unchanged_and_options_are_checked():
    got = plan(board(), Objective("energy"), "single:big")
    assert got.slices == (Slice(0, 3, B2000),) and got.stats == {}
    assert got.options == {"device": "big", "governor": "performance", "sampling_ms": 0.0}
    od = plan(board(), Objective("energy"), "single:big", {"governor": "ondemand", "sampling_ms": "10"})
    assert od.slices == (Slice(0, 0, B500), Slice(1, 3, B2000)) and od.options["sampling_ms"] == 10.0
    for opts, needle in [({"governor": "powersave"}, "expected one of performance, ondemand"),
                         ({"governor": "ondemand", "sampling_ms": "-1"}, "sampling_ms must be"),
                         ({"governor": "ondemand", "sampling_ms": "inf"}, "sampling_ms must be"),
                         ({"sampling_ms": "5"}, "applies to governor=ondemand only")]:
        with pytest.raises(UsageError, match=needle):
            plan(board(), Objective("energy"), "single:big", opts)
    with pytest.raises(UsageError, match="unknown governor 'powersave'"):
        single_device(board(), "big", "powersave")


# ---- autoscale-static ----------------------------------------------------------------------

#: every candidate by hand: (latency ms, energy mJ) of the device-preferred plan at each state
CANDIDATES = {B500: cost((80, 50, 0)), B1000: cost((40, 600, 0)), B2000: cost((20, 2000, 0)),
              G200: cost((36, 300, 1.0)), G600: cost((12, 1500, 1.0)),
              NPU: cost((3, 6000, 0), (3, 1500, 1.0))}     # layer 2 on the gpu at 600 MHz


def test_candidates_are_the_device_preferred_plans_at_each_state():
    p = board()
    for s, (t, e) in CANDIDATES.items():
        c = device_preferred(p, s)
        assert close(c.latency_ms, t) and close(c.energy_mj, e), (s, c)
    assert device_preferred(p, B1000).slices == (Slice(0, 3, B1000),)
    assert [round(v[0], 6) for v in CANDIDATES.values()] == [80, 40, 20, 37, 13, 7]
    assert [round(v[1], 6) for v in CANDIDATES.values()] == [12, 28, 42, 14.5, 19.3, 23.2]


@pytest.mark.parametrize("metric, deadline, state, meeting", [
    ("energy", None, B500, 6),       # the frugal big@500
    ("energy", 40.0, G200, 5),       # big@500 misses; gpu@200 (14.5 mJ) beats big@1000 (28)
    ("energy", 30.0, G600, 3),       # only big@2000, gpu@600, npu meet it
    ("energy", 10.0, NPU, 1),
    ("latency", None, NPU, 6),
    ("edp", 40.0, NPU, 5),           # 7 ms x 23.2 mJ = 162.4 beats gpu@600's 250.9
])
def test_autoscale_picks_the_best_state_that_meets_the_deadline(metric, deadline, state, meeting):
    objective = Objective(metric, deadline_ms=deadline)
    best = min((s for s, (t, _) in CANDIDATES.items() if deadline is None or t <= deadline),
               key=lambda s: objective.key(*CANDIDATES[s]))
    assert best == state
    got = plan(board(), objective, "autoscale-static")
    assert got.slices == device_preferred(board(), state).slices and got.feasible
    assert got.stats == {"state": board().states.label(state), "candidates": 6, "meeting_deadline": meeting}


def test_autoscale_without_a_feasible_state_returns_the_fastest_and_the_policy_raises():
    objective = Objective("energy", deadline_ms=5.0)        # the npu's 7 ms is the fastest
    got = autoscale_static(board(), objective)
    assert got.slices == device_preferred(board(), NPU).slices
    assert got.stats == {"state": "npu", "candidates": 6, "meeting_deadline": 0}
    with pytest.raises(InfeasibleError, match="misses the 5 ms deadline by 2 ms"):
        plan(board(), objective, "autoscale-static")
    kept = plan(board(), objective, "autoscale-static", allow_infeasible=True)
    assert not kept.feasible and kept.slices == got.slices


def test_autoscale_skips_states_that_cannot_plan_and_raises_when_none_can():
    legal = np.ones((4, 6), dtype=bool)
    legal[2, [B2000, G600, NPU]] = False        # layer 2 only on slow states: no fallback exists
    got = autoscale_static(board(legal=legal), Objective("latency"))
    assert got.stats["candidates"] == 3 and got.stats["state"] == "gpu@200"
    legal[2] = False                            # layer 2 nowhere: no state gives a plan
    with pytest.raises(InfeasibleError, match=r"layer 2 \(l2\) is legal on no device"):
        autoscale_static(board(legal=legal), Objective("latency"))


# ---- through hetcc compile -----------------------------------------------------------------

@pytest.fixture
def chain(tmp_path, write_text_model):
    return str(write_text_model(CHAIN, tmp_path / "chain.onnx"))


def compile_json(capsys, chain, *flags):
    code, out, err = run(capsys, "compile", chain, "--target", "hikey970", "--json", *flags)
    assert code == 0, err
    return json.loads(out)


def test_cli_single_with_the_ondemand_governor(capsys, chain):
    perf = compile_json(capsys, chain, "--planner", "single:big")
    od = compile_json(capsys, chain, "--planner", "single:big", "--planner-option", "governor=ondemand")
    assert od["options"] == {"device": "big", "governor": "ondemand", "sampling_ms": 0.0}
    assert od["stats"]["sampling_ms"] == 20.0 and od["stats"]["switch_layer"] is None   # a sub-ms model
    low = od["stats"]["low_state"]
    assert [f"{s['device']}@{s['frequency_mhz']:g}" for s in od["slices"]] == [low]
    assert od["latency_ms"] > perf["latency_ms"]
    half = od["latency_ms"] / 2                 # the sample point half way through the slow run
    quick = compile_json(capsys, chain, "--planner", "single:big", "--planner-option", "governor=ondemand",
                         "--planner-option", f"sampling_ms={half!r}")
    slow, fast = quick["slices"]
    assert f"big@{slow['frequency_mhz']:g}" == low and fast["frequency_mhz"] == perf["slices"][0]["frequency_mhz"]
    assert fast["first_layer"] == quick["stats"]["switch_layer"] == slow["last_layer"] + 1
    code, _, err = run(capsys, "compile", chain, "--target", "hikey970", "--planner", "single:big",
                       "--planner-option", "sampling_ms=5")
    assert code == 2 and "applies to governor=ondemand only" in one_line(err)


def test_cli_autoscale_static(capsys, chain, tmp_path):
    s = compile_json(capsys, chain, "--planner", "autoscale-static", "--objective", "energy", "--deadline", "medium")
    assert s["feasible"] and s["latency_ms"] <= s["deadline_ms"] * (1 + 1e-9)
    assert len({(x["device"], x["frequency_mhz"]) for x in s["slices"]}) == 1
    assert s["stats"]["meeting_deadline"] >= 1 and s["stats"]["candidates"] > 1
    fastest = compile_json(capsys, chain, "--planner", "autoscale-static", "--objective", "latency")
    code, _, err = run(capsys, "compile", chain, "--target", "hikey970", "--planner", "autoscale-static",
                       "--objective", "energy", "--deadline", "0.001ms", "-o", str(tmp_path / "o"))
    assert code == 3 and "misses the 0.001 ms deadline" in one_line(err) and not (tmp_path / "o").exists()
    missed = compile_json(capsys, chain, "--planner", "autoscale-static", "--objective", "energy",
                          "--deadline", "0.001ms", "--allow-infeasible")
    assert not missed["feasible"] and missed["stats"]["meeting_deadline"] == 0
    assert missed["latency_ms"] == fastest["latency_ms"] and missed["slices"] == fastest["slices"]


def test_cli_lists_the_new_options_and_planner(capsys):
    code, out, _ = run(capsys, "planners", "--json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert code == 0 and rows["autoscale-static"]["constraints"] == ["deadline"]
    opts = {o["name"]: o for o in rows["single:<device>"]["options"]}
    assert opts["governor"]["type"] == "performance|ondemand" and opts["governor"]["default"] == "performance"
    assert opts["sampling_ms"]["default"] == 0.0 and "20" in opts["sampling_ms"]["doc"]
