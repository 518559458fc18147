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


def test_a_poisoned_boundary_fit_cannot_move_the_whole_model_s_prediction():
    """A fit taken on a busy machine (boundaries 1000x too costly, or nearly free) is scaled to the
    model's own boundaries: one slice of the whole model still costs the model's measured time."""
    from hetcc.measure.profiler import BoundaryFit, costs_from_profile

    layers_ms, model_ms = [5.0, 6.0, 4.0, 7.0], 20.0

    class L:
        def __init__(self, i):
            self.id, self.input_bytes, self.output_bytes = i, 4096 * (i + 1), 4096 * (i + 2)

    import hetcc.targets as T

    target = T.load_target("host-analytical")
    legal = np.ones((4, len(target.devices)), dtype=bool)
    for fit in (BoundaryFit(50.0, 1e-3), BoundaryFit(0.0, 1e-12), BoundaryFit(0.01, 2e-7)):
        table = costs_from_profile([L(i) for i in range(4)], target, legal, layers_ms, model_ms, fit)
        whole = table.transfer_in_ms[0, 0] + table.latency_ms[:, 0].sum() + table.transfer_out_ms[-1, 0]
        assert whole == pytest.approx(model_ms, rel=1e-6), fit


@pytest.mark.parametrize("layers, model, bad", [
    ([5.0, 5.0], 9.5, False), ([5.0, 5.0], 10.5, False),        # boundaries a little, noise a little
    ([5.0, 5.0], 14.0, True),                                   # the whole far slower than its parts
    ([5.0, 5.0, 5.0], 1.0, True),                               # boundaries 14x the model
    ([5.0], float("nan"), True)])
def test_profile_consistency(layers, model, bad):
    from hetcc.measure.profiler import profile_inconsistency

    assert (profile_inconsistency(layers, model) is not None) == bad


def test_an_inconsistent_profile_is_used_but_never_cached(tmp_path, monkeypatch):
    from hetcc.measure import profiler

    monkeypatch.setenv("HETCC_CACHE_DIR", str(tmp_path))
    calls = []

    def compute():
        calls.append(1)
        return {"layers_ms": [1.0], "model_ms": 9.0, "inconsistent": "busy"}

    keep = lambda v: not v.get("inconsistent")  # noqa: E731
    assert profiler._cached("k", compute, keep=keep)["inconsistent"] == "busy"
    assert not (tmp_path / "profiles" / "k.json").exists()
    profiler._cached("k", compute, keep=keep)
    assert len(calls) == 2                               # measured again, not read back


def test_measure_boundary_fits_non_negative_line():
    fit = measure_boundary(sizes=((8, 8), (16, 16)), convs=2, min_seconds=0.01)
    assert fit.delta_ms >= 0 and fit.beta_ms_per_byte >= 0
    assert len(fit.samples) == 2
