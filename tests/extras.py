"""Tests that need an optional extra skip, naming it, when it is not installed.

``needs(extra, module, ...)`` imports each module (returning the last) or skips the test, or the
whole module when called at module level, with the reason ``needs the 'X' extra: pip install
'hetcc[X]'``; the module also carries the extra's marker (``pytestmark = pytest.mark.X``, the
markers registered in pyproject.toml) so ``pytest -m "not X"`` leaves it out.
"""
from __future__ import annotations

from types import ModuleType

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
}


def reason(extra: str) -> str:
    """The skip reason naming ``extra`` and how to install it."""
    return f"needs the '{extra}' extra: pip install 'hetcc[{extra}]'"


def needs(extra: str, *modules: str) -> ModuleType:
    """Import ``modules`` (default: every module of ``extra``) and return the last; skip with the
    extra's name if one is missing."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}: one of {sorted(EXTRAS)}")
    module = None
    for name in modules or EXTRAS[extra]:
        module = pytest.importorskip(name, reason=reason(extra))
    return module
