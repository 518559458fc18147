"""A non-editable install carries the sub-packages, data files and nothing generic at top level."""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_layout(tmp_path):
    pytest.importorskip("setuptools")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
                        "-q", "-w", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    wheel = next(tmp_path.glob("hetcc-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for must in ("hetcc/cli.py", "hetcc/passes/layers.py", "hetcc/passes/codegen.py", "hetcc/targets/__init__.py",
                 "hetcc/targets/hikey970.toml", "hetcc/targets/host.toml", "hetcc/runtime/executor.py",
                 "hetcc/runtime/manifest.schema.json", "hetcc/planners/dp.py"):
        assert must in names, must
    top = {n.split("/")[0] for n in names}
    assert not top & {"passes", "runtime", "targets", "tests", "benchmarks", "examples"}, top
