"""Bounded readers of the files a user names: every one is checked to be a regular file of a
bounded size before a byte is read (a FIFO, a device or a directory is one line, never a hang
or an out-of-memory kill), then read with a limit (sweep and tune specs, ``@option`` files,
observations, board files; ``check_regular`` for files a library reads by path, such as an
ONNX model and its external data).

Standard library only, like the rest of ``hetcc.core``."""
from __future__ import annotations

import os
import stat

from hetcc.core.errors import UsageError

#: what open() needs so that a FIFO without a writer, or a device, never blocks it
_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _size_text(n: int) -> str:
    return f"{n >> 30} GiB" if n >= 1 << 30 else f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def _open_regular(path: str | os.PathLike, what: str, error: type[Exception], fix: str,
                  noun: str = "it") -> tuple[int, os.stat_result]:
    """(an fd, its stat) of ``path`` opened without blocking, once it is known to be a regular file."""
    try:
        fd = os.open(path, _FLAGS)
    except IsADirectoryError:
        raise error(f"{what}: is a directory; {fix}") from None
    except OSError as e:
        raise error(f"{what}: cannot read {noun} ({e.strerror or e})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise error(f"{what}: {_kind(st.st_mode)}, not a regular file; {fix}")
    return fd, st


def check_regular(path: str | os.PathLike, what: str, max_bytes: int | None = None, *,
                  error: type[Exception] = UsageError, fix: str = "give a regular file") -> os.stat_result:
    """The ``stat`` of ``path`` once it is known to be a regular file of at most ``max_bytes``
    (opened without blocking, checked with ``fstat``); ``error`` with one line naming ``what``
    otherwise (missing, unreadable, a FIFO/device/directory, too large)."""
    fd, st = _open_regular(path, what, error, fix)
    os.close(fd)
    if max_bytes is not None and st.st_size > max_bytes:
        raise error(f"{what}: larger than {_size_text(max_bytes)} ({st.st_size} bytes); is this the right file?")
    return st


def read_regular(path: str | os.PathLike, what: str, max_bytes: int, *, error: type[Exception] = UsageError,
                 fix: str = "give a regular file", too_large: str | None = None, noun: str = "it") -> bytes:
    """At most ``max_bytes`` of the regular file ``path``, checked before reading as
    ``check_regular`` does (on the same open file, so nothing can be swapped in between);
    ``too_large``: the sentence for a file over the limit (default: the limit and the question);
    ``noun``: what a file that cannot be opened is called ("cannot read the observations file")."""
    fd, st = _open_regular(path, what, error, fix, noun)
    with os.fdopen(fd, "rb") as f:
        if st.st_size > max_bytes:
            raise error(too_large or f"{what}: larger than {_size_text(max_bytes)} ({st.st_size} bytes); "
                        "is this the right file?")
        try:
            data = f.read(max_bytes + 1)    # never more, whatever the file does meanwhile
        except OSError as e:
            raise error(f"{what}: cannot read it ({e.strerror or e})") from None
    if len(data) > max_bytes:
        raise error(too_large or f"{what}: larger than {_size_text(max_bytes)}; is this the right file?")
    return data


def read_toml(path: str | os.PathLike, what: str, max_bytes: int = 1 << 20) -> dict:
    """A small TOML file the user wrote (a sweep or tune spec, an options file), at most
    ``max_bytes`` read; one-line UsageError naming ``what`` when unreadable, not a regular file,
    too large or not TOML."""
    import tomllib

    data = read_regular(path, what, max_bytes, fix="give a TOML file",
                        too_large=f"{what}: larger than {_size_text(max_bytes)}; it should be a few lines")
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise UsageError(f"{what}: not valid TOML ({first})") from None
