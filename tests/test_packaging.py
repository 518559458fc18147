"""A non-editable install carries every module and data file of the tree, and nothing generic at
top level: the wheel is built and its contents compared with the source tree, so a new
sub-package or data file can never go missing from an install."""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: source folder -> where it lands in the wheel (setup.py's ROOTS)
ROOTS = {"hetcc": "hetcc", "passes": "hetcc/passes", "targets": "hetcc/targets", "runtime": "hetcc/runtime"}
DATA = ("*.toml", "*.csv", "*.json")


def tree_files() -> set[str]:
    want = set()
    for folder, dest in ROOTS.items():
        base = ROOT / folder
        for pattern in ("*.py", *DATA):
            for f in base.rglob(pattern):
                if "__pycache__" not in f.parts:
                    want.add(f"{dest}/{f.relative_to(base).as_posix()}")
    return want


@pytest.mark.slow
def test_wheel_holds_every_module_and_data_file(tmp_path):
    pytest.importorskip("setuptools")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
                        "-q", "-w", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    wheel = next(tmp_path.glob("hetcc-*.whl"))
    names = {n for n in zipfile.ZipFile(wheel).namelist() if not n.startswith("hetcc-")}
    missing = sorted(tree_files() - names)
    assert not missing, f"not in the wheel: {missing}"
    for must in ("hetcc/cli/app.py", "hetcc/compiler/api.py", "hetcc/passes/codegen.py", "hetcc/targets/hikey970.toml",
                 "hetcc/runtime/manifest.schema.json", "hetcc/planners/dp.py", "hetcc/_entry.py"):
        assert must in names, must
    top = {n.split("/")[0] for n in names}
    assert top == {"hetcc"}, top
