"""Training FairBoost's agent: Rainbow-DQN (Table 2) on random mixes of analysed models.

``train_agent(pool, vqvae_state, config)`` runs the loop; ``hetcc train fairboost`` (``hetcc.cli.train``)
analyses the zoo for a target, builds the pool and writes the agent file. Each episode draws
``min_models`` .. ``max_models`` distinct models of the pool in random order (their mix on the
board: ``plans.mix_of``) and places every block (``env.FairBoostEnv``). TorchRL does the learning:

- ``DistributionalQValueActor`` over the network (``agent.RainbowNet``: 1-D convolutions, noisy
  dueling head, 51 atoms on [-21, 21]) and ``DistributionalDQNLoss`` (C51's projected Bellman
  target with double-DQN action choice; n-step returns through ``steps_to_next_obs``);
- ``TensorDictPrioritizedReplayBuffer`` (proportional, exponent 0.5; importance-sampling beta
  annealed linearly from 0.4 to 1 over the run) on a ``LazyTensorStorage``, priorities updated
  from the loss's per-sample cross-entropy;
- ``HardUpdate`` of the target network every 500 optimisation steps; Adam (lr 1e-3, eps 1.5e-4),
  gradients clipped to L2 norm 5; exploration by the noisy layers alone (epsilon 0), their noise
  resampled after every optimisation step.

3-step returns (Table 2) are assembled here from the last three steps of the episode, with the
discount 1 (``env``'s shaped rewards telescope to the final mapping's reward). Table 2's 10K-step
history before learning is scaled to the run (``warmup``, 1,000 by default for 20,000 steps); the
paper's 4 stacked frames are not used: the Eq. 3 state holds every placed and queued block, so it
is Markov already. One optimisation step every ``train_every`` (2) environment steps.

A checkpoint (network, target network, optimiser, step, random states, curve) is written every
``checkpoint_every`` steps; ``resume`` continues from it (the replay memory is not saved: it
refills, with a new warmup, after a resume). The same seed, pool and configuration give the same
agent on the same machine and torch build (one torch thread).
"""
from __future__ import annotations

import collections
import logging
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..problem import PlanningProblem, WorkloadProblem
from .agent import NetConfig, agent_state, build_network, greedy_action, support
from .env import REWARDS, Cache, FairBoostEnv, Workload, prepare
from .features import layer_vectors

CHECKPOINT = "hetcc.fairboost.checkpoint/1"


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 20_000          #: environment steps (the paper: 20K after its exploration phase)
    warmup: int = 1_000          #: transitions before learning starts (Table 2: 10K, scaled to the run)
    batch: int = 32
    memory: int = 50_000
    lr: float = 1e-3             #: Table 2
    adam_eps: float = 1.5e-4     #: Table 2
    clip: float = 5.0            #: Table 2: gradient clipping by L2 norm
    n_step: int = 3              #: Table 2: multi-step returns
    discount: float = 1.0
    target_period: int = 500     #: Table 2: target network update period (optimisation steps)
    priority_exponent: float = 0.5   #: Table 2: omega
    beta_start: float = 0.4      #: Table 2: importance sampling 0.4 -> 1.0
    min_models: int = 3
    max_models: int = 5
    train_every: int = 2         #: environment steps per optimisation step
    seed: int = 0
    checkpoint_every: int = 1_000
    noise: float = 0.01          #: white noise on cached results (Sec. 4.5)
    reward: str = "overall"      #: the potential: log O (the planners' objective) or "alg1" (the paper's Alg. 1)

    def validate(self) -> str | None:
        for key in ("steps", "batch", "memory", "n_step", "target_period", "checkpoint_every",
                    "train_every"):
            if getattr(self, key) < 1:
                return f"{key} must be at least 1"
        if not 1 <= self.min_models <= self.max_models:
            return "need 1 <= min_models <= max_models"
        if self.warmup < 0 or self.noise < 0:
            return "warmup and noise must not be negative"
        if self.reward not in REWARDS:
            return f"reward must be one of {', '.join(REWARDS)}"
        return None


@dataclass
class Pool:
    """The analysed models episodes draw from: name -> problem, and each one's layer codes."""

    problems: dict[str, PlanningProblem]
    codes: dict[str, np.ndarray]
    rows: int
    switch_ms: Mapping[str, float] | None = None

    @classmethod
    def build(cls, problems: Mapping[str, PlanningProblem], codec: Any, rows: int) -> "Pool":
        return cls(dict(problems), {n: codec.codes(layer_vectors(p)) for n, p in problems.items()}, rows)

    def workload(self, names: Sequence[str]) -> Workload:
        from ..multi.plans import mix_of

        wp = WorkloadProblem(tuple(self.problems[n] for n in names), tuple(names))
        return prepare(mix_of(wp), [self.codes[n] for n in names], rows=self.rows)

    def draw(self, lo: int, hi: int) -> Callable[[np.random.Generator], Workload]:
        names = sorted(self.problems)
        hi = min(hi, len(names))
        lo = min(lo, hi)

        def draw(rng: np.random.Generator) -> Workload:
            k = int(rng.integers(lo, hi + 1))
            return self.workload([names[i] for i in rng.choice(len(names), size=k, replace=False)])
        return draw


def _transition(torch: Any, TensorDict: Any, obs, mask, action, ret, nobs, nmask, terminated, n) -> Any:
    return TensorDict({
        "observation": torch.as_tensor(obs), "action_mask": torch.as_tensor(mask),
        "action": torch.tensor(int(action)), "steps_to_next_obs": torch.tensor([n], dtype=torch.float32),
        "next": {"observation": torch.as_tensor(nobs), "action_mask": torch.as_tensor(nmask),
                 "reward": torch.tensor([ret], dtype=torch.float32), "done": torch.tensor([bool(terminated)]),
                 "terminated": torch.tensor([bool(terminated)])}}, batch_size=[])


def train_agent(pool: Pool, vqvae_state: Mapping[str, Any], config: TrainConfig, net_config: NetConfig, *,
                checkpoint: str | Path | None = None, resume: bool = False,
                progress: Callable[[int, dict], None] | None = None, meta: Mapping[str, Any] | None = None,
                should_stop: Callable[[], bool] | None = None) -> dict:
    """Train an agent; returns the agent file's state (``agent.agent_state``). ``progress(step,
    info)`` is called after every step (info: episodes, mean final reward of the last 50 episodes,
    loss, cache hit share); ``should_stop()`` ends the run early (a checkpoint is written)."""
    import torch
    from tensordict import TensorDict
    from tensordict.nn import TensorDictModule
    from torchrl.data import LazyTensorStorage, TensorDictPrioritizedReplayBuffer
    from torchrl.modules import DistributionalQValueActor
    from torchrl.objectives import DistributionalDQNLoss, HardUpdate

    logging.getLogger("torchrl").setLevel(logging.WARNING)
    problem = config.validate()
    if problem:
        raise ValueError(problem)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    rng = np.random.default_rng(config.seed)
    torch.manual_seed(config.seed)
    net = build_network(net_config)
    actor = DistributionalQValueActor(
        TensorDictModule(net, in_keys=["observation", "action_mask"], out_keys=["action_value"]),
        support=support(net_config), in_keys=["observation", "action_mask"], action_space="categorical")
    loss = DistributionalDQNLoss(actor, gamma=config.discount, delay_value=True)
    target = HardUpdate(loss, value_network_update_interval=config.target_period)
    optim = torch.optim.Adam(loss.parameters(), lr=config.lr, eps=config.adam_eps)
    # the buffer's own generator: without one, torchrl's prioritized sampler draws from numpy's
    # global (unseeded) generator on the CPU, and the same seed trained a different agent each run
    sampling = torch.Generator().manual_seed(config.seed)
    memory = TensorDictPrioritizedReplayBuffer(alpha=config.priority_exponent, beta=config.beta_start,
                                               storage=LazyTensorStorage(config.memory), batch_size=config.batch,
                                               priority_key="td_error", generator=sampling)
    env = FairBoostEnv(net_config.devices, draw=pool.draw(config.min_models, config.max_models),
                       max_models=net_config.max_models, rows=net_config.rows, noise=config.noise, cache=Cache(),
                       reward=config.reward)
    step, updates, curve, finals, episodes = 0, 0, [], collections.deque(maxlen=50), 0
    ckpt = Path(checkpoint) if checkpoint is not None else None
    if resume and ckpt is not None and ckpt.is_file():
        saved = torch.load(ckpt, map_location="cpu", weights_only=True)
        if saved.get("format") != CHECKPOINT or saved.get("config") != asdict(config) \
                or saved.get("net_config") != asdict(net_config):
            raise ValueError(f"checkpoint {str(ckpt)!r} was written by another training configuration; "
                             "delete it or train with the same options")
        loss.load_state_dict(saved["loss"])
        optim.load_state_dict(saved["optimizer"])
        step, updates, curve, episodes = saved["step"], saved["updates"], saved["curve"], saved["episodes"]
        rng.bit_generator.state = saved["rng"]
        torch.set_rng_state(saved["torch_rng"])
        if "sampling_rng" in saved:                  # a checkpoint from before the buffer had its own
            sampling.set_state(saved["sampling_rng"])
        finals.extend(saved["finals"])

    def save_checkpoint() -> None:
        if ckpt is None:
            return
        import io

        buf = io.BytesIO()
        torch.save({"format": CHECKPOINT, "config": asdict(config), "net_config": asdict(net_config),
                    "loss": loss.state_dict(), "optimizer": optim.state_dict(), "step": step, "updates": updates,
                    "curve": curve, "episodes": episodes, "rng": rng.bit_generator.state,
                    "torch_rng": torch.get_rng_state(), "sampling_rng": sampling.get_state(),
                    "finals": list(finals)}, buf)
        tmp = ckpt.with_name(ckpt.name + ".tmp")
        tmp.write_bytes(buf.getvalue())
        tmp.replace(ckpt)

    env._rng = np.random.default_rng(rng.integers(2**63))
    net.train()
    obs, info = env.reset()
    window: list[float] = []
    recent = collections.deque(maxlen=config.n_step)
    last_loss = math.nan
    t0 = time.perf_counter()
    try:
        while step < config.steps:
            if should_stop is not None and should_stop():
                break
            mask = info["action_mask"]
            action = greedy_action(net, obs, mask)             # noisy nets explore: epsilon = 0
            nobs, reward, terminated, _, ninfo = env.step(action)
            step += 1
            recent.append((obs, mask, action, reward))
            if len(recent) == config.n_step or terminated:
                while recent:
                    ret = sum(config.discount ** i * r for i, (_, _, _, r) in enumerate(recent))
                    o, mk, a, _ = recent[0]
                    memory.add(_transition(torch, TensorDict, o, mk, a, ret, nobs, ninfo["action_mask"],
                                           terminated, len(recent)))
                    recent.popleft()
                    if not terminated:
                        break
            if terminated:
                episodes += 1
                finals.append(ninfo["final_reward"])
                window.append(ninfo["final_reward"] - ninfo["baseline_reward"])
                obs, info = env.reset()
            else:
                obs, info = nobs, ninfo
            if len(memory) >= max(config.batch, config.warmup) and step % config.train_every == 0:
                memory.sampler.beta = config.beta_start + (1.0 - config.beta_start) * min(1.0, step / config.steps)
                batch = memory.sample()
                value = loss(batch)["loss"]
                optim.zero_grad()
                value.backward()
                torch.nn.utils.clip_grad_norm_(loss.parameters(), config.clip)
                optim.step()
                target.step()
                memory.update_tensordict_priority(batch)
                net.reset_noise()
                updates += 1
                last_loss = float(value.detach())
            if step % 50 == 0 and window:    # Fig. 7: each point 50 environment steps
                curve.append({"step": step, "min": float(min(window)), "mean": float(np.mean(window)),
                              "max": float(max(window))})
                window = []
            if progress is not None:
                hits = env.cache.hits / max(1, env.cache.hits + env.cache.misses)
                progress(step, {"episodes": episodes, "reward": float(np.mean(finals)) if finals else math.nan,
                                "loss": last_loss, "cache_hits": hits})
            if ckpt is not None and step % config.checkpoint_every == 0:
                save_checkpoint()
        save_checkpoint()
    except KeyboardInterrupt:       # Ctrl-C: what was learnt so far is kept for --resume
        save_checkpoint()
        raise
    finally:
        torch.set_num_threads(threads)
    net.eval()
    info_out = {"steps": step, "updates": updates, "episodes": episodes, "seconds": time.perf_counter() - t0,
                "curve": curve, "train_config": asdict(config), "cache": {"hits": env.cache.hits,
                                                                          "misses": env.cache.misses},
                "models": sorted(pool.problems), "devices": list(env.w.mix.devices) if env.w is not None else [],
                **dict(meta or {})}
    return agent_state(net, vqvae_state, info_out)


__all__ = ["CHECKPOINT", "Pool", "TrainConfig", "train_agent"]
