"""AutoScale's execution environment as a ``gymnasium.Env`` (one step = one inference).

Observation: the 8 Table 1 bins of the state as indices (``MultiDiscrete``: conv 4, fc 2, rc 2,
macs 3, co_cpu 4, co_mem 4, rssi_w 2, rssi_p 2), with ``info["key"]`` the state key
(``hetcc.runtime.autoscale.state_key``), ``info["allowed"]`` the actions meeting the accuracy
target for the model, ``info["model"]`` and ``info["variance"]``. Action: an index into the board's
actions. Reward: Eq. 5 of the chosen action's simulated latency and energy (``sim.Board``).
``step`` also reports the latency, energy, whether QoS was met, and (``oracle=True``) every
action's outcome and Opt's choice for the same draw.

A ``Schedule`` says which model runs at each inference and under which variance: an environment
of Table 4 (``environment_schedule``) or the training protocol (``training_schedule``: Sec. 5.3,
each runtime-variance state of Table 1 with each network, ``runs`` inferences each). The episode
ends (truncated) when the schedule does. Any agent can drive it; ``train.py``'s Q-learning does.
"""
from __future__ import annotations

from typing import Any, Iterator

import gymnasium as gym
import numpy as np

from hetcc.runtime.autoscale import BINS, STATE_FEATURES

from .environments import Environment, Variance, state_variance, training_states
from .sim import Board

__all__ = ["AutoScaleEnv", "Schedule", "environment_schedule", "training_schedule", "obs_of_key"]

#: (model index, variance) per inference
Schedule = Iterator[tuple[int, Variance]]


def environment_schedule(env: Environment, n_models: int, per_model: int, rng: np.random.Generator,
                         models: list[int] | None = None) -> Schedule:
    """``per_model`` inferences of each model under ``env``, the models taking turns (inference t
    runs model t mod n), variance t drawn by the environment at t."""
    order = list(range(n_models)) if models is None else list(models)
    for t in range(per_model * len(order)):
        yield order[t % len(order)], env.draw(rng, t)


def training_schedule(n_models: int, runs: int, rng: np.random.Generator) -> Schedule:
    """Sec. 5.3's protocol: for each runtime-variance state of Table 1 (64, in a seeded random
    order), for each network, ``runs`` inferences under the state's set-up (``state_variance``)."""
    states = training_states()
    for s in rng.permutation(len(states)):
        for m in rng.permutation(n_models):
            for _ in range(runs):
                yield int(m), state_variance(states[int(s)])


def obs_of_key(key: str) -> np.ndarray:
    """The observation vector of a state key (each bin's index in ``BINS``)."""
    return np.array([BINS[f].index(b) for f, b in zip(STATE_FEATURES, key.split("|"))], dtype=np.int64)


class AutoScaleEnv(gym.Env):
    """One inference per step on ``board`` following ``schedule`` (see the module docstring).
    ``schedule`` is a callable ``rng -> Schedule`` drawn from the environment's generator at each
    ``reset``, so ``reset(seed=...)`` replays an episode; ``seed`` seeds the first one."""

    metadata = {"render_modes": []}

    def __init__(self, board: Board, schedule: Any, *, oracle: bool = False, seed: int | None = None) -> None:
        self.board = board
        self.make_schedule = schedule
        self.oracle = oracle
        self.observation_space = gym.spaces.MultiDiscrete([len(BINS[f]) for f in STATE_FEATURES])
        self.action_space = gym.spaces.Discrete(len(board.actions))
        self._seed = seed
        self._it: Schedule | None = None
        self._cur: tuple[int, Variance] | None = None
        self._noise: np.ndarray | None = None

    def _advance(self) -> tuple[np.ndarray, dict[str, Any]] | None:
        try:
            self._cur = next(self._it)
        except StopIteration:
            self._cur = None
            return None
        m, v = self._cur
        self._noise = self.board.noise(self.np_random)
        key = self.board.key(m, v)
        return obs_of_key(key), {"key": key, "model": m, "variance": v, "allowed": self.board.allowed(m).copy()}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=self._seed if seed is None else seed)
        self._seed = None        # the constructor's seed seeds the first episode only (gymnasium's convention)
        self._it = self.make_schedule(self.np_random)
        nxt = self._advance()
        if nxt is None:
            raise ValueError("the schedule is empty: nothing to run")
        return nxt

    @property
    def current(self) -> tuple[int, Variance, np.ndarray]:
        """(model, variance, noise factors) of the inference the next ``step`` runs."""
        if self._cur is None or self._noise is None:
            raise RuntimeError("call reset() first (or the schedule has ended)")
        return self._cur[0], self._cur[1], self._noise

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        m, v, noise = self.current
        a = int(action)
        if not self.action_space.contains(a):
            raise ValueError(f"action {action!r} is not one of the board's {self.action_space.n} actions")
        latency, energy, r = self.board.outcome(m, a, v, noise)
        info: dict[str, Any] = {"model": m, "variance": v, "latency_ms": latency, "energy_mj": energy,
                                "qos_met": latency < self.board.models[m].qos_ms,
                                "allowed_action": bool(self.board.allowed(m)[a])}
        if self.oracle:
            out = self.board.outcomes(m, v, noise)
            info["outcomes"] = out
            info["opt"] = out.opt
        nxt = self._advance()
        if nxt is None:
            return np.zeros(len(STATE_FEATURES), dtype=np.int64), r, False, True, info
        obs, nxt_info = nxt
        info["next"] = nxt_info
        return obs, r, False, False, info
