"""What hetcc keeps in its cache (``hetcc.core.paths.cache_dir()``), found by layout and removed.

Three kinds, each in its own folder, each file named by a pattern only hetcc writes:

* ``zoo``: ``zoo/seed<N>/<name>.onnx``, a zoo model exported with the random weights of seed N
  (``hetcc compile resnet50``);
* ``modules``: ``modules/<sha>/<class>.onnx``, a ``torch.nn.Module`` given to ``hetcc.compile``,
  exported and keyed by the first 16 hex digits of its ONNX bytes' sha256;
* ``profiles``: ``profiles/layers-<key>.json`` (a model's per-layer timings on one machine) and
  ``profiles/boundary-<key>.json`` (a machine's session-boundary cost), the ``host`` target's
  measurements (``hetcc.measure.profiler``); the key hashes the model, the machine's
  fingerprint and the profiler's version, so an entry says for which machine only when it was
  written with an ``about`` object (``{"model": ..., "machine": ...}``) or when it is this
  machine's boundary fit.

A write cut short leaves ``.<file>.tmp-XXXXXXXX`` beside the file (the atomic writer's
temporary); it belongs to the kind too. Nothing else is an entry: a file of another name, a
symbolic link (never followed, so nothing outside the cache is read or removed) or anything
but a regular file is left alone, and so is a folder that does not fit the layout.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

#: the kinds, in the order they are listed
KINDS = ("zoo", "modules", "profiles")
#: the atomic writer's temporary beside ``NAME`` (``tempfile.mkstemp(prefix=".NAME.tmp-")``)
_TMP = re.compile(r"\.(?P<name>.+)\.tmp-[a-z0-9_]{8}")
_ZOO_DIR = re.compile(r"seed(?P<seed>\d+)")
_ZOO_FILE = re.compile(r"(?P<model>[A-Za-z0-9_.-]+)\.onnx")
_MODULE_DIR = re.compile(r"(?P<sha>[0-9a-f]{16})")
_MODULE_FILE = re.compile(r"(?P<model>\w+)\.onnx")
_PROFILE_FILE = re.compile(r"(?P<what>layers|boundary)-(?P<key>[0-9a-f]{32})\.json")
#: bytes of a profile entry read to find its ``about`` object (hetcc's are a few kB)
_PROFILE_READ_LIMIT = 1 << 20


@dataclass(frozen=True)
class CacheEntry:
    """One file hetcc put in its cache: its kind, path, what it holds, for which model (and seed)
    and machine where known, when it was last written (``st_mtime``) and its size in bytes."""

    kind: str
    path: Path
    what: str
    model: str | None = None
    seed: int | None = None
    machine: str | None = None
    modified: float = 0.0
    size: int = 0
    unfinished: bool = False      # a write cut short (the writer's temporary)

    def to_json(self, root: Path) -> dict:
        from datetime import datetime, timezone

        return {"kind": self.kind, "path": self.path.relative_to(root).as_posix(), "what": self.what,
                "model": self.model, "seed": self.seed, "machine": self.machine,
                "modified": datetime.fromtimestamp(self.modified, timezone.utc).isoformat(timespec="seconds"),
                "bytes": self.size, "unfinished": self.unfinished}


def check_kinds(kinds: Sequence[str] | None) -> tuple[str, ...]:
    """``kinds`` in list order (None or empty: every kind); ValueError naming an unknown one."""
    if not kinds:
        return KINDS
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise ValueError(f"unknown cache kind {bad[0]!r}; kinds are {', '.join(KINDS)}")
    return tuple(k for k in KINDS if k in kinds)


def entries(root: Path, kinds: Sequence[str] | None = None,
            this_machine: Callable[[str], str | None] | None = None) -> list[CacheEntry]:
    """hetcc's files under the cache ``root`` of ``kinds`` (default all), in kind and path order.
    ``this_machine(key)`` names the machine of a boundary fit whose key it knows (the CLI passes
    one that computes this machine's key; without it such entries name no machine)."""
    out: list[CacheEntry] = []
    for kind in check_kinds(kinds):
        top = root / kind
        if kind == "zoo":
            for sub, m in _dirs(top, _ZOO_DIR):
                seed = int(m["seed"])
                for path, name, st, tmp in _files(sub, _ZOO_FILE):
                    model = _ZOO_FILE.fullmatch(name)["model"]
                    out.append(CacheEntry(kind, path, f"zoo model {model}, seed {seed}", model=model, seed=seed,
                                          modified=st.st_mtime, size=st.st_size, unfinished=tmp))
        elif kind == "modules":
            for sub, m in _dirs(top, _MODULE_DIR):
                for path, name, st, tmp in _files(sub, _MODULE_FILE):
                    model = _MODULE_FILE.fullmatch(name)["model"]
                    out.append(CacheEntry(kind, path, f"torch module {model}, ONNX sha256 {m['sha']}...",
                                          model=model, modified=st.st_mtime, size=st.st_size, unfinished=tmp))
        else:
            for path, name, st, tmp in _files(top, _PROFILE_FILE):
                out.append(_profile_entry(path, _PROFILE_FILE.fullmatch(name), st, tmp, this_machine))
    return out


def _profile_entry(path: Path, m: re.Match, st: os.stat_result, tmp: bool,
                   this_machine: Callable[[str], str | None] | None) -> CacheEntry:
    about = {} if tmp else _about(path)
    model = about.get("model") if isinstance(about.get("model"), str) else None
    machine = about.get("machine") if isinstance(about.get("machine"), str) else None
    if m["what"] == "boundary":
        what = "session-boundary cost"
        if machine is None and this_machine is not None:
            machine = this_machine(m["key"])
    else:
        what = "per-layer timings" + (f" of {model}" if model else "")
    return CacheEntry("profiles", path, what, model=model, machine=machine, modified=st.st_mtime, size=st.st_size,
                      unfinished=tmp)


def _about(path: Path) -> dict:
    """The ``about`` object of a profile entry ({} when it has none or cannot be read)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as f:
            doc = json.loads(f.read(_PROFILE_READ_LIMIT))
    except (OSError, ValueError):
        return {}
    about = doc.get("about") if isinstance(doc, dict) else None
    return about if isinstance(about, dict) else {}


def _dirs(top: Path, pattern: re.Pattern) -> Iterator[tuple[Path, re.Match]]:
    """Real folders (not links) in ``top`` whose names fit ``pattern``, sorted."""
    for e in _scan(top):
        m = pattern.fullmatch(e.name)
        if m and e.is_dir(follow_symlinks=False):
            yield Path(e.path), m


def _files(top: Path, pattern: re.Pattern) -> Iterator[tuple[Path, str, os.stat_result, bool]]:
    """(path, the name the pattern fits, lstat, whether it is a write's temporary) of the regular
    files (not links) in ``top`` named by ``pattern`` or its writer's temporary, sorted."""
    for e in _scan(top):
        tmp = _TMP.fullmatch(e.name)
        name = tmp["name"] if tmp else e.name
        if not pattern.fullmatch(name) or not e.is_file(follow_symlinks=False):
            continue
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        yield Path(e.path), name, st, tmp is not None


def _scan(top: Path) -> list[os.DirEntry]:
    """The entries of the real folder ``top`` (none if it is missing, a link or unreadable)."""
    if top.is_symlink() or not top.is_dir():
        return []
    try:
        with os.scandir(top) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []


@dataclass(frozen=True)
class Removed:
    """What ``remove`` did: the entries it removed, the bytes they held, and the files it could
    not remove with the reason."""

    entries: tuple[CacheEntry, ...]
    freed: int
    failed: tuple[tuple[CacheEntry, str], ...] = ()


def remove(root: Path, found: Sequence[CacheEntry]) -> Removed:
    """Remove the entries ``found`` (from ``entries(root, ...)``), each checked again just before:
    still a regular file and no link (a file swapped for a link meanwhile is left alone); then
    the folders of the layout they leave empty (never a folder that still holds anything)."""
    import stat

    done, failed = [], []
    for entry in found:
        try:
            st = os.lstat(entry.path)
            if not stat.S_ISREG(st.st_mode):
                raise OSError("no longer a regular file")
            os.unlink(entry.path)
        except FileNotFoundError:
            continue                       # gone meanwhile (another hetcc cache clear)
        except OSError as exc:
            failed.append((entry, exc.strerror or str(exc)))
            continue
        done.append(entry)
    for folder in sorted({p for e in done for p in _layout_folders(root, e)}, key=lambda p: -len(p.parts)):
        try:
            folder.rmdir()                 # only when empty
        except OSError:
            pass
    return Removed(tuple(done), sum(e.size for e in done), tuple(failed))


def _layout_folders(root: Path, entry: CacheEntry) -> list[Path]:
    """The folders of ``entry``'s layout between it and ``root`` (``zoo/seed0``, ``zoo``)."""
    rel = entry.path.relative_to(root)
    return [root / Path(*rel.parts[:i]) for i in range(1, len(rel.parts))]


def describe_size(n: int) -> str:
    """``812 B``, ``12.3 kB``, ``97.8 MB``, ``1.2 GB`` (powers of 1000)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


__all__ = ["CacheEntry", "KINDS", "Removed", "check_kinds", "describe_size", "entries", "remove"]
