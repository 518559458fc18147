from __future__ import annotations

import copy
import json

import pytest

from hetcc.runtime import SCHEMA_ID, ManifestError, load_manifest, load_schema, validate_manifest

try:
    import jsonschema  # noqa: F401
except ImportError:  # a board-like environment: only the built-in checker
    HAVE_JSONSCHEMA = False
else:
    HAVE_JSONSCHEMA = True

BACKENDS = [
    pytest.param(True, id="jsonschema", marks=pytest.mark.skipif(not HAVE_JSONSCHEMA, reason="no jsonschema")),
    pytest.param(False, id="builtin"),
]


def test_schema_is_valid_draft_2020_12():
    jsonschema = pytest.importorskip("jsonschema")
    schema = load_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["schema"]["const"] == SCHEMA_ID
    schema["title"] = "mutated"
    assert load_schema()["title"] == SCHEMA_ID  # callers get a copy


@pytest.mark.parametrize("use_jsonschema", BACKENDS)
def test_valid_manifest_passes(tiny_manifest, use_jsonschema):
    validate_manifest(tiny_manifest, use_jsonschema=use_jsonschema)


def test_load_manifest_returns_doc(tiny):
    doc = load_manifest(tiny.dir)
    assert doc["schema"] == SCHEMA_ID and len(doc["slices"]) == 3
    assert load_manifest(tiny.manifest_path) == doc  # the manifest file itself is accepted too


def _del(path):
    def f(doc):
        *parents, last = path
        node = doc
        for p in parents:
            node = node[p]
        del node[last]
    return f


def _set(path, value):
    def f(doc):
        *parents, last = path
        node = doc
        for p in parents:
            node = node[p]
        node[last] = value
    return f


# (edit, key path the message must name, extra words it must contain)
STRUCTURAL = [
    (_del(["slices", 0, "sha256"]), "slices[0].sha256", "missing"),
    (_del(["runtime"]), "runtime", "missing"),
    (_set(["runtime", "intra_op_num_threads"], "two"), "runtime.intra_op_num_threads", "integer"),
    (_set(["runtime", "graph_optimization_level"], "max"), "runtime.graph_optimization_level", "'max'"),
    (_set(["model", "inputs", 0, "dtype"], "float"), "model.inputs[0].dtype", "'float'"),
    (_set(["model", "inputs", 0, "shape"], [2, -1]), "model.inputs[0].shape[1]", "minimum"),
    (_set(["slices", 1, "sha256"], "ABC"), "slices[1].sha256", "sha256"),
    (_set(["slices", 2, "inputs", 0, "source"], "slice0"), "slices[2].inputs[0].source",
     "expected 'model' or integer, got string 'slice0'"),
    (_set(["objective", "metric"], "speed"), "objective.metric", "'speed'"),
    (_set(["predicted", "meets_deadline"], "yes"), "predicted.meets_deadline", "boolean"),
    (_set(["surprise"], 1), "surprise", "unexpected key"),
    (_set(["slices", 0, "colour"], "red"), "slices[0].colour", "unexpected key"),
    (_set(["slices"], []), "slices", "at least 1"),
    (_set(["target", "kind"], True), "target.kind", "True"),
]


@pytest.mark.parametrize("use_jsonschema", BACKENDS)
@pytest.mark.parametrize("edit,key,words", STRUCTURAL, ids=[k for _, k, _ in STRUCTURAL])
def test_structural_errors_name_the_key(tiny_manifest, use_jsonschema, edit, key, words):
    doc = copy.deepcopy(tiny_manifest)
    edit(doc)
    with pytest.raises(ManifestError) as info:
        validate_manifest(doc, "build/manifest.json", use_jsonschema=use_jsonschema)
    msg = str(info.value)
    assert msg.startswith(f"build/manifest.json: {key}: "), msg
    assert words.lower() in msg.lower(), msg
    assert "\n" not in msg


def test_extra_keys_allowed_in_free_form_blocks(tiny_manifest):
    tiny_manifest["planner"]["options"] = {"anything": [1, 2]}
    tiny_manifest["slices"][0]["provider_options"] = {"device_id": 0}
    tiny_manifest["hardware"] = {"big_cores": 4, "emc_mhz": 1866}
    validate_manifest(tiny_manifest, use_jsonschema=HAVE_JSONSCHEMA)
    validate_manifest(tiny_manifest, use_jsonschema=False)


CONSISTENCY = [
    (_set(["slices", 1, "inputs", 0, "source"], 2), "slices[1].inputs[0].source", "does not run before"),
    (_set(["slices", 1, "inputs", 0, "source"], 1), "slices[1].inputs[0].source", "does not run before"),
    (_set(["slices", 2, "inputs", 0, "name"], "h1"), "slices[2].inputs[0].source", "not an output of slice 1"),
    (_set(["slices", 1, "inputs", 1, "name"], "z"), "slices[1].inputs[1].source", "not a model input"),
    (_set(["slices", 1, "inputs", 0, "shape"], [2, 4]), "slices[1].inputs[0]", "float32[2, 8] as the output of slice 0"),
    (_set(["model", "outputs", 0, "name"], "nowhere"), "model.outputs[0]", "not produced by any slice"),
    (_set(["model", "outputs", 1, "dtype"], "float16"), "model.outputs[1]", "slice 1 produces float32"),
    (_set(["slices", 2, "outputs", 0, "name"], "r"), "slices[2].outputs[0].name", "already produced by slice 1"),
    (_set(["slices", 2, "id"], 0), "slices[2].id", "duplicate slice id 0"),
    (_set(["slices", 2, "file"], "slices/00_big.onnx"), "slices[2].file", "used by two slices"),
    (_set(["slices", 0, "first_layer"], 3), "slices[0].last_layer", "before first_layer"),
    (_set(["slices", 0, "file"], "../x.onnx"), "slices[0].file", "relative path inside"),
]


@pytest.mark.parametrize("edit,key,words", CONSISTENCY, ids=[f"{k}-{w}" for _, k, w in CONSISTENCY])
def test_cross_reference_errors(tiny_manifest, edit, key, words):
    doc = copy.deepcopy(tiny_manifest)
    edit(doc)
    with pytest.raises(ManifestError) as info:
        validate_manifest(doc, "m.json")
    msg = str(info.value)
    assert msg.startswith(f"m.json: {key}: "), msg
    assert words in msg, msg


# --- load_manifest: what is wrong with the directory ------------------------------------------


def test_missing_directory(tmp_path):
    with pytest.raises(ManifestError, match="no such directory"):
        load_manifest(tmp_path / "nope")


def test_not_a_directory(tmp_path):
    f = tmp_path / "model.onnx"
    f.write_bytes(b"")
    with pytest.raises(ManifestError, match="not a directory"):
        load_manifest(f)


def test_directory_without_manifest(tmp_path):
    with pytest.raises(ManifestError, match="no manifest.json; is this a hetcc compile output directory"):
        load_manifest(tmp_path)


def test_bad_json(tiny):
    tiny.manifest_path.write_text('{"schema": "hetcc.manifest/1",')
    with pytest.raises(ManifestError, match=r"manifest\.json: not valid JSON \(line 1"):
        load_manifest(tiny.dir)


def test_wrong_schema_id(tiny):
    tiny.edit(lambda d: d.update(schema="hetcc.manifest/2"))
    with pytest.raises(ManifestError, match=r"manifest\.json: schema: 'hetcc.manifest/2' is not supported"):
        load_manifest(tiny.dir)


def test_not_an_object(tiny):
    tiny.manifest_path.write_text(json.dumps([1, 2]))
    with pytest.raises(ManifestError, match="expected a JSON object"):
        load_manifest(tiny.dir)


def test_error_class_is_self_contained():
    from hetcc.runtime.errors import ManifestError as E

    assert E is ManifestError and E.exit_code == 2
    assert E.__mro__[1] is Exception
