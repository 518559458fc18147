"""Numeric limits shared by the command line, the Python API and sweeps (docs/limits.md).

Light on purpose (no numpy, no onnx): the CLI builds its argument parser from these."""
from __future__ import annotations

from typing import Any

from hetcc.core.errors import UsageError

#: the largest seed (numpy's generators and most RNGs take 32 bits)
SEED_MAX = 2**32 - 1


def check_seed(seed: Any, what: str = "--seed") -> int:
    """``seed`` as an int in [0, SEED_MAX]; UsageError naming ``what`` otherwise."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= SEED_MAX:
        raise UsageError(f"{what} {seed!r}: give an integer from 0 to {SEED_MAX} (2**32-1)")
    return seed
