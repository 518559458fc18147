"""What the sweep tests check of a table's rows, whichever way the sweep ran (Ray or in-process)."""
from __future__ import annotations

from pathlib import Path

import pytest

import hetcc


def assert_rows_agree_with_compile(rows: list[dict], models: Path, every: int) -> None:
    """Every ``every``-th ok row has the latency and energy ``hetcc.compile`` plans for its cell
    (the same analysis, planner, objective and deadline)."""
    for r in [r for r in rows if r["status"] == "ok"][::every]:
        res = hetcc.compile(str(models / r["model"]), r["target"], r["objective"],
                            deadline_ms=None if r["deadline"] == "none" else r["deadline"], planner=r["planner"],
                            allow_infeasible=True)
        assert res.plan.latency_ms == pytest.approx(float(r["latency_ms"]), rel=1e-5), r["cell"]
        assert res.plan.energy_mj == pytest.approx(float(r["energy_mj"]), rel=1e-5), r["cell"]
