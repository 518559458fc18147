"""The manifest's JSON Schema (draft 2020-12), generated from the dataclasses of ``model``: their
field types, defaults (required or not), docstrings and field metadata (descriptions and
constraints). ``python -m hetcc.runtime.manifest`` prints it; the committed
``runtime/manifest.schema.json`` (``model.SCHEMA_FILE``) is that output, and a test checks it is
current."""
from __future__ import annotations

import dataclasses
import functools
import json
import typing
from typing import Any, Literal, Mapping

from .model import SCHEMA_ID, Manifest, field_types, is_union, required

_CONSTRAINT_KEYS = ("minimum", "maximum", "minLength", "minItems", "pattern")


def _schema_of(tp: Any, meta: Mapping[str, Any], defs: dict) -> dict:
    constraints = {k: meta[k] for k in _CONSTRAINT_KEYS if k in meta}
    if tp is Any:
        return {}
    if is_union(tp):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(tp))
        subs = [_schema_of(a, meta, defs) for a in args]
        if nullable and len(subs) == 1 and "type" in subs[0] and isinstance(subs[0]["type"], str):
            return {**subs[0], "type": [subs[0]["type"], "null"]}
        if nullable:
            subs.append({"type": "null"})
        return {"anyOf": subs}
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if tp in simple:
        return {"type": simple[tp], **constraints}
    origin = typing.get_origin(tp)
    if origin is Literal:
        values = list(typing.get_args(tp))
        return {"const": values[0]} if len(values) == 1 else {"enum": values}
    if origin in (tuple, list):
        (item_tp, *_) = typing.get_args(tp)
        out = {"type": "array", **constraints}
        out["items"] = _schema_of(item_tp, meta.get("item", {}), defs)
        return out
    if origin is dict or tp is dict:
        args = typing.get_args(tp)
        out: dict = {"type": "object"}
        if "key_pattern" in meta:
            out["propertyNames"] = {"pattern": meta["key_pattern"]}
        if args and args[1] is not Any:
            out["additionalProperties"] = _schema_of(args[1], {}, defs)
        return out
    if dataclasses.is_dataclass(tp):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # placeholder against recursion
            defs[name] = _dataclass_schema(tp, defs)
        return {"$ref": f"#/$defs/{name}"}
    raise TypeError(f"manifest field type {tp!r} is not supported")  # pragma: no cover


def _dataclass_schema(cls: type, defs: dict) -> dict:
    hints = field_types(cls)
    props = {}
    for f in dataclasses.fields(cls):
        sub = _schema_of(hints[f.name], f.metadata, defs)
        if "description" in f.metadata:
            sub = {"description": f.metadata["description"], **sub}
        props[f.name] = sub
    out: dict = {"type": "object", "additionalProperties": False,
                 "required": [f.name for f in dataclasses.fields(cls) if required(f)],
                 "properties": props}
    doc = (cls.__doc__ or "").strip()
    if doc and not doc.startswith(cls.__name__ + "("):  # skip the dataclass-generated signature
        out = {"description": " ".join(doc.split()), **out}
    return out


@functools.lru_cache(maxsize=1)
def _generated_schema() -> str:
    defs: dict = {}
    top = _dataclass_schema(Manifest, defs)
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://hetcc.dev/schemas/hetcc.manifest-2.json",
        "title": SCHEMA_ID,
        "description": "GENERATED from the dataclasses in hetcc/runtime/manifest.py "
                       "(python -m hetcc.runtime.manifest > manifest.schema.json); do not edit. "
                       + top.pop("description", ""),
        **top,
        "$defs": dict(sorted(defs.items())),
    }
    return json.dumps(schema, indent=2) + "\n"


def manifest_schema() -> dict:
    """The manifest JSON Schema (draft 2020-12), generated from the dataclasses."""
    return json.loads(_generated_schema())


def schema_text() -> str:
    """``manifest_schema()`` as the committed ``manifest.schema.json`` holds it."""
    return _generated_schema()


def load_schema() -> dict:
    """The manifest JSON Schema as a fresh dict (the generated one; equal to the shipped file)."""
    return manifest_schema()
