"""THE contention model: the steady-state throughput of several pipelines sharing devices.

Every workload planner, baseline, ``hetcc inspect``, the benchmark and the tests use ``predict``;
``hetcc.planners.multi.simulate`` checks it against a discrete-event simulation of the same
pipelines (docs/contention.md has the derivation, the choice and the measured error).

The system it models (what ``hetcc run --concurrent`` builds): each model keeps its pipeline
full, one worker per stage with a bounded queue between stages, a new inference entering as soon
as the first stage is free. A device serves one stage execution at a time at the speed of the
cost tables (they assume the stage has the whole device).

``sharing="shared"`` (FairBoost's setting): the stages waiting at a device are served one
execution each in arrival order (first come, first served; every stage has at most one execution
waiting, so backlogged stages take turns), and the device pays ``switch_ms[d]`` before an
execution of another model than the one it served last. Fluid limit: the rates are **max-min
fair** (progressive filling): all models' rates rise together; when a device saturates
(utilisation 1, switches included) the models still rising through it stop there; the others go
on. A device's switch rate is ``min(sum x, 2 (sum x - max x))`` (every execution switches when
the models take turns; a dominant model's run is broken twice by each execution of the others).
Between two saturations the device load is piecewise linear in the common level, so every step
is closed-form: no iteration, no tolerance.

``sharing="slice"`` (round-robin baselines): a device gives each model using it a time quantum
(``quantum_ms``) of exclusive use in turn, paying ``switch_ms[d]`` per quantum when it hosts two
models or more. Modelled for whole models only (one stage each, what the rr baselines run): a
pipeline cut across time-sliced devices stalls whenever a neighbouring stage is out of its
quantum, which no fluid model here captures (the simulation shows errors of 10-60%), so
``predict`` refuses it.

Closed forms (tests/planners/multi): one model alone = 1 / its slowest stage; k identical models
whole on one device = 1 / (k (s + switch)) each under ``shared`` and q / ((q + switch) k s)
under ``slice``; no device busier than 100%.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .mix import MixProblem, Pipeline

SHARING = ("shared", "slice")
#: the round-robin quantum when ``predict`` is not given one (ms): long against the switch costs
#: of the built-in boards (a few %), short against a human's patience; an assumed figure
DEFAULT_QUANTUM_MS = 50.0


@dataclass(frozen=True)
class Prediction:
    """The contention model's answer for one set of pipelines (all arrays read-only)."""

    throughput: np.ndarray       # [N] inferences/s of each model when all run at once
    alone: np.ndarray            # [N] inferences/s of each model's pipeline alone on the board
    utilisation: np.ndarray      # [D] busy fraction of each device, 0..1 (switches included)
    busy: np.ndarray             # [N, D] fraction of device d's time spent on model m (incl. switch costs)

    def to_json(self, mix: MixProblem) -> dict:
        """JSON-able: per model throughput and alone, per device utilisation."""
        return {"throughput": {n: float(x) for n, x in zip(mix.names, self.throughput)},
                "alone": {n: float(x) for n, x in zip(mix.names, self.alone)},
                "utilisation": {d: float(u) for d, u in zip(mix.devices, self.utilisation)}}


def _ro(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def service(mix: MixProblem, pipelines: Sequence[Pipeline], *, check: bool = True) -> np.ndarray:
    """[N, D] ms one inference of model m spends on device d (0: no stage there); ValueError
    naming the model for a malformed or illegal pipeline."""
    if len(pipelines) != mix.n_models:
        raise ValueError(f"{len(pipelines)} pipelines for {mix.n_models} models")
    s = np.zeros((mix.n_models, mix.n_devices))
    for m, pipe in enumerate(pipelines):
        if check:
            mix.check(m, pipe)
        for st in pipe:
            s[m, st.device] = mix.stage_ms(m, st)
    return s


def _switch_rate(x: np.ndarray, on: np.ndarray) -> float:
    """Switches per ms of a device whose models (``on``) run at rates ``x`` (per ms)."""
    if on.sum() < 2:
        return 0.0
    xs = x[on]
    total = float(xs.sum())
    return min(total, 2.0 * (total - float(xs.max())))


def _shared(s: np.ndarray, sw: np.ndarray) -> np.ndarray:
    """Max-min fair rates (per ms) under first-come-first-served sharing with switch costs."""
    N, D = s.shape
    on = s > 0
    many = on.sum(axis=0) >= 2
    x = np.zeros(N)
    active = np.ones(N, dtype=bool)
    level = 0.0
    # a model whose stages all take no time is unbounded: it never loads a device
    free = ~on.any(axis=1)
    x[free] = math.inf
    active &= ~free
    while active.any():
        best, where = math.inf, -1
        for d in range(D):
            a_set = on[:, d] & active
            if not a_set.any():
                continue
            f_set = on[:, d] & ~active
            s_a = float(s[a_set, d].sum())
            s_f = float((x[f_set] * s[f_set, d]).sum())
            x_f = float(x[f_set].sum())
            a = int(a_set.sum())
            if not many[d]:
                t = (1.0 - s_f) / s_a if s_a > 0 else math.inf
            else:
                c = float(sw[d])
                # g(t) = min(G1, G2): every execution switches / a dominant run broken twice per other execution
                roots = []
                for const, slope in ((s_f + c * x_f, s_a + c * a), (s_f + 2 * c * x_f, s_a + 2 * c * (a - 1))):
                    roots.append((1.0 - const) / slope if slope > 0 else (math.inf if const < 1 else -math.inf))
                t = max(roots)
            t = max(t, level)
            if t < best:
                best, where = t, d
        if where < 0 or not math.isfinite(best):
            x[active] = math.inf
            break
        level = best
        stop = on[:, where] & active
        x[stop] = level
        active &= ~stop
    return x


def _slice(s: np.ndarray, sw: np.ndarray, quantum: float) -> np.ndarray:
    """Rates (per ms) of whole models (one device each) under round-robin time slicing: a device
    hosting n >= 2 models gives each n-th of its time less one switch per quantum."""
    on = s > 0
    n = on.sum(axis=0)
    useful = np.where(n >= 2, quantum / (quantum + sw), 1.0)
    x = np.full(s.shape[0], math.inf)
    for m in range(s.shape[0]):
        devs = np.nonzero(on[m])[0]
        if devs.size:
            d = int(devs[0])
            x[m] = useful[d] / (n[d] * s[m, d])
    return x


def predict(mix: MixProblem, pipelines: Sequence[Pipeline], *, sharing: str = "shared",
            quantum_ms: float | None = None) -> Prediction:
    """Steady-state throughput of every model of ``mix`` when all run ``pipelines`` at once.

    ``sharing``: ``shared`` (devices serve waiting stages in turn, paying ``switch_ms`` between
    models) or ``slice`` (round-robin time slices of ``quantum_ms``, default
    ``DEFAULT_QUANTUM_MS``, paying ``switch_ms`` per slice). ValueError for an unknown sharing,
    a non-positive quantum or a malformed / illegal pipeline (naming the model).
    """
    if sharing not in SHARING:
        raise ValueError(f"unknown sharing {sharing!r}: one of {', '.join(SHARING)}")
    q = DEFAULT_QUANTUM_MS if quantum_ms is None else float(quantum_ms)
    if not (math.isfinite(q) and q > 0):
        raise ValueError(f"quantum_ms must be a positive number of ms, got {quantum_ms!r}")
    s = service(mix, pipelines)
    if sharing == "slice":
        for name, pipe in zip(mix.names, pipelines):
            if len(pipe) > 1:
                raise ValueError(f"time slicing is modelled for whole models (one stage each); model {name!r} "
                                 f"has {len(pipe)} stages (use sharing='shared' for pipelines)")
    on = s > 0
    sw = np.asarray(mix.switch_ms, dtype=np.float64)
    x = _shared(s, sw) if sharing == "shared" else _slice(s, sw, q)        # per ms
    with np.errstate(divide="ignore"):
        alone = np.where(on.any(axis=1), 1.0 / np.where(on, s, 0.0).max(axis=1), math.inf)
    xf = np.where(np.isfinite(x), x, 0.0)
    work = xf[:, None] * s                                                  # [N, D]
    busy = work.copy()
    for d in range(mix.n_devices):
        if on[:, d].sum() < 2:
            continue
        if sharing == "shared":
            total = float(xf[on[:, d]].sum())
            rate = _switch_rate(xf, on[:, d])
            if total > 0:
                busy[on[:, d], d] += sw[d] * rate * xf[on[:, d]] / total
        else:
            # one switch per quantum a model works: switch time in proportion to its work
            busy[on[:, d], d] += work[on[:, d], d] * sw[d] / q
    util = np.minimum(busy.sum(axis=0), 1.0)
    return Prediction(throughput=_ro(x * 1000.0), alone=_ro(alone * 1000.0), utilisation=_ro(util),
                      busy=_ro(np.minimum(busy, 1.0)))


__all__ = ["DEFAULT_QUANTUM_MS", "Prediction", "SHARING", "predict", "service"]
