"""benchmarks/suite_runs.py: pytest's summary line read back, the busy processes start and stop, and
--quick runs a short suite and writes the JSON it promises (whether the runs passed is what it
measured)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import start_busy, stop_busy  # noqa: E402
from suite_runs import counts, pytest_args  # noqa: E402


def test_pytests_summary_line_is_read_back():
    tail = "....F.\nFAILED tests/x.py::t - boom\n12 passed, 1 failed, 2 errors, 3 skipped in 4.56s\n"
    assert counts(tail) == {"passed": 12, "failed": 1, "errors": 2, "skipped": 3}
    assert counts("=== 1 error in 0.1s ===") == {"errors": 1}
    assert counts("no summary here") == {}


def test_a_marker_selects_the_tests_as_pytest_m_does():
    assert pytest_args([], 2, "not slow") == ["-q", "-n", "2", "-p", "no:cacheprovider", "-m", "not slow"]
    assert pytest_args(["tests/x.py"], 1, None) == ["-q", "-n", "1", "-p", "no:cacheprovider", "tests/x.py"]


def test_busy_processes_run_until_stopped():
    procs = start_busy(2, "import time\nwhile True: time.sleep(0.01)")   # the spinning loop's life cycle, not its CPU
    try:
        assert len(procs) == 2 and all(p.poll() is None for p in procs)
    finally:
        stop_busy(procs)
    assert all(p.returncode is not None for p in procs)


@pytest.mark.slow
def test_suite_runs_quick(tmp_path):
    out = tmp_path / "suite_runs-quick.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "suite_runs.py"), "--quick", "--out", str(out)],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HETCC_CACHE_DIR": str(tmp_path / "cache")})
    doc = json.loads(out.read_text())
    assert not out.with_name(out.name + ".partial").exists()      # moved into place at the end
    assert doc["script"] == "suite_runs" and doc["runs"] == doc["runs_asked"] == 1 and doc["busy_processes"] == 0
    assert doc["paths"] == ["tests/profile/test_busy_clock.py"] and " -n 0 " in doc["command"]
    (row,) = doc["results"]
    assert row["seconds"] > 0 and row["passed"] + row.get("failed", 0) + row.get("errors", 0) > 0
    assert doc["all_passed"] == (row["exit_code"] == 0 and not row.get("failed") and not row.get("errors"))
    assert proc.returncode == (0 if doc["all_passed"] else 1)
