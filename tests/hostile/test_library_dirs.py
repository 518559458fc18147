"""Libraries write nothing outside the output and hetcc's cache (issue 33, class 6): matplotlib's
font cache and config, torch's caches, and the token and session directory of a Ray that hetcc
starts itself are pointed under hetcc's cache before the library loads."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from hetcc.core.paths import confine_libraries, library_dirs
from text_models import CHAIN


def test_the_library_directories_are_under_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HETCC_CACHE_DIR", "/tmp/hc")       # short enough for Ray's sockets (nothing is made)
    dirs = library_dirs()
    assert all(Path(v).is_relative_to("/tmp/hc") for v in dirs.values())
    assert {"MPLCONFIGDIR", "TORCH_HOME", "ray_token", "ray_temp"} <= set(dirs)
    for key in ("MPLCONFIGDIR", "TORCH_HOME"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("TORCH_HOME", "/mine")                # a user's own setting wins
    confine_libraries()
    assert os.environ["MPLCONFIGDIR"] == dirs["MPLCONFIGDIR"] and os.environ["TORCH_HOME"] == "/mine"


def test_a_cache_path_too_long_for_ray_s_sockets_leaves_ray_its_default(tmp_path, monkeypatch):
    monkeypatch.setenv("HETCC_CACHE_DIR", str(tmp_path / ("x" * 60)))
    assert "ray_temp" not in library_dirs()


def test_ray_s_local_token_is_made_once_owner_only(tmp_path):
    from hetcc.experiments.sweep.cluster import local_token

    path = tmp_path / "ray" / "auth_token"
    assert local_token(path) == str(path)
    first = path.read_text()
    assert len(first) == 64 and stat.S_IMODE(path.stat().st_mode) == 0o600
    local_token(path)
    assert path.read_text() == first


@pytest.mark.slow
def test_a_plot_writes_matplotlib_s_files_under_the_cache_not_home(tmp_path, write_text_model):
    from hetcc.cli import main

    home, cache = tmp_path / "home", tmp_path / "cache"
    home.mkdir()
    art = tmp_path / "art"
    assert main(["compile", str(write_text_model(CHAIN, tmp_path / "m.onnx")), "-o", str(art), "-q"]) == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MPLCONFIGDIR", "XDG_"))}
    env.update(HOME=str(home), HETCC_CACHE_DIR=str(cache))
    p = subprocess.run([sys.executable, "-m", "hetcc.cli", "inspect", str(art), "--plot",
                        str(tmp_path / "s.png")], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert list(home.iterdir()) == [], sorted(str(q.relative_to(home)) for q in home.rglob("*"))
    assert (cache / "matplotlib").is_dir()
