"""Every hostile case, gathered from the ``cases_*.py`` modules beside this one (each exports
``CASES``, a list of :class:`harness.Case`). Used by test_cases.py and benchmarks/hostile.py."""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for p in (HERE, HERE.parent):                 # harness + cases_*; tests/ for text_models
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from harness import Case  # noqa: E402


def all_cases() -> list[Case]:
    cases: list[Case] = []
    for f in sorted(HERE.glob("cases_*.py")):
        cases += importlib.import_module(f.stem).CASES
    ids = [c.id for c in cases]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"hostile case ids used twice: {dup}")
    return cases
