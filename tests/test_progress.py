"""Progress and honest times: every step shows a line while it runs (rich, on stderr, only on a
terminal and not with --quiet), --verbose prints each step's time, and the reported total is the
command's wall time, at least the sum of its steps."""
from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import onnx
import onnx.parser
import pytest

import hetcc
from hetcc.cli import main
from hetcc.planners.context import (LineProgress, Progress, ProgressTask, RichProgress, current_progress,
                                   default_progress)
from text_models import CHAIN


class Recorder(Progress):
    """Every task opened: [description, total, [fields of each update], closed?]."""

    def __init__(self) -> None:
        self.log: list[list] = []

    def task(self, description: str, total: float | None = None) -> ProgressTask:
        entry = [description, total, [], False]
        self.log.append(entry)

        class Task(ProgressTask):
            def update(self, advance: float = 1, **fields) -> None:
                entry[2].append(fields)

            def close(self) -> None:
                entry[3] = True
        return Task()

    def descriptions(self) -> list[str]:
        return [e[0] for e in self.log]


@pytest.fixture
def chain(tmp_path, write_text_model):
    return write_text_model(CHAIN, tmp_path / "chain.onnx")


def long_chain(path: Path, layers: int = 40) -> Path:
    """MatMul, then Sigmoid/Tanh/Relu, repeated: ``layers`` layers whose exact search under a
    deadline and a power cap runs label passes."""
    ops = ["Relu", "Sigmoid", "Tanh"]
    lines, prev = [], "x"
    for i in range(layers):
        lines.append(f"    t{i} = MatMul({prev}, w)" if i % 4 == 0 else f"    t{i} = {ops[i % 3]}({prev})")
        prev = f"t{i}"
    w = ",".join("1" if i // 64 == i % 64 else "0" for i in range(64 * 64))
    text = (f'<ir_version: 8, opset_import: ["" : 17]>\nlong (float[16,64] x) => (float[16,64] y) '
            f'<float[64,64] w = {{{w}}}> {{\n' + "\n".join(lines) + f"\n    y = Relu({prev})\n}}\n")
    model = onnx.parser.parse_model(text)
    onnx.save(model, str(path))
    return path


def test_every_step_opens_a_line_and_closes_it(chain, tmp_path):
    rec, seen = Recorder(), []
    result = hetcc.compile(chain, "hikey970", "energy", deadline="medium", output_dir=tmp_path / "out",
                           progress=rec, on_pass=seen.append)
    names = rec.descriptions()
    assert names[0].startswith("loading chain.onnx")
    for step in ("shapes", "constants", "layers", "legality", "costs"):
        assert step in names
    assert any(n.startswith("planning (auto") for n in names)
    assert any(n.startswith("writing ") and n.endswith("out") for n in names)
    assert all(e[3] for e in rec.log), [e[0] for e in rec.log if not e[3]]
    # on_pass saw the same steps, timed; the call's wall time covers them all
    assert [t.name for t in seen] == [t.name for t in result.timings]
    assert result.seconds >= sum(t.seconds for t in result.timings) > 0


def test_exact_shows_its_search_with_incumbent_and_bound(tmp_path):
    model = long_chain(tmp_path / "long.onnx")
    rec = Recorder()
    result = hetcc.compile(model, "hikey970", "energy", deadline="1.02x", power_cap="3W", planner="exact",
                           progress=rec)
    planning = [n for n in rec.descriptions() if n.startswith("planning")]
    assert planning == ["planning (exact; no budget: --budget-seconds bounds a search)"]
    searches = [e for e in rec.log if e[0].startswith("exact:")]
    assert searches and all(e[1] == result.analysis.problem.num_layers for e in searches)
    fields = [f for e in searches for f in e[2]]
    assert fields and all({"incumbent", "bound", "labels"} <= set(f) for f in fields)
    assert all(f["bound"] <= f["incumbent"] * (1 + 1e-9) for f in fields if f["incumbent"] != float("inf"))


def test_a_budget_that_runs_out_says_how_far_and_what_to_raise(capsys, tmp_path):
    model = long_chain(tmp_path / "long.onnx")
    code = main(["compile", str(model), "--planner", "exact", "--objective", "energy", "--deadline", "1.02x",
                 "--power-cap", "3W", "--budget-steps", "1"])
    out = capsys.readouterr().out
    assert code == 0
    line = next(l for l in out.splitlines() if "not proved optimal" in l)
    gap = float(re.search(r"within ([\d.]+)% of the optimum \(lower bound [\d.]+ mJ\)", line).group(1))
    assert gap > 0 and "stopped at 1 step;" in line and "--budget-seconds" in line


def test_profiling_shows_each_layer(chain, tmp_path, monkeypatch):
    monkeypatch.setenv("HETCC_CACHE_DIR", str(tmp_path / "cache"))
    rec = Recorder()
    hetcc.analyse(chain, "host", profile_repeats=1, progress=rec)
    layers = next(e for e in rec.log if e[0].startswith("profiling layers"))
    assert layers[1] == len(layers[2]) > 0 and layers[3]
    # inside the costs pass (nested under its line), and silent again after it
    assert rec.descriptions().index("costs") < rec.descriptions().index(layers[0])
    assert type(current_progress()) is Progress


def test_a_zoo_export_is_a_timed_step(tmp_path, monkeypatch, write_text_model):
    from hetcc.compiler import zoo

    monkeypatch.setenv("HETCC_CACHE_DIR", str(tmp_path / "cache"))

    inside: list[float] = []

    def fake_export(name, path, seed=0):        # torch-free stand-in: writes a model, says how long it took
        t0 = time.perf_counter()
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        out = write_text_model(CHAIN, Path(path))
        inside.append(time.perf_counter() - t0)
        return out
    monkeypatch.setattr(zoo, "export", fake_export)
    rec = Recorder()
    first = hetcc.compile("squeezenet1_1", "hikey970", progress=rec)
    assert rec.descriptions()[0] == "exporting zoo model squeezenet1_1 (first use; cached)"
    export = first.timings[0]
    assert export.name == "export" and export.seconds >= inside[0] > 0    # the step holds the export
    assert first.seconds >= sum(t.seconds for t in first.timings)
    again = hetcc.compile("squeezenet1_1", "hikey970")          # cached: no export step
    assert [t.name for t in again.timings][0] == "load"


def test_verbose_breakdown_and_an_honest_total(capsys, chain, tmp_path):
    out = tmp_path / "o"
    assert main(["compile", str(chain), "-o", str(out), "--verbose"]) == 0
    stdout = capsys.readouterr().out
    total = float(re.search(rf"wrote {re.escape(str(out))}/ in ([\d.]+) s", stdout).group(1))
    line = next(l for l in stdout.splitlines() if l.strip().startswith("time:"))
    steps = dict((n, float(v)) for n, v in re.findall(r"(\w+) ([\d.]+) s", line))
    assert {"load", "shapes", "costs", "partition", "codegen", "other"} <= set(steps)
    assert total + 0.01 >= sum(v for n, v in steps.items() if n != "other")   # printed to 2 decimals


def test_json_total_covers_the_steps(capsys, chain):
    assert main(["compile", str(chain), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["compile_seconds"] >= sum(doc["step_seconds"].values()) > 0
    assert doc["output_dir"] is None


def test_without_o_it_says_nothing_was_written(capsys, chain, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["compile", str(chain)]) == 0
    out = capsys.readouterr().out
    assert "nothing written (plan only): add -o DIR" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chain.onnx"]


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_default_progress_only_on_a_terminal_and_not_quiet(monkeypatch):
    monkeypatch.setattr(sys, "stderr", FakeTTY())
    assert isinstance(default_progress(), RichProgress)
    assert type(default_progress(quiet=True)) is Progress
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert type(default_progress()) is LineProgress          # plain lines on a non-terminal


def test_rich_lines_nest_in_one_display():
    from rich.console import Console

    sink = io.StringIO()
    progress = RichProgress(Console(file=sink, force_terminal=True, width=120))
    with progress.task("outer step"):
        with progress.task("inner search", total=3) as inner:
            inner.update(1, incumbent=2.5, bound=2.0)
        with progress.task("second inner"):
            pass
    progress.finish()
    text = sink.getvalue()
    assert "outer step" in text and "inner search" in text and progress._live == 0


def _compile_on_a_terminal(chain: Path, tmp_path: Path, *flags: str) -> tuple[int, str, str]:
    """``hetcc compile`` with stderr on a pseudo-terminal and stdout to a file; (exit code, what
    the terminal got, what the file got)."""
    import pty

    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "120"}
    with open(tmp_path / "stdout.txt", "w") as stdout:
        proc = subprocess.Popen([sys.executable, "-m", "hetcc.cli", "compile", str(chain), "-o",
                                 str(tmp_path / "o"), *flags], stdout=stdout, stderr=slave, env=env, cwd=tmp_path)
    os.close(slave)
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:        # EIO: the terminal's last writer is gone
                return
            if not data:
                return
            chunks.append(data)
    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    code = proc.wait(timeout=120)
    reader.join(timeout=10)
    os.close(master)
    return code, b"".join(chunks).decode(errors="replace"), (tmp_path / "stdout.txt").read_text()


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pseudo-terminal test")
def test_a_terminal_gets_progress_and_quiet_gets_none(chain, tmp_path):
    code, shown, stdout = _compile_on_a_terminal(chain, tmp_path, "--verbose")
    assert code == 0 and "loading chain.onnx" in shown
    # stdout sent to a file keeps all its lines, also those printed while the display was up
    assert "pass load" in stdout and "pass costs" in stdout and "wrote " in stdout
    assert "pass load" not in shown
    code, shown, stdout = _compile_on_a_terminal(chain, tmp_path, "--quiet")
    assert code == 0 and shown == "" and "wrote " in stdout
    code, shown, stdout = _compile_on_a_terminal(chain, tmp_path, "--json")
    assert code == 0 and "loading chain.onnx" in shown and json.loads(stdout)["output_dir"]
