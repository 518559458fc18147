"""benchmarks/tables.py: the benchmark pages are generated from the result JSON, never hand-edited.

The first test fails when a committed page (or the README's results region) differs from what the
script generates: re-run ``python benchmarks/tables.py`` after changing a result or the script.
The others render small synthetic results in a temporary folder. Nothing here needs hetcc.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "tables.py"

MACHINE = {"cpu_count": 8, "usable_cpus": 6, "cpu": "Test CPU 9000", "machine": "x86_64",
           "platform": "Linux-test", "python": "3.12.1", "onnxruntime": "1.99.0", "numpy": "2.0.0",
           "hetcc": "9.9.9", "loadavg_at_start": [0.5, 0.25, 0.125], "loadavg_at_end": [1.0, 0.5, 0.25]}

# a minimal PNG (1x1): the script copies figures byte for byte
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000100ffff03000006000557bfabd40000000049454e44ae426082")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], check=False, capture_output=True,
                          text=True, timeout=120)


def test_committed_pages_are_what_the_script_generates():
    proc = run("--check")
    assert proc.returncode == 0, (
        "docs/benchmarks/ (or the README's results region) differs from the JSON in benchmarks/results/; "
        f"run `python benchmarks/tables.py`:\n{proc.stdout}{proc.stderr}")


def _results(tmp: Path) -> tuple[Path, Path, Path]:
    results, docs, readme = tmp / "results", tmp / "docs", tmp / "README.md"
    results.mkdir()
    doc = {"script": "compile", "date": "2031-02-03T04:05:06+00:00", "machine": MACHINE,
           "args": {"models": ["resnet50", "vgg16"], "quick": False, "compile_repeats": 5, "planner_repeats": 15},
           "targets": {"dp_ms": 10.0, "exact_ms": 100.0, "compile_s": 5.0, "compile_model": "resnet50"},
           "results": [{"model": "resnet50", "nodes": 122, "layers": 38, "states": 25,
                        "passes_s": {"load": 0.2, "codegen": 0.3}, "compile_s": 0.51234,
                        "compile_plan": {"latency_ms": 101.5, "energy_mj": 112.4, "num_slices": 3},
                        "dp": {"median_ms": 0.40406}, "exact": {"median_ms": 5.6446, "deadline_ms": 109.3},
                        "targets_met": {"dp": True, "exact": True, "compile": True}},
                       {"model": "vgg16", "error": "RuntimeError: boom"}],
           "misses": []}
    (results / "compile.json").write_text(json.dumps(doc))
    (results / "mystery.json").write_text(json.dumps({
        "script": "mystery", "started": "2031-02-04T00:00:00+00:00", "machine": MACHINE,
        "command": "python benchmarks/mystery.py --fast", "answer": 42,
        "rows": [{"name": "a", "value": 1.23456}, {"name": "b", "value": 2.0}]}))
    (results / "mystery-fig.png").write_bytes(PNG)
    (results / "compile-quick.json").write_text(json.dumps(doc))  # test output: no page
    readme.write_text("# x\n\n<!-- results:start -->\nold\n<!-- results:end -->\n\nrest\n")
    return results, docs, readme


def test_a_synthetic_result_renders_command_machine_and_date(tmp_path):
    results, docs, readme = _results(tmp_path)
    args = ("--results", str(results), "--docs", str(docs), "--readme", str(readme))
    assert run(*args, "--check").returncode == 1          # nothing written yet
    proc = run(*args)
    assert proc.returncode == 0, proc.stderr
    page = (docs / "compile.md").read_text()
    # the command, rebuilt from the recorded arguments (defaults left out), the machine and the date
    assert ("`python benchmarks/compile.py --models resnet50,vgg16 --compile-repeats 5 "
            "--out benchmarks/results/compile.json`") in page   # --models alone writes compile-models.json
    for text in ("Test CPU 9000", "3.12.1", "1.99.0", "9.9.9", "0.50 / 0.25 / 0.12"):
        assert text in page
    assert "2031-02-03" in page and "04:05" not in page       # the date, no time of day
    assert "Compile-time benchmark" in page                 # the script's docstring, read as text
    assert "| resnet50 |" in page and "0.51" in page and "0.40" in page and "RuntimeError: boom" in page
    # a recorded command is used as it is; an unknown script still gets its values and rows
    other = (docs / "mystery.md").read_text()
    assert "`python benchmarks/mystery.py --fast`" in other and "2031-02-04" in other and "42" in other
    assert "| a | 1.235 |" in other
    assert "![mystery-fig.png](img/mystery-fig.png)" in other
    assert (docs / "img" / "mystery-fig.png").read_bytes() == PNG
    assert not (docs / "compile-quick.md").exists()
    index = (docs / "index.md").read_text()
    assert "(compile.md)" in index and "(mystery.md)" in index and "quick" not in index
    text = readme.read_text()
    assert "old" not in text and "(docs/compile.md)" in text and text.endswith("\n\nrest\n")
    assert len(text.split("<!-- results:start -->")[1].split("<!-- results:end -->")[0].encode()) < 2048
    assert run(*args, "--check").returncode == 0


def test_check_names_each_page_that_differs(tmp_path):
    results, docs, readme = _results(tmp_path)
    args = ("--results", str(results), "--docs", str(docs), "--readme", str(readme))
    assert run(*args).returncode == 0
    page = docs / "compile.md"
    page.write_text(page.read_text().replace("0.51", "0.49"))   # a hand edit
    (docs / "old.md").write_text("# gone\n")                     # a page no result generates
    proc = run(*args, "--check")
    assert proc.returncode == 1
    assert "compile.md" in proc.stdout and "old.md" in proc.stdout and "mystery.md" not in proc.stdout
    assert run(*args).returncode == 0 and not (docs / "old.md").exists()
    assert run(*args, "--check").returncode == 0


def test_a_readme_without_markers_is_left_alone(tmp_path):
    results, docs, readme = _results(tmp_path)
    readme.write_text("# no region here\n")
    args = ("--results", str(results), "--docs", str(docs), "--readme", str(readme))
    assert run(*args).returncode == 0
    assert readme.read_text() == "# no region here\n"
    assert run(*args, "--check").returncode == 0


def test_a_prose_page_embeds_a_result_section_kept_current(tmp_path):
    results, docs, readme = _results(tmp_path)
    guide = tmp_path / "guide.md"
    guide.write_text("# Guide\n\nMeasured:\n\n<!-- table: mystery#rows -->\nstale 9.99\n<!-- /table -->\n\nend\n")
    args = ("--results", str(results), "--docs", str(docs), "--readme", str(readme))
    assert run(*args, "--check").returncode == 1
    assert run(*args).returncode == 0
    text = guide.read_text()
    body = text.split("<!-- table: mystery#rows -->")[1].split("<!-- /table -->")[0]
    assert "stale" not in body and "| a | 1.235 |" in body and "2031-02-04" in body
    assert "(docs/mystery.md#rows)" in body and text.startswith("# Guide\n") and text.endswith("\n\nend\n")
    assert run(*args, "--check").returncode == 0
    guide.write_text(text.replace("1.235", "1.3"))                # a hand edit inside the region
    proc = run(*args, "--check")
    assert proc.returncode == 1 and "guide.md" in proc.stdout
    guide.write_text("<!-- table: mystery#Nothing -->\n<!-- /table -->\n")
    proc = run(*args)
    assert proc.returncode != 0 and "mystery#Nothing" in proc.stderr and "'rows'" in proc.stderr
