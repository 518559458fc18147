"""Python API: ``hetcc.compile(model, target=..., objective=..., output_dir=...)``."""
from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from .errors import UsageError
from .optimizers.problem import METRICS, Objective, Plan
from .passmanager import PassManager, PassTiming
from .program import Program

_NUM = r"(\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"


def parse_deadline(text: str | float | None) -> float | None:
    """``170ms``, ``0.17s`` or a bare number of ms -> ms."""
    if text is None:
        return None
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        m = re.fullmatch(rf"\s*({_NUM})\s*(ms|s|us)?\s*", str(text))
        if not m:
            raise UsageError(f"malformed --deadline {text!r}; use e.g. 170ms, 0.17s or 170 (ms)")
        value = float(m.group(1)) * {"ms": 1.0, "s": 1e3, "us": 1e-3, None: 1.0}[m.group(3)]
    if not value > 0:
        raise UsageError(f"--deadline must be positive, got {text!r}")
    return value


def parse_power(text: str | float | None) -> float | None:
    """``5W``, ``5000mW`` or a bare number of W -> mW."""
    if text is None:
        return None
    if isinstance(text, (int, float)):
        value = float(text) * 1e3
    else:
        m = re.fullmatch(rf"\s*({_NUM})\s*(W|w|mW|mw)?\s*", str(text))
        if not m:
            raise UsageError(f"malformed --power-cap {text!r}; use e.g. 5W, 5000mW or 5 (W)")
        value = float(m.group(1)) * (1.0 if (m.group(3) or "W").lower() == "mw" else 1e3)
    if not value > 0:
        raise UsageError(f"--power-cap must be positive, got {text!r}")
    return value


@dataclass
class CompileResult:
    """What ``compile`` returns: the chosen plan, the program with its analyses, per-pass times."""

    plan: Plan
    program: Program
    target: Any
    objective: Objective
    output_dir: Path | None
    timings: list[PassTiming] = field(default_factory=list)

    @property
    def total_seconds(self) -> float:
        return sum(t.seconds for t in self.timings)


def resolve_model(model: Any, input_shapes: Mapping[str, tuple[int, ...]] | None, seed: int = 0) -> Path:
    """A path to an ONNX file for a path, a zoo name or a torch.nn.Module."""
    if isinstance(model, (str, Path)):
        path = Path(model)
        if path.exists() or str(model).endswith(".onnx") or "/" in str(model):
            return path
        from . import zoo

        if str(model) in zoo.ZOO:
            return _zoo_model(str(model), seed)
        return path  # the frontend reports the missing file
    try:
        import torch
    except ImportError:  # pragma: no cover
        raise UsageError(f"cannot compile a {type(model).__name__}; pass a path to an .onnx file") from None
    if isinstance(model, torch.nn.Module):
        if not input_shapes or len(input_shapes) != 1:
            raise UsageError("compiling a torch.nn.Module needs input_shapes={'input': (1, 3, 224, 224)}")
        from . import zoo

        (name, shape), = input_shapes.items()
        out = Path(tempfile.mkdtemp(prefix="hetcc-module-")) / f"{type(model).__name__.lower()}.onnx"
        return zoo.export_module(model, shape, out)
    raise UsageError(f"cannot compile a {type(model).__name__}; pass a path to an .onnx file, a zoo name or a torch.nn.Module")


def _zoo_model(name: str, seed: int) -> Path:
    """A zoo name given as MODEL: export once into the cache (~/.cache/hetcc/zoo) and reuse."""
    from . import zoo
    from .profiler import cache_dir

    path = cache_dir() / "zoo" / f"seed{seed}" / f"{name}.onnx"  # the stem names the model
    if not path.exists():
        zoo.export(name, path, seed=seed)
    return path


def compile(model: Any, target: str | Path | Any = "hikey970", objective: str = "latency", *,
            deadline_ms: float | str | None = None, power_cap_mw: float | str | None = None,
            planner: str = "auto", planner_options: dict[str, Any] | None = None,
            output_dir: str | Path | None = None, input_shapes: Mapping[str, tuple[int, ...]] | None = None,
            max_cut_tensors: int = 1, seed: int = 0, profile_repeats: int | None = None,
            profile_cache: bool = True,
            on_pass: Callable[[PassTiming], None] | None = None, dump_after: str | None = None) -> CompileResult:
    """Compile ``model`` for ``target``; with ``output_dir`` write the artifact (slices + manifest).

    ``deadline_ms`` accepts a number of ms or a string like '170ms'/'0.17s'; ``power_cap_mw`` a
    number of mW or a string like '5W'/'5000mW'. Raises HetccError subclasses on bad input and
    InfeasibleError when no plan meets the constraints.
    """
    from .frontend import load_model
    from .pipeline import build_pipeline
    from .targets import load_target

    if objective not in METRICS:
        raise UsageError(f"unknown objective {objective!r}; choose one of {', '.join(METRICS)}")
    if max_cut_tensors < 1:
        raise UsageError("--max-cut-tensors must be at least 1")
    deadline = parse_deadline(deadline_ms) if isinstance(deadline_ms, str) else (
        None if deadline_ms is None else parse_deadline(float(deadline_ms)))
    cap = parse_power(power_cap_mw) if isinstance(power_cap_mw, str) else (
        None if power_cap_mw is None else float(power_cap_mw))
    if cap is not None and not cap > 0:
        raise UsageError("--power-cap must be positive")
    tgt = target if hasattr(target, "states") else load_target(target)
    if not tgt.has_power_model and (objective != "latency" or cap is not None):
        raise UsageError(f"target {tgt.name!r} has no power model (its costs are measured, not modelled): "
                         "use --objective latency without --power-cap, or a modelled target such as hikey970")
    obj = Objective(metric=objective, deadline_ms=deadline, power_cap_mw=cap)
    options = dict(planner_options or {})
    program = load_model(resolve_model(model, input_shapes, seed), input_shapes)
    passes = build_pipeline(tgt, obj, output_dir=output_dir, planner=planner,
                            planner_options=options,
                            max_cut_tensors=max_cut_tensors, profile_repeats=profile_repeats,
                            profile_cache=profile_cache)
    if dump_after is not None and dump_after not in [p.name for p in passes]:
        raise UsageError(f"--dump-after {dump_after!r}: no such pass; passes: {', '.join(p.name for p in passes)}")
    manager = PassManager(passes, on_pass=on_pass, dump_after=dump_after, dump=_dump)
    manager.run(program)
    return CompileResult(plan=program.get("plan"), program=program, target=tgt, objective=obj,
                         output_dir=Path(output_dir) if output_dir is not None else None, timings=manager.timings)


def _dump(program: Program, pass_name: str) -> None:
    """--dump-after PASS: write the analyses so far as JSON to ./hetcc-dump-PASS.json."""
    import dataclasses
    import json

    import numpy as np

    def enc(o: Any) -> Any:
        if dataclasses.is_dataclass(o):
            return {f.name: enc(getattr(o, f.name)) for f in dataclasses.fields(o)}
        if isinstance(o, np.ndarray):
            return o.tolist()
        if isinstance(o, dict):
            return {str(k): enc(v) for k, v in o.items()}
        if isinstance(o, (list, tuple, set, frozenset)):
            return [enc(v) for v in (sorted(o) if isinstance(o, (set, frozenset)) else o)]
        if isinstance(o, (np.floating, float)):
            return float(o) if np.isfinite(o) else None
        if isinstance(o, (np.integer,)):
            return int(o)
        if isinstance(o, (str, int, bool)) or o is None:
            return o
        return repr(o)

    path = Path(f"hetcc-dump-{pass_name}.json")
    path.write_text(json.dumps({k: enc(v) for k, v in program.analyses.items()}, indent=1))
