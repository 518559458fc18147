"""Tests that need an optional extra skip, naming it, when it is not installed.

``needs(extra, module, ...)`` skips the test, or the whole file when called at module level, with
the reason ``needs the 'X' extra: pip install 'hetcc[X]'`` unless each module is installed, and
returns the last one (imported on first use, so collecting the file stays cheap). The file or
test also carries the extra's marker (``pytestmark = pytest.mark.X``, the markers registered in
pyproject.toml), so ``pytest -m "not X"`` leaves it out.
"""
from __future__ import annotations

import importlib
import importlib.util
import types

import pytest

#: the extras of pyproject.toml that tests need, and the modules each brings
EXTRAS = {
    "zoo": ("torch", "torchvision", "timm"),
    "learn": ("torch", "torchrl", "tensordict", "gymnasium"),
    "plot": ("matplotlib",),
    "sweep": ("ray",),
    "corpus": ("torch", "timm", "transformers", "ultralytics", "onnxscript"),
    "calibrate": ("scipy", "tomlkit"),
    "docs": ("mkdocs", "material", "mkdocstrings"),
    "sim": ("simpy",),
    "multi": ("pymoo",),
    "serve": ("fastapi", "uvicorn"),
}


def reason(extra: str) -> str:
    """The skip reason naming ``extra`` and how to install it."""
    return f"needs the '{extra}' extra: pip install 'hetcc[{extra}]'"


class LazyModule(types.ModuleType):
    """A module imported on first attribute access: collecting a test file costs nothing (torch,
    timm, torchrl and ultralytics take seconds to import; ``pytest -m "not slow"`` skips the
    tests that use them but still collects their files)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)

    def __getattr__(self, attr: str):  # noqa: ANN204
        if attr.startswith("_"):    # what pytest's collection looks up (__test__, _mock_name, ...)
            raise AttributeError(attr)
        return getattr(importlib.import_module(self.__name__), attr)


def needs(extra: str, *modules: str) -> types.ModuleType:
    """Skip (the test, or the whole file at module level) with the extra's name unless
    ``modules`` (default: every module of ``extra``) are installed; return the last, imported
    when first used. Nothing is imported here: whether a module is installed is a file lookup."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}: one of {sorted(EXTRAS)}")
    names = modules or EXTRAS[extra]
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):      # a dotted name whose parent is missing
            found = False
        if not found:
            pytest.skip(f"{reason(extra)} ({name} is missing)", allow_module_level=True)
    return LazyModule(names[-1])
