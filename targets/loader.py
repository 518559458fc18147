"""Finding and reading target files: built-ins by name, users' files by path."""
from __future__ import annotations

import difflib
import hashlib
import logging
import tomllib
from importlib import resources
from pathlib import Path

from hetcc.errors import TargetError

from .model import Target
from .schema import parse

logger = logging.getLogger(__name__)
_PACKAGE = __package__ or "hetcc.targets"


def builtin_targets() -> list[str]:
    """Names of the target files shipped with hetcc (``hetcc targets`` lists them)."""
    root = resources.files(_PACKAGE)
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".toml"))


def load_target(name_or_path: str | Path) -> Target:
    """A built-in target by name (``hikey970``) or a user's TOML file by path."""
    s = str(name_or_path)
    looks_like_path = isinstance(name_or_path, Path) or s.endswith(".toml") or "/" in s or "\\" in s
    if not looks_like_path:
        names = builtin_targets()
        if s not in names:
            close = difflib.get_close_matches(s, names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TargetError(f"unknown target {s!r}{hint}; built-in targets are "
                              f"{', '.join(names)}, or pass --target path/to/board.toml")
        res = resources.files(_PACKAGE).joinpath(f"{s}.toml")
        return load_bytes(res.read_bytes(), Path(str(res)), f"{s}.toml")
    path = Path(name_or_path)
    if not path.is_file():
        raise TargetError(f"{path}: target file not found; built-in targets are "
                          f"{', '.join(builtin_targets())}")
    return load_bytes(path.read_bytes(), path, str(path))


def load_bytes(data: bytes, path: Path, label: str) -> Target:
    """Parse, validate and build a target from the bytes of its file (``label`` names it in errors)."""
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise TargetError(f"{label}: not valid TOML: {e}") from None
    target = parse(doc, path, hashlib.sha256(data).hexdigest(), label)
    logger.debug("loaded target %s from %s (%d devices, %d states)", target.name, path,
                 len(target.devices), len(target.states()))
    return target


__all__ = ["builtin_targets", "load_bytes", "load_target"]
