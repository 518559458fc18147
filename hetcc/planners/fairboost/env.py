"""FairBoost's environment (its Sec. 4.4-4.5) as a ``gymnasium.Env`` over a mix of models.

A **workload** (``Workload``, built by ``prepare``) is a ``MixProblem`` (``hetcc.planners.multi``)
with each model's layers grouped into at most ``rows`` consecutive blocks of about equal latency
(``features.blocks``; a model of at most ``rows`` layers: one block per layer) and each block's
latent code: the VQ-VAE code (``vqvae.Codec``) of its heaviest layer, scaled to [0, 1].

Step k places one block on one device (the action: an index into the mix's devices), the blocks of
the first model in order, then the second model's, and so on: ``sum_m blocks_m`` steps per episode.
Where the paper decides per layer, here a block of layers is the unit (the paper's models have ~100
layers and a GPU to train on; 16 blocks keep an episode of 5 models at <= 80 steps and the
observation small, at a block granularity no coarser than ``optimum``'s).

Observation (Eq. 3): the matrix (C_1 .. C_D  U_1 .. U_5) of 8-column blocks, one row per block
position r, stored transposed as [(D + max_models) x 8, rows] float32 in [0, 1] (channels first,
for the agent's 1-D convolutions over the rows): U_j row r holds model j's block r's code while
the block is queued (not yet placed) and zeros once placed or when model j has fewer blocks
(or is absent); C_d row r holds the sum over models of the codes of the blocks at position r
placed on device d, / max_models. The queued blocks show where the decision stands (the current
block is the first non-zero row of the first non-empty U).

Action masking (Sec. 4.5): a model stays on its device or moves to one it has not used; a device
it has left is masked (M_{k+1} = D minus a_k when a_{k+1} != a_k, applied cumulatively), and so
is a device where the block's layers are illegal or from which the model's remaining blocks could
not all be placed. ``info["action_mask"]`` holds it; an action outside it leaves the state as is
(``info["invalid_action"]``, reward 0).

Reward (Alg. 1, on THE contention model): the paper rewards each step with the throughput and
fairness of the mapping so far and is silent on how a partial mapping runs. Here each state is
completed to a whole workload: a model in progress keeps its remaining blocks on its current
device (or the first legal device order), a model not yet reached runs as FairBoost's baseline
(whole on the reference GPU). Its potential is Phi = Alg. 1's reward (``scores.reward``) of the
contention model's throughput (``contention.predict``), and step k earns
``scale * (Phi(s_k+1) - Phi(s_k))``: potential-based shaping (Ng et al., 1999), so with discount
1 the return of an episode is ``scale * (R(final) - R(baseline))`` whatever the route and the
optimal policy is the one for the final mapping's reward; ``scale`` (10) spreads returns over
Table 2's atom support [-21, 21]. A completion with a stage over a device's capacity scores -1.

The result cache (Sec. 4.5): every completed workload's Phi is kept under the multiset of
(model, pipeline) pairs (identical and permutation-equivalent mappings share it); a hit returns
it plus white noise N(0, ``noise``) (the paper's remedy against over-estimated Q-values), a miss
asks the contention model. The cache may be shared between environments (``cache=``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import gymnasium as gym
import numpy as np

from ..multi.contention import predict
from ..multi.mix import MixProblem, Pipeline, Stage
from ..multi.scores import ALPHA, BETA, GAMMA, baseline_throughput, reward as alg1_reward, score
from .features import blocks as block_runs

LATENT = 8
MAX_MODELS = 5
ROWS = 16
SCALE = 10.0
NOISE = 0.01
#: what a state's potential is: Alg. 1's reward (the paper's), or the log of the planners' objective
#: O = T_norm x J (beyond the paper: Alg. 1 saturates where plans beat the GPU baseline many times over)
REWARDS = ("alg1", "overall")
#: the reward factor per potential: Alg. 1 lies in (-1, 1); log O of a mix is a few units either side of 0
SCALES = {"alg1": SCALE, "overall": 5.0}
#: the "overall" potential of a mapping that cannot run (an illegal stage): O at e^-4 of the baseline's
LOG_FLOOR = -4.0


@dataclass(frozen=True)
class Workload:
    """A mix ready for the environment: its blocks, their codes and where they are legal."""

    mix: MixProblem
    key: str                                       # identity of the mix for the result cache
    runs: tuple[tuple[tuple[int, int], ...], ...]  # per model: (first, stop) of each block
    codes: tuple[np.ndarray, ...]                  # per model: [B_m, 8] float32 in [0, 1]
    legal: tuple[np.ndarray, ...]                  # per model: [B_m, D] bool: every layer legal there

    @property
    def n_models(self) -> int:
        return self.mix.n_models


def prepare(mix: MixProblem, layer_codes: Sequence[np.ndarray], *, rows: int = ROWS, key: str = "") -> Workload:
    """The ``Workload`` of ``mix`` given each model's per-layer codes ([L_m, 8], in [0, 1])."""
    if len(layer_codes) != mix.n_models:
        raise ValueError(f"{len(layer_codes)} code tables for {mix.n_models} models")
    runs, codes, legal = [], [], []
    for m in range(mix.n_models):
        t = np.asarray(mix.layer_ms[m], dtype=np.float64)
        finite = np.where(np.isfinite(t), t, np.inf).min(axis=1)
        weight = np.where(np.isfinite(finite), finite, 0.0)
        rr = block_runs(weight, rows)
        lc = np.asarray(layer_codes[m], dtype=np.float32)
        if lc.shape != (t.shape[0], LATENT):
            raise ValueError(f"model {mix.names[m]!r}: codes of shape {lc.shape}, expected ({t.shape[0]}, {LATENT})")
        codes.append(np.stack([lc[a + int(np.argmax(weight[a:b]))] for a, b in rr]))
        legal.append(np.stack([np.isfinite(t[a:b]).all(axis=0) for a, b in rr]))
        runs.append(rr)
    return Workload(mix, key or "|".join(mix.names), tuple(runs), tuple(codes), tuple(legal))


def stages(runs: Sequence[tuple[int, int]], devices: Sequence[int]) -> Pipeline:
    """The pipeline of blocks ``runs`` placed on ``devices`` (consecutive blocks on one device merge)."""
    out: list[Stage] = []
    for (a, b), d in zip(runs, devices):
        if out and out[-1].device == d:
            out[-1] = Stage(int(d), out[-1].first, b)
        else:
            out.append(Stage(int(d), a, b))
    return tuple(out)


@dataclass
class Cache:
    """The result cache: Phi of every completed workload met (shared between environments)."""

    table: dict = field(default_factory=dict)
    hits: int = 0
    misses: int = 0


class FairBoostEnv(gym.Env):
    """FairBoost's environment; see the module docstring. ``draw(rng)`` gives the workload of
    each episode (``reset(options={"workload": w})`` sets one)."""

    metadata = {"render_modes": []}

    def __init__(self, devices: int, *, draw: Callable[[np.random.Generator], Workload] | None = None,
                 max_models: int = MAX_MODELS, rows: int = ROWS, scale: float | None = None, noise: float = NOISE,
                 alpha: float = ALPHA, beta: float = BETA, gamma: float = GAMMA, cache: Cache | None = None,
                 rewards: bool = True, reward: str = "alg1") -> None:
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {', '.join(REWARDS)}, got {reward!r}")
        self.D, self.max_models, self.rows = int(devices), int(max_models), int(rows)
        self.rewards = bool(rewards)     # False: every reward 0, no contention model asked (deciding)
        self.reward = reward
        self.draw = draw
        self.scale, self.noise = float(SCALES[reward] if scale is None else scale), float(noise)
        self.alpha, self.beta, self.gamma = float(alpha), float(beta), float(gamma)
        self.cache = cache if cache is not None else Cache()
        self.channels = (self.D + self.max_models) * LATENT
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(self.channels, self.rows), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(self.D)
        self.w: Workload | None = None
        self._rng = np.random.default_rng()

    # ---- the workload ---------------------------------------------------------------------
    def _check(self, w: Workload) -> None:
        if w.mix.n_devices != self.D:
            raise ValueError(f"the mix has {w.mix.n_devices} devices ({', '.join(w.mix.devices)}); "
                             f"this environment {self.D}")
        if w.n_models > self.max_models:
            raise ValueError(f"the mix has {w.n_models} models; the observation holds {self.max_models}")
        if max(len(r) for r in w.runs) > self.rows:
            raise ValueError(f"a model has more than {self.rows} blocks")

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        w = (options or {}).get("workload")
        if w is None:
            if self.draw is None:
                raise ValueError("no workload: give draw= or reset(options={'workload': ...})")
            w = self.draw(self._rng)
        self._check(w)
        self.w = w
        self.assigned = [np.full(len(r), -1, dtype=np.int64) for r in w.runs]
        self.m, self.b = 0, 0
        self.used: set[int] = set()
        self.current = -1
        self._baseline = tuple(w.mix.baseline())
        self._base_tw: float | None = None             # the baseline's T_w, on first need ("overall")
        self._done_memo: dict = {}
        self.phi = self.potential()
        self.start_phi = self.phi
        return self.observation(), self._info()

    @property
    def done(self) -> bool:
        return self.w is None or self.m >= self.w.n_models

    # ---- masking --------------------------------------------------------------------------
    def _completable(self, m: int, b: int, used: frozenset, cur: int) -> bool:
        """Blocks b.. of model m can all be placed with the model on ``cur`` having used ``used``."""
        key = (m, b, used, cur)
        if key not in self._done_memo:
            legal = self.w.legal[m]
            if b >= legal.shape[0]:
                ok = True
            else:
                ok = any(legal[b, d] and self._completable(m, b + 1, used | {d}, d)
                         for d in self._options(used, cur))
            self._done_memo[key] = ok
        return self._done_memo[key]

    def _options(self, used: set | frozenset, cur: int) -> list[int]:
        """Devices the masking rule allows: the current one, or one not used yet."""
        return [d for d in range(self.D) if d == cur or d not in used]

    def action_mask(self) -> np.ndarray:
        mask = np.zeros(self.D, dtype=bool)
        if self.done:
            return mask
        legal = self.w.legal[self.m]
        used = frozenset(self.used)
        for d in self._options(used, self.current):
            mask[d] = bool(legal[self.b, d]) and self._completable(self.m, self.b + 1, used | {d}, d)
        return mask

    # ---- the state as pipelines -----------------------------------------------------------
    def _complete(self, m: int) -> list[int]:
        """Model m's blocks' devices: placed ones as placed, the rest on the current device while
        legal, else by the first device order that completes the model."""
        devs = [int(x) for x in self.assigned[m]]
        used, cur = {d for d in devs if d >= 0}, (self.current if m == self.m else -1)
        for b in range(len(devs)):
            if devs[b] >= 0:
                cur = devs[b]
                continue
            legal = self.w.legal[m]
            choice = next((d for d in ([cur] if cur >= 0 else []) + [d for d in range(self.D) if d not in used]
                           if legal[b, d] and self._completable(m, b + 1, frozenset(used | {d}), d)), None)
            if choice is None:
                return []
            devs[b], cur = choice, choice
            used.add(choice)
        return devs

    def pipelines(self) -> tuple[Pipeline, ...] | None:
        """The completed workload of the current state (None when a model cannot complete)."""
        out = []
        for m in range(self.w.n_models):
            if m > self.m or (m == self.m and self.b == 0 and self.current < 0):
                out.append(self._baseline[m])
                continue
            devs = self._complete(m)
            if not devs:
                return None
            out.append(stages(self.w.runs[m], devs))
        return tuple(out)

    def evaluate(self, pipelines: Sequence[Pipeline]) -> tuple[float, np.ndarray | None]:
        """(potential, per-model throughput) of ``pipelines`` on the contention model: Alg. 1's
        reward, or log O (O = T_norm x J against this mix's baseline) with ``reward="overall"``; the
        floor (-1, LOG_FLOOR) and None for a pipeline with an illegal stage (e.g. over a device's
        capacity)."""
        mix = self.w.mix
        floor = self._floor()
        try:
            for m, p in enumerate(pipelines):
                mix.check(m, p)
            x = predict(mix, pipelines).throughput
        except ValueError:
            return floor, None
        x = np.where(np.isfinite(x), x, 0.0)
        if self.reward == "alg1":
            return float(alg1_reward(x, mix.ideal(), self.alpha, self.beta, self.gamma)), x
        if self._base_tw is None:
            self._base_tw = baseline_throughput(mix)
        o = score(mix, x, baseline=self._base_tw).overall
        return (max(floor, float(np.log(o))) if o > 0 else floor), x

    def _floor(self) -> float:
        """The potential of a mapping that cannot run: Alg. 1's least reward, or ``LOG_FLOOR``."""
        return -1.0 if self.reward == "alg1" else LOG_FLOOR

    def potential(self) -> float:
        if not self.rewards:
            return 0.0
        pipes = self.pipelines()
        if pipes is None:                      # the masking keeps every state completable: defensive
            return self._floor()
        key = (self.w.key, tuple(sorted(zip(self.w.mix.names, pipes))))
        hit = self.cache.table.get(key)
        if hit is not None:
            self.cache.hits += 1
            return hit + (float(self._rng.normal(0.0, self.noise)) if self.noise > 0 else 0.0)
        self.cache.misses += 1
        value = self.evaluate(pipes)[0]
        self.cache.table[key] = value
        return value

    # ---- observation ----------------------------------------------------------------------
    def observation(self) -> np.ndarray:
        obs = np.zeros((self.D + self.max_models, self.rows, LATENT), dtype=np.float32)
        for m in range(self.w.n_models):
            codes, a = self.w.codes[m], self.assigned[m]
            n = len(a)
            queued = a < 0
            obs[self.D + m, :n][queued] = codes[queued]
            for d in range(self.D):
                on = a == d
                obs[d, :n][on] += codes[on] / self.max_models
        # [D + max_models, rows, 8] -> [(D + max_models) * 8, rows]: each 8-column block's columns as channels
        return np.ascontiguousarray(obs.transpose(0, 2, 1).reshape(self.channels, self.rows))

    def _info(self, **extra: Any) -> dict:
        return {"action_mask": self.action_mask(), **extra}

    # ---- gymnasium API --------------------------------------------------------------------
    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        d = int(action)
        if self.done:
            raise RuntimeError("step after the episode ended: call reset")
        if not (0 <= d < self.D and self.action_mask()[d]):
            return self.observation(), 0.0, False, False, self._info(invalid_action=True)
        self.assigned[self.m][self.b] = d
        self.used.add(d)
        self.current = d
        self.b += 1
        if self.b >= len(self.w.runs[self.m]):
            self.m, self.b, self.used, self.current = self.m + 1, 0, set(), -1
        old, self.phi = self.phi, self.potential()
        terminated = self.done
        info = self._info()
        if terminated:
            info["final_reward"] = self.phi
            info["baseline_reward"] = self.start_phi
        return self.observation(), self.scale * (self.phi - old), terminated, False, info

    def final_pipelines(self) -> tuple[Pipeline, ...]:
        """The pipelines the episode placed (after its last step)."""
        if not self.done:
            raise RuntimeError("the episode has not placed every block yet")
        return tuple(stages(r, a.tolist()) for r, a in zip(self.w.runs, self.assigned))


def greedy(env: FairBoostEnv, workload: Workload, choose: Callable[[np.ndarray, np.ndarray], int]) -> tuple[Pipeline, ...]:
    """Run one episode on ``workload`` taking ``choose(observation, mask)`` at every step; the
    pipelines it placed."""
    obs, info = env.reset(options={"workload": workload})
    while not env.done:
        obs, _, _, _, info = env.step(choose(obs, info["action_mask"]))
    return env.final_pipelines()


__all__ = ["Cache", "FairBoostEnv", "LATENT", "LOG_FLOOR", "MAX_MODELS", "REWARDS", "ROWS", "SCALE", "SCALES",
           "Workload", "greedy", "prepare", "stages"]
