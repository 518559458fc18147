"""FairBoost's metrics (Table 3) and its reward (Algorithm 1).

- workload throughput  T_w = (1/N) sum_i t_i (inferences/s);
- normalised T         T_w / T_w of the baseline: every model whole on the reference device (the
                       GPU) at once, under the contention model;
- Jain fairness        J = (sum_i r_i)^2 / (N sum_i r_i^2), r_i = t_i / t_ideal_i, t_ideal_i the
                       model alone whole on the reference device (``MixProblem.ideal``);
- overall gain         O = T_norm x J.

``reward`` is Algorithm 1 line by line. The paper gives no values for alpha, beta and gamma;
the defaults here (alpha = gamma = 10, beta = 0.5) are chosen so each half spans nearly all of
[-1, 1] over its input's range ([0, 1] for both the std ratio and t_achieved) and the two weigh
the same; docs/contention.md says so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .contention import predict
from .mix import MixProblem

#: Algorithm 1's weights when a caller gives none (the paper gives no values; see the module doc)
ALPHA, BETA, GAMMA = 10.0, 0.5, 10.0


@dataclass(frozen=True)
class Score:
    throughput: float      # T_w, mean inferences/s
    normalised: float      # T_w / T_w of all models whole on the reference device at once
    jain: float            # J with t_ideal = each model alone on the reference device
    overall: float         # O = normalised * jain

    def to_json(self) -> dict[str, float]:
        """The manifest's names: throughput_ips, normalised, jain, overall."""
        return {"throughput_ips": self.throughput, "normalised": self.normalised, "jain": self.jain,
                "overall": self.overall}


def workload_throughput(throughput: Sequence[float] | np.ndarray) -> float:
    """T_w: the mean of the models' inferences/s."""
    t = np.asarray(throughput, dtype=np.float64)
    if t.size == 0:
        raise ValueError("no model throughputs to score")
    return float(t.mean())


def _against_ideal(throughput: Sequence[float] | np.ndarray,
                   ideal: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(throughputs, ideal throughputs) as arrays of one shape, every ideal above 0 (ValueError)."""
    t = np.asarray(throughput, dtype=np.float64)
    ref = np.asarray(ideal, dtype=np.float64)
    if t.shape != ref.shape or t.size == 0:
        raise ValueError(f"{t.size} throughputs for {ref.size} ideal throughputs")
    if not (ref > 0).all():
        raise ValueError("every ideal throughput must be > 0")
    return t, ref


def jain(throughput: Sequence[float] | np.ndarray, ideal: Sequence[float] | np.ndarray) -> float:
    """Jain's index of t / t_ideal; 0 when no model runs at all (nothing is not fair, it is
    nothing)."""
    t, ref = _against_ideal(throughput, ideal)
    r = t / ref
    sq = float((r * r).sum())
    return float(r.sum() ** 2 / (r.size * sq)) if sq > 0 else 0.0


def baseline_throughput(mix: MixProblem) -> float:
    """T_w of FairBoost's baseline: every model whole on the reference device at once."""
    return workload_throughput(predict(mix, mix.baseline()).throughput)


def score(mix: MixProblem, throughput: Sequence[float] | np.ndarray, *, baseline: float | None = None) -> Score:
    """T_w, T_norm, J and O of the models' concurrent ``throughput`` (inferences/s, workload
    order). ``baseline``: the baseline's T_w when the caller has it (else computed)."""
    t = np.asarray(throughput, dtype=np.float64)
    if t.shape != (mix.n_models,):
        raise ValueError(f"{t.size} throughputs for {mix.n_models} models")
    tw = workload_throughput(t)
    base = baseline_throughput(mix) if baseline is None else float(baseline)
    norm = tw / base if base > 0 else 0.0
    j = jain(t, mix.ideal())
    return Score(throughput=tw, normalised=norm, jain=j, overall=norm * j)


def _sigmoid(v: float) -> float:
    return 1.0 / (1.0 + math.exp(-v)) if v >= 0 else math.exp(v) / (1.0 + math.exp(v))


def reward(throughput: Sequence[float] | np.ndarray, ideal: Sequence[float] | np.ndarray,
           alpha: float = ALPHA, beta: float = BETA, gamma: float = GAMMA) -> float:
    """FairBoost Algorithm 1: (1 - beta) * fairness + beta * throughput, in (-1, 1).

    ratios = std(t / t_ideal * 100) / 50; fairness = 2 sigmoid(-alpha (ratios - 0.5)) - 1;
    t_achieved = sum t / sum t_ideal; throughput = 2 sigmoid(gamma (t_achieved - 0.5)) - 1.
    (std: the population standard deviation, numpy's default.)"""
    t, ref = _against_ideal(throughput, ideal)
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"beta weighs throughput against fairness and must be in [0, 1], got {beta}")
    ratios = float(np.std(t / ref * 100.0)) / 50.0
    fairness = 2.0 * _sigmoid(-alpha * (ratios - 0.5)) - 1.0
    achieved = float(t.sum() / ref.sum())
    thr = 2.0 * _sigmoid(gamma * (achieved - 0.5)) - 1.0
    return (1.0 - beta) * fairness + beta * thr


__all__ = ["ALPHA", "BETA", "GAMMA", "Score", "baseline_throughput", "jain", "reward", "score",
           "workload_throughput"]
