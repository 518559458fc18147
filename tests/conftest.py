"""Shared fixtures: tiny ONNX-text models written to tmp files and loaded as Programs, small
test boards (``board_toml``), and the cache every test runs against: a temporary directory of the
session (``HETCC_CACHE_DIR``, shared by the xdist workers so zoo exports are made once), with a
check after each test that the user's own cache was not touched."""
from __future__ import annotations

import os
from pathlib import Path

import onnx
import onnx.parser
import pytest

from hetcc.compiler.frontend import load_model
from hetcc.passes.constants import FindConstants
from hetcc.passes.layers import GroupLayers
from hetcc.passes.shapes import AnnotateTensors
from hetcc.compiler.passmanager import PassManager

from boards import board_text

#: the user's caches, whatever the tests set: the default and the one this shell names
REAL_CACHES = sorted({Path(os.path.expanduser("~")) / ".cache" / "hetcc",
                      *([Path(os.environ["HETCC_CACHE_DIR"])] if os.environ.get("HETCC_CACHE_DIR") else [])})


def snapshot(root: Path) -> list[tuple[str, int, int]] | None:
    """(path, size, mtime) of everything under ``root``; None if it does not exist."""
    if not root.exists():
        return None
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            st = os.lstat(os.path.join(dirpath, name))
            out.append((os.path.relpath(os.path.join(dirpath, name), root), st.st_size, st.st_mtime_ns))
    return sorted(out)


REAL_BEFORE = {root: snapshot(root) for root in REAL_CACHES}


def session_cache_root(tmp_path_factory) -> Path:
    """The session's cache: beside the xdist workers' temporary directories (one for the run)."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "hetcc-cache"


@pytest.fixture(scope="session", autouse=True)
def hetcc_cache(tmp_path_factory) -> Path:
    """HETCC_CACHE_DIR for every test (and every hetcc it starts): a temporary directory."""
    cache = session_cache_root(tmp_path_factory)
    cache.mkdir(exist_ok=True)
    saved = os.environ.get("HETCC_CACHE_DIR")
    os.environ["HETCC_CACHE_DIR"] = str(cache)
    yield cache
    if saved is None:
        os.environ.pop("HETCC_CACHE_DIR", None)
    else:
        os.environ["HETCC_CACHE_DIR"] = saved


@pytest.fixture(autouse=True)
def real_cache_untouched():
    """After each test, the user's caches are as they were when the session began."""
    yield
    for root, before in REAL_BEFORE.items():
        assert snapshot(root) == before, f"a test wrote into the user's cache {root}"


def _write_text_model(text: str, path: Path) -> Path:
    model = onnx.parser.parse_model(text)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


@pytest.fixture
def analyse(tmp_path):
    """analyse(text, k=1, shapes=None) -> Program after shapes, constants and layers."""
    def _run(text: str, k: int = 1, shapes=None):
        path = _write_text_model(text, tmp_path / "m.onnx")
        program = load_model(path, shapes)
        PassManager([AnnotateTensors(), FindConstants(), GroupLayers(k)]).run(program)
        return program
    return _run


@pytest.fixture
def write_text_model():
    """write_text_model(text, path) -> path: parse ONNX text, check it, save it."""
    return _write_text_model


@pytest.fixture
def board_toml():
    """board_toml(**fields) -> the text of a small test board (see tests/boards.py)."""
    return board_text
