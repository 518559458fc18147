"""dqn: HERTI's deadline-aware DQN planner (model slicing and execution planner, Alg. 1-2).

``env`` is the environment (a ``gymnasium.Env``: state, actions, mask, reward); ``agent`` trains
the Q-network with TorchRL and returns the best state that met the limits. This module stays
light (options and the spec only): torch, TorchRL and gymnasium load when the planner runs.
Defaults are HERTI's Table II (depth 4, width 512, lr 1e-3, gamma 0.9, batch 32, Adam eps 1e-5).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..context import PlanContext
from ..metrics import Objective
from ..problem import Plan, PlanningProblem
from ..registry import PlannerSpec


@dataclass(frozen=True)
class DQNOptions:
    steps: int = field(default=10_000, metadata={"doc": "environment steps (Alg. 1's t_max); a step budget stops earlier"})
    episode: int = field(default=50, metadata={"doc": "restart the walk every this many steps, from a state of the "
                                              "elite pool (0: one walk, as Alg. 1)"})
    elite: int = field(default=8, metadata={"doc": "restart each episode from one of the this many best distinct "
                                            "states met so far (1: the best, as Alg. 1)"})
    patience: int = field(default=0, metadata={"doc": "stop after this many steps without a better state (0: never)"})
    depth: int = field(default=4, metadata={"doc": "Q-network hidden layers (Table II)",
                                            "tune": ("choice", [2, 3, 4])})
    width: int = field(default=512, metadata={"doc": "units per hidden layer (Table II)",
                                              "tune": ("choice", [128, 256, 512])})
    lr: float = field(default=1e-3, metadata={"doc": "Adam learning rate (Table II)",
                                              "tune": ("loguniform", 1e-4, 3e-3)})
    gamma: float = field(default=0.9, metadata={"doc": "discount factor (Table II)",
                                                "tune": ("uniform", 0.8, 0.99)})
    batch_size: int = field(default=32, metadata={"doc": "minibatch size (Table II)",
                                                  "tune": ("choice", [32, 64, 128])})
    adam_eps: float = field(default=1e-5, metadata={"doc": "Adam epsilon (Table II)"})
    eps_start: float = field(default=1.0, metadata={"doc": "exploration rate at step 0"})
    eps_end: float = field(default=0.2, metadata={"doc": "exploration rate after the decay (HERTI gives no "
                                                  "schedule; 0.2 keeps short-deadline walks from settling)"})
    eps_decay: float = field(default=0.5, metadata={"doc": "share of the steps over which epsilon decays linearly",
                                                    "tune": ("uniform", 0.2, 0.8)})
    memory: int = field(default=50_000, metadata={"doc": "replay memory capacity (transitions)"})
    warmup: int = field(default=256, metadata={"doc": "transitions collected before training starts"})
    train_every: int = field(default=4, metadata={"doc": "environment steps per gradient step",
                                                  "tune": ("choice", [1, 2, 4, 8])})
    target_update: int = field(default=500, metadata={"doc": "gradient steps between target-network copies",
                                                      "tune": ("choice", [100, 250, 500, 1000])})
    double_dqn: bool = field(default=True, metadata={"doc": "Double-DQN targets (online argmax, target value)"})
    penalty: float = field(default=100.0, metadata={"doc": "Phi: the reward of a state that misses a limit (Eq. 11)"})
    mosaic_e: bool = field(default=True, metadata={"doc": "also start from MOSAIC-E (the dp energy plan) when it meets "
                                                   "the limits, or from its cuts lifted to faster states when it "
                                                   "misses the deadline: the walk's best is then never worse "
                                                   "(beyond HERTI, which starts at MOSAIC-P only)"})
    polish: bool = field(default=True, metadata={"doc": "after the walk, greedy descent from the best state over "
                                                 "short runs of the same actions (re-pick a slice's state, merge, "
                                                 "move a boundary, split) until no move improves it (beyond HERTI; "
                                                 "false: Alg. 1's best state as is)"})

    def validate(self) -> str | None:
        for name in ("steps", "elite", "depth", "width", "batch_size", "memory", "train_every", "target_update"):
            if getattr(self, name) < 1:
                return f"{name} must be at least 1"
        if not 0 <= self.eps_end <= self.eps_start <= 1:
            return "need 0 <= eps_end <= eps_start <= 1"
        if not (self.lr > 0 and self.adam_eps > 0 and 0 <= self.gamma < 1 and self.eps_decay > 0):
            return "need lr > 0, adam_eps > 0, 0 <= gamma < 1 and eps_decay > 0"
        if self.patience < 0 or self.warmup < 0 or self.episode < 0:
            return "patience, warmup and episode must not be negative"
        return None


def _run(problem: PlanningProblem, objective: Objective, ctx: PlanContext) -> Plan:
    try:
        from .agent import train
    except ImportError as exc:   # torch / torchrl / gymnasium missing
        from hetcc.core.errors import UsageError
        raise UsageError(f"--planner dqn needs the learn extra ({exc.name} is missing): "
                         "pip install 'hetcc[learn]'") from None
    return train(problem, objective, ctx)


SPECS = (PlannerSpec("dqn", "HERTI's deep Q-network planner: slicing, device and DVFS by epsilon-greedy DQN over "
                     "split/merge/device/frequency actions; best state meeting the deadline (seeded)",
                     _run, DQNOptions, metrics=("latency", "energy", "edp"), constraints=("deadline", "power_cap")),)

__all__ = ["DQNOptions", "SPECS"]
