"""Where hetcc keeps its caches (zoo exports, host profiles, planner checkpoints)."""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$HETCC_CACHE_DIR``, else ``~/.cache/hetcc``."""
    root = os.environ.get("HETCC_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "hetcc")
    return Path(root)
