"""Helpers of the profiling tests (imported by name: pytest puts this directory on sys.path)."""
from __future__ import annotations

from pathlib import Path

from hetcc.measure.profiler import BoundaryFit

#: the session-boundary fit the tests use instead of the microbenchmark
FIT = BoundaryFit(delta_ms=0.02, beta_ms_per_byte=1e-7)


def chain_text(layers: int = 4) -> str:
    """MatMul, Relu, Sigmoid, ... on a [4, 16] tensor: ``layers`` one-node layers."""
    ops = ["MatMul", "Relu", "Sigmoid", "Tanh"]
    lines, prev = [], "x"
    for i in range(layers - 1):
        op = ops[i % len(ops)]
        lines.append(f"    t{i} = MatMul({prev}, w)" if op == "MatMul" else f"    t{i} = {op}({prev})")
        prev = f"t{i}"
    lines.append(f"    y = Relu({prev})")
    w = ",".join("0.5" if i // 16 == i % 16 else "0.01" for i in range(16 * 16))
    return (f'<ir_version: 8, opset_import: ["" : 17]>\ntiny (float[4,16] x) => (float[4,16] y) '
            f'<float[16,16] w = {{{w}}}> {{\n' + "\n".join(lines) + "\n}\n")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
