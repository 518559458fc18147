"""Hostile command-line values: numbers out of range or not finite, counts <= 0."""
from __future__ import annotations

from harness import Case, text_model
from text_models import CHAIN

M = text_model(CHAIN)

CASES = [
    Case("flags/deadline-not-a-number", ["compile", "m.onnx", "--deadline", "soon", "-o", "out"], 2,
         ["--deadline", "soon"], setup=M),
    Case("flags/compile-ok", ["compile", "m.onnx", "-o", "out", "-q"], 0, setup=M, outputs=["out"]),
]
