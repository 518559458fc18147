"""hetcc.runtime must work on a board that has only numpy and onnxruntime."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

BLOCKED = ["onnx", "onnx_ir", "jsonschema", "torch", "rich", "networkx", "onnx_graphsurgeon"]

SCRIPT = textwrap.dedent(
    """
    import importlib.abc, json, sys

    BLOCKED = set(json.loads(sys.argv[1]))

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"blocked on the board: {name}")
            return None

    sys.meta_path.insert(0, Block())

    import hetcc.runtime as rt

    ex = rt.Executor(sys.argv[2])
    out = ex.run(rt.random_inputs(ex.inputs))
    report = rt.verify(ex)
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    print(json.dumps({"outputs": sorted(out), "ok": report.ok, "loaded": loaded}))
    """
)


def test_runtime_imports_without_compiler_dependencies(tiny):
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(BLOCKED), str(tiny.dir)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result == {"outputs": ["r", "y"], "ok": True, "loaded": []}


def test_manifest_checked_without_jsonschema(tiny):
    script = SCRIPT.split("import hetcc.runtime as rt")[0] + textwrap.dedent(
        """
        import hetcc.runtime as rt
        doc = rt.load_manifest(sys.argv[2]).to_json()
        del doc["variants"]["default"]["slices"][0]["sha256"]
        try:
            rt.validate_manifest(doc, "m.json")
        except rt.ManifestError as e:
            print(e)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, json.dumps(BLOCKED), str(tiny.dir)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "m.json: variants.default.slices[0].sha256: required key is missing"


LIGHT = textwrap.dedent(
    """
    import json, sys
    import hetcc.runtime.errors
    import hetcc.runtime.manifest as m
    m.manifest_schema()
    import hetcc.runtime
    hetcc.runtime.ManifestError, hetcc.runtime.load_manifest, hetcc.runtime.SCHEMA_ID
    heavy = sorted(k for k in sys.modules if k.split(".")[0] in ("onnxruntime", "numpy", "onnx", "onnx_ir"))
    print(json.dumps(heavy))
    """
)


def test_manifest_and_errors_import_without_onnxruntime():
    """The compiler imports the manifest dataclasses; that must not pull in onnxruntime (or numpy)."""
    proc = subprocess.run([sys.executable, "-c", LIGHT], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


def test_runtime_sources_import_only_numpy_onnxruntime_and_stdlib():
    import ast
    from pathlib import Path

    import hetcc.runtime

    allowed = set(sys.stdlib_module_names) | {"numpy", "onnxruntime"}
    # the command-line entry (python -m hetcc.runtime) reuses hetcc run/inspect's light module, which
    # imports no third-party package itself (tests/test_runtime_alone.py runs it with numpy + onnxruntime only)
    entry = {"hetcc.cli.artifact", "hetcc.core.errors"}
    for path in Path(hetcc.runtime.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                if path.name == "__main__.py" and node.module in entry:
                    continue
                roots = {node.module.split(".")[0]}
            else:
                continue
            assert roots <= allowed, f"{path.name} imports {roots - allowed}"


def test_lazy_attributes_resolve_to_functions_not_submodules():
    import hetcc.runtime as rt
    import hetcc.runtime.verification  # noqa: F401  (a submodule imported first must not shadow a name)

    assert callable(rt.verify) and callable(rt.random_inputs) and isinstance(rt.Executor, type)
    assert set(rt.__all__) <= set(dir(rt))
    with pytest.raises(AttributeError):
        rt.no_such_name
