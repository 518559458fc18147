"""``calibrate``: the work of ``hetcc calibrate`` in one call: load the board, read the
observations, fit, write the fitted file atomically, and check that the file, loaded as a user
loads it, predicts what the fit found.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from hetcc.core.errors import UsageError
from hetcc.measure.calibrate.fitting import FitResult, fit
from hetcc.measure.calibrate.model import Calibration
from hetcc.measure.calibrate.params import (DEFAULT_RANGE, DIGITS, MISSING_EXTRA, Board, check_range, parse_bound,
                                            parse_set)
from hetcc.measure.calibrate.writer import fitted_text
from hetcc.measure.observations import Observation, read_observations


def calibrate(board: str | Path, observation_files: Sequence[str | Path], output: str | Path, *,
              free: Sequence[str] = (), fix: Sequence[str] = (), bounds: Sequence[str] = (),
              range_factor: float = DEFAULT_RANGE, progress: Any = None,
              sets: Sequence[str] = ()) -> tuple[Calibration, FitResult, str]:
    """Fit ``board`` to the observation files and write the fitted board to ``output``
    atomically; returns the calibration, the result and the text written. ``sets``
    (``NAME=VALUE``) put those parameters at a value before the fit and keep them there."""
    import numpy as np
    import importlib.util

    if importlib.util.find_spec("scipy") is None or importlib.util.find_spec("tomlkit") is None:
        raise UsageError(MISSING_EXTRA)
    from hetcc.files.atomic import check_replaceable_file, write_file
    from hetcc.targets.loader import load_bytes

    out = Path(output)
    check_replaceable_file(out, "-o")
    check_range(range_factor)
    parsed_bounds = dict((n, (lo, hi)) for n, lo, hi in (parse_bound(t) for t in bounds))
    parsed_sets = dict(parse_set(t) for t in sets)
    b = Board.load(board)
    for name in parsed_bounds:
        b.index(name)
    given: dict[int, float] = {}
    for name, value in parsed_sets.items():
        i = b.index(name)
        if name in parsed_bounds:
            raise UsageError(f"--set {name} and --bound {name}: a set parameter is not fitted; drop one of them")
        given[i] = b.params[i].x0
        b.params[i] = replace(b.params[i], x0=value)
    fix = [*fix, *parsed_sets]
    target0 = b.target()
    obs: list[Observation] = []
    for f in observation_files:
        obs.extend(read_observations(f, target0))
    cal = Calibration(b, obs, progress=progress)
    result = fit(cal, free=free, fix=fix, bounds=parsed_bounds, range_factor=range_factor, progress=progress)
    changed = [i for i in [*result.free, *result.tied] if result.values[i] != b.params[i].x0]
    changed += [i for i, old in given.items() if b.params[i].x0 != old]
    sources = ", ".join(Path(f).name for f in observation_files)
    text = fitted_text(b, result.values, changed, sources, len(obs),
                       {j: b.params[i].name for j, i in result.tied.items()}, given)
    fitted = load_bytes(text.encode("utf-8"), out, str(out))       # the loader's checks, as a user loads it
    after = cal.evaluate(target=fitted)
    # a fitted static power is written on every DVFS level, each level's number at DIGITS significant
    # digits: a level's power (and so an energy) may differ from the fit's by that rounding, no more
    if not np.allclose(after.predicted, result.after.predicted, rtol=10.0 ** (1 - DIGITS), atol=1e-12,
                       equal_nan=True):
        raise RuntimeError("the fitted file predicts other numbers than the fit; please report this")  # pragma: no cover
    result.after = after
    write_file(out, text, "-o", "choose a writable path")
    return cal, result, text

