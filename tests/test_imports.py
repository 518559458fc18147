"""``import hetcc`` and ``hetcc compile --planner dp`` never import torch (checked in a fresh
interpreter, the way the runtime's isolation is checked), and hetcc.core.errors does not import the
runtime or onnxruntime."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

PROBE = textwrap.dedent(
    """
    import json, sys
    {body}
    heavy = sorted({{m.split(".")[0] for m in sys.modules}}
                   & {{"torch", "torchvision", "onnxruntime", "hetcc.runtime", "sympy"}})
    print(json.dumps({{"loaded": heavy, "runtime": "hetcc.runtime" in sys.modules}}))
    """
)


def probe(body: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", PROBE.format(body=textwrap.dedent(body))],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_import_hetcc_and_its_planners_loads_neither_torch_nor_onnxruntime():
    got = probe("""
        import hetcc, hetcc.core.errors, hetcc.planners
        from hetcc.planners import all_specs, get_spec
        all_specs()                       # every built-in planner module, imported
        get_spec("dp"); get_spec("exact")
    """)
    assert got == {"loaded": [], "runtime": False}


@pytest.mark.slow
def test_compile_with_dp_does_not_import_torch(tmp_path, write_text_model):
    model = write_text_model("""
        <ir_version: 8, opset_import: ["" : 17]>
        g (float[1, 8] x) => (float[1, 8] y) {
            a = Relu(x)
            b = Sigmoid(a)
            y = Relu(b)
        }
    """, tmp_path / "m.onnx")
    got = probe(f"""
        from hetcc.cli import main
        rc = main(["compile", {str(model)!r}, "--target", "hikey970", "--planner", "dp", "-o", {str(tmp_path / "out")!r}, "-q"])
        assert rc == 0, rc
        sys.modules.pop("onnxruntime", None)   # the compiler may use onnxruntime; torch is the point
    """)
    assert "torch" not in got["loaded"] and "torchvision" not in got["loaded"]
    # nor sympy: onnx-ir holds it only for symbolic dimension expressions (hetcc.compiler.onnxir)
    assert "sympy" not in got["loaded"]


def test_onnx_ir_imported_without_sympy_still_does_symbolic_dimensions():
    """The stand-in sympy leaves sys.modules once onnx_ir is imported; the first symbolic
    expression imports the real sympy, and both onnx-ir's arithmetic and its parser's functions
    (the deferred ones) give what they give with sympy imported first."""
    got = probe("""
        from hetcc.compiler.onnxir import ir
        assert "sympy" not in sys.modules
        n = ir.SymbolicDim("N")
        assert str(n + 3) == "N + 3" and "sympy" in sys.modules
        import sympy
        assert type(sympy).__name__ == "module" and sympy.Max(1, 2) == 2
        from onnx_ir import _symbolic_shapes
        assert str(_symbolic_shapes.parse_symbolic_expression("max(a, b) + floor(c / 2)")) == "floor(c/2) + Max(a, b)"
        assert str(ir.SymbolicDim("max(h, w) - 1")._expr) == "Max(h, w) - 1"
    """)
    assert "sympy" in got["loaded"]


def test_onnx_ir_that_needs_sympy_at_import_is_imported_with_it():
    """A stand-in asked for a name it does not defer (a future onnx-ir using sympy at its top
    level) makes hetcc import onnx-ir again the plain way, with the real sympy."""
    got = probe("""
        import hetcc.compiler.onnxir as lazy
        for name in [m for m in sys.modules if m.split(".")[0] in ("onnx_ir", "sympy")]:
            del sys.modules[name]                        # as before any import of onnx_ir
        from unittest import mock
        with mock.patch.object(lazy, "_DEFERRED", frozenset({"Max"})):
            ir = lazy._import_onnx_ir()
        assert type(sys.modules["sympy"]).__name__ == "module"
        import onnx_ir._symbolic_shapes as s
        assert s._ALLOWED_FUNCTIONS["floor"] is sys.modules["sympy"].floor
    """)
    assert "sympy" in got["loaded"]


def test_reading_a_target_loads_no_planner_and_errors_load_no_runtime():
    got = probe("""
        from hetcc.targets import load_target
        load_target("hikey970")
        import hetcc.core.errors
        planners = sorted(m for m in sys.modules if m.startswith("hetcc.planners."))
        assert not [m for m in planners if m.split(".")[2] in ("dp", "exact", "baselines", "random")], planners
    """)
    assert got == {"loaded": [], "runtime": False}
