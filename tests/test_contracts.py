"""The architecture's dependency rules, executable (docs/architecture.md, "Dependency rules").

import-linter checks the contracts in ``.importlinter`` and grimp's import graph (both count
imports inside functions) proves there is no import cycle. Both read the tree laid out as the
installed package (``passes/``, ``targets/``, ``runtime/`` become ``hetcc.passes``,
``hetcc.targets``, ``hetcc.runtime``), copied into a temporary folder, so they see exactly the
modules a wheel holds. The rest read the source with ``ast``.
"""
from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROOTS = {"hetcc": "hetcc", "passes": "hetcc/passes", "targets": "hetcc/targets", "runtime": "hetcc/runtime"}


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """The source laid out as the installed package, .py files only."""
    out = tmp_path_factory.mktemp("layout")
    for src, dest in ROOTS.items():
        shutil.copytree(ROOT / src, out / dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
                        dirs_exist_ok=True)
    return out


def run_in(tree: Path, *argv: str) -> subprocess.CompletedProcess:
    # cwd and PYTHONPATH are the copy, so `hetcc` is found there and not in the editable install
    env = {"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin", "HOME": str(tree)}
    return subprocess.run(list(argv), cwd=tree, env=env, capture_output=True, text=True, timeout=300)


def test_import_linter_contracts_are_kept(tree):
    pytest.importorskip("importlinter", reason="needs import-linter (the 'dev' extra)")
    lint = Path(sys.executable).with_name("lint-imports")
    r = run_in(tree, str(lint), "--no-cache", str(ROOT / ".importlinter"))
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "BROKEN" not in r.stdout and "KEPT" in r.stdout


GRAPH = textwrap.dedent("""
    import json, grimp
    g = grimp.build_graph("hetcc", include_external_packages=True)
    print(json.dumps({m: sorted(g.find_modules_directly_imported_by(m)) for m in g.modules}))
""")


@pytest.fixture(scope="module")
def graph(tree) -> dict[str, list[str]]:
    pytest.importorskip("grimp", reason="needs grimp (import-linter, the 'dev' extra)")
    r = run_in(tree, sys.executable, "-c", GRAPH)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(graph.get(start, ())))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in graph:
                    continue
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(graph.get(w, ()))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_no_import_cycles(graph):
    internal = {m: [d for d in deps if d.startswith("hetcc")] for m, deps in graph.items() if m.startswith("hetcc")}
    assert len(internal) > 100, "the graph should hold every module"
    assert cycles(internal) == []


def test_cycle_finder_finds_a_cycle():
    assert cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c"]]


def externals(graph: dict[str, list[str]], prefix: str, skip: tuple[str, ...] = ()) -> dict[str, set[str]]:
    return {m: {d for d in deps if not d.startswith("hetcc")} for m, deps in graph.items()
            if m.startswith(prefix) and not m.startswith(skip)}


STDLIB = set(sys.stdlib_module_names) | {"__future__"}


def test_runtime_imports_numpy_onnxruntime_and_the_standard_library_only(graph):
    bad = {m: sorted(e - STDLIB - {"numpy", "onnxruntime"}) for m, e in externals(graph, "hetcc.runtime").items()}
    assert {m: e for m, e in bad.items() if e} == {}


def test_planners_import_numpy_only_and_learning_libraries_only_in_learning_planners(graph):
    learning = {"torch", "torchrl", "tensordict", "gymnasium"}
    allowed = {"hetcc.planners.context": {"rich", "torch"}}   # the progress bar; ctx.seed_torch()
    allowed["hetcc.planners.multi.ga"] = {"pymoo"}            # the GA baseline, imported when it runs
    allowed["hetcc.planners.multi.simulate"] = {"simpy"}      # the contention model's check, imported when it runs
    bad = {}
    for m, e in externals(graph, "hetcc.planners").items():
        learner = m.startswith(("hetcc.planners.dqn", "hetcc.planners.fairboost"))
        extra = e - STDLIB - {"numpy"} - allowed.get(m, set()) - (learning if learner else set())
        if extra:
            bad[m] = sorted(extra)
    assert bad == {}


def top_level_imports(path: Path) -> set[str]:
    """Modules imported at module level (not inside a function) by the file at ``path``."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body:
        for sub in ast.walk(node) if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else ():
            if isinstance(sub, ast.Import):
                names |= {a.name.split(".")[0] for a in sub.names}
            elif isinstance(sub, ast.ImportFrom) and sub.module and not sub.level:
                names.add(sub.module.split(".")[0])
    return names


def test_torch_only_inside_functions_of_the_planners():
    heavy = {p.relative_to(ROOT).as_posix(): top_level_imports(p) & {"torch", "torchrl", "tensordict"}
             for p in (ROOT / "hetcc" / "planners").rglob("*.py")}
    assert {p: n for p, n in heavy.items() if n} == {}


def test_no_module_directly_in_hetcc_but_the_package_and_its_entry():
    assert sorted(p.name for p in (ROOT / "hetcc").glob("*.py")) == ["__init__.py", "_entry.py"]


def test_no_private_name_is_imported_across_modules():
    bad = []
    for src in ROOTS:
        for path in (ROOT / src).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and ((node.module or "").startswith("hetcc") or node.level):
                    bad += [f"{path.relative_to(ROOT)}:{node.lineno} {a.name}" for a in node.names
                            if a.name.startswith("_") and not a.name.startswith("__")]
    assert bad == []
