"""Bounded readers of small files the user wrote (sweep and tune specs, ``@option`` files).

Standard library only, like the rest of ``hetcc.core``."""
from __future__ import annotations

import os

from hetcc.core.errors import UsageError


def read_toml(path: str | os.PathLike, what: str, max_bytes: int = 1 << 20) -> dict:
    """A small TOML file the user wrote (a sweep or tune spec, an options file), at most
    ``max_bytes`` read; one-line UsageError naming ``what`` when unreadable, too large or not TOML."""
    import tomllib

    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)    # never more, whatever the file is
    except OSError as e:
        raise UsageError(f"{what}: cannot read it ({e.strerror or e})") from None
    if len(data) > max_bytes:
        raise UsageError(f"{what}: larger than {max_bytes >> 20} MiB; it should be a few lines")
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise UsageError(f"{what}: not valid TOML ({first})") from None
