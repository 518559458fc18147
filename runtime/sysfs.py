"""The board's sysfs, read and written under a root: the one place hetcc writes DVFS and CPU
hotplug settings, and puts them back.

Paths are named as the kernel names them (``/sys/devices/system/cpu/cpu3/online``); ``Sysfs(root)``
reads and writes them under ``root``, the directory that stands for ``/sys`` (``/sys`` itself on
a board, a fake tree in tests; ``Sysfs.under(prefix)`` for a tree whose ``/`` is ``prefix``, as
``--sysfs-root`` gives it). A path that is not under ``/sys``, or that resolves (``..``, a
symbolic link) outside ``root``, is refused, never read or written. The file is opened without
following a link at its last component and checked once open (a link swapped in after the check
is caught before a byte moves); a file that is not regular (a FIFO, a device) is refused without
waiting on it, and one with other names (a hard link, whose other name may be outside) is never
written.

A write is ``echo value > file`` without ``O_CREAT``: a missing file is an error, not a new
file. ``set`` writes a value unless the file holds it already and remembers the file's value
from before its first change; ``set_pair`` pins a min/max pair (cpufreq ``scaling_min_freq`` /
``scaling_max_freq``, devfreq ``min_freq`` / ``max_freq``) in the order that keeps min <= max
(older kernels refuse min > max). ``restore()`` writes back everything remembered, newest
first: CPUs taken offline come back before those brought online go, and a pair is put back in
the order its values now allow.

Every OS refusal raises ``Refused``, an OSError with the refused call's errno, strerror and
filename, plus ``reason`` and ``fix`` in words (``why``); ``kind`` classifies an OSError
(permission, read-only, missing, directory, refused value, busy) for callers that word it their
own way. Standard library only (the runtime ships to a board alone).
"""
from __future__ import annotations

import errno
import os
import stat
from typing import Any, NamedTuple

__all__ = ["ROOT_FIX", "Change", "Refused", "Sysfs", "kind", "min_max_order", "read_text", "why"]

ROOT_FIX = "run as root (sudo)"
#: the most of a file read: a sysfs attribute is at most one page (4 to 64 KiB)
READ_LIMIT = 65536
_PATHS_FIX = "check the target's control paths"


def kind(exc: OSError) -> str:
    """What an OS refusal was: ``permission``, ``read-only``, ``missing``, ``directory``,
    ``refused`` (EINVAL: a value the kernel does not accept), ``busy`` or ``other``."""
    code = exc.errno
    if isinstance(exc, PermissionError) or code in (errno.EACCES, errno.EPERM):
        return "permission"
    if code == errno.EROFS:
        return "read-only"
    if isinstance(exc, FileNotFoundError) or code == errno.ENOENT:
        return "missing"
    if isinstance(exc, IsADirectoryError) or code == errno.EISDIR:
        return "directory"
    if code == errno.EINVAL:
        return "refused"
    if code == errno.EBUSY:
        return "busy"
    return "other"


def why(exc: OSError, path: str) -> tuple[str, str]:
    """(reason, fix) of an OS refusal on ``path`` (as the kernel names it)."""
    k = kind(exc)
    if k == "permission":
        return "permission denied", ROOT_FIX
    if k == "read-only":
        return "read-only file system", "sysfs is mounted read-only (a container?): run on the host or mount it rw"
    if k == "missing":
        if path.startswith("/sys/kernel/debug/"):
            return "no such file", "mount debugfs (mount -t debugfs none /sys/kernel/debug) as root"
        return "no such file", "this kernel does not expose it: check the target's control paths against the board"
    if k == "directory":
        return "a directory, not a file", _PATHS_FIX
    if k == "refused":
        return "value not accepted by the kernel (EINVAL)", "check the levels the kernel lists against the target's"
    if k == "busy":
        return "the kernel refused: busy (EBUSY)", ""
    return f"{exc.strerror or exc} ({errno.errorcode.get(exc.errno, exc.errno)})", ""


class Refused(OSError):
    """A read or write that did not happen: ``reason`` and ``fix`` in words; errno, strerror and
    filename those of the OSError behind it (none for a path outside the tree or a file that
    holds no number)."""

    def __init__(self, reason: str, fix: str = "", error: OSError | None = None) -> None:
        if error is not None:
            super().__init__(error.errno, error.strerror, error.filename)
        else:
            super().__init__(reason)
        self.reason, self.fix = reason, fix


class Change(NamedTuple):
    """What ``restore()`` puts back: ``old[i]`` into ``paths[i]`` (one file, or a min/max pair)."""

    what: str
    paths: tuple[str, ...]
    old: tuple[str | int, ...]


def read_text(path: str | os.PathLike) -> str:
    """A file's text, stripped (at most ``READ_LIMIT`` bytes); OSError as the OS raises it. A FIFO
    or device there is never waited on: it is refused as not a regular file."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | _NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        _regular(f.fileno(), os.fspath(path))
        return f.read(READ_LIMIT).decode("ascii", "replace").strip()


_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _regular(fd: int, path: str) -> os.stat_result:
    """``fstat(fd)``, or OSError(EINVAL) unless it is a regular file (sysfs attributes are)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, "not a regular file (a FIFO, device or socket)", path)
    return st


def min_max_order(lo: str, hi: str, new_lo: int, cur_hi: int) -> tuple[str, str]:
    """The order to write a min/max pair in so that min <= max after each write: max first when
    the new min is above the current max, else min first."""
    return (hi, lo) if new_lo > cur_hi else (lo, hi)


class Sysfs:
    """``/sys`` under ``root``; remembers each file's value from before its first change, so
    ``restore()`` puts it back however often it was set."""

    def __init__(self, root: str | os.PathLike = "/sys") -> None:
        self.root = os.fspath(root)
        self._undo: list[Change] = []
        self._saved: set[str] = set()

    @classmethod
    def under(cls, prefix: str | os.PathLike) -> Sysfs:
        """The ``/sys`` of a tree whose ``/`` is ``prefix`` (``/`` or empty: the real one)."""
        prefix = os.fspath(prefix)
        return cls("/sys" if prefix in ("", "/") else os.path.join(prefix, "sys"))

    # ---- where a path is
    def file(self, path: str) -> str:
        """The file ``path`` (``/sys/...``) is under ``root``; Refused if it is elsewhere."""
        if path != "/sys" and not path.startswith("/sys/"):
            raise Refused("not a path under /sys", _PATHS_FIX)
        full = os.path.join(self.root, path[len("/sys/"):]) if path != "/sys" else self.root
        real, top = os.path.realpath(full), os.path.realpath(self.root)   # now: a relative root follows the cwd
        if real != top and not real.startswith(top.rstrip(os.sep) + os.sep):
            raise Refused(f"outside {self.root} ('..' or a symbolic link)", _PATHS_FIX)
        return full

    def exists(self, path: str) -> bool:
        """``path`` is there (False for one outside the tree: it is never looked at)."""
        try:
            return os.path.exists(self.file(path))
        except Refused:
            return False

    def isdir(self, path: str) -> bool:
        """``path`` is a directory (False for one outside the tree)."""
        try:
            return os.path.isdir(self.file(path))
        except Refused:
            return False

    def listdir(self, path: str) -> list[str]:
        """The names in a directory (none if it is absent or unreadable)."""
        try:
            return os.listdir(self.file(path))
        except OSError:
            return []

    # ---- reading and writing
    def _open(self, path: str, write: bool) -> Any:
        """``path`` (``/sys/...``) opened unbuffered for reading or writing (never created or
        truncated), without following a symbolic link at its last component, then checked to be,
        once open, the regular file it resolved to under ``root`` (a link swapped in between the
        check and the open is caught here, before any byte moves) and, to be written, to have no
        other name (a hard link's other name may be outside ``root``)."""
        full = self.file(path)
        real = os.path.realpath(full)
        flags = (os.O_WRONLY if write else os.O_RDONLY) | os.O_CLOEXEC | _NONBLOCK | _NOFOLLOW
        try:
            f = open(real, "wb" if write else "rb", buffering=0, opener=lambda p, _: os.open(p, flags))
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise Refused(f"outside {self.root} (a symbolic link)", _PATHS_FIX) from None
            raise Refused(*why(e, path), e) from None
        try:
            st = _regular(f.fileno(), path)
            if not self._inside(f.fileno(), st, real):
                raise Refused(f"outside {self.root} (it moved while it was opened)", _PATHS_FIX)
            if write and st.st_nlink > 1:
                raise Refused(f"a hard link (it has {st.st_nlink} names, and another may be outside {self.root})",
                              _PATHS_FIX)
        except OSError as e:
            f.close()
            if isinstance(e, Refused):
                raise
            raise Refused(*why(e, path), e) from None
        return f

    def _inside(self, fd: int, st: os.stat_result, real: str) -> bool:
        """Whether the open ``fd`` is the file at ``real`` under ``root`` (by /proc's name for it
        where there is one, else by device and inode)."""
        top = os.path.realpath(self.root)
        try:
            where = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            try:
                now = os.stat(real, follow_symlinks=False)
            except OSError:
                return False
            return (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino)
        return where == top or where.startswith(top.rstrip(os.sep) + os.sep)

    def read(self, path: str) -> str:
        f = self._open(path, write=False)
        try:
            with f:
                return f.read(READ_LIMIT).decode("ascii", "replace").strip()
        except OSError as e:
            raise Refused(*why(e, path), e) from None

    def read_int(self, path: str) -> int:
        text = self.read(path)
        try:
            return int(text.split()[0])
        except (ValueError, IndexError):
            raise Refused(f"cannot read a number there (got {text[:20]!r})") from None

    def write(self, path: str, value: str) -> None:
        """As the shell's ``echo value > file``, but a missing file is an error, not a new file, and
        nothing is written through a symbolic link or hard link out of ``root`` (``_open``)."""
        f = self._open(path, write=True)
        try:
            with f:
                try:
                    os.ftruncate(f.fileno(), 0)      # a fake tree's file; sysfs attributes need none
                except OSError:
                    pass
                f.write(f"{value}\n".encode("ascii"))
        except OSError as e:
            raise Refused(*why(e, path), e) from None

    def write_pair(self, lo: str, hi: str, new: tuple[int, int], cur: tuple[int, int]) -> None:
        """A min/max pair from ``cur`` to ``new`` (``min_max_order``); if the second write is
        refused the first is undone, so nothing is half set."""
        first, second = min_max_order(lo, hi, new[0], cur[1])
        value = {lo: (new[0], cur[0]), hi: (new[1], cur[1])}
        self.write(first, str(value[first][0]))
        try:
            self.write(second, str(value[second][0]))
        except Refused:
            try:
                self.write(first, str(value[first][1]))
            except Refused:
                pass
            raise

    # ---- changes remembered
    def set(self, path: str, value: str, what: str = "") -> str | None:
        """Write ``value`` unless the file holds it already: the value before (None: unchanged)."""
        old = self.read(path)
        if old == value:
            return None
        self.write(path, value)
        self.remember(Change(what, (path,), (old,)))
        return old

    def set_pair(self, lo: str, hi: str, value: int, cur: tuple[int, int], what: str = "") -> None:
        """Pin min = max = ``value``; ``cur``: their values now, as the caller read them."""
        self.write_pair(lo, hi, (value, value), cur)
        self.remember(Change(what, (lo, hi), cur))

    def remember(self, change: Change) -> None:
        """Keep ``change`` for ``restore`` unless its file already has an original kept."""
        if change.paths[0] not in self._saved:
            self._saved.update(change.paths)
            self._undo.append(change)

    @property
    def changed(self) -> bool:
        """Something is set that ``restore()`` would put back."""
        return bool(self._undo)

    def restore(self) -> list[tuple[Change, Refused | None]]:
        """Write back every value remembered, newest first; each change with what refused it (None:
        put back). Everything is forgotten afterwards, put back or not."""
        done: list[tuple[Change, Refused | None]] = []
        while self._undo:
            change = self._undo.pop()
            try:
                if len(change.paths) == 1:
                    self.write(change.paths[0], str(change.old[0]))
                else:
                    lo, hi = change.paths
                    self.write_pair(lo, hi, (int(change.old[0]), int(change.old[1])),
                                    (self.read_int(lo), self.read_int(hi)))
                done.append((change, None))
            except Refused as r:
                done.append((change, r))
        self._saved.clear()
        return done
