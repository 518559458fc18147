"""Zoo models for the benchmark tests, taken from the session's cache (``HETCC_CACHE_DIR``, shared
by the xdist workers): each model is exported once for the whole run, whichever test needs it
first, and a test's models folder gets a hard link to it (a copy across file systems), under the
name the benchmarks' ``--models-dir`` expects. The file's path stays the folder's own (not a
symlink into the cache), so the benchmark sees the model exactly as a file it exported itself."""
from __future__ import annotations

import os
import shutil
from pathlib import Path


def linked_zoo_model(name: str, dest: Path, seed: int = 0) -> Path:
    """Zoo model ``name`` (weights from ``seed``) at ``dest``, from the session cache; returns ``dest``."""
    from hetcc.compiler.api import resolve_model

    cached = resolve_model(name, None, seed)              # exported into the session cache once
    try:
        os.link(cached, dest)
    except OSError:
        shutil.copyfile(cached, dest)
    return dest


def linked_zoo_models(root: Path, names: list[str] | tuple[str, ...], seed: int = 0) -> Path:
    """``root/NAME-seedN.onnx`` for each zoo model ``names`` (a benchmark's ``--models-dir``); returns ``root``."""
    for name in names:
        linked_zoo_model(name, root / f"{name}-seed{seed}.onnx", seed)
    return root
