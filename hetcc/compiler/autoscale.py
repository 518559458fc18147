"""AutoScale's action table for a model on a target (the compile side of AutoScale, Kim and Wu, MICRO'20).

An AutoScale action runs the whole model on one execution target (AutoScale Sec. 4.2): one local
processor at one of its V/F steps and at one precision (Sec. 5.3's augmented actions: INT8 on the
CPU and the DSP, FP16 on the GPU, FP32 wherever a device computes in float32), or a connected
device reached over a link (edge, cloud; remote variants are FP32: the phone sends the FP32
model's input). ``action_table(analysis)`` lists them for an analysed model::

    from hetcc import analyse
    from hetcc.compiler.autoscale import action_table, model_features

    a = analyse("resnet18", "mi8pro-edge-cloud")
    table = action_table(a)                 # table.actions: dicts in the policy file's form
    table.names                             # ('cpu@826:fp32', ..., 'dsp:int8', 'edge', 'cloud')
    table.excluded                          # [{'variant': ..., 'reason': ...}] actions the model cannot take
    model_features(a)                       # {'name', 'conv', 'fc', 'rc', 'macs'}: AutoScale Table 1

Names: ``{device}@{round(MHz)}:{fp32|fp16|int8}`` for a device with DVFS steps, ``{device}:{prec}``
for one without (``dsp:int8``), the device's name for a remote one (``edge``, ``cloud``).

Numbers (every action dict): ``compute_ms`` is the whole model's predicted latency on the state
(the analysis' cost table: ``analysis.problem``), the link's share excluded for a remote device
(``problem.communication``), the rest multiplied by the device's latency factor for the
precision; ``busy_power_mw`` the device's average power over it (base power and, remote, the
radio's transfer energy excluded: the phone's idle radio while it waits); ``bytes_in`` /
``bytes_out`` what the model takes and returns (a remote variant sends and receives them);
``accuracy`` 1.0 at FP32, None for a low precision until its agreement is measured
(``hetcc.passes.precision``).

Precision factors come from the target's per-device ``precisions`` table
(``Device.precision_factors()``: latency factor relative to the precision ``peak_gflops``
assume). A target loader without that table falls back to ``DEFAULT_FACTORS`` by device kind
(CPU FP32 1.0 / INT8 0.5; GPU FP16 1.0 / FP32 2.0; DSP and NPU INT8 1.0; remote FP32 1.0), each
kept only where the device's ``dtypes`` allow it.

Legality is judged at the variant's precision: every float element type of a layer counts as the
precision's (an INT8 variant holds int8 tensors), so the DSP, which takes int8 only, has a legal
INT8 action although the float model is illegal there; its costs then come from the analytical
cost model (a measured target has no costs for a state its model cannot run: such an action is
excluded). Op support, predicates and capacity are judged as the legality pass judges them.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from hetcc.core.errors import UsageError
from hetcc.planners.autoscale import whole_model_cost
from hetcc.planners.problem import Communication, PlanningProblem, StateTable

#: the precisions, in the order actions list them; their tags in variant names
PRECISIONS = ("float32", "float16", "int8")
TAGS = {"float32": "fp32", "float16": "fp16", "int8": "int8"}
#: element types a precision's variant computes in (what legality checks against ``dtypes``)
PRECISION_DTYPES = {"float32": ("float32",), "float16": ("float16",), "int8": ("int8", "uint8")}
#: a layer's element types that a precision's conversion turns into its own
FLOAT_DTYPES = frozenset({"float32", "float16", "bfloat16", "float64"})
#: latency factor per precision by device kind, when the target gives no ``precisions`` table
#: (relative to the precision ``peak_gflops`` assume: FP32 on a CPU, FP16 on a mobile GPU, INT8 on
#: a DSP or NPU; mi8pro-edge-cloud's assumptions, AutoScale Sec. 5.3)
DEFAULT_FACTORS: Mapping[str, Mapping[str, float]] = {
    "cpu": {"float32": 1.0, "int8": 0.5},
    "gpu": {"float32": 2.0, "float16": 1.0},
    "dsp": {"int8": 1.0},
    "npu": {"int8": 1.0},
    "remote": {"float32": 1.0},
}
#: node types counted as AutoScale Table 1's layers
CONV_TYPES = frozenset({"Conv", "ConvTranspose", "QLinearConv", "ConvInteger"})
FC_TYPES = frozenset({"Gemm", "MatMul", "QLinearMatMul", "MatMulInteger", "QGemm", "MatMulIntegerToFloat"})
RC_TYPES = frozenset({"LSTM", "GRU", "RNN"})
#: the op classes whose FLOPs are multiply-adds (MACs = their FLOPs / 2)
MAC_CLASSES = ("conv", "matmul", "dwconv", "pwconv", "dwconv_large")


def precision_of(text: str) -> str:
    """``fp32``/``float32`` -> ``float32`` (and so on); UsageError for another."""
    t = str(text).strip().lower()
    for p, tag in TAGS.items():
        if t in (p, tag):
            return p
    raise UsageError(f"unknown precision {text!r}; use fp32, fp16 or int8")


def device_factors(device: Any) -> dict[str, float]:
    """Precision -> latency factor of ``device`` (see the module docstring)."""
    own = getattr(device, "precision_factors", None)
    if callable(own):
        return {p: float(f) for p, f in own().items() if p in PRECISIONS}
    table = DEFAULT_FACTORS.get(device.kind, {"float32": 1.0})
    return {p: f for p, f in table.items() if any(device.supports_dtype(d) for d in PRECISION_DTYPES[p])}


def action_name(device: Any, freq_mhz: float | None, precision: str) -> str:
    if device.kind == "remote":
        return device.name
    if freq_mhz and len(device.dvfs) > 1:
        return f"{device.name}@{round(freq_mhz)}:{TAGS[precision]}"
    return f"{device.name}:{TAGS[precision]}"


@dataclass(frozen=True)
class ActionTable:
    """The actions of a model on a target (``action_table``).

    ``actions``: dicts in the ``hetcc.autoscale/1`` policy file's form, in order (device in the
    target's order, then precision, then frequency ascending); ``excluded``: ``{"variant",
    "reason"}`` for every action the target offers that the model cannot take; ``states``: for
    each action the index of its device state in ``analysis.problem``; ``factors``: each
    action's precision latency factor; ``problem``: the numbers of every action, one column each
    (precision applied, legality at the precision), what the ``autoscale`` planner plans."""

    actions: tuple[dict[str, Any], ...]
    excluded: tuple[dict[str, str], ...]
    states: tuple[int, ...]
    factors: tuple[float, ...]
    problem: PlanningProblem | None = field(default=None, repr=False)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a["variant"] for a in self.actions)

    def action(self, name: str) -> dict[str, Any]:
        for a in self.actions:
            if a["variant"] == name:
                return a
        raise KeyError(name)


def _layer_nodes(program: Any) -> tuple[Any, dict[str, Any], Any]:
    from hetcc.compiler.program import LAYERS, TENSORS

    return program.get(LAYERS), {n.name: n for n in program.graph}, program.get(TENSORS)


def _reasons_at(program: Any, device: Any, precision: str, layers: Any, by_name: Mapping[str, Any],
                tensors: Any) -> list[str]:
    """Why the whole model cannot run on ``device`` at ``precision`` (empty: it can)."""
    from hetcc.passes.legality import device_reasons

    out: list[str] = []
    for layer in layers:
        dtypes = tuple(dict.fromkeys(precision if d in FLOAT_DTYPES else d for d in layer.dtypes))
        nodes = [by_name[n] for n in layer.nodes if n in by_name]
        why = device_reasons(dataclasses.replace(layer, dtypes=dtypes), nodes, tensors, device)
        if why:
            out.append(f"{layer.name}: {', '.join(why)}")
    return out


def _io_bytes(program: Any) -> tuple[int, int]:
    """(bytes of the model's inputs, of its outputs) as the model holds them."""
    from hetcc.compiler.program import TENSORS

    tensors = program.get(TENSORS)
    graph = program.graph
    ins = [v.name for v in graph.inputs if v.name not in graph.initializers]
    return (int(sum(tensors[n].nbytes for n in ins if n in tensors)),
            int(sum(tensors[v.name].nbytes for v in graph.outputs if v.name in tensors)))


def action_table(analysis: Any, *, precisions: Sequence[str] = PRECISIONS,
                 actions: Sequence[str] | str | None = None) -> ActionTable:
    """The AutoScale actions of ``analysis`` (``hetcc.analyse(model, target)``); see the module
    docstring. ``precisions``: the precisions considered (names or tags). ``actions``: names
    (a list or one comma-separated string) narrowing the table, kept in table order; a name the
    target does not offer, or one the model cannot take, is a UsageError naming it."""
    precisions = tuple(dict.fromkeys(precision_of(p) for p in precisions))
    target, program, problem = analysis.target, analysis.program, analysis.problem
    layers, by_name, tensors = _layer_nodes(program)
    L = problem.num_layers
    states = problem.states
    bytes_in, bytes_out = _io_bytes(program)
    full: PlanningProblem | None = None     # the analytical costs of every cell, legal or not (built on demand)
    found: list[tuple[dict[str, Any], int, float, PlanningProblem]] = []
    excluded: list[dict[str, str]] = []
    for device in target.devices:
        cols = [int(s) for s in states.of(device.name)]
        factors = device_factors(device)
        remote = device.kind == "remote"
        for prec in PRECISIONS:
            if prec not in precisions or prec not in factors:
                continue
            why = _reasons_at(program, device, prec, layers, by_name, tensors)
            for s in cols:
                freq = float(states.freq_mhz[s]) or None
                name = action_name(device, freq, prec)
                if why:
                    excluded.append({"variant": name, "reason": f"{why[0]}" + (f" (and {len(why) - 1} more layers)"
                                                                             if len(why) > 1 else "")})
                    continue
                source = problem
                if not problem.slice_legal(0, L - 1, s):
                    if not problem.slice_fits(0, L - 1, s):
                        excluded.append({"variant": name, "reason": f"the model ({problem.slice_bytes(0, L - 1, s)} "
                                         f"bytes) exceeds {device.name}'s capacity"})
                        continue
                    if full is None:
                        full = _all_cells(analysis)
                    if full is None:
                        excluded.append({"variant": name, "reason": f"no measured cost of the model on {device.name} "
                                         f"(target {target.name} is measured)"})
                        continue
                    source = full
                found.append(({"variant": name, "device": device.name, "kind": device.kind, "freq_mhz": freq,
                               "precision": prec, "remote": remote, "link": getattr(device, "link", None),
                               "compute_ms": 0.0, "busy_power_mw": 0.0, "bytes_in": bytes_in, "bytes_out": bytes_out,
                               "accuracy": 1.0 if prec == "float32" else None}, s, float(factors[prec]), source))
    found = _narrow(found, excluded, actions, target.name)
    if not found:
        why = "; ".join(f"{e['variant']}: {e['reason']}" for e in excluded[:3])
        raise UsageError(f"no AutoScale action of {analysis.name} on {target.name}" + (f" ({why})" if why else ""))
    numbers = _action_problem(problem, found)
    for a, (action, *_) in enumerate(found):     # one definition: the action problem's own column
        action["compute_ms"], action["busy_power_mw"] = whole_model_cost(numbers, a, action["remote"])
    return ActionTable(actions=tuple(f[0] for f in found), excluded=tuple(excluded), states=tuple(f[1] for f in found),
                       factors=tuple(f[2] for f in found), problem=numbers)


def _narrow(found: list, excluded: list[dict[str, str]], actions: Sequence[str] | str | None,
            target: str) -> list:
    if actions is None:
        return found
    wanted = [a.strip() for a in (actions.split(",") if isinstance(actions, str) else actions) if a.strip()]
    if not wanted:
        raise UsageError("actions= names no action; give names separated by commas, e.g. cpu@2803:fp32,edge")
    names = [f[0]["variant"] for f in found]
    gone = {e["variant"]: e["reason"] for e in excluded}
    for w in wanted:
        if w in gone:
            raise UsageError(f"action {w!r} cannot run this model: {gone[w]}; drop it from actions=")
        if w not in names:
            import difflib

            close = difflib.get_close_matches(w, names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UsageError(f"unknown action {w!r} on {target}{hint}; its actions: {', '.join(names)}")
    dup = sorted({w for w in wanted if wanted.count(w) > 1})
    if dup:
        raise UsageError(f"actions= names {dup[0]!r} twice; give each action once")
    return [f for f in found if f[0]["variant"] in wanted]


def _all_cells(analysis: Any) -> PlanningProblem | None:
    """The analytical cost table of every (layer, state) cell, whatever its float legality (None for
    a target whose costs are measured)."""
    if getattr(analysis.target, "kind", "modelled") != "modelled":
        return None
    from hetcc.compiler.costmodel import analytical_costs

    layers = analysis.program.get("layers")
    mask = np.ones((len(layers), len(analysis.target.devices)), dtype=bool)
    return analytical_costs(layers, analysis.target, mask).problem(name=analysis.name)


def _action_problem(problem: PlanningProblem, found: list) -> PlanningProblem:
    """One column per action: its state's costs, from ``problem`` or the all-cells table, the
    compute share (everything but communication) times the precision factor; every cell legal,
    capacity unlimited (checked already)."""
    L = problem.num_layers

    def col(src: PlanningProblem, key: str, s: int) -> np.ndarray:
        return np.asarray(getattr(src, key)[:, s], dtype=np.float64)

    keys = ("latency_ms", "power_mw", "transfer_in_ms", "transfer_out_ms", "transfer_in_mj", "transfer_out_mj")
    out: dict[str, list[np.ndarray]] = {k: [] for k in keys}
    comm: dict[str, list[np.ndarray]] = {k: [] for k in ("in_ms", "out_ms", "in_mj", "out_mj")}
    for action, s, factor, src in found:
        c = src.communication
        share = {k: (np.asarray(getattr(c, k)[:, s]) if c is not None else np.zeros(L)) for k in comm}
        f = 1.0 if action["remote"] else factor
        out["latency_ms"].append(col(src, "latency_ms", s) * f)
        out["power_mw"].append(col(src, "power_mw", s))
        for key, ck in (("transfer_in_ms", "in_ms"), ("transfer_out_ms", "out_ms"), ("transfer_in_mj", "in_mj"),
                        ("transfer_out_mj", "out_mj")):
            total = col(src, key, s)
            out[key].append(share[ck] + (total - share[ck]) * f)
        for k in comm:
            comm[k].append(share[k])
    arrays = {k: np.stack(v, axis=1) for k, v in out.items()}
    A = len(found)
    states = StateTable.build([a["variant"] for a, *_ in found], [0.0] * A,   # labelled by the variant name
                              kind=[a["kind"] for a, *_ in found], is_fmax=[True] * A)
    communication = Communication(**{k: np.stack(v, axis=1) for k, v in comm.items()})
    return PlanningProblem(**arrays, legal=np.ones((L, A), dtype=bool), param_bytes=problem.param_bytes,
                           capacity_bytes=np.full(A, np.inf), base_power_mw=problem.base_power_mw, states=states,
                           layer_names=problem.layer_names, layer_features=problem.layer_features,
                           name=problem.name, communication=communication)


def _spatial_ones(shape: Any) -> bool:
    """Whether a known shape [N, C, d1, ...] has at least one spatial dimension, all of them 1."""
    if shape is None:
        return False
    try:
        dims = list(shape)[2:]
    except TypeError:
        return False
    return bool(dims) and all(isinstance(d, int) and d == 1 for d in dims)


def _is_pointwise_on_1x1(node: Any) -> bool:
    """A Conv-type node whose kernel and input feature map are both 1x1 (shapes known): an FC layer."""
    ins = list(node.inputs)
    w = 3 if node.op_type == "QLinearConv" else 1          # QLinearConv: x, x_scale, x_zero_point, w, ...
    if len(ins) <= w or ins[0] is None or ins[w] is None:
        return False
    return _spatial_ones(ins[0].shape) and _spatial_ones(ins[w].shape)


def model_features(analysis: Any) -> dict[str, Any]:
    """AutoScale Table 1's model features: ``conv``, ``fc`` and ``rc`` layer counts (the nodes of
    those types, subgraphs included) and ``macs`` (multiply-accumulates of the convolutions and
    matrix products), with the model's ``name``. A 1x1 convolution of a 1x1 feature map (a
    squeeze-and-excitation block's two layers) is a fully-connected layer and counts as FC, as
    AutoScale Table 3 counts MobilenetV3's (FC 20)."""
    from hetcc.compiler.graphutil import walk

    counts = {"conv": 0, "fc": 0, "rc": 0}
    for node in analysis.program.graph:
        for n in walk(node):
            t = n.op_type
            if t in CONV_TYPES:
                counts["fc" if _is_pointwise_on_1x1(n) else "conv"] += 1
            elif t in FC_TYPES:
                counts["fc"] += 1
            elif t in RC_TYPES:
                counts["rc"] += 1
    layers = analysis.program.get("layers")
    flops = sum(float(l.flops_by_class.get(c, 0.0)) for l in layers for c in MAC_CLASSES)
    return {"name": analysis.name, **counts, "macs": flops / 2.0}


#: AutoScale Sec. 5.2: the QoS target of an interactive inference, the deadline a policy compile defaults to
DEFAULT_QOS = "50ms"


def parse_accuracy(text: Any, flag: str = "--min-accuracy") -> float:
    """``0.9``, ``90%`` -> 0.9: a fraction in [0, 1] or a percentage; UsageError otherwise."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value, shown = float(text), text
    else:
        shown = str(text).strip()
        pct = shown.endswith("%")
        try:
            value = float(shown[:-1] if pct else shown) / (100.0 if pct else 1.0)
        except ValueError:
            raise UsageError(f"malformed {flag} {text!r}; give a fraction or a percentage, e.g. 0.9 or 90%") from None
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise UsageError(f"{flag} {shown!r} is out of range; give a fraction from 0 to 1 or a percentage up to 100%, "
                         "e.g. 0.9 or 90%")
    return value


@dataclass
class PolicyVariants:
    """What ``policy_variants`` returns: the variants' plans by name (in action order, each one
    slice of the whole model on its device state), the default one, each variant's precision, the
    converter that converts and measured their slices (codegen reuses it), the policy file's JSON
    (``hetcc.autoscale/1``), the actions the model cannot take and those left out by
    ``min_accuracy`` ({"variant", "reason"} each)."""

    plans: dict[str, Any]
    default: str
    precisions: dict[str, str]
    converter: Any
    policy: dict[str, Any]
    table: ActionTable
    excluded: list[dict[str, str]]
    below_accuracy: list[dict[str, str]]
    qtable: str | None = None
    policy_bytes: bytes = b""

    def emit(self, analysis: Any, output_dir: Any, timings: Any = None) -> Any:
        """Write the artifact: every variant (low-precision slices converted, equal files stored
        once), ``policy/autoscale.json`` recorded in the manifest's ``policy``."""
        import tempfile
        from pathlib import Path

        with tempfile.TemporaryDirectory(prefix="hetcc-policy-") as tmp:
            path = Path(tmp) / "autoscale.json"
            path.write_bytes(self.policy_bytes)
            return analysis.emit(self.plans, output_dir, default_variant=self.default, timings=timings,
                                 precisions=self.precisions, converter=self.converter, policy=path)

    def summary(self) -> dict[str, Any]:
        """JSON-able: the actions, default, exclusions and where the Q-table came from."""
        return {"default": self.default, "actions": [dict(a) for a in self.policy["actions"]],
                "excluded": list(self.excluded), "below_accuracy": list(self.below_accuracy),
                "qos_ms": self.policy["qos_ms"], "min_accuracy": self.policy["min_accuracy"],
                "qtable": self.qtable}


def _whole_model_bytes(program: Any) -> bytes:
    """The whole model as one slice file, byte for byte what codegen writes for a one-slice plan."""
    import tempfile
    from pathlib import Path

    from hetcc.compiler.program import LAYERS
    from hetcc.passes.codegen import slice_boundaries, write_slice
    from hetcc.planners.problem import Slice

    layers = program.get(LAYERS)

    class One:
        slices = (Slice(0, len(layers) - 1, 0),)

    bnd = slice_boundaries(layers, One(), [v.name for v in program.graph.outputs])[0]
    with tempfile.TemporaryDirectory(prefix="hetcc-autoscale-") as tmp:
        path = Path(tmp) / "whole.onnx"
        data = write_slice(program, bnd, path, f"{program.name}_L0-L{len(layers) - 1}")
        if data is None:
            return path.read_bytes()
        import onnx

        return onnx.load(str(path)).SerializeToString(deterministic=True)


def _links(target: Any) -> dict[str, Any]:
    from hetcc.runtime.manifest import LinkInfo

    return {name: LinkInfo(kind=ln.kind, signal_dbm=tuple(ln.signal_dbm), bandwidth_mbps=tuple(ln.bandwidth_mbps),
                           tx_power_mw=tuple(ln.tx_power_mw), rx_power_mw=tuple(ln.rx_power_mw),
                           rtt_ms=float(ln.rtt_ms), default_signal_dbm=float(ln.default_signal_dbm))
            for name, ln in sorted((getattr(target, "links", None) or {}).items())}


def check_qtable(path: str) -> Any:
    """The ``hetcc.qtable/1`` file ``qtable=PATH`` names, read; a UsageError naming it otherwise."""
    from hetcc.runtime.autoscale import QTable
    from hetcc.runtime.errors import PolicyError

    try:
        return QTable.load(path)
    except PolicyError as exc:
        raise UsageError(f"--planner-option qtable={path}: {exc}") from None


def _qtable(path: str | None, actions: Sequence[dict[str, Any]], target: str, seed: int) -> Any:
    """The policy's Q-table: ``path``'s (a hetcc.qtable/1 file; transferred when its actions differ
    from these) or an untrained one (seeded)."""
    from hetcc.runtime.autoscale import QTable

    names = [a["variant"] for a in actions]
    if path is None:
        return QTable(names, target=target, seed=seed)
    table = check_qtable(path)
    return table if list(table.actions) == names else table.transfer(list(actions))


def measure_agreement(analysis: Any, precisions: Any = ("float16", "int8"), converter: Any = None) -> dict[str, Any]:
    """{precision: Agreement} of the whole model converted to each low precision of ``precisions``
    (float32 is skipped) against FP32 (``hetcc.passes.precision``: top-1 and mean relative error on
    16 seeded inputs); ``converter`` a ``Converter`` to share (calibration data, its caches). An
    action's ``accuracy`` at a low precision is its ``top1``."""
    from hetcc.passes.precision import Converter

    low = sorted({precision_of(p) for p in precisions} - {"float32"}, key=PRECISIONS.index)
    if not low:
        return {}
    converter = converter if converter is not None else Converter()
    whole = _whole_model_bytes(analysis.program)
    return {p: converter.agreement(whole, p) for p in low}


def policy_variants(analysis: Any, objective: Any, options: Mapping[str, Any] | None = None, *,
                    min_accuracy: float | str | None = None, calibration_data: Any = None, seed: int = 0,
                    ctx: Any = None) -> PolicyVariants:
    """AutoScale's variants of ``analysis`` for ``objective`` (its deadline is the QoS target):
    the action table (``options``: the ``autoscale`` planner's, ``actions=`` narrowing it,
    ``qtable=`` a trained table to ship), each low precision's whole-model slice converted once
    and its agreement with FP32 measured (``hetcc.passes.precision``; ``calibration_data``: the
    INT8 calibration directory), actions whose agreement (top-1) is below ``min_accuracy`` left
    out, the ``autoscale`` planner run over the rest, and the policy file's JSON."""
    from hetcc.passes.precision import Converter
    from hetcc.planners import plan as run_planner
    from hetcc.planners.problem import Slice
    from hetcc.planners.registry import get_spec, parse_options
    from hetcc.runtime.autoscale import Policy
    from hetcc.runtime.manifest import MAX_VARIANTS

    spec = get_spec("autoscale")
    opts = parse_options(spec, options or {})
    floor = 0.0 if min_accuracy is None else parse_accuracy(min_accuracy)
    converter = Converter(calibration_data, seed)
    table = action_table(analysis, actions=opts.actions)
    if len(table.names) > MAX_VARIANTS:
        raise UsageError(f"{analysis.target.name} offers {len(table.names)} actions, more than an artifact's "
                         f"{MAX_VARIANTS} variants; keep fewer with --planner-option actions=NAME,...")
    measured = measure_agreement(analysis, {a["precision"] for a in table.actions}, converter)
    below = [{"variant": a["variant"], "reason": f"agreement {measured[a['precision']].top1:.1%} < "
              f"{floor:.1%}"} for a in table.actions
             if a["precision"] in measured and measured[a["precision"]].top1 < floor]
    if below:
        gone = {b["variant"] for b in below}
        keep = [n for n in table.names if n not in gone]
        if not keep:
            raise UsageError(f"--min-accuracy {floor:.1%} leaves no action (every one is low precision and below it); "
                             "lower it or keep an FP32 action")
        table = action_table(analysis, actions=keep)
    actions = [dict(a, accuracy=(measured[a["precision"]].top1 if a["precision"] in measured else 1.0))
               for a in table.actions]
    pplan = run_planner(table.problem, objective, "autoscale", options, ctx)
    L = analysis.problem.num_layers
    plans: dict[str, Any] = {}
    for name, p, state in zip(table.names, pplan.plans, table.states):
        plans[name] = p.replace(slices=(Slice(0, L - 1, state),), planner=pplan.planner, options=pplan.options,
                                seconds=pplan.seconds / max(len(table.names), 1),
                                stats={"action": name, "default": pplan.default == table.names.index(name)})
    default = table.names[pplan.default]
    target = analysis.target
    qtable = _qtable(opts.qtable, actions, target.name, seed)
    policy = Policy(model_features(analysis), actions, qtable, qos_ms=float(objective.deadline_ms),
                    min_accuracy=floor, base_power_mw=float(analysis.problem.base_power_mw), links=_links(target),
                    source="policy/autoscale.json")
    return PolicyVariants(plans=plans, default=default, precisions={a["variant"]: a["precision"] for a in actions},
                          converter=converter, policy=policy.to_json(), table=table,
                          excluded=list(table.excluded), below_accuracy=below, qtable=opts.qtable,
                          policy_bytes=policy.dumps())


__all__ = ["ActionTable", "DEFAULT_FACTORS", "DEFAULT_QOS", "PRECISIONS", "PolicyVariants", "TAGS", "action_name",
           "action_table", "check_qtable", "device_factors", "measure_agreement", "model_features", "parse_accuracy", "policy_variants", "precision_of"]
