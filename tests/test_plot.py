"""``hetcc inspect --plot``: a bar per slice on its device's row (never thinner than
MIN_BAR_FRACTION of the axis), frequency and energy in the labels, the deadline as a line; a
valid image for a 1-slice and a 50-slice plan, and a self-contained .html."""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import onnx
import onnx.parser
import pytest

from extras import needs

from hetcc.cli.plot import MIN_BAR_FRACTION, plot_schedule, schedule_figure
from hetcc.compiler.frontend import load_model
from hetcc.passes.codegen import emit_artifact
from hetcc.compiler.passmanager import PassManager
from hetcc.compiler.pipeline import analysis_passes
from hetcc.planners import Objective, Slice
from hetcc.runtime.manifest import load_manifest
from hetcc.targets import load_target

pytestmark = pytest.mark.plot
needs("plot", "matplotlib")

LAYERS = 60


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    """A 60-layer chain analysed for hikey970 (its cost tables give each slice a predicted cost)."""
    body = "\n".join(f"    t{i + 1} = {'Relu' if i % 2 else 'Sigmoid'}(t{i})" for i in range(LAYERS))
    text = f'<ir_version: 8, opset_import: ["" : 17]>\ng (float[1,64] t0) => (float[1,64] t{LAYERS}) {{\n{body}\n}}'
    path = tmp_path_factory.mktemp("m") / "chain.onnx"
    onnx.save(onnx.parser.parse_model(text), str(path))
    target = load_target("hikey970")
    prog = load_model(path, None)
    PassManager(analysis_passes(target)).run(prog)
    return prog, target


def artifact(program, out: Path, n_slices: int, deadline_ms: float | None):
    prog, target = program
    problem = prog.get("costs").problem()
    rng = np.random.default_rng(n_slices)
    cuts = sorted(int(c) for c in rng.choice(np.arange(1, LAYERS), size=n_slices - 1, replace=False))
    bounds = [0, *cuts, LAYERS]
    slices = []
    for a, b in zip(bounds, bounds[1:]):
        legal = [s for s in range(problem.num_states) if problem.slice_legal(a, b - 1, s)]
        slices.append(Slice(a, b - 1, int(rng.choice(legal))))
    plan = problem.evaluate(slices, planner="fixed", objective=Objective("energy", deadline_ms=deadline_ms))
    return load_manifest(emit_artifact(out, prog, target, {"fixed": plan}))


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR" and data.endswith(b"IEND\xaeB`\x82")
    return struct.unpack(">II", data[16:24])


@pytest.mark.slow
@pytest.mark.parametrize("n_slices", [1, 50])
def test_plot_writes_a_png_with_every_slice_visible(program, tmp_path, n_slices):
    m = artifact(program, tmp_path / "a", n_slices, deadline_ms=None if n_slices == 1 else 1e3)
    v = m.variant(None)
    fig = schedule_figure(m, v, "fixed")
    ax = fig.axes[0]
    bars = [p for p in ax.patches if p.get_height() > 0]
    assert len(bars) == n_slices
    span = ax.get_xlim()[1]
    assert all(b.get_width() >= MIN_BAR_FRACTION * span * (1 - 1e-9) for b in bars)
    # bars start where the previous slice ended (predicted times) and sit on their device's row
    starts = np.cumsum([0.0] + [s.predicted.latency_ms for s in v.slices])[:-1]
    assert np.allclose([b.get_x() for b in bars], starts)
    rows = [t.get_text().split("\n")[0] for t in ax.get_yticklabels()]
    assert [rows[round(b.get_y() + b.get_height() / 2)] for b in bars] == [s.device for s in v.slices]
    assert len(rows) == len({s.device for s in v.slices})
    words = " ".join(t.get_text() for t in [*ax.texts, *ax.get_yticklabels()])   # bars and rows, labelled
    assert "MHz" in words and "mJ" in words and "energy" in ax.get_title()
    assert f"{n_slices} slice" in ax.get_title()
    deadline_lines = [line for line in ax.get_lines() if line.get_xdata()[0] == 1e3]
    assert len(deadline_lines) == (0 if n_slices == 1 else 1)
    png = tmp_path / "s.png"
    plot_schedule(m, png)
    w, h = png_size(png)
    assert w >= 1000 and 150 <= h <= 1000


def test_plot_html_is_one_self_contained_page(program, tmp_path):
    m = artifact(program, tmp_path / "a", 5, deadline_ms=None)
    page = tmp_path / "s.html"
    plot_schedule(m, page)
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "<svg" in text and text.count("<tr>") == 1 + 5
    assert "<script" not in text and "http-equiv" not in text
