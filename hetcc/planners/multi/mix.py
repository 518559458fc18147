"""The workload problem of several models running at once: stages, pipelines and ``MixProblem``.

A model of the mix runs as a **pipeline**: its layers cut into consecutive stages, each stage on
one device, successive inferences overlapping across the stages. FairBoost's action masking
holds: a model never returns to a device it has left, so a pipeline has at most one stage per
device. ``MixProblem`` holds the numbers a workload planner needs, per model and device, at ONE
device state per device (a device shared by several models runs at one frequency at a time; by
default its top state): each layer's latency, the transfer costs a stage pays at its ends, and
what a device pays to switch from one model's stage to another's (``switch_ms``, the target's
``devices.<name>.switch_ms``). The stage cost is ``PlanningProblem.slice_cost``'s latency at
that state, so a pipeline of one model alone costs what its plan costs.

Numbers only: no ONNX, no targets, no torch.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping, Sequence

import numpy as np

from hetcc.planners.problem import Slice, WorkloadProblem


@dataclass(frozen=True)
class Stage:
    """Layers ``first`` .. ``stop - 1`` of one model on device ``device`` (an index into
    ``MixProblem.devices``)."""

    device: int
    first: int
    stop: int


#: one model's stages in layer order (consecutive, covering every layer, distinct devices)
Pipeline = tuple[Stage, ...]


def check_pipeline(pipeline: Sequence[Stage], n_layers: int, n_devices: int) -> None:
    """Raise ValueError (one sentence) unless ``pipeline`` covers layers 0..n_layers-1 with
    consecutive non-empty stages on distinct devices 0..n_devices-1."""
    if not pipeline:
        raise ValueError("a pipeline needs at least one stage")
    expect, seen = 0, set()
    for i, st in enumerate(pipeline):
        if not 0 <= st.device < n_devices:
            raise ValueError(f"stage {i} is on device {st.device}, the mix has devices 0..{n_devices - 1}")
        if st.first != expect or st.stop <= st.first:
            raise ValueError(f"stage {i} covers layers {st.first}..{st.stop - 1}; it must start at layer {expect} "
                             "and hold at least one layer")
        if st.device in seen:
            raise ValueError(f"stage {i} returns to device {st.device}, which the model has left "
                             "(a model never returns to a device: FairBoost's masking)")
        seen.add(st.device)
        expect = st.stop
    if expect != n_layers:
        raise ValueError(f"the pipeline ends at layer {expect - 1}, the model has {n_layers} layers")


def _frozen(a: np.ndarray) -> np.ndarray:
    arr = np.array(a, dtype=np.float64)
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True)
class MixProblem:
    """N models sharing D devices (numbers only; see the module docstring).

    Layer ``l`` of model ``m`` on device ``d`` costs ``layer_ms[m][l, d]`` (inf: illegal there);
    a stage of layers a..b-1 on ``d`` costs ``in_ms[m][a, d] + sum(layer_ms[m][a:b, d]) +
    out_ms[m][b-1, d]`` (``stage_ms``). Optional ``memory_bytes`` ([L_m, D] per model) and
    ``capacity_bytes`` ([D]) bound what one stage may hold, as ``PlanningProblem.slice_fits``.
    """

    names: tuple[str, ...]
    devices: tuple[str, ...]
    state: tuple[int, ...]
    layer_ms: tuple[np.ndarray, ...]
    in_ms: tuple[np.ndarray, ...]
    out_ms: tuple[np.ndarray, ...]
    switch_ms: np.ndarray
    reference: int
    memory_bytes: tuple[np.ndarray, ...] | None = None
    capacity_bytes: np.ndarray | None = None
    #: per device its kind (cpu, gpu, ...) where known; () when not
    kinds: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        N, D = len(self.names), len(self.devices)
        if N == 0 or D == 0:
            raise ValueError("a mix needs at least one model and one device")
        if len(set(self.names)) != N:
            raise ValueError(f"the mix's model names must differ: {', '.join(self.names)}")
        object.__setattr__(self, "names", tuple(self.names))
        object.__setattr__(self, "devices", tuple(self.devices))
        object.__setattr__(self, "state", tuple(int(s) for s in self.state))
        if len(self.state) != D:
            raise ValueError(f"{len(self.state)} states for {D} devices")
        for key in ("layer_ms", "in_ms", "out_ms"):
            tabs = tuple(_frozen(a) for a in getattr(self, key))
            if len(tabs) != N:
                raise ValueError(f"{key} has {len(tabs)} tables for {N} models")
            for name, t, ref in zip(self.names, tabs, self.layer_ms):
                if t.ndim != 2 or t.shape[1] != D or t.shape[0] == 0 or t.shape[0] != np.shape(ref)[0]:
                    raise ValueError(f"{key} of model {name!r} has shape {t.shape}, expected [L, {D}] with L >= 1")
                if np.isnan(t).any() or (t < 0).any():
                    raise ValueError(f"{key} of model {name!r} holds a negative or NaN cost")
            object.__setattr__(self, key, tabs)
        sw = _frozen(self.switch_ms)
        if sw.shape != (D,) or not (np.isfinite(sw).all() and (sw >= 0).all()):
            raise ValueError(f"switch_ms must be {D} finite numbers >= 0, got {sw.tolist()}")
        object.__setattr__(self, "switch_ms", sw)
        if not 0 <= int(self.reference) < D:
            raise ValueError(f"reference device {self.reference} is not one of 0..{D - 1}")
        object.__setattr__(self, "reference", int(self.reference))
        if (self.memory_bytes is None) != (self.capacity_bytes is None):
            raise ValueError("give both memory_bytes and capacity_bytes, or neither")
        if self.memory_bytes is not None:
            mem = tuple(_frozen(a) for a in self.memory_bytes)
            if len(mem) != N or any(a.shape != t.shape for a, t in zip(mem, self.layer_ms)):
                raise ValueError("memory_bytes must be [L_m, D] per model")
            object.__setattr__(self, "memory_bytes", mem)
            cap = _frozen(self.capacity_bytes)   # type: ignore[arg-type]
            if cap.shape != (D,):
                raise ValueError(f"capacity_bytes must be [{D}]")
            object.__setattr__(self, "capacity_bytes", cap)
        if self.kinds and len(self.kinds) != D:
            raise ValueError(f"{len(self.kinds)} device kinds for {D} devices")
        object.__setattr__(self, "kinds", tuple(self.kinds))

    # ---- building one ------------------------------------------------------------------------
    @classmethod
    def from_workload(cls, workload: WorkloadProblem, *, devices: Sequence[str] | None = None,
                      switch_ms: Mapping[str, float] | None = None, reference: str | None = None,
                      states: Mapping[str, int] | None = None) -> "MixProblem":
        """The mix of ``workload``'s models on ``devices`` (default: every device of its states),
        each device at ONE state: ``states[device]`` (a StateTable column) or its top frequency.

        ``switch_ms`` (device -> ms) overrides the problems' own ``switch_ms`` (the target's
        ``devices.<name>.switch_ms``, carried by ``PlanningProblem.switch_ms``); a device neither
        gives pays 0. ``reference`` is the device t_ideal and the baseline use: by default the
        first device of kind ``gpu`` (FairBoost Sec. 2: the board's highest-performing
        component), else the device that runs the whole workload fastest alone.
        """
        table = workload.states
        names = tuple(devices) if devices is not None else table.devices
        if not names:
            raise ValueError("a mix needs at least one device")
        for d in names:
            if d not in table.devices:
                raise ValueError(f"unknown device {d!r}: the workload's devices are {', '.join(table.devices)}")
        chosen: list[int] = []
        for d in names:
            if states is not None and d in states:
                s = int(states[d])
                if s not in set(table.of(d).tolist()):
                    raise ValueError(f"state {s} is not a state of device {d!r} (its states: {table.of(d).tolist()})")
            else:
                s = table.fmax_state(d)   # type: ignore[assignment]
            chosen.append(int(s))
        cols = np.array(chosen, dtype=np.int64)
        layer, t_in, t_out, mem = [], [], [], []
        for p in workload.problems:
            legal = np.asarray(p.legal)[:, cols]
            layer.append(np.where(legal, np.asarray(p.latency_ms)[:, cols], np.inf))
            t_in.append(np.where(legal, np.asarray(p.transfer_in_ms)[:, cols], np.inf))
            t_out.append(np.where(legal, np.asarray(p.transfer_out_ms)[:, cols], np.inf))
            mem.append(np.asarray(p.memory_bytes, dtype=np.float64)[:, cols])
        cap = np.asarray(workload.problems[0].capacity_bytes, dtype=np.float64)[cols]
        sw = np.zeros(len(names))
        own = workload.problems[0].switch_ms
        if own is not None:
            sw = np.asarray(own, dtype=np.float64)[cols].copy()
        for i, d in enumerate(names):
            if switch_ms is not None and d in switch_ms:
                sw[i] = float(switch_ms[d])
        unknown = set(switch_ms or ()) - set(names)
        if unknown:
            raise ValueError(f"switch_ms names {', '.join(sorted(unknown))}, not a device of the mix ({', '.join(names)})")
        kinds = tuple(table.kind[s] for s in chosen)
        if reference is not None:
            if reference not in names:
                raise ValueError(f"reference device {reference!r} is not one of the mix's devices ({', '.join(names)})")
            ref = names.index(reference)
        elif "gpu" in kinds:
            ref = kinds.index("gpu")
        else:
            whole = np.array([[float(np.sum(t[:, d])) for d in range(len(names))] for t in layer])
            ref = int(np.argmin(whole.sum(axis=0)))
        return cls(names=tuple(workload.names), devices=names, state=tuple(chosen), layer_ms=tuple(layer),
                   in_ms=tuple(t_in), out_ms=tuple(t_out), switch_ms=sw, reference=ref,
                   memory_bytes=tuple(mem), capacity_bytes=cap, kinds=kinds)

    # ---- one model ---------------------------------------------------------------------------
    @property
    def n_models(self) -> int:
        return len(self.names)

    @property
    def n_devices(self) -> int:
        return len(self.devices)

    def n_layers(self, m: int) -> int:
        return int(self.layer_ms[m].shape[0])

    @cached_property
    def _tables(self) -> tuple[tuple[list, list, list, list, list | None], ...]:
        """Per model, as Python lists (fast scalar reads): prefix sums over layers of the finite
        latencies and of the illegal cells, the transfer tables, and the memory prefix sums."""
        out = []
        for m, t in enumerate(self.layer_ms):
            bad = np.isinf(t)
            p = np.zeros((t.shape[0] + 1, t.shape[1]))
            n = np.zeros((t.shape[0] + 1, t.shape[1]), dtype=np.int64)
            np.cumsum(np.where(bad, 0.0, t), axis=0, out=p[1:])
            np.cumsum(bad, axis=0, out=n[1:])
            mem = None
            if self.memory_bytes is not None:
                mp = np.zeros_like(p)
                np.cumsum(self.memory_bytes[m], axis=0, out=mp[1:])
                mem = mp.tolist()
            out.append((p.tolist(), n.tolist(), self.in_ms[m].tolist(), self.out_ms[m].tolist(), mem))
        return tuple(out)

    @cached_property
    def _capacity(self) -> list[float] | None:
        return None if self.capacity_bytes is None else self.capacity_bytes.tolist()

    def stage_ms(self, m: int, stage: Stage) -> float:
        """Service time of one inference's stage: its layers plus the transfers in and out (inf
        when a layer is illegal on the device)."""
        d, a, b = stage.device, stage.first, stage.stop
        p, n, t_in, t_out, _ = self._tables[m]
        if n[b][d] - n[a][d]:
            return math.inf
        return t_in[a][d] + (p[b][d] - p[a][d]) + t_out[b - 1][d]

    def stage_fits(self, m: int, stage: Stage) -> bool:
        """The stage's layers fit its device's capacity (always, without capacities)."""
        mem = self._tables[m][4]
        cap = self._capacity
        if mem is None or cap is None:
            return True
        d = stage.device
        return mem[stage.stop][d] - mem[stage.first][d] <= cap[d]

    def stage_legal(self, m: int, stage: Stage) -> bool:
        """Every layer of the stage is legal on its device and the stage fits its capacity."""
        return math.isfinite(self.stage_ms(m, stage)) and self.stage_fits(m, stage)

    def pipeline_ms(self, m: int, pipeline: Sequence[Stage]) -> list[float]:
        """Each stage's service time, after ``check_pipeline`` and legality: ValueError naming
        the model and the stage."""
        try:
            check_pipeline(pipeline, self.n_layers(m), self.n_devices)
        except ValueError as exc:
            raise ValueError(f"model {self.names[m]!r}: {exc}") from None
        out = []
        for i, st in enumerate(pipeline):
            c = self.stage_ms(m, st)
            if not (math.isfinite(c) and self.stage_fits(m, st)):
                raise ValueError(f"model {self.names[m]!r}: stage {i} (layers {st.first}..{st.stop - 1}) cannot run "
                                 f"on {self.devices[st.device]} (an illegal layer, or over its capacity)")
            out.append(c)
        return out

    def check(self, m: int, pipeline: Sequence[Stage]) -> None:
        """``check_pipeline`` plus legality: ValueError naming the model and stage."""
        self.pipeline_ms(m, pipeline)

    def stages_ms(self, m: int, pipeline: Sequence[Stage]) -> np.ndarray:
        """[len(pipeline)] each stage's service time."""
        return np.array([self.stage_ms(m, st) for st in pipeline], dtype=np.float64)

    def whole(self, m: int, device: int) -> Pipeline:
        """The one-stage pipeline of model ``m`` on ``device``."""
        return (Stage(int(device), 0, self.n_layers(m)),)

    def slices(self, m: int, pipeline: Sequence[Stage]) -> tuple[Slice, ...]:
        """The Plan slices (first, last, state) of model ``m``'s pipeline (slice i = stage i)."""
        return tuple(Slice(st.first, st.stop - 1, self.state[st.device]) for st in pipeline)

    def pipeline_of(self, m: int, slices: Sequence[Slice]) -> Pipeline:
        """The pipeline of a plan's slices (each slice's state must be the mix's state of a
        device; consecutive slices on one device merge into one stage)."""
        by_state = {s: d for d, s in enumerate(self.state)}
        out: list[Stage] = []
        for sl in slices:
            if sl.state not in by_state:
                raise ValueError(f"model {self.names[m]!r}: slice {sl} runs at state {sl.state}, not the mix's "
                                 f"state of any device ({dict(zip(self.devices, self.state))})")
            d = by_state[sl.state]
            if out and out[-1].device == d:
                out[-1] = Stage(d, out[-1].first, sl.last + 1)
            else:
                out.append(Stage(d, sl.first, sl.last + 1))
        return tuple(out)

    # ---- alone ------------------------------------------------------------------------------
    def alone(self, m: int, pipeline: Sequence[Stage]) -> float:
        """Inferences/s of model ``m``'s pipeline alone on the board: 1 / its slowest stage
        (0 when a stage cannot run)."""
        worst = float(self.stages_ms(m, pipeline).max())
        if not math.isfinite(worst):
            return 0.0
        return 1000.0 / worst if worst > 0 else math.inf

    def stage_table(self, m: int, first: int) -> np.ndarray:
        """[L_m + 1, D] ``stage_ms`` of the stages starting at layer ``first``: row ``stop`` holds
        layers first..stop-1 on each device (inf for stop <= first or an illegal layer)."""
        p, n = (np.array(x) for x in self._tables[m][:2])
        L = self.n_layers(m)
        out = np.full((L + 1, self.n_devices), np.inf)
        body = p[first + 1:] - p[first][None, :]
        cost = self.in_ms[m][first][None, :] + body + self.out_ms[m][first:]
        out[first + 1:] = np.where(n[first + 1:] - n[first][None, :] > 0, np.inf, cost)
        return out

    def masked_pipeline(self, m: int, combine: Any) -> tuple[float, Pipeline]:
        """Model ``m``'s pipeline that minimises its stages' times folded by ``combine``
        (``np.add``: its latency; ``np.maximum``: its slowest stage), under the masking rule
        (distinct devices, capacity ignored): a dynamic programme over (stop layer, set of
        devices used, last device). (value, pipeline); (inf, ()) when no pipeline is legal."""
        L, D = self.n_layers(m), self.n_devices
        M = 1 << D
        # best[b, mask, d]: the best folded cost over layers 0..b-1 using the device set ``mask``
        # and ending on d (index D: the empty pipeline)
        best = np.full((L + 1, M, D + 1), np.inf)
        back = np.full((L + 1, M, D + 1, 3), -1, dtype=np.int64)   # (a, mask, last) of the previous state
        best[0, 0, D] = 0.0
        for a in range(L):
            cost = self.stage_table(m, a)
            for mask, last in zip(*np.nonzero(np.isfinite(best[a]))):
                here = best[a, mask, last]
                for d in range(D):
                    if mask >> d & 1:
                        continue
                    folded = combine(here, cost[:, d])
                    key = mask | 1 << d
                    better = folded < best[:, key, d]
                    if better.any():
                        best[better, key, d] = folded[better]
                        back[better, key, d] = (a, mask, last)
        final = best[L]
        if not np.isfinite(final).any():
            return math.inf, ()
        mask, last = (int(i) for i in np.unravel_index(int(np.argmin(final)), final.shape))
        value = float(final[mask, last])
        stages: list[Stage] = []
        b = L
        while b > 0:
            a, pmask, plast = (int(v) for v in back[b, mask, last])
            stages.append(Stage(last, a, b))
            b, mask, last = a, pmask, plast
        return value, tuple(reversed(stages))

    def best_alone(self, m: int) -> tuple[float, Pipeline]:
        """Model ``m``'s fastest pipeline alone (its slowest stage the least, distinct devices,
        capacity ignored): (inferences/s, pipeline); (0.0, ()) when no pipeline is legal."""
        worst, pipeline = self.masked_pipeline(m, np.maximum)
        if not pipeline:
            return 0.0, ()
        return (1000.0 / worst if worst > 0 else math.inf), pipeline

    @cached_property
    def _ideal(self) -> np.ndarray:
        out = np.zeros(self.n_models)
        for m in range(self.n_models):
            whole = self.whole(m, self.reference)
            if self.stage_legal(m, whole[0]):
                out[m] = self.alone(m, whole)
            else:
                out[m] = max([self.alone(m, self.whole(m, d)) for d in range(self.n_devices)
                              if self.stage_legal(m, self.whole(m, d)[0])] or [self.best_alone(m)[0]])
        out.setflags(write=False)
        return out

    def ideal(self) -> np.ndarray:
        """[N] inferences/s of each model alone, whole on the reference device (FairBoost's
        t_ideal). A model that cannot run whole there takes its fastest whole device, and one
        that runs whole nowhere its fastest pipeline (``best_alone``)."""
        return self._ideal

    def baseline(self) -> tuple[Pipeline, ...]:
        """FairBoost's baseline: every model whole on the reference device (a model that cannot
        run whole there: the pipeline ``ideal`` used for it)."""
        out = []
        for m in range(self.n_models):
            whole = self.whole(m, self.reference)
            if self.stage_legal(m, whole[0]):
                out.append(whole)
                continue
            legal = [d for d in range(self.n_devices) if self.stage_legal(m, self.whole(m, d)[0])]
            if legal:
                out.append(self.whole(m, max(legal, key=lambda d: self.alone(m, self.whole(m, d)))))
            else:
                out.append(self.best_alone(m)[1])
        return tuple(out)


def random_pipeline(mix: MixProblem, m: int, rng: np.random.Generator, max_stages: int | None = None,
                    tries: int = 100) -> Pipeline:
    """A random legal pipeline of model ``m``: 1..max_stages stages (default: every device) on
    distinct random devices, cut at random layers. ValueError when ``tries`` draws find none."""
    L, D = mix.n_layers(m), mix.n_devices
    top = min(D, L, max_stages or D)
    for _ in range(tries):
        k = int(rng.integers(1, top + 1))
        cuts = sorted(int(c) for c in rng.choice(np.arange(1, L), size=k - 1, replace=False)) if k > 1 else []
        devs = [int(d) for d in rng.permutation(D)[:k]]
        bounds = [0, *cuts, L]
        pipe = tuple(Stage(devs[i], bounds[i], bounds[i + 1]) for i in range(k))
        if all(mix.stage_legal(m, st) for st in pipe):
            return pipe
    raise ValueError(f"model {mix.names[m]!r}: no legal random pipeline in {tries} draws")


__all__ = ["MixProblem", "Pipeline", "Stage", "check_pipeline", "random_pipeline"]
