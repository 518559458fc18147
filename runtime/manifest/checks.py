"""The cross-references of a typed manifest that its types cannot express: slice inputs come
from the model or an earlier slice with the same dtype and shape, every model output is produced
exactly once, names and files are not used twice, a file shared by variants has one sha256, the
kind's blocks are there (and the other kind's are not), and every path stays relative and inside
the artifact directory."""
from __future__ import annotations

import os
import re
from pathlib import PurePosixPath
from typing import Any

from .messages import fmt_path, manifest_error
from .model import Manifest, ModelInfo, SliceInput, TensorSpec, Variant


def check_relative_path(rel: str, source: str, key: list) -> None:
    """ManifestError at ``key`` unless ``rel`` is a relative path with no '..' part, drive,
    backslash or control character (where it resolves is ``read.slice_path``'s question)."""
    if re.search(r"[\x00-\x1f\x7f]", rel):
        raise manifest_error(source, key, f"{rel!r} holds a control character (NUL, newline, ...), which no file "
                             "hetcc writes has; the manifest is damaged, recompile")
    bad = (
        "\\" in rel
        or rel.startswith("/")
        or re.match(r"^[A-Za-z]:", rel) is not None
        or os.path.isabs(rel)
        or ".." in PurePosixPath(rel).parts
    )
    if bad:
        raise manifest_error(
            source, key,
            f"{rel!r} must be a relative path inside the artifact directory "
            "(no '/', drive, '\\' or '..' prefix parts); recompile",
        )


def _spec_str(spec: TensorSpec | SliceInput) -> str:
    return f"{spec.dtype}{list(spec.shape)}"


def _check_variant(model: ModelInfo, variant: Variant, source: str, base: list) -> None:
    model_inputs: dict[str, TensorSpec] = {}
    for i, spec in enumerate(model.inputs):
        if spec.name in model_inputs:
            raise manifest_error(source, ["model", "inputs", i, "name"], f"duplicate input {spec.name!r}")
        model_inputs[spec.name] = spec

    producer: dict[str, tuple[int, TensorSpec]] = {}  # tensor name -> (slice id, spec)
    ids_seen: set[int] = set()
    files_seen: set[str] = set()
    for si, sl in enumerate(variant.slices):
        key0 = base + ["slices", si]
        sid = sl.id
        if sid in ids_seen:
            raise manifest_error(source, key0 + ["id"], f"duplicate slice id {sid}")
        check_relative_path(sl.file, source, key0 + ["file"])
        if sl.data is not None:
            check_relative_path(sl.data.file, source, key0 + ["data", "file"])
        norm = str(PurePosixPath(sl.file))
        if norm in files_seen:
            raise manifest_error(source, key0 + ["file"], f"{sl.file!r} is used by two slices")
        files_seen.add(norm)
        if sl.first_layer > sl.last_layer:
            raise manifest_error(source, key0 + ["last_layer"],
                                 f"last_layer {sl.last_layer} is before first_layer {sl.first_layer}")
        names_in: set[str] = set()
        for ii, spec in enumerate(sl.inputs):
            key = key0 + ["inputs", ii]
            name, src = spec.name, spec.source
            if name in names_in:
                raise manifest_error(source, key + ["name"], f"duplicate input {name!r}")
            names_in.add(name)
            if src == "model":
                ref: Any = model_inputs.get(name)
                if ref is None:
                    raise manifest_error(source, key + ["source"], f"{name!r} is not a model input")
                where = "model input"
            else:
                if src not in ids_seen:
                    raise manifest_error(source, key + ["source"],
                                         f"slice {src} does not run before slice {sid} (slices run in list order)")
                got = producer.get(name)
                if got is None or got[0] != src:
                    raise manifest_error(source, key + ["source"], f"{name!r} is not an output of slice {src}")
                ref = got[1]
                where = f"output of slice {src}"
            if ref.dtype != spec.dtype or tuple(ref.shape) != tuple(spec.shape):
                raise manifest_error(source, key,
                                     f"{name!r} is {_spec_str(spec)} here but {_spec_str(ref)} as the {where}")
        for oi, spec in enumerate(sl.outputs):
            name = spec.name
            key = key0 + ["outputs", oi, "name"]
            if name in producer:
                raise manifest_error(source, key, f"{name!r} is already produced by slice {producer[name][0]}")
            if name in model_inputs:
                raise manifest_error(source, key, f"{name!r} is also a model input")
            producer[name] = (sid, spec)
        ids_seen.add(sid)

    out_names: set[str] = set()
    for oi, spec in enumerate(model.outputs):
        key = ["model", "outputs", oi]
        if spec.name in out_names:
            raise manifest_error(source, key + ["name"], f"duplicate output {spec.name!r}")
        out_names.add(spec.name)
        got = producer.get(spec.name)
        if got is None:
            raise manifest_error(source, base + ["slices"], f"model output {spec.name!r} is not produced by any slice")
        if got[1].dtype != spec.dtype or tuple(got[1].shape) != tuple(spec.shape):
            raise manifest_error(source, key,
                                 f"{spec.name!r} is {_spec_str(spec)} but slice {got[0]} produces {_spec_str(got[1])}")


def check_consistency(m: Manifest, source: str) -> None:
    """ManifestError (naming ``source`` and the key path) at the first cross-reference that
    does not hold in a parsed manifest."""
    if m.kind == "model":
        for key, what in (("model", m.model), ("default_variant", m.default_variant)):
            if what is None:
                raise manifest_error(source, [key], "a model artifact needs this (it is null)")
        if not m.variants:
            raise manifest_error(source, ["variants"], "a model artifact needs at least one variant")
        if m.workload is not None:
            raise manifest_error(source, ["workload"], "must be null in a model artifact (kind 'model')")
        if m.default_variant not in m.variants:
            raise manifest_error(source, ["default_variant"],
                                 f"{m.default_variant!r} is not a variant (variants: {', '.join(m.variants)})")
        file_sha: dict[str, tuple[str, list]] = {}
        for vname, variant in m.variants.items():
            _check_variant(m.model, variant, source, ["variants", vname])
            for si, sl in enumerate(variant.slices):
                key = ["variants", vname, "slices", si, "sha256"]
                norm = str(PurePosixPath(sl.file))
                seen = file_sha.setdefault(norm, (sl.sha256, key))
                if seen[0] != sl.sha256:
                    raise manifest_error(source, key, f"{sl.file!r} has another sha256 at {fmt_path(seen[1])}")
        if m.policy is not None:
            check_relative_path(m.policy.file, source, ["policy", "file"])
    else:
        if m.workload is None:
            raise manifest_error(source, ["workload"], "a workload artifact needs this (it is null)")
        for key, value in (("model", m.model), ("default_variant", m.default_variant), ("policy", m.policy)):
            if value is not None:
                raise manifest_error(source, [key], "must be null in a workload artifact (kind 'workload')")
        if m.variants:
            raise manifest_error(source, ["variants"], "must be empty in a workload artifact (kind 'workload')")
        names: set[str] = set()
        for i, wm in enumerate(m.workload.models):
            if wm.name in names:
                raise manifest_error(source, ["workload", "models", i, "name"], f"duplicate model {wm.name!r}")
            names.add(wm.name)
            check_relative_path(wm.dir, source, ["workload", "models", i, "dir"])
        if m.workload.contention is not None:
            check_contention(m.workload.contention, names, source)


def check_contention(c: Any, names: set[str], source: str) -> None:
    """The contention block names exactly the workload's models, and every stage's device and
    every device's models are ones the block lists."""
    where = ["workload", "contention"]
    if set(c.models) != names:
        raise manifest_error(source, where + ["models"], f"names models {sorted(c.models)}, the workload has "
                             f"{sorted(names)}")
    for name, model in c.models.items():
        for i, st in enumerate(model.pipeline):
            if st.device not in c.devices:
                raise manifest_error(source, where + ["models", name, "pipeline", i, "device"],
                                     f"{st.device!r} is not one of the block's devices ({', '.join(c.devices)})")
            if st.stop <= st.first:
                raise manifest_error(source, where + ["models", name, "pipeline", i], "stop must exceed first")
    for dev, d in c.devices.items():
        for n in (*d.models, *d.busy):
            if n not in names:
                raise manifest_error(source, where + ["devices", dev], f"names model {n!r}, not one of the workload's")

