"""Finding and reading target files: built-ins by name, users' files by path."""
from __future__ import annotations

import difflib
import hashlib
import logging
import os
import tomllib
from importlib import resources
from pathlib import Path

from hetcc.core.errors import TargetError

from .model import Target
from .schema import parse

logger = logging.getLogger(__name__)
_PACKAGE = __package__ or "hetcc.targets"
#: the largest target file read (the built-in boards are under 16 KiB)
MAX_TARGET_BYTES = 1 << 20


def builtin_targets() -> list[str]:
    """Names of the target files shipped with hetcc (``hetcc targets`` lists them)."""
    root = resources.files(_PACKAGE)
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".toml"))


def load_target(name_or_path: str | Path) -> Target:
    """A built-in target by name (``hikey970``) or a user's TOML file by path."""
    return load_bytes(*target_source(name_or_path))


def target_source(name_or_path: str | Path) -> tuple[bytes, Path, str]:
    """The bytes of a built-in target (by name) or a user's TOML file (by path, at most
    MAX_TARGET_BYTES + 1 read), with its path and the label errors name it by."""
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
        return res.read_bytes(), Path(str(res)), f"{s}.toml"
    path = Path(name_or_path)
    if not os.path.lexists(path):
        raise TargetError(f"{path}: target file not found; built-in targets are "
                          f"{', '.join(builtin_targets())}")
    from hetcc.core.read import read_regular

    data = read_regular(path, str(path), MAX_TARGET_BYTES, error=TargetError, fix="give a board file (.toml)",
                        noun="the target file",
                        too_large=f"{path}: larger than {MAX_TARGET_BYTES >> 10} KiB; a board file is a few KiB "
                                  "(is this the right file?)")
    return data, path, str(path)


def load_bytes(data: bytes, path: Path, label: str) -> Target:
    """Parse, validate and build a target from the bytes of its file (``label`` names it in errors)."""
    if len(data) > MAX_TARGET_BYTES:
        raise TargetError(f"{label}: larger than {MAX_TARGET_BYTES >> 10} KiB; a board file is a few KiB "
                          "(is this the right file?)")
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise TargetError(f"{label}: not valid TOML: not UTF-8 text (byte {e.start}); save it as UTF-8") from None
    except tomllib.TOMLDecodeError as e:
        raise TargetError(f"{label}: not valid TOML: {e}") from None
    except ValueError:   # int() of an integer literal of thousands of digits
        raise TargetError(f"{label}: not valid TOML: an integer of thousands of digits (TOML integers are "
                          "64-bit); give a realistic value") from None
    except RecursionError:
        raise TargetError(f"{label}: not valid TOML for a board: arrays or inline tables nested hundreds of "
                          "levels deep; a board file nests at most 4") from None
    target = parse(doc, path, hashlib.sha256(data).hexdigest(), label)
    logger.debug("loaded target %s from %s (%d devices, %d states)", target.name, path,
                 len(target.devices), len(target.states()))
    return target


__all__ = ["builtin_targets", "load_bytes", "load_target", "target_source"]
