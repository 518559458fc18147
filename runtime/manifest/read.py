"""Reading an artifact's files, confined to the artifact directory: the directory itself
(``artifact_root``), paths the manifest lists or the runtime reads by name, resolved and refused
when they leave it (``slice_path``, ``artifact_file``), JSON read within the limits of ``model``
(``read_json``: size, depth, integer digits, finite numbers, no NUL or lone surrogate), the
manifest (``read_manifest``, ``load_manifest``), ``costs.json`` (``check_costs``), ``timings.json``
(``read_timings``), and file hashes (``sha256_file``)."""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from pathlib import Path
from typing import Any, Iterable

from ..errors import ManifestError
from .checks import check_relative_path
from .messages import short, type_name
from .model import (COSTS_NAME, FILES_CHECKED_ABOVE, MANIFEST_NAME, MAX_COSTS_BYTES, MAX_INT_DIGITS, MAX_JSON_DEPTH,
                    MAX_MANIFEST_BYTES, TIMINGS_NAME, TIMINGS_SCHEMA, Manifest)
from .parse import check_counts, parse_manifest

logger = logging.getLogger(__name__)


def artifact_root(artifact_dir: str | os.PathLike) -> Path:
    """The artifact directory given as itself or as its manifest.json; ManifestError if absent."""
    root = Path(artifact_dir)
    if root.is_file() and root.name == MANIFEST_NAME:
        root = root.parent
    if not root.exists():
        raise ManifestError(f"{artifact_dir}: no such directory; pass the directory hetcc compile wrote (-o)")
    if not root.is_dir():
        raise ManifestError(f"{artifact_dir}: not a directory; pass the directory hetcc compile wrote (-o)")
    return root


def _resolve_inside(root: str | os.PathLike, rel: str) -> tuple[Path, bool]:
    """(``root/rel`` with every symlink resolved, whether that is inside ``root`` resolved);
    ManifestError-free: a symlink loop or an unreadable component counts as outside."""
    try:
        base = Path(root).resolve()
        full = (base / rel).resolve()
    except (OSError, RuntimeError):  # a symlink loop (RuntimeError before Python 3.13)
        return Path(root) / rel, False
    try:
        full.relative_to(base)
    except ValueError:
        return full, False
    return full, True


def slice_path(root: str | os.PathLike, rel: str, source: str = MANIFEST_NAME, key: str = "file") -> Path:
    """The absolute path of an artifact file, refusing any that leaves the artifact directory."""
    check_relative_path(rel, source, [key])
    full, inside = _resolve_inside(root, rel)
    if not inside:
        raise ManifestError(
            f"{source}: {key}: {rel!r} resolves outside the artifact directory (a symlink?); recompile"
        )
    return full


def artifact_file(root: str | os.PathLike, name: str, shown: str | None = None) -> Path:
    """The resolved path of a file the runtime or the CLI reads from an artifact directory by a
    fixed name (``manifest.json``, ``costs.json``, a workload model's ``manifest.json``):
    ManifestError naming the file (``shown``) if it resolves outside ``root`` (a symlink out of
    the artifact, a symlink loop). Whether it exists is the caller's question; open the path
    returned, not ``root / name``, so that what was checked is what is read."""
    full, inside = _resolve_inside(root, name)
    if not inside:
        shown = shown if shown is not None else os.path.join(str(root), name)
        raise ManifestError(f"{shown}: resolves outside the artifact directory (a symlink?); "
                            "refusing to read it — recompile")
    return full


class _Refused(ValueError):
    """A JSON value read_json does not accept (not finite, an integer too long)."""


def _finite(text: str) -> float:
    x = float(text)
    if x in (math.inf, -math.inf):
        raise _Refused(f"{text} is out of range for a number (it would read as infinity)")
    return x


def _short_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _constant(text: str) -> Any:
    raise _Refused(f"{text} is not a JSON number (JSON has no NaN or Infinity)")


def _printable(text: str) -> bool:
    """No NUL and no lone surrogate (a JSON escape such as \\ud800 that no encoder can print)."""
    if text.isascii():
        return "\x00" not in text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in text


def _check_tree(doc: Any, shown: str) -> None:
    """Refuse a document nested deeper than MAX_JSON_DEPTH or holding a string with a NUL or a lone
    surrogate (iteratively: no recursion to blow)."""
    stack = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            bad = next((k for k in value if not _printable(k)), None)
            children: Iterable[Any] = value.values()
        elif isinstance(value, list):
            bad, children = None, value
        else:
            continue
        if depth > MAX_JSON_DEPTH:
            raise ManifestError(f"{shown}: nested more than {MAX_JSON_DEPTH} levels deep; no file hetcc "
                                "writes is; the file is damaged, recompile")
        for v in children:
            if isinstance(v, (dict, list)):
                stack.append((v, depth + 1))
            elif isinstance(v, str) and bad is None and not _printable(v):
                bad = v
        if bad is not None:
            raise ManifestError(f"{shown}: the string {short(bad)} holds a NUL or an unpaired surrogate (\\ud800), "
                                "which hetcc never writes; the file is damaged, recompile")


def read_json(path: Path, shown: str, max_bytes: int | None = None) -> Any:
    """A JSON file of an artifact; ManifestError naming ``shown`` when unreadable, larger than
    ``max_bytes`` (default: MAX_COSTS_BYTES for costs.json, else MAX_MANIFEST_BYTES), not JSON,
    nested deeper than MAX_JSON_DEPTH, or holding a number that is not finite (NaN, Infinity,
    1e999: Python's json accepts them) or an integer over MAX_INT_DIGITS."""
    if max_bytes is None:
        max_bytes = MAX_COSTS_BYTES if Path(path).name == COSTS_NAME else MAX_MANIFEST_BYTES
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)   # never more, whatever the file (or /dev/zero) holds
    except OSError as e:
        raise ManifestError(f"{shown}: cannot read ({e.strerror or e}); recompile") from None
    if len(data) > max_bytes:
        raise ManifestError(f"{shown}: larger than {max_bytes >> 20} MiB, far more than hetcc writes; "
                            "the file is damaged or not hetcc's, recompile")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ManifestError(f"{shown}: not UTF-8 text (byte {e.start}); the file is damaged, recompile") from None
    try:
        doc = json.loads(text, parse_float=_finite, parse_int=_short_int, parse_constant=_constant)
    except json.JSONDecodeError as e:
        raise ManifestError(
            f"{shown}: not valid JSON (line {e.lineno} column {e.colno}: {e.msg}); the file is damaged, recompile"
        ) from None
    except _Refused as e:
        raise ManifestError(f"{shown}: {e}; the file is damaged, recompile") from None
    except RecursionError:
        raise ManifestError(f"{shown}: nested more than {MAX_JSON_DEPTH} levels deep; no file hetcc writes is; "
                            "the file is damaged, recompile") from None
    _check_tree(doc, shown)
    return doc


def check_costs(doc: Any, shown: str) -> None:
    """ManifestError naming ``shown`` and the key unless ``doc`` (a parsed ``costs.json``) has what
    ``hetcc inspect`` reads: an object whose ``layers`` is an array of objects, each with an
    ``op_types`` array of strings."""
    if not isinstance(doc, dict):
        raise ManifestError(f"{shown}: expected a JSON object; the file is damaged, recompile")
    layers = doc.get("layers")
    if layers is None:
        raise ManifestError(f"{shown}: layers: required key is missing; the file is damaged, recompile")
    if not isinstance(layers, list):
        raise ManifestError(f"{shown}: layers: expected an array, got {type_name(layers)}; the file is damaged, "
                            "recompile")
    for i, layer in enumerate(layers):
        if not isinstance(layer, dict):
            raise ManifestError(f"{shown}: layers[{i}]: expected an object, got {type_name(layer)}; the file is "
                                "damaged, recompile")
        ops = layer.get("op_types")
        if not isinstance(ops, list) or not all(isinstance(op, str) for op in ops):
            raise ManifestError(f"{shown}: layers[{i}].op_types: expected an array of strings; the file is "
                                "damaged, recompile")


def read_timings(root: str | os.PathLike) -> dict[str, float] | None:
    """The planner wall times in an artifact's ``timings.json`` (variant name, or ``"workload"``
    for a workload's own planner -> seconds); None when the artifact has none (the default: only
    ``compile --timings`` writes it). ManifestError naming the file and key when it is a symlink
    out of the artifact, not a regular file, not JSON or not ``hetcc.timings/1``."""
    shown = os.path.join(str(root), TIMINGS_NAME)
    path = artifact_file(root, TIMINGS_NAME, shown)
    if not path.exists():
        return None
    if not path.is_file():
        raise ManifestError(f"{shown}: not a regular file; the artifact is damaged, recompile")
    doc = read_json(path, shown)
    if not isinstance(doc, dict) or doc.get("schema") != TIMINGS_SCHEMA:
        raise ManifestError(f"{shown}: schema: expected {TIMINGS_SCHEMA!r}; the file is damaged or not hetcc's, "
                            "recompile (or delete it: it is optional)")
    seconds = doc.get("planner_seconds")
    if not isinstance(seconds, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in seconds.values()):
        raise ManifestError(f"{shown}: planner_seconds: expected an object of numbers >= 0; the file is damaged, "
                            "recompile (or delete it: it is optional)")
    return {str(k): float(v) for k, v in seconds.items()}


def _listed_files(doc: Any) -> set[str]:
    """The slice and data files a raw (unvalidated) manifest lists, as written."""
    out: set[str] = set()
    variants = doc.get("variants") if isinstance(doc, dict) else None
    for v in variants.values() if isinstance(variants, dict) else ():
        for sl in (v.get("slices") if isinstance(v, dict) else None) or ():
            if isinstance(sl, dict):
                out.add(str(sl.get("file")))
                if isinstance(sl.get("data"), dict):
                    out.add(str(sl["data"].get("file")))
    return out


def _count_files(root: Path, enough: int) -> int:
    """Regular files under ``root`` (symlinks not followed), counting no further than ``enough``."""
    n = 0
    for _dirpath, _dirs, files in os.walk(root):
        n += len(files)
        if n >= enough:
            break
    return n


def read_manifest(artifact_dir: str | os.PathLike) -> tuple[Manifest, Path, str]:
    """(manifest, artifact root, the manifest path as shown in messages)."""
    root = artifact_root(artifact_dir)
    shown = os.path.join(str(artifact_dir), MANIFEST_NAME) if Path(artifact_dir) == root else str(artifact_dir)
    mpath = artifact_file(root, MANIFEST_NAME, shown)  # a manifest.json symlinked out is refused
    if not mpath.is_file():
        raise ManifestError(f"{artifact_dir}: no {MANIFEST_NAME}; is this a hetcc compile output directory?")
    doc = read_json(mpath, shown)
    if isinstance(doc, dict):
        check_counts(doc, shown)
    listed = _listed_files(doc)
    if len(listed) > FILES_CHECKED_ABOVE:   # cheap before the parse: are those files even there?
        present = _count_files(root, len(listed))
        if present < len(listed):
            raise ManifestError(f"{shown}: lists {len(listed)} slice files but the artifact holds {present} "
                                "files; it is damaged or not hetcc's, recompile")
    manifest = parse_manifest(doc, shown)
    for vname, variant in manifest.variants.items():
        for i, sl in enumerate(variant.slices):
            slice_path(root, sl.file, shown, f"variants.{vname}.slices[{i}].file")
    if manifest.policy is not None:
        slice_path(root, manifest.policy.file, shown, "policy.file")
    if manifest.workload is not None:
        for i, wm in enumerate(manifest.workload.models):
            slice_path(root, wm.dir, shown, f"workload.models[{i}].dir")
    logger.debug("loaded %s: %s artifact", shown, manifest.kind)
    return manifest, root, shown


def load_manifest(artifact_dir: str | os.PathLike) -> Manifest:
    """Read and validate the manifest of a compile output directory (paths checked, files not)."""
    return read_manifest(artifact_dir)[0]


def sha256_file(path: str | os.PathLike, chunk_bytes: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes, read in chunks (slices can be hundreds of MB)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            block = f.read(chunk_bytes)
            if not block:
                break
            h.update(block)
    return h.hexdigest()
