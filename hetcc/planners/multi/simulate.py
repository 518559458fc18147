"""A discrete-event simulation of concurrent pipelines (SimPy): the contention model's check.

The same system ``contention.predict`` models, event by event. Each model keeps its pipeline
full, one worker per stage, in one of two ways:

- ``population=k`` (default 1): a ring, as ``hetcc run --concurrent`` builds it: ``k`` inferences
  per stage circulate, the last stage handing its slot back to the first;
- ``population=None``: stage 0 always has a new inference and a bounded queue of ``queue``
  inferences sits between consecutive stages (a worker whose next queue is full holds its
  finished inference until there is room).

Per device:

- ``shared``: one stage execution at a time, first come first served (a SimPy ``Resource`` of
  capacity 1), ``switch_ms[d]`` paid before an execution of another model than the last one;
- ``slice``: round robin over the models that use the device, each a quantum of ``quantum_ms``
  of exclusive use (an execution that does not finish within it resumes at the model's next
  turn), ``switch_ms[d]`` paid when the device turns to another model; a model with nothing to
  run is skipped (the device never idles while a model waits).

Service times are the stage costs (``MixProblem.stage_ms``), exactly (``cv=0``) or drawn from a
gamma distribution of that mean and coefficient of variation ``cv`` (seeded). Throughput is
counted over ``[warmup_ms, horizon_ms]``.

SimPy is imported when a simulation runs (the ``sim`` extra): ``import hetcc.planners.multi``
never needs it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .contention import DEFAULT_QUANTUM_MS, SHARING, service
from .mix import MixProblem, Pipeline

#: inferences each model would complete in the default horizon if every stage of every model ran
#: one after another (the real horizon gives each at least about this many)
DEFAULT_INFERENCES = 200


@dataclass(frozen=True)
class Simulation:
    """What a simulation measured over its window."""

    throughput: np.ndarray      # [N] inferences/s
    utilisation: np.ndarray     # [D] busy fraction (switches included)
    busy: np.ndarray            # [N, D] fraction of device d's time on model m (switches included)
    completed: np.ndarray       # [N] inferences completed in the window
    window_ms: float            # horizon - warm-up


def _need_simpy() -> Any:
    try:
        import simpy
    except ImportError:
        raise ImportError("the discrete-event simulation needs SimPy: pip install 'hetcc[sim]'") from None
    return simpy


class _Clock:
    """Busy time inside the measurement window."""

    def __init__(self, n: int, d: int, lo: float, hi: float) -> None:
        self.busy = np.zeros((n, d))
        self.lo, self.hi = lo, hi

    def add(self, m: int, d: int, start: float, end: float) -> None:
        a, b = max(start, self.lo), min(end, self.hi)
        if b > a:
            self.busy[m, d] += b - a


def simulate(mix: MixProblem, pipelines: Sequence[Pipeline], *, sharing: str = "shared",
             quantum_ms: float | None = None, horizon_ms: float | None = None, warmup_ms: float | None = None,
             queue: int = 1, population: int | None = 1, cv: float = 0.0, seed: int = 0) -> Simulation:
    """Simulate ``pipelines`` running at once (see the module docstring) and measure them.

    ``horizon_ms`` defaults to DEFAULT_INFERENCES x the sum of every stage's service time,
    ``warmup_ms`` to a tenth of the horizon. ValueError for bad arguments or pipelines."""
    simpy = _need_simpy()
    if sharing not in SHARING:
        raise ValueError(f"unknown sharing {sharing!r}: one of {', '.join(SHARING)}")
    q = DEFAULT_QUANTUM_MS if quantum_ms is None else float(quantum_ms)
    if not (math.isfinite(q) and q > 0):
        raise ValueError(f"quantum_ms must be a positive number of ms, got {quantum_ms!r}")
    if int(queue) < 1:
        raise ValueError(f"queue must hold at least 1 inference, got {queue!r}")
    if population is not None and int(population) < 1:
        raise ValueError(f"population must be at least 1 inference per stage, got {population!r}")
    if not cv >= 0:
        raise ValueError(f"cv must be >= 0, got {cv!r}")
    s = service(mix, pipelines)
    horizon = float(horizon_ms) if horizon_ms is not None else DEFAULT_INFERENCES * float(s.sum())
    warm = float(warmup_ms) if warmup_ms is not None else 0.1 * horizon
    if not (horizon > 0 and 0 <= warm < horizon):
        raise ValueError(f"need 0 <= warmup_ms < horizon_ms, got {warm} and {horizon}")
    rng = np.random.default_rng(seed)
    env = simpy.Environment()
    N, D = mix.n_models, mix.n_devices
    sw = np.asarray(mix.switch_ms, dtype=np.float64)
    clock = _Clock(N, D, warm, horizon)
    done = np.zeros(N, dtype=np.int64)

    def draw(mean: float) -> float:
        if cv <= 0 or mean <= 0:
            return mean
        shape = 1.0 / (cv * cv)
        return float(rng.gamma(shape, mean / shape))

    if sharing == "shared":
        devices = [simpy.Resource(env, capacity=1) for _ in range(D)]
        last: list[int | None] = [None] * D

        def execute(m: int, d: int, mean: float) -> Any:
            with devices[d].request() as req:
                yield req
                if last[d] is not None and last[d] != m:
                    t0 = env.now
                    yield env.timeout(sw[d])
                    clock.add(m, d, t0, env.now)
                last[d] = m
                t0 = env.now
                yield env.timeout(draw(mean))
                clock.add(m, d, t0, env.now)
    else:
        slicers = [_Slicer(env, d, q, float(sw[d]), clock) for d in range(D)]

        def execute(m: int, d: int, mean: float) -> Any:
            yield from slicers[d].run(m, draw(mean))

    def worker(m: int, k: int, pipe: Pipeline, inq: Any, outq: Any, last: bool) -> Any:
        stage = pipe[k]
        mean = mix.stage_ms(m, stage)
        while True:
            if inq is not None:
                yield inq.get()
            yield from execute(m, stage.device, mean)
            if last and env.now >= warm:
                done[m] += 1
            if outq is not None:
                yield outq.put(1)

    for m, pipe in enumerate(pipelines):
        K = len(pipe)
        if population is None:      # stage 0 always has a new inference; bounded queues between stages
            queues = [simpy.Store(env, capacity=int(queue)) for _ in range(K - 1)]
            links = [(queues[k - 1] if k > 0 else None, queues[k] if k < K - 1 else None) for k in range(K)]
        else:                       # a ring: n inferences circulate, the last stage hands its slot back
            n = K * int(population)
            queues = [simpy.Store(env, capacity=n) for _ in range(K)]
            for _ in range(n):
                queues[0].put(1)
            links = [(queues[k], queues[(k + 1) % K]) for k in range(K)]
        for k in range(K):
            env.process(worker(m, k, tuple(pipe), links[k][0], links[k][1], k == K - 1))
    env.run(until=horizon)
    window = horizon - warm
    busy = clock.busy / window
    return Simulation(throughput=done / window * 1000.0, utilisation=busy.sum(axis=0), busy=busy,
                      completed=done.copy(), window_ms=window)


class _Slicer:
    """One device's round-robin time slicing (preemptive at quantum ends, resumed next turn)."""

    def __init__(self, env: Any, d: int, quantum: float, switch: float, clock: _Clock) -> None:
        self.env, self.d, self.quantum, self.switch, self.clock = env, d, quantum, switch, clock
        self.pending: dict[int, list[Any]] = {}      # model -> [remaining ms, done event]
        self.order: list[int] = []                   # models in first-seen order (the round)
        self.turn = 0
        self.last: int | None = None
        self.wake = env.event()
        env.process(self.loop())

    def run(self, m: int, work: float) -> Any:
        if m not in self.order:
            self.order.append(m)
        ev = self.env.event()
        self.pending[m] = [work, ev]
        if not self.wake.triggered:
            self.wake.succeed()
        yield ev

    def loop(self) -> Any:
        env = self.env
        while True:
            ready = [m for m in self.order if m in self.pending]
            if not ready:
                self.wake = env.event()
                yield self.wake
                continue
            n = len(self.order)
            m = next(self.order[(self.turn + i) % n] for i in range(n) if self.order[(self.turn + i) % n] in self.pending)
            self.turn = (self.order.index(m) + 1) % n
            if self.last is not None and self.last != m and self.switch > 0:
                t0 = env.now
                yield env.timeout(self.switch)
                self.clock.add(m, self.d, t0, env.now)
            self.last = m
            budget = self.quantum
            while budget > 1e-12 and m in self.pending:
                job = self.pending[m]
                run = min(budget, job[0])
                t0 = env.now
                yield env.timeout(run)
                self.clock.add(m, self.d, t0, env.now)
                budget -= run
                job[0] -= run
                if job[0] <= 1e-12:
                    del self.pending[m]
                    job[1].succeed()
                    # the worker takes its next inference, if it has one, at this same instant
                    # (a few zero-time steps: its hand-over through the queues)
                    for _ in range(8):
                        yield env.timeout(0)
                        if m in self.pending:
                            break


__all__ = ["DEFAULT_INFERENCES", "Simulation", "simulate"]
