"""Shared fixtures: tiny ONNX-text models written to tmp files and loaded as Programs, small
test boards (``board_toml``), and the cache every test runs against: a temporary directory of the
session (``HETCC_CACHE_DIR``, shared by the xdist workers so zoo exports are made once), checked
at each test's start, and a run that fails if the user's own cache changed while it ran."""
from __future__ import annotations

import contextlib
import os
import signal
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

# A suite started from a background job (``cmd &`` in a script) or under nohup inherits SIGINT
# ignored, and so would every hetcc it starts: hetcc rightly keeps an inherited SIG_IGN, and the
# signal tests check what Ctrl-C does to a program run in the foreground. So the suite runs as a
# foreground program would (each xdist worker imports this file; the processes it starts then
# inherit the default disposition).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

#: the order and distribution of the run (longest tests first; see tests/ordering.py)
pytest_plugins = ["ordering"]

#: the user's caches, whatever the tests set: the default and the one this shell names
REAL_CACHES = sorted({Path(os.path.expanduser("~")) / ".cache" / "hetcc",
                      *([Path(os.environ["HETCC_CACHE_DIR"])] if os.environ.get("HETCC_CACHE_DIR") else [])})


def snapshot(root: Path) -> dict[str, tuple[int, int]] | None:
    """path -> (size, mtime) of everything under ``root``; None if it does not exist."""
    if not root.exists():
        return None
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            with contextlib.suppress(OSError):
                st = os.lstat(path)
                out[os.path.relpath(path, root)] = (st.st_size, st.st_mtime_ns)
    return out


def changes(before: dict | None, after: dict | None) -> list[str]:
    """What differs between two snapshots, as ``+path`` / ``-path`` / ``~path``."""
    if before == after:
        return []
    before, after = before or {}, after or {}
    return sorted([f"+{p}" for p in after.keys() - before.keys()] + [f"-{p}" for p in before.keys() - after.keys()]
                  + [f"~{p}" for p in before.keys() & after.keys() if before[p] != after[p]]) or ["(created or removed)"]


REAL_KEY = pytest.StashKey[dict]()


def pytest_sessionstart(session) -> None:
    """The user's caches as the run begins (once: in the controller, not in each xdist worker)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        session.config.stash[REAL_KEY] = {root: snapshot(root) for root in REAL_CACHES}


def pytest_sessionfinish(session, exitstatus) -> None:
    """The run fails if the user's caches changed while it ran (every hetcc the tests start uses
    the session's cache, so a change is a test that escaped it, or another program on the machine
    using hetcc at the same time, which the message says)."""
    before = session.config.stash.get(REAL_KEY, None)
    if before is None:
        return
    for root, was in before.items():
        diff = changes(was, snapshot(root))
        if diff:
            session.config.pluginmanager.get_plugin("terminalreporter").write_line(
                f"\nERROR: the user's cache {root} changed while the tests ran (a test escaped the session's "
                f"HETCC_CACHE_DIR, or another hetcc ran meanwhile): {', '.join(diff[:10])}"
                + (f" and {len(diff) - 10} more" if len(diff) > 10 else ""), red=True)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


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
    # progress lines on a non-terminal start after a task has run 5 s: under load a planner of the
    # suite would print them and a test of a command's one-line error would see two lines
    os.environ["HETCC_PROGRESS_AFTER"] = "never"
    yield cache
    if saved is None:
        os.environ.pop("HETCC_CACHE_DIR", None)
    else:
        os.environ["HETCC_CACHE_DIR"] = saved


@pytest.fixture(autouse=True)
def cache_is_temporary(hetcc_cache):
    """Each test starts with hetcc's cache in the session's temporary directory."""
    from hetcc.core.paths import cache_dir

    assert cache_dir() == hetcc_cache, f"HETCC_CACHE_DIR is {os.environ.get('HETCC_CACHE_DIR')!r}"


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
