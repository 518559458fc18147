"""hetcc.runtime must work on a board that has only numpy and onnxruntime."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

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


def test_builtin_schema_check_used_without_jsonschema(tiny):
    script = SCRIPT.split("import hetcc.runtime as rt")[0] + textwrap.dedent(
        """
        import hetcc.runtime as rt
        doc = rt.load_manifest(sys.argv[2])
        del doc["slices"][0]["sha256"]
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
    assert proc.stdout.strip() == "m.json: slices[0].sha256: required key is missing"
