"""Run every catalogued hostile case (cases_*.py): right exit code, one line naming the culprit,
no traceback, nothing lost, nothing written or read outside (see harness.py)."""
from __future__ import annotations

import pytest

from catalogue import all_cases
from harness import child_limit, describe, run_case

CASES = all_cases()


#: cases of several seconds each (measured with --durations): out of pytest -m "not slow" too
SLOW = {"models/nonzero-cut-seed-3", "models/nonzero-cut-seed-7", "models/nonzero-output-seed-5",
        "models/range-topk-computed-k-seed-3", "models/tensor-limit-not-a-number", "models/tensor-limit-lowered",
        "models/intermediate-40gb", "models/input-shape-40gb", "models/declared-input-40gb", "flags/plot-ok",
        "flags/input-huge-header-right-rank", "artifacts/manifest-5000-slices"}


def marks(case) -> list:
    """slow for a slow case; a child case's test limit is the child's own plus time for the set-up."""
    out = [pytest.mark.slow] if case.slow or case.id in SLOW else []
    if case.child:
        out.append(pytest.mark.timeout(child_limit(case) + 120))
    return out


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=marks(c)) for c in CASES])
def test_hostile_case(case, tmp_path):
    outcome, found = run_case(case, tmp_path)
    assert not found, describe(case, outcome, found)



def test_the_catalogue_covers_every_area():
    areas = {c.id.split("/")[0] for c in CASES}
    assert {"flags", "models", "artifacts", "targets", "outputs"} <= areas, areas
    assert len(CASES) >= 250
