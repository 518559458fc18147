"""A board's AutoScale actions for a set of models, from the compiler's action tables (cached).

``load_board(target, models)`` analyses each model for the target once
(``hetcc.compiler.autoscale.action_table`` and ``model_features``) and keeps the numbers the
simulation needs in ``$HETCC_CACHE_DIR/autoscale/`` (keyed by hetcc's version, the board file's
bytes and the model), so training and the benchmark start in well under a second after the first
time. Two numbers are added to the compiler's action dicts:

* ``mem_share``: the share of a local action's predicted time bound by memory: the bytes the
  model moves (its parameters plus every activation written and read once, at the action's
  precision) over the device's ``mem_bandwidth_gbps``, divided by its ``compute_ms`` (at most 1);
  what a memory-intensive co-runner slows (``sim.MEM_SLOWDOWN``);
* ``accuracy`` where the table has none (a low precision before its agreement is measured by
  compiling it): ``ASSUMED_ACCURACY``.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Sequence

from hetcc.runtime.autoscale import Hyper
from hetcc.runtime.manifest.model import LinkInfo

from .sim import NOISE_SIGMA, Board, SimModel

__all__ = ["ASSUMED_ACCURACY", "PAPER_MODELS", "DEFAULT_MODELS", "QOS_MS", "load_board", "model_entry"]

#: the paper's Table 3 networks and the zoo model standing for each (None: the zoo has none)
PAPER_MODELS: dict[str, str | None] = {
    "InceptionV1": "googlenet", "InceptionV3": "inception_v3", "MobilenetV1": None, "MobilenetV2": "mobilenet_v2",
    "MobilenetV3": "mobilenet_v3_small", "Resnet50": "resnet50", "SSD MobilenetV1": None, "SSD MobilenetV2": None,
    "SSD MobilenetV3": None, "MobileBERT": None,
}
#: the default training and evaluation set: the Table 3 networks the zoo has
DEFAULT_MODELS = tuple(m for m in PAPER_MODELS.values() if m)
#: the QoS target of the image-classification use case (AutoScale Sec. 5.2: 50 ms, non-streaming)
QOS_MS = 50.0
#: top-1 agreement with FP32 assumed for a precision whose agreement the action table does not
#: give (measured only when compiling the variant): FP16 loses almost nothing; INT8 static
#: quantisation typically moves a few percent of top-1 decisions (assumed)
ASSUMED_ACCURACY = {"float32": 1.0, "float16": 0.999, "int8": 0.97}
#: bytes per element relative to FP32, for the memory traffic of a precision
_ELEM = {"float32": 1.0, "float16": 0.5, "int8": 0.25}
_CACHE_VERSION = "2"   # 2: squeeze-excitation layers count as FC (model_features)


def _mem_share(analysis: Any, action: dict[str, Any]) -> float:
    if action.get("remote"):
        return 0.0
    dev = next(d for d in analysis.target.devices if d.name == action["device"])
    bw = float(getattr(dev, "mem_bandwidth_gbps", 0.0) or 0.0)
    t = float(action["compute_ms"])
    if bw <= 0 or t <= 0:
        return 0.0
    p = analysis.problem
    feats = p.layer_features
    moved = float(p.param_bytes.sum()) + float(feats.column("input_bytes").sum() + feats.column("output_bytes").sum())
    ms = moved * _ELEM.get(str(action.get("precision")), 1.0) / (bw * 1e6)
    return min(1.0, ms / t)


def model_entry(model: str, target: str) -> dict[str, Any]:
    """The cached numbers of ``model`` (a zoo name or an ONNX path) on ``target``: features,
    action dicts (with ``mem_share``), base power and links."""
    import hetcc
    from hetcc.core.paths import cache_dir
    from hetcc.files.atomic import atomic_write_bytes
    from hetcc.targets.loader import target_source

    board_bytes = target_source(target)[0]
    mpath = Path(model)
    ident = mpath.read_bytes() if mpath.suffix == ".onnx" and mpath.is_file() else model.encode()
    key = hashlib.sha256(b"\0".join([_CACHE_VERSION.encode(), hetcc.__version__.encode(), board_bytes,
                                     hashlib.sha256(ident).digest()])).hexdigest()[:24]
    path = cache_dir() / "autoscale" / f"{mpath.stem if mpath.suffix == '.onnx' else model}-{key}.json"
    if path.is_file():
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):   # a torn or stale entry is analysed again
            pass
    from hetcc.compiler.api import analyse
    from hetcc.compiler.autoscale import action_table, model_features

    a = analyse(model, target)
    table = action_table(a)
    actions = []
    for act in table.actions:
        act = dict(act)
        act["mem_share"] = _mem_share(a, act)
        actions.append(act)
    target_obj = a.target
    doc = {"model": model_features(a), "actions": actions, "excluded": list(table.excluded),
           "base_power_mw": float(target_obj.base_power_mw),
           "links": {name: {"kind": ln.kind, "signal_dbm": list(ln.signal_dbm), "bandwidth_mbps": list(ln.bandwidth_mbps),
                            "tx_power_mw": list(ln.tx_power_mw), "rx_power_mw": list(ln.rx_power_mw),
                            "rtt_ms": ln.rtt_ms, "default_signal_dbm": ln.default_signal_dbm}
                     for name, ln in (getattr(target_obj, "links", None) or {}).items()},
           "devices": [d.name for d in target_obj.devices]}
    atomic_write_bytes(path, json.dumps(doc, indent=1).encode())
    return doc


def _order(devices: list[str]):
    prec = {"float32": 0, "float16": 1, "int8": 2}

    def key(a: dict[str, Any]) -> tuple:
        d = devices.index(a["device"]) if a["device"] in devices else len(devices)
        return d, prec.get(a.get("precision"), 3), float(a.get("freq_mhz") or 0.0)
    return key


def load_board(target: str, models: Sequence[str], *, qos_ms: float = QOS_MS, min_accuracy: float = 0.0,
               hyper: Hyper | None = None, accuracy: dict[str, float] | None = None,
               noise_sigma: float = NOISE_SIGMA) -> Board:
    """The simulation ``Board`` of ``models`` (zoo names or ONNX paths) on ``target``.
    ``accuracy``: precision -> top-1 agreement overriding ``ASSUMED_ACCURACY``."""
    acc = {**ASSUMED_ACCURACY, **(accuracy or {})}
    sims: list[SimModel] = []
    board_actions: dict[str, dict[str, Any]] = {}
    base = 0.0
    links: dict[str, LinkInfo] = {}
    devices: list[str] = []
    for model in models:
        doc = model_entry(model, target)
        base, devices = doc["base_power_mw"], doc["devices"]
        links = {k: LinkInfo(kind=v["kind"], signal_dbm=tuple(v["signal_dbm"]), bandwidth_mbps=tuple(v["bandwidth_mbps"]),
                             tx_power_mw=tuple(v["tx_power_mw"]), rx_power_mw=tuple(v["rx_power_mw"]),
                             rtt_ms=float(v["rtt_ms"]), default_signal_dbm=float(v["default_signal_dbm"]))
                 for k, v in doc["links"].items()}
        acts: dict[str, dict[str, Any]] = {}
        for a in doc["actions"]:
            a = dict(a)
            if a.get("accuracy") is None:
                a["accuracy"] = acc.get(a.get("precision", "float32"), 1.0)
            acts[a["variant"]] = a
            board_actions.setdefault(a["variant"], {k: a[k] for k in ("variant", "device", "kind", "freq_mhz",
                                                                        "precision", "remote", "link")})
        feats = {k: float(doc["model"][k]) for k in ("conv", "fc", "rc", "macs")}
        name = str(doc["model"].get("name") or Path(model).stem)
        sims.append(SimModel(name, feats, acts, {k: float(v.get("mem_share", 0.0)) for k, v in acts.items()}, qos_ms))
    ordered = sorted(board_actions.values(), key=_order(devices))
    return Board(Path(target).stem if target.endswith(".toml") else target, ordered, sims, base, links, hyper,
                 min_accuracy, noise_sigma)
