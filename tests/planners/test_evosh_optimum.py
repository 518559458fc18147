"""``evosh search=optimum`` over the mapping space against brute force over EvoSh's own space.

EvoSh's configurations are block -> CPU/GPU mappings whose consecutive same-device blocks form one
slice; the optimum must be the fastest of those within the cap (ties to the more capable mapping),
never a plan that cuts a same-device run in two to dilute its average power with transfers.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from hetcc.core.errors import InfeasibleError
from hetcc.planners import Objective, PlanningProblem, StateTable
from hetcc.planners.evosh import optimum
from hetcc.planners.evosh.space import TIE_RTOL, ConfigSpace
from hetcc.planners.exact import exact
from hetcc.planners.hardware import capability


def problem(lat, pw, *, t_in=None, t_out=None, e_in=None, e_out=None, legal=None, base_power_mw=0.0,
            devices=("cpu0", "gpu0"), kinds=("cpu", "gpu"), freqs=(1000.0, 1000.0)) -> PlanningProblem:
    lat = np.asarray(lat, dtype=np.float64)
    L, S = lat.shape
    z = np.zeros((L, S))
    arr = lambda x: z.copy() if x is None else np.asarray(x, dtype=np.float64)     # noqa: E731
    return PlanningProblem(
        latency_ms=lat, power_mw=np.asarray(pw, dtype=np.float64), transfer_in_ms=arr(t_in),
        transfer_out_ms=arr(t_out), transfer_in_mj=arr(e_in), transfer_out_mj=arr(e_out),
        legal=np.ones((L, S), dtype=bool) if legal is None else np.asarray(legal, dtype=bool),
        param_bytes=np.zeros(L, dtype=np.int64), capacity_bytes=np.full(S, np.inf),
        base_power_mw=float(base_power_mw),
        states=StateTable(device=tuple(devices), kind=tuple(kinds), freq_mhz=np.asarray(freqs, dtype=np.float64),
                          is_fmax=np.ones(S, dtype=bool)),
        layer_names=tuple(f"l{i}" for i in range(L)))


def every_mapping(space: ConfigSpace) -> dict:
    """bits -> (latency, average power) of all 2^N mappings (``space.evaluate``)."""
    return {bits: space.evaluate(bits)[:2] for bits in itertools.product((0, 1), repeat=len(space.starts))}


def brute_force(space: ConfigSpace, cap: float, mappings: dict | None = None):
    """(mapping, latency) of the fastest mapping within the cap by trying all 2^N (``mappings``:
    ``every_mapping(space)`` when the caller has it); ties within TIE_RTOL to the larger
    ``capability``; (None, inf) when none is within the cap."""
    found = []
    for bits, (t, p) in (mappings or every_mapping(space)).items():
        if np.isfinite(t) and p <= cap * (1 + 1e-9):
            found.append((t, bits))
    if not found:
        return None, np.inf
    t = min(x for x, _ in found)
    best = max((b for x, b in found if x <= t + TIE_RTOL * max(1.0, t)), key=capability)
    return best, next(x for x, b in found if b == best)


def random_problem(rng: np.random.Generator) -> PlanningProblem:
    """3-10 layers; 2-3 states (a CPU at one or two DVFS levels, a GPU); random costs, transfers
    that are long and cheap (what makes splitting a run dilute power), some illegal cells."""
    L = int(rng.integers(3, 11))
    two_cpu = bool(rng.integers(0, 2))
    devices = ("cpu0", "cpu0", "gpu0") if two_cpu else ("cpu0", "gpu0")
    kinds = ("cpu", "cpu", "gpu") if two_cpu else ("cpu", "gpu")
    freqs = (800.0, 1600.0, 1000.0) if two_cpu else (1600.0, 1000.0)
    S = len(devices)
    speed = np.array([0.5, 1.0, 4.0] if two_cpu else [1.0, 4.0])
    work = rng.uniform(1.0, 20.0, size=(L, 1))
    lat = work / speed * rng.uniform(0.5, 1.5, size=(L, S))
    pw = np.array([600.0, 1200.0, 5000.0] if two_cpu else [1200.0, 5000.0]) * rng.uniform(0.6, 1.4, size=(L, S))
    scale = float(rng.choice([0.0, 0.3, 3.0]))
    t_in, t_out = (rng.uniform(0.0, scale, size=(L, S)) for _ in range(2))
    e_in, e_out = (t * rng.uniform(0.0, 0.3) for t in (t_in, t_out))      # mJ: cheap transfers
    legal = rng.random((L, S)) > float(rng.choice([0.0, 0.0, 0.1]))
    return problem(lat, pw, t_in=t_in, t_out=t_out, e_in=e_in, e_out=e_out, legal=legal,
                   base_power_mw=float(rng.choice([0.0, 200.0])), devices=devices, kinds=kinds, freqs=freqs)


#: 40 random problems x 3 block counts; the fast loop (``-m "not slow"``) checks the first 10
CASES = [pytest.param(seed, blocks, marks=[pytest.mark.slow] if seed >= 10 else [])
         for seed in range(40) for blocks in (3, 5, 7)]


@pytest.mark.parametrize("seed,blocks", CASES)
def test_optimum_equals_brute_force_over_evoshs_space(seed, blocks):
    rng = np.random.default_rng(seed)
    prob = random_problem(rng)
    space = ConfigSpace.build(prob, "mapping", blocks=min(blocks, prob.num_layers))
    mappings = every_mapping(space)
    powers = sorted(p for t, p in mappings.values() if np.isfinite(t))
    caps = [np.inf] + ([powers[0] - 1.0, powers[len(powers) // 3], powers[len(powers) // 2],
                        float(np.mean(powers)), powers[-1]] if powers else [1000.0])
    for cap in caps:
        want, t = brute_force(space, cap, mappings)
        if want is None:
            with pytest.raises(InfeasibleError, match="no block mapping"):
                optimum(space, cap)
            continue
        plan = optimum(space, cap)
        assert plan.stats["config"]["mapping"] == "".join("cg"[b] for b in want), (seed, blocks, cap)
        assert plan.latency_ms == pytest.approx(t, rel=1e-12)
        assert plan.average_power_mw <= cap * (1 + 1e-9)
        assert space.exhaustive(cap)[0] == want        # the enumeration planner agrees too


def test_a_same_device_run_is_never_split_to_dilute_power():
    """Two GPU layers at 6000 mW with 2 ms transfers that cost no energy: all-GPU is one slice,
    14 ms at 4286 mW, over a 4000 mW cap; cutting it in two (18 ms at 3333 mW) is no EvoSh
    mapping. The optimum is a mixed mapping, 59 ms; the block-level exact would split the run."""
    prob = problem([[50.0, 5.0], [50.0, 5.0]], [[1000.0, 6000.0], [1000.0, 6000.0]],
                   t_in=[[0.0, 2.0], [0.0, 2.0]], t_out=[[0.0, 2.0], [0.0, 2.0]])
    space = ConfigSpace.build(prob, "mapping", blocks=2)
    t_gg, p_gg, _ = space.evaluate((1, 1))
    assert (t_gg, round(p_gg)) == (14.0, 4286)
    split = exact(space.block_problem(), Objective("latency", power_cap_mw=4000.0))
    assert len(split.slices) == 2 and split.latency_ms == pytest.approx(18.0)   # what no mapping is
    plan = optimum(space, 4000.0)
    assert plan.latency_ms == pytest.approx(59.0) and plan.average_power_mw <= 4000.0
    assert plan.stats["config"]["mapping"] == "gc"      # tie with cg: the earlier GPU block wins
    assert brute_force(space, 4000.0)[0] == (1, 0)
    assert len(plan.slices) == 2 and {prob.states.device[s.state] for s in plan.slices} == {"cpu0", "gpu0"}


def test_no_mapping_within_the_cap_names_the_least_power():
    prob = problem([[50.0, 5.0], [50.0, 5.0]], [[1000.0, 6000.0], [1000.0, 6000.0]])
    space = ConfigSpace.build(prob, "mapping", blocks=2)
    with pytest.raises(InfeasibleError, match=r"lowest average power of any mapping is 1000 mW; relax --power-cap"):
        optimum(space, 900.0)
