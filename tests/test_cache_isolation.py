"""The suite never touches the user's hetcc cache: every test, and every hetcc a test starts, uses
the session's temporary one (tests/conftest.py; the run also fails if the user's cache changed)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hetcc.core.paths import cache_dir


def test_the_cache_is_the_sessions_temporary_directory(hetcc_cache, tmp_path_factory):
    root = tmp_path_factory.getbasetemp()
    assert cache_dir() == hetcc_cache
    assert Path(os.path.commonpath([cache_dir(), root.parent])) == root.parent  # under pytest's temp
    assert Path(os.path.expanduser("~")) / ".cache" / "hetcc" not in (cache_dir(), *cache_dir().parents)


def test_a_hetcc_the_tests_start_uses_it_too(hetcc_cache):
    code = "from hetcc.core.paths import cache_dir; print(cache_dir())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert Path(out.strip()) == hetcc_cache
