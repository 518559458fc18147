"""The one atomic writer: every artifact, cache entry or exported model goes through here.

Over 600 lines as one module: the contract below is one mechanism (what may be replaced, the lock
and its journal, recovery after a kill, the swap) whose steps call each other's private helpers.

``atomic_directory(final)`` yields a fresh temporary directory beside ``final`` and swaps it
into place only when the ``with`` block finishes; ``atomic_write_bytes`` / ``atomic_write_text``
do the same for one file. A failed or interrupted write leaves the old content (or nothing)
and no temporary files behind.

The output-safety contract of ``atomic_directory`` (docs/output-safety.md says the same for users):

* **What is replaced.** ``final`` may be absent, an empty directory, or a hetcc artifact: a
  directory whose ``manifest.json`` parses as JSON and is an object whose ``"schema"`` is
  ``"hetcc.manifest/<N>"`` (any N, so older artifacts count). Anything else (a file, a directory
  without that manifest, a damaged manifest) is refused with a one-line ``UsageError`` (exit 2)
  before anything is written.
* **What is dropped.** Only what hetcc wrote: a file the old manifest lists
  (``variants.*.slices[].file`` and ``.data.file``, ``slices[].file`` in version 1,
  ``policy.file``) whose content still has the SHA-256 the manifest lists with it; hetcc's own
  files (``manifest.json``, ``costs.json``, ``timings.json``, ``why.json``) when they start as
  hetcc writes them (a JSON object whose first key is a ``hetcc.*`` schema); and the same, by
  their own manifests, of the sub-artifacts named by ``workload.models[].dir`` whose manifest
  still has the listed ``manifest_sha256``. A manifest that merely claims the schema owns
  nothing it did not get from hetcc.
* **Everything else is kept**, never deleted: a file the user put in the artifact (NOTES.md,
  a source model) is hard-linked (copied where links are impossible) into the new artifact at
  the same relative path before the swap. If the new artifact writes that very path, the compile
  is refused with one line naming the file, and the old artifact is left as it was. The source
  model of the compile (``model.source_path`` in the new manifest) is kept even when the old
  manifest lists it.
* **One swap, with rollback.** ``final`` is renamed to ``.NAME.old-PID`` and the temporary
  ``.NAME.tmp-XXXXXXXX`` renamed to ``final``, with SIGINT/SIGTERM/SIGHUP held back in between
  (deferred: an interrupt is handled after the swap) and rolled back on any error. The backup is
  removed only once every file in it that hetcc did not write is also in ``final``.
* **Recovery.** A SIGKILL (or power loss) can still leave ``.NAME.tmp-*`` or ``.NAME.old-*``
  behind. Each write notes the temporary and the backup it makes in its lock file (below), so
  the next ``atomic_directory`` into the same ``final`` recovers exactly those: it restores the
  newest backup when ``final`` is missing, removes the temporaries and retires other backups
  (as above), and says so in one logging warning. A file or directory that merely has such a
  name, and that no lock names, is never touched.
* **One writer.** An exclusive, non-blocking ``fcntl.flock`` on ``.NAME.lock`` beside ``final``
  is held from before recovery to after the swap; a second writer fails at once with
  "another hetcc compile is writing NAME; wait for it or choose another -o" (UsageError,
  exit 2). A lock file starts with ``hetcc.lock/1``: it is made under a temporary name and
  linked into place (never through a symbolic link), and a ``.NAME.lock`` without that first
  line (a user's file, a link, a directory) is refused in one line, never written or removed.
  The lock file is removed when released (its inode is re-checked after locking, so removal
  cannot let two writers in).

* **Hostile destinations, failed writes.** An empty ``final``, ``/``, a dangling symlink or a
  parent that is a file is a one-line UsageError before anything is made; a full disk, quota,
  read-only file system (or any OSError on a file inside the temporary directory) while the
  artifact is written, or a failed swap rename, is a UsageError naming ``final``, with the
  temporary removed and ``final`` unchanged.

Why one module: every write of an artifact goes through one swap, and what that
swap may drop (the old manifest's files), keep (a user's files), recover (a crashed compile's
backup or temp) and lock belongs to the same contract; split, the rules would drift apart.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import signal
import stat
import tempfile
import threading
from pathlib import Path
from typing import Any, Iterable, Iterator

from hetcc.core.errors import UsageError
from hetcc.runtime.manifest import COSTS_NAME, MANIFEST_NAME, MAX_MANIFEST_BYTES, TIMINGS_NAME
from hetcc.compiler.why import WHY_NAME

try:  # POSIX; without it (Windows) there is no lock
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

__all__ = ["atomic_directory", "atomic_write_bytes", "atomic_write_text", "created_mode", "MARKER", "OWN_FILES",
           "artifact_identity", "check_replaceable_file", "check_output_dir_name", "check_not_an_input"]

logger = logging.getLogger(__name__)

#: the file that marks a directory as a hetcc output (it may be replaced by a new compile)
MARKER = MANIFEST_NAME
#: files hetcc writes into every artifact beside those its manifest lists
OWN_FILES = frozenset({MARKER, COSTS_NAME, TIMINGS_NAME, WHY_NAME})
_SCHEMA_PREFIX = "hetcc.manifest/"
_SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


# ---------------------------------------------------------------------------------------------
# what an artifact owns


def artifact_identity(root: Path) -> tuple[dict | None, str]:
    """(the parsed manifest, "") if ``root`` holds a hetcc manifest, else (None, why not)."""
    path = root / MARKER
    if not path.is_file():
        return None, f"it has no {MARKER}"
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_MANIFEST_BYTES + 1)
        if len(data) > MAX_MANIFEST_BYTES:
            return None, f"its {MARKER} is larger than any hetcc writes"
        doc = json.loads(data.decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None, f"its {MARKER} is not valid JSON"
    schema = doc.get("schema") if isinstance(doc, dict) else None
    if not (isinstance(schema, str) and schema.startswith(_SCHEMA_PREFIX)):
        return None, f"its {MARKER} is not a hetcc manifest: no \"schema\": \"{_SCHEMA_PREFIX}N\""
    return doc, ""


def _norm(rel: Any) -> str | None:
    """A manifest path as a relative POSIX path inside the artifact, or None if it is not one
    (absolute, with '..', '.' or empty parts, a backslash: hetcc writes none of those, so such
    a path never makes a file hetcc's to drop)."""
    if not isinstance(rel, str) or not rel or "\\" in rel:
        return None
    parts = rel.split("/")
    return None if any(p in ("", ".", "..") for p in parts) else rel


def _listed(doc: dict) -> list[tuple[Any, Any]]:
    """(path, sha256) of every file a manifest lists: slices, their data files, the policy."""
    files: list[tuple[Any, Any]] = []
    variants = doc.get("variants")
    slice_lists = [v.get("slices") for v in variants.values() if isinstance(v, dict)] if isinstance(variants, dict) else []
    slice_lists.append(doc.get("slices"))  # hetcc.manifest/1
    for slices in slice_lists:
        for s in slices if isinstance(slices, list) else []:
            if isinstance(s, dict):
                files.append((s.get("file"), s.get("sha256")))
                if isinstance(s.get("data"), dict):
                    files.append((s["data"].get("file"), s["data"].get("sha256")))
    if isinstance(doc.get("policy"), dict):
        files.append((doc["policy"].get("file"), doc["policy"].get("sha256")))
    return files


def _hash_matches(path: Path, sha256: Any) -> bool:
    """Whether ``path`` is a regular file (not a link) whose SHA-256 is ``sha256``."""
    if not isinstance(sha256, str):
        return False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return False
        h = hashlib.sha256()
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest() == sha256


#: how every file hetcc writes into an artifact beside the listed ones starts (``{"schema":
#: "hetcc.costs/1", ...``): the token that makes such a file hetcc's to replace
_OWN_PREFIX = re.compile(rb'\s*\{\s*"schema"\s*:\s*"hetcc\.')


def _own_file(path: Path) -> bool:
    """Whether ``path`` is a regular file that starts as every file hetcc writes beside the
    listed ones starts (a JSON object whose first key is a ``hetcc.*`` schema)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    with os.fdopen(fd, "rb") as f:
        return stat.S_ISREG(os.fstat(f.fileno()).st_mode) and bool(_OWN_PREFIX.match(f.read(4096)))


def _owned(root: Path, doc: dict, depth: int = 0) -> set[str]:
    """The relative paths of ``root`` that hetcc wrote, by the manifest ``doc``: a listed file
    whose content still has the listed SHA-256, hetcc's own files (manifest, costs, timings, why)
    that start with a ``hetcc.*`` schema, and the same of every workload sub-artifact whose
    manifest still has the SHA-256 the workload lists. A manifest that merely claims the schema
    owns nothing it did not get from hetcc."""
    owned = {rel for rel in map(_norm, OWN_FILES) if rel is not None and _own_file(root / rel)}
    for rel, sha in _listed(doc):
        rel = _norm(rel)
        if rel is not None and _hash_matches(root / rel, sha):
            owned.add(rel)
    workload = doc.get("workload")
    models = workload.get("models") if isinstance(workload, dict) else None
    if isinstance(models, list) and depth < 4:
        for m in models:
            sub = _norm(m.get("dir")) if isinstance(m, dict) else None
            if sub is None or not _hash_matches(root / sub / MARKER, m.get("manifest_sha256")):
                continue
            subdoc, _ = artifact_identity(root / sub)
            if subdoc is not None:
                owned |= {f"{sub}/{rel}" for rel in _owned(root / sub, subdoc, depth + 1)}
    return owned


def _entries(root: Path, rel: str = "") -> Iterator[tuple[str, bool]]:
    """(relative path, is an empty directory) of every non-directory and every empty directory
    under ``root`` (symbolic links are entries, never followed)."""
    with os.scandir(root / rel if rel else root) as it:
        items = sorted(it, key=lambda e: e.name)
    for e in items:
        r = f"{rel}/{e.name}" if rel else e.name
        if e.is_dir(follow_symlinks=False):
            inner = list(_entries(root, r))
            yield from inner if inner else [(r, True)]
        else:
            yield r, False


def _foreign(root: Path, owned: set[str], protect: set[str] = frozenset()) -> list[tuple[str, bool]]:
    """Entries of ``root`` that hetcc did not write (not in ``owned``), plus protected paths (the
    source model) even when owned. Empty directories count as entries."""
    return [(rel, empty_dir) for rel, empty_dir in _entries(root)
            if rel not in owned or (protect and os.path.realpath(root / rel) in protect)]


def _source_paths(tmp: Path) -> set[str]:
    """The source models the new artifact was compiled from (never to be dropped)."""
    found: set[str] = set()
    doc, _ = artifact_identity(tmp)
    docs = [doc] if doc else []
    workload = doc.get("workload") if doc else None
    for m in (workload.get("models") or []) if isinstance(workload, dict) else []:
        sub = _norm(m.get("dir")) if isinstance(m, dict) else None
        subdoc = artifact_identity(tmp / sub)[0] if sub else None
        if subdoc:
            docs.append(subdoc)
    for d in docs:
        model = d.get("model")
        src = model.get("source_path") if isinstance(model, dict) else None
        if isinstance(src, str) and src:
            found.add(os.path.realpath(src))
    return found


class _Collision(Exception):
    pass


def _carry(src_root: Path, rel: str, empty_dir: bool, dst_root: Path) -> None:
    """Hard-link (else copy) ``src_root/rel`` to ``dst_root/rel``; _Collision if that path is taken."""
    src, dst = src_root / rel, dst_root / rel
    parent = dst.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise _Collision(rel) from None
    if empty_dir:
        if dst.is_dir() and not dst.is_symlink():
            return
        if os.path.lexists(dst):
            raise _Collision(rel)
        dst.mkdir()
        shutil.copymode(src, dst)
        return
    if os.path.lexists(dst):
        raise _Collision(rel)
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError:
        if src.is_symlink():
            os.symlink(os.readlink(src), dst)
        elif stat.S_ISREG(src.lstat().st_mode):
            shutil.copy2(src, dst)
        else:
            raise


# ---------------------------------------------------------------------------------------------
# signals, lock, removal


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """SIGINT/SIGTERM/SIGHUP held back until the block ends, then handled as they would have been.

    Python runs signal handlers in the main thread between bytecodes, whichever thread the
    kernel delivered the signal to (onnxruntime and BLAS start threads, so masking the main
    thread is not enough): the handlers are swapped for one that records the signal, and the
    recorded ones are passed to the original handlers (a KeyboardInterrupt, mostly) on exit.
    A signal handled before the swap is raised on entry, before the block runs. Outside the
    main thread there is nothing to swap (and no handler runs there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    active = [True]
    old: dict[int, Any] = {}

    def dispatch(signum: int) -> None:
        handler = old[signum]
        if callable(handler):
            handler(signum, None)
        elif handler != signal.SIG_IGN:  # SIG_DFL: its default action, now
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)

    def record(signum: int, frame: Any) -> None:
        if active[0]:
            pending.append(signum)
        else:  # the block is over but restoring its handler was cut short
            dispatch(signum)

    try:
        for s in _SIGNALS:
            if signal.getsignal(s) is not None:  # None: set outside Python, cannot be put back
                old[s] = signal.signal(s, record)
        yield
    finally:
        active[0] = False
        for s, handler in old.items():
            signal.signal(s, handler)
        for s in pending:
            dispatch(s)


#: the first line of every lock file hetcc makes: a file with that name but not this line is a
#: user's, never locked, written or removed
LOCK_HEADER = b"hetcc.lock/1\n"
#: the most a lock file may hold (its journal has a line per temporary and backup of one write)
_MAX_LOCK_BYTES = 1 << 16


def acquire_lock(path: Path, shown: str) -> int | None:
    """Take the exclusive lock ``path``; UsageError if another writer has it, or if ``path`` is
    not a lock hetcc made (a symbolic link, not a regular file, or without ``LOCK_HEADER``). A
    new lock file is written under a temporary name and linked into place, so every lock file
    anyone can open already starts with the header (no symlink is ever followed)."""
    if fcntl is None:  # pragma: no cover
        return None
    for _ in range(20):
        try:
            fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            fd = _create_lock(path, shown)
            if fd is None:
                continue            # another writer linked its lock first: lock that one
            return fd
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UsageError(f"cannot write {shown}: {path} is a symbolic link, not a lock hetcc made; "
                                 "remove it or choose another -o") from None
            raise UsageError(f"cannot write {shown}: cannot open {path} ({exc.strerror}); choose another -o") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise UsageError(f"cannot write {shown}: {path} is not a regular file, so not a lock hetcc made; "
                                 "move it away or choose another -o")
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise UsageError(f"another hetcc compile is writing {shown}; wait for it or choose another -o") from None
        except BaseException:
            os.close(fd)
            raise
        try:
            same = os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if not same:
            os.close(fd)  # the holder removed it as we opened it: lock the new one
            continue
        if os.pread(fd, len(LOCK_HEADER), 0) != LOCK_HEADER:
            os.close(fd)
            raise UsageError(f"cannot write {shown}: {path} is in the way and hetcc did not make it (it does not "
                             f"start with {LOCK_HEADER.decode().strip()!r}); move it away or choose another -o")
        return fd
    raise UsageError(f"cannot lock {path}: it keeps changing; is another program removing it?")


def _create_lock(path: Path, shown: str) -> int | None:
    """A new locked lock file at ``path`` holding ``LOCK_HEADER``; None if ``path`` appeared meanwhile."""
    try:
        fd, name = tempfile.mkstemp(prefix=f"{path.name}.new-", dir=path.parent)
    except OSError as exc:
        raise UsageError(f"cannot write {shown}: cannot create a file in {path.parent} ({exc.strerror}); "
                         "choose another -o") from None
    try:
        os.write(fd, LOCK_HEADER)
        os.chmod(name, created_mode("file"))
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        try:
            os.link(name, path, follow_symlinks=False)
        except FileExistsError:
            os.close(fd)
            return None
        except OSError as exc:
            os.close(fd)
            raise UsageError(f"cannot write {shown}: cannot create {path} ({exc.strerror}); choose another -o") from None
        return fd
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)


def journal(fd: int | None, kind: str, path: Path) -> None:
    """Note in the held lock ``fd`` that this write made ``path`` (``kind`` ``tmp`` or ``old``):
    what a later writer may recover, and nothing else, if this one is killed."""
    if fd is None:  # pragma: no cover
        return
    os.lseek(fd, 0, os.SEEK_END)
    os.write(fd, f"{kind} {path.name}\n".encode("utf-8", "surrogateescape"))
    os.fsync(fd)


def _journaled_temp_dir(final: Path, fd: int | None) -> Path:
    """A new, empty ``.NAME.tmp-XXXXXXXX`` beside ``final`` (mode 0700, as mkdtemp makes it), its
    name journaled in the lock BEFORE it exists: a writer killed in between leaves a journaled name
    with no directory (skipped by recovery), never a directory that no journal names."""
    for _ in range(100):
        path = final.parent / f".{final.name}.tmp-{secrets.token_hex(4)}"
        if os.path.lexists(path):
            continue
        journal(fd, "tmp", path)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(final.parent))


def _journal_entries(fd: int | None) -> list[tuple[str, str]]:
    """(kind, name) of every line a killed writer left in the lock, then the journal emptied."""
    if fd is None:  # pragma: no cover
        return []
    data = os.pread(fd, _MAX_LOCK_BYTES, 0)
    out = []
    for line in data[len(LOCK_HEADER):].decode("utf-8", "surrogateescape").splitlines():
        kind, _, name = line.partition(" ")
        if kind in ("tmp", "old") and name and "/" not in name and name not in (".", ".."):
            out.append((kind, name))
    return out


def release_lock(path: Path, fd: int | None) -> None:
    if fd is None:  # pragma: no cover
        return
    with contextlib.suppress(OSError):
        if os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino:
            os.unlink(path)  # while still holding it, so nobody can lock the unlinked inode in vain
    os.close(fd)


def _remove_tree(path: Path) -> None:
    """Remove a backup or temporary directory, its ``manifest.json`` last: a removal cut short
    leaves either the manifest (what the rest was is still known) or an empty directory."""
    with contextlib.suppress(FileNotFoundError):
        if path.is_symlink() or not path.is_dir():
            path.unlink()
            return
        for e in sorted(os.scandir(path), key=lambda e: e.name == MARKER):
            if e.name == MARKER and not e.is_dir(follow_symlinks=False):
                continue
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(e.path)
            else:
                os.unlink(e.path)
        with contextlib.suppress(FileNotFoundError):
            (path / MARKER).unlink()
        path.rmdir()


def _retire(backup: Path, final: Path) -> str | None:
    """Remove a backup of ``final`` once every file in it that hetcc did not write is also in
    ``final`` (carried in now if missing). Returns why it was kept instead, or None."""
    doc, _ = artifact_identity(backup)
    owned = _owned(backup, doc) if doc is not None else set()
    for rel, empty_dir in _foreign(backup, owned):
        if empty_dir or os.path.lexists(final / rel):
            continue
        try:
            _carry(backup, rel, False, final)
        except (_Collision, OSError):
            return f"kept {backup.name}: it holds {rel}, which {final.name} lacks; take what you need and remove it"
    try:
        _remove_tree(backup)
    except OSError as exc:
        return f"could not remove {backup.name} ({exc.strerror}); remove it by hand"
    return None


def _leftovers(final: Path, fd: int | None) -> tuple[list[Path], list[Path]]:
    """(backups, temporaries) that an earlier killed write into ``final`` made and noted in the
    lock ``fd`` (and that are still there, named as hetcc names them). A file or directory that
    merely has such a name is not in the journal and is never touched."""
    old = re.compile(re.escape(f".{final.name}.old-") + r"\d+")
    tmp = re.compile(re.escape(f".{final.name}.tmp-") + r"[A-Za-z0-9_]{6,}")
    backups, temps = [], []
    for kind, name in dict.fromkeys(_journal_entries(fd)):
        path = final.parent / name
        if not (old if kind == "old" else tmp).fullmatch(name) or not os.path.isdir(path) or path.is_symlink():
            continue
        (backups if kind == "old" else temps).append(path)
    return backups, temps


def _recover(final: Path, shown: str, fd: int | None) -> None:
    """Restore or remove what an earlier killed write into ``final`` left; one warning if any."""
    backups, temps = _leftovers(final, fd)
    if fd is not None:
        os.ftruncate(fd, len(LOCK_HEADER))   # this write's journal starts empty
    if not backups and not temps:
        return
    notes = []
    for t in temps:
        _remove_tree(t)
        notes.append(f"removed {t.name}")
    backups.sort(key=lambda p: p.lstat().st_mtime, reverse=True)
    if backups and not os.path.lexists(final):
        os.replace(backups[0], final)
        notes.append(f"restored {shown} from {backups.pop(0).name}")
    for b in backups:
        kept = _retire(b, final)
        notes.append(kept or f"removed {b.name}")
    logger.warning("recovered from an interrupted write into %s: %s", shown, "; ".join(notes))


def _check_replaceable(final: Path, shown: str) -> None:
    if not os.path.lexists(final):
        return
    if not final.is_dir():
        raise UsageError(f"refusing to overwrite {shown}: it exists and is not a directory; "
                         "choose another -o or remove it")
    if not any(final.iterdir()):
        return
    doc, why = artifact_identity(final)
    if doc is None:
        raise UsageError(f"refusing to overwrite {shown}: it exists and is not a hetcc output directory "
                         f"({why}); choose another -o or remove it")


def _dir_mode(final: Path) -> int:
    try:
        return stat.S_IMODE(final.stat().st_mode)
    except OSError:
        return created_mode("dir")


# ---------------------------------------------------------------------------------------------
# the writers


@contextlib.contextmanager
def atomic_directory(final: str | os.PathLike) -> Iterator[Path]:
    """Yield a fresh temporary directory beside ``final``; on success it replaces ``final``.

    ``final`` may be absent, empty, or a hetcc artifact (see the module docstring: only the files
    its manifest lists and hetcc's own are dropped; anything else is carried into the new
    directory). Anything else is refused with a UsageError before anything is written, as is a
    second writer into the same ``final``. On an exception (KeyboardInterrupt included) the
    temporary directory is removed and ``final`` is left as it was.
    """
    shown = os.fspath(final)
    if not shown:
        raise UsageError("the output directory is empty (-o ''); name a directory, e.g. -o out")
    given = Path(final)
    if not given.name or given.name in (".", ".."):
        given = Path(os.path.abspath(given))
    if not given.name:
        raise UsageError(f"refusing to write {shown}: name a directory below it")
    if os.path.islink(given) and not os.path.exists(given):   # (os.path: False on ENAMETOOLONG)
        raise UsageError(f"refusing to write {shown}: it is a symbolic link to {os.readlink(given)}, which does not "
                         "exist; remove the link or choose another -o")
    _make_parent(given.parent, shown)
    final = Path(os.path.realpath(given))  # one lock for every spelling of the same directory
    if os.path.lexists(final) and not final.is_dir():   # before a lock file is made beside /dev/null
        _check_replaceable(final, shown)
    lock_path = final.parent / f".{final.name}.lock"
    fd = tmp = None
    try:
        with _signals_deferred():  # an interrupt is raised before this block or after it, never inside
            fd = acquire_lock(lock_path, shown)
            _recover(final, shown, fd)
            _check_replaceable(final, shown)
            try:
                tmp = _journaled_temp_dir(final, fd)
            except OSError as exc:
                raise UsageError(f"cannot write {shown}: cannot create a directory in {final.parent} "
                                 f"({exc.strerror}); choose another -o") from None
        try:
            yield tmp
        except OSError as exc:
            if not _write_failure(exc, tmp):
                raise
            raise UsageError(f"cannot write {shown}: {exc.strerror or exc} while writing "
                             f"{_inside(exc.filename, tmp)}; {_fix(exc)} (nothing was changed in {shown})") from None
        _swap(tmp, final, shown, fd)
    except BaseException:
        if tmp is not None:  # gone already if the swap happened
            with _signals_deferred():
                _remove_tree(tmp)
        raise
    finally:
        if fd is not None:
            with _signals_deferred():
                release_lock(lock_path, fd)


#: errors that say the output's file system is full, read-only or refuses the size: the write
#: failed, whatever file it was writing (a full disk gives no file name)
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})


def _write_failure(exc: OSError, tmp: Path) -> bool:
    """Whether ``exc`` (raised while the artifact was written into ``tmp``) is a failure to write
    the output (full, read-only, or about a file inside ``tmp``), not a failure to read an input."""
    if exc.errno in _FULL:
        return True
    name = exc.filename
    if not isinstance(name, (str, os.PathLike)):
        return False
    try:
        Path(os.path.abspath(name)).relative_to(os.path.abspath(tmp))
    except ValueError:
        return False
    return True


def _inside(name: Any, tmp: Path) -> str:
    if not isinstance(name, (str, os.PathLike)):
        return "the artifact"
    try:
        return Path(os.path.abspath(name)).relative_to(os.path.abspath(tmp)).as_posix()
    except ValueError:
        return os.fspath(name)


def _fix(exc: OSError) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return "free some space there or choose another -o"
    return "choose another -o"


def _make_parent(parent: Path, shown: str) -> None:
    """Create the output's parent directories; UsageError naming the part in the way."""
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = next((p for p in [parent, *parent.parents] if os.path.lexists(p) and not p.is_dir()), parent)
        raise UsageError(f"cannot write {shown}: {blocker} is a file, not a directory; choose another -o") from None
    except OSError as exc:
        raise UsageError(f"cannot write {shown}: cannot create {exc.filename or parent} ({exc.strerror}); "
                         "choose another -o") from None


def _swap(tmp: Path, final: Path, shown: str, fd: int | None = None) -> None:
    """Carry what hetcc did not write from ``final`` into ``tmp``, then put ``tmp`` in its place."""
    os.chmod(tmp, _dir_mode(final))  # mkdtemp made it 0700: give it the old one's mode, or the umask's
    if os.path.lexists(final):
        _check_replaceable(final, shown)  # it may have changed while we compiled
        doc, _ = artifact_identity(final)
        owned = _owned(final, doc) if doc is not None else set()
        sources = _source_paths(tmp)
        rel = ""
        try:
            for rel, empty_dir in _foreign(final, owned, sources):
                _carry(final, rel, empty_dir, tmp)
        except _Collision:
            why = "it is the model being compiled" if os.path.realpath(final / rel) in sources else \
                "hetcc did not write it"
            raise UsageError(f"refusing to replace {shown}: it holds {rel} ({why}) and the new artifact "
                             f"writes that path; move {rel} out of {shown} and compile again") from None
        except OSError as exc:
            raise UsageError(f"refusing to replace {shown}: cannot keep {exc.filename or rel}, which hetcc did "
                             f"not write ({exc.strerror}); move it out of {shown} and compile again") from None
    backup = final.parent / f".{final.name}.old-{os.getpid()}"
    n = 0
    while os.path.lexists(backup):  # one an earlier write had to keep: never reuse it
        n += 1
        backup = final.parent / f".{final.name}.old-{os.getpid()}{n:03d}"
    journal(fd, "old", backup)
    with _signals_deferred():  # an interrupt now is handled after the swap and the cleanup
        try:
            if os.path.lexists(final):
                os.replace(final, backup)
            os.replace(tmp, final)
        except BaseException as exc:
            if not os.path.lexists(final) and os.path.lexists(backup):
                os.replace(backup, final)  # put the old output back
            if isinstance(exc, OSError):   # e.g. EBUSY: final is a mount point
                raise UsageError(f"cannot replace {shown}: {exc.strerror} (renaming {exc.filename}); "
                                 f"{shown} is left as it was; choose another -o") from None
            raise
        kept = _retire(backup, final) if os.path.lexists(backup) else None
        if kept:
            logger.warning("%s", kept)


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
        os.chmod(name, created_mode("file"))  # mkstemp creates 0600; give the umask's mode
        os.replace(name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise
    return path


_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    """The process umask, read without changing it where the kernel says it (Linux >= 4.7:
    ``Umask:`` in /proc/self/status). Elsewhere it is set and put back under a lock: another
    thread creating a file in between would get mode 0666 / 0777 (hetcc's own threads do not)."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8) & 0o777
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o077)   # the tightest usual mask while it is away, never 0
        os.umask(mask)
    return mask


def created_mode(kind: str = "file") -> int:
    """The mode a new file (``kind`` "file") or directory ("dir") gets under the current umask:
    what hetcc gives the files and directories it makes through mkstemp/mkdtemp (which make
    0600/0700) before they take their final names."""
    return (0o666 if kind == "file" else 0o777) & ~_umask()


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """``atomic_write_bytes`` for text."""
    return atomic_write_bytes(path, text.encode(encoding))


def write_file(path: str | os.PathLike, data: bytes | str, what: str, fix: str) -> Path:
    """``atomic_write_bytes`` of a file a command was asked to write (``what``: ``--plot``,
    ``--depfile``, ...); an OS refusal is one UsageError naming the file and ``fix``."""
    try:
        return atomic_write_bytes(path, data.encode("utf-8") if isinstance(data, str) else data)
    except OSError as exc:
        raise UsageError(f"{what}: cannot write {path} ({exc.strerror or exc}); {fix}") from None


def check_replaceable_file(path: Path, what: str) -> None:
    """UsageError unless ``path`` (the file ``what`` writes, e.g. ``--plot x.png``) is absent or a
    regular file: a symlink, a directory or a special file there is never followed or replaced."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        kind = "a symlink" if path.is_symlink() else "a directory" if path.is_dir() else "not a regular file"
        raise UsageError(f"{what}: {path} is {kind}, which hetcc does not replace; move it away or name "
                         "another file")


def check_output_dir_name(path: str | os.PathLike, what: str = "-o") -> Path:
    """The directory a command writes (``-o``), refused in one line when it cannot be one: an
    empty name or the file system's root."""
    shown = os.fspath(path)
    if not shown.strip():
        raise UsageError(f"{what} '': the output directory is empty; name a directory, e.g. {what} out")
    given = Path(shown)
    if not Path(os.path.abspath(given)).name:
        raise UsageError(f"refusing to write {shown}: it is the file system's root; name a directory below it")
    return given


def _same(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """``a`` and ``b`` are one file: the same resolved path, or the same device and inode (a hard link)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_not_an_input(output: str | os.PathLike, what: str, inputs: Iterable[Any],
                       within: Iterable[Any] = ()) -> None:
    """Refuse, before anything is written, an output file (``what``: ``--depfile``, ``-o``, ...)
    that is one of the files the same command reads (``inputs``: a model, its data, a board or
    observations file, an option file; the same file by path or inode) or that is one of the files
    an artifact directory the same command writes will hold (``within``: ``-o``; its manifest,
    costs, timings, why, or anything under ``slices/`` or ``models/``)."""
    out = os.fspath(output)
    for inp in inputs:
        if inp and isinstance(inp, (str, os.PathLike)) and os.path.lexists(inp) and _same(out, inp):
            raise UsageError(f"{what} {out}: that is {os.fspath(inp)}, which this command reads; name another file")
    real = os.path.realpath(out)
    for d in within:
        if not d:
            continue
        top = os.path.realpath(d)
        rel = os.path.relpath(real, top).replace(os.sep, "/") if real.startswith(top.rstrip(os.sep) + os.sep) else ""
        if real == top or rel in OWN_FILES or rel.split("/")[0] in ("slices", "models"):
            raise UsageError(f"{what} {out}: the artifact {os.fspath(d)} this command writes holds that path; "
                             "name a file outside it")
