"""The report of a fit: each observation against its prediction before and after, per kind
(``summary``), the parameters moved, as a JSON-able document (``report``) or printed as tables
(printed by ``hetcc.cli.calibrate``).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from hetcc.measure.calibrate.fitting import FitResult
from hetcc.measure.calibrate.model import Calibration
from hetcc.measure.observations import MEASURED, Observation

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


def fmt_value(o: Observation, v: float) -> str:
    if not math.isfinite(v):
        return "n/a"
    if o.kind == "gain":
        return f"{v * 100:.1f}%"
    if o.kind == "plan_uses":
        return "uses" if v >= 0.5 else "not"
    return f"{v:.4g}"


def error_text(o: Observation, v: float) -> tuple[str, float | None]:
    if o.kind in MEASURED:
        e = (v / o.value - 1.0) * 100.0
        return f"{e:+.1f}%", e
    if o.kind == "gain":
        e = (v - o.value) * 100.0
        return f"{e:+.1f} pp", e
    return ("ok" if (v >= 0.5) == (o.value >= 0.5) else "WRONG"), None


def summary(obs: Sequence[Observation], pred: np.ndarray) -> dict[str, dict[str, float]]:
    """Per kind: rows and MAPE % (latency/energy/power), mean |error| in points (gain), rows that
    agree (plan_uses)."""
    import numpy as np
    out: dict[str, dict[str, float]] = {}
    for kind in ("latency", "energy", "power", "gain", "plan_uses"):
        idx = [i for i, o in enumerate(obs) if o.kind == kind]
        if not idx:
            continue
        if kind in MEASURED:
            errs = [abs(pred[i] / obs[i].value - 1.0) * 100 for i in idx]
            out[kind] = {"rows": len(idx), "mape_pct": float(np.mean(errs))}
        elif kind == "gain":
            out[kind] = {"rows": len(idx), "mean_abs_error_pp": float(np.mean([abs(pred[i] - obs[i].value) * 100
                                                                                 for i in idx]))}
        else:
            out[kind] = {"rows": len(idx), "agree": int(sum((pred[i] >= 0.5) == (obs[i].value >= 0.5) for i in idx))}
    return out


def summary_text(kind: str, b: Mapping[str, float], a: Mapping[str, float]) -> str:
    if "mape_pct" in a:
        return f"{kind}: {a['rows']} rows, MAPE {b['mape_pct']:.1f}% -> {a['mape_pct']:.1f}%"
    if "mean_abs_error_pp" in a:
        return (f"{kind}: {a['rows']} rows, mean |error| {b['mean_abs_error_pp']:.1f} -> "
                f"{a['mean_abs_error_pp']:.1f} points")
    return f"{kind}: {a['rows']} rows, {b['agree']} -> {a['agree']} agree"


def report(cal: Calibration, result: FitResult, output: str | None) -> dict[str, Any]:
    """The table and summary as a JSON-able document."""
    rows = []
    for i, o in enumerate(cal.obs):
        v = float(result.after.predicted[i])
        text, err = error_text(o, v)
        rows.append({"file": o.file, "line": o.line, "kind": o.kind, "model": o.model, "state": o.state_text or None,
                     "layer": o.layer_text or None, "objective": o.objective, "planner": o.planner,
                     "baseline": o.baseline, "unit": o.unit, "observed": o.value, "predicted": v,
                     "predicted_before": float(result.before.predicted[i]), "error": err, "agrees":
                     (None if o.kind != "plan_uses" else text == "ok"), "weight": o.weight})
    params = []
    free, kept = set(result.free), set(result.kept)
    for i, p in enumerate(cal.board.params):
        # kept: no observation moves it; scaled: an int8 rate following its fitted float rate
        # dropped: with no --free, a parameter the fit could not pin down, kept at the file's value
        status = ("fitted" if i in free else "scaled" if i in result.tied else "kept" if i in kept
                  else "dropped" if i in result.dropped else "fixed")
        params.append({"name": p.name, "unit": p.unit, "before": p.x0, "after": float(result.values[i]),
                       "status": status, "lo": float(result.bounds[0][i]),
                       "hi": float(result.bounds[1][i]), **({"why": result.dropped[i]} if i in result.dropped else {})})
    return {"board": cal.board.label, "output": output, "observations": rows,
            "summary": {"before": summary(cal.obs, result.before.predicted),
                        "after": summary(cal.obs, result.after.predicted)},
            "parameters": params,
            "memory": [{"file": o.file, "line": o.line, "model": o.model, "device": o.device, "reported_mb": o.value,
                        "board_mb": cal.board_bytes(o.models[0], o.device) / 1e6} for o in cal.memory],
            "fit": {"free": len(result.free), "observations": len(cal.obs), "evaluations": result.nfev,
                    "jacobians": result.njev, "seconds": result.seconds, "solver": result.message,
                    "converged": result.converged}}



