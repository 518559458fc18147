"""The examples are executed, so the documentation cannot rot."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from extras import needs

pytestmark = [pytest.mark.zoo, pytest.mark.slow, pytest.mark.timeout(1200)]
needs("zoo", "torch", "torchvision")
ROOT = Path(__file__).resolve().parents[1]


def _env():
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def test_python_api_example(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "python_api.py"), str(tmp_path / "build")],
                       capture_output=True, text=True, env=_env(), timeout=600)
    assert r.returncode == 0, r.stderr
    assert "matches the unsliced model: True" in r.stdout


def test_quickstart_script(tmp_path):
    r = subprocess.run(["bash", str(ROOT / "examples" / "quickstart.sh"), str(tmp_path)],
                       capture_output=True, text=True, env=_env(), timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("verify: outputs match the unsliced model") == 3   # hikey970, a variant, host


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_makefile_example(tmp_path):
    build = tmp_path / "build"
    args = ["make", "-C", str(ROOT / "examples"), f"MODEL={build}/m.onnx", f"OUT={build}/out", "check"]
    r = subprocess.run(args, capture_output=True, text=True, env=_env(), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (build / "out" / "manifest.json").exists()
    again = subprocess.run(args[:-1] + ["all"], capture_output=True, text=True, env=_env(), timeout=600)
    assert "Nothing to be done" in again.stdout or "is up to date" in again.stdout
