"""dqn (HERTI): the environment's transitions, masks and reward; a short seeded training run."""
from __future__ import annotations

import copy

import numpy as np
import pytest

from extras import needs
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = [pytest.mark.learn, pytest.mark.slow, pytest.mark.timeout(900)]
needs("learn", "gymnasium", "torchrl")

from hetcc.core.errors import InfeasibleError, UsageError  # noqa: E402
from hetcc.planners import Objective, PlanContext, Slice, plan  # noqa: E402
from hetcc.planners.dqn.env import CHANGES, NK, SlicingEnv  # noqa: E402
from planner_cases import make_problem, problems  # noqa: E402

SPLIT, MERGE, DEV_NEXT, DEV_PREV, FREQ_UP, FREQ_DOWN = range(NK)


def board(params=(0, 0, 0, 0), capacity=None, legal=None):
    """4 layers; big at 500/1000 MHz, gpu at 200/400/600 MHz, an npu without DVFS."""
    devices = ("big", "big", "gpu", "gpu", "gpu", "npu")
    freqs = (500.0, 1000.0, 200.0, 400.0, 600.0, 0.0)
    base = np.array([4.0, 2.0, 3.0, 1.5, 1.0, 0.5])
    lat = np.tile(base, (4, 1)) * np.array([[1.0], [2.0], [1.0], [0.5]])
    power = np.tile([300.0, 1000.0, 200.0, 500.0, 900.0, 400.0], (4, 1))
    return make_problem(lat, power, devices=devices, freqs=freqs, params=params, capacity=capacity,
                        legal=legal, fmax=[False, True, False, False, True, True], t_in=np.full((4, 6), 0.1),
                        t_out=np.full((4, 6), 0.1), names=tuple(f"L{i}" for i in range(4)))


def env_at(problem, slices, objective=Objective("energy")):
    env = SlicingEnv(problem, objective)
    env.reset(options={"plan": problem.evaluate(slices)})
    return env


def brute_mask(env):
    """Validity of every action by applying it to a copy: legal and a different state."""
    out = np.zeros(env.action_space.n, dtype=bool)
    before = env.slices()
    for a in range(env.action_space.n):
        l, k = divmod(a, NK)
        j = int(np.searchsorted(env.first, l, side="right") - 1)
        if (k == SPLIT and env.first[j] == l) or (k == MERGE and j == 0):
            continue            # structurally impossible (not a change of state)
        trial = copy.deepcopy(env)
        if k >= DEV_NEXT and trial.targets()[j, k - 2] < 0:
            continue
        trial.apply(a)
        after = trial.slices()
        if after == before:
            continue
        try:
            env.problem.check_slices(after)
        except ValueError:
            continue
        out[a] = True
    return out


def test_split_and_merge_at_the_ends():
    env = env_at(board(), [Slice(0, 3, 1)])
    mask = env.action_mask().reshape(4, NK)
    assert not mask[0, SPLIT] and mask[1:, SPLIT].all()      # layer 0 always starts a slice
    assert not mask[:, MERGE].any()                           # no previous slice to merge into
    env.step(2 * NK + SPLIT)
    assert env.slices() == (Slice(0, 1, 1), Slice(2, 3, 1))
    mask = env.action_mask().reshape(4, NK)
    assert not mask[2, SPLIT] and mask[3, SPLIT]
    assert mask[2:, MERGE].all() and not mask[:2, MERGE].any()
    env.step(3 * NK + MERGE)                                  # via any layer of the slice
    assert env.slices() == (Slice(0, 3, 1),)


def test_frequency_bounds_and_the_npu_without_dvfs():
    env = env_at(board(), [Slice(0, 0, 0), Slice(1, 1, 4), Slice(2, 3, 5)])
    mask = env.action_mask().reshape(4, NK)
    assert mask[0, FREQ_UP] and not mask[0, FREQ_DOWN]        # big at its lowest level
    assert not mask[1, FREQ_UP] and mask[1, FREQ_DOWN]        # gpu at its top level
    assert not mask[2:, FREQ_UP].any() and not mask[2:, FREQ_DOWN].any()   # npu: one state
    env.step(1 * NK + FREQ_DOWN)
    assert env.slices()[1] == Slice(1, 1, 3)
    before = env.slices()
    _, _, _, _, info = env.step(2 * NK + FREQ_UP)                  # invalid: no change, flagged
    assert info["invalid_action"] and env.slices() == before


def test_device_moves_are_cyclic_and_keep_the_relative_level():
    env = env_at(board(), [Slice(0, 3, 1)])                   # big at its top level
    env.step(DEV_NEXT)
    assert env.slices() == (Slice(0, 3, 4),)                  # gpu at its top level
    env.step(DEV_NEXT)
    assert env.slices() == (Slice(0, 3, 5),)                  # npu
    env.step(DEV_NEXT)
    assert env.slices() == (Slice(0, 3, 1),)                  # back to big: the list is cyclic
    env.step(DEV_PREV)
    assert env.slices() == (Slice(0, 3, 5),)
    env = env_at(board(), [Slice(0, 3, 0)])                   # big at its lowest level
    env.step(DEV_NEXT)
    assert env.slices() == (Slice(0, 3, 2),)                  # gpu at its lowest level


def test_capacity_and_illegal_layers_close_actions():
    legal = np.ones((4, 6), dtype=bool)
    legal[3, 5] = False                                       # the npu cannot run layer 3
    p = board(params=(40, 40, 40, 40), capacity=[np.inf] * 2 + [np.inf] * 3 + [100.0], legal=legal)
    env = env_at(p, [Slice(0, 1, 5), Slice(2, 2, 5), Slice(3, 3, 1)])
    mask = env.action_mask().reshape(4, NK)
    assert not mask[2, MERGE]                                 # 120 bytes > the npu's 100
    assert not mask[3, DEV_PREV]                              # big -> npu: layer 3 illegal there
    assert mask[3, DEV_NEXT]                                  # big -> gpu is fine
    assert (env.action_mask() == brute_mask(env)).all()


@settings(max_examples=25, deadline=None)
@given(problems(max_layers=5, max_states=4, structured=True, allow_infeasible=False), st.integers(0, 10_000))
def test_random_walks_stay_legal_and_the_mask_is_exact(problem, seed):
    try:
        env = SlicingEnv(problem, Objective("energy"))
    except InfeasibleError:
        return
    env.reset()
    rng = np.random.default_rng(seed)
    for _ in range(30):
        mask = env.action_mask()
        assert (mask == brute_mask(env)).all()
        if not mask.any():
            break
        env.step(int(rng.choice(np.flatnonzero(mask))))
        problem.check_slices(env.slices())                    # never an illegal state
        T, E = env.totals()
        p = problem.evaluate(env.slices())
        assert T == pytest.approx(p.latency_ms) and E == pytest.approx(p.energy_mj)


def test_reward_is_minus_sqrt_of_the_normalised_cost_or_the_penalty():
    p = board()
    fast = plan(p, Objective("latency"), "dp")
    ref = fast.energy_mj
    env = env_at(p, [Slice(0, 3, 0)], Objective("energy", deadline_ms=100.0))
    r, T, E, ok = env.reward()
    assert ok and r == pytest.approx(-np.sqrt(E / ref))
    env = SlicingEnv(p, Objective("energy", deadline_ms=1.0))        # nothing meets 1 ms
    env.reset()
    assert env.reward()[0] == -100.0
    edp = SlicingEnv(p, Objective("edp", deadline_ms=100.0))
    edp.reset()
    assert edp.reward()[0] == pytest.approx(-1.0)                      # the initial state is the reference


def test_observation_and_gymnasium_checker():
    from gymnasium.utils.env_checker import check_env

    env = env_at(board(), [Slice(0, 1, 0), Slice(2, 3, 5)])
    obs = env.observation().reshape(4, 3)
    assert obs[:, 0].tolist() == [1, 0, 1, 0]
    assert obs[:, 1].tolist() == pytest.approx([0, 0, 1, 1])         # big = 0, npu = last
    assert obs[:, 2].tolist() == pytest.approx([0, 0, 0, 0])
    assert CHANGES == ("split", "merge", "dev_next", "dev_prev", "freq_up", "freq_down")
    check_env(SlicingEnv(board(), Objective("energy")), skip_render_check=True)


def test_short_seeded_training_reaches_the_optimum_and_is_reproducible():
    legal = np.ones((4, 6), dtype=bool)
    legal[1:3, 5] = False                                               # the npu cannot run layers 1-2
    p = board(legal=legal)
    fast = plan(p, Objective("latency"), "exact").latency_ms
    lean = plan(p, Objective("energy"), "exact").latency_ms
    objective = Objective("energy", deadline_ms=(fast + lean) / 2)      # HERTI's medium deadline
    best = plan(p, objective, "exact")
    start = SlicingEnv(p, objective).init_plan
    assert start.energy_mj > best.energy_mj * 1.1                       # there is something to learn
    opts = {"steps": 800, "depth": 2, "width": 64, "warmup": 64, "polish": False, "mosaic_e": False}  # the walk alone
    a = plan(p, objective, "dqn", opts, PlanContext(seed=0))
    assert a.latency_ms <= objective.deadline_ms * (1 + 1e-9)
    assert a.energy_mj == pytest.approx(best.energy_mj, rel=1e-9)
    assert a.stats["explored"] > 1 and a.stats["measured_ms"] > 0 and a.stats["steps"] == 800
    assert a.stats["best_step"] > 0 and a.stats["polish_moves"] == 0
    b = plan(p, objective, "dqn", opts, PlanContext(seed=0))
    assert b.slices == a.slices


def test_budget_patience_and_bad_options():
    from hetcc.planners import Budget

    p = board()
    r = plan(p, Objective("energy"), "dqn", {"steps": 1000, "width": 16, "depth": 1},
             PlanContext(seed=1, budget=Budget(steps=40)))
    assert r.stats["steps"] == 40 and r.stats["stopped"] == "budget"
    r = plan(p, Objective("energy"), "dqn", {"steps": 1000, "width": 16, "depth": 1, "patience": 30}, PlanContext(1))
    assert r.stats["stopped"] == "patience" and r.stats["steps"] < 1000
    with pytest.raises(UsageError, match="eps_end"):
        plan(p, Objective("energy"), "dqn", {"eps_end": 0.5, "eps_start": 0.1})
    with pytest.raises(UsageError, match="no option 'epsilon'"):
        plan(p, Objective("energy"), "dqn", {"epsilon": 0.5})


def test_episodes_restart_from_the_elite_pool(monkeypatch):
    """elite=1 restarts every episode at the best state so far (Alg. 1's s_best); elite=K at one
    of the K best distinct states met, each of which meets the limits."""
    from hetcc.planners.dqn import agent

    p = board()
    fast = plan(p, Objective("latency"), "exact").latency_ms
    # a quarter above the fastest plan: room for several plans that meet it (the least-energy
    # plan is no guide here: on this board plans of equal energy differ in latency)
    objective = Objective("energy", deadline_ms=1.25 * fast)
    starts: list = []
    real_reset = agent.SlicingEnv.reset

    def spy(self, *, seed=None, options=None):
        if options and "plan" in options:
            starts.append(options["plan"])
        return real_reset(self, seed=seed, options=options)

    monkeypatch.setattr(agent.SlicingEnv, "reset", spy)
    opts = {"steps": 600, "depth": 1, "width": 16, "warmup": 32, "episode": 10}
    one = plan(p, objective, "dqn", {**opts, "elite": 1}, PlanContext(seed=0))
    best_only = {s.slices for s in starts}
    assert len(starts) == 60 and len(best_only) <= one.stats["improvements"] + 1
    starts.clear()
    plan(p, objective, "dqn", {**opts, "elite": 8}, PlanContext(seed=0))
    assert len(starts) == 60 and len({s.slices for s in starts}) > len(best_only)
    assert all(s.latency_ms <= objective.deadline_ms * (1 + 1e-9) for s in starts)
    with pytest.raises(UsageError, match="elite"):
        plan(p, Objective("energy"), "dqn", {"elite": 0})


@settings(max_examples=25, deadline=None)
@given(problems(max_layers=5, max_states=4, structured=True, allow_infeasible=False), st.integers(0, 10_000),
       st.sampled_from([None, 0.5, 0.9]))
def test_descent_ends_at_a_local_optimum_that_meets_the_limits(problem, seed, where):
    """From a random walk's state, ``descend`` never worsens a state that met the limits and
    stops where no single valid action, nor any of its compound moves, reaches a better one that
    meets them (checked by trying every action on a copy and pricing every move's plan)."""
    try:
        fast = plan(problem, Objective("latency"), "exact").latency_ms
        lean = plan(problem, Objective("energy"), "exact").latency_ms
    except InfeasibleError:
        return
    objective = Objective("energy", deadline_ms=None if where is None else fast + where * (lean - fast))
    env = SlicingEnv(problem, objective)
    env.reset()
    rng = np.random.default_rng(seed)
    for _ in range(int(rng.integers(0, 8))):
        mask = env.action_mask()
        if mask.any():
            env.step(int(rng.choice(np.flatnonzero(mask))))
    T, E = env.totals()
    before = objective.value(T, E) if objective.feasible(T, E) else np.inf
    env.descend()
    T, E = env.totals()
    problem.check_slices(env.slices())
    if np.isfinite(before):
        assert objective.feasible(T, E) and objective.value(T, E) <= before * (1 + 1e-12)
    if not objective.feasible(T, E):
        return                        # nothing met the limits: nothing to descend from
    here = objective.value(T, E)
    for a in np.flatnonzero(env.action_mask()):
        trial = copy.deepcopy(env)
        trial.apply(int(a))
        t, e = trial.totals()
        assert not (objective.feasible(t, e) and objective.value(t, e) < here * (1 - 1e-9))
    # nor any of its compound moves, each priced by Plan.evaluate (not descend's own sums)
    from hetcc.planners.dqn.env import _moves

    slices = [(s.first, s.last, s.state) for s in env.slices()]
    for j0, j1, new in _moves(slices):
        for x in range(problem.num_states):
            cand = slices[:j0] + [(f, l, x if st is None else st) for f, l, st in new] + slices[j1:]
            try:
                problem.check_slices(tuple(Slice(*c) for c in cand))
            except ValueError:
                continue
            q = problem.evaluate([Slice(*c) for c in cand])
            assert not (objective.feasible(q.latency_ms, q.energy_mj)
                        and objective.value(q.latency_ms, q.energy_mj) < here * (1 - 1e-9))


def test_descent_moves_a_boundary_anywhere_within_its_two_slices():
    """A boundary move may cross the whole pair: on the fitted HiKey 970, MnasNet-1.3's energy
    optimum at the medium deadline lay one 5-layer boundary move (with a re-pick) from the plan
    the walk kept, and moves of at most 3 layers left it 2.76% above."""
    from hetcc.planners.dqn.env import _moves

    slices = [(0, 7, 1), (8, 9, 2), (10, 10, 0)]
    moved = {}
    for j0, j1, new in _moves(slices):
        if j1 - j0 == 2 and len(new) == 2:
            moved.setdefault(j0, set()).add(new[0][1])
    assert moved[0] == set(range(0, 9)) - {7}       # the cut after layer 7: anywhere from 0 to 8
    assert moved[1] == {8}                          # the cut after layer 9: to 8 (neither slice empty)
    for j0, j1, new in _moves(slices):
        assert all(f <= l for f, l, _ in new) and new[0][0] == slices[j0][0] and new[-1][1] == slices[j1 - 1][1]


def test_polish_improves_a_short_walk_and_can_be_turned_off():
    """A walk too short to find the optimum: the polished plan is at least as good as the walk's
    best state (the same walk: same seed), and with polish=False the walk's best is returned as is."""
    legal = np.ones((4, 6), dtype=bool)
    legal[1:3, 5] = False
    p = board(legal=legal)
    fast = plan(p, Objective("latency"), "exact").latency_ms
    lean = plan(p, Objective("energy"), "exact").latency_ms
    objective = Objective("energy", deadline_ms=(fast + lean) / 2)
    # mosaic_e off: its lifted plan would hand the walk the optimum here, leaving polish nothing to do
    opts = {"steps": 5, "depth": 1, "width": 16, "warmup": 1000, "mosaic_e": False}
    raw = plan(p, objective, "dqn", {**opts, "polish": False}, PlanContext(seed=1))
    polished = plan(p, objective, "dqn", opts, PlanContext(seed=1))
    assert raw.stats["polish_moves"] == 0
    assert polished.stats["polish_moves"] > 0
    assert polished.energy_mj < raw.energy_mj and polished.latency_ms <= objective.deadline_ms * (1 + 1e-9)


def test_mosaic_e_joins_the_start_when_it_meets_the_limits():
    """At a deadline MOSAIC-E (the dp energy plan) meets, dqn returns a plan at least as good as
    it even after one step; with mosaic_e=False a one-step walk from MOSAIC-P does not reach it."""
    legal = np.ones((4, 6), dtype=bool)
    legal[1:3, 5] = False
    p = board(legal=legal)
    lean = plan(p, Objective("energy"), "dp")
    objective = Objective("energy", deadline_ms=lean.latency_ms)
    opts = {"steps": 1, "depth": 1, "width": 16, "warmup": 1000, "polish": False}
    on = plan(p, objective, "dqn", opts, PlanContext(seed=0))
    off = plan(p, objective, "dqn", {**opts, "mosaic_e": False}, PlanContext(seed=0))
    assert on.energy_mj <= lean.energy_mj * (1 + 1e-12) and on.latency_ms <= objective.deadline_ms * (1 + 1e-9)
    assert off.energy_mj > lean.energy_mj * 1.01
    tight = Objective("energy", deadline_ms=plan(p, Objective("latency"), "dp").latency_ms)
    assert plan(p, tight, "dqn", opts, PlanContext(seed=0)).energy_mj > lean.energy_mj   # MOSAIC-E misses it


def test_lift_takes_mosaic_e_to_a_deadline_it_misses_keeping_its_slices():
    """SlicingEnv.lift: from MOSAIC-E at a deadline it misses, re-picks slice states (the cuts
    stay) until the deadline is met; dqn offers the lifted plan, so one step is never worse than
    it nor than the walk from MOSAIC-P alone, and the lifted plan is never cheaper than the optimum."""
    legal = np.ones((4, 6), dtype=bool)
    legal[1:3, 5] = False
    p = board(legal=legal)
    lean = plan(p, Objective("energy"), "dp")
    fast = plan(p, Objective("latency"), "dp")
    objective = Objective("energy", deadline_ms=(fast.latency_ms + lean.latency_ms) / 2)
    assert lean.latency_ms > objective.deadline_ms                     # MOSAIC-E misses it
    env = SlicingEnv(p, objective)
    env.set_plan(lean)
    assert env.lift()
    T, E = env.totals()
    assert T <= objective.deadline_ms * (1 + 1e-9)
    assert [(s.first, s.last) for s in env.slices()] == [(s.first, s.last) for s in lean.slices]
    assert E >= plan(p, objective, "exact").energy_mj * (1 - 1e-9)
    opts = {"steps": 1, "depth": 1, "width": 16, "warmup": 1000, "polish": False}
    on = plan(p, objective, "dqn", opts, PlanContext(seed=0))
    off = plan(p, objective, "dqn", {**opts, "mosaic_e": False}, PlanContext(seed=0))
    assert on.latency_ms <= objective.deadline_ms * (1 + 1e-9) and on.energy_mj <= E * (1 + 1e-12)
    assert on.energy_mj <= off.energy_mj * (1 + 1e-12)
    # a deadline no state meets: lift says so and leaves a state that still misses it
    env.set_plan(lean)
    hopeless = SlicingEnv(p, Objective("energy", deadline_ms=fast.latency_ms * 0.5))
    hopeless.set_plan(lean)
    assert not hopeless.lift()
    assert hopeless.totals()[0] > fast.latency_ms * 0.5
