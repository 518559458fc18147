"""host profiler: boundary calibration and the measured cost table."""
from __future__ import annotations

import numpy as np
import pytest

from hetcc.measure.profiler import boundary_scale, measure_boundary


def test_boundary_scale_matches_the_models_own_cuts():
    t_in = np.array([0.1, 0.1, 0.1])
    t_out = np.array([0.1, 0.1, 0.1])
    # two internal boundaries predicted at 0.2 ms each; layers alone cost 0.8 ms more than whole
    assert boundary_scale([5.0, 5.0, 5.0], 14.2, t_in, t_out) == pytest.approx(2.0)


@pytest.mark.parametrize("layers,model", [([5.0], 5.0), ([5.0, 5.0], 11.0)])
def test_boundary_scale_undetermined_is_one(layers, model):
    t = np.full(len(layers), 0.1)
    assert boundary_scale(layers, model, t, t) == 1.0


def test_boundary_scale_is_clamped():
    t = np.full(3, 0.001)
    assert boundary_scale([5.0, 5.0, 5.0], 1.0, t, t) == 10.0


def test_measure_boundary_fits_non_negative_line():
    fit = measure_boundary(sizes=((8, 8), (16, 16)), convs=2, min_seconds=0.01)
    assert fit.delta_ms >= 0 and fit.beta_ms_per_byte >= 0
    assert len(fit.samples) == 2
