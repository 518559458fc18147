"""Small mixes for the workload-model tests (numbers only)."""
from __future__ import annotations

import numpy as np

from hetcc.planners.multi.mix import MixProblem, random_pipeline


def mix_from(layer_ms, *, switch=None, t_in=None, t_out=None, devices=None, reference=None, names=None) -> MixProblem:
    """A MixProblem from per-model [L, D] lists (transfers 0 unless given)."""
    layer = [np.asarray(t, dtype=np.float64) for t in layer_ms]
    D = layer[0].shape[1]
    zeros = [np.zeros_like(t) for t in layer]
    return MixProblem(names=tuple(names or (f"m{i}" for i in range(len(layer)))),
                      devices=tuple(devices or (f"d{d}" for d in range(D))), state=tuple(range(D)),
                      layer_ms=tuple(layer), in_ms=tuple(zeros if t_in is None else t_in),
                      out_ms=tuple(zeros if t_out is None else t_out),
                      switch_ms=np.zeros(D) if switch is None else np.asarray(switch, dtype=np.float64),
                      reference=D - 1 if reference is None else reference)


def random_mix(rng: np.random.Generator, n_models: int | None = None, n_devices: int = 3,
               switch: bool = True) -> MixProblem:
    """2-5 models of 3-12 layers, 0.2-20 ms a layer, devices 1x-4x apart, small transfers."""
    N = int(rng.integers(2, 6)) if n_models is None else n_models
    speed = rng.uniform(0.25, 1.0, size=n_devices)
    layers, t_in, t_out = [], [], []
    for _ in range(N):
        L = int(rng.integers(3, 13))
        base = rng.lognormal(0.0, 1.0, size=L)
        layers.append(base[:, None] / speed[None, :] * rng.uniform(0.8, 1.25, size=(L, n_devices)))
        t_in.append(rng.uniform(0.0, 0.3, size=(L, n_devices)))
        t_out.append(rng.uniform(0.0, 0.3, size=(L, n_devices)))
    sw = rng.uniform(0.0, 1.0, size=n_devices) if switch else np.zeros(n_devices)
    return mix_from(layers, switch=sw, t_in=t_in, t_out=t_out)


def random_pipelines(mix: MixProblem, rng: np.random.Generator) -> list:
    return [random_pipeline(mix, m, rng) for m in range(mix.n_models)]
