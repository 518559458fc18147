"""Shared fixtures: tiny ONNX-text models written to tmp files and loaded as Programs."""
from __future__ import annotations

from pathlib import Path

import onnx
import onnx.parser
import pytest

from hetcc.compiler.frontend import load_model
from hetcc.passes.constants import FindConstants
from hetcc.passes.layers import GroupLayers
from hetcc.passes.shapes import AnnotateTensors
from hetcc.compiler.passmanager import PassManager


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
