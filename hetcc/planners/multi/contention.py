"""THE contention model: the steady-state throughput of several pipelines sharing devices.

Every workload planner, baseline, ``hetcc inspect``, the benchmark and the tests use ``predict``;
``hetcc.planners.multi.simulate`` checks it against a discrete-event simulation of the same
pipelines (docs/contention.md has the derivation, the choice and the measured error).

The system it models (what ``hetcc run --concurrent`` builds): each model keeps its pipeline
full, one worker per stage and one inference per stage in flight, circulating in a ring. A device
serves one stage execution at a time at the speed of the cost tables (they assume the stage has
the whole device).

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

Long executions (``population`` inferences per stage in flight, 1 as the runtime runs it): the
fluid assumes executions interleave finely. An execution that outlasts another model's whole
cycle on the same device does not: the other model stops while it runs (its inferences pile up
in front of the device; a pipeline's other stages run dry once the rest are through). Such
devices are modelled as held by their long executions a share of the time and free the rest
(``_phases``): in each phase the models not stopped share the devices max-min, and a model's
rate is the phases' mean. ``population=None``: the pure max-min fluid.

``sharing="slice"`` (round-robin baselines): a device gives each model using it a time quantum
(``quantum_ms``) of exclusive use in turn, paying ``switch_ms[d]`` per quantum when it hosts two
models or more. Exact for whole models (one stage each, what the rr baselines run). A pipeline
cut across time-sliced devices also stalls whenever a neighbouring stage is out of its quantum,
which this does not capture: for one it gives the least rate its stages' shares allow, an
optimistic approximation (the simulation shows errors of 10-60% on random pipelines); use
``shared`` for pipelines.

Closed forms (tests/planners/multi): one model alone = 1 / its slowest stage; k identical models
whole on one device = 1 / (k (s + switch)) each under ``shared`` and q / ((q + switch) k s)
under ``slice``; no device busier than 100%.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Mapping, Sequence

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
    return np.array(_service(mix, pipelines), dtype=np.float64).reshape(mix.n_models, mix.n_devices)


def _service(mix: MixProblem, pipelines: Sequence[Pipeline]) -> list[list[float]]:
    if len(pipelines) != mix.n_models:
        raise ValueError(f"{len(pipelines)} pipelines for {mix.n_models} models")
    s = [[0.0] * mix.n_devices for _ in range(mix.n_models)]
    for m, pipe in enumerate(pipelines):
        for st, c in zip(pipe, mix.pipeline_ms(m, pipe)):
            s[m][st.device] = c
    return s


def _switch_rate(x: Sequence[float], users: Sequence[int]) -> float:
    """Switches per ms of a device whose models ``users`` run at rates ``x`` (per ms)."""
    if len(users) < 2:
        return 0.0
    xs = [x[m] for m in users]
    total = sum(xs)
    return min(total, 2.0 * (total - max(xs)))


def _shared(s: list[list[float]], sw: Sequence[float],
            fixed: Mapping[int, float] | None = None) -> tuple[list[float], list[int]]:
    """Max-min fair rates (per ms) under first-come-first-served sharing with switch costs
    (progressive filling; each step closed-form), and for each model the device that stopped it
    (its bottleneck; -1 for a model that loads no device or whose rate is ``fixed``)."""
    N, D = len(s), len(sw)
    users = [[m for m in range(N) if s[m][d] > 0] for d in range(D)]
    x = [0.0] * N
    where_m = [-1] * N
    active = [True] * N
    for m in range(N):       # a model whose stages all take no time never loads a device
        if not any(v > 0 for v in s[m]):
            x[m], active[m] = math.inf, False
    for m, rate in (fixed or {}).items():
        x[m], active[m] = rate, False
    level = 0.0
    while any(active):
        best, where = math.inf, -1
        for d in range(D):
            a_set = [m for m in users[d] if active[m]]
            if not a_set:
                continue
            s_a = sum(s[m][d] for m in a_set)
            s_f = sum(x[m] * s[m][d] for m in users[d] if not active[m])
            x_f = sum(x[m] for m in users[d] if not active[m])
            a = len(a_set)
            if len(users[d]) < 2:
                t = (1.0 - s_f) / s_a
            else:
                c = sw[d]
                # g(t) = min(G1, G2): every execution switches / a dominant run broken twice per
                # execution of the others; g(t) = 1 where the later of the two lines reaches 1
                t = max((1.0 - s_f - c * x_f) / (s_a + c * a),
                        (1.0 - s_f - 2 * c * x_f) / (s_a + 2 * c * (a - 1)))
            t = max(t, level)
            if t < best:
                best, where = t, d
        level = best
        for m in users[where]:
            if active[m]:
                x[m], active[m], where_m[m] = level, False, where
    return x, where_m


#: the most long executions ``_phases`` tells apart (the rest stay in the fluid): 2^k phases at most
MAX_LONG = 4
#: a model using less than this share of a device does not decide whether an execution there is long
NEGLIGIBLE = 0.02


def _phases(s: list[list[float]], sw: Sequence[float], tokens: Sequence[int]) -> list[float]:
    """Rates (per ms) when long executions hold devices in turns, not finely interleaved.

    An execution of model j on device d (``B = s_jd + switch_d``) is *long* for another model m
    on d when it outlasts m's whole cycle (``tokens_m / x_m``, ``x`` the max-min rates): m then
    does not take turns with it but stops while it runs. Each device with long executions is held
    by one of them a share ``x_j B`` of the time and free of them the rest (devices independent;
    the ``MAX_LONG`` largest shares told apart). In each phase the models not stopped share the
    devices max-min (the long executors at their max-min rates, their long stages left out); a
    stopped model still flows ``hold / B`` of the phase at its free rate (its other ``tokens - 1``
    inferences, ``hold = (tokens - 1) / x``) unless the device that stops it is its bottleneck.
    A model's rate is the phases' mean; with one long execution on a device other than the
    model's bottleneck this is ``x (1 - x_j max(0, B - hold))``. An execution only counts as long
    when it outlasts the cycle of every model with a real share (``NEGLIGIBLE``) of the device."""
    N, D = len(s), len(sw)
    x0, _ = _shared(s, sw)
    hold = [(tokens[m] - 1) / x0[m] if 0 < x0[m] < math.inf else math.inf for m in range(N)]
    cycle = [tokens[m] / x0[m] if 0 < x0[m] < math.inf else math.inf for m in range(N)]
    longs: list[tuple[float, int, int]] = []           # (share of time, model, device)
    for d in range(D):
        users = [m for m in range(N) if s[m][d] > 0]
        for j in users:
            others = [m for m in users if m != j]
            if not others or not 0 < x0[j] < math.inf:
                continue
            b = s[j][d] + sw[d]
            # long when it outlasts the cycle of every model that takes a real share of the
            # device (one with a negligible share is stopped by it or not, it hardly matters)
            if any(b > cycle[m] for m in others) and all(b > cycle[m] for m in others
                                                         if x0[m] * s[m][d] >= NEGLIGIBLE):
                longs.append((x0[j] * b, j, d))
    if not longs:
        return x0
    longs = sorted(longs, reverse=True)[:MAX_LONG]
    by_device: dict[int, list[tuple[float, int]]] = {}
    for share, j, d in longs:
        by_device.setdefault(d, []).append((share, j))
    executors = {j for _, j, _ in longs}
    base = [list(row) for row in s]
    for _, j, d in longs:
        base[j][d] = 0.0                                  # its time there is the phases'
    fixed = {j: x0[j] for j in executors}
    # each device with long executions: held by one of them, or free of them
    choices = []
    for d, held in by_device.items():
        free = max(0.0, 1.0 - sum(sh for sh, _ in held))
        total = free + sum(min(sh, 1.0) for sh, _ in held)
        choices.append([(d, None, free / total)] + [(d, j, min(sh, 1.0) / total) for sh, j in held])
    free_x, free_neck = _shared(base, sw, fixed)
    out = [0.0] * N
    for combo in itertools.product(*choices):
        prob = math.prod(c[2] for c in combo)
        if prob <= 0:
            continue
        held = [(d, j) for d, j, _ in combo if j is not None]
        stopped: dict[int, float] = {}                     # model -> the longest execution stopping it
        at_neck: set[int] = set()                          # stopped at its own bottleneck
        for d, j in held:
            for m in range(N):
                if m != j and m not in executors and s[m][d] > 0 and s[j][d] + sw[d] > cycle[m]:
                    stopped[m] = max(stopped.get(m, 0.0), s[j][d] + sw[d])
                    if d == free_neck[m]:
                        at_neck.add(m)
        if stopped:
            phase = [[0.0] * D if m in stopped else row for m, row in enumerate(base)]
            xp, _ = _shared(phase, sw, fixed)
        else:
            xp = free_x
        for m in range(N):
            if m in executors:
                continue
            if m in stopped:
                # its other inferences keep its output going a while, unless the device that
                # stops it is its bottleneck: then they must pass there afterwards anyway
                if m not in at_neck:
                    out[m] += prob * min(1.0, hold[m] / stopped[m]) * free_x[m]
            else:
                out[m] += prob * xp[m]
    for j in executors:
        out[j] = x0[j]
    # the phases' mean can ask a device for a hair more than it has: scale its models to fit
    load = [sum(out[m] * s[m][d] for m in range(N) if 0 < out[m] < math.inf) for d in range(D)]
    for m in range(N):
        over = max((load[d] for d in range(D) if s[m][d] > 0), default=0.0)
        if over > 1.0:
            out[m] /= over
    return out


def _slice(s: list[list[float]], sw: Sequence[float], quantum: float) -> list[float]:
    """Rates (per ms) under round-robin time slicing: a device hosting n >= 2 models gives each an
    n-th of its time less one switch per quantum; a model runs at the least rate its stages get
    (exact for whole models; for pipelines an approximation, see the module docstring)."""
    N, D = len(s), len(sw)
    n = [sum(1 for m in range(N) if s[m][d] > 0) for d in range(D)]
    x = [math.inf] * N
    for m in range(N):
        for d in range(D):
            if s[m][d] > 0:
                useful = quantum / (quantum + sw[d]) if n[d] >= 2 else 1.0
                x[m] = min(x[m], useful / (n[d] * s[m][d]))
    return x


def predict(mix: MixProblem, pipelines: Sequence[Pipeline], *, sharing: str = "shared",
            quantum_ms: float | None = None, population: int | None = 1) -> Prediction:
    """Steady-state throughput of every model of ``mix`` when all run ``pipelines`` at once.

    ``sharing``: ``shared`` (devices serve waiting stages in turn, paying ``switch_ms`` between
    models) or ``slice`` (round-robin time slices of ``quantum_ms``, default
    ``DEFAULT_QUANTUM_MS``, paying ``switch_ms`` per slice). ``population``: inferences in flight
    per stage (1: the runtime's ring; None: unbounded buffering, no stalls). ValueError for an
    unknown sharing, a non-positive quantum or population, or a malformed / illegal pipeline
    (naming the model).
    """
    if sharing not in SHARING:
        raise ValueError(f"unknown sharing {sharing!r}: one of {', '.join(SHARING)}")
    q = DEFAULT_QUANTUM_MS if quantum_ms is None else float(quantum_ms)
    if not (math.isfinite(q) and q > 0):
        raise ValueError(f"quantum_ms must be a positive number of ms, got {quantum_ms!r}")
    if population is not None and not (isinstance(population, int) and population >= 1):
        raise ValueError(f"population must be a whole number of inferences per stage >= 1 (or None), got {population!r}")
    s = _service(mix, pipelines)
    N, D = mix.n_models, mix.n_devices
    sw = mix.switch_ms.tolist()
    if sharing == "shared":
        if population is None:
            x, _ = _shared(s, sw)                                          # per ms
        else:
            x = _phases(s, sw, [len(p) * population for p in pipelines])
    else:
        x = _slice(s, sw, q)
    alone = [1.0 / max(row) if max(row) > 0 else math.inf for row in s]
    xf = [v if math.isfinite(v) else 0.0 for v in x]
    busy = [[xf[m] * s[m][d] for d in range(D)] for m in range(N)]
    for d in range(D):
        users = [m for m in range(N) if s[m][d] > 0]
        if len(users) < 2:
            continue
        if sharing == "shared":
            total = sum(xf[m] for m in users)
            rate = _switch_rate(xf, users)
            if total > 0:
                for m in users:
                    busy[m][d] += sw[d] * rate * xf[m] / total
        else:
            # one switch per quantum a model works: switch time in proportion to its work
            for m in users:
                busy[m][d] += busy[m][d] * sw[d] / q
    b = np.minimum(np.array(busy, dtype=np.float64).reshape(N, D), 1.0)
    util = np.minimum(b.sum(axis=0), 1.0)
    return Prediction(throughput=_ro(np.array(x) * 1000.0), alone=_ro(np.array(alone) * 1000.0),
                      utilisation=_ro(util), busy=_ro(b))


__all__ = ["DEFAULT_QUANTUM_MS", "Prediction", "SHARING", "predict", "service"]
