"""Read and check ``manifest.json`` (schema ``hetcc.manifest/1``), the schedule a compile writes.

Structure is checked against ``manifest.schema.json`` (with ``jsonschema`` when it is installed,
else with a small built-in checker of the same schema subset, so a board needs neither), then
the cross-references the schema cannot express: slice inputs come from the model or from an
earlier slice, every model output is produced by exactly one slice, paths stay inside the
artifact directory.
"""
from __future__ import annotations

import copy
import functools
import hashlib
import json
import logging
import os
import re
from pathlib import Path, PurePosixPath
from typing import Any, Iterable

from .errors import ManifestError

__all__ = [
    "SCHEMA_ID",
    "MANIFEST_NAME",
    "load_schema",
    "validate_manifest",
    "load_manifest",
    "slice_path",
    "sha256_file",
]

logger = logging.getLogger(__name__)

SCHEMA_ID = "hetcc.manifest/1"
MANIFEST_NAME = "manifest.json"
_SCHEMA_FILE = Path(__file__).with_name("manifest.schema.json")


@functools.lru_cache(maxsize=1)
def _schema() -> dict:
    with open(_SCHEMA_FILE, encoding="utf-8") as f:
        return json.load(f)


def load_schema() -> dict:
    """The manifest JSON Schema (draft 2020-12) as a fresh dict."""
    return copy.deepcopy(_schema())


# ---------------------------------------------------------------------------------------------
# structural validation


def _fmt_path(parts: Iterable[Any]) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else str(p)
    return out or "(top level)"


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _type_name(value: Any) -> str:
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


def _is_type(value: Any, name: str) -> bool:
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if name == "integer":
        if isinstance(value, bool):
            return False
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "string":
        return isinstance(value, str)
    if name == "array":
        return isinstance(value, list)
    if name == "object":
        return isinstance(value, dict)
    raise ValueError(f"unsupported schema type {name!r}")


def _describe(validator: str, value: Any, schema_value: Any, instance: Any, schema: dict) -> str:
    """One readable clause for a failed keyword (shared by both validation back ends)."""
    if validator == "type":
        names = schema_value if isinstance(schema_value, list) else [schema_value]
        return f"expected {' or '.join(names)}, got {_type_name(instance)} {_short(instance)}"
    if validator == "enum":
        return f"{_short(instance)} is not one of {', '.join(map(_short, schema_value))}"
    if validator == "const":
        return f"expected {_short(schema_value)}, got {_short(instance)}"
    if validator == "minimum":
        return f"{_short(instance)} is below the minimum {schema_value}"
    if validator == "minItems":
        return f"needs at least {schema_value} item(s), got {len(instance)}"
    if validator == "minLength":
        return "must not be empty" if schema_value == 1 else f"shorter than {schema_value}"
    if validator == "pattern":
        if schema_value == "^[0-9a-f]{64}$":
            return f"{_short(instance)} is not a lowercase hex sha256 (64 digits)"
        return f"{_short(instance)} does not match {schema_value}"
    if validator == "anyOf":
        options = []
        for sub in schema.get("anyOf", ()):
            if "const" in sub:
                options.append(_short(sub["const"]))
            elif "type" in sub:
                options.append(sub["type"] if isinstance(sub["type"], str) else " or ".join(sub["type"]))
        if options:
            return f"expected {' or '.join(options)}, got {_type_name(instance)} {_short(instance)}"
        return f"{_short(instance)} is not valid here"
    return str(value)


def _error(source: str, path: Iterable[Any], clause: str) -> ManifestError:
    return ManifestError(f"{source}: {_fmt_path(path)}: {clause}")


def _jsonschema_check(doc: Any, source: str) -> None:
    import jsonschema  # noqa: PLC0415  (optional dependency)
    from jsonschema.exceptions import best_match  # noqa: PLC0415

    schema = _schema()
    validator = jsonschema.Draft202012Validator(schema)
    err = best_match(validator.iter_errors(doc))
    if err is None:
        return
    path = list(err.absolute_path)
    if err.validator == "required":
        missing = [k for k in err.validator_value if k not in err.instance]
        raise _error(source, path + [missing[0]], "required key is missing")
    if err.validator == "additionalProperties":
        allowed = set(err.schema.get("properties", {}))
        extra = sorted(k for k in err.instance if k not in allowed)
        raise _error(source, path + [extra[0]], "unexpected key (not in hetcc.manifest/1)")
    clause = _describe(err.validator, err.message, err.validator_value, err.instance, err.schema)
    raise _error(source, path, clause)


def _resolve_ref(ref: str, root: dict) -> dict:
    if not ref.startswith("#/"):
        raise ValueError(f"unsupported $ref {ref!r}")
    node: Any = root
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def _builtin_check(inst: Any, schema: dict, path: list, root: dict, source: str) -> None:
    """The schema subset manifest.schema.json uses, for boards without jsonschema."""
    if "$ref" in schema:
        _builtin_check(inst, _resolve_ref(schema["$ref"], root), path, root, source)
    if "anyOf" in schema:
        for sub in schema["anyOf"]:
            try:
                _builtin_check(inst, sub, path, root, source)
                break
            except ManifestError:
                continue
        else:
            raise _error(source, path, _describe("anyOf", None, None, inst, schema))
    if "const" in schema and inst != schema["const"]:
        raise _error(source, path, _describe("const", None, schema["const"], inst, schema))
    if "enum" in schema and inst not in schema["enum"]:
        raise _error(source, path, _describe("enum", None, schema["enum"], inst, schema))
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is_type(inst, t) for t in types):
            raise _error(source, path, _describe("type", None, schema["type"], inst, schema))
    if isinstance(inst, dict):
        for key in schema.get("required", ()):
            if key not in inst:
                raise _error(source, path + [key], "required key is missing")
        props = schema.get("properties", {})
        if schema.get("additionalProperties", True) is False:
            for key in inst:
                if key not in props:
                    raise _error(source, path + [key], "unexpected key (not in hetcc.manifest/1)")
        for key, sub in props.items():
            if key in inst:
                _builtin_check(inst[key], sub, path + [key], root, source)
    if isinstance(inst, list):
        if "minItems" in schema and len(inst) < schema["minItems"]:
            raise _error(source, path, _describe("minItems", None, schema["minItems"], inst, schema))
        if "items" in schema:
            for i, item in enumerate(inst):
                _builtin_check(item, schema["items"], path + [i], root, source)
    if isinstance(inst, str):
        if "minLength" in schema and len(inst) < schema["minLength"]:
            raise _error(source, path, _describe("minLength", None, schema["minLength"], inst, schema))
        if "pattern" in schema and not re.search(schema["pattern"], inst):
            raise _error(source, path, _describe("pattern", None, schema["pattern"], inst, schema))
    if _is_type(inst, "number") and "minimum" in schema and inst < schema["minimum"]:
        raise _error(source, path, _describe("minimum", None, schema["minimum"], inst, schema))


def _structural_check(doc: Any, source: str, use_jsonschema: bool | None = None) -> None:
    if use_jsonschema is None:
        try:
            import jsonschema  # noqa: F401, PLC0415
        except ImportError:
            use_jsonschema = False
        else:
            use_jsonschema = True
    if use_jsonschema:
        _jsonschema_check(doc, source)
    else:
        schema = _schema()
        _builtin_check(doc, schema, [], schema, source)


# ---------------------------------------------------------------------------------------------
# cross-reference checks


def _check_relative_path(rel: str, source: str, key: list) -> None:
    bad = (
        "\\" in rel
        or rel.startswith("/")
        or re.match(r"^[A-Za-z]:", rel) is not None
        or os.path.isabs(rel)
        or ".." in PurePosixPath(rel).parts
    )
    if bad:
        raise _error(
            source, key,
            f"{rel!r} must be a relative path inside the artifact directory "
            "(no '/', drive, '\\' or '..' prefix parts); recompile",
        )


def _spec_str(spec: dict) -> str:
    return f"{spec['dtype']}{list(spec['shape'])}"


def _check_consistency(doc: dict, source: str) -> None:
    model = doc["model"]
    model_inputs: dict[str, dict] = {}
    for i, spec in enumerate(model["inputs"]):
        if spec["name"] in model_inputs:
            raise _error(source, ["model", "inputs", i, "name"], f"duplicate input {spec['name']!r}")
        model_inputs[spec["name"]] = spec

    producer: dict[str, tuple[int, dict]] = {}  # tensor name -> (slice id, spec)
    ids_seen: set[int] = set()
    files_seen: set[str] = set()
    for si, sl in enumerate(doc["slices"]):
        sid = sl["id"]
        if sid in ids_seen:
            raise _error(source, ["slices", si, "id"], f"duplicate slice id {sid}")
        _check_relative_path(sl["file"], source, ["slices", si, "file"])
        norm = str(PurePosixPath(sl["file"]))
        if norm in files_seen:
            raise _error(source, ["slices", si, "file"], f"{sl['file']!r} is used by two slices")
        files_seen.add(norm)
        if sl["first_layer"] > sl["last_layer"]:
            raise _error(
                source, ["slices", si, "last_layer"],
                f"last_layer {sl['last_layer']} is before first_layer {sl['first_layer']}",
            )
        names_in: set[str] = set()
        for ii, spec in enumerate(sl["inputs"]):
            key = ["slices", si, "inputs", ii]
            name, src = spec["name"], spec["source"]
            if name in names_in:
                raise _error(source, key + ["name"], f"duplicate input {name!r}")
            names_in.add(name)
            if src == "model":
                ref = model_inputs.get(name)
                if ref is None:
                    raise _error(source, key + ["source"], f"{name!r} is not a model input")
                where = "model input"
            else:
                if src not in ids_seen:
                    raise _error(
                        source, key + ["source"],
                        f"slice {src} does not run before slice {sid} (slices run in list order)",
                    )
                got = producer.get(name)
                if got is None or got[0] != src:
                    raise _error(source, key + ["source"], f"{name!r} is not an output of slice {src}")
                ref = got[1]
                where = f"output of slice {src}"
            if ref["dtype"] != spec["dtype"] or list(ref["shape"]) != list(spec["shape"]):
                raise _error(
                    source, key,
                    f"{name!r} is {_spec_str(spec)} here but {_spec_str(ref)} as the {where}",
                )
        for oi, spec in enumerate(sl["outputs"]):
            name = spec["name"]
            key = ["slices", si, "outputs", oi, "name"]
            if name in producer:
                raise _error(source, key, f"{name!r} is already produced by slice {producer[name][0]}")
            if name in model_inputs:
                raise _error(source, key, f"{name!r} is also a model input")
            producer[name] = (sid, spec)
        ids_seen.add(sid)

    out_names: set[str] = set()
    for oi, spec in enumerate(model["outputs"]):
        key = ["model", "outputs", oi]
        if spec["name"] in out_names:
            raise _error(source, key + ["name"], f"duplicate output {spec['name']!r}")
        out_names.add(spec["name"])
        got = producer.get(spec["name"])
        if got is None:
            raise _error(source, key, f"model output {spec['name']!r} is not produced by any slice")
        ref = got[1]
        if ref["dtype"] != spec["dtype"] or list(ref["shape"]) != list(spec["shape"]):
            raise _error(
                source, key,
                f"{spec['name']!r} is {_spec_str(spec)} but slice {got[0]} produces {_spec_str(ref)}",
            )


def validate_manifest(doc: Any, source: str = MANIFEST_NAME, *, use_jsonschema: bool | None = None) -> None:
    """Raise ManifestError (naming ``source`` and the key path) unless ``doc`` is a valid manifest.

    ``use_jsonschema``: None = use jsonschema when importable; False forces the built-in checker.
    """
    if not isinstance(doc, dict):
        raise ManifestError(f"{source}: expected a JSON object at the top level, got {_type_name(doc)}")
    schema_id = doc.get("schema")
    if schema_id != SCHEMA_ID:
        if schema_id is None:
            raise ManifestError(f"{source}: schema: required key is missing; not a hetcc manifest?")
        raise ManifestError(
            f"{source}: schema: {_short(schema_id)} is not supported by this runtime "
            f"(it reads {SCHEMA_ID}); recompile with this hetcc version"
        )
    _structural_check(doc, source, use_jsonschema)
    _check_consistency(doc, source)


# ---------------------------------------------------------------------------------------------
# loading


def _artifact_root(artifact_dir: str | os.PathLike) -> Path:
    root = Path(artifact_dir)
    if root.is_file() and root.name == MANIFEST_NAME:
        root = root.parent
    if not root.exists():
        raise ManifestError(f"{artifact_dir}: no such directory; pass the directory hetcc compile wrote (-o)")
    if not root.is_dir():
        raise ManifestError(f"{artifact_dir}: not a directory; pass the directory hetcc compile wrote (-o)")
    return root


def slice_path(root: str | os.PathLike, rel: str, source: str = MANIFEST_NAME, key: str = "file") -> Path:
    """The absolute path of an artifact file, refusing any that leaves the artifact directory."""
    _check_relative_path(rel, source, [key])
    base = Path(root).resolve()
    full = (base / rel).resolve()
    try:
        full.relative_to(base)
    except ValueError:
        raise ManifestError(
            f"{source}: {key}: {rel!r} resolves outside the artifact directory (a symlink?); recompile"
        ) from None
    return full


def load_manifest(artifact_dir: str | os.PathLike) -> dict:
    """Read, validate and return the manifest of a compile output directory."""
    root = _artifact_root(artifact_dir)
    mpath = root / MANIFEST_NAME
    shown = os.path.join(str(artifact_dir), MANIFEST_NAME) if Path(artifact_dir) == root else str(artifact_dir)
    if not mpath.is_file():
        raise ManifestError(f"{artifact_dir}: no {MANIFEST_NAME}; is this a hetcc compile output directory?")
    try:
        text = mpath.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ManifestError(f"{shown}: cannot read ({e}); recompile") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ManifestError(
            f"{shown}: not valid JSON (line {e.lineno} column {e.colno}: {e.msg}); "
            "the file is damaged, recompile"
        ) from None
    validate_manifest(doc, shown)
    for i, sl in enumerate(doc["slices"]):
        slice_path(root, sl["file"], shown, f"slices[{i}].file")
    logger.debug("loaded %s: %d slice(s)", shown, len(doc["slices"]))
    return doc


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
