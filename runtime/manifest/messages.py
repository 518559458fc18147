"""How the manifest's readers name what they refuse: a key path (``variants.default.slices[0].file``),
a value cut short, a JSON type's name, and the ManifestError ``<source>: <key path>: <clause>``."""
from __future__ import annotations

import json
from typing import Any, Iterable

from ..errors import ManifestError


def fmt_path(parts: Iterable[Any]) -> str:
    """A key path as messages show it: ``variants.default.slices[0].file``."""
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else str(p)
    return out or "(top level)"


def short(value: Any, limit: int = 60) -> str:
    """A value as JSON (a string as its repr) on one line, cut to ``limit`` characters."""
    try:
        text = json.dumps(value) if not isinstance(value, str) else repr(value)
    except (TypeError, ValueError):
        text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def type_name(value: Any) -> str:
    """The JSON type of a parsed value (null, boolean, integer, number, string, array, object)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def manifest_error(source: str, path: Iterable[Any], clause: str) -> ManifestError:
    """``<source>: <key path>: <clause>``."""
    return ManifestError(f"{source}: {fmt_path(path)}: {clause}")
