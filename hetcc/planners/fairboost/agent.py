"""FairBoost's Rainbow-DQN agent (its Sec. 4.3, 5.2 and Table 2) on TorchRL: the network, its file,
and the greedy decision.

The network reads the Eq. 3 observation ([(D + 5) x 8 channels, rows], ``env``) with 1-D
convolutions over the block rows: a stem convolution and 2 residual blocks of two convolutions
(5 convolution layers, Kaiming-initialised as the paper's ResNet-9), then TorchRL's ``NoisyLinear``
layers (noisy nets, sigma_0 0.5): a hidden layer and a dueling head (value and advantage streams),
each stream giving Table 2's 51 atoms over [-21, 21] per action (distributional, C51). Actions the
mask forbids get all their probability on the lowest atom, so their expected value is the least
possible and no argmax (the greedy action, the double-DQN target's action) picks them; the paper
sets their Q-values to -inf (its Eq. 4).

Sizes (the paper does not give them beyond its ~11M-parameter ResNet-9 with 512 noisy units, trained
10 days on a GPU): 32 channels and 128 noisy units, ~0.2M parameters (means and sigmas), what trains 20K steps in
minutes on two CPU cores shared with other work (the shipped agent's numbers are in ``data/fairboost.json``).

An agent file (``torch.save``; read with ``weights_only``) holds the network's weights and
configuration, the VQ-VAE state it was trained with (so a file plans alone) and what trained it
(command, seed, steps). ``load_agent`` checks its format and reports its sha256.
"""
from __future__ import annotations

import functools
import hashlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .env import LATENT, MAX_MODELS, ROWS

FORMAT = "hetcc.fairboost.agent/1"
ATOMS = 51
V_MIN, V_MAX = -21.0, 21.0
SIGMA0 = 0.5


@dataclass(frozen=True)
class NetConfig:
    devices: int = 3
    max_models: int = MAX_MODELS
    rows: int = ROWS
    channels: int = 32
    residual: int = 2
    hidden: int = 128
    atoms: int = ATOMS
    v_min: float = V_MIN
    v_max: float = V_MAX

    @property
    def in_channels(self) -> int:
        return (self.devices + self.max_models) * LATENT


@functools.lru_cache(maxsize=None)
def _modules() -> Any:
    import torch
    from torch import nn
    from torchrl.modules import NoisyLinear

    class Residual(nn.Module):
        def __init__(self, ch: int) -> None:
            super().__init__()
            self.a = nn.Conv1d(ch, ch, 3, padding=1)
            self.b = nn.Conv1d(ch, ch, 3, padding=1)

        def forward(self, x):
            return torch.relu(x + self.b(torch.relu(self.a(x))))

    class RainbowNet(nn.Module):
        """[B, C, rows] observation, [B, A] mask -> [B, atoms, A] logits (see the module docstring)."""

        def __init__(self, cfg: NetConfig) -> None:
            super().__init__()
            self.cfg = cfg
            self.stem = nn.Conv1d(cfg.in_channels, cfg.channels, 3, padding=1)
            self.body = nn.Sequential(*[Residual(cfg.channels) for _ in range(cfg.residual)])
            for mod in [self.stem, *self.body.modules()]:
                if isinstance(mod, nn.Conv1d):
                    nn.init.kaiming_uniform_(mod.weight, nonlinearity="relu")
                    nn.init.zeros_(mod.bias)
            flat = cfg.channels * cfg.rows
            noisy = dict(std_init=SIGMA0, use_exploration_type=False)   # noise in train(), means in eval()
            self.hidden = NoisyLinear(flat, cfg.hidden, **noisy)
            self.value = NoisyLinear(cfg.hidden, cfg.atoms, **noisy)
            self.advantage = NoisyLinear(cfg.hidden, cfg.atoms * cfg.devices, **noisy)

        def forward(self, observation, action_mask):
            batch = observation.shape[:-2]
            x = observation.reshape(-1, *observation.shape[-2:])
            h = torch.relu(self.stem(x))
            h = self.body(h).flatten(1)
            h = torch.relu(self.hidden(h))
            v = self.value(h).view(-1, self.cfg.atoms, 1)
            a = self.advantage(h).view(-1, self.cfg.atoms, self.cfg.devices)
            logits = v + a - a.mean(dim=-1, keepdim=True)                         # dueling
            mask = action_mask.reshape(-1, 1, self.cfg.devices).to(torch.bool)
            floor = torch.full_like(logits, -1e4)
            floor[:, 0, :] = 1e4                                                   # all mass on v_min
            return torch.where(mask, logits, floor).view(*batch, self.cfg.atoms, self.cfg.devices)

        def reset_noise(self) -> None:
            for mod in (self.hidden, self.value, self.advantage):
                mod.reset_noise()

    return torch, RainbowNet


def build_network(cfg: NetConfig) -> Any:
    _, RainbowNet = _modules()
    return RainbowNet(cfg)


def support(cfg: NetConfig) -> Any:
    torch, _ = _modules()
    return torch.linspace(cfg.v_min, cfg.v_max, cfg.atoms)


def expected_q(net: Any, observation: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """[A] (or [B, A]) expected action values of ``net`` in its current mode (forbidden: v_min)."""
    torch, _ = _modules()
    with torch.no_grad():
        logits = net(torch.as_tensor(observation), torch.as_tensor(mask))
        p = torch.softmax(logits, dim=-2)
        z = support(net.cfg).view(-1, 1)
        return (p * z).sum(dim=-2).numpy()


def greedy_action(net: Any, observation: np.ndarray, mask: np.ndarray) -> int:
    """The allowed action of highest expected value (Eq. 4 with the mask)."""
    q = expected_q(net, observation[None], mask[None])[0]
    return int(np.argmax(np.where(mask, q, -np.inf)))


def sha256_of(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def agent_state(net: Any, vqvae: Mapping[str, Any], meta: Mapping[str, Any]) -> dict:
    """What an agent file holds (``torch.save`` it)."""
    return {"format": FORMAT, "config": asdict(net.cfg), "network": net.state_dict(), "vqvae": dict(vqvae),
            **dict(meta)}


@dataclass
class LoadedAgent:
    net: Any                 # the RainbowNet, in eval mode (noise off: the means)
    codec: Any               # vqvae.Codec
    path: str
    sha256: str
    meta: dict


def load_agent(path: str | Path) -> LoadedAgent:
    """The agent in ``path`` (ValueError with a sentence when it is not one)."""
    torch, _ = _modules()
    from .vqvae import Codec

    p = Path(path)
    if not p.is_file():
        raise ValueError(f"agent file {str(p)!r} does not exist; train one with hetcc train fairboost -o FILE")
    try:
        state = torch.load(p, map_location="cpu", weights_only=True)
    except Exception as exc:   # noqa: BLE001 - any unreadable file is one sentence
        raise ValueError(f"agent file {str(p)!r} is not a FairBoost agent ({type(exc).__name__}); "
                         "train one with hetcc train fairboost -o FILE") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ValueError(f"agent file {str(p)!r} is not a FairBoost agent (format {FORMAT}); "
                         "train one with hetcc train fairboost -o FILE")
    cfg = NetConfig(**state["config"])
    net = build_network(cfg)
    net.load_state_dict(state["network"])
    net.eval()
    meta = {k: v for k, v in state.items() if k not in ("network", "vqvae", "optimizer", "format")}
    return LoadedAgent(net, Codec(state["vqvae"]), str(p), sha256_of(p), meta)




#: torch threads while deciding: one observation at a time through a small network, where a thread
#: pool only waits on itself (on a loaded 2-core machine one conv1d took 38 ms with the default
#: pool, under 1 ms with one thread)
DECIDE_THREADS = 1


@functools.lru_cache(maxsize=4)
def cached_agent(path: str, mtime_ns: int, size: int) -> LoadedAgent:
    """``load_agent`` kept per file version (a planner run after another skips the load)."""
    return load_agent(path)


def decide(agent: LoadedAgent, mix: Any, layer_vectors: Any) -> tuple[Any, dict]:
    """The agent's pipelines for ``mix`` (``multi.MixProblem``) whose models have the Eq. 2 rows
    ``layer_vectors`` (per model [L_m, 22]): one greedy episode, the network's mean weights (no
    noise), and what it took (blocks per model, seconds)."""
    import time

    from .env import FairBoostEnv, greedy, prepare

    torch, _ = _modules()
    cfg = agent.net.cfg
    t0 = time.perf_counter()
    threads = torch.get_num_threads()
    torch.set_num_threads(DECIDE_THREADS)
    try:
        codes = [agent.codec.codes(v) for v in layer_vectors]
        workload = prepare(mix, codes, rows=cfg.rows)
        env = FairBoostEnv(cfg.devices, max_models=cfg.max_models, rows=cfg.rows, noise=0.0, rewards=False)
        pipes = greedy(env, workload, lambda obs, mask: greedy_action(agent.net, obs, mask))
    finally:
        torch.set_num_threads(threads)
    return pipes, {"blocks": [len(r) for r in workload.runs], "decision_seconds": time.perf_counter() - t0}


__all__ = ["ATOMS", "FORMAT", "LoadedAgent", "NetConfig", "SIGMA0", "V_MAX", "V_MIN", "agent_state", "build_network",
           "cached_agent", "decide", "expected_q", "greedy_action", "load_agent", "sha256_of", "support"]
