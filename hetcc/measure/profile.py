"""``hetcc profile MODEL --target host -o FILE.csv``: measure a model on this machine, as
MOSAIC's inference workload profiler does, and write the measurements as observations
(``hetcc.observations/1``) for ``hetcc calibrate`` and ``--target FILE.csv``.

Why a command of its own (``hetcc compile --target host`` profiles too, into a private cache):
the numbers become a file a person can read, keep beside a paper's, and fit a model to. What is
measured is what the compiler plans with: the model is loaded and layered as ``hetcc compile``
loads it (same passes, so layer N means the same layer), each layer run alone in its own
onnxruntime session (a one-layer slice: its cost, the session's fixed cost and its boundary
tensors; ``hetcc.measure.profiler``) and the whole model in one session, timed in rounds (every session
once per round: a burst of load from other programs touches a few runs of each, and the least
run of each, which is what a measurement keeps, escapes it), at each CPU frequency the OS
lets it set (``hetcc.runtime.power.CpuFrequency``; the settings are put back afterwards, also on
Ctrl-C or SIGTERM), with the power a meter reads where one exists (``hetcc.runtime.power``).

With two or more frequencies each layer's ``T = theta/f + rho`` (MOSAIC Eq. 3) is fitted
through the lowest and highest (``hetcc.compiler.costmodel.fit_theta_rho``) and written as comment
lines of the file (``# hetcc.profile theta_rho layer=N theta_ms_mhz=X rho_ms=Y``), beside two
more a reader may use: the layering (``layers=L max_cut_tensors=K layering=FP``, checked by
``--target FILE.csv``) and this machine's session-boundary cost (``boundary_delta_ms``,
``boundary_beta_ms_per_mb``: how ``--target FILE.csv`` splits a layer's time into compute and
transfer, as the compile's own profile does). docs/profiling.md has the details.
"""
from __future__ import annotations

import atexit
import datetime as _dt
import platform
import sys
from typing import Any, Sequence

from hetcc.measure.observations import COMMENT_TAG

#: --repeats: timed runs per measurement (the least is kept: ``profiler.typical``)
REPEATS_MAX = 10_000


def choose_levels(available: Sequence[float], spec: str) -> list[float]:
    """The levels ``--freqs`` asks for among ``available`` (ascending MHz): ``all``, ``minmax``
    (MOSAIC's two profiles), or MHz values (each must be offered, within 0.5 MHz). ValueError
    names a bad value."""
    avail = sorted(available)
    s = spec.strip().lower()
    if s == "all":
        return list(avail)
    if s == "minmax":
        return sorted({avail[0], avail[-1]}) if avail else []
    out = []
    for part in s.split(","):
        try:
            mhz = float(part.strip().removesuffix("mhz"))
        except ValueError:
            raise ValueError(f"{part.strip()!r} is not a frequency in MHz") from None
        near = [a for a in avail if abs(a - mhz) <= 0.5]
        if not near:
            raise ValueError(f"{mhz:g} MHz is not a level this CPU offers ({', '.join(f'{a:g}' for a in avail)})")
        out.append(near[0])
    return sorted(set(out))


def load_program(model: str, target: Any, *, input_shapes: Any = None, max_cut_tensors: int = 1, seed: int = 0,
                 progress: Any = None) -> Any:
    """The model loaded and layered exactly as ``hetcc compile`` does (every analysis pass but
    the costs, which is what this command measures)."""
    from hetcc.compiler import api
    from hetcc.compiler.passmanager import PassManager
    from hetcc.compiler.pipeline import analysis_passes

    program = api.load_program(model, input_shapes, seed, progress=progress)
    passes = [p for p in analysis_passes(target, max_cut_tensors=max_cut_tensors) if p.name != "costs"]
    PassManager(passes, progress=progress).run(program)
    return program








# ---------------------------------------------------------------- measuring

def note(text: str) -> None:
    """One ``hetcc: ...`` line on stderr (what the profile could not do, and what it did instead)."""
    print(f"hetcc: {text}", file=sys.stderr, flush=True)


class ProfileResult:
    """What ``profile`` measured: per frequency (MHz, None = current) the layers' and the whole
    model's ``Timing``; the program, the power meter's name, the threads and the boundary fit."""

    def __init__(self, program: Any, threads: int, meter: str | None, boundary: Any) -> None:
        self.program = program
        self.threads = threads
        self.meter = meter
        self.boundary = boundary
        self.layers: dict[float | None, list[Any]] = {}
        self.model: dict[float | None, Any] = {}
        self.when = _dt.datetime.now().astimezone().replace(microsecond=0).isoformat()

    @property
    def freqs(self) -> list[float | None]:
        return list(self.layers)

    def theta_rho(self) -> tuple[Any, Any, Any, Any] | None:
        """(theta [L], rho [L], theta_model, rho_model) through the lowest and highest frequency
        (MOSAIC Eq. 3, ``fit_theta_rho``), or None with fewer than two known frequencies."""
        import numpy as np

        from hetcc.compiler.costmodel import fit_theta_rho

        known = sorted(f for f in self.freqs if f is not None)
        if len(known) < 2:
            return None
        lo, hi = known[0], known[-1]
        t_lo = np.array([t.ms for t in self.layers[lo]])
        t_hi = np.array([t.ms for t in self.layers[hi]])
        th, rh = fit_theta_rho(t_lo, t_hi, lo, hi)
        thm, rhm = fit_theta_rho(self.model[lo].ms, self.model[hi].ms, lo, hi)
        return th, rh, float(thm), float(rhm)


def profile(program: Any, levels: Sequence[float | None], *, cpu: Any = None, meter: Any = None,
            repeats: int | None = None, threads: int | None = None, progress: Any = None) -> ProfileResult:
    """Time every layer alone and the whole model at each of ``levels`` (MHz set through ``cpu``,
    a ``hetcc.runtime.power.CpuFrequency``; None = as it is). Whatever ``cpu`` changed is restored before
    this returns or raises (Ctrl-C and SIGTERM included: the CLI turns both into
    KeyboardInterrupt), and at interpreter exit should even that be cut short."""
    from dataclasses import replace

    from hetcc.compiler.passmanager import step
    from hetcc.measure.profiler import (boundary_fit, interleaved_timings, layer_session, measure_session, model_session,
                           session_options)
    from hetcc.compiler.program import LAYERS

    layers = program.get(LAYERS)
    so = session_options(threads)
    kw: dict[str, Any] = (dict(min_runs=5, min_seconds=0.05, max_runs=200) if repeats is None
                          else dict(min_runs=repeats, min_seconds=0.0, max_runs=repeats))
    result = ProfileResult(program, int(so.intra_op_num_threads), getattr(meter, "name", None), None)
    restore = cpu.restore if cpu is not None else None
    if restore is not None:
        atexit.register(restore)
    try:
        for want in levels:
            at = cpu.set_mhz(want) if want is not None else None
            label = f" at {at:g} MHz" if at is not None else ""
            with step(progress, f"loading {len(layers)} layers alone and the whole model into onnxruntime"):
                sessions = [layer_session(program, l, so) for l in layers] + [model_session(program, so)]
            with step(progress, f"timing {len(layers)} layers and the whole model{label}, in rounds"):
                ts = interleaved_timings(sessions, label="rounds", **kw)
            if meter is not None:   # power needs a sustained stretch of one session: a block each
                with step(progress, f"reading the power of each{label}"):
                    ts = [replace(t, power_mw=measure_session(s, f, meter=meter, **kw).power_mw)
                          for t, (s, f) in zip(ts, sessions)]
            result.layers[at], result.model[at] = ts[:-1], ts[-1]
            del sessions
    finally:
        if restore is not None:
            failed = restore()
            atexit.unregister(restore)
            if failed:
                note("could not put back the CPU frequency settings: " + "; ".join(failed))
    with step(progress, "measuring the session-boundary cost (once per machine)"):
        result.boundary = boundary_fit()
    return result


# ---------------------------------------------------------------- the file

def _sig(x: float) -> float:
    return float(f"{x:.6g}")


def source_text(result: ProfileResult) -> str:
    """The ``source`` column: ``hetcc profile on <cpu>, <ISO date>, onnxruntime <ver>, <n> threads``."""
    from hetcc.measure.profiler import cpu_model
    from hetcc.runtime import onnxrt

    return (f"hetcc profile on {cpu_model() or platform.machine()}, {result.when}, "
            f"onnxruntime {onnxrt.load().__version__}, {result.threads} threads")


def observations(result: ProfileResult, *, model: str, device: str, max_cut_tensors: int = 1,
                 board: str = "host") -> tuple[list[dict[str, Any]], list[str]]:
    """(rows, comment lines) of the observations file: per frequency one latency row per layer
    (and a power row beside it where a meter was read) and one for the whole model, whose
    ``weight`` is the number of layers: in a least-squares fit (``hetcc calibrate``) it then counts
    as much as the layers together, so they do not outvote the one row that says what the whole
    model, the thing a plan is judged by, costs."""
    from hetcc.measure.profiler import layers_fingerprint
    from hetcc.compiler.program import LAYERS

    program = result.program
    layers = program.get(LAYERS)
    src = source_text(result)
    rows: list[dict[str, Any]] = []
    for f in result.freqs:
        entries = [(str(i), t, None) for i, t in enumerate(result.layers[f])]
        entries.append(("", result.model[f], float(len(layers)) if len(layers) > 1 else None))
        for layer, t, weight in entries:
            base = dict(model=model, model_sha256=program.source_sha256, device=device, freq_mhz=f,
                        layer=layer, weight=weight, source=src)
            rows.append(dict(base, kind="latency", value=_sig(t.ms), unit="ms"))
            if t.power_mw is not None and t.power_mw > 0:
                rows.append(dict(base, kind="power", value=_sig(t.power_mw), unit="mW"))
    b = result.boundary
    comments = [
        f"{COMMENT_TAG} board={board} layers={len(layers)} max_cut_tensors={max_cut_tensors} "
        f"layering={layers_fingerprint(layers)}",
        f"{COMMENT_TAG} boundary_delta_ms={_sig(b.delta_ms)} boundary_beta_ms_per_mb={_sig(b.beta_ms_per_byte * 1e6)}",
        f"{COMMENT_TAG} power={'none' if result.meter is None else result.meter.replace(' ', '_')}",
    ]
    fit = result.theta_rho()
    if fit is not None:
        th, rh, thm, rhm = fit
        comments.append(f"{COMMENT_TAG} theta_rho layer=model theta_ms_mhz={_sig(thm)} rho_ms={_sig(rhm)}")
        comments += [f"{COMMENT_TAG} theta_rho layer={i} theta_ms_mhz={_sig(a)} rho_ms={_sig(r)}"
                     for i, (a, r) in enumerate(zip(th.tolist(), rh.tolist()))]
    return rows, comments








__all__ = ["ProfileResult", "choose_levels", "load_program", "observations", "profile", "source_text"]
