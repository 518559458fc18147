"""HERTI's Alg. 1 on TorchRL: epsilon-greedy over valid actions, replay memory, minibatches,
a target network (Double-DQN targets by default), returning the best state seen.

TorchRL does the learning parts: ``MLP`` (the Q-network of Fig. 3: ``depth`` hidden layers of
``width`` ReLU units), ``QValueActor`` with the action mask (the greedy action is a masked argmax,
and so is the next-state action of the double-DQN target), ``DQNLoss`` with its TD(0) value
estimator (gamma), ``HardUpdate`` of the target network, and a ``ReplayBuffer`` over
``LazyTensorStorage``. Random actions are drawn uniformly among the valid ones with the
planner's seeded generator; torch is seeded from the same seed, so a seed gives one plan.

Beyond Alg. 1 (one walk): every ``episode`` steps the walk restarts from a state that met the
limits, drawn uniformly from the ``elite`` best distinct ones met so far (``elite=1``: always the
best, s_best). With the best alone, short deadlines trapped the walk: on MnasNet-1.0 it stayed
2.37% above the optimum for every seed tried, the better plans lying several moves away through
states that miss the deadline; drawing from the 8 best, with epsilon kept at 0.2 (HERTI gives no
schedule), it reaches 0.00-0.24% on most seeds (measured in the README's HERTI section).

Beyond Alg. 1 too (``mosaic_e``, on by default): the walk starts at MOSAIC-P as HERTI's does, and
MOSAIC-E (the dp energy plan) joins the restart pool, and becomes the best state, when it meets
the limits, so ``dqn`` is never worse than MOSAIC-E where MOSAIC-E is feasible (HERTI's Fig. 7
reports the two equal at the long deadline). On the board fitted to MOSAIC the walk alone ended
8-38% above it on VGG-16 at the long deadline, where the two plans lie many infeasible moves apart.
When MOSAIC-E misses the deadline, its slices are lifted to faster states first
(``SlicingEnv.lift``): with the board's own draw at 0 (MOSAIC's Eq. 4) the energy optimum under a
deadline sits near MOSAIC-E's cuts, and the walk from MOSAIC-P alone ended 9.6-29.6% above it at
the medium deadline (MnasNet-1.3, MobileNetV2-1.4, VGG-16).

Also beyond Alg. 1 (``polish``, on by default): the best state is finished by greedy descent
(``SlicingEnv.descend``) over short runs of the six actions: a slice's state re-picked, a merge
on any state, a boundary moved anywhere within its two slices (at most 3 layers left MnasNet-1.3
2.76% above the optimum at the medium deadline, one 5-layer move away) or a split, with one side
re-picked; each move the one that lowers the objective most while meeting the limits, until none
does. A walk often ends a few actions from a better state it never stepped on, through states
that miss the deadline; the descent costs milliseconds against the walk's tens of seconds and
can only improve the plan (on the board fitted to MOSAIC: MnasNet-1.0 at the short deadline
4.07% above the optimum -> 0.00%, one move; VGG-16 at the medium deadline 2.13% -> 0.50%, five
moves; over single actions alone neither moved).
"""
from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from ..context import PlanContext
from ..metrics import Objective
from ..problem import Plan, PlanningProblem
from .env import SlicingEnv


def _epsilon(opts, t: int) -> float:
    """Linear decay from eps_start to eps_end over the first eps_decay share of the steps."""
    span = max(1.0, opts.eps_decay * opts.steps)
    return opts.eps_end + (opts.eps_start - opts.eps_end) * max(0.0, 1.0 - t / span)


#: torch threads while training: the Q-network is small (a batch of 32 through 4 x 512), so a
#: second thread gains ~10% alone, and two trainings side by side (xdist workers, a sweep) with
#: the default thread pools spin against each other: measured 387 s each against 48 s with one
TRAIN_THREADS = 1


def check_sizes(opts: Any, n_obs: int, n_act: int) -> None:
    """Refuse, before torch allocates them, a Q-network (online + target + Adam's two moments: 4
    copies of float32 weights) and a replay memory (observation, next observation, mask, action,
    reward per transition) larger than a planner may take."""
    from hetcc.core.limits import check_bytes

    weights = n_obs * opts.width + (opts.depth - 1) * opts.width ** 2 + opts.width * n_act + opts.depth * opts.width
    check_bytes(4.0 * 4 * weights, f"dqn's Q-network (depth {opts.depth}, width {opts.width})",
                "lower --planner-option depth= or width=")
    check_bytes(4.0 * opts.memory * (2 * n_obs + 2 * n_act + 3), f"dqn's replay memory ({opts.memory} transitions)",
                "lower --planner-option memory=")
    check_bytes(4.0 * opts.batch_size * max(opts.width, n_obs) * (opts.depth + 2),
                f"dqn's minibatch ({opts.batch_size} x width {opts.width})", "lower --planner-option batch_size=")


def train(problem: PlanningProblem, objective: Objective, ctx: PlanContext) -> Plan:
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(TRAIN_THREADS)
    try:
        return _train(problem, objective, ctx)
    finally:
        torch.set_num_threads(threads)


def _offer_mosaic_e(env: SlicingEnv, problem: PlanningProblem, objective: Objective, best: dict,
                    elite: dict) -> dict:
    """MOSAIC-E (the dp energy plan) as a second start: into the restart pool, and the best
    state so far, when it meets the limits and beats the current best; when it misses the
    deadline, its slices lifted to faster states until it meets it (``SlicingEnv.lift``)."""
    from hetcc.core.errors import InfeasibleError
    from ..dp import optimal

    try:
        lean = optimal(problem, "energy")
    except InfeasibleError:
        return best
    env.set_plan(lean)
    r, T, E, ok = env.reward()
    if not ok and env.lift():     # too slow: its slices, lifted to states that meet the deadline
        r, T, E, ok = env.reward()
    if not ok:
        return best
    elite[env.key()] = (r, env.slices())
    if r > best["reward"]:
        return {"reward": r, "value": objective.value(T, E), "slices": env.slices(), "step": 0}
    return best


def _train(problem: PlanningProblem, objective: Objective, ctx: PlanContext) -> Plan:
    import torch
    from tensordict import TensorDict
    from tensordict.nn import TensorDictModule
    from torchrl.data import LazyTensorStorage, ReplayBuffer
    from torchrl.modules import MLP, QValueActor
    from torchrl.objectives import DQNLoss, HardUpdate

    logging.getLogger("torchrl").setLevel(logging.WARNING)   # its buffer announces itself at INFO
    opts = ctx.options
    ctx.seed_torch()
    env = SlicingEnv(problem, objective, penalty=opts.penalty)
    obs, info = env.reset(seed=ctx.seed)
    n_obs, n_act = env.observation_space.shape[0], int(env.action_space.n)
    check_sizes(opts, n_obs, n_act)
    net = MLP(in_features=n_obs, out_features=n_act, depth=opts.depth, num_cells=opts.width,
              activation_class=torch.nn.ReLU)
    actor = QValueActor(TensorDictModule(net, in_keys=["observation"], out_keys=["action_value"]),
                        in_keys=["observation"], action_space="categorical", action_mask_key="action_mask")
    loss = DQNLoss(actor, delay_value=True, double_dqn=opts.double_dqn, action_space="categorical")
    loss.make_value_estimator(gamma=opts.gamma)
    target = HardUpdate(loss, value_network_update_interval=opts.target_update)
    optim = torch.optim.Adam(loss.parameters(), lr=opts.lr, eps=opts.adam_eps)
    memory = ReplayBuffer(storage=LazyTensorStorage(opts.memory), batch_size=opts.batch_size)

    r0, T0, E0, ok0 = env.reward()
    best = {"reward": r0 if ok0 else -np.inf, "value": objective.value(T0, E0) if ok0 else None,
            "slices": env.slices(), "step": 0}
    seen = {env.key()}
    elite: dict = {}     # key -> (reward, slices): the best distinct feasible states (restart pool)
    if ok0:
        elite[env.key()] = (r0, env.slices())
    if opts.mosaic_e and objective.metric != "latency":
        best = _offer_mosaic_e(env, problem, objective, best, elite)
        obs, info = env.reset()          # the walk still starts at MOSAIC-P
    measured_ms = 0.0
    stale = t = improvements = 0
    wall0 = time.perf_counter()
    with ctx.progress.task("dqn", total=opts.steps) as bar:
        while t < opts.steps and not ctx.out_of_budget(t) and not (opts.patience and stale >= opts.patience):
            mask = info["action_mask"]
            eps = _epsilon(opts, t)
            if ctx.rng.random() < eps:
                action = int(ctx.rng.choice(np.flatnonzero(mask)))
            else:
                with torch.no_grad():
                    q = net(torch.as_tensor(obs)).numpy()
                action = int(np.argmax(np.where(mask, q, -np.inf)))
            nobs, reward, _, _, ninfo = env.step(action)
            t += 1
            measured_ms += ninfo["latency_ms"]
            seen.add(env.key())
            stale += 1
            if ninfo["feasible"] and opts.elite > 1:
                elite[env.key()] = (reward, env.slices())
                if len(elite) > 4 * opts.elite:
                    elite = dict(sorted(elite.items(), key=lambda kv: -kv[1][0])[:opts.elite])
            if ninfo["feasible"] and reward > best["reward"]:
                best = {"reward": reward, "value": objective.value(ninfo["latency_ms"], ninfo["energy_mj"]),
                        "slices": env.slices(), "step": t}
                stale = 0
                improvements += 1
            memory.add(TensorDict({
                "observation": torch.as_tensor(obs), "action": torch.tensor(action),
                "action_mask": torch.as_tensor(mask),
                "next": {"observation": torch.as_tensor(nobs), "action_mask": torch.as_tensor(ninfo["action_mask"]),
                         "reward": torch.tensor([reward], dtype=torch.float32),
                         "done": torch.tensor([False]), "terminated": torch.tensor([False])}}, batch_size=[]))
            obs, info = nobs, ninfo
            if opts.episode and t % opts.episode == 0:    # restart from the best state, or one of the elite
                start = best["slices"]
                if opts.elite > 1 and len(elite) > 1:
                    pool = sorted(elite.values(), key=lambda v: -v[0])[:opts.elite]
                    start = pool[int(ctx.rng.integers(len(pool)))][1]
                obs, info = env.reset(options={"plan": problem.evaluate(start)})
            if len(memory) >= max(opts.batch_size, opts.warmup) and t % opts.train_every == 0:
                batch = memory.sample()
                value = loss(batch)["loss"]
                optim.zero_grad()
                value.backward()
                optim.step()
                target.step()
            bar.update(1, step=t, eps=round(eps, 3), best=best["value"], deadline_met=best["value"] is not None)
    polished = 0
    if opts.polish and best["value"] is not None:
        env.set_plan(problem.evaluate(best["slices"]))
        polished = env.descend(out_of_time=lambda: ctx.budget.seconds is not None and ctx.out_of_budget())
        if polished:                       # the best state's fields all describe the polished one
            reward, T, E, _ = env.reward()
            best = {**best, "reward": reward, "value": objective.value(T, E), "slices": env.slices()}
    stats = {"steps": t, "explored": len(seen), "polish_moves": polished, "measured_ms": measured_ms,
             "best_step": best["step"], "improvements": improvements,
             "wall_s": time.perf_counter() - wall0, "epsilon": _epsilon(opts, t),
             "stopped": "patience" if opts.patience and stale >= opts.patience else
             ("budget" if t < opts.steps else "steps")}
    return problem.evaluate(best["slices"], stats=stats)


__all__ = ["train"]
