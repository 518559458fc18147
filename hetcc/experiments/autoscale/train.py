"""Q-learning (AutoScale Alg. 1) in the simulated environment, and the paper's evaluation.

* ``train(board, runs)``: Sec. 5.3's protocol: ``runs`` (100) inferences of every network in every
  runtime-variance state of Table 1, epsilon-greedy, the table updated after each (Alg. 1); one
  table for all networks, as the paper's 64,000 samples make one table.
* ``evaluate(board, qtable, env)``: each network runs ``per_model`` inferences in a Table 4
  environment choosing greedily (Sec. 4.2: "after the learning is completed, the Q-table is used
  to select A which maximizes Q(S,A)") on its own copy of the trained table, which it keeps
  updating (Alg. 1 repeats whenever an inference starts; hetcc's runtime does the same with the
  table an artifact ships); ``AutoScale(frozen)`` never updates it. The baselines and the oracles
  see the same inferences (same variances, same noise): Edge(CPU FP32), Edge(Best) (the local action of
  least energy over the run, known in hindsight), Cloud, Connected edge, Opt (per inference, the
  best action in expectation for the state that inference saw: noise-free, known in hindsight; the
  least energy among the actions meeting QoS and accuracy, the fastest when none meets QoS),
  Opt(hindsight) (the same criterion on the inference's noisy outcomes: it also knows the noise) and
  Opt(reward) (per inference, the largest Eq. 5 reward in hindsight).
* ``convergence(board, ...)``: Fig. 14: from a fresh (or transferred) table, the runs until the
  reward of the agent's greedy choice settles at its final level.
* ``decision_us(qtable, ...)``: the time of one decision (state key + choice; with training, +
  update), in microseconds.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from hetcc.runtime.autoscale import QTable, state_key

from .env import AutoScaleEnv, environment_schedule, training_schedule
from .environments import ENVIRONMENTS, Environment, environment, training_states
from .sim import Board

__all__ = ["train", "evaluate", "convergence", "decision_us", "summarize", "RunRecord", "BASELINES", "POLICIES"]

#: the fixed baselines of AutoScale Sec. 5.1 (Opt is an oracle, below)
BASELINES = ("Edge(CPU FP32)", "Edge(Best)", "Cloud", "Connected edge")
POLICIES = ("AutoScale", "AutoScale(frozen)", *BASELINES, "Opt", "Opt(hindsight)", "Opt(reward)")


def train(board: Board, runs: int = 100, seed: int = 0, qtable: QTable | None = None,
          progress: Callable[[int, int], None] | None = None) -> QTable:
    """A Q-table trained on ``board`` by Sec. 5.3's protocol (see the module docstring); starts
    from ``qtable`` (a transferred one) when given. ``progress(done, total)`` every 1,000 inferences."""
    qt = qtable if qtable is not None else QTable(board.actions, hyper=board.hyper, target=board.target, seed=seed)
    if qt.actions != board.actions:
        raise ValueError("the table's actions are not the board's (transfer it first: QTable.transfer)")
    qt.target = board.target
    env = AutoScaleEnv(board, lambda rng: training_schedule(len(board.models), runs, rng), seed=seed)
    rng = np.random.default_rng([seed, 0xA5])        # the agent's own generator (exploration)
    total = len(training_states()) * len(board.models) * runs
    _, info = env.reset()
    done = 0
    while True:
        key, allowed = info["key"], info["allowed"]
        a = qt.choose(key, rng, allowed)
        _, r, _, truncated, step = env.step(a)
        nxt = step.get("next")
        qt.update(key, a, r, nxt["key"] if nxt else key, nxt["allowed"] if nxt else allowed)
        done += 1
        if progress is not None and (done % 1000 == 0 or truncated):
            progress(done, total)
        if truncated:
            break
        info = nxt
    qt.trained = {"runs": runs, "environments": ["Table 1 runtime-variance states (64), Sec. 5.3"],
                  "models": [m.name for m in board.models], "seed": seed, "inferences": done}
    return qt


@dataclass
class RunRecord:
    """One network's run in one environment: every action's latency and energy per inference
    ([T, A]) as it happened (with the noise) and in expectation (noise-free, for the variance that
    inference saw), each policy's choices ([T]) and the QoS target."""

    model: str
    latency_ms: np.ndarray
    energy_mj: np.ndarray
    qos_ms: float
    choices: dict[str, np.ndarray] = field(default_factory=dict)
    expected_latency_ms: np.ndarray | None = None
    expected_energy_mj: np.ndarray | None = None
    expected_best_reward: np.ndarray | None = None    # the largest Eq. 5 reward in expectation, per inference
    keys: list[str] | None = None                     # the state key (Table 1) each inference saw
    allowed: np.ndarray | None = None                 # [A]: the actions meeting the accuracy target

    def stats(self, policy: str) -> dict[str, float]:
        c = self.choices[policy]
        t = np.arange(len(c))
        lat, en = self.latency_ms[t, c], self.energy_mj[t, c]
        return {"ppw": len(c) / (float(en.sum()) / 1e3), "energy_mj": float(en.mean()),
                "latency_ms": float(lat.mean()), "qos_violation": float(np.mean(lat >= self.qos_ms))}


def evaluate(board: Board, qtable: QTable, env: Environment | str, per_model: int = 100,
             seed: int = 0) -> list[RunRecord]:
    """Every network of ``board`` for ``per_model`` inferences in ``env`` (see the module docstring):
    ``AutoScale`` chooses greedily (Sec. 4.2: "after the learning is completed, the Q-table is used
    to select A which maximizes Q(S,A)") on its own copy of the trained table and keeps updating it
    after every inference (Alg. 1 repeats "whenever inference starts"; hetcc's runtime does the same
    with the table an artifact ships); ``AutoScale(frozen)`` chooses greedily on the trained table
    and never updates it. Both see the same inferences as the baselines and the oracles."""
    env = environment(env) if isinstance(env, str) else env
    cpu = board.find(device="cpu", precision="float32", top=True)
    local = [i for i in range(len(board.actions)) if not board.remote[i]]
    fixed = {"Edge(CPU FP32)": cpu[0] if cpu else None,
             "Cloud": next(iter(board.find(device="cloud")), None),
             "Connected edge": next(iter(board.find(device="edge")), None)}
    out = []
    for m, model in enumerate(board.models):
        online = qtable.copy()
        gym_env = AutoScaleEnv(board, lambda rng, m=m: environment_schedule(env, 1, per_model, rng, [m]),
                               oracle=True, seed=seed)
        rng = np.random.default_rng([seed, 0x5A, m])
        _, info = gym_env.reset()
        lat, en, agent, agent_on, opt, opt_h, opt_r, exp_lat, exp_en, exp_r = [], [], [], [], [], [], [], [], [], []
        keys: list[str] = []
        while True:
            key, allowed = info["key"], info["allowed"]
            a = qtable.choose(key, rng, allowed, explore=False)
            b = online.choose(key, rng, allowed, explore=False)
            _, _, _, truncated, step = gym_env.step(a)
            nxt = step.get("next")
            o = step["outcomes"]
            online.update(key, b, float(o.reward[b]), nxt["key"] if nxt else key, nxt["allowed"] if nxt else allowed)
            lat.append(o.latency_ms)
            en.append(o.energy_mj)
            agent.append(a)
            agent_on.append(b)
            e = board.expected(m, info["variance"])
            opt.append(e.opt)
            opt_h.append(o.opt)
            opt_r.append(o.best_reward)
            exp_lat.append(e.latency_ms)
            exp_en.append(e.energy_mj)
            exp_r.append(e.best_reward)
            keys.append(key)
            if truncated:
                break
            info = nxt
        rec = RunRecord(model.name, np.array(lat), np.array(en), model.qos_ms,
                        expected_latency_ms=np.array(exp_lat), expected_energy_mj=np.array(exp_en),
                        expected_best_reward=np.array(exp_r), keys=keys, allowed=board.allowed(m).copy())
        T = len(agent)
        rec.choices["AutoScale"] = np.array(agent_on)
        rec.choices["AutoScale(frozen)"] = np.array(agent)
        rec.choices["Opt"] = np.array(opt)
        rec.choices["Opt(hindsight)"] = np.array(opt_h)
        rec.choices["Opt(reward)"] = np.array(opt_r)
        allowed_m = board.allowed(m)
        for name, idx in fixed.items():
            if idx is not None and allowed_m[idx]:
                rec.choices[name] = np.full(T, idx)
        ok_local = [i for i in local if allowed_m[i]]
        if ok_local:
            best = min(ok_local, key=lambda i: float(rec.energy_mj[:, i].sum()))
            rec.choices["Edge(Best)"] = np.full(T, best)
        out.append(rec)
    return out


def convergence(board: Board, env: Environment | str, model: int, runs: int = 200, seed: int = 0,
                qtable: QTable | None = None, tol: float = 0.05, window: int = 10) -> tuple[int, np.ndarray]:
    """Fig. 14: Alg. 1 (epsilon-greedy, learning) for ``runs`` inferences of ``model`` in ``env``
    from ``qtable`` (a transferred table) or a fresh one. After each run the agent's greedy choice
    for that run's state is scored by its expected (noise-free) reward; the reward has converged
    at the first run from which the moving average of that score (over ``window`` runs) stays
    within ``tol`` (relative) of its final level (the mean of the last quarter of the runs).
    Exploration's own draws are left out (they are what the agent chooses not to do), and a flip
    between near-equal actions moves the average by less than the tolerance. Returns (that run,
    the scores)."""
    env = environment(env) if isinstance(env, str) else env
    qt = qtable.copy() if qtable is not None else QTable(board.actions, hyper=board.hyper, target=board.target,
                                                          seed=seed)
    gym_env = AutoScaleEnv(board, lambda rng: environment_schedule(env, 1, runs, rng, [model]), seed=seed)
    rng = np.random.default_rng([seed, 0xC0, model])
    _, info = gym_env.reset()
    scores = []
    while True:
        key, allowed = info["key"], info["allowed"]
        a = qt.choose(key, rng, allowed)
        _, r, _, truncated, step = gym_env.step(a)
        nxt = step.get("next")
        qt.update(key, a, r, nxt["key"] if nxt else key, nxt["allowed"] if nxt else allowed)
        scores.append(board.expected(model, info["variance"]).reward[qt.best(key, allowed)])
        if truncated:
            break
        info = nxt
    g = np.asarray(scores)
    ma = np.convolve(g, np.ones(window) / window, mode="full")[:len(g)]
    ma[:window - 1] = [g[:i + 1].mean() for i in range(window - 1)]
    final = float(g[-max(1, len(g) // 4):].mean())
    off = np.flatnonzero(np.abs(ma - final) > tol * max(abs(final), 1e-9))
    return (int(off[-1]) + 2 if off.size else 1), g


def decision_us(board: Board, qtable: QTable, n: int = 2000, seed: int = 0, training: bool = False) -> float:
    """The median time (µs) of one decision on ``qtable``: the state key of an observation and the
    epsilon-greedy choice, plus (``training``) the Q-update; observations drawn from S1-S5, D1-D3."""
    rng = np.random.default_rng(seed)
    qt = qtable.copy()
    envs = list(ENVIRONMENTS.values())
    obs = []
    for i in range(n):
        m = int(rng.integers(len(board.models)))
        v = envs[i % len(envs)].draw(rng, i)
        f = board.models[m].features
        obs.append((f, v, board.allowed(m)))
    times = np.empty(n)
    clock = time.perf_counter_ns
    for i, (f, v, allowed) in enumerate(obs):
        t0 = clock()
        key = state_key(f["conv"], f["fc"], f["rc"], f["macs"], v.co_cpu, v.co_mem, v.rssi_w, v.rssi_p)
        a = qt.choose(key, rng, allowed)
        if training:
            qt.update(key, a, -1.0, key)
        times[i] = clock() - t0
    return float(np.median(times)) / 1e3


def summarize(records: list[RunRecord], board: Board | None = None) -> dict[str, Any]:
    """Per policy over the networks of one environment: energy efficiency (inferences per joule)
    normalised to Edge(CPU FP32) per network then averaged, QoS-violation ratio, and AutoScale's
    selection accuracy: the same action as Opt (the best in expectation), within 1% of Opt's energy,
    the same as Opt(hindsight) and Opt(reward) (and, given the ``board``, the same execution target:
    processor and precision, any V/F step)."""
    out: dict[str, Any] = {}
    for p in POLICIES:
        norm, qos, ppw = [], [], []
        for r in records:
            if p not in r.choices or "Edge(CPU FP32)" not in r.choices:
                continue
            s, base = r.stats(p), r.stats("Edge(CPU FP32)")
            norm.append(s["ppw"] / base["ppw"])
            qos.append(s["qos_violation"])
            ppw.append(s["ppw"])
        if norm:
            out[p] = {"efficiency": float(np.mean(norm)), "qos_violation": float(np.mean(qos)),
                      "ppw": float(np.mean(ppw))}
    def cat(name: str) -> np.ndarray:
        return np.concatenate([r.choices[name] for r in records])

    agent, opt, hind = cat("AutoScale"), cat("Opt"), cat("Opt(hindsight)")
    frozen = cat("AutoScale(frozen)")
    best_r = np.concatenate([r.expected_best_reward for r in records])
    energy = np.concatenate([r.expected_energy_mj for r in records])
    latency = np.concatenate([r.expected_latency_ms for r in records])
    qos = np.concatenate([np.full(len(r.choices["Opt"]), r.qos_ms) for r in records])
    t = np.arange(len(agent))
    # within 1% of Opt's energy (both in expectation) and meeting QoS wherever Opt meets it
    near = ((energy[t, agent] <= energy[t, opt] * 1.01)
            & ((latency[t, agent] < qos) | (latency[t, opt] >= qos)))
    out["selection"] = {
        "opt": float(np.mean(agent == opt)),                     # the same action as Opt
        "near_opt": float(np.mean(near)),                        # within 1% of Opt's energy, QoS where Opt's
        "frozen_opt": float(np.mean(frozen == opt)),             # AutoScale(frozen)'s
        "opt_hindsight": float(np.mean(agent == hind)),          # the same as the oracle that knows the noise
        "ceiling": float(np.mean(opt == hind)),                  # how often Opt is that oracle's choice
        "opt_reward": float(np.mean(agent == cat("Opt(reward)"))),   # the same as the largest reward's
        # Eq. 5's best in expectation is Opt's (what learning the reward perfectly reaches) ...
        "reward_ceiling": float(np.mean(best_r == opt)),
        # ... and AutoScale's choice is Eq. 5's best in expectation (how well it learned its reward)
        "reward_expected": float(np.mean(agent == best_r)),
    }
    if all(r.keys is not None and r.allowed is not None for r in records):
        out["selection"].update(_ceilings(records))
    if board is not None:   # the same execution target (processor and precision, any V/F step) as Opt
        target = np.array([f"{a.get('device')}:{a.get('precision')}" for a in board.action_info])
        out["selection"]["target"] = float(np.mean(target[agent] == target[opt]))
    return out


#: the energy margins of the near-tie shares ``summarize`` reports (relative to Opt's energy)
TIE_MARGINS = (0.001, 0.01)


def _ceilings(records: list[RunRecord]) -> dict[str, float]:
    """What bounds the selection accuracy, from the records alone (all in expectation):

    * ``state_ceiling``: the most a fixed choice per network and Table 1 state can match: per
      (network, state key), the share of its inferences Opt's most frequent action there covers (a
      policy sees the state's bins, not the co-runner use or the signal inside them; Opt does). A
      table that keeps learning may follow a state's changes over time and pass it where they last;
    * ``tie_<margin>``: the share of inferences where another allowed action comes within
      ``margin`` of Opt by Opt's own criterion: of its energy, meeting QoS, where Opt meets QoS; of
      its latency where no action does. A pair that a learner estimating energy from noisy
      latencies cannot order without many samples of each."""
    groups: dict[tuple[str, str], dict[int, int]] = {}
    ties = dict.fromkeys(TIE_MARGINS, 0)
    total = 0
    for r in records:
        opt = r.choices["Opt"]
        t = np.arange(len(opt))
        for k, o in zip(r.keys or (), opt):
            g = groups.setdefault((r.model, k), {})
            g[int(o)] = g.get(int(o), 0) + 1
        en, lat = r.expected_energy_mj, r.expected_latency_ms
        meets = lat[t, opt] < r.qos_ms
        # Opt's criterion per inference: energy among the actions meeting QoS, else latency
        cost = np.where(meets[:, None], np.where(lat < r.qos_ms, en, np.inf), lat)
        ok = np.broadcast_to(r.allowed, cost.shape).copy()
        ok[t, opt] = False
        runner_up = np.where(ok, cost, np.inf).min(axis=1)
        for m in TIE_MARGINS:
            ties[m] += int(np.sum(runner_up <= cost[t, opt] * (1.0 + m)))
        total += len(opt)
    out = {"state_ceiling": sum(max(g.values()) for g in groups.values()) / max(total, 1)}
    out.update({f"tie_{m:g}": ties[m] / max(total, 1) for m in TIE_MARGINS})
    return out
