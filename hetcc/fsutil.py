"""The one atomic writer: every artifact, cache entry or exported model goes through here.

``atomic_directory(final)`` yields a fresh temporary directory beside ``final`` and renames it
into place only when the ``with`` block finishes; ``atomic_write_bytes`` / ``atomic_write_text``
do the same for one file. A failed or interrupted write leaves the old content (or nothing)
and no temporary files behind.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

from .errors import UsageError

__all__ = ["atomic_directory", "atomic_write_bytes", "atomic_write_text", "MARKER"]

#: the file that marks a directory as a hetcc output (it may be replaced by a new compile)
MARKER = "manifest.json"


def _check_replaceable(final: Path, marker: str | None) -> None:
    if not final.exists():
        return
    if not final.is_dir():
        raise UsageError(f"refusing to overwrite {final}: it exists and is not a directory; "
                         "choose another -o or remove it")
    if marker is not None and any(final.iterdir()) and not (final / marker).exists():
        raise UsageError(f"refusing to overwrite {final}: it exists and is not a hetcc output directory; "
                         "choose another -o or remove it")


@contextlib.contextmanager
def atomic_directory(final: str | os.PathLike, *, marker: str | None = MARKER) -> Iterator[Path]:
    """Yield a fresh temporary directory beside ``final``; on success it replaces ``final``.

    ``final`` may be absent, empty, or a directory holding ``marker`` (a previous output);
    anything else is refused with a UsageError before anything is written (``marker=None``
    replaces any directory). On an exception (KeyboardInterrupt included) the temporary
    directory is removed and ``final`` is left as it was.
    """
    final = Path(final)
    _check_replaceable(final, marker)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
    try:
        yield tmp
        backup = None
        if final.exists():
            backup = final.parent / f".{final.name}.old-{os.getpid()}"
            if backup.exists():
                shutil.rmtree(backup, ignore_errors=True)
            os.replace(final, backup)
        try:
            os.replace(tmp, final)
        except BaseException:
            if backup is not None:  # put the old output back
                os.replace(backup, final)
            raise
        if backup is not None:
            shutil.rmtree(backup, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to a temporary file beside ``path`` and rename it over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(name, 0o666 & ~_umask())  # mkstemp creates 0600; give the usual mode
        os.replace(name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """``atomic_write_bytes`` for text."""
    return atomic_write_bytes(path, text.encode(encoding))
