"""targets/hikey970.toml (the built-in board) is what `hetcc calibrate` makes of MOSAIC's published numbers: the
fit is re-run here from the prior board and the observations with the committed options, and
every number of the result must equal the committed file's (issue 8: "a test re-runs the fit
and compares")."""
from __future__ import annotations

import math
import shlex
import tomllib
from pathlib import Path

import pytest

from extras import needs

from hetcc.cli import main

ROOT = Path(__file__).resolve().parents[2]
OBS = ROOT / "targets" / "observations"

# zoo: the observations name zoo models (exported with torch)
pytestmark = [pytest.mark.zoo, pytest.mark.calibrate, pytest.mark.slow, pytest.mark.timeout(3600)]
needs("calibrate", "scipy", "tomlkit")
needs("zoo", "torch", "torchvision")


def _numbers(doc, path=""):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _numbers(v, f"{path}.{k}" if path else k)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _numbers(v, f"{path}[{i}]")
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool):
        yield path, float(doc)


def test_hikey970_is_the_fit_of_the_published_numbers(tmp_path) -> None:
    out = tmp_path / "refit.toml"
    args = shlex.split((OBS / "hikey970-refit.args").read_text())
    rc = main(["calibrate", str(OBS / "hikey970-prior.toml"), str(OBS / "hikey970-mosaic.csv"), "-o", str(out),
               "--quiet", "--json", *args])
    assert rc == 0
    committed = dict(_numbers(tomllib.loads((ROOT / "targets" / "hikey970.toml").read_text())))
    refit = dict(_numbers(tomllib.loads(out.read_text())))
    assert committed.keys() == refit.keys()
    prior = dict(_numbers(tomllib.loads((OBS / "hikey970-prior.toml").read_text())))
    moved = [k for k in committed if not math.isclose(committed[k], prior.get(k, math.nan), rel_tol=1e-9)]
    assert len(moved) >= 15            # the fitted parameters (static power scales every DVFS level too)
    for k, v in committed.items():
        assert refit[k] == pytest.approx(v, rel=1e-3), k
