"""PlanningProblem (numbers only) and Plan: the contract between the analyses and the planners.

A planner never sees ONNX: it gets L layers x S device states as read-only numpy arrays and
returns slices (first layer, last layer, state). The objective is not part of the problem: the
same problem is planned for latency, energy or edp, with or without limits
(``plan(problem, objective, ctx)``). The cost of a slice of layers a..b on state s is

    latency = transfer_in_ms[a, s] + sum(latency_ms[a..b, s]) + transfer_out_ms[b, s]
    energy  = transfer_in_mj[a, s] + sum(latency_ms * power_mw / 1000)[a..b, s]
              + transfer_out_mj[b, s] + base_power_mw * latency / 1000

(transfer_in / transfer_out hold everything a slice pays once at its ends: moving its input
and output, its fixed overhead, its boundary activations' memory time; latency_ms / power_mw only
what adds up over layers, so splitting a layer never changes the cost of the same slicing; the
optional ``communication`` says how much of transfer_* is communication proper, MOSAIC's Eq. 1-2
transfer and a remote device's link, as against the cost of running a slice at all)
and it is legal when every layer in a..b is legal on s and it fits: sum(memory_bytes[a..b, s])
<= capacity_bytes[s] (``slice_fits``), where memory_bytes[l, s] = param_bytes[l] +
round(activation_factor[s] x activation_bytes[l]) (``capacity_charge``): a device that counts
only parameters has factor 0 (the default, and all there is without activation arrays); one that
counts what its runtime allocates (MOSAIC's NPU: "the memory used by the model" as TensorFlow
Lite reports it) adds the bytes of every tensor the slice's nodes produce, scaled. A plan's
latency and energy are the sums over its slices (slices run one after another). Units: ms, mW,
mJ, bytes.

Beside the tables a problem carries what learning planners build their state from
(``layer_features``, named columns), the device states as one ``StateTable``, and, for a board
with hardware knobs, the ``HardwareSpace`` its tables were computed in and the configuration
(``hardware_config``) they hold.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np


def _frozen(a: Any, dtype: Any) -> np.ndarray:
    """A read-only view of ``a`` as ``dtype`` (the caller's array keeps its own flags)."""
    arr = np.asarray(a, dtype=dtype).view()
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True)
class Communication:
    """[L, S] each: the share of a problem's transfer_in/out_ms/mj that is communication proper
    (MOSAIC Eq. 1-2, C = beta * MB + delta, and a remote device's link), finite and >= 0 everywhere.
    The rest of transfer_* is what running a slice costs whatever it moves (the device's fixed
    overhead, the boundary activations' memory time). A communication-oblivious planner
    (``hca``) drops this share and keeps the rest."""

    in_ms: np.ndarray
    out_ms: np.ndarray
    in_mj: np.ndarray
    out_mj: np.ndarray

    def __post_init__(self) -> None:
        shape = np.shape(self.in_ms)
        for key in ("in_ms", "out_ms", "in_mj", "out_mj"):
            a = _frozen(getattr(self, key), np.float64)
            if a.shape != shape or not (np.isfinite(a).all() and (a >= 0).all()):
                raise ValueError(f"communication {key} must be finite, >= 0 and of one [L, S] shape")
            object.__setattr__(self, key, a)


def capacity_charge(param_bytes: Any, activation_bytes: Any = None, activation_factor: Any = None,
                    num_states: int | None = None) -> np.ndarray:
    """[L, S] int64: the bytes layer l holds against state s's capacity, its parameters plus
    round(activation_factor[s] x activation_bytes[l]) (whole bytes, so any sum of them, a slice's
    or a prefix's, is exact and every planner agrees with ``slice_fits`` to the byte).
    Without activation arrays: the parameters in every state (``num_states`` of them)."""
    par = np.asarray(param_bytes).astype(np.int64)[:, None]
    if activation_factor is None or activation_bytes is None:
        return np.broadcast_to(par, (par.shape[0], int(num_states or 1)))
    f = np.asarray(activation_factor, dtype=np.float64)[None, :]
    act = np.asarray(activation_bytes, dtype=np.float64)[:, None]
    return par + np.rint(act * f).astype(np.int64)


def _mb(nbytes: float) -> str:
    if nbytes >= 1e6:
        return f"{nbytes / 1e6:.1f} MB"
    return f"{nbytes / 1e3:.1f} kB" if nbytes >= 1e3 else f"{int(nbytes)} B"


def capacity_reason(param_bytes: int, activation_bytes: int, factor: float, capacity: float | None) -> str | None:
    """Why one layer alone does not fit a device of ``capacity`` bytes (None: it fits, or no
    capacity): its ``capacity_charge``, with the activations part shown when the device counts
    them (``factor`` > 0). One wording for the legality pass and ``hetcc why`` without why.json."""
    held = int(capacity_charge([param_bytes], [activation_bytes], [factor])[0, 0])
    if capacity is None or held <= capacity:
        return None
    acts = f" + activations {_mb(held - param_bytes)}" if factor else ""
    return f"parameters {_mb(param_bytes)}{acts} exceed capacity {_mb(capacity)}"


@dataclass(frozen=True)
class StateTable:
    """The S device states a problem's columns stand for: device name and kind, DVFS frequency
    (0 = fixed or unknown) and whether it is the device's top level."""

    device: tuple[str, ...]
    kind: tuple[str, ...]
    freq_mhz: np.ndarray      # [S] float
    is_fmax: np.ndarray       # [S] bool

    def __post_init__(self) -> None:
        S = len(self.device)
        object.__setattr__(self, "freq_mhz", _frozen(self.freq_mhz, np.float64))
        object.__setattr__(self, "is_fmax", _frozen(self.is_fmax, bool))
        if not (len(self.kind) == S and self.freq_mhz.shape == (S,) and self.is_fmax.shape == (S,)):
            raise ValueError("StateTable columns differ in length")

    @classmethod
    def build(cls, device: Sequence[str], freq_mhz: Sequence[float] | None = None,
              kind: Sequence[str] | None = None, is_fmax: Sequence[bool] | None = None) -> "StateTable":
        """States from columns; by default kind 'cpu', frequency 0 and each device's highest
        frequency flagged as its top level."""
        device = tuple(device)
        f = np.zeros(len(device)) if freq_mhz is None else np.asarray(freq_mhz, dtype=np.float64)
        if is_fmax is None:
            top = {d: max(f[i] for i in range(len(device)) if device[i] == d) for d in set(device)}
            is_fmax = [f[i] == top[device[i]] for i in range(len(device))]
        return cls(device=device, kind=tuple(kind) if kind is not None else ("cpu",) * len(device),
                   freq_mhz=f, is_fmax=np.asarray(is_fmax, dtype=bool))

    def __len__(self) -> int:
        return len(self.device)

    @property
    def devices(self) -> tuple[str, ...]:
        """Distinct device names in state order."""
        return tuple(dict.fromkeys(self.device))

    def of(self, device: str) -> np.ndarray:
        """The state indices of ``device`` (frequency ascending, as targets list them)."""
        return np.array([s for s, d in enumerate(self.device) if d == device], dtype=np.int64)

    def fmax_state(self, device: str) -> int | None:
        """The state of ``device`` at its top frequency (None when the device is absent)."""
        cols = self.of(device)
        if cols.size == 0:
            return None
        flagged = [int(s) for s in cols if self.is_fmax[s]] or [int(s) for s in cols]
        return max(flagged, key=lambda s: (self.freq_mhz[s], -s))

    def label(self, s: int) -> str:
        f = float(self.freq_mhz[s])
        return f"{self.device[s]}@{f:g}" if f else self.device[s]


#: the columns ``layer_features`` has (op-class node counts, sizes, conv geometry); later
#: additions are appended, so a column's index never changes
FEATURES = ("nodes", "conv_nodes", "matmul_nodes", "other_nodes", "flops", "conv_flops", "matmul_flops",
            "other_flops", "param_bytes", "input_bytes", "output_bytes", "kernel", "stride",
            "in_channels", "out_channels", "conv_int8_flops", "matmul_int8_flops", "other_int8_flops",
            "dwconv_nodes", "dwconv_flops", "dwconv_int8_flops", "activation_bytes",
            "pwconv_nodes", "pwconv_flops", "pwconv_int8_flops", "dwconv_large_nodes", "dwconv_large_flops",
            "dwconv_large_int8_flops", "pool_nodes", "pool_flops", "pool_int8_flops",
            # FairBoost's Eq. 2 layer vector (hetcc.passes.layer_vectors; hetcc.planners.fairboost.features)
            "eq2_index", "eq2_type", "eq2_ifm_n", "eq2_ifm_c", "eq2_ifm_h", "eq2_ifm_w", "eq2_ofm_n", "eq2_ofm_c",
            "eq2_ofm_h", "eq2_ofm_w", "eq2_w_out", "eq2_w_in", "eq2_w_h", "eq2_w_w", "eq2_biases", "eq2_activation",
            "eq2_pad_top", "eq2_pad_left", "eq2_pad_bottom", "eq2_pad_right", "eq2_stride_h", "eq2_stride_w")


@dataclass(frozen=True)
class LayerFeatures:
    """[L, F] numbers per layer with named columns (``FEATURES``): what layer vectors and
    run-time states are built from, and what a hardware space recomputes costs from."""

    names: tuple[str, ...]
    values: np.ndarray   # [L, F] float64

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", _frozen(self.values, np.float64))
        if self.values.ndim != 2 or self.values.shape[1] != len(self.names):
            raise ValueError(f"layer features: {self.values.shape} values for {len(self.names)} names")

    def column(self, name: str) -> np.ndarray:
        try:
            return self.values[:, self.names.index(name)]
        except ValueError:
            raise KeyError(f"no layer feature {name!r}; features: {', '.join(self.names)}") from None


@dataclass(frozen=True)
class Slice:
    """Layers first..last (inclusive, 0-based) run on device state ``state``."""

    first: int
    last: int
    state: int


@dataclass(frozen=True)
class Cost:
    latency_ms: float
    energy_mj: float
    transfer_ms: float = 0.0

    @property
    def edp_mj_ms(self) -> float:
        return self.energy_mj * self.latency_ms


@dataclass(frozen=True)
class Plan:
    """A planner's proposal: consecutive slices covering every layer, plus its evaluated cost.

    ``hardware``: the board configuration the plan needs (knob -> value; None without knobs).
    ``feasible`` / ``violations``: set by the feasibility policy after the planner ran.
    ``stats``: planner-specific, JSON-able (steps, evaluations, best-so-far curve, bound, gap).
    ``objective``: the Objective it was planned for (stamped by ``planners.plan``).
    """

    slices: tuple[Slice, ...]
    latency_ms: float
    energy_mj: float
    planner: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    slice_costs: tuple[Cost, ...] = ()
    hardware: Mapping[str, Any] | None = None
    feasible: bool = True
    violations: tuple[str, ...] = ()
    stats: Mapping[str, Any] = field(default_factory=dict)
    objective: Any = None           # the Objective it was planned for (stamped by planners.plan)

    @property
    def edp_mj_ms(self) -> float:
        return self.energy_mj * self.latency_ms

    @property
    def average_power_mw(self) -> float:
        return self.energy_mj / self.latency_ms * 1000.0 if self.latency_ms > 0 else 0.0

    def replace(self, **changes: Any) -> "Plan":
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class PlanningProblem:
    """L layers x S states of costs; see the module docstring for the slice cost formula.

    Illegal cells may hold any value in the cost arrays (builders put +inf); ``legal`` decides.
    Every array is read-only.
    """

    latency_ms: np.ndarray          # [L, S] float64
    power_mw: np.ndarray            # [L, S] float64
    transfer_in_ms: np.ndarray      # [L, S]: cost to bring layer l's inputs onto state s
    transfer_out_ms: np.ndarray     # [L, S]: cost to take layer l's outputs off state s
    transfer_in_mj: np.ndarray      # [L, S]
    transfer_out_mj: np.ndarray     # [L, S]
    legal: np.ndarray               # [L, S] bool
    param_bytes: np.ndarray         # [L] int64
    capacity_bytes: np.ndarray      # [S] float64, +inf = unlimited
    base_power_mw: float
    states: StateTable
    layer_names: tuple[str, ...] = ()
    layer_features: LayerFeatures | None = None
    hardware: Any = None            # HardwareSpace (hetcc.planners.hardware) or None
    hardware_config: Mapping[str, Any] | None = None
    name: str = "model"
    #: [L] int64 bytes of every tensor a layer's nodes produce, and [S] float64 the share of them a
    #: state counts against its capacity (0: parameters only): both or neither (None: no state
    #: counts activations). See ``capacity_charge``.
    activation_bytes: np.ndarray | None = None
    activation_factor: np.ndarray | None = None
    #: the communication share of transfer_* (None: unknown, e.g. measured costs)
    communication: Communication | None = None
    #: [S] float64 ms a state's device pays to switch from one model's work to another's when
    #: several models share it (the target's ``devices.<name>.switch_ms``; None: not given, 0).
    #: Only workload planners read it (hetcc.planners.multi); a model's own plan never switches.
    switch_ms: np.ndarray | None = None

    def __post_init__(self) -> None:
        for key in ("latency_ms", "power_mw", "transfer_in_ms", "transfer_out_ms", "transfer_in_mj",
                    "transfer_out_mj", "capacity_bytes"):
            object.__setattr__(self, key, _frozen(getattr(self, key), np.float64))
        object.__setattr__(self, "legal", _frozen(self.legal, bool))
        object.__setattr__(self, "param_bytes", _frozen(self.param_bytes, np.int64))
        L, S = self.latency_ms.shape
        for key in ("power_mw", "transfer_in_ms", "transfer_out_ms", "transfer_in_mj", "transfer_out_mj", "legal"):
            if getattr(self, key).shape != (L, S):
                raise ValueError(f"{key} has shape {getattr(self, key).shape}, expected ({L}, {S})")
        if len(self.states) != S or self.capacity_bytes.shape != (S,) or self.param_bytes.shape != (L,):
            raise ValueError("states, capacity_bytes or param_bytes do not match the [L, S] tables")
        if (self.activation_bytes is None) != (self.activation_factor is None):
            raise ValueError("give both activation_bytes and activation_factor, or neither")
        if self.activation_bytes is not None:
            object.__setattr__(self, "activation_bytes", _frozen(self.activation_bytes, np.int64))
            object.__setattr__(self, "activation_factor", _frozen(self.activation_factor, np.float64))
            if self.activation_bytes.shape != (L,) or self.activation_factor.shape != (S,):
                raise ValueError("activation_bytes or activation_factor do not match the [L, S] tables")
            if (self.activation_bytes < 0).any() or not (self.activation_factor >= 0).all():
                raise ValueError("activation_bytes and activation_factor must be >= 0")
        if self.communication is not None and self.communication.in_ms.shape != (L, S):
            raise ValueError("communication does not match the [L, S] tables")
        if self.switch_ms is not None:
            object.__setattr__(self, "switch_ms", _frozen(self.switch_ms, np.float64))
            if self.switch_ms.shape != (S,) or not (np.isfinite(self.switch_ms).all() and (self.switch_ms >= 0).all()):
                raise ValueError("switch_ms must be [S], finite and >= 0")
        charge = capacity_charge(self.param_bytes, self.activation_bytes, self.activation_factor, S)
        object.__setattr__(self, "_memory_bytes", _frozen(charge, np.int64))

    @property
    def num_layers(self) -> int:
        return int(self.latency_ms.shape[0])

    @property
    def num_states(self) -> int:
        return int(self.latency_ms.shape[1])

    @property
    def devices(self) -> tuple[str, ...]:
        return self.states.devices

    def replace(self, **changes: Any) -> "PlanningProblem":
        """A copy with ``changes``; a communication share that no longer fits the new tables (other
        layers or states, e.g. a problem over blocks of layers) is dropped, not carried over."""
        if self.communication is not None and "communication" not in changes:
            shape = np.shape(changes.get("latency_ms", self.latency_ms))
            if shape != self.communication.in_ms.shape:
                changes["communication"] = None
        if self.switch_ms is not None and "switch_ms" not in changes:
            if np.shape(changes.get("latency_ms", self.latency_ms))[1] != self.switch_ms.shape[0]:
                changes["switch_ms"] = None
        return dataclasses.replace(self, **changes)

    def layer_label(self, i: int) -> str:
        names = self.layer_names
        return f"layer {i} ({names[i]})" if i < len(names) and names[i] else f"layer {i}"

    # ---- memory capacity (the one definition; planners that precompute it read these) ----
    @property
    def memory_bytes(self) -> np.ndarray:
        """[L, S] int64 (read-only): the bytes each layer holds against each state's capacity
        (``capacity_charge``; the parameters alone unless a state counts activations)."""
        return self._memory_bytes  # type: ignore[attr-defined, no-any-return]

    @property
    def counts_activations(self) -> bool:
        """Whether some state counts activations against its capacity."""
        return self.activation_factor is not None and bool((self.activation_factor > 0).any())

    def memory_prefix(self, states: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
        """[L+1, S'] int64 prefix sums of ``memory_bytes`` over layers for ``states`` (default all):
        the slice of layers k..l-1 on states[j] holds prefix[l, j] - prefix[k, j] bytes."""
        mem = self.memory_bytes if states is None else self.memory_bytes[:, np.asarray(states, dtype=np.int64)]
        out = np.zeros((mem.shape[0] + 1, mem.shape[1]), dtype=np.int64)
        np.cumsum(mem, axis=0, out=out[1:])
        return out

    def with_reported_memory(self, device: str, reported_bytes: float) -> "PlanningProblem":
        """This problem with ``device``'s capacity rule charging the whole model ``reported_bytes``,
        what the device's runtime reports the model takes (MOSAIC Table I's TensorFlow Lite
        sizes), each slice its share in proportion to its modelled charge (``memory_bytes``): the
        device's capacity is scaled by modelled total / reported, so a slice fits where its charge
        x reported / total is within the capacity. A layer that alone exceeds the scaled capacity
        leaves the device; one the board's own capacity had taken off it stays off. A device
        without a capacity (or not in the problem) is unchanged."""
        on = np.array([d == device for d in self.states.device], dtype=bool)
        if not reported_bytes > 0:
            raise ValueError(f"reported_bytes must be > 0, got {reported_bytes!r}")
        cap = np.array(self.capacity_bytes, dtype=np.float64)
        scaled = on & np.isfinite(cap)
        if not scaled.any():
            return self
        total = self.memory_bytes.sum(axis=0).astype(np.float64)
        cap[scaled] = cap[scaled] * total[scaled] / float(reported_bytes)
        legal = np.array(self.legal, dtype=bool)
        legal[:, scaled] &= self.memory_bytes[:, scaled] <= cap[None, scaled]
        return self.replace(capacity_bytes=cap, legal=legal)

    def slice_bytes(self, first: int, last: int, state: int) -> int:
        """What layers first..last hold against ``state``'s capacity."""
        return int(self.memory_bytes[first:last + 1, state].sum())

    def slice_fits(self, first: int, last: int, state: int) -> bool:
        """Layers first..last fit in ``state``'s memory capacity."""
        return float(self.slice_bytes(first, last, state)) <= float(self.capacity_bytes[state])

    # ---- evaluation (the one definition every planner and test uses) ----
    def slice_legal(self, first: int, last: int, state: int) -> bool:
        if not bool(np.all(self.legal[first:last + 1, state])):
            return False
        return self.slice_fits(first, last, state)

    def slice_cost(self, first: int, last: int, state: int) -> Cost:
        """Latency and energy of one slice (does not check legality)."""
        lat = self.latency_ms[first:last + 1, state]
        pw = self.power_mw[first:last + 1, state]
        t_in = float(self.transfer_in_ms[first, state])
        t_out = float(self.transfer_out_ms[last, state])
        latency = t_in + float(lat.sum()) + t_out
        energy = (float(self.transfer_in_mj[first, state]) + float((lat * pw).sum()) / 1000.0
                  + float(self.transfer_out_mj[last, state]) + self.base_power_mw * latency / 1000.0)
        return Cost(latency_ms=latency, energy_mj=energy, transfer_ms=t_in + t_out)

    def check_slices(self, slices: Sequence[Slice]) -> None:
        """Raise ValueError unless ``slices`` cover 0..L-1 consecutively with legal slices."""
        expect = 0
        for sl in slices:
            if sl.first != expect or sl.last < sl.first or not 0 <= sl.state < self.num_states:
                raise ValueError(f"slices do not cover the layers consecutively at {sl}")
            if not self.slice_legal(sl.first, sl.last, sl.state):
                raise ValueError(f"slice {sl} is illegal")
            expect = sl.last + 1
        if expect != self.num_layers:
            raise ValueError(f"slices end at layer {expect - 1}, model has {self.num_layers}")

    def evaluate(self, slices: Sequence[Slice], **fields: Any) -> Plan:
        """Check ``slices`` and return the Plan with its summed cost (``fields`` go to the Plan;
        ``hardware`` defaults to the configuration the tables hold)."""
        slices = tuple(slices)
        self.check_slices(slices)
        costs = tuple(self.slice_cost(s.first, s.last, s.state) for s in slices)
        fields.setdefault("hardware", dict(self.hardware_config) if self.hardware_config else None)
        return Plan(slices=slices, latency_ms=sum(c.latency_ms for c in costs),
                    energy_mj=sum(c.energy_mj for c in costs), slice_costs=costs, **fields)


@dataclass(frozen=True)
class WorkloadProblem:
    """Several models planned together on one board (their device states are the same)."""

    problems: tuple[PlanningProblem, ...]
    names: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(self.problems) != len(self.names) or not self.problems:
            raise ValueError("a workload needs one name per problem and at least one problem")
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"workload model names must differ: {', '.join(self.names)}")
        first = self.problems[0].states.device
        for name, p in zip(self.names, self.problems):
            if p.states.device != first:
                raise ValueError(f"workload model {name!r} was analysed for other device states")

    @property
    def states(self) -> StateTable:
        return self.problems[0].states


@dataclass(frozen=True)
class WorkloadPlan:
    """One Plan per model of a workload, plus what the workload planner reports about the whole."""

    plans: tuple[Plan, ...]
    names: tuple[str, ...]
    planner: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    feasible: bool = True
    violations: tuple[str, ...] = ()
    stats: Mapping[str, Any] = field(default_factory=dict)
    objective: Any = None

    def replace(self, **changes: Any) -> "WorkloadPlan":
        return dataclasses.replace(self, **changes)


def problem_from_costs_json(doc: Mapping[str, Any]) -> PlanningProblem:
    """Rebuild the PlanningProblem from a ``costs.json`` document (illegal cells become inf)."""
    legal = np.array(doc["legal"], dtype=bool)

    def arr(key: str) -> np.ndarray:
        return np.array([[np.inf if v is None else v for v in row] for row in doc[key]], dtype=np.float64)

    states = doc["states"]
    factor = doc.get("activation_factor")   # written only when a state counts activations
    acts = None if factor is None else np.array([l.get("activation_bytes", 0) for l in doc["layers"]], dtype=np.int64)
    return PlanningProblem(
        latency_ms=arr("latency_ms"), power_mw=arr("power_mw"),
        transfer_in_ms=arr("transfer_in_ms"), transfer_out_ms=arr("transfer_out_ms"),
        transfer_in_mj=arr("transfer_in_mj"), transfer_out_mj=arr("transfer_out_mj"),
        legal=legal,
        param_bytes=np.array([l["param_bytes"] for l in doc["layers"]], dtype=np.int64),
        capacity_bytes=np.array([np.inf if c is None else c for c in doc["capacity_bytes"]], dtype=np.float64),
        base_power_mw=float(doc["base_power_mw"]),
        states=StateTable.build([s["device"] for s in states], [float(s["frequency_mhz"] or 0.0) for s in states],
                                kind=[s.get("kind", "cpu") for s in states]),
        layer_names=tuple(f"L{l['id']:02d}" for l in doc["layers"]),
        activation_bytes=acts, activation_factor=None if factor is None else np.array(factor, dtype=np.float64),
    )


__all__ = ["Communication", "Cost", "FEATURES", "LayerFeatures", "Plan", "PlanningProblem", "Slice", "StateTable",
           "WorkloadPlan", "WorkloadProblem", "capacity_charge", "capacity_reason", "problem_from_costs_json"]

