"""EvoSh's search spaces as integer vectors, their costs, and their exact optima.

A configuration is a tuple of positions, one per dimension, each dimension in monotone order
(a higher position is at least as capable: faster and hungrier; EvoSh Sec. III):

* ``mapping``: one dimension per block (0 = the CPU device, 1 = the GPU device), blocks being
  N consecutive groups of layers (``blocks``); devices at their top frequency, knobs at the
  problem's configuration;
* ``hardware``: the board's knobs (``HardwareSpace``: active cores, EMC clock) and one DVFS level
  per CPU/GPU device (EvoSh Table I), with a fixed block mapping;
* ``joint``: both.

A configuration's cost is its plan's: consecutive blocks on one device form one slice, each slice
runs at its device's level, the tables are those of the knob configuration (MOSAIC's cost model,
``problem.evaluate``); power is the plan's average power (energy / latency). A configuration
that runs a block on a device it switches off (0 cores) is *invalid*: infinitely slow, no power.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from hetcc.core.errors import UsageError
from ..hardware import capability
from ..problem import Plan, PlanningProblem, Slice, StateTable

SPACES = ("mapping", "hardware", "joint")
TIE_RTOL = 1e-9     # configurations this close in latency are a tie (the more capable one wins)


def block_bounds(problem: PlanningProblem, blocks: int) -> tuple[int, ...]:
    """First layer of each of ``blocks`` consecutive groups of layers with near-equal work (the
    least legal latency of each layer summed; a greedy split at the cumulative quantiles)."""
    L = problem.num_layers
    if not 1 <= blocks <= L:
        raise UsageError(f"blocks={blocks}: the model has {L} layers; choose 1..{L}")
    work = np.where(problem.legal, problem.latency_ms, np.inf).min(axis=1)
    work = np.where(np.isfinite(work), work, 0.0) + 1e-9
    cum = np.cumsum(work) / work.sum()
    starts = [0]
    for k in range(1, blocks):
        i = int(np.searchsorted(cum, k / blocks)) + 1
        i = min(max(i, starts[-1] + 1), L - (blocks - k))   # every block keeps >= 1 layer
        starts.append(i)
    return tuple(starts)


def _device_of_kind(problem: PlanningProblem, kind: str, name: str) -> str:
    states = problem.states
    if name:
        if name not in states.devices:
            raise UsageError(f"no device {name!r} on this target; devices: {', '.join(states.devices)}")
        return name
    cands = [d for d in states.devices if states.kind[int(states.of(d)[0])] == kind]
    if not cands:
        raise UsageError(f"evosh maps blocks to a CPU and a GPU; this target has no {kind} device "
                         f"(devices: {', '.join(states.devices)})")
    top = {d: int(states.fmax_state(d)) for d in cands}           # the fastest at its top level
    return min(cands, key=lambda d: float(np.where(problem.legal[:, top[d]], problem.latency_ms[:, top[d]],
                                                   np.inf).sum()))


@dataclass(frozen=True)
class Dim:
    name: str
    size: int
    values: tuple[Any, ...]     # what each position means (device, knob value or MHz)
    device: str | None = None   # a DVFS-level dimension: its device


@dataclass(eq=False)
class ConfigSpace:
    """One search space over one problem (see the module docstring)."""

    problem: PlanningProblem              # at the base hardware configuration
    kind: str
    starts: tuple[int, ...]               # first layer of each block
    devices: tuple[str, str]              # (cpu, gpu)
    dims: tuple[Dim, ...]
    mapping: tuple[int, ...] | None       # the fixed mapping (hardware space)
    _problems: dict = field(default_factory=dict)

    @classmethod
    def build(cls, problem: PlanningProblem, kind: str = "mapping", blocks: int = 9, cpu: str = "",
              gpu: str = "", mapping: str = "gpu") -> "ConfigSpace":
        if kind not in SPACES:
            raise UsageError(f"space={kind!r}: choose one of {', '.join(SPACES)}")
        devs = (_device_of_kind(problem, "cpu", cpu), _device_of_kind(problem, "gpu", gpu))
        starts = block_bounds(problem, blocks)
        dims: list[Dim] = []
        if kind in ("mapping", "joint"):
            dims += [Dim(f"block{b}", 2, devs) for b in range(len(starts))]
        fixed = None
        if kind in ("hardware", "joint"):
            hw = problem.hardware
            if hw is None or not hw.knobs:
                raise UsageError(f"space={kind}: this target has no hardware knobs; use space=mapping")
            dims += [Dim(k.name, len(k.values), tuple(k.values)) for k in hw.knobs]
            for d in problem.states.devices:
                cols = problem.states.of(d)
                if problem.states.kind[int(cols[0])] in ("cpu", "gpu") and cols.size > 1:
                    dims.append(Dim(f"{d}_freq_mhz", cols.size, tuple(float(problem.states.freq_mhz[c]) for c in cols), d))
            if kind == "hardware":
                fixed = _parse_mapping(mapping, len(starts))
        return cls(problem, kind, starts, devs, tuple(dims), fixed)

    # -- the grid ------------------------------------------------------------------------------
    @property
    def sizes(self) -> np.ndarray:
        return np.array([d.size for d in self.dims], dtype=np.int64)

    @property
    def size(self) -> int:
        return int(np.prod(self.sizes.astype(object)))

    def random(self, rng: np.random.Generator) -> tuple[int, ...]:
        return tuple(int(v) for v in rng.integers(0, self.sizes))

    def parts(self, config: Sequence[int]) -> tuple[tuple[int, ...], dict[str, Any], dict[str, int]]:
        """(block mapping, knob configuration, DVFS level per device) of ``config``."""
        n = len(self.starts)
        pos = 0
        if self.kind == "hardware":
            bits = self.mapping
        else:
            bits, pos = tuple(config[:n]), n
        knobs: dict[str, Any] = {}
        levels: dict[str, int] = {}
        for d, v in zip(self.dims[pos:], config[pos:]):
            if d.device is not None:
                levels[d.device] = int(v)
            else:
                knobs[d.name] = d.values[int(v)]
        return bits, knobs, levels

    def describe(self, config: Sequence[int]) -> dict[str, Any]:
        bits, knobs, levels = self.parts(config)
        out: dict[str, Any] = {"mapping": "".join("cg"[b] for b in bits)}
        out.update(knobs)
        for d, lv in levels.items():
            out[f"{d}_freq_mhz"] = float(self.problem.states.freq_mhz[self.problem.states.of(d)[lv]])
        return out

    # -- costs -------------------------------------------------------------------------------
    def problem_at(self, knobs: dict[str, Any]) -> PlanningProblem:
        key = tuple(sorted(knobs.items()))
        if key not in self._problems:
            hw = self.problem.hardware
            base = dict(self.problem.hardware_config or {})
            base.update(knobs)
            self._problems[key] = hw.apply(self.problem, base) if hw is not None and knobs else self.problem
        return self._problems[key]

    def runs(self, bits: Sequence[int]) -> list[tuple[int, int, str]]:
        """(first layer, last layer, device) of each run of consecutive blocks on one device."""
        L = self.problem.num_layers
        out: list[tuple[int, int, str]] = []
        for b, first in enumerate(self.starts):
            last = (self.starts[b + 1] if b + 1 < len(self.starts) else L) - 1
            dev = self.devices[bits[b]]
            if out and out[-1][2] == dev:
                out[-1] = (out[-1][0], last, dev)
            else:
                out.append((first, last, dev))
        return out

    def slices(self, config: Sequence[int]) -> tuple[PlanningProblem, list[Slice]]:
        bits, knobs, levels = self.parts(config)
        prob = self.problem_at(knobs)
        states = prob.states
        return prob, [Slice(first, last, int(states.of(dev)[levels[dev]]) if dev in levels
                            else int(states.fmax_state(dev))) for first, last, dev in self.runs(bits)]

    def evaluate(self, config: Sequence[int]) -> tuple[float, float, Plan | None]:
        """(latency ms, average power mW, plan); (inf, 0, None) when the configuration is invalid."""
        prob, slices = self.slices(config)
        try:
            plan = prob.evaluate(slices)            # checks every slice's legality
        except ValueError:                          # slices always cover the model: an illegal one
            return np.inf, 0.0, None
        return plan.latency_ms, plan.average_power_mw, plan

    # -- exact optima --------------------------------------------------------------------------
    def exhaustive(self, cap_mw: float) -> tuple[tuple[int, ...] | None, float]:
        """The fastest configuration within the cap by enumerating the space: per knob
        configuration, every DVFS-level combination at once (vectorised); mapping bits one by one
        (up to 2^16). Ties (within TIE_RTOL) go to the more capable configuration, as ``exact``
        breaks them (``hardware.capability`` of the configuration's positions): never toward
        switching cores off that the mapping leaves idle. (None, inf) when none is within the cap."""
        n_bits = len(self.starts) if self.kind != "hardware" else 0
        if n_bits > 16:
            raise UsageError(f"exhaustive search over 2^{n_bits} mappings is too large; the mapping optimum "
                             "comes from exact (search=optimum uses it for space=mapping)")
        knob_dims = [d for d in self.dims[n_bits:] if d.device is None]
        freq_dims = [d for d in self.dims[n_bits:] if d.device is not None]
        found: list[tuple[float, tuple[int, ...]]] = []
        bit_sets = [self.mapping] if self.kind == "hardware" else list(itertools.product((0, 1), repeat=n_bits))
        names = [d.name for d in self.dims[n_bits:]]
        for kpos in itertools.product(*(range(d.size) for d in knob_dims)):
            knobs = {d.name: d.values[p] for d, p in zip(knob_dims, kpos)}
            prob = self.problem_at(knobs)
            for bits in bit_sets:
                T, E = self._grid(prob, bits, freq_dims)
                with np.errstate(invalid="ignore", divide="ignore"):
                    P = np.where(T > 0, E / T * 1000.0, 0.0)
                ok = np.isfinite(T) & (P <= cap_mw * (1 + 1e-9))
                if not ok.any():
                    continue
                t = float(T[ok].min())
                ties = np.flatnonzero((ok & (T <= t + TIE_RTOL * max(1.0, abs(t)))).ravel())
                fpos = np.stack(np.unravel_index(ties, T.shape), axis=1) if T.ndim else np.zeros((1, 0), dtype=np.int64)
                j = max(range(len(ties)), key=lambda r: capability(fpos[r]))
                pos = dict(zip([d.name for d in knob_dims], kpos))
                pos.update({d.name: int(v) for d, v in zip(freq_dims, fpos[j])})
                cfg = tuple(bits if self.kind != "hardware" else ()) + tuple(pos[nm] for nm in names)
                found.append((float(T.ravel()[ties[j]]), cfg))
        if not found:
            return None, np.inf
        t = min(x for x, _ in found)
        best = max((c for x, c in found if x <= t + TIE_RTOL * max(1.0, abs(t))), key=capability)
        return best, next(x for x, c in found if c == best)

    def _grid(self, prob: PlanningProblem, bits: Sequence[int], freq_dims: Sequence[Dim]):
        """Latency and energy of the mapping ``bits`` for every DVFS-level combination
        (an array over ``freq_dims``; devices without a dimension run at their top level)."""
        shape = tuple(d.size for d in freq_dims)
        T = np.zeros(shape)
        E = np.zeros(shape)
        axis = {d.device: i for i, d in enumerate(freq_dims)}
        for first, last, dev in self.runs(bits):
            cols = prob.states.of(dev) if dev in axis else np.array([prob.states.fmax_state(dev)])
            t = np.empty(cols.size)
            e = np.empty(cols.size)
            for j, s in enumerate(cols):
                if prob.slice_legal(first, last, int(s)):
                    c = prob.slice_cost(first, last, int(s))
                    t[j], e[j] = c.latency_ms, c.energy_mj
                else:
                    t[j] = e[j] = np.inf
            if dev in axis:
                view = [1] * len(shape)
                view[axis[dev]] = cols.size
                t, e = t.reshape(view), e.reshape(view)
            else:
                t, e = t[0], e[0]
            T = T + t
            E = E + e
        return T, E

    def block_problem(self, knobs: dict[str, Any] | None = None, per_layer: bool = False) -> PlanningProblem:
        """The problem whose layers are the blocks (or the layers, ``per_layer``) and whose two
        states are the CPU and GPU devices at their top levels: ``exact`` on it is the optimum
        over mappings (and consecutive same-device blocks merge into one slice exactly as
        ``slices`` merges them)."""
        prob = self.problem_at(knobs or {})
        L = prob.num_layers
        cols = [int(prob.states.fmax_state(d)) for d in self.devices]
        starts = tuple(range(L)) if per_layer else self.starts
        ends = list(starts[1:]) + [L]
        lat = prob.latency_ms[:, cols]
        en = np.where(prob.legal[:, cols], lat * prob.power_mw[:, cols], np.inf)
        ok = prob.legal[:, cols]
        sum_ = lambda a: np.stack([a[f:e].sum(axis=0) for f, e in zip(starts, ends)])     # noqa: E731
        T = sum_(np.where(ok, lat, 0.0))
        legal = np.stack([ok[f:e].all(axis=0) for f, e in zip(starts, ends)])
        P = np.where(T > 0, sum_(np.where(ok, en, 0.0)) / np.where(T > 0, T, 1.0), 0.0)
        first = np.array(starts)
        last = np.array(ends) - 1
        st = prob.states
        return prob.replace(
            latency_ms=np.where(legal, T, np.inf), power_mw=P, legal=legal,
            transfer_in_ms=prob.transfer_in_ms[first][:, cols], transfer_in_mj=prob.transfer_in_mj[first][:, cols],
            transfer_out_ms=prob.transfer_out_ms[last][:, cols], transfer_out_mj=prob.transfer_out_mj[last][:, cols],
            param_bytes=sum_(prob.param_bytes).astype(np.int64), capacity_bytes=prob.capacity_bytes[cols],
            activation_bytes=None if prob.activation_bytes is None else sum_(prob.activation_bytes).astype(np.int64),
            activation_factor=None if prob.activation_factor is None else prob.activation_factor[cols],
            states=StateTable(device=tuple(st.device[c] for c in cols), kind=tuple(st.kind[c] for c in cols),
                              freq_mhz=st.freq_mhz[cols], is_fmax=np.ones(2, dtype=bool)),
            layer_names=tuple(f"block{b}" for b in range(len(starts))), layer_features=None, hardware=None,
            hardware_config=prob.hardware_config)


def _parse_mapping(text: str, n: int) -> tuple[int, ...]:
    t = (text or "gpu").strip().lower()
    if t in ("gpu", "cpu"):
        return ((1 if t == "gpu" else 0),) * n
    if len(t) != n or set(t) - set("cg01"):
        raise UsageError(f"mapping={text!r}: give 'gpu', 'cpu' or one letter per block (c/g or 0/1), {n} blocks")
    return tuple(1 if ch in "g1" else 0 for ch in t)


__all__ = ["ConfigSpace", "Dim", "SPACES", "block_bounds"]
