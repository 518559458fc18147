"""Run every catalogued hostile case (cases_*.py): right exit code, one line naming the culprit,
no traceback, nothing lost, nothing written or read outside (see harness.py)."""
from __future__ import annotations

import pytest

from catalogue import all_cases
from harness import describe, run_case

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_case(case, tmp_path):
    outcome, found = run_case(case, tmp_path)
    assert not found, describe(case, outcome, found)



def test_the_catalogue_covers_every_area():
    areas = {c.id.split("/")[0] for c in CASES}
    assert {"flags", "models", "artifacts", "targets", "outputs"} <= areas, areas
    assert len(CASES) >= 250
