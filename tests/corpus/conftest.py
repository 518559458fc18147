"""The corpus models, exported lazily once per test session (per xdist worker) into a temporary
directory, with the libraries kept offline and their settings out of $HOME."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from models import BY_NAME, OFFLINE_ENV, build


@pytest.fixture(scope="session")
def corpus_model(tmp_path_factory):
    """corpus_model(name) -> path of the exported model (built on first use)."""
    root = tmp_path_factory.mktemp("corpus")
    env = {**OFFLINE_ENV, "YOLO_CONFIG_DIR": str(root / "ultralytics-settings")}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    built: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in built:
            built[name] = build(BY_NAME[name], root / name)
        return built[name]

    yield get
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def profile_cache(tmp_path_factory) -> Path:
    """A profile cache of the session's own: host compiles measure these models, not read old numbers."""
    return tmp_path_factory.mktemp("hetcc-cache")
