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


#: the most memory a planner's own structures (networks, optimiser state, replay memory) may
#: take: a quarter of this machine's RAM (2 GiB where it cannot be read)
def memory_limit_bytes() -> int:
    import os

    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")) // 4
    except (ValueError, OSError, AttributeError):
        return 2 << 30


def check_bytes(estimate: float, what: str, fix: str) -> None:
    """Refuse, before anything is allocated, a structure of ``estimate`` bytes over
    ``memory_limit_bytes()``: one UsageError naming ``what`` and the options that ``fix`` it."""
    limit = memory_limit_bytes()
    if not estimate <= limit:      # also NaN
        raise UsageError(f"{what} would take about {estimate / 2**30:.3g} GiB, more than the {limit / 2**30:.3g} GiB "
                         f"(a quarter of this machine's memory) a planner may use; {fix}")
