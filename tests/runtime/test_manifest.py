from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import pytest

import hetcc.runtime.manifest as M
from hetcc.runtime import SCHEMA_ID, ManifestError, load_manifest, load_schema, validate_manifest

V = ["variants", "default"]   # the tiny artifact's one variant
VK = "variants.default."      # ... as error messages name it


def jsonschema_errors(doc):
    """The generated schema's verdict (None when jsonschema is not installed)."""
    try:
        import jsonschema
    except ImportError:
        return None
    return list(jsonschema.Draft202012Validator(load_schema()).iter_errors(doc))


def test_committed_schema_is_the_generated_one():
    committed = M.SCHEMA_FILE.read_text(encoding="utf-8")
    assert committed == M.schema_text(), (
        "runtime/manifest.schema.json is stale: python -m hetcc.runtime.manifest > runtime/manifest.schema.json")


def test_schema_is_valid_draft_2020_12():
    jsonschema = pytest.importorskip("jsonschema")
    schema = load_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["schema"]["const"] == SCHEMA_ID == "hetcc.manifest/2"
    schema["title"] = "mutated"
    assert load_schema()["title"] == SCHEMA_ID  # callers get a copy


def test_schema_covers_every_dataclass_field():
    schema = load_schema()
    for cls in (M.Manifest, M.Variant, M.SliceSpec, M.ModelInfo, M.Workload, M.ObjectiveInfo, M.PlannerInfo):
        props = schema["properties"] if cls is M.Manifest else schema["$defs"][cls.__name__]["properties"]
        assert list(props) == [f.name for f in dataclasses.fields(cls)]


def test_valid_manifest_passes(tiny_manifest):
    validate_manifest(tiny_manifest)
    assert jsonschema_errors(tiny_manifest) in (None, [])


def test_round_trip_through_dataclasses(tiny_manifest):
    m = M.parse_manifest(tiny_manifest)
    assert isinstance(m.variants["default"].slices[1].inputs[0], M.SliceInput)
    assert m.to_json() == tiny_manifest
    assert m.slices == m.variant("default").slices and m.variant_names == ("default",)
    assert m.slices[0].remote is False


def test_load_manifest_returns_typed_manifest(tiny):
    m = load_manifest(tiny.dir)
    assert isinstance(m, M.Manifest)
    assert m.schema == SCHEMA_ID and m.kind == "model" and len(m.slices) == 3
    assert load_manifest(tiny.manifest_path) == m  # the manifest file itself is accepted too


def test_runtime_manifest_module_is_standard_library_only():
    import ast

    roots = set()
    for module in Path(M.__file__).parent.glob("*.py"):      # every module of the package
        tree = ast.parse(module.read_text())
        roots |= {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        roots |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
    import sys

    assert roots <= set(sys.stdlib_module_names), roots - set(sys.stdlib_module_names)


def test_metric_is_a_free_string(tiny_manifest):
    tiny_manifest["variants"]["default"]["objective"]["metric"] = "my-registered-metric"
    validate_manifest(tiny_manifest)


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
    (_del(V + ["slices", 0, "sha256"]), VK + "slices[0].sha256", "missing"),
    (_del(["runtime"]), "runtime", "missing"),
    (_set(["runtime", "intra_op_num_threads"], "two"), "runtime.intra_op_num_threads", "integer"),
    (_set(["runtime", "graph_optimization_level"], "max"), "runtime.graph_optimization_level", "'max'"),
    (_set(["model", "inputs", 0, "dtype"], "float"), "model.inputs[0].dtype", "'float'"),
    (_set(["model", "inputs", 0, "shape"], [2, -1]), "model.inputs[0].shape[1]", "minimum"),
    (_set(V + ["slices", 1, "sha256"], "ABC"), VK + "slices[1].sha256", "sha256"),
    (_set(V + ["slices", 2, "inputs", 0, "source"], "slice0"), VK + "slices[2].inputs[0].source",
     "expected 'model' or integer, got string 'slice0'"),
    (_set(V + ["objective", "metric"], ""), VK + "objective.metric", "empty"),
    (_set(V + ["objective", "deadline_ms"], -1), VK + "objective.deadline_ms", "minimum"),
    (_set(V + ["predicted", "meets_deadline"], "yes"), VK + "predicted.meets_deadline", "boolean"),
    (_set(V + ["feasible"], None), VK + "feasible", "boolean"),
    (_set(V + ["violations"], "late"), VK + "violations", "array"),
    (_del(V + ["planner", "stats"]), VK + "planner.stats", "missing"),
    (_set(V + ["hardware"], [1]), VK + "hardware", "object or null"),
    (_set(V + ["slices", 0, "link"], 3), VK + "slices[0].link", "string or null"),
    (_set(["surprise"], 1), "surprise", "unexpected key"),
    (_set(V + ["slices", 0, "colour"], "red"), VK + "slices[0].colour", "unexpected key"),
    (_set(V + ["slices"], []), VK + "slices", "at least 1"),
    (_set(["target", "kind"], True), "target.kind", "True"),
    (_set(["kind"], "bundle"), "kind", "'bundle'"),
    (_set(["variants"], []), "variants", "object"),
]


@pytest.mark.parametrize("edit,key,words", STRUCTURAL, ids=[k for _, k, _ in STRUCTURAL])
def test_structural_errors_name_the_key(tiny_manifest, edit, key, words):
    doc = copy.deepcopy(tiny_manifest)
    edit(doc)
    with pytest.raises(ManifestError) as info:
        validate_manifest(doc, "build/manifest.json")
    msg = str(info.value)
    assert msg.startswith(f"build/manifest.json: {key}: "), msg
    assert words.lower() in msg.lower(), msg
    assert "\n" not in msg
    assert jsonschema_errors(doc) != [], "the generated schema accepts what the dataclasses reject"


def test_extra_keys_allowed_in_free_form_blocks(tiny_manifest):
    v = tiny_manifest["variants"]["default"]
    v["planner"]["options"] = {"anything": [1, 2]}
    v["planner"]["stats"] = {"curve": [[0, 1.5]], "gap": None}
    v["slices"][0]["provider_options"] = {"device_id": 0}
    v["hardware"] = {"big_cores": 4, "emc_mhz": 1866}
    validate_manifest(tiny_manifest)
    assert jsonschema_errors(tiny_manifest) in (None, [])


CONSISTENCY = [
    (_set(V + ["slices", 1, "inputs", 0, "source"], 2), VK + "slices[1].inputs[0].source", "does not run before"),
    (_set(V + ["slices", 1, "inputs", 0, "source"], 1), VK + "slices[1].inputs[0].source", "does not run before"),
    (_set(V + ["slices", 2, "inputs", 0, "name"], "h1"), VK + "slices[2].inputs[0].source", "not an output of slice 1"),
    (_set(V + ["slices", 1, "inputs", 1, "name"], "z"), VK + "slices[1].inputs[1].source", "not a model input"),
    (_set(V + ["slices", 1, "inputs", 0, "shape"], [2, 4]), VK + "slices[1].inputs[0]",
     "float32[2, 8] as the output of slice 0"),
    (_set(["model", "outputs", 0, "name"], "nowhere"), VK + "slices", "not produced by any slice"),
    (_set(["model", "outputs", 1, "dtype"], "float16"), "model.outputs[1]", "slice 1 produces float32"),
    (_set(V + ["slices", 2, "outputs", 0, "name"], "r"), VK + "slices[2].outputs[0].name", "already produced by slice 1"),
    (_set(V + ["slices", 2, "id"], 0), VK + "slices[2].id", "duplicate slice id 0"),
    (_set(V + ["slices", 2, "file"], "slices/00_big.onnx"), VK + "slices[2].file", "used by two slices"),
    (_set(V + ["slices", 0, "first_layer"], 3), VK + "slices[0].last_layer", "before first_layer"),
    (_set(V + ["slices", 0, "file"], "../x.onnx"), VK + "slices[0].file", "relative path inside"),
    (_set(["default_variant"], "fast"), "default_variant", "'fast' is not a variant"),
    (_set(["default_variant"], None), "default_variant", "needs this"),
    (_set(["model"], None), "model", "needs this"),
    (_set(["variants"], {}), "variants", "at least one variant"),
    (_set(["policy"], {"file": "/etc/policy", "sha256": "0" * 64}), "policy.file", "relative path inside"),
    (_set(["kind"], "workload"), "workload", "needs this"),
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
    tiny.manifest_path.write_text('{"schema": "hetcc.manifest/2",')
    with pytest.raises(ManifestError, match=r"manifest\.json: not valid JSON \(line 1"):
        load_manifest(tiny.dir)


def test_wrong_schema_id(tiny):
    tiny.edit(lambda d: d.update(schema="acme.plan/7"))
    with pytest.raises(ManifestError, match=r"manifest\.json: schema: 'acme.plan/7' is not supported.*recompile"):
        load_manifest(tiny.dir)


V1_MANIFEST = {
    "schema": "hetcc.manifest/1", "hetcc_version": "0.1.0",
    "model": {"name": "tiny", "sha256": "0" * 64, "source_path": None, "ir_version": 8,
              "inputs": [{"name": "x", "dtype": "float32", "shape": [2, 8]}],
              "outputs": [{"name": "y", "dtype": "float32", "shape": [2, 8]}]},
    "target": {"name": "host", "sha256": "0" * 64, "kind": "measured"},
    "objective": {"metric": "latency", "deadline_ms": None, "power_cap_mw": None},
    "planner": {"name": "dp", "options": {}, "seconds": 0.0}, "hardware": None,
    "runtime": {"allow_spinning": False, "graph_optimization_level": "all", "intra_op_num_threads": None},
    "slices": [], "predicted": {"latency_ms": 0.0, "energy_mj": None, "edp_mj_ms": None, "meets_deadline": None},
}


def test_v1_artifact_says_recompile(tiny):
    tiny.write_manifest(V1_MANIFEST)
    with pytest.raises(ManifestError) as info:
        load_manifest(tiny.dir)
    msg = str(info.value)
    assert "hetcc.manifest/1" in msg and "hetcc.manifest/2" in msg and "recompile" in msg, msg
    from hetcc.runtime import Executor

    with pytest.raises(ManifestError, match="recompile"):
        Executor(tiny.dir)


def test_not_an_object(tiny):
    tiny.manifest_path.write_text(json.dumps([1, 2]))
    with pytest.raises(ManifestError, match="expected a JSON object"):
        load_manifest(tiny.dir)


def test_error_class_is_self_contained():
    from hetcc.runtime.errors import ManifestError as E

    assert E is ManifestError and E.exit_code == 2
    assert E.__mro__[1] is Exception
