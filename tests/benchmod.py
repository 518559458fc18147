"""``load(name)``: the module of ``benchmarks/<name>.py``, imported as the tests of a benchmark's
--quick mode call it (``benchmarks/`` on sys.path, so the script's own imports of its neighbours
resolve)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    spec.loader.exec_module(mod)
    return mod
