"""The simulated AutoScale environment: what one inference on one action costs under a runtime
variance (numbers only: numpy and hetcc.runtime.autoscale's Eq. 1-5).

A ``Board`` holds a target's action set (the AutoScale actions of ``hetcc.compiler.autoscale``'s
action tables: each local processor at each DVFS step and precision, the connected edge device,
the cloud), its base power and links, and one ``SimModel`` per neural network (its Table 1
features and its action table: predicted compute time, busy power, bytes sent and received,
accuracy, and the share of the local time bound by memory).

One inference of model m on action a under variance v:

* local: ``latency = compute_ms x slowdown x (1 + noise)`` with
  ``slowdown = (1 + CPU_SLOWDOWN * co_cpu)`` for a CPU action (the co-runner's threads share its
  cores) ``x (1 + MEM_SLOWDOWN * co_mem * mem_share)`` for every local action (the co-runner
  shares the DRAM bandwidth; AutoScale Sec. 3.2: a memory-intensive co-runner degrades the CPU,
  GPU and DSP alike);
* remote: ``latency = (compute_ms + t_tx + t_rx) x (1 + noise)`` with ``t_tx`` / ``t_rx`` the
  bytes at the link's bandwidth at the signal strength of its link plus half its round trip each
  way (``hetcc.runtime.autoscale.link_times_ms``): the phone's co-runners do not slow a remote
  device;
* energy: Eq. 1-4 (``hetcc.runtime.autoscale.energy_mj``), the transfer times scaled with the
  latency's noise; reward: Eq. 5 (``hetcc.runtime.autoscale.reward``), the energy in units of the
  model's reference energy (``hetcc.runtime.autoscale.reference_energy_mj``: its least predicted
  action energy).

The noise is one Gaussian draw per inference and action (``NOISE_SIGMA``), drawn for every action
whatever is chosen: a run's sequence of models, variances and noise does not depend on the policy,
so every policy and the oracles see the same inferences. Opt is the best action in expectation
for the inference's state (``Board.expected(m, v).opt``: noise-free, known in hindsight: the
co-runner use and signals that inference saw); ``Outcomes.opt`` of a noisy draw is the oracle that
also knows the noise.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from hetcc.runtime.autoscale import (
    Hyper,
    energy_mj,
    link_times_ms,
    reference_energy_mj,
    reward,
    state_key,
)
from hetcc.runtime.manifest.model import LinkInfo

from .environments import Variance

__all__ = ["CPU_SLOWDOWN", "MEM_SLOWDOWN", "NOISE_SIGMA", "NOISE_CLIP", "Board", "SimModel", "Outcomes",
           "slowdown"]

#: a CPU action's slowdown per unit of co-runner CPU utilisation: assumed from fair-share
#: scheduling (Linux CFS gives runnable threads equal shares, so a co-runner keeping the cores
#: fully busy halves the inference's share: 2x at 100%). AutoScale Fig. 5 shows the CPU's
#: efficiency "significantly degraded" by a CPU-intensive co-runner without a number; its thermal
#: throttling (Sec. 3.2) is not modelled.
CPU_SLOWDOWN = 1.0
#: a local action's slowdown per unit of co-runner memory intensity, on the memory-bound share of
#: its time: assumed from fair sharing of the DRAM bandwidth (a co-runner using it all halves the
#: inference's share: the memory-bound part takes 2x). AutoScale Sec. 3.2: a memory-intensive
#: co-runner degrades every on-device processor (CPU, GPU and DSP) and shifts the optimum to the cloud.
MEM_SLOWDOWN = 1.0
#: run-to-run latency noise (one standard deviation, relative): assumed; a few percent of jitter
#: from caches, scheduling and the radio. It is what makes the choice a learning problem.
NOISE_SIGMA = 0.02
#: the noise is clipped at this many standard deviations (no negative or absurd latencies)
NOISE_CLIP = 3.0


def slowdown(kind: str, remote: bool, mem_share: float, v: Variance) -> float:
    """The interference slowdown of an action of device ``kind`` under ``v`` (1 for a remote one)."""
    if remote:
        return 1.0
    f = 1.0 + MEM_SLOWDOWN * v.co_mem * mem_share
    if kind == "cpu":
        f *= 1.0 + CPU_SLOWDOWN * v.co_cpu
    return f


@dataclass(frozen=True)
class SimModel:
    """One neural network on a board: its Table 1 features and an action table (the policy file's
    action dicts, keyed by variant name; a board action the model lacks is not allowed for it)."""

    name: str
    features: Mapping[str, float]                 # conv, fc, rc, macs (Table 1)
    actions: Mapping[str, Mapping[str, Any]]      # variant -> action dict
    mem_share: Mapping[str, float] = field(default_factory=dict)   # variant -> memory-bound share (0..1)
    qos_ms: float = 50.0

    def key(self, v: Variance) -> str:
        f = self.features
        return state_key(f.get("conv", 0), f.get("fc", 0), f.get("rc", 0), f.get("macs", 0),
                         v.co_cpu, v.co_mem, v.rssi_w, v.rssi_p)


@dataclass
class Outcomes:
    """Every action's result for one inference (arrays over the board's actions; an action the
    model cannot run has latency and energy inf; ``allowed`` marks those it can run at the
    accuracy target)."""

    latency_ms: np.ndarray
    energy_mj: np.ndarray
    reward: np.ndarray
    qos_met: np.ndarray
    allowed: np.ndarray

    @property
    def opt(self) -> int:
        """The oracle's action for these outcomes: among the actions meeting the accuracy target,
        the least energy of those meeting the QoS target, or, when none meets it, the fastest
        (AutoScale Sec. 5.1's Opt: the most energy-efficient target satisfying QoS and accuracy,
        QoS as much as possible). On ``Board.expected`` it is Opt; on a noisy draw, the oracle
        that also knows the noise."""
        ok = self.allowed & self.qos_met
        if ok.any():
            return int(np.argmin(np.where(ok, self.energy_mj, np.inf)))
        return int(np.argmin(np.where(self.allowed, self.latency_ms, np.inf)))

    @property
    def best_reward(self) -> int:
        """The action with the largest Eq. 5 reward in hindsight (what Q-learning maximises)."""
        return int(np.argmax(np.where(self.allowed, self.reward, -np.inf)))


class Board:
    """A target's AutoScale actions for a set of models, and the simulator of their inferences."""

    def __init__(self, target: str, actions: Sequence[Mapping[str, Any]], models: Sequence[SimModel],
                 base_power_mw: float, links: Mapping[str, LinkInfo] | None, hyper: Hyper | None = None,
                 min_accuracy: float = 0.0, noise_sigma: float = NOISE_SIGMA) -> None:
        if not models:
            raise ValueError("a board needs at least one model")
        self.target = target
        self.action_info = [dict(a) for a in actions]          # the board-level description (kind, precision, ...)
        self.actions = tuple(str(a["variant"]) for a in actions)
        self.models = list(models)
        self.base_power_mw = float(base_power_mw)
        self.links = dict(links or {})
        self.hyper = hyper or Hyper()
        self.min_accuracy = float(min_accuracy)
        self.noise_sigma = float(noise_sigma)
        n = len(self.actions)
        self.remote = np.array([bool(a.get("remote")) for a in actions])
        self.kind = [str(a.get("kind") or a.get("device")) for a in actions]
        self._allowed = []
        self._acts: list[list[Mapping[str, Any] | None]] = []
        self._mem = []
        for m in self.models:
            acts = [m.actions.get(name) for name in self.actions]
            self._acts.append(acts)
            self._allowed.append(np.array([a is not None and float(a.get("accuracy", 1.0)) >= self.min_accuracy
                                           for a in acts], dtype=bool))
            self._mem.append(np.array([float(m.mem_share.get(name, 0.0)) for name in self.actions]))
            if not self._allowed[-1].any():
                raise ValueError(f"model {m.name!r}: no action of {target} meets the accuracy target")
        #: per model, the reward's energy unit: its least predicted action energy (mJ)
        self.energy_ref_mj = [reference_energy_mj([a for a in acts if a is not None], self.base_power_mw, self.links)
                              for acts in self._acts]
        self.index = {name: i for i, name in enumerate(self.actions)}
        if n != len(self.index):
            raise ValueError(f"{target}: an action is listed twice")
        self._expected: dict[tuple[int, Variance], Outcomes] = {}

    # ------------------------------------------------------------------ names
    def find(self, *, device: str | None = None, precision: str | None = None, top: bool = False,
             remote: bool | None = None) -> list[int]:
        """Indices of the actions matching the filters; ``top`` keeps the highest frequency of each
        (device, precision)."""
        out = []
        for i, a in enumerate(self.action_info):
            if device is not None and (a.get("device") != device and a.get("kind") != device):
                continue
            if precision is not None and a.get("precision", "float32") != precision:
                continue
            if remote is not None and bool(a.get("remote")) != remote:
                continue
            out.append(i)
        if top:
            best: dict[tuple, int] = {}
            for i in out:
                a = self.action_info[i]
                k = (a.get("device"), a.get("precision", "float32"))
                if k not in best or float(a.get("freq_mhz") or 0) > float(self.action_info[best[k]].get("freq_mhz") or 0):
                    best[k] = i
            out = sorted(best.values())
        return out

    def allowed(self, m: int) -> np.ndarray:
        return self._allowed[m]

    def key(self, m: int, v: Variance) -> str:
        return self.models[m].key(v)

    # ------------------------------------------------------------------ costs
    def noise(self, rng: np.random.Generator) -> np.ndarray:
        """One inference's noise factors, one per action (drawn for all actions every inference)."""
        z = np.clip(rng.standard_normal(len(self.actions)), -NOISE_CLIP, NOISE_CLIP)
        return 1.0 + self.noise_sigma * z

    def _rssi(self, v: Variance) -> dict[str, float]:
        return {name: v.rssi(link.kind) for name, link in self.links.items()}

    def outcome(self, m: int, a: int, v: Variance, noise: float | np.ndarray) -> tuple[float, float, float]:
        """(latency ms, energy mJ, reward) of model ``m`` on action ``a`` under ``v`` with noise
        factor ``noise`` (the factor itself, or the inference's array of factors)."""
        act = self._acts[m][a]
        if act is None:     # the model cannot run there: Eq. 5's worst accuracy penalty
            return math.inf, math.inf, -100.0
        z = float(noise[a]) if isinstance(noise, np.ndarray) else float(noise)
        model = self.models[m]
        if act.get("remote"):
            rssi = self._rssi(v)
            t_tx, t_rx = link_times_ms(act, self.links, rssi)
            latency = (float(act["compute_ms"]) + t_tx + t_rx) * z
            energy = energy_mj(act, latency, self.base_power_mw, self.links, rssi, t_tx * z, t_rx * z)
        else:
            latency = float(act["compute_ms"]) * slowdown(self.kind[a], False, self._mem[m][a], v) * z
            energy = energy_mj(act, latency, self.base_power_mw, self.links)
        r = reward(latency, energy, float(act.get("accuracy", 1.0)), model.qos_ms, self.min_accuracy, self.hyper,
                   self.energy_ref_mj[m])
        return latency, energy, r

    def outcomes(self, m: int, v: Variance, noise: np.ndarray) -> Outcomes:
        """Every action's result for one inference (the oracle's and the baselines' view)."""
        n = len(self.actions)
        lat, en, rw = np.full(n, np.inf), np.full(n, np.inf), np.full(n, -100.0)
        for a in range(n):
            lat[a], en[a], rw[a] = self.outcome(m, a, v, noise)
        return Outcomes(lat, en, rw, lat < self.models[m].qos_ms, self._allowed[m].copy())

    def expected(self, m: int, v: Variance) -> Outcomes:
        """Every action's noise-free result (the expected-best action: what a learner can know);
        remembered per (model, variance): static environments repeat theirs."""
        got = self._expected.get((m, v))
        if got is None:
            if len(self._expected) > 100_000:
                self._expected.clear()
            got = self._expected[(m, v)] = self.outcomes(m, v, np.ones(len(self.actions)))
        return got
