"""Parsing a ``manifest.json`` document into the typed dataclasses of ``model``: every key and
value checked against the field's type and constraints, with the key path in every message,
then the cheap count limits before and the cross-reference checks (``checks``) after."""
from __future__ import annotations

import dataclasses
import re
import typing
from typing import Any, Literal, Mapping

from ..errors import ManifestError
from .checks import check_consistency
from .messages import manifest_error, short, type_name
from .model import (MANIFEST_NAME, MAX_SLICES, MAX_VARIANTS, MAX_WORKLOAD_MODELS, SCHEMA_ID, SHA256_PATTERN,
                    SYSFS_PATTERN, Manifest, field_types, is_union, required)


def _expect(tp: Any) -> str:
    """How a type reads in an error message."""
    if tp is type(None):
        return "null"
    if tp is bool:
        return "boolean"
    if tp is int:
        return "integer"
    if tp is float:
        return "number"
    if tp is str:
        return "string"
    if typing.get_origin(tp) is Literal:
        return " or ".join(short(v) for v in typing.get_args(tp))
    if is_union(tp):
        return " or ".join(_expect(a) for a in typing.get_args(tp))
    if typing.get_origin(tp) in (tuple, list):
        return "array"
    if typing.get_origin(tp) is dict or tp is dict or dataclasses.is_dataclass(tp):
        return "object"
    return "any"


class _Mismatch(Exception):
    """A value does not have the type (used to try the arms of a union)."""


def _matches(pattern: str, value: str) -> bool:
    """JSON Schema's pattern match, where an end-anchored pattern's '$' does not match before a
    trailing newline (Python's '$' does)."""
    return (re.fullmatch if pattern.endswith("$") else re.search)(pattern, value) is not None


def _check_constraints(value: Any, meta: Mapping[str, Any], source: str, path: list) -> None:
    if isinstance(value, str):
        if "minLength" in meta and len(value) < meta["minLength"]:
            raise manifest_error(source, path, "must not be empty" if meta["minLength"] == 1
                                 else f"shorter than {meta['minLength']}")
        pattern = meta.get("pattern")
        if pattern and not _matches(pattern, value):
            if pattern == SHA256_PATTERN:
                raise manifest_error(source, path, f"{short(value)} is not a lowercase hex sha256 (64 digits)")
            if pattern == SYSFS_PATTERN:
                raise manifest_error(source, path, f"{short(value)} is not a path under /sys without '.' or '..' "
                                     "parts (the runtime writes nowhere else); recompile with a valid target file")
            raise manifest_error(source, path, f"{short(value)} does not match {pattern}")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in meta and value < meta["minimum"]:
            raise manifest_error(source, path, f"{short(value)} is below the minimum {meta['minimum']}; recompile")
        if "maximum" in meta and value > meta["maximum"]:
            raise manifest_error(source, path, f"{short(value)} is above the maximum {meta['maximum']}; recompile")
    elif isinstance(value, (list, tuple)):
        if "minItems" in meta and len(value) < meta["minItems"]:
            raise manifest_error(source, path, f"needs at least {meta['minItems']} item(s), got {len(value)}")


def _parse(tp: Any, value: Any, source: str, path: list, meta: Mapping[str, Any]) -> Any:
    """``value`` (parsed JSON) as type ``tp``; ManifestError naming the key path otherwise."""
    if tp is Any:
        return value
    if is_union(tp):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        for arm in args:
            if arm is type(None):
                continue
            try:
                return _parse_strict(arm, value, source, path, meta)
            except _Mismatch:
                continue
        raise manifest_error(source, path, f"expected {_expect(tp)}, got {type_name(value)} {short(value)}")
    try:
        return _parse_strict(tp, value, source, path, meta)
    except _Mismatch:
        if typing.get_origin(tp) is Literal:
            allowed = typing.get_args(tp)
            if len(allowed) == 1:
                raise manifest_error(source, path, f"expected {short(allowed[0])}, got {short(value)}") from None
            raise manifest_error(source, path,
                                 f"{short(value)} is not one of {', '.join(map(short, allowed))}") from None
        raise manifest_error(source, path, f"expected {_expect(tp)}, got {type_name(value)} {short(value)}") from None


def _parse_strict(tp: Any, value: Any, source: str, path: list, meta: Mapping[str, Any]) -> Any:
    """As ``_parse`` but raising _Mismatch when the value's JSON type does not fit ``tp``."""
    origin = typing.get_origin(tp)
    if tp is bool:
        if not isinstance(value, bool):
            raise _Mismatch
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Mismatch
        if isinstance(value, float):
            if not value.is_integer():
                raise _Mismatch
            value = int(value)
        _check_constraints(value, meta, source, path)
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Mismatch
        _check_constraints(value, meta, source, path)
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise _Mismatch
        _check_constraints(value, meta, source, path)
        return value
    if origin is Literal:
        for allowed in typing.get_args(tp):
            if type(value) is type(allowed) and value == allowed:
                return value
        raise _Mismatch
    if origin in (tuple, list):
        if not isinstance(value, list):
            raise _Mismatch
        _check_constraints(value, meta, source, path)
        (item_tp, *_) = typing.get_args(tp)
        item_meta = meta.get("item", {})
        return tuple(_parse(item_tp, v, source, path + [i], item_meta) for i, v in enumerate(value))
    if origin is dict or tp is dict:
        if not isinstance(value, dict):
            raise _Mismatch
        args = typing.get_args(tp)
        val_tp = args[1] if args else Any
        out = {}
        for k, v in value.items():
            if "key_pattern" in meta and not re.search(meta["key_pattern"], k):
                raise manifest_error(source, path + [k],
                                     f"{k!r} is not a valid name (it must not be empty or start with a space)")
            out[k] = _parse(val_tp, v, source, path + [k], {})
        return out
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise _Mismatch
        hints = field_types(tp)
        fields = {f.name: f for f in dataclasses.fields(tp)}
        for key in value:
            if key not in fields:
                raise manifest_error(source, path + [key], f"unexpected key (not in {SCHEMA_ID})")
        kwargs = {}
        for name, f in fields.items():
            if name not in value:
                if required(f):
                    raise manifest_error(source, path + [name], "required key is missing")
                continue
            kwargs[name] = _parse(hints[name], value[name], source, path + [name], f.metadata)
        return tp(**kwargs)
    raise TypeError(f"manifest field type {tp!r} is not supported")  # pragma: no cover


def parse_manifest(doc: Any, source: str = MANIFEST_NAME) -> Manifest:
    """The typed manifest of a parsed ``manifest.json``; ManifestError (naming ``source`` and
    the key path) unless it is a valid ``hetcc.manifest/2`` document."""
    if not isinstance(doc, dict):
        raise ManifestError(f"{source}: expected a JSON object at the top level, got {type_name(doc)}")
    schema_id = doc.get("schema")
    if schema_id != SCHEMA_ID:
        if schema_id is None:
            raise ManifestError(f"{source}: schema: required key is missing; not a hetcc manifest?")
        if isinstance(schema_id, str) and schema_id.startswith("hetcc.manifest/"):
            raise ManifestError(
                f"{source}: schema: this artifact is {schema_id}, an older or newer format than this "
                f"runtime reads ({SCHEMA_ID}); recompile the model with this hetcc version")
        raise ManifestError(
            f"{source}: schema: {short(schema_id)} is not supported by this runtime "
            f"(it reads {SCHEMA_ID}); recompile with this hetcc version")
    check_counts(doc, source)
    manifest = _parse(Manifest, doc, source, [], {})
    check_consistency(manifest, source)
    return manifest


def check_counts(doc: dict, source: str) -> None:
    """The cheap limits, before the typed parse: MAX_VARIANTS, MAX_SLICES per variant,
    MAX_WORKLOAD_MODELS (what is not a dict or list here is left to the parse to name)."""
    variants = doc.get("variants")
    if isinstance(variants, dict):
        if len(variants) > MAX_VARIANTS:
            raise manifest_error(source, ["variants"],
                                 f"{len(variants)} variants; at most {MAX_VARIANTS} are read (hetcc compile "
                                 "--variants writes one per planner); the manifest is damaged, recompile")
        for name, v in variants.items():
            slices = v.get("slices") if isinstance(v, dict) else None
            if isinstance(slices, list) and len(slices) > MAX_SLICES:
                raise manifest_error(source, ["variants", name, "slices"],
                                     f"{len(slices)} slices; at most {MAX_SLICES} are read (a plan has at most one "
                                     "per layer, and far fewer in practice); the manifest is damaged, recompile")
    workload = doc.get("workload")
    models = workload.get("models") if isinstance(workload, dict) else None
    if isinstance(models, list) and len(models) > MAX_WORKLOAD_MODELS:
        raise manifest_error(source, ["workload", "models"], f"{len(models)} models; at most {MAX_WORKLOAD_MODELS} "
                             "are read; the manifest is damaged, recompile")


def validate_manifest(doc: Any, source: str = MANIFEST_NAME) -> None:
    """Raise ManifestError (naming ``source`` and the key path) unless ``doc`` is a valid manifest
    (a parsed JSON document or a ``Manifest``)."""
    if isinstance(doc, Manifest):
        doc = doc.to_json()
    parse_manifest(doc, source)
